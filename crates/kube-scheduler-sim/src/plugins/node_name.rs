//! NodeName (C.26, `pkg/scheduler/framework/plugins/nodename`): a pod whose
//! `spec.nodeName` is set fits only the node of that name.

use crate::profile::{Cycle, PreFilter, SchedulerPlugin};
use crate::result::{Code, Plugin, Rejection};

/// kube-scheduler's reason (`ErrReason`).
pub const REASON: &str = "node(s) didn't match the requested node name";

/// The Filter: true when the pod names no node or names this one.
pub fn fits(pod_node_name: Option<&str>, node_name: &str) -> bool {
    pod_node_name.is_none_or(|n| n.is_empty() || n == node_name)
}

/// The Filter's status for another node.
const REJECTION: Rejection =
    Rejection::new(Plugin::NodeName, Code::UnschedulableAndUnresolvable, REASON);

/// The plugin in a profile: Filter only.
pub(crate) struct NodeName;

impl SchedulerPlugin for NodeName {
    fn name(&self) -> Plugin {
        Plugin::NodeName
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        let Some(wanted) = cycle.pod.node_name.as_deref() else {
            return PreFilter::Skip;
        };
        let state = cycle.state;
        PreFilter::Filter(Box::new(move |node| {
            (!fits(Some(wanted), &state.nodes[node as usize].name)).then_some(REJECTION)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // TestNodeName (nodename/node_name_test.go).
    #[test]
    fn node_name_table() {
        assert!(fits(None, "foo"), "no host specified");
        assert!(fits(Some("foo"), "foo"), "host matches");
        assert!(!fits(Some("bar"), "foo"), "host doesn't match");
    }
}
