//! kube-scheduler's decisions, offline and exact (C.1–C.23 in
//! `docs/behaviour/kube-scheduler.md`).
//!
//! Give it a snapshot of a cluster (Nodes, Namespaces, Pods) and a pod: it
//! runs kube-scheduler's plugins in kube-scheduler's order, says which nodes
//! pass, why the others do not (kube-scheduler's own reason strings), how
//! each plugin scores the feasible nodes, and which node it picks. It can
//! place whole batches incrementally and explain any verdict node by node.
//!
//! Layout: a framework that never names a plugin (the cluster state, the
//! compiled pod, the result types and the run of a scheduling cycle over a
//! profile), the plugins, one module each under [`plugins`] with its own
//! PreFilter state, Filter, Score, reason strings and table test behind the
//! framework's plugin interface, and the profile as data
//! (`plugins::default_profile`). A new plugin is a module under
//! [`plugins`], listed in a profile there; see `docs/kube-scheduler-sim.md`.
//!
//! Plugins of the default profile:
//! - filters, in the default profile's order (C.31) — NodeUnschedulable
//!   (C.25), NodeName (C.26), TaintToleration (C.27), NodeAffinity
//!   (nodeSelector and required node affinity, C.1–C.4, C.6), NodePorts
//!   (C.28), NodeResourcesFit (C.29, C.30), the volume filters
//!   VolumeRestrictions, NodeVolumeLimits, VolumeBinding and VolumeZone
//!   (C.50–C.54, over the claims, volumes, storage classes and CSINodes
//!   given with [`ClusterState::set_storage`]), PodTopologySpread
//!   `DoNotSchedule` (C.23) and InterPodAffinity (C.7–C.17); the first
//!   failure per node is reported, and kube-scheduler's FitError summary
//!   when no node fits;
//! - scores of the default profile, raw and normalised, with its weights
//!   ([`SCORE_WEIGHTS`], C.21) — TaintToleration (C.41), NodeAffinity (C.5,
//!   with NodeAffinityArgs `addedAffinity`, C.47), NodeResourcesFit
//!   `LeastAllocated` (C.42), PodTopologySpread (C.44, system defaults
//!   from [`Workloads`], C.46), InterPodAffinity (C.18–C.20),
//!   NodeResourcesBalancedAllocation (C.43) and ImageLocality (C.45).
//!
//! Entry points:
//! - [`ClusterState`]: nodes, namespaces and placed pods with indexes,
//!   incremental [`ClusterState::add_pod`] / [`ClusterState::remove_pod`],
//!   [`ClusterState::evaluate`], [`ClusterState::place`] and
//!   [`ClusterState::place_batch`].
//! - [`schedule`] / [`schedule_all`]: one-call entry points over plain
//!   Kubernetes objects; [`schedule_snapshot`] / [`schedule_all_snapshot`]
//!   take a whole [`Snapshot`] with workloads and storage objects (for
//!   `policyctl schedule`).
//! - [`diagnose`]: why a pod does not fit one node, in plain words.
//! - [`capacity`] / [`ClusterState::capacity`]: how many copies of a pod
//!   fit, placed one by one with the whole profile (C.40).
//!
//! The Kubernetes rules the plugins apply — label selectors ([`PodSelector`]),
//! node selector terms ([`kube_validation::node_selector`]), tolerations and
//! cordons ([`kube_validation::taints`]), quantities, the namespace default —
//! are `kube-validation`'s, their one home in the workspace. [`resources`]
//! (a pod's effective requests, a node's allocatable) is public for other
//! crates.
//!
//! Releases: the simulator follows one Kubernetes release's kube-scheduler
//! at a time, 1.34 to 1.37 ([`KubernetesVersion`], in
//! [`Options::kubernetes_version`]; default the newest), C.73–C.74.
//!
//! Node selection is deterministic (M.2, C.22): the feasible node with
//! the highest weighted total of the normalised scores
//! ([`ScheduleResult::totals`], C.21), ties to the first node in name order.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod admission;
mod api;
mod capacity;
mod diagnose;
mod dra;
mod fast_hash;
mod images;
mod node_features;
mod pair_counts;
pub mod plugins;
mod pod_info;
mod ports;
mod profile;
pub mod resources;
mod result;
mod skip;
mod state;
mod version;
pub mod volumes;
mod workloads;

pub use admission::apply_match_label_keys;
pub use api::{
    BatchResult, Placement, ScheduleError, Snapshot, fit_error_summary, schedule, schedule_all,
    schedule_all_snapshot, schedule_all_with_storage, schedule_all_with_workloads,
    schedule_snapshot, schedule_with_storage, schedule_with_workloads,
};
pub use capacity::{Capacity, DEFAULT_MAX_COPIES, capacity, capacity_copy};
pub use diagnose::{Diagnosis, diagnose, diagnose_all};
pub use dra::{ClassDevices, DeviceUsage, DraObjects, NodeDevices};
/// A parsed pod or namespace label selector: [`kube_validation`]'s
/// [`LabelSelectorMatcher`](kube_validation::LabelSelectorMatcher) (a null
/// selector matches nothing, an empty one everything, M.3).
pub use kube_validation::LabelSelectorMatcher as PodSelector;
pub use plugins::{Reason, SCORE_WEIGHTS, score_weights};
pub use pod_info::PodInfo;
pub use result::{
    Code, Failure, Options, OptionsError, Plugin, PluginScores, ScheduleResult, Scores,
};
pub use skip::{DEFAULT_SCHEDULER_NAME, SchedulingSkip, nominated_node, scheduling_skip};
pub use state::{ClusterState, PodId, StateError};
pub use version::{KubernetesVersion, VersionError};
pub use volumes::StorageObjects;
pub use workloads::Workloads;

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
