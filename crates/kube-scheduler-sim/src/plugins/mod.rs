//! kube-scheduler's plugins, one module each, named as upstream
//! (`pkg/scheduler/framework/plugins/<name>`), each with its filter and score.

pub(crate) mod inter_pod_affinity;
pub(crate) mod pod_topology_spread;
