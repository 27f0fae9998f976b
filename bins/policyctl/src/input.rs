//! The `-f` arguments → file texts, the way `kubectl -f` reads them: a file,
//! `-` for standard input, or a directory whose `.yaml`, `.yml` and `.json`
//! files are read in name order (`-R` also reads its subdirectories, in the
//! same walk order as kubectl: entries sorted by name, a subdirectory's files
//! where the subdirectory sorts).
//!
//! Reading is bounded: all files together may hold at most
//! `--max-input-bytes`, checked from a regular file's size before reading
//! and while reading anything else, so `-f /dev/zero` or an endless pipe
//! stops with an error instead of filling memory. A NUL byte ends the read
//! at once (a binary file, `/dev/zero`). UTF-16 text with a byte-order mark
//! (what Windows PowerShell's `>` writes) is decoded.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::manifest::{ManifestError, Source};

mod head;

use head::Head;

/// Extensions read from a directory, as kubectl's.
const EXTENSIONS: [&str; 3] = ["json", "yaml", "yml"];

/// Size of one read.
const CHUNK: usize = 1 << 20;

/// How much of a stream's start is searched for its first line.
const HEAD_WINDOW: usize = 4 << 20;

/// How to read the `-f` arguments.
#[derive(Clone, Copy, Debug)]
pub struct ReadOptions {
    /// Read directories' subdirectories too (`-R`).
    pub recursive: bool,
    /// Most bytes to read in all (`--max-input-bytes`).
    pub max_input_bytes: u64,
}

/// Reads every `-f` argument, in order.
pub fn read_all(
    names: &[String],
    options: ReadOptions,
    stdin: &mut dyn Read,
) -> Result<Vec<Source>, ManifestError> {
    let mut budget = Budget {
        limit: options.max_input_bytes,
        used: 0,
    };
    let mut stdin_used = false;
    let mut sources = Vec::with_capacity(names.len());
    for name in names {
        if name == "-" {
            if stdin_used {
                return Err(ManifestError::Read {
                    file: name.clone(),
                    message: "`-f -` is given more than once; standard input can be read only once"
                        .to_owned(),
                });
            }
            stdin_used = true;
            let text = read_bounded(name, stdin, &mut budget, Known::Stream)?;
            sources.push(Source {
                name: name.clone(),
                text,
            });
            continue;
        }
        let path = Path::new(name);
        let metadata = fs::metadata(path).map_err(|error| read_error(name, &error))?;
        if metadata.is_dir() {
            let mut files = Vec::new();
            walk(path, options.recursive, &mut files)?;
            if files.is_empty() {
                return Err(ManifestError::Empty {
                    file: name.clone(),
                    directory: true,
                });
            }
            for file in files {
                sources.push(read_file(&file, &mut budget)?);
            }
        } else {
            sources.push(read_file(path, &mut budget)?);
        }
    }
    Ok(sources)
}

/// Reads one file on its own, with the same bounds as `-f` (a
/// `--config` file).
pub fn read_one(path: &Path, max_input_bytes: u64) -> Result<String, ManifestError> {
    let mut budget = Budget {
        limit: max_input_bytes,
        used: 0,
    };
    read_file(path, &mut budget).map(|source| source.text)
}

/// Bytes left to read.
struct Budget {
    limit: u64,
    used: u64,
}

impl Budget {
    fn remaining(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }
}

fn read_error(name: &str, error: &std::io::Error) -> ManifestError {
    ManifestError::Read {
        file: name.to_owned(),
        message: error.to_string(),
    }
}

/// The files of a directory with a manifest extension, in kubectl's walk
/// order; subdirectories only when `recursive`. Symbolic links to
/// directories are not followed (as `filepath.Walk`).
fn walk(directory: &Path, recursive: bool, files: &mut Vec<PathBuf>) -> Result<(), ManifestError> {
    let name = directory.display().to_string();
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(directory)
        .map_err(|error| read_error(&name, &error))?
        .collect::<Result<_, _>>()
        .map_err(|error| read_error(&name, &error))?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let file_type = entry
            .file_type()
            .map_err(|error| read_error(&path.display().to_string(), &error))?;
        if file_type.is_dir() {
            if recursive {
                walk(&path, recursive, files)?;
            }
        } else if path
            .extension()
            .and_then(|extension| extension.to_str())
            .is_some_and(|extension| EXTENSIONS.contains(&extension))
        {
            files.push(path);
        }
    }
    Ok(())
}

