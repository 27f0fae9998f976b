//! The controller's error type.

use controller_kit::metrics::ErrorKind;

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
    /// A Kubernetes API call failed.
    #[error("Kubernetes API call failed while {action}: {source}")]
    Kube {
        /// What the controller was doing.
        action: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// A Node kept changing under our patches.
    #[error(
        "Node {node}: still conflicting after {attempts} attempts; will retry on the next change"
    )]
    Conflicts {
        /// The Node.
        node: String,
        /// Attempts made.
        attempts: u32,
    },
}

impl Error {
    /// Wraps a kube error with what was being done.
    pub fn kube(action: impl Into<String>, source: kube::Error) -> Self {
        Self::Kube {
            action: action.into(),
            source,
        }
    }
}

impl ErrorKind for Error {
    fn kind(&self) -> &'static str {
        match self {
            Self::InvalidArgument { .. } | Self::LabelKey(_) => "invalid_argument",
            Self::Runtime(_) => "runtime",
            Self::Kube { .. } => "kube_api",
            Self::Conflicts { .. } => "conflict",
        }
    }
}
