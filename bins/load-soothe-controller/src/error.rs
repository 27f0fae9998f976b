//! The controller's error type.

use controller_kit::metrics::ErrorKind;

/// Errors of [`crate::run`] and of the API calls it makes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("Kubernetes API call failed: {0}")]
    Kube(#[from] kube::Error),
    /// The shared runtime failed (metrics server bind, ...).
    #[error(transparent)]
    Runtime(#[from] controller_kit::Error),
    /// The configuration is unusable.
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl Error {
    /// Whether the error is a `409 Conflict` from the API server (a
    /// resourceVersion precondition failed, or the object already exists).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Kube(kube::Error::Api(s)) if s.code == 409)
    }

    /// Whether the error is a `404 Not Found`.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Kube(kube::Error::Api(s)) if s.code == 404)
    }
}

impl ErrorKind for Error {
    fn kind(&self) -> &'static str {
        match self {
            e if e.is_conflict() => "conflict",
            e if e.is_not_found() => "not_found",
            Error::Kube(_) => "kube_api",
            Error::Runtime(_) => "runtime",
            Error::Config(_) => "config",
        }
    }
}
