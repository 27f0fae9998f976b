//! How a controller process talks to its terminal and ends: one line per
//! error, exit codes that say what went wrong, and no panic when the reader
//! of stdout or stderr has gone away.
//!
//! A binary's `main` uses it like this:
//!
//! ```no_run
//! use controller_kit::process::{self, Exit};
//! fn real_main() -> Result<i32, Exit> {
//!     let text = "kind: ServiceAccount\n";
//!     process::write_stdout(text).map_err(Exit::failure)?;
//!     Ok(0)
//! }
//! process::finish("demo-controller", real_main());
//! ```
//!
//! - Writing to a closed stdout (`manifests | head -1`) is not an error:
//!   [`write_stdout`] swallows `EPIPE` and the process exits 0, as `cat`
//!   and `kubectl` do.
//! - A closed stderr never panics: logs go through a subscriber that drops
//!   failed writes (see [`crate::telemetry`]), and [`finish`] ignores a
//!   failed error report (the exit code still tells).
//! - An error is reported as one line, `NAME: error: CAUSE: CAUSE…`,
//!   where a cause whose text the line already contains is not repeated.
//!   The full chain and any captured backtrace are printed only when
//!   `RUST_BACKTRACE` is set to something other than `0`.

use std::error::Error as StdError;
use std::io::Write as _;

/// Exit code of a usage error: an invalid flag or flag combination (what
/// clap uses for its own parse errors).
pub const EXIT_USAGE: i32 = 2;

/// Exit code of any other failure.
pub const EXIT_FAILURE: i32 = 1;

/// A failure that ends the process: the error and the exit code.
#[derive(Debug)]
pub struct Exit {
    code: i32,
    error: Box<dyn StdError + Send + Sync + 'static>,
}

impl Exit {
    /// An invalid flag or configuration: exit [`EXIT_USAGE`].
    pub fn usage(error: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        Self {
            code: EXIT_USAGE,
            error: error.into(),
        }
    }

    /// A failure at run time: exit [`EXIT_FAILURE`].
    pub fn failure(error: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        Self {
            code: EXIT_FAILURE,
            error: error.into(),
        }
    }

    /// The exit code.
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The error.
    pub fn error(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.error
    }
}

impl From<crate::Error> for Exit {
    /// Invalid leader election settings are usage errors; the rest are
    /// failures.
    fn from(error: crate::Error) -> Self {
        match error {
            crate::Error::LeaderElectionSettings(_) => Self::usage(error),
            error => Self::failure(error),
        }
    }
}

impl From<controller_manifests::Error> for Exit {
    /// Flag values the manifests cannot carry
    /// ([`controller_manifests::Error::InvalidInput`]) are usage errors;
    /// the rest are failures.
    fn from(error: controller_manifests::Error) -> Self {
        match error {
            controller_manifests::Error::InvalidInput { .. } => Self::usage(error),
            error => Self::failure(error),
        }
    }
}

/// The error and its causes as one line: each cause is appended after
/// `": "` unless the text so far already contains it (errors that embed
/// their source in their message are not repeated); line breaks inside a
/// message become spaces.
pub fn error_line(error: &(dyn StdError + 'static)) -> String {
    let mut line = flatten(&error.to_string());
    let mut source = error.source();
    while let Some(cause) = source {
        let text = flatten(&cause.to_string());
        if !text.is_empty() && !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

fn flatten(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `RUST_BACKTRACE` asks for detail (set, and not `0`).
pub fn backtrace_requested() -> bool {
    std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0")
}

/// Writes `text` to stdout and flushes it. A reader that has gone away
/// (`EPIPE`) is not an error: the output was simply not wanted any more.
pub fn write_stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Reports `error` on stderr as `program: error: …` (one line, see
/// [`error_line`]; with `RUST_BACKTRACE` also the debug form, one cause per
/// line). A failed write is ignored.
pub fn report(program: &str, error: &(dyn StdError + 'static)) {
    let mut text = format!("{program}: error: {}\n", error_line(error));
    if backtrace_requested() {
        text.push_str(&format!("{error:?}\n"));
        let mut source = error.source();
        while let Some(cause) = source {
            text.push_str(&format!("caused by: {cause:?}\n"));
            source = cause.source();
        }
    }
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// Ends the process: `Ok(code)` exits with `code`, `Err(exit)` reports the
/// error (see [`report`]) and exits with its code.
pub fn finish(program: &str, result: Result<i32, Exit>) -> ! {
    match result {
        Ok(code) => std::process::exit(code),
        Err(exit) => {
            report(program, exit.error());
            std::process::exit(exit.code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read kubeconfig /x: {0}")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("file not found")]
    struct Inner;

    #[derive(Debug, thiserror::Error)]
    #[error("backup-queue-controller failed")]
    struct Context(#[source] Outer);

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let e = Context(Outer(Inner));
        assert_eq!(
            error_line(&e),
            "backup-queue-controller failed: cannot read kubeconfig /x: file not found"
        );
    }

    #[test]
    fn line_breaks_inside_messages_become_spaces() {
        let e = std::io::Error::other("first\n  second");
        assert_eq!(error_line(&e), "first second");
    }
}
