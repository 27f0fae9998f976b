//! NodeResourcesFit (C.30, `pkg/scheduler/framework/plugins/noderesources`),
//! Filter part (`fitsRequest`): the node must admit one more pod, and for
//! every resource the pod requests (a positive amount) the node's
//! allocatable minus what the pods already on it request must cover the
//! request. Every shortfall is a reason of its own: `Too many pods`, then
//! `Insufficient cpu`, `Insufficient memory`, `Insufficient
//! ephemeral-storage`, then `Insufficient <name>` for scalar resources (by
//! name here; upstream walks a Go map). The status is `Unschedulable`,
//! or `UnschedulableAndUnresolvable` when a request exceeds the node's whole
//! allocatable (preemption cannot help).
//!
//! Requests are [`crate::resources::pod_requests`]
//! (`resource.PodRequests`: init containers, sidecars, pod-level resources
//! and overhead); a pod that requests nothing is checked for the pod count
//! only.

use serde::{Deserialize, Serialize};

use crate::plugins::helper::MAX_NODE_SCORE;
use crate::resources::{CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resources, format_amount};
use crate::result::Code;

use crate::profile::{Cycle, PreFilter, SchedulerPlugin, ScoreOutcome, per_node};
use crate::result::{Plugin, Rejection};

/// One resource the node lacks (`InsufficientResource`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Insufficient {
    /// `pods`, `cpu`, `memory`, `ephemeral-storage` or a scalar resource.
    pub resource: String,
    /// What the pod requests (1 for `pods`; millicores for CPU, else units).
    pub requested: i64,
    /// What the pods already on the node request (their count for `pods`).
    pub used: i64,
    /// The node's allocatable.
    pub capacity: i64,
    /// The request exceeds the whole allocatable: preemption cannot help.
    pub unresolvable: bool,
}

impl Insufficient {
    /// kube-scheduler's reason: `Too many pods` or `Insufficient <name>`.
    pub fn reason(&self) -> String {
        if self.resource == PODS {
            "Too many pods".to_owned()
        } else {
            format!("Insufficient {}", self.resource)
        }
    }

    /// In plain words, with amounts written as in a manifest.
    pub fn explain(&self) -> String {
        if self.resource == PODS {
            return format!(
                "the node already runs {} pod(s) and admits {} (status.allocatable.pods)",
                self.used, self.capacity
            );
        }
        let amount = |v: i64| format_amount(&self.resource, v);
        let free = self.capacity.saturating_sub(self.used);
        format!(
            "{}: the pod requests {}, the node has {} allocatable of which {} is requested by the pods already on it ({} free)",
            self.resource,
            amount(self.requested),
            amount(self.capacity),
            amount(self.used),
            amount(free.max(0)),
        )
    }
}

/// The status code of a NodeResourcesFit failure.
pub(crate) fn code(list: &[Insufficient]) -> Code {
    if list.iter().any(|i| i.unresolvable) {
        Code::UnschedulableAndUnresolvable
    } else {
        Code::Unschedulable
    }
}

/// `fitsRequest`: every shortfall of the node for the pod; empty when it fits.
/// `pods_on_node` and `requested` describe the pods already bound there.
pub fn fits_request(
    pod: &Resources,
    allocatable: &Resources,
    requested: &Resources,
    pods_on_node: i64,
) -> Vec<Insufficient> {
    fits_request_delegating(pod, allocatable, requested, pods_on_node, &[])
}

