//! kube-scheduler's plugins, one module each, named as upstream
//! (`pkg/scheduler/framework/plugins/<name>`), each with its filter and score.
//! The evaluator runs the filters in the default profile's order:
//! NodeUnschedulable, NodeName, TaintToleration, NodeAffinity (matching in
//! [`kube_validation::node_selector`]), NodePorts, NodeResourcesFit,
//! VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
//! PodTopologySpread, InterPodAffinity; then the scores of
//! [`crate::SCORE_WEIGHTS`].
//!
//! The Kubernetes rules these plugins apply (node selectors, tolerations,
//! cordons, label selectors) live in `kube-validation`, where other crates
//! (`affinity-translate`'s data-mover diagnosis) use them too.

pub mod helper;
pub mod image_locality;
pub(crate) mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_balanced_allocation;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod node_volume_limits;
pub(crate) mod pod_topology_spread;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;
