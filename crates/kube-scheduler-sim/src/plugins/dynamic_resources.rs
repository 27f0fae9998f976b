//! DynamicResources (DR.1–DR.9, `pkg/scheduler/framework/plugins/
//! dynamicresources`): a pod's ResourceClaims must be allocatable on the
//! node. Claims already allocated pin the nodes their devices reach;
//! the others are allocated node by node by the structured-parameters
//! allocator (the crate's `dra::allocator` module). From 1.35 the plugin also
//! scores the `firstAvailable` alternative each node would get. From 1.36
//! it also serves the pod's extended resources that DeviceClasses name, on
//! nodes that do not advertise them, with a claim of its own (DR.11).

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceAllocationResult, DeviceClaim, DeviceRequest,
    DeviceRequestAllocationResult, ExactDeviceRequest, ResourceClaim,
    ResourceClaimConsumerReference, ResourceClaimSpec, ResourceClaimStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube_validation::node_selector::NodeSelectorMatcher;

use crate::dra::allocator::{self, Allocation, Attempt, PreparedClaim, Selectors};
use crate::dra::capacity;
use crate::dra::extended::{self, ContainerRequests, ExtendedRequest};
use crate::dra::{ClaimSource, DraFeatures};
use crate::plugins::helper::default_normalize;
use crate::pod_info::PodInfo;
use crate::profile::{Cycle, PreFilter, SchedulerPlugin, ScoreOutcome};
use crate::result::{Code, Plugin, Rejection};
use crate::state::ClusterState;

/// The allocator found no devices for every claim on the node.
pub const CANNOT_ALLOCATE: &str = "cannot allocate all claims";
/// An allocated claim's devices cannot be reached from the node.
pub const NOT_AVAILABLE: &str = "resourceclaim not available on the node";
/// A template's claim is not created (the resource-claim controller's job).
pub const CLAIM_NOT_CREATED: &str = "ResourceClaim not created yet";

/// `FirstAvailableDeviceRequestMaxSize`: the first alternative scores 8,
/// the next 7, and so on.
const FIRST_AVAILABLE_MAX: i64 = 8;

/// A claim of the pod, resolved against the state.
struct Resolved<'a> {
    /// Where the claim is (or would be) stored.
    key: (String, String),
    /// `namespace/name`, as upstream prints it.
    label: String,
    spec: &'a ResourceClaimSpec,
    /// The stored claim, when there is one.
    stored: Option<&'a ResourceClaim>,
    allocation: Option<&'a AllocationResult>,
}

fn rejection(reason: String) -> Rejection {
    Rejection::many(
        Plugin::DynamicResources,
        Code::UnschedulableAndUnresolvable,
        vec![reason],
    )
}

/// The pod's claims, in `spec.resourceClaims` order (`foreachPodResourceClaim`),
/// or kube-scheduler's reason why they cannot be used.
fn resolve<'a>(state: &'a ClusterState, pod: &PodInfo) -> Result<Vec<Resolved<'a>>, String> {
    let dra = &state.dra;
    let ns = &pod.namespace;
    let mut out = Vec::with_capacity(pod.claims.len());
    for entry in &pod.claims {
        let (name, template) = match &entry.source {
            ClaimSource::NotNeeded => continue,
            ClaimSource::Unsupported => {
                return Err(format!(
                    "pod \"{ns}/{}\", spec.resourceClaim {:?}: none of the supported fields are set",
                    pod.name, entry.name
                ));
            }
            ClaimSource::Named(name) => (name.clone(), None),
            ClaimSource::Template(template) => {
                (format!("{}-{}", pod.name, entry.name), Some(template))
            }
        };
        let key = (ns.clone(), name.clone());
        let label = format!("{ns}/{name}");
        if let Some(claim) = dra.claims.get(&key) {
            if claim.metadata.deletion_timestamp.is_some() {
                return Err(format!("resourceclaim {name:?} is being deleted"));
            }
            out.push(Resolved {
                key,
                label,
                spec: &claim.spec,
                stored: Some(claim),
                allocation: claim.status.as_ref().and_then(|s| s.allocation.as_ref()),
            });
            continue;
        }
        let Some(template) = template else {
            return Err(format!("resourceclaim.resource.k8s.io {name:?} not found"));
        };
        // The simulator makes the claim the resource-claim controller
        // would make from the template (DR.2).
        let Some(found) = dra.templates.get(&(ns.clone(), template.clone())) else {
            return Err(format!("pod \"{ns}/{}\": {CLAIM_NOT_CREATED}", pod.name));
        };
        out.push(Resolved {
            key,
            label,
            spec: &found.spec.spec,
            stored: None,
            allocation: None,
        });
    }
    Ok(out)
}

