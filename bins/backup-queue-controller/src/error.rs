//! Errors of the controller and their bounded metric labels.

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
    /// The Backup CRD lacks the queue phases or `status.queuePosition`.
    #[error("{0}")]
    VeleroTooOld(String),
    /// `velero.io/v1` does not serve `backups`.
    #[error(
        "the API server does not serve backups.velero.io/v1; install Velero's CRDs first (see docs/operations.md)"
    )]
    BackupCrdMissing,
}
