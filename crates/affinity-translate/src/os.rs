//! The OS of a data mover's nodes.

use serde::{Deserialize, Serialize};

/// The OS of the nodes a data mover runs on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeOs {
    /// Linux nodes: `kubernetes.io/os NotIn [windows]`.
    #[default]
    Linux,
    /// Windows nodes: `kubernetes.io/os In [windows]` and `os=windows` tolerations.
    Windows,
}