/// What PreFilter computed for a pod with claims.
struct Prepared<'a> {
    /// Node selectors of the allocated claims.
    pinned: Vec<NodeSelectorMatcher>,
    /// The claims to allocate, checked.
    to_allocate: Vec<PreparedClaim<'a>>,
    /// The pod's extended resources that DeviceClasses serve (DR.11).
    extended: Option<ExtendedPlan>,
    selectors: Selectors,
    features: DraFeatures,
}

/// The extended resources of a pod that DeviceClasses serve, for the claim
/// DynamicResources builds on each node that does not advertise them
/// (DR.11).
struct ExtendedPlan {
    /// The pod's containers, init containers first.
    containers: Vec<ContainerRequests>,
    /// Each requested resource a class serves → that class.
    mapped: BTreeMap<String, String>,
    /// `<namespace>/<extended-resources>`: the claim as upstream names it
    /// before it is created.
    label: String,
}

impl ExtendedPlan {
    /// The pod's extended resources that `state`'s classes serve, when any
    /// (`preFilterExtendedResources`): requested (the pod's effective
    /// request is not zero) and named by a DeviceClass.
    fn of(state: &ClusterState, pod: &PodInfo, features: DraFeatures) -> Option<Self> {
        let containers = pod.extended.as_ref()?;
        let requests = pod.requests.as_ref().ok()?;
        let mapped = extended::served_resources(&state.dra, requests, features);
        (!mapped.is_empty()).then(|| Self {
            containers: containers.clone(),
            mapped,
            label: format!("{}/{EXTENDED_CLAIM_IN_MEMORY}", pod.namespace),
        })
    }

    /// The device requests for `node`: the resources it does not advertise
    /// (`filterExtendedResources`); none when it advertises them all.
    fn requests_on(&self, state: &ClusterState, node: u32) -> Vec<ExtendedRequest> {
        let allocatable = state.nodes[node as usize].allocatable.as_ref();
        let delegated: BTreeMap<String, String> = self
            .mapped
            .iter()
            .filter(|(name, _)| {
                allocatable.map_or(0, |a| a.scalar.get(name.as_str()).copied().unwrap_or(0)) <= 0
            })
            .map(|(name, class)| (name.clone(), class.clone()))
            .collect();
        if delegated.is_empty() {
            return Vec::new();
        }
        extended::device_requests(&self.containers, &delegated)
    }
}

/// The name upstream gives the extended-resource claim until PreBind
/// creates it (`specialClaimInMemName`).
const EXTENDED_CLAIM_IN_MEMORY: &str = "<extended-resources>";

/// What Filter found on a node that fits.
#[derive(Debug, Default)]
struct NodeFit {
    /// One allocation per claim to allocate, in order.
    allocations: Vec<Allocation>,
    /// The extended-resource claim's requests and allocation, when the
    /// node serves some of the pod's extended resources with devices.
    extended: Option<(Vec<ExtendedRequest>, Allocation)>,
}

/// Why PreFilter stops: every node rejected, or a scheduling error.
enum Stop {
    AllNodes(String),
    Error(String),
}

