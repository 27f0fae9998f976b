//! A reader for the subset of the Containerfile (Dockerfile) syntax the
//! repository's `Containerfile` uses: comments, line continuations, `ARG`
//! before the first `FROM`, and stages with `FROM image [AS name]` followed
//! by their instructions. Enough to check the file against the manifests
//! without a container engine.

use std::fmt;

/// One instruction: its keyword in upper case and its arguments as written
/// (continuations joined with a space).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// `FROM`, `RUN`, `USER`, …
    pub keyword: String,
    /// Everything after the keyword, trimmed.
    pub arguments: String,
    /// 1-based line where the instruction starts.
    pub line: usize,
}

/// A build stage: `FROM base [AS name]` and the instructions up to the next
/// `FROM`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// The image or earlier stage it starts from, as written.
    pub base: String,
    /// Its name, if it has one.
    pub name: Option<String>,
    /// Its instructions after `FROM`.
    pub instructions: Vec<Instruction>,
}

/// A parsed Containerfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Containerfile {
    /// `ARG` instructions before the first `FROM` (usable in `FROM`).
    pub global_args: Vec<Instruction>,
    /// The stages in order; the last one is the image built by default.
    pub stages: Vec<Stage>,
}

/// Why a Containerfile could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong, naming the offending text.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Containerfile:{}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// The instructions of a Containerfile text, comments and blank lines left
/// out and continuation lines (ending in `\`) joined.
pub fn instructions(text: &str) -> Result<Vec<Instruction>, ParseError> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && pending.is_none()) {
            continue;
        }
        let (continues, body) = match trimmed.strip_suffix('\\') {
            Some(body) => (true, body.trim_end()),
            None => (false, trimmed),
        };
        let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        if !joined.is_empty() && !body.is_empty() {
            joined.push(' ');
        }
        joined.push_str(body);
        if continues {
            pending = Some((start, joined));
            continue;
        }
        let (keyword, arguments) = joined.split_once(char::is_whitespace).ok_or(ParseError {
            line: start,
            message: format!("instruction without arguments: `{joined}`"),
        })?;
        if !keyword.chars().all(|c| c.is_ascii_alphabetic()) {
            return Err(ParseError {
                line: start,
                message: format!("not an instruction keyword: `{keyword}`"),
            });
        }
        out.push(Instruction {
            keyword: keyword.to_ascii_uppercase(),
            arguments: arguments.trim().to_owned(),
            line: start,
        });
    }
    if let Some((line, joined)) = pending {
        return Err(ParseError {
            line,
            message: format!("the file ends inside a continued instruction: `{joined}`"),
        });
    }
    Ok(out)
}

/// Parses a Containerfile text into global `ARG`s and stages.
pub fn parse(text: &str) -> Result<Containerfile, ParseError> {
    let mut file = Containerfile {
        global_args: Vec::new(),
        stages: Vec::new(),
    };
    for instruction in instructions(text)? {
        if instruction.keyword == "FROM" {
            let words: Vec<&str> = instruction.arguments.split_whitespace().collect();
            let (base, name) = match words.as_slice() {
                [base] => (*base, None),
                [base, as_, name] if as_.eq_ignore_ascii_case("as") => (*base, Some(*name)),
                _ => {
                    return Err(ParseError {
                        line: instruction.line,
                        message: format!(
                            "`FROM {}` is not `FROM image [AS name]`",
                            instruction.arguments
                        ),
                    });
                }
            };
            file.stages.push(Stage {
                base: base.to_owned(),
                name: name.map(str::to_owned),
                instructions: Vec::new(),
            });
        } else if let Some(stage) = file.stages.last_mut() {
            stage.instructions.push(instruction);
        } else if instruction.keyword == "ARG" {
            file.global_args.push(instruction);
        } else {
            return Err(ParseError {
                line: instruction.line,
                message: format!("`{}` before the first FROM", instruction.keyword),
            });
        }
    }
    Ok(file)
}

impl Containerfile {
    /// The stage named `name`.
    pub fn stage(&self, name: &str) -> Option<&Stage> {
        self.stages.iter().find(|s| s.name.as_deref() == Some(name))
    }

    /// The chain of stages an image built from `name` is made of, from
    /// `name` back to the first stage whose base is not a stage of this
    /// file (that base image is the last element's `base`).
    pub fn lineage(&self, name: &str) -> Vec<&Stage> {
        let mut out = Vec::new();
        let mut next = self.stage(name);
        while let Some(stage) = next {
            if out.iter().any(|s: &&Stage| s.name == stage.name) {
                break;
            }
            out.push(stage);
            next = self.stage(&stage.base);
        }
        out
    }

