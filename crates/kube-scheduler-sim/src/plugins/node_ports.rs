//! NodePorts (C.28, `pkg/scheduler/framework/plugins/nodeports`): a node is
//! rejected when a host port the pod asks for is already in use there.
//!
//! Ports are `schedutil.GetHostPorts`: every `hostPort > 0` of the regular
//! containers and of restartable init containers (sidecars), both for the
//! incoming pod and for the pods already on the node. An empty `hostIP`
//! means `0.0.0.0` and an empty protocol `TCP` (`HostPortInfo`'s
//! `sanitize`). A wanted port conflicts (`HostPortInfo.CheckConflict`) with
//! a used one of the same protocol and number when either side binds
//! `0.0.0.0` or both bind the same address.

use crate::profile::{Cycle, PreFilter, SchedulerPlugin};
use crate::result::{Code, Plugin, Rejection};

/// kube-scheduler's reason (`ErrReason`).
pub const REASON: &str = "node(s) didn't have free ports for the requested pod ports";

pub use crate::ports::{BIND_ALL, HostPort, UsedPorts, host_ports};

/// The Filter (`fitsPorts`): true when no wanted port conflicts.
pub fn fits(wanted: &[HostPort], used: &UsedPorts) -> bool {
    wanted.iter().all(|w| used.conflict(w).is_none())
}

/// The Filter's status for a port conflict.
const REJECTION: Rejection = Rejection::new(Plugin::NodePorts, Code::Unschedulable, REASON);

/// The plugin in a profile: Filter only.
pub(crate) struct NodePorts;

impl SchedulerPlugin for NodePorts {
    fn name(&self) -> Plugin {
        Plugin::NodePorts
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        let (state, pod) = (cycle.state, cycle.pod);
        if pod.host_ports.is_empty() {
            return PreFilter::Skip;
        }
        PreFilter::Filter(Box::new(move |node| {
            (!fits(&pod.host_ports, &state.nodes[node as usize].used_ports)).then_some(REJECTION)
        }))
    }
}