/// PreFilter: resolve the claims, check the classes of the claims to
/// allocate, prepare their requests. `Ok(None)` when the pod has no claim.
fn prepare<'a>(
    state: &'a ClusterState,
    pod: &PodInfo,
    features: DraFeatures,
) -> Result<Option<(Vec<Resolved<'a>>, Prepared<'a>)>, Stop> {
    let resolved = resolve(state, pod).map_err(Stop::AllNodes)?;
    let extended = ExtendedPlan::of(state, pod, features);
    if resolved.is_empty() && extended.is_none() {
        return Ok(None);
    }
    let mut pinned = Vec::new();
    let mut specs = Vec::new();
    for claim in &resolved {
        if let Some(allocation) = claim.allocation {
            if let Some(selector) = &allocation.node_selector {
                pinned.push(NodeSelectorMatcher::parse(selector));
            }
            continue;
        }
        for request in claim
            .spec
            .devices
            .iter()
            .flat_map(|d| d.requests.iter().flatten())
        {
            let subrequests = request.first_available.as_deref().unwrap_or_default();
            let classes: Vec<(String, &str)> = if let Some(exact) = &request.exactly {
                vec![(request.name.clone(), exact.device_class_name.as_str())]
            } else if !subrequests.is_empty() {
                if !features.prioritized_list {
                    return Err(Stop::AllNodes(format!(
                        "resource claim {}, request {}: has subrequests, but the DRAPrioritizedList feature is disabled",
                        claim.label, request.name
                    )));
                }
                subrequests
                    .iter()
                    .map(|s| {
                        (
                            format!("{}/{}", request.name, s.name),
                            s.device_class_name.as_str(),
                        )
                    })
                    .collect()
            } else {
                return Err(Stop::AllNodes(format!(
                    "resource claim {}, request {}: unknown request type",
                    claim.label, request.name
                )));
            };
            for (request, class) in classes {
                if class.is_empty() {
                    return Err(Stop::Error(format!(
                        "running PreFilter plugin \"DynamicResources\": request {request}: unsupported request type"
                    )));
                }
                if !state.dra.classes.contains_key(class) {
                    return Err(Stop::AllNodes(format!(
                        "request {request}: device class {class} does not exist"
                    )));
                }
            }
        }
        specs.push((claim.label.clone(), claim.spec));
    }
    let mut selectors = Selectors::default();
    let to_allocate = allocator::prepare(&state.dra, &specs, features, &mut selectors)
        .map_err(|e| Stop::Error(format!("running \"DynamicResources\" filter plugin: {e}")))?;
    for class in extended.iter().flat_map(|plan| plan.mapped.values()) {
        selectors.add_class(&state.dra, class);
    }
    Ok(Some((
        resolved,
        Prepared {
            pinned,
            to_allocate,
            extended,
            selectors,
            features,
        },
    )))
}

/// Why Filter refuses a node.
enum Refusal {
    /// The node does not fit (the reason).
    Node(String),
    /// The claims cannot be evaluated at all: the attempt fails.
    Error(String),
}

impl Prepared<'_> {
    /// Filter: `Ok(allocations)` of the claims to allocate when the node
    /// fits, else why not.
    fn filter(&self, state: &ClusterState, node: u32) -> Result<NodeFit, Refusal> {
        let entry = &state.nodes[node as usize];
        let unavailable = self
            .pinned
            .iter()
            .any(|m| !m.matches(&entry.name, &entry.labels));
        let extended_requests = self
            .extended
            .as_ref()
            .map(|plan| plan.requests_on(state, node))
            .unwrap_or_default();
        let extended_claim = match &self.extended {
            Some(plan) if !extended_requests.is_empty() => Some(
                allocator::extended_claim(&state.dra, plan.label.clone(), &extended_requests)
                    .map_err(Refusal::Error)?,
            ),
            _ => None,
        };
        let claims: Vec<&PreparedClaim<'_>> = self
            .to_allocate
            .iter()
            .chain(extended_claim.as_ref())
            .collect();
        let mut fit = NodeFit::default();
        if !claims.is_empty() {
            match allocator::allocate(
                &state.dra,
                &claims,
                &self.selectors,
                self.features,
                node,
                &entry.name,
                &entry.labels,
            ) {
                Ok(Attempt::Allocated(mut found)) => {
                    if extended_claim.is_some()
                        && let Some(allocation) = found.pop()
                    {
                        fit.extended = Some((extended_requests, allocation));
                    }
                    fit.allocations = found;
                }
                Ok(Attempt::NoFit) => return Err(Refusal::Node(CANNOT_ALLOCATE.to_owned())),
                Ok(Attempt::InvalidPools) => {
                    return Err(Refusal::Node(allocator::INVALID_POOLS.to_owned()));
                }
                Err(error) => return Err(Refusal::Error(error)),
            }
        }
        if unavailable {
            return Err(Refusal::Node(NOT_AVAILABLE.to_owned()));
        }
        Ok(fit)
    }
}

