//! The restore cache volume (Velero 1.18.0 and later, rules C1.16, A2.28).
//!
//! With `cachePVC` configured, the restore exposer gives the data-mover
//! restore pod a second volume: a `ReadWriteOnce` claim named after the
//! DataDownload (or PodVolumeRestore) with the suffix `-cache`, of the
//! configured class, sized from the repository's client-side cache limit,
//! and carrying the target volume's selected node when there is one.

use k8s_openapi::api::storage::v1::StorageClass;
use serde::Serialize;

use crate::config::NodeAgentConfig;

/// Kopia's client-side cache limit when the backup-repository
/// configuration sets no `cacheLimitMB`: 5000 MiB.
pub const DEFAULT_CACHE_LIMIT_BYTES: i64 = 5000 << 20;

/// What is appended to the owner's name to name the cache claim.
pub const CACHE_CLAIM_SUFFIX: &str = "-cache";

const GIB: i64 = 1 << 30;

/// The cache volume's size in bytes as Velero computes it: none (0) when
/// the restore's size is known (non-zero) and below the resident threshold;
/// otherwise the cache limit plus 20 %, rounded up to whole GiB. A restore
/// of unknown size (0) always gets one.
pub fn cache_volume_size(restore_size: i64, limit: i64, resident_threshold: i64) -> i64 {
    if restore_size != 0 && restore_size < resident_threshold {
        return 0;
    }
    // Go's int64 arithmetic, which wraps; saturate instead of panicking on
    // absurd limits.
    let inflated = limit.saturating_mul(12) / 10;
    inflated.saturating_add(GIB - 1) / GIB * GIB
}

/// Whether the restore pod gets a cache volume, and which.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "camelCase")]
pub enum CacheDecision {
    /// No `cachePVC` in the configuration (or the Velero version does not
    /// read it).
    NotConfigured,
    /// `cachePVC` is configured but the node-agent ignored it at start
    /// (C1.16); the reason is Velero's warning.
    Ignored {
        /// Why.
        reason: String,
    },
    /// The restore is smaller than `residentThresholdInMB`.
    NotNeeded {
        /// The restore's size in bytes.
        restore_size: i64,
        /// The threshold in bytes.
        threshold: i64,
    },
    /// The cache claim Velero creates.
    Volume(CacheVolume),
}

/// The cache claim of a restore.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheVolume {
    /// `<owner>-cache`, in Velero's namespace.
    pub claim_name: String,
    /// Its StorageClass.
    pub storage_class: String,
    /// Its requested size in bytes.
    pub size_bytes: i64,
    /// The `volume.kubernetes.io/selected-node` annotation it carries: the
    /// target volume's selected node, so that a WaitForFirstConsumer class
    /// provisions it where the restore pod is pinned.
    pub selected_node: Option<String>,
    /// Whether the class binds immediately: the volume is then provisioned
    /// before the restore pod is placed, wherever the provisioner puts it.
    pub binds_immediately: bool,
}

