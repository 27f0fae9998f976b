//! NodeUnschedulable (C.25, `pkg/scheduler/framework/plugins/nodeunschedulable`):
//! a cordoned node (`spec.unschedulable: true`) takes only pods that
//! tolerate the `node.kubernetes.io/unschedulable:NoSchedule` taint. The
//! rule is [`kube_validation::taints::cordon_admits`], the plugin's Filter.

pub use kube_validation::taints::{
    UNSCHEDULABLE_TAINT_KEY, cordon_admits as fits, is_cordoned, tolerates_cordon,
};

use crate::profile::{Cycle, PreFilter, SchedulerPlugin};
use crate::result::{Code, Plugin, Rejection};

/// kube-scheduler's reason (`ErrReasonUnschedulable`).
pub const REASON: &str = "node(s) were unschedulable";

/// The Filter's status for a cordoned node.
const REJECTION: Rejection = Rejection::new(
    Plugin::NodeUnschedulable,
    Code::UnschedulableAndUnresolvable,
    REASON,
);

/// The plugin in a profile: Filter only.
pub(crate) struct NodeUnschedulable;

impl SchedulerPlugin for NodeUnschedulable {
    fn name(&self) -> Plugin {
        Plugin::NodeUnschedulable
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        if tolerates_cordon(&cycle.pod.tolerations) {
            return PreFilter::Skip;
        }
        let state = cycle.state;
        PreFilter::Filter(Box::new(move |node| {
            state.nodes[node as usize]
                .unschedulable
                .then_some(REJECTION)
        }))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Node, Toleration};
    use kube_validation::taints::NO_SCHEDULE;

    use super::*;

    fn node(unschedulable: Option<bool>) -> Node {
        Node {
            spec: Some(k8s_openapi::api::core::v1::NodeSpec {
                unschedulable,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn exists(key: &str, effect: Option<&str>) -> Toleration {
        Toleration {
            key: Some(key.to_owned()),
            operator: Some("Exists".to_owned()),
            effect: effect.map(Into::into),
            ..Default::default()
        }
    }

    // TestNodeUnschedulable (nodeunschedulable/node_unschedulable_test.go).
    #[test]
    fn node_unschedulable_table() {
        assert!(fits(&node(Some(false)), &[]));
        assert!(!fits(&node(Some(true)), &[]));
        assert!(fits(&node(None), &[]));
        assert!(fits(
            &node(Some(true)),
            &[exists(UNSCHEDULABLE_TAINT_KEY, Some(NO_SCHEDULE))]
        ));
        assert!(!fits(
            &node(Some(true)),
            &[exists(UNSCHEDULABLE_TAINT_KEY, Some("NoExecute"))]
        ));
        assert!(fits(&node(Some(true)), &[exists("", None)]));
    }
}