/// The plugin in a profile: PreFilter, Filter and (from 1.35) Score.
pub(crate) struct DynamicResources;

impl SchedulerPlugin for DynamicResources {
    fn name(&self) -> Plugin {
        Plugin::DynamicResources
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        if cycle.pod.claims.is_empty() && cycle.pod.extended.is_none() {
            return PreFilter::Skip;
        }
        let state = cycle.state;
        let features = DraFeatures::of(cycle.opts.kubernetes_version);
        match prepare(state, cycle.pod, features) {
            Err(Stop::AllNodes(reason)) => PreFilter::AllNodes(rejection(reason)),
            Err(Stop::Error(error)) => PreFilter::Error(error),
            Ok(None) => PreFilter::Skip,
            Ok(Some((_, prepared))) => {
                PreFilter::Filter(Box::new(move |node| match prepared.filter(state, node) {
                    Ok(_) => None,
                    Err(Refusal::Node(reason)) => Some(rejection(reason)),
                    Err(Refusal::Error(error)) => {
                        Some(Rejection::error(Plugin::DynamicResources, error))
                    }
                }))
            }
        }
    }

    fn score(&self, cycle: &Cycle<'_>, scored: &[u32]) -> ScoreOutcome {
        let zeros = || Ok(Some((vec![0; scored.len()], vec![0; scored.len()])));
        let features = DraFeatures::of(cycle.opts.kubernetes_version);
        if cycle.pod.claims.is_empty() {
            return zeros();
        }
        let Ok(Some((resolved, prepared))) = prepare(cycle.state, cycle.pod, features) else {
            return zeros();
        };
        let prioritized = resolved.iter().any(|c| {
            c.spec
                .devices
                .iter()
                .flat_map(|d| d.requests.iter().flatten())
                .any(|r| r.first_available.as_ref().is_some_and(|f| !f.is_empty()))
        });
        if !prioritized {
            return zeros();
        }
        let raw: Vec<i64> = scored
            .iter()
            .map(|node| {
                let fit = prepared.filter(cycle.state, *node).unwrap_or_default();
                alternatives_score(&resolved, &fit.allocations)
            })
            .collect();
        let normalized = default_normalize(&raw, false);
        Ok(Some((raw, normalized)))
    }
}

