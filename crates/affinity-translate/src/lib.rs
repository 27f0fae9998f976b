//! Velero's node-agent configuration (`--node-agent-configmap`), done
//! exactly and helpfully (C1.x, A2.x, L3.1–L3.3 in
//! `docs/behaviour/velero.md`).
//!
//! - [`load_json`], [`load_config_map`] and friends: a ConfigMap or JSON text
//!   → [`NodeAgentConfig`] with Velero's decoding rules (C1.4–C1.10), errors
//!   with JSON paths and warnings for unknown, misplaced and mis-cased keys;
//! - [`validate()`]: structured [`Finding`]s, each saying what Velero would do;
//! - [`select_load_affinity`], [`to_affinity`]: load-affinity selection
//!   (A2.1–A2.5) and translation to node affinity (A2.7–A2.12) in a
//!   deterministic order;
//! - [`backup_fragment`], [`restore_fragment`]: the scheduling fragment of
//!   data-mover backup and restore pods (A2.13–A2.23), never mutating the
//!   configuration (A2.18);
//! - [`data_mover_tolerations`], [`PodFragment::with_node_agent_tolerations`]:
//!   the pod's tolerations, with those Velero copies from the node-agent
//!   DaemonSet (A2.27);
//! - [`NodeConcurrency`]: per-node data-path concurrency (L3.1–L3.3);
//! - [`diagnose()`]: why a data-mover pod cannot schedule, node by node;
//! - [`maintenance`]: the repository-maintenance job ConfigMap and the
//!   placement of maintenance jobs (R5.1–R5.14).
//!
//! Pure: no I/O, no clock, no randomness.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod cache;
mod concurrency;
mod config;
mod diagnose;
mod finding;
mod fragment;
mod load;
pub mod maintenance;
mod os;
mod schema;
mod tolerations;
mod translate;
mod validate;
mod version;

pub use cache::{
    CACHE_CLAIM_SUFFIX, CacheDecision, CacheVolume, DEFAULT_CACHE_LIMIT_BYTES, cache_decision,
    cache_volume_size,
};
pub use concurrency::{DEFAULT_CONCURRENCY, NodeConcurrency};
pub use config::{
    BackupPvcConfig, CachePvcConfig, CsiSnapshotMetadataServiceConfig, LoadAffinity,
    LoadConcurrency, NodeAgentConfig, PodResources, RestorePvcConfig, RuledConfig,
};
pub use diagnose::{Diagnosis, NodeVerdict, Origin, Problem, diagnose};
pub use finding::{Finding, FindingKind, Severity};
pub use fragment::{
    BackupVolume, ExposeKind, FAST_PROVISIONING_ANNOTATION, FragmentError, HOSTNAME_LABEL, NodeOs,
    OS_LABEL, PodFragment, RestoreVolume, SELECTED_NODE_ANNOTATION, backup_fragment,
    backup_fragment_for, restore_fragment, restore_fragment_for,
};
#[cfg(feature = "fuzzing")]
pub use load::fuzz_entry;
pub use load::{
    LoadError, Loaded, load_config_map, load_config_map_at, load_config_map_data,
    load_config_map_data_at, load_json, load_json_at, load_json_bytes, plain_type_message,
};
pub use tolerations::{
    INHERITED_TOLERATION_KEYS, data_mover_tolerations, inherited_tolerations,
    node_agent_daemon_set_name,
};
pub use translate::{render_requirement, select_load_affinity, selector_requirements, to_affinity};
pub use validate::validate;
pub use version::{MAIN_COMMIT, UnsupportedVersion, VeleroVersion};

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
