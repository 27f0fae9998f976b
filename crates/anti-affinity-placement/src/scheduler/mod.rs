//! kube-scheduler-exact pod placement (spec §C).
//!
//! Filters — NodeAffinity (nodeSelector and required node affinity, C.1–C.4,
//! C.6), PodTopologySpread `DoNotSchedule` (C.23) and InterPodAffinity
//! (C.7–C.17) — run in kube-scheduler's plugin order and report the first
//! failure per node with kube-scheduler's message. Scores — NodeAffinity
//! (C.5) and InterPodAffinity (C.18–C.20) — are given raw and normalised.
//!
//! - [`ClusterState`]: nodes, namespaces and placed pods with indexes,
//!   incremental [`ClusterState::add_pod`] / [`ClusterState::remove_pod`],
//!   [`ClusterState::evaluate`], [`ClusterState::place`] and
//!   [`ClusterState::place_batch`].
//! - [`schedule`] / [`schedule_all`]: one-call entry points over plain
//!   Kubernetes objects (for `policyctl schedule`).
//! - [`diagnose`]: why a pod does not fit one node, in plain words.
//! - [`reference`](mod@reference): a brute-force evaluator written straight from the spec,
//!   used as test oracle and benchmark baseline.
//!
//! Node selection is deterministic (spec 0.3, C.22): the feasible node with
//! the highest `2 × NodeAffinity + 2 × InterPodAffinity` normalised score
//! (default profile weights, C.21), ties broken by the smallest node name.

mod admission;
mod api;
mod diagnose;
mod evaluate;
mod fast_hash;
mod interpod;
mod node_selector;
mod pair_counts;
mod pod_info;
pub mod reference;
mod result;
mod selector;
mod spread;
mod state;

pub use admission::apply_match_label_keys;
pub use api::{BatchResult, Placement, ScheduleError, schedule, schedule_all};
pub use diagnose::{Diagnosis, diagnose, diagnose_all};
pub use pod_info::PodInfo;
pub use result::{
    Code, Failure, Options, OptionsError, Plugin, PluginScores, Reason, ScheduleResult, Scores,
};
pub use selector::{
    PodSelector, SelectorError, validate_key, validate_label_selector, validate_value,
};
pub use state::{ClusterState, PodId, StateError};
