//! The controller's error type.

use controller_kit::ApiErrorKind;
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
    /// The API error's class, if it is one.
    fn api_kind(&self) -> Option<ApiErrorKind> {
        match self {
            Error::Kube(error) => Some(ApiErrorKind::of(error)),
            _ => None,
        }
    }

    /// Whether a write lost a race: `409 Conflict` (a resourceVersion
    /// precondition failed) or `409 AlreadyExists` (another replica created
    /// the object first).
    pub fn is_conflict(&self) -> bool {
        self.api_kind().is_some_and(ApiErrorKind::is_lost_race)
    }

    /// Whether the error is a `404 Not Found`.
    pub fn is_not_found(&self) -> bool {
        self.api_kind() == Some(ApiErrorKind::NotFound)
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
