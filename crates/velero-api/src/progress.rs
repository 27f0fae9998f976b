//! Types shared by the four load kinds (DataUpload, DataDownload,
//! PodVolumeBackup, PodVolumeRestore).

use serde::{Deserialize, Serialize};

use crate::string_enum::string_enum;

string_enum! {
    /// Phase of a DataUpload, DataDownload, PodVolumeBackup or
    /// PodVolumeRestore (L3.9–L3.13).
    pub enum LoadPhase {
        /// Created, not yet accepted by a node-agent (also the empty phase).
        New => "New",
        /// Accepted by a node-agent; the data-mover pod is being prepared.
        Accepted => "Accepted",
        /// The data-mover pod is running; waiting for a data-path slot.
        Prepared => "Prepared",
        /// Data is being moved.
        InProgress => "InProgress",
        /// Cancellation requested, not yet done.
        Canceling => "Canceling",
        /// Cancelled (terminal).
        Canceled => "Canceled",
        /// Finished successfully (terminal).
        Completed => "Completed",
        /// Finished with an error (terminal).
        Failed => "Failed",
    }
}

impl LoadPhase {
    /// `New` or the empty phase: the only phases the prepare-queue gate
    /// decides on (L3.13).
    pub fn is_new(&self) -> bool {
        matches!(self, Self::New) || self.as_str().is_empty()
    }

    /// `Canceled`, `Completed` or `Failed`.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Canceled | Self::Completed | Self::Failed)
    }
}

/// Progress of a data movement, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataMoveOperationProgress {
    /// Total bytes to move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<i64>,
    /// Bytes moved so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_done: Option<i64>,
}
