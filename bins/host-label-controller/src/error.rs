//! The controller's error type. API failures during passes are not errors
//! of `run`: the runtime counts them by kind and retries.

/// Errors of the host-label controller.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A flag has an unusable value.
    #[error("{flag}: {value:?} is invalid: {problem}")]
    InvalidArgument {
        /// The flag.
        flag: String,
        /// The value given.
        value: String,
        /// What is wrong.
        problem: String,
    },
    /// A label or annotation key is invalid.
    #[error(transparent)]
    LabelKey(#[from] anti_affinity_placement::labels::LabelKeyError),
    /// The runtime (server, leader election, settings) failed.
    #[error(transparent)]
    Runtime(#[from] controller_kit::Error),
}
