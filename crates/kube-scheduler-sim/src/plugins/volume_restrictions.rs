//! VolumeRestrictions (C.50, `pkg/scheduler/framework/plugins/volumerestrictions`).
//!
//! PreFilter reads every `persistentVolumeClaim` volume's claim: a missing
//! claim rejects the pod on every node (`persistentvolumeclaim "x" not
//! found`, UnschedulableAndUnresolvable). A claim with the
//! `ReadWriteOncePod` access mode that a scheduled pod already uses counts
//! as a conflict. The plugin is skipped when the pod has no inline GCE PD,
//! AWS EBS, iSCSI or RBD volume and no such conflict.
//!
//! Filter, per node: an inline disk of the pod conflicting with one of a
//! pod already on the node (same GCE PD unless both read-only; same EBS
//! volume ID; same iSCSI IQN unless both read-only; a shared Ceph monitor,
//! same pool and image unless both read-only) gives `node(s) had no
//! available disk`; otherwise a ReadWriteOncePod conflict gives its
//! message on every node. Both are `Unschedulable`.

use crate::pod_info::PodInfo;
use crate::profile::{Cycle, PreFilter, SchedulerPlugin};
use crate::result::{Code, Plugin, Rejection};
use crate::volumes::{NodeVolumes, Storage};

/// kube-scheduler's reason for a disk conflict (`ErrReasonDiskConflict`).
pub const DISK_CONFLICT: &str = "node(s) had no available disk";
/// kube-scheduler's reason for a ReadWriteOncePod claim in use
/// (`ErrReasonReadWriteOncePodConflict`).
pub const READ_WRITE_ONCE_POD_CONFLICT: &str = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";

/// PreFilter's result when the plugin is not skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pre {
    /// ReadWriteOncePod claims of the pod already used by scheduled pods.
    pub(crate) in_use: Vec<String>,
}

/// PreFilter: `Err` with kube-scheduler's message when a claim is missing,
/// `Ok(None)` when the plugin is skipped.
pub(crate) fn prefilter(storage: &Storage, pod: &PodInfo) -> Result<Option<Pre>, String> {
    let mut in_use = Vec::new();
    for c in pod.volumes.claims.iter().filter(|c| !c.ephemeral) {
        let Some(claim) = storage.claim(&pod.namespace, &c.claim) else {
            return Err(format!("persistentvolumeclaim {:?} not found", c.claim));
        };
        let rwop = claim
            .spec
            .as_ref()
            .and_then(|s| s.access_modes.as_ref())
            .is_some_and(|m| m.iter().any(|m| m == "ReadWriteOncePod"));
        if rwop
            && storage
                .claim_users
                .get(&(pod.namespace.clone(), c.claim.clone()))
                .is_some_and(|n| *n > 0)
            && !in_use.contains(&c.claim)
        {
            in_use.push(c.claim.clone());
        }
    }
    if pod.volumes.disks.is_empty() && in_use.is_empty() {
        return Ok(None);
    }
    Ok(Some(Pre { in_use }))
}

/// Filter on one node.
pub(crate) fn filter(pre: &Pre, pod: &PodInfo, node: &NodeVolumes) -> Option<Rejection> {
    if pod
        .volumes
        .disks
        .iter()
        .any(|d| node.disks.iter().any(|(e, _)| d.conflicts(e)))
    {
        return Some(DISK_CONFLICT_REJECTION);
    }
    (!pre.in_use.is_empty()).then_some(READ_WRITE_ONCE_POD_REJECTION)
}

/// The Filter's status for a disk conflict.
const DISK_CONFLICT_REJECTION: Rejection = Rejection::new(
    Plugin::VolumeRestrictions,
    Code::Unschedulable,
    DISK_CONFLICT,
);

/// The Filter's status for a ReadWriteOncePod claim in use.
const READ_WRITE_ONCE_POD_REJECTION: Rejection = Rejection::new(
    Plugin::VolumeRestrictions,
    Code::Unschedulable,
    READ_WRITE_ONCE_POD_CONFLICT,
);

/// The plugin in a profile: PreFilter and Filter.
pub(crate) struct VolumeRestrictions;

impl SchedulerPlugin for VolumeRestrictions {
    fn name(&self) -> Plugin {
        Plugin::VolumeRestrictions
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        let (state, pod) = (cycle.state, cycle.pod);
        if !pod.volumes.any {
            return PreFilter::Skip;
        }
        match prefilter(&state.storage, pod) {
            Err(m) => PreFilter::AllNodes(Rejection::many(
                Plugin::VolumeRestrictions,
                Code::UnschedulableAndUnresolvable,
                vec![m],
            )),
            Ok(None) => PreFilter::Skip,
            Ok(Some(pre)) => PreFilter::Filter(Box::new(move |node| {
                filter(&pre, pod, &state.nodes[node as usize].volumes)
            })),
        }
    }
}
