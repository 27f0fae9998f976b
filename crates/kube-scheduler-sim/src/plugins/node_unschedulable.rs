//! NodeUnschedulable (C.25, `pkg/scheduler/framework/plugins/nodeunschedulable`):
//! a cordoned node (`spec.unschedulable: true`) takes only pods that
//! tolerate the `node.kubernetes.io/unschedulable:NoSchedule` taint.

use k8s_openapi::api::core::v1::{Node, Taint, Toleration};

use crate::taints::{NO_SCHEDULE, tolerated};

/// The taint a cordon stands for (`v1.TaintNodeUnschedulable`).
pub const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";

/// kube-scheduler's reason (`ErrReasonUnschedulable`).
pub const REASON: &str = "node(s) were unschedulable";

/// Whether the node is cordoned.
pub fn is_cordoned(node: &Node) -> bool {
    node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
}

/// The Filter: false when the node is cordoned and no toleration tolerates
/// `node.kubernetes.io/unschedulable:NoSchedule`.
pub fn fits(node: &Node, tolerations: &[Toleration]) -> bool {
    !is_cordoned(node) || tolerates_cordon(tolerations)
}

/// Whether the tolerations tolerate the cordon taint.
pub fn tolerates_cordon(tolerations: &[Toleration]) -> bool {
    tolerated(
        tolerations,
        &Taint {
            key: UNSCHEDULABLE_TAINT_KEY.to_owned(),
            effect: NO_SCHEDULE.to_owned(),
            ..Taint::default()
        },
    )
}

#[cfg(test)]
mod tests {
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
