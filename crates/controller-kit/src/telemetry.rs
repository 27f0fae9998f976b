//! Tracing setup: `RUST_LOG`-style filtering (default `info`) and text or JSON output.

use tracing_subscriber::EnvFilter;

use crate::args::LogFormat;
use crate::error::Error;

/// The filter used when `RUST_LOG` is unset or invalid.
pub const DEFAULT_FILTER: &str = "info";

/// Installs the global tracing subscriber writing to stderr in `format`,
/// filtered by `RUST_LOG` (default [`DEFAULT_FILTER`]). Fails if a global
/// subscriber is already installed.
pub fn init_tracing(format: LogFormat) -> Result<(), Error> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    result.map_err(|e| Error::Tracing(e.to_string()))
}
