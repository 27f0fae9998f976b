//! The restore cache volume of a data-mover restore pod (A2.28), as
//! `affinity --restore` shows it.

use affinity_translate::{
    CacheDecision, DEFAULT_CACHE_LIMIT_BYTES, NodeAgentConfig, cache_decision,
};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::{Value, json};

use crate::manifest::{Inventory, ObjectKey};

/// Velero's annotation naming the node a WaitForFirstConsumer claim's
/// consumer was scheduled to.
const SELECTED_NODE: &str = affinity_translate::SELECTED_NODE_ANNOTATION;

/// The cache volume of the restore into `pvc`: its table row, its JSON,
/// and the notes that go with it.
pub struct RestoreCache {
    /// The value of the table's `cache volume` row.
    pub row: String,
    /// The `cacheVolume` JSON.
    pub document: Value,
    /// What the answer assumed or warns about.
    pub notes: Vec<String>,
}

/// The decision for the restore into `pvc`, from the DataDownload that
/// targets it when the input has one.
pub fn for_restore_into(
    config: &NodeAgentConfig,
    inventory: &Inventory,
    pvc: &PersistentVolumeClaim,
) -> RestoreCache {
    let namespace = pvc.metadata.namespace.as_deref().unwrap_or_default();
    let name = pvc.metadata.name.as_deref().unwrap_or_default();
    let download = inventory.data_downloads.values().find(|located| {
        located
            .object
            .spec
            .target_volume
            .as_ref()
            .is_some_and(|target| {
                target.namespace.as_deref() == Some(namespace)
                    && target.pvc.as_deref() == Some(name)
            })
    });
    let mut notes = Vec::new();
    let (owner, restore_size) = match download {
        Some(located) => (
            located.object.metadata.name.clone().unwrap_or_default(),
            located.object.spec.snapshot_size.unwrap_or_default(),
        ),
        None => ("<DataDownload>".to_owned(), 0),
    };
    let class = config
        .cache_pvc
        .as_ref()
        .and_then(|cache| cache.storage_class.as_deref())
        .and_then(|class| inventory.storage_classes.get(&ObjectKey::cluster(class)))
        .map(|located| &located.object);
    let selected_node = pvc
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(SELECTED_NODE))
        .map(String::as_str);
    let decision = cache_decision(
        config,
        class,
        &owner,
        restore_size,
        DEFAULT_CACHE_LIMIT_BYTES,
        selected_node,
    );
    if matches!(decision, CacheDecision::Volume(_)) {
        if download.is_none() {
            notes.push(
                "no DataDownload for this PVC in the input: its size is unknown, and Velero gives a restore of unknown size (0) a cache volume".to_owned(),
            );
        }
        notes.push(format!(
            "the cache volume's size assumes Kopia's default client-side cache limit ({} MiB); a cacheLimitMB in Velero's backup-repository ConfigMap changes it",
            DEFAULT_CACHE_LIMIT_BYTES >> 20
        ));
    }
    let row = match &decision {
        CacheDecision::NotConfigured => "none (no cachePVC)".to_owned(),
        CacheDecision::Ignored { reason } => {
            format!("none: the node-agent ignores cachePVC ({reason})")
        }
        CacheDecision::NotNeeded {
            restore_size,
            threshold,
        } => format!(
            "none: the restore's {} MiB is below residentThresholdInMB ({} MiB)",
            restore_size >> 20,
            threshold >> 20
        ),
        CacheDecision::Volume(volume) => {
            if volume.binds_immediately
                && let Some(node) = &volume.selected_node
            {
                notes.push(format!(
                    "the cache class {} binds immediately: its volume is provisioned before the restore pod is placed, wherever the provisioner chooses, while the pod is pinned to {node}; if the class's volumes are not reachable from every node the pod may never schedule (use a WaitForFirstConsumer class for the cache)",
                    volume.storage_class
                ));
            }
            format!(
                "{} ({} GiB of {}{})",
                volume.claim_name,
                volume.size_bytes >> 30,
                volume.storage_class,
                match &volume.selected_node {
                    Some(node) => format!(", selected node {node}"),
                    None => String::new(),
                }
            )
        }
    };
    RestoreCache {
        row,
        document: json!(decision),
        notes,
    }
}
