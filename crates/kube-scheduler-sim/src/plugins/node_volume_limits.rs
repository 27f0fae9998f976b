//! NodeVolumeLimits (C.51, `pkg/scheduler/framework/plugins/nodevolumelimits`,
//! the CSI limits): a node takes the pod only if, for every CSI driver, the
//! unique volumes already attached there plus the pod's new ones stay
//! within the driver's `allocatable.count` in the node's CSINode.
//!
//! A claim's volume is `driver/handle` of its bound PV's CSI source; an
//! unbound claim (or one whose PV is missing) counts as a new volume of its
//! StorageClass's provisioner. A volume already attached to the node is not
//! counted twice. Nodes without a CSINode, drivers without a count, and
//! pods without CSI volumes pass. The failure is `node(s) exceed max
//! volume count` (`Unschedulable`).

use std::collections::BTreeMap;

use crate::pod_info::PodInfo;
use crate::profile::{Cycle, PreFilter, SchedulerPlugin};
use crate::result::{Code, Plugin, Rejection};
use crate::volumes::{NodeVolumes, Storage};

/// kube-scheduler's reason (`ErrReasonMaxVolumeCountExceeded`).
pub const REASON: &str = "node(s) exceed max volume count";

/// The pod's CSI volumes: unique name → driver.
pub(crate) type NewVolumes = BTreeMap<String, String>;

/// The pod's CSI volumes (`filterAttachableVolumes` for the new pod);
/// `None` when the plugin is skipped (no claim volumes).
pub(crate) fn prefilter(storage: &Storage, pod: &PodInfo) -> Option<NewVolumes> {
    if pod.volumes.claims.is_empty() {
        return None;
    }
    let mut out = NewVolumes::new();
    for c in &pod.volumes.claims {
        let Some(claim) = storage.claim(&pod.namespace, &c.claim) else {
            continue;
        };
        if let Some((unique, driver)) = storage.attachment(claim) {
            out.insert(unique, driver);
        }
    }
    Some(out)
}

/// Per driver: (attached, new, limit) of the first driver over its limit.
pub(crate) fn exceeded(
    new: &NewVolumes,
    node: &NodeVolumes,
    limits: Option<&BTreeMap<String, i64>>,
) -> Option<(String, i64, i64, i64)> {
    let limits = limits?;
    let mut new_per_driver: BTreeMap<&str, i64> = BTreeMap::new();
    for (unique, driver) in new {
        if !node.attached.contains_key(unique) {
            *new_per_driver.entry(driver).or_default() += 1;
        }
    }
    for (driver, count) in new_per_driver {
        let Some(limit) = limits.get(driver) else {
            continue;
        };
        let attached = node.per_driver.get(driver).copied().unwrap_or(0);
        if attached + count > *limit {
            return Some((driver.to_owned(), attached, count, *limit));
        }
    }
    None
}

/// The Filter's status for a node over a driver's limit.
const REJECTION: Rejection = Rejection::new(Plugin::NodeVolumeLimits, Code::Unschedulable, REASON);

/// The plugin in a profile: PreFilter and Filter.
pub(crate) struct NodeVolumeLimits;

impl SchedulerPlugin for NodeVolumeLimits {
    fn name(&self) -> Plugin {
        Plugin::NodeVolumeLimits
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        let state = cycle.state;
        if !cycle.pod.volumes.any {
            return PreFilter::Skip;
        }
        let Some(new) = prefilter(&state.storage, cycle.pod) else {
            return PreFilter::Skip;
        };
        PreFilter::Filter(Box::new(move |node| {
            let e = &state.nodes[node as usize];
            exceeded(&new, &e.volumes, state.storage.csi_limits.get(&e.name))
                .is_some()
                .then_some(REJECTION)
        }))
    }
}
