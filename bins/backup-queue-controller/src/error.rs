//! Errors of the controller and their bounded metric labels.

use controller_kit::ApiErrorKind;
use controller_kit::metrics::ErrorKind;

/// Why [`crate::run`] stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The shared runtime failed (bind, leader election, settings).
    #[error(transparent)]
    Kit(#[from] controller_kit::Error),
    /// `--status-subresource=auto` could not read API discovery.
    #[error(
        "cannot tell whether backups.velero.io has a status subresource (API discovery of velero.io/v1 failed: {0}); set --status-subresource=enabled or =disabled"
    )]
    Discovery(#[source] kube::Error),
    /// `velero.io/v1` does not serve `backups`.
    #[error(
        "the API server does not serve backups.velero.io/v1; install Velero's CRDs first (see docs/operations.md)"
    )]
    BackupCrdMissing,
    /// A watch stream ended, which kube's watcher never does on its own.
    #[error("the {0} watch ended unexpectedly")]
    WatchEnded(&'static str),
}

/// The bounded `kind` label of `reconcile_errors_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKindLabel {
    /// A write was refused with 409 (expected under races; re-planned).
    Conflict,
    /// The Backup disappeared before the write.
    NotFound,
    /// Any other API error on a write or read.
    Api,
    /// A watch failed (kube's watcher retries with backoff).
    Watch,
    /// Publishing an Event failed.
    Event,
}

impl ErrorKind for ErrorKindLabel {
    fn kind(&self) -> &'static str {
        match self {
            Self::Conflict => "conflict",
            Self::NotFound => "not_found",
            Self::Api => "api",
            Self::Watch => "watch",
            Self::Event => "event",
        }
    }
}

impl ErrorKindLabel {
    /// The label for a kube error.
    pub fn of(error: &kube::Error) -> Self {
        match ApiErrorKind::of(error) {
            ApiErrorKind::Conflict => Self::Conflict,
            ApiErrorKind::NotFound => Self::NotFound,
            _ => Self::Api,
        }
    }
}
