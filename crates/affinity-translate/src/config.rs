//! The typed node-agent configuration (documented on [`NodeAgentConfig`]).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::{Deserialize, Serialize};

/// The whole node-agent configuration (`NodeAgentConfigs`).
///
/// The typed node-agent configuration (C1.x, Velero's
/// `NodeAgentConfigs`).
///
/// Every field is optional, as in Velero. `None` means "absent" (or `null`,
/// which Go treats the same way, C1.8) and is omitted when serialising, so a
/// loaded configuration serialises back to the keys the user wrote (in
/// Velero's spelling). Loading (`crate::load`) never validates values
/// (C1.10); `crate::validate` reports what Velero would do with them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAgentConfig {
    /// Per-node data-path concurrency and the prepare queue (L3.1, L3.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_concurrency: Option<LoadConcurrency>,
    /// Data-mover pod node selection (A2.1–A2.23). `null` entries are
    /// accepted by Velero's decoder (and make it panic later, A2.6); they are
    /// kept as `None` so that indexes match the user's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_affinity: Option<Vec<Option<LoadAffinity>>>,
    /// Backup PVC settings keyed by the *source* StorageClass name (A2.14).
    #[serde(rename = "backupPVC", default, skip_serializing_if = "Option::is_none")]
    pub backup_pvc: Option<BTreeMap<String, BackupPvcConfig>>,
    /// Restore PVC settings (A2.20).
    #[serde(
        rename = "restorePVC",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub restore_pvc: Option<RestorePvcConfig>,
    /// Data-mover pod resources (C1.14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_resources: Option<PodResources>,
    /// Data-mover pod priority class (C1.15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Privileged containers for fs-backup pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privileged_fs_backup: Option<bool>,
    /// Restore cache volume (C1.16).
    #[serde(rename = "cachePVC", default, skip_serializing_if = "Option::is_none")]
    pub cache_pvc: Option<CachePvcConfig>,
    /// Annotations that replace Velero's built-in ones on data-mover pods (C1.17).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_annotations: Option<BTreeMap<String, String>>,
    /// Labels that replace Velero's built-in ones on data-mover pods (C1.17).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_labels: Option<BTreeMap<String, String>>,
    /// Changed-block tracking's SnapshotMetadataService access (Velero's
    /// main branch only).
    #[serde(
        rename = "csiSnapshotMetadataServiceConfigs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub csi_snapshot_metadata_service: Option<CsiSnapshotMetadataServiceConfig>,
}

/// `loadConcurrency`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadConcurrency {
    /// Concurrency of nodes without a matching rule; `<= 0` or absent means 1 (L3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_config: Option<i64>,
    /// Per-node overrides; the smallest matching valid number wins (L3.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_node_config: Option<Vec<RuledConfig>>,
    /// Cluster-wide cap on CRs under preparation; `<= 0` disables it (L3.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepare_queue_length: Option<i64>,
}

/// One `loadConcurrency.perNodeConfig[]` rule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuledConfig {
    /// Nodes the rule applies to; absent = every node (L3.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<LabelSelector>,
    /// Concurrency for matching nodes; `<= 0` or absent skips the rule (L3.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<i64>,
}

/// One `loadAffinity[]` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadAffinity {
    /// Node requirements, translated verbatim into node affinity (A2.7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<LabelSelector>,
    /// Storage class this entry is for; absent or `""` = global entry (A2.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
}

impl LoadAffinity {
    /// The storage class this entry is for (`""` for a global entry).
    pub fn storage_class(&self) -> &str {
        self.storage_class.as_deref().unwrap_or_default()
    }
}

/// One `backupPVC.<source class>` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupPvcConfig {
    /// StorageClass of the backup PVC; absent or `""` keeps the source class (A2.14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    /// `ReadOnlyMany` backup PVC mounted read-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// SELinux `spc_t` for the pod; only honoured together with `readOnly`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spc_no_relabeling: Option<bool>,
    /// Annotations on the backup PVC (used only if non-empty; read from
    /// Velero 1.17.1 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Secrets copied from the source PVC's namespace into Velero's before
    /// the backup PVC is created (read from Velero 1.18.3 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_names: Option<Vec<String>>,
    /// ConfigMaps copied likewise (read from Velero 1.18.3 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_names: Option<Vec<String>>,
}

/// `restorePVC`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestorePvcConfig {
    /// Do not wait for a WaitForFirstConsumer PVC's selected node (A2.20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_delay_binding: Option<bool>,
    /// Secrets copied from the restore's target namespace into Velero's
    /// before the restore PVC is created (read from Velero 1.18.3 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_names: Option<Vec<String>>,
    /// ConfigMaps copied likewise (read from Velero 1.18.3 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_names: Option<Vec<String>>,
}

/// `csiSnapshotMetadataServiceConfigs` (read on Velero's main branch only).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsiSnapshotMetadataServiceConfig {
    /// ServiceAccount whose token the block data mover presents to the CSI
    /// SnapshotMetadataService.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sa_name: Option<String>,
}

/// `podResources` (C1.14): Kubernetes quantity strings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodResources {
    /// CPU request (required for the section to be used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_request: Option<String>,
    /// CPU limit (required for the section to be used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_limit: Option<String>,
    /// Memory request (required for the section to be used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_request: Option<String>,
    /// Memory limit (required for the section to be used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<String>,
    /// Ephemeral storage request; empty means `"0"` (unbounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral_storage_request: Option<String>,
    /// Ephemeral storage limit; empty means `"0"` (unbounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral_storage_limit: Option<String>,
}

/// `cachePVC` (C1.16).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachePvcConfig {
    /// StorageClass of the cache volume; empty disables the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    /// Volumes larger than this many MiB get a cache volume.
    #[serde(
        rename = "residentThresholdInMB",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub resident_threshold_in_mb: Option<i64>,
}
