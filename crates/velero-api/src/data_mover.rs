//! `velero.io/v2alpha1` DataUpload and DataDownload (CSI snapshot data
//! movement; A2.13–A2.23, L3.8–L3.14).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use crate::progress::{DataMoveOperationProgress, LoadPhase};

/// The `spec.datamover` name of Velero's built-in data mover; an empty or
/// absent name means it too ([`is_built_in_data_mover`]).
pub const BUILT_IN_DATA_MOVER: &str = "velero";

/// Whether a DataUpload's or DataDownload's `spec.datamover` names Velero's
/// built-in data mover: absent, empty or exactly `velero` (Velero's
/// `IsBuiltInUploader`, `pkg/datamover/util.go`, v1.18.1). Compared as
/// written, without trimming, as Velero compares it; whose loads Velero's
/// node-agent accepts itself.
pub fn is_built_in_data_mover(data_mover: Option<&str>) -> bool {
    matches!(data_mover, None | Some("" | BUILT_IN_DATA_MOVER))
}

/// Spec of a DataUpload.
///
/// A partial object: never `replace()` it, patch only the fields you own.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "velero.io",
    version = "v2alpha1",
    kind = "DataUpload",
    namespaced,
    status = "DataUploadStatus",
    schema = "disabled",
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct DataUploadSpec {
    /// Snapshot type; `CSI` for CSI snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_type: Option<String>,
    /// CSI snapshot details (`snapshotType: CSI`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csi_snapshot: Option<CsiSnapshotSpec>,
    /// Name of the source PVC.
    #[serde(default, rename = "sourcePVC", skip_serializing_if = "Option::is_none")]
    pub source_pvc: Option<String>,
    /// Namespace of the source PVC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_namespace: Option<String>,
    /// Data mover name; empty means Velero's built-in data mover
    /// ([`is_built_in_data_mover`]).
    #[serde(default, rename = "datamover", skip_serializing_if = "Option::is_none")]
    pub data_mover: Option<String>,
    /// Name of the BackupStorageLocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_storage_location: Option<String>,
    /// Extra data-mover configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_mover_config: Option<BTreeMap<String, String>>,
    /// Cancellation requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    /// Timeout of the whole operation (a Go duration such as `10m0s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_timeout: Option<String>,
}

/// CSI snapshot details of a DataUpload.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsiSnapshotSpec {
    /// Name of the VolumeSnapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_snapshot: Option<String>,
    /// StorageClass of the source PVC: the class used for the backupPVC
    /// remap and the load-affinity lookup (A2.14, A2.15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    /// VolumeSnapshotClass of the snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_class: Option<String>,
    /// CSI driver name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
}

/// Status of a DataUpload.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataUploadStatus {
    /// Current phase; absent means `New`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<LoadPhase>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Node the data-mover pod runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// OS of that node (`linux` or `windows`).
    #[serde(default, rename = "nodeOS", skip_serializing_if = "Option::is_none")]
    pub node_os: Option<String>,
    /// Node whose node-agent accepted the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_by_node: Option<String>,
    /// When the load was accepted.
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

/// Spec of a DataDownload.
///
/// A partial object: never `replace()` it, patch only the fields you own.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "velero.io",
    version = "v2alpha1",
    kind = "DataDownload",
    namespaced,
    status = "DataDownloadStatus",
    schema = "disabled",
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct DataDownloadSpec {
    /// The PVC (and PV) the data is restored into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_volume: Option<TargetVolumeSpec>,
    /// Namespace the data was backed up from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_namespace: Option<String>,
    /// Data mover name; empty means Velero's built-in data mover
    /// ([`is_built_in_data_mover`]).
    #[serde(default, rename = "datamover", skip_serializing_if = "Option::is_none")]
    pub data_mover: Option<String>,
    /// Name of the BackupStorageLocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_storage_location: Option<String>,
    /// Snapshot to restore from.
    #[serde(
        default,
        rename = "snapshotID",
        skip_serializing_if = "Option::is_none"
    )]
    pub snapshot_id: Option<String>,
    /// OS of the node the restore must run on (`linux` or `windows`).
    #[serde(default, rename = "nodeOS", skip_serializing_if = "Option::is_none")]
    pub node_os: Option<String>,
    /// Cancellation requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    /// Timeout of the whole operation (a Go duration such as `10m0s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_timeout: Option<String>,
    /// Logical size of the snapshot in bytes (decides whether the restore
    /// gets a cache volume, from Velero 1.18.0 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_size: Option<i64>,
}

/// Target volume of a DataDownload.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetVolumeSpec {
    /// Name of the target PVC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pvc: Option<String>,
    /// Name of the target PV, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pv: Option<String>,
    /// Namespace of the target PVC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Status of a DataDownload.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataDownloadStatus {
    /// Current phase; absent means `New`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<LoadPhase>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Node the data-mover pod runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// OS of that node.
    #[serde(default, rename = "nodeOS", skip_serializing_if = "Option::is_none")]
    pub node_os: Option<String>,
    /// Node whose node-agent accepted the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_by_node: Option<String>,
    /// When the load was accepted.
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

impl DataUpload {
    /// The phase, `New` when the status or phase is absent.
    pub fn phase(&self) -> LoadPhase {
        self.status
            .as_ref()
            .and_then(|status| status.phase.clone())
            .unwrap_or(LoadPhase::New)
    }
}

impl DataDownload {
    /// The phase, `New` when the status or phase is absent.
    pub fn phase(&self) -> LoadPhase {
        self.status
            .as_ref()
            .and_then(|status| status.phase.clone())
            .unwrap_or(LoadPhase::New)
    }
}