fn read_file(path: &Path, budget: &mut Budget) -> Result<Source, ManifestError> {
    let name = path.display().to_string();
    let mut file = fs::File::open(path).map_err(|error| read_error(&name, &error))?;
    let metadata = file.metadata().map_err(|error| read_error(&name, &error))?;
    if metadata.is_file() && metadata.len() > budget.remaining() {
        return Err(ManifestError::TooLarge {
            file: name,
            limit: budget.limit,
        });
    }
    // A regular file's size is known: one allocation of that size, instead
    // of a buffer that doubles (and is copied) as it fills.
    let text = if metadata.is_file() {
        read_bounded(&name, &mut file, budget, Known::Size(metadata.len()))?
    } else {
        read_bounded(&name, &mut file, budget, Known::Stream)?
    };
    Ok(Source { name, text })
}

/// What is known about an input before reading it.
#[derive(Clone, Copy)]
enum Known {
    /// A regular file of this many bytes: read whole, then parsed.
    Size(u64),
    /// A stream of unknown length: its first line is judged as it arrives.
    Stream,
}

/// Reads at most the remaining budget, stopping at the first NUL byte, at
/// a stream's first line if it cannot begin an object, or when memory runs
/// out.
fn read_bounded(
    name: &str,
    reader: &mut dyn Read,
    budget: &mut Budget,
    known: Known,
) -> Result<String, ManifestError> {
    let out_of_memory = |budget: &Budget| ManifestError::OutOfMemory {
        file: name.to_owned(),
        read: budget.used,
    };
    let mut bytes: Vec<u8> = Vec::new();
    let mut head_decided = false;
    loop {
        // Read straight into the buffer: a regular file in one read of its
        // size, reserved at once (no buffer that doubles and is copied); a
        // stream a chunk at a time, so its first line is judged early.
        // After a regular file's size, only a probe: the file grew, or it
        // ends here (then nothing is reserved).
        let (chunk, reserve) = match known {
            Known::Size(size) if bytes.is_empty() => (size.max(1), true),
            Known::Size(_) => (CHUNK as u64, false),
            Known::Stream => (CHUNK as u64, true),
        };
        let limit = chunk.min(budget.remaining().saturating_add(1));
        if reserve {
            let additional = usize::try_from(limit).map_err(|_| out_of_memory(budget))?;
            let reserved = match known {
                Known::Size(_) => bytes.try_reserve_exact(additional),
                // A stream's buffer grows by doubling, not a chunk at a time.
                Known::Stream => bytes.try_reserve(additional),
            };
            reserved.map_err(|_| out_of_memory(budget))?;
        }
        let start = bytes.len();
        let read = match (&mut *reader).take(limit).read_to_end(&mut bytes) {
            Ok(read) => read as u64,
            Err(error) => return Err(read_error(name, &error)),
        };
        if read == 0 {
            break;
        }
        if read > budget.remaining() {
            return Err(ManifestError::TooLarge {
                file: name.to_owned(),
                limit: budget.limit,
            });
        }
        budget.used += read;
        let utf16 = bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]);
        if !utf16 && let Some(offset) = memchr::memchr(0, &bytes[start..]) {
            return Err(ManifestError::NotText {
                file: name.to_owned(),
                problem: format!("a NUL byte at byte {}", start + offset),
            });
        }
        if !head_decided && !utf16 && matches!(known, Known::Stream) {
            match head::judge(&bytes) {
                // Only comments and blank lines so far: leave the rest to
                // the parser rather than rescan an ever longer start.
                Head::Undecided => head_decided = bytes.len() >= HEAD_WINDOW,
                Head::Plausible => head_decided = true,
                Head::Scalar { line, start } => {
                    return Err(ManifestError::NotManifest {
                        file: name.to_owned(),
                        line,
                        start,
                    });
                }
            }
        }
    }
    let utf16 = bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]);
    if utf16 {
        return decode_utf16(name, &bytes);
    }
    String::from_utf8(bytes).map_err(|error| ManifestError::NotText {
        file: name.to_owned(),
        problem: format!(
            "a byte that is not UTF-8 at byte {}",
            error.utf8_error().valid_up_to()
        ),
    })
}

fn decode_utf16(name: &str, bytes: &[u8]) -> Result<String, ManifestError> {
    let body = &bytes[2..];
    if body.len() % 2 == 1 {
        return Err(ManifestError::NotText {
            file: name.to_owned(),
            problem: format!("UTF-16 text with an odd number of bytes, {}", bytes.len()),
        });
    }
    let little_endian = bytes.starts_with(&[0xff, 0xfe]);
    let units: Vec<u16> = body
        .chunks_exact(2)
        .map(|pair| {
            let pair = [pair[0], pair[1]];
            if little_endian {
                u16::from_le_bytes(pair)
            } else {
                u16::from_be_bytes(pair)
            }
        })
        .collect();
    String::from_utf16(&units).map_err(|_| ManifestError::NotText {
        file: name.to_owned(),
        problem: "UTF-16 text with an unpaired surrogate".to_owned(),
    })
}