/// The cache decision for one restore.
///
/// - `class` is the StorageClass named by `cachePVC.storageClass`, if it
///   exists (the node-agent checks it once, at start);
/// - `owner` names the DataDownload or PodVolumeRestore;
/// - `restore_size` is its `spec.snapshotSize` (0 when unknown, as Velero
///   sees an unset size);
/// - `limit` is the repository's client-side cache limit
///   ([`DEFAULT_CACHE_LIMIT_BYTES`] unless configured);
/// - `selected_node` is the target volume's selected node.
pub fn cache_decision(
    config: &NodeAgentConfig,
    class: Option<&StorageClass>,
    owner: &str,
    restore_size: i64,
    limit: i64,
    selected_node: Option<&str>,
) -> CacheDecision {
    let Some(cache) = &config.cache_pvc else {
        return CacheDecision::NotConfigured;
    };
    let class_name = cache.storage_class.as_deref().unwrap_or_default();
    if class_name.is_empty() {
        return CacheDecision::Ignored {
            reason: "storage class is absent".to_owned(),
        };
    }
    let Some(class) = class else {
        return CacheDecision::Ignored {
            reason: format!("error getting storage class {class_name}: not found"),
        };
    };
    if let Some(policy) = class.reclaim_policy.as_deref()
        && policy != "Delete"
    {
        return CacheDecision::Ignored {
            reason: format!("unexpected storage class reclaim policy {policy}"),
        };
    }
    let threshold = cache
        .resident_threshold_in_mb
        .unwrap_or_default()
        .wrapping_shl(20);
    let size = cache_volume_size(restore_size, limit, threshold);
    if size == 0 {
        return CacheDecision::NotNeeded {
            restore_size,
            threshold,
        };
    }
    CacheDecision::Volume(CacheVolume {
        claim_name: format!("{owner}{CACHE_CLAIM_SUFFIX}"),
        storage_class: class_name.to_owned(),
        size_bytes: size,
        selected_node: selected_node
            .filter(|node| !node.is_empty())
            .map(str::to_owned),
        binds_immediately: class.volume_binding_mode.as_deref() != Some("WaitForFirstConsumer"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Velero's own table (`pkg/exposer/cache_volume_test.go`
    /// `TestGetCacheVolumeSize`, v1.18.3), in our words: restore size,
    /// limit and threshold in bytes, and the size Velero gives.
    #[test]
    fn cache_sizes_follow_velero_table() {
        let cases = [
            ("0 data size", 0, GIB, 5120, 2 * GIB),
            ("0 threshold", 2048, GIB, 0, 2 * GIB),
            ("data size is smaller", 2048, GIB, 5120, 0),
            ("data size is larger", 2048, GIB, 1024, 2 * GIB),
            ("limit smaller than 1G", 2048, 5120, 1024, GIB),
            (
                "larger than 1G after inflate",
                2048,
                GIB - 1024,
                1024,
                2 * GIB,
            ),
        ];
        for (name, data, limit, threshold, expected) in cases {
            assert_eq!(
                cache_volume_size(data, limit, threshold),
                expected,
                "{name}"
            );
        }
        // The default limit: 5000 MiB + 20 % = 5.86 GiB, so 6 GiB.
        assert_eq!(cache_volume_size(0, DEFAULT_CACHE_LIMIT_BYTES, 0), 6 * GIB);
    }

    fn class(binding: &str, reclaim: Option<&str>) -> StorageClass {
        StorageClass {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("gp3".to_owned()),
                ..Default::default()
            },
            provisioner: "ebs.csi.aws.com".to_owned(),
            volume_binding_mode: Some(binding.to_owned()),
            reclaim_policy: reclaim.map(str::to_owned),
            ..Default::default()
        }
    }

    fn config(json: &str) -> NodeAgentConfig {
        crate::load_json(json).unwrap().config
    }

    #[test]
    fn the_cache_claim_is_named_after_its_owner_and_pinned_with_the_target() {
        let config =
            config(r#"{"cachePVC": {"storageClass": "gp3", "residentThresholdInMB": 100}}"#);
        let wffc = class("WaitForFirstConsumer", Some("Delete"));
        assert_eq!(
            cache_decision(
                &config,
                Some(&wffc),
                "restore-1",
                200 << 20,
                GIB,
                Some("worker-1")
            ),
            CacheDecision::Volume(CacheVolume {
                claim_name: "restore-1-cache".to_owned(),
                storage_class: "gp3".to_owned(),
                size_bytes: 2 * GIB,
                selected_node: Some("worker-1".to_owned()),
                binds_immediately: false,
            })
        );
        assert_eq!(
            cache_decision(&config, Some(&wffc), "restore-1", 50 << 20, GIB, None),
            CacheDecision::NotNeeded {
                restore_size: 50 << 20,
                threshold: 100 << 20
            }
        );
    }

    #[test]
    fn an_unusable_class_makes_the_node_agent_ignore_the_cache() {
        let config = config(r#"{"cachePVC": {"storageClass": "gp3"}}"#);
        let retain = class("Immediate", Some("Retain"));
        assert_eq!(
            cache_decision(&config, Some(&retain), "r", 0, GIB, None),
            CacheDecision::Ignored {
                reason: "unexpected storage class reclaim policy Retain".to_owned()
            }
        );
        assert_eq!(
            cache_decision(&config, None, "r", 0, GIB, None),
            CacheDecision::Ignored {
                reason: "error getting storage class gp3: not found".to_owned()
            }
        );
        assert_eq!(
            cache_decision(&NodeAgentConfig::default(), None, "r", 0, GIB, None),
            CacheDecision::NotConfigured
        );
        let immediate = class("Immediate", None);
        assert!(matches!(
            cache_decision(&config, Some(&immediate), "r", 0, GIB, None),
            CacheDecision::Volume(CacheVolume {
                binds_immediately: true,
                ..
            })
        ));
    }
}
