//! Errors of the manifest reader. Every message names the file, the document,
//! the field path and the offending value, so the user knows what to fix.

use std::fmt;

/// Where in a file a problem is; the parts that are known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// 1-based document number.
    pub document: Option<usize>,
    /// 1-based line.
    pub line: Option<u64>,
    /// 1-based column.
    pub column: Option<u64>,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(document) = self.document {
            write!(f, ", document {document}")?;
        }
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
            if let Some(column) = self.column {
                write!(f, ", column {column}")?;
            }
        }
        Ok(())
    }
}

/// Where an object or a problem is: the file, the 1-based document number in
/// that file, the item of a `kind: List`, and the object once known.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Origin {
    /// File name as given on the command line (`-` for standard input,
    /// `examples/cluster/...` for the bundled example).
    pub file: String,
    /// 1-based document number within the file.
    pub document: usize,
    /// 0-based index in the `items` of a `kind: List` document.
    pub item: Option<usize>,
}

impl Origin {
    /// The origin of item `index` of the list at this origin.
    pub(super) fn item(&self, index: usize) -> Origin {
        Origin {
            item: Some(index),
            ..self.clone()
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, document {}", self.file, self.document)?;
        if let Some(item) = self.item {
            write!(f, ", items[{item}]")?;
        }
        Ok(())
    }
}

/// A manifest that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The file could not be read.
    #[error("{file}: cannot read the file: {message}")]
    Read {
        /// File name.
        file: String,
        /// The operating system's message.
        message: String,
    },
    /// The text is not YAML (or not JSON, for input that starts like JSON),
    /// or is refused as too deep or an alias bomb.
    #[error("{file}{position}: {message}")]
    Syntax {
        /// File name.
        file: String,
        /// Document, line and column, as far as known.
        position: Position,
        /// What is wrong and what to do.
        message: String,
    },
    /// A file (or directory) that gives no document at all.
    #[error(
        "no objects were read from {file}: {}",
        if *.directory {
            "the directory holds no .yaml, .yml or .json file (-R/--recursive reads its subdirectories too)"
        } else {
            "it is empty, or holds only comments and `---` separators; if it was written by `kubectl get ... > FILE`, that command failed: run it again and check its error"
        }
    )]
    Empty {
        /// File or directory name.
        file: String,
        /// Whether `file` is a directory.
        directory: bool,
    },
    /// The input is larger than `--max-input-bytes`.
    #[error(
        "{file}: the input is larger than --max-input-bytes ({limit} bytes for all files together); raise the limit with --max-input-bytes or POLICYCTL_MAX_INPUT_BYTES if this is the input you meant"
    )]
    TooLarge {
        /// The file whose reading went past the limit.
        file: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// The file is not text (a NUL byte, or not UTF-8 / UTF-16 with a
    /// byte-order mark).
    #[error("{file}: not a text file ({problem}); policyctl reads YAML or JSON text")]
    NotText {
        /// File name.
        file: String,
        /// What was found, and where.
        problem: String,
    },
    /// A stream (standard input, a pipe) whose first line cannot begin a
    /// Kubernetes object, found before reading the rest of the stream.
    #[error(
        "{file}, line {line}: expected a Kubernetes object (a mapping with apiVersion and kind), but the input begins with `{start}`, which cannot start one; stopped reading instead of waiting for the rest"
    )]
    NotManifest {
        /// File name (`-` for standard input).
        file: String,
        /// The 1-based line the first content is on.
        line: usize,
        /// The start of that line, shortened.
        start: String,
    },
    /// The input does not fit in memory.
    #[error(
        "{file}: not enough memory to hold the input after {read} bytes; free memory, or lower --max-input-bytes to stop earlier with this message"
    )]
    OutOfMemory {
        /// File name.
        file: String,
        /// Bytes read from all inputs before the allocation failed.
        read: u64,
    },
    /// A document that is not a Kubernetes object.
    #[error("{origin}: {message}")]
    Document {
        /// Where.
        origin: Origin,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A field of a recognised object has the wrong shape.
    #[error(transparent)]
    Field(Box<FieldError>),
    /// The same object appears twice in the input.
    #[error("{origin}: {object} is defined twice (first in {first}); remove one of them")]
    Duplicate {
        /// Where the second copy is.
        origin: Origin,
        /// `Kind namespace/name` of the object.
        object: String,
        /// Where the first copy is.
        first: Origin,
    },
}

/// A field of a recognised object that has the wrong shape.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: {object}: field `{path}`: {message} (offending value: {value})")]
pub struct FieldError {
    /// Where.
    pub origin: Origin,
    /// `Kind namespace/name` of the object.
    pub object: String,
    /// Field path, e.g. `spec.containers[0].name`.
    pub path: String,
    /// The offending value as JSON (`<absent>` for a missing field).
    pub value: String,
    /// The decoder's message.
    pub message: String,
}
