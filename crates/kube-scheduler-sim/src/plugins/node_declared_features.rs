//! NodeDeclaredFeatures (C.76, `pkg/scheduler/framework/plugins/nodedeclaredfeatures`,
//! in the default profile from 1.36): a pod that needs a node feature to
//! run fits only nodes whose kubelet declares it in
//! `status.declaredFeatures`. What a pod needs and what a node declares
//! are read by the functions re-exported here.

pub use crate::node_features::{
    RequiredFeature, declared_features, node_has, registry, required_features,
};

use crate::profile::{Cycle, PreFilter, SchedulerPlugin};
use crate::result::{Code, Plugin, Rejection};

/// kube-scheduler's reason (`errReasonUnsatisfiedRequirements`); the
/// missing features are not named.
pub const REASON: &str = "node(s) didn't match Pod's required features";

/// The Filter's status for a node that lacks a feature.
const REJECTION: Rejection = Rejection::new(
    Plugin::NodeDeclaredFeatures,
    Code::UnschedulableAndUnresolvable,
    REASON,
);

/// The plugin in a profile: PreFilter (skipping a pod that needs no
/// feature) and Filter.
pub(crate) struct NodeDeclaredFeatures;

impl SchedulerPlugin for NodeDeclaredFeatures {
    fn name(&self) -> Plugin {
        Plugin::NodeDeclaredFeatures
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        let required = &cycle.pod.required_features;
        if required.is_empty() {
            return PreFilter::Skip;
        }
        let state = cycle.state;
        let version = cycle.opts.kubernetes_version;
        PreFilter::Filter(Box::new(move |node| {
            let declared = &state.nodes[node as usize].declared_features;
            (!node_has(declared, required, version)).then_some(REJECTION)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KubernetesVersion;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    // TestFilter (nodedeclaredfeatures_test.go, v1.36.3 and v1.37.2), with
    // the registry's features in place of the mock ones.
    #[test]
    fn a_node_fits_when_it_declares_every_required_feature() {
        use RequiredFeature::{
            RestartAllContainersOnContainerExits as R, UserNamespacesHostNetworkSupport as U,
        };
        let v = KubernetesVersion::V1_37;
        let (r, u) = (R.name(), U.name());
        assert!(node_has(&strings(&[r, u]), &[R], v));
        assert!(!node_has(&strings(&[u]), &[R], v));
        assert!(node_has(
            &strings(&[r, u, "VolumeBindMountOptions"]),
            &[R, U],
            v
        ));
        assert!(!node_has(&[], &[R], v));
        assert!(!node_has(&strings(&[r]), &[R, U], v));
    }
}