    /// The effective value of the last instruction `keyword` in the image
    /// built from stage `name`, looking through the stages it is built on.
    pub fn effective(&self, name: &str, keyword: &str) -> Option<&Instruction> {
        self.lineage(name).into_iter().find_map(|stage| {
            stage
                .instructions
                .iter()
                .rev()
                .find(|i| i.keyword == keyword)
        })
    }

    /// Every `EXPOSE`d port (without protocol) of the image built from stage
    /// `name`, sorted.
    pub fn exposed_ports(&self, name: &str) -> Result<Vec<u16>, ParseError> {
        let mut ports = Vec::new();
        for stage in self.lineage(name) {
            for i in stage.instructions.iter().filter(|i| i.keyword == "EXPOSE") {
                for word in i.arguments.split_whitespace() {
                    let number = word.split('/').next().unwrap_or(word);
                    ports.push(number.parse().map_err(|_| ParseError {
                        line: i.line,
                        message: format!("`EXPOSE {}`: `{word}` is not a port", i.arguments),
                    })?);
                }
            }
        }
        ports.sort_unstable();
        ports.dedup();
        Ok(ports)
    }
}

/// The words of an exec-form (JSON array) `ENTRYPOINT` or `CMD`; an error
/// for the shell form, which needs a shell the runtime image does not have.
pub fn exec_form(instruction: &Instruction) -> Result<Vec<String>, ParseError> {
    let error = || ParseError {
        line: instruction.line,
        message: format!(
            "`{} {}` is not the exec form [\"/path\", \"arg\", ...]",
            instruction.keyword, instruction.arguments
        ),
    };
    let inner = instruction
        .arguments
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(error)?;
    inner
        .split(',')
        .map(|word| {
            word.trim()
                .strip_prefix('"')
                .and_then(|w| w.strip_suffix('"'))
                .filter(|w| !w.contains('"') && !w.contains('\\'))
                .map(str::to_owned)
                .ok_or_else(error)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# comment\nARG BINARY\n\nFROM rust:1 AS builder\nARG BINARY\nRUN a \\\n  && b \\\n  && c\n\
                          FROM base AS runtime\nUSER 1:1\nEXPOSE 8080/tcp 9090\n\
                          FROM runtime AS app\nENTRYPOINT [\"/bin/app\", \"--x\"]\nFROM ${BINARY}\n";

    #[test]
    fn stages_instructions_and_continuations_are_read() {
        let file = parse(SAMPLE).unwrap();
        assert_eq!(file.global_args.len(), 1);
        let names: Vec<Option<&str>> = file.stages.iter().map(|s| s.name.as_deref()).collect();
        assert_eq!(names, [Some("builder"), Some("runtime"), Some("app"), None]);
        let run = &file.stages[0].instructions[1];
        assert_eq!(
            (run.keyword.as_str(), run.arguments.as_str(), run.line),
            ("RUN", "a && b && c", 6)
        );
        assert_eq!(file.stages[3].base, "${BINARY}");
    }

    #[test]
    fn effective_values_are_inherited_from_base_stages() {
        let file = parse(SAMPLE).unwrap();
        assert_eq!(
            file.effective("app", "USER").map(|i| i.arguments.as_str()),
            Some("1:1")
        );
        assert_eq!(file.exposed_ports("app").unwrap(), [8080, 9090]);
        assert_eq!(
            file.lineage("app").last().map(|s| s.base.as_str()),
            Some("base")
        );
        let entrypoint = file.effective("app", "ENTRYPOINT").unwrap();
        assert_eq!(exec_form(entrypoint).unwrap(), ["/bin/app", "--x"]);
        assert!(file.effective("builder", "USER").is_none());
    }

    #[test]
    fn malformed_files_are_errors_naming_the_line() {
        assert_eq!(parse("RUN x\n").unwrap_err().line, 1);
        assert_eq!(parse("FROM a\nRUN x \\\n").unwrap_err().line, 2);
        assert_eq!(parse("FROM a b c d\n").unwrap_err().line, 1);
        let shell = Instruction {
            keyword: "ENTRYPOINT".into(),
            arguments: "/bin/app --x".into(),
            line: 3,
        };
        assert_eq!(exec_form(&shell).unwrap_err().line, 3);
    }
}
