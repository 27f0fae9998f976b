//! The error of a command, shared by the commands and live mode.

use crate::manifest::ManifestError;

/// A command that cannot produce a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// The input manifests are invalid.
    #[error(transparent)]
    Manifest(Box<ManifestError>),
    /// Another problem with the input, described for the user.
    #[error("{0}")]
    Input(String),
    /// A combination of options that cannot work (exit 2, as clap's usage
    /// errors).
    #[error("{0}")]
    Usage(String),
    /// Writing the output failed.
    #[error("cannot write the output: {0}")]
    Output(std::io::Error),
}

impl From<ManifestError> for CommandError {
    fn from(error: ManifestError) -> Self {
        Self::Manifest(Box::new(error))
    }
}