/// [`fits_request`], leaving out the resources of `delegated` that the
/// node does not advertise: DeviceClasses serve them there, and
/// DynamicResources checks them (`shouldDelegateResourceToDRA`, DR.11).
pub fn fits_request_delegating(
    pod: &Resources,
    allocatable: &Resources,
    requested: &Resources,
    pods_on_node: i64,
    delegated: &[String],
) -> Vec<Insufficient> {
    let mut out = Vec::new();
    if pods_on_node + 1 > allocatable.allowed_pods {
        out.push(Insufficient {
            resource: PODS.to_owned(),
            requested: 1,
            used: pods_on_node,
            capacity: allocatable.allowed_pods,
            unresolvable: false,
        });
    }
    if pod.is_empty() {
        return out;
    }
    let mut check = |name: &str, want: i64, capacity: i64, used: i64| {
        if want > 0 && want > capacity.saturating_sub(used) {
            out.push(Insufficient {
                resource: name.to_owned(),
                requested: want,
                used,
                capacity,
                unresolvable: want > capacity,
            });
        }
    };
    check(
        CPU,
        pod.milli_cpu,
        allocatable.milli_cpu,
        requested.milli_cpu,
    );
    check(MEMORY, pod.memory, allocatable.memory, requested.memory);
    check(
        EPHEMERAL_STORAGE,
        pod.ephemeral_storage,
        allocatable.ephemeral_storage,
        requested.ephemeral_storage,
    );
    for (name, want) in &pod.scalar {
        let capacity = allocatable.scalar.get(name).copied().unwrap_or(0);
        if capacity <= 0 && delegated.contains(name) {
            continue;
        }
        let used = requested.scalar.get(name).copied().unwrap_or(0);
        check(name, *want, capacity, used);
    }
    out
}

/// The pod's requested resources that a DeviceClass serves (DR.11, from
/// 1.36): where a node does not advertise one, NodeResourcesFit leaves it
/// to DynamicResources.
pub(crate) fn delegated_resources(
    state: &crate::ClusterState,
    requests: &Resources,
    version: crate::KubernetesVersion,
) -> Vec<String> {
    let features = crate::dra::DraFeatures::of(version);
    crate::dra::extended::served_resources(&state.dra, requests, features)
        .into_keys()
        .collect()
}

/// `leastRequestedScore`: `(capacity − requested) × 100 / capacity`, 0
/// when the capacity is 0 or the request exceeds it.
fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

/// The Score with the default `LeastAllocated` strategy over `cpu` and
/// `memory`, weight 1 each (C.42): per resource with a non-zero
/// allocatable, `leastRequestedScore(node's non-zero requests + the pod's,
/// allocatable)`; the weighted mean of those, integer division (0 when the
/// node has neither). `pod` and `node_requested` are the non-zero requests
/// ([`crate::resources::pod_non_zero_requests`]): (millicores, bytes).
pub fn least_allocated_score(
    pod: (i64, i64),
    node_requested: (i64, i64),
    allocatable: Option<&Resources>,
) -> i64 {
    let (alloc_cpu, alloc_mem) = allocatable.map_or((0, 0), |a| (a.milli_cpu, a.memory));
    let mut score = 0;
    let mut weights = 0;
    for (requested, capacity) in [
        (node_requested.0.saturating_add(pod.0), alloc_cpu),
        (node_requested.1.saturating_add(pod.1), alloc_mem),
    ] {
        if capacity == 0 {
            continue;
        }
        score += least_requested_score(requested, capacity);
        weights += 1;
    }
    if weights == 0 { 0 } else { score / weights }
}

/// The plugin in a profile: PreFilter (the pod's effective requests, C.29),
/// Filter (C.29, C.30) and Score (`LeastAllocated`, C.42).
pub(crate) struct NodeResourcesFit;

impl SchedulerPlugin for NodeResourcesFit {
    fn name(&self) -> Plugin {
        Plugin::NodeResourcesFit
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        let (state, pod) = (cycle.state, cycle.pod);
        let requests = match &pod.requests {
            Ok(r) => r,
            Err(problem) => return PreFilter::Error(format!("pod {}: {problem}", pod.key())),
        };
        let delegated = delegated_resources(state, requests, cycle.opts.kubernetes_version);
        PreFilter::Filter(Box::new(move |node| {
            let e = &state.nodes[node as usize];
            let allocatable = e.allocatable.as_ref()?;
            let short = fits_request_delegating(
                requests,
                allocatable,
                &e.requested,
                e.pod_count,
                &delegated,
            );
            (!short.is_empty()).then(|| {
                Rejection::many(
                    Plugin::NodeResourcesFit,
                    code(&short),
                    short.iter().map(Insufficient::reason).collect(),
                )
            })
        }))
    }

    fn score(&self, cycle: &Cycle<'_>, scored: &[u32]) -> ScoreOutcome {
        let pod = cycle.pod;
        let raw = per_node(cycle.state, scored, |e| {
            least_allocated_score(
                pod.non_zero_requests,
                e.non_zero_requested,
                e.allocatable.as_ref(),
            )
        });
        Ok(Some((raw.clone(), raw)))
    }
}