/// `computeScore`: for every `firstAvailable` request, 8 minus the index
/// of the alternative the node's allocation uses.
fn alternatives_score(resolved: &[Resolved<'_>], allocations: &[Allocation]) -> i64 {
    let mut fresh = allocations.iter();
    let mut score = 0;
    for claim in resolved {
        let used: Vec<String> = match claim.allocation {
            Some(allocation) => allocation
                .devices
                .iter()
                .flat_map(|d| d.results.iter().flatten())
                .map(|r| r.request.clone())
                .collect(),
            None => fresh
                .next()
                .map(|a| a.devices.iter().map(|d| d.request.clone()).collect())
                .unwrap_or_default(),
        };
        for request in claim
            .spec
            .devices
            .iter()
            .flat_map(|d| d.requests.iter().flatten())
        {
            for (i, sub) in request.first_available.iter().flatten().enumerate() {
                let name = format!("{}/{}", request.name, sub.name);
                if used.contains(&name) {
                    score += FIRST_AVAILABLE_MAX - i as i64;
                }
            }
        }
    }
    score
}

/// Reserve and PreBind as the simulator carries them out when it binds
/// `pod` to `node`: the claims with their new allocations and the pod
/// among their consumers, to store in the state. Empty when the pod has
/// no claim or they do not fit (the caller checked that they do).
pub(crate) fn reserve(
    state: &ClusterState,
    pod: &PodInfo,
    version: crate::KubernetesVersion,
    node: u32,
) -> Vec<((String, String), ResourceClaim)> {
    if pod.claims.is_empty() && pod.extended.is_none() {
        return Vec::new();
    }
    let Ok(Some((resolved, prepared))) = prepare(state, pod, DraFeatures::of(version)) else {
        return Vec::new();
    };
    let Ok(fit) = prepared.filter(state, node) else {
        return Vec::new();
    };
    let consumer = ResourceClaimConsumerReference {
        api_group: None,
        resource: "pods".to_owned(),
        name: pod.name.clone(),
        uid: pod
            .uid
            .clone()
            .unwrap_or_else(|| format!("{}/{}", pod.namespace, pod.name)),
    };
    let extended = fit
        .extended
        .map(|(requests, allocation)| extended_claim(pod, &consumer, &requests, allocation));
    let mut fresh = fit.allocations.into_iter();
    resolved
        .into_iter()
        .map(|claim| {
            let mut stored = claim.stored.cloned().unwrap_or_else(|| ResourceClaim {
                metadata: ObjectMeta {
                    name: Some(claim.key.1.clone()),
                    namespace: Some(claim.key.0.clone()),
                    ..Default::default()
                },
                spec: claim.spec.clone(),
                status: None,
            });
            let status = stored
                .status
                .get_or_insert_with(ResourceClaimStatus::default);
            if claim.allocation.is_none()
                && let Some(allocation) = fresh.next()
            {
                status.allocation = Some(allocation_result(allocation));
            }
            let consumers = status.reserved_for.get_or_insert_with(Vec::new);
            if !consumers.iter().any(|c| c.uid == consumer.uid) {
                consumers.push(consumer.clone());
            }
            (claim.key, stored)
        })
        .chain(extended)
        .collect()
}

/// The claim PreBind creates for the pod's extended resources (DR.11):
/// named `<pod>-extended-resources` (upstream's API server appends five
/// random characters), marked by the `resource.kubernetes.io/extended-resource-claim`
/// annotation, owned by the pod, allocated and reserved for it.
fn extended_claim(
    pod: &PodInfo,
    consumer: &ResourceClaimConsumerReference,
    requests: &[ExtendedRequest],
    allocation: Allocation,
) -> ((String, String), ResourceClaim) {
    let name = format!("{}-extended-resources", pod.name);
    let requests = requests
        .iter()
        .map(|r| DeviceRequest {
            name: r.name.clone(),
            exactly: Some(ExactDeviceRequest {
                device_class_name: r.class.clone(),
                allocation_mode: Some("ExactCount".to_owned()),
                count: Some(r.count),
                ..Default::default()
            }),
            ..Default::default()
        })
        .collect();
    let claim = ResourceClaim {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(pod.namespace.clone()),
            annotations: Some(BTreeMap::from([(
                "resource.kubernetes.io/extended-resource-claim".to_owned(),
                "true".to_owned(),
            )])),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".to_owned(),
                kind: "Pod".to_owned(),
                name: pod.name.clone(),
                uid: consumer.uid.clone(),
                controller: Some(true),
                ..Default::default()
            }]),
            ..Default::default()
        },
        spec: ResourceClaimSpec {
            devices: Some(DeviceClaim {
                requests: Some(requests),
                ..Default::default()
            }),
        },
        status: Some(ResourceClaimStatus {
            allocation: Some(allocation_result(allocation)),
            reserved_for: Some(vec![consumer.clone()]),
            ..Default::default()
        }),
    };
    ((pod.namespace.clone(), name), claim)
}

