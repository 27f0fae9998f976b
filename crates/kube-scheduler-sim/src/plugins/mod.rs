//! kube-scheduler's plugins, one module each, named as upstream
//! (`pkg/scheduler/framework/plugins/<name>`). Each module owns its
//! PreFilter state, Filter, Score, reason strings and table test, and
//! implements the framework's plugin interface (`SchedulerPlugin` in the
//! crate's `profile` module). The framework never names a plugin: the
//! profile — which plugins run, in which order, with which score weights —
//! is data built here, `default_profile()` (C.21, C.31), so another
//! profile (per Kubernetes version, say) is another list.
//!
//! The default profile's filters run in this order: NodeUnschedulable,
//! NodeName, TaintToleration, NodeAffinity (matching in
//! [`kube_validation::node_selector`]), NodePorts, NodeResourcesFit,
//! VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
//! PodTopologySpread, InterPodAffinity; then the scores of
//! [`SCORE_WEIGHTS`].
//!
//! A new plugin is a module here implementing `SchedulerPlugin` (reason
//! strings as `pub const`s, its statuses built with `Rejection`), listed in
//! a profile below; [`Reason`] names its fixed reasons if callers match on
//! them.
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
mod reasons;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;

pub use reasons::Reason;

use crate::profile::{Profile, SchedulerPlugin};
use crate::result::{Options, OptionsError, Plugin};

/// The default profile's score plugins and their weights (C.21), in the
/// profile's order.
pub const SCORE_WEIGHTS: [(Plugin, i64); 7] = [
    (Plugin::TaintToleration, 3),
    (Plugin::NodeAffinity, 2),
    (Plugin::NodeResourcesFit, 1),
    (Plugin::PodTopologySpread, 2),
    (Plugin::InterPodAffinity, 2),
    (Plugin::NodeResourcesBalancedAllocation, 1),
    (Plugin::ImageLocality, 1),
];

/// The default profile's filter plugins, in `getDefaultPlugins`' order (C.31).
static DEFAULT_FILTERS: [&dyn SchedulerPlugin; 12] = [
    &node_unschedulable::NodeUnschedulable,
    &node_name::NodeName,
    &taint_toleration::TaintToleration,
    &node_affinity::NodeAffinityPlugin,
    &node_ports::NodePorts,
    &node_resources_fit::NodeResourcesFit,
    &volume_restrictions::VolumeRestrictions,
    &node_volume_limits::NodeVolumeLimits,
    &volume_binding::VolumeBinding,
    &volume_zone::VolumeZone,
    &pod_topology_spread::PodTopologySpread,
    &inter_pod_affinity::InterPodAffinity,
];

/// The default profile's score plugins with their weights, as
/// [`SCORE_WEIGHTS`].
static DEFAULT_SCORES: [(&dyn SchedulerPlugin, i64); 7] = [
    (&taint_toleration::TaintToleration, 3),
    (&node_affinity::NodeAffinityPlugin, 2),
    (&node_resources_fit::NodeResourcesFit, 1),
    (&pod_topology_spread::PodTopologySpread, 2),
    (&inter_pod_affinity::InterPodAffinity, 2),
    (
        &node_resources_balanced_allocation::NodeResourcesBalancedAllocation,
        1,
    ),
    (&image_locality::ImageLocality, 1),
];

static DEFAULT_PROFILE: Profile = Profile {
    filters: &DEFAULT_FILTERS,
    scores: &DEFAULT_SCORES,
};

/// kube-scheduler's default profile (`getDefaultPlugins`): filters in
/// order, scores with their weights (C.21, C.31).
pub(crate) fn default_profile() -> &'static Profile {
    &DEFAULT_PROFILE
}

impl Options {
    /// Check ranges as kube-scheduler's config validation does (the
    /// plugins' arguments: InterPodAffinityArgs, NodeAffinityArgs).
    pub fn validate(&self) -> Result<(), OptionsError> {
        if !(0..=100).contains(&self.hard_pod_affinity_weight) {
            return Err(OptionsError::HardPodAffinityWeightOutOfRange(
                self.hard_pod_affinity_weight,
            ));
        }
        if let Some(added) = &self.added_affinity {
            node_affinity::AddedAffinity::compile(added).map_err(OptionsError::AddedAffinity)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_profile_scores_are_score_weights() {
        let listed: Vec<(Plugin, i64)> = default_profile()
            .scores
            .iter()
            .map(|(p, w)| (p.name(), *w))
            .collect();
        assert_eq!(listed, SCORE_WEIGHTS);
    }

    #[test]
    fn default_profile_filters_run_in_plugin_order() {
        let names: Vec<Plugin> = default_profile().filters.iter().map(|p| p.name()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "Plugin's order is the filter order");
    }
}
