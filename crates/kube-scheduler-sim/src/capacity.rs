//! Capacity: how many more pods like this one fit (C.40).
//!
//! Copies of the pod are placed one after another with the whole profile
//! ([`ClusterState::place`]: every filter, scores, selection, AddPod), each
//! placement updating the state, until a copy does not fit or the limit is
//! reached. Copies carry the pod's labels, so anti-affinity and topology
//! spread against earlier copies apply exactly as to a ReplicaSet's
//! replicas.
//!
//! A copy is the pod with `metadata.name` set to `<name>-copy-<i>` (`i` from
//! 1, skipping any name a pod of the same namespace already has in the
//! state), and without `spec.nodeName`, `status`, `uid`, `resourceVersion`,
//! `generateName`, `deletionTimestamp` and `managedFields`. Everything else
//! (labels, annotations, owner references, the whole spec) is kept.
//!
//! Copies kube-scheduler would not try (another `spec.schedulerName`,
//! `spec.schedulingGates`, C.70) are not placed: the count is 0 and
//! [`Capacity::skipped`] says why. Pending pods nominated to a node with a
//! priority at least the copies' keep their room there (C.71).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube_validation::namespace_or_default;
use serde::{Deserialize, Serialize};

use crate::api::{Placement, ScheduleError};
use crate::result::Options;
use crate::state::ClusterState;

/// The default limit on copies ([`capacity`], `policyctl capacity --max`):
/// a pod without requests on nodes without `status.allocatable` would
/// otherwise fit forever.
pub const DEFAULT_MAX_COPIES: usize = 10_000;

/// How many copies of a pod fit, where, and why the next one does not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capacity {
    /// `namespace/name` of the pod copied.
    pub pod: String,
    /// Copies placed.
    pub count: usize,
    /// The limit on copies that applied.
    pub max: usize,
    /// Whether the run stopped at `max` (the next copy was not tried).
    pub limit_reached: bool,
    /// Copies per node (nodes without copies are left out), by node name.
    pub nodes: BTreeMap<String, usize>,
    /// Why the next copy does not fit, in kube-scheduler's FitError form
    /// (`0/7 nodes are available: ...`); `None` when the limit was reached.
    pub reason: Option<String>,
    /// Every placed copy (its name and node), in placement order.
    pub copies: Vec<Placement>,
    /// Why kube-scheduler would not try the copies at all (another
    /// scheduler name or scheduling gates, C.70): no copy is placed and
    /// `reason` says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<crate::skip::SchedulingSkip>,
}

/// The copy of `pod` named `name` (see the module documentation).
pub fn capacity_copy(pod: &Pod, name: &str) -> Pod {
    let mut copy = pod.clone();
    let meta = &mut copy.metadata;
    meta.name = Some(name.to_owned());
    meta.uid = None;
    meta.resource_version = None;
    meta.generate_name = None;
    meta.deletion_timestamp = None;
    meta.deletion_grace_period_seconds = None;
    meta.managed_fields = None;
    if let Some(spec) = copy.spec.as_mut() {
        spec.node_name = None;
    }
    copy.status = None;
    copy
}

impl ClusterState {
    /// The name of copy `i` (from 1) of `pod`: `<name>-copy-<i>`, or, if a
    /// placed pod of the namespace has that name, the next free index's
    /// name. Returns the name and the index used.
    fn free_copy_name(&self, namespace: &str, name: &str, mut i: usize) -> (String, usize) {
        loop {
            let candidate = format!("{name}-copy-{i}");
            if self.find_pod(namespace, &candidate).is_none() {
                return (candidate, i);
            }
            i += 1;
        }
    }

    /// Place copies of `pod` one by one (each with [`ClusterState::place`])
    /// until one does not fit or `max` copies are placed. The copies stay
    /// placed in the state; clone the state first to keep it.
    ///
    /// The pod itself is not placed: if it is bound and in the state it
    /// stays where it is, and the copies are new pods besides it.
    pub fn capacity(
        &mut self,
        pod: &Pod,
        max: usize,
        opts: &Options,
    ) -> Result<Capacity, ScheduleError> {
        opts.validate()?;
        let namespace = namespace_or_default(pod.metadata.namespace.as_deref());
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let mut result = Capacity {
            pod: format!("{namespace}/{name}"),
            max,
            ..Default::default()
        };
        if let Some(skip) = crate::skip::scheduling_skip(&capacity_copy(pod, name)) {
            result.reason = Some(skip.to_string());
            result.skipped = Some(skip);
            return Ok(result);
        }
        let mut next = 1;
        while result.count < max {
            let (copy_name, i) = self.free_copy_name(namespace, name, next);
            next = i + 1;
            let copy = capacity_copy(pod, &copy_name);
            let placement = self.place(&copy, opts)?;
            match &placement.node {
                Some(node) => {
                    *result.nodes.entry(node.clone()).or_default() += 1;
                    result.count += 1;
                    result.copies.push(placement);
                }
                None => {
                    result.reason = placement.reason;
                    return Ok(result);
                }
            }
        }
        result.limit_reached = true;
        Ok(result)
    }
}

/// How many copies of `pod` fit over `nodes`, `namespaces` and the bound
/// `pods` ([`ClusterState::capacity`] on a state built with
/// [`ClusterState::from_snapshot`]). `pod` may be one of `pods` (bound: it
/// stays where it is) or not (a pending pod or a workload's template).
///
/// This is the entry point of `policyctl capacity`.
pub fn capacity(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    pod: &Pod,
    max: usize,
    opts: &Options,
) -> Result<Capacity, ScheduleError> {
    opts.validate()?;
    let mut state = ClusterState::for_options(nodes, namespaces, pods, opts)?;
    state.capacity(pod, max, opts)
}
