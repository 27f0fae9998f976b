//! Velero's node-agent configuration (`--node-agent-configmap`), done
//! exactly and helpfully (spec `velero.md` §1, §2, §3.1).
//!
//! - [`load`]: a ConfigMap or JSON text → [`NodeAgentConfig`] with Velero's
//!   decoding rules (C1.4–C1.10), errors with JSON paths and warnings for
//!   unknown, misplaced and mis-cased keys;
//! - [`validate()`]: structured [`Finding`]s, each saying what Velero would do;
//! - [`translate`]: load-affinity selection (A2.1–A2.5) and translation to
//!   node affinity (A2.7–A2.12) in a deterministic order;
//! - [`fragment`]: the scheduling fragment of data-mover backup and restore
//!   pods (A2.13–A2.23), never mutating the configuration (A2.18);
//! - [`concurrency`]: per-node data-path concurrency (L3.1–L3.3);
//! - [`diagnose()`]: why a data-mover pod cannot schedule, node by node.
//!
//! Pure: no I/O, no clock, no randomness.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod concurrency;
pub mod config;
pub mod diagnose;
pub mod finding;
pub mod fragment;
pub mod load;
mod schema;
pub mod translate;
pub mod validate;

pub use concurrency::{DEFAULT_CONCURRENCY, NodeConcurrency};
pub use config::{
    BackupPvcConfig, CachePvcConfig, LoadAffinity, LoadConcurrency, NodeAgentConfig, PodResources,
    RestorePvcConfig, RuledConfig,
};
pub use diagnose::{Diagnosis, NodeVerdict, Origin, Problem, diagnose};
pub use finding::{Finding, FindingKind, Severity};
pub use fragment::{
    BackupVolume, ExposeKind, FragmentError, NodeOs, PodFragment, RestoreVolume, backup_fragment,
    backup_fragment_for, restore_fragment, restore_fragment_for,
};
pub use kube_validation::{Quantity, QuantityError};
pub use load::{
    LoadError, Loaded, load_config_map, load_config_map_data, load_json, load_json_bytes,
};
pub use translate::{select_load_affinity, selector_requirements, to_affinity};
pub use validate::validate;

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
