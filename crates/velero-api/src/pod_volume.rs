//! `velero.io/v1` PodVolumeBackup and PodVolumeRestore (file-system backup
//! loads; A2.24, L3.13).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use crate::progress::{DataMoveOperationProgress, LoadPhase};

/// Spec of a PodVolumeBackup.
///
/// A partial object: never `replace()` it, patch only the fields you own.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "PodVolumeBackup",
    namespaced,
    status = "PodVolumeBackupStatus",
    schema = "disabled",
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct PodVolumeBackupSpec {
    /// Node running the pod whose volume is backed up; only that node's
    /// node-agent processes the load (L3.13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The pod whose volume is backed up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectReference>,
    /// The volume's name in the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<String>,
    /// Name of the BackupStorageLocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_storage_location: Option<String>,
    /// `kopia` or `restic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uploader_type: Option<String>,
    /// Cancellation requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
}

/// Status of a PodVolumeBackup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodVolumeBackupStatus {
    /// Current phase; absent means `New`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<LoadPhase>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the load was accepted by a node-agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_timestamp: Option<Time>,
    /// When data movement started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    /// When data movement finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_timestamp: Option<Time>,
    /// Bytes moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<DataMoveOperationProgress>,
}

/// Spec of a PodVolumeRestore. Upstream has no `spec.node`: the node is the
/// target pod's node, recorded in `status.node` once accepted.
///
/// A partial object: never `replace()` it, patch only the fields you own.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "PodVolumeRestore",
    namespaced,
    status = "PodVolumeRestoreStatus",
    schema = "disabled",
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct PodVolumeRestoreSpec {
    /// The pod whose volume is restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectReference>,
    /// The volume's name in the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<String>,
    /// Namespace the data was backed up from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_namespace: Option<String>,
    /// Name of the BackupStorageLocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_storage_location: Option<String>,
    /// `kopia` or `restic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uploader_type: Option<String>,
    /// Cancellation requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
}

/// Status of a PodVolumeRestore.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodVolumeRestoreStatus {
    /// Current phase; absent means `New`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<LoadPhase>,
    /// Node whose node-agent processes the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the load was accepted by a node-agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_timestamp: Option<Time>,
    /// When data movement started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    /// When data movement finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_timestamp: Option<Time>,
    /// Bytes moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<DataMoveOperationProgress>,
}

impl PodVolumeBackup {
    /// The phase, `New` when the status or phase is absent.
    pub fn phase(&self) -> LoadPhase {
        self.status
            .as_ref()
            .and_then(|status| status.phase.clone())
            .unwrap_or(LoadPhase::New)
    }
}

impl PodVolumeRestore {
    /// The phase, `New` when the status or phase is absent.
    pub fn phase(&self) -> LoadPhase {
        self.status
            .as_ref()
            .and_then(|status| status.phase.clone())
            .unwrap_or(LoadPhase::New)
    }
}
