//! The controller's error type. API failures during passes are not errors
//! of `run`: the runtime counts them by kind and retries.

/// Why [`crate::run`] (or resolving the flags) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The shared runtime failed (metrics server bind, a watch ended, ...).
    #[error(transparent)]
    Runtime(#[from] controller_kit::Error),
    /// The configuration is unusable.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The pod-gates webhook could not be set up.
    #[error(transparent)]
    Webhook(#[from] crate::webhook::WebhookError),
}