/// An allocation as a claim's `status.allocation`.
fn allocation_result(allocation: Allocation) -> AllocationResult {
    AllocationResult {
        allocation_timestamp: None,
        devices: Some(DeviceAllocationResult {
            config: None,
            results: Some(
                allocation
                    .devices
                    .into_iter()
                    .map(|d| {
                        let (share_id, consumed) = d.share.unzip();
                        DeviceRequestAllocationResult {
                            request: d.request,
                            driver: d.id.driver,
                            pool: d.id.pool,
                            device: d.id.device,
                            admin_access: d.admin_access.then_some(true),
                            share_id,
                            consumed_capacity: consumed.filter(|c| !c.is_empty()).map(|c| {
                                c.into_iter()
                                    .map(|(name, amount)| (name, capacity::quantity(amount)))
                                    .collect()
                            }),
                            ..Default::default()
                        }
                    })
                    .collect(),
            ),
        }),
        node_selector: allocation.node_selector,
    }
}

/// Why the node cannot take the pod's claims, claim by claim and request
/// by request: what `diagnose` prints under a DynamicResources rejection.
pub(crate) fn explain(
    state: &ClusterState,
    pod: &PodInfo,
    version: crate::KubernetesVersion,
    node: u32,
) -> String {
    let features = DraFeatures::of(version);
    let Ok(Some((resolved, prepared))) = prepare(state, pod, features) else {
        return String::new();
    };
    let entry = &state.nodes[node as usize];
    let mut parts = Vec::new();
    for claim in &resolved {
        let selector = claim.allocation.and_then(|a| a.node_selector.as_ref());
        if selector
            .is_some_and(|s| !NodeSelectorMatcher::parse(s).matches(&entry.name, &entry.labels))
        {
            parts.push(format!(
                "claim {} is already allocated to devices this node cannot reach",
                claim.label
            ));
        }
    }
    let extended_requests = prepared
        .extended
        .as_ref()
        .map(|plan| plan.requests_on(state, node))
        .unwrap_or_default();
    let extended_claim = prepared.extended.as_ref().and_then(|plan| {
        let label = format!("{} (the pod's extended resources)", plan.label);
        (!extended_requests.is_empty())
            .then(|| allocator::extended_claim(&state.dra, label, &extended_requests).ok())
            .flatten()
    });
    let claims: Vec<&PreparedClaim<'_>> = prepared
        .to_allocate
        .iter()
        .chain(extended_claim.as_ref())
        .collect();
    for claim in &claims {
        let claim = *claim;
        let attempt = allocator::allocate(
            &state.dra,
            &[claim],
            &prepared.selectors,
            features,
            node,
            &entry.name,
            &entry.labels,
        );
        match attempt {
            Ok(Attempt::Allocated(_)) => {}
            Ok(Attempt::InvalidPools) => parts.push(allocator::INVALID_POOLS.to_owned()),
            Err(error) => parts.push(error),
            Ok(Attempt::NoFit) => {
                let supply = allocator::supply(
                    &state.dra,
                    claim,
                    &prepared.selectors,
                    features,
                    node,
                    &entry.name,
                    &entry.labels,
                );
                let short: Vec<String> = supply
                    .unwrap_or_default()
                    .iter()
                    .filter(|s| match s.wanted {
                        Some(wanted) => (s.free as i64) < wanted,
                        None => s.free == 0 || s.free < s.matching,
                    })
                    .map(|s| {
                        let asks = match s.wanted {
                            Some(n) => format!("{n} device(s)"),
                            None => "all devices".to_owned(),
                        };
                        format!(
                            "request {} asks for {asks} of class {}; the node has {} that match, {} of them free",
                            s.request, s.class, s.matching, s.free
                        )
                    })
                    .collect();
                if short.is_empty() {
                    parts.push(format!(
                        "claim {}: each request finds devices, but no set of them meets the claim's constraints together",
                        claim.label
                    ));
                } else {
                    parts.push(format!("claim {}: {}", claim.label, short.join("; ")));
                }
            }
        }
    }
    if parts.is_empty() && !claims.is_empty() {
        parts.push(
            "each claim fits on its own, but not all together: they compete for the same devices"
                .to_owned(),
        );
    }
    parts.join("; ")
}
