//! kube-scheduler's plugins, one module each, named as upstream
//! (`pkg/scheduler/framework/plugins/<name>`), each with its filter and score.
//!
//! Modules with public items hold per-node checks other crates reuse (for
//! example `affinity-translate`'s data-mover diagnosis).

pub(crate) mod inter_pod_affinity;
pub mod node_unschedulable;
pub(crate) mod pod_topology_spread;
