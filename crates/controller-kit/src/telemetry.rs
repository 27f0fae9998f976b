//! Tracing setup: `RUST_LOG`-style filtering (default `info`) and text or JSON output.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

use crate::args::LogFormat;
use crate::error::Error;

/// The filter used when `RUST_LOG` is unset or invalid.
pub const DEFAULT_FILTER: &str = "info";

/// Whether log lines carry ANSI colours: only when stderr is a terminal and
/// `NO_COLOR` is unset or empty (<https://no-color.org>). A log file or a
/// pipe to a collector never gets escape sequences.
pub fn colour_logs() -> bool {
    colour_for(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    )
}

fn colour_for(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Installs the global tracing subscriber writing to stderr in `format`,
/// filtered by `RUST_LOG` (default [`DEFAULT_FILTER`]), coloured only as
/// [`colour_logs`] says. A log line that cannot be written (stderr closed)
/// is dropped instead of reported, since reporting it would need stderr
/// too. Fails if a global subscriber is already installed.
pub fn init_tracing(format: LogFormat) -> Result<(), Error> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour_logs())
        .log_internal_errors(false)
        .with_writer(std::io::stderr);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    result.map_err(|e| Error::Tracing(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::colour_for;
    use std::ffi::OsStr;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour_for(true, None));
        assert!(colour_for(true, Some(OsStr::new(""))));
        assert!(!colour_for(true, Some(OsStr::new("1"))));
        assert!(!colour_for(false, None));
    }
}
