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
//! PodTopologySpread, InterPodAffinity, DynamicResources and, from 1.36,
//! NodeDeclaredFeatures (1.37 runs NodeName first); then the scores of
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

pub mod dynamic_resources;
pub mod helper;
pub mod image_locality;
pub(crate) mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_declared_features;
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

use crate::KubernetesVersion;
use crate::profile::{Profile, SchedulerPlugin};
use crate::result::{Options, OptionsError, Plugin};

/// The newest release's score plugins and their weights (C.21, DR.8), in
/// the profile's order. Older releases score with a prefix of these less
/// DynamicResources (1.34).
pub const SCORE_WEIGHTS: [(Plugin, i64); 8] = [
    (Plugin::TaintToleration, 3),
    (Plugin::NodeAffinity, 2),
    (Plugin::NodeResourcesFit, 1),
    (Plugin::PodTopologySpread, 2),
    (Plugin::InterPodAffinity, 2),
    (Plugin::DynamicResources, 2),
    (Plugin::NodeResourcesBalancedAllocation, 1),
    (Plugin::ImageLocality, 1),
];

/// A default profile's filters: `first` and `second` (NodeUnschedulable
/// and NodeName, in the release's order), the rest in `getDefaultPlugins`'
/// order with DynamicResources inserted before DefaultPreemption (C.31,
/// DR.1), then the plugins a release appends.
macro_rules! default_filters {
    ($first:expr, $second:expr $(, $appended:expr)*) => {
        [
            $first,
            $second,
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
            &dynamic_resources::DynamicResources,
            $($appended,)*
        ]
    };
}

/// The filters of 1.34 and 1.35.
static FILTERS_1_34: [&dyn SchedulerPlugin; 13] =
    default_filters!(&node_unschedulable::NodeUnschedulable, &node_name::NodeName);

/// The filters of 1.36: NodeDeclaredFeatures appended last (C.76).
static FILTERS_1_36: [&dyn SchedulerPlugin; 14] = default_filters!(
    &node_unschedulable::NodeUnschedulable,
    &node_name::NodeName,
    &node_declared_features::NodeDeclaredFeatures
);

/// The filters of 1.37: NodeName now runs before NodeUnschedulable
/// (C.31, DR.10).
static FILTERS_1_37: [&dyn SchedulerPlugin; 14] = default_filters!(
    &node_name::NodeName,
    &node_unschedulable::NodeUnschedulable,
    &node_declared_features::NodeDeclaredFeatures
);

/// The scores of 1.34: DynamicResources has no Score yet.
static SCORES_1_34: [(&dyn SchedulerPlugin, i64); 7] = [
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

/// The scores of 1.35 on, as [`SCORE_WEIGHTS`]: DynamicResources scores
/// with weight 2 (DR.8).
static SCORES_1_35: [(&dyn SchedulerPlugin, i64); 8] = [
    (&taint_toleration::TaintToleration, 3),
    (&node_affinity::NodeAffinityPlugin, 2),
    (&node_resources_fit::NodeResourcesFit, 1),
    (&pod_topology_spread::PodTopologySpread, 2),
    (&inter_pod_affinity::InterPodAffinity, 2),
    (&dynamic_resources::DynamicResources, 2),
    (
        &node_resources_balanced_allocation::NodeResourcesBalancedAllocation,
        1,
    ),
    (&image_locality::ImageLocality, 1),
];

static PROFILE_1_34: Profile = Profile {
    filters: &FILTERS_1_34,
    scores: &SCORES_1_34,
};

static PROFILE_1_35: Profile = Profile {
    filters: &FILTERS_1_34,
    scores: &SCORES_1_35,
};

static PROFILE_1_36: Profile = Profile {
    filters: &FILTERS_1_36,
    scores: &SCORES_1_35,
};

static PROFILE_1_37: Profile = Profile {
    filters: &FILTERS_1_37,
    scores: &SCORES_1_35,
};

/// The score plugins of a release's default profile with their weights,
/// in the profile's order (C.21, DR.8): [`SCORE_WEIGHTS`] less
/// DynamicResources on 1.34.
pub fn score_weights(version: KubernetesVersion) -> Vec<(Plugin, i64)> {
    profile_for(version)
        .scores
        .iter()
        .map(|(plugin, weight)| (plugin.name(), *weight))
        .collect()
}

/// kube-scheduler's default profile of a release (`getDefaultPlugins`
/// with the feature gates on by default): filters in order, scores with
/// their weights (C.21, C.31, C.76, DR.1, DR.8, DR.10).
pub(crate) fn profile_for(version: KubernetesVersion) -> &'static Profile {
    match version {
        KubernetesVersion::V1_34 => &PROFILE_1_34,
        KubernetesVersion::V1_35 => &PROFILE_1_35,
        KubernetesVersion::V1_36 => &PROFILE_1_36,
        KubernetesVersion::V1_37 => &PROFILE_1_37,
    }
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
    fn the_newest_profile_scores_with_score_weights() {
        let listed: Vec<(Plugin, i64)> = profile_for(KubernetesVersion::LATEST)
            .scores
            .iter()
            .map(|(p, w)| (p.name(), *w))
            .collect();
        assert_eq!(listed, SCORE_WEIGHTS);
    }

    #[test]
    fn older_profiles_score_with_score_weights_less_dynamic_resources_in_1_34() {
        for version in KubernetesVersion::ALL {
            let listed: Vec<(Plugin, i64)> = profile_for(version)
                .scores
                .iter()
                .map(|(p, w)| (p.name(), *w))
                .collect();
            let want: Vec<(Plugin, i64)> = SCORE_WEIGHTS
                .iter()
                .copied()
                .filter(|(p, _)| {
                    version >= KubernetesVersion::V1_35 || *p != Plugin::DynamicResources
                })
                .collect();
            assert_eq!(listed, want, "{version}");
        }
    }

    #[test]
    fn node_declared_features_filters_last_from_1_36() {
        for version in KubernetesVersion::ALL {
            let last = profile_for(version).filters.last().map(|p| p.name());
            let want = if version >= KubernetesVersion::V1_36 {
                Plugin::NodeDeclaredFeatures
            } else {
                Plugin::DynamicResources
            };
            assert_eq!(last, Some(want), "{version}");
        }
    }

    #[test]
    fn filters_run_in_plugin_order_except_node_name_first_from_1_37() {
        for version in KubernetesVersion::ALL {
            let names: Vec<Plugin> = profile_for(version)
                .filters
                .iter()
                .map(|p| p.name())
                .collect();
            let mut want = names.clone();
            want.sort();
            if version >= KubernetesVersion::V1_37 {
                want.swap(0, 1);
            }
            assert_eq!(names, want, "{version}");
            assert_eq!(
                names[0],
                if version >= KubernetesVersion::V1_37 {
                    Plugin::NodeName
                } else {
                    Plugin::NodeUnschedulable
                }
            );
        }
    }
}
