//! Resource amounts as kube-scheduler counts them (C.29): a pod's effective
//! requests (`k8s.io/component-helpers/resource.PodRequests`) and a node's
//! allocatable, converted to `framework.Resource` (CPU in millicores rounded
//! up, every other resource in whole units rounded up).
//!
//! Quantities are parsed by `kube-validation`'s [`Quantity`], the project's
//! one implementation of `resource.ParseQuantity`; sums are exact before the
//! conversion, as apimachinery's are.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kube_validation::{Quantity, QuantityError, is_qualified_name};

use crate::KubernetesVersion;

/// `cpu`.
pub const CPU: &str = "cpu";
/// `memory`.
pub const MEMORY: &str = "memory";
/// `ephemeral-storage`.
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
/// `pods` (a node's allocatable pod count).
pub const PODS: &str = "pods";

/// A quantity in an object that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: invalid quantity {value:?}: {error}")]
pub struct QuantityProblem {
    /// Where it is, e.g. `spec.containers[0].resources.requests.cpu`.
    pub field: String,
    /// The text as given.
    pub value: String,
    /// Why it does not parse.
    pub error: QuantityError,
}

/// `framework.Resource`: what a pod requests or a node offers, in
/// kube-scheduler's units.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    /// CPU in millicores.
    pub milli_cpu: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Pods a node admits (`status.allocatable.pods`); unused for pods.
    pub allowed_pods: i64,
    /// Extended resources, hugepages and other scalar resources, by name.
    pub scalar: BTreeMap<String, i64>,
}

impl Resources {
    /// Whether nothing is requested (`fitsRequest` then checks only the pod
    /// count).
    pub fn is_empty(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalar.is_empty()
    }

    /// `Resource.Add` of a list; `pods` counts towards `allowed_pods` only
    /// when `with_pods` (a node's allocatable).
    fn from_list(list: &List, with_pods: bool) -> Self {
        let mut r = Self::default();
        for (name, q) in list {
            match name.as_str() {
                CPU => r.milli_cpu = r.milli_cpu.saturating_add(q.milli_value()),
                MEMORY => r.memory = r.memory.saturating_add(q.value()),
                EPHEMERAL_STORAGE => {
                    r.ephemeral_storage = r.ephemeral_storage.saturating_add(q.value());
                }
                PODS if with_pods => {
                    r.allowed_pods = r.allowed_pods.saturating_add(q.value());
                }
                other if is_scalar_resource_name(other) => {
                    let e = r.scalar.entry(other.to_owned()).or_default();
                    *e = e.saturating_add(q.value());
                }
                _ => {}
            }
        }
        r
    }

    /// Adds (`sign` 1) or subtracts (`sign` -1) a pod's requests, as
    /// `NodeInfo.update` does for the node's requested total.
    pub(crate) fn add_signed(&mut self, other: &Resources, sign: i64) {
        self.milli_cpu = self.milli_cpu.saturating_add(sign * other.milli_cpu);
        self.memory = self.memory.saturating_add(sign * other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(sign * other.ephemeral_storage);
        for (name, v) in &other.scalar {
            let e = self.scalar.entry(name.clone()).or_default();
            *e = e.saturating_add(sign * v);
            if *e == 0 {
                self.scalar.remove(name);
            }
        }
    }
}

/// `schedutil.IsScalarResourceName`: extended resources (a domain-prefixed
/// name outside `kubernetes.io/`), `hugepages-*`, `*kubernetes.io/*` and
/// `attachable-volumes-*`. Other names (`foo` without a domain) are ignored.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

/// `v1helper.IsExtendedResourceName`: not native (it has a `/` and is not
/// in `kubernetes.io/`), not `requests.*`, and `requests.<name>` is a
/// qualified name.
pub fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native && !name.starts_with("requests.") && is_qualified_name(&format!("requests.{name}"))
}

type List = BTreeMap<String, Quantity>;

fn parse_list(
    list: Option<&BTreeMap<String, ApiQuantity>>,
    field: &str,
) -> Result<List, QuantityProblem> {
    list.into_iter()
        .flatten()
        .map(|(name, q)| {
            Quantity::parse(&q.0)
                .map(|parsed| (name.clone(), parsed))
                .map_err(|error| QuantityProblem {
                    field: format!("{field}.{name}"),
                    value: q.0.clone(),
                    error,
                })
        })
        .collect()
}

fn add_into(into: &mut List, add: &List) {
    for (name, q) in add {
        let e = into.entry(name.clone()).or_insert(Quantity::ZERO);
        *e = e.checked_add(*q).unwrap_or(Quantity::from_nanos(i128::MAX));
    }
}

fn max_into(into: &mut List, other: &List) {
    for (name, q) in other {
        let e = into.entry(name.clone()).or_insert(*q);
        if *q > *e {
            *e = *q;
        }
    }
}

fn container_requests(c: &Container, field: &str) -> Result<List, QuantityProblem> {
    parse_list(
        c.resources.as_ref().and_then(|r| r.requests.as_ref()),
        &format!("{field}.resources.requests"),
    )
}

/// `IsSupportedPodLevelResource`: `cpu`, `memory` and `hugepages-*`.
fn is_supported_pod_level_resource(name: &str) -> bool {
    name == CPU || name == MEMORY || name.starts_with("hugepages-")
}

/// `resource.PodRequests` with the defaults kube-scheduler uses for an
/// incoming pod (pod-level resources honoured, overhead added):
/// - the sum of the regular containers;
/// - each restartable init container (`restartPolicy: Always`, a sidecar)
///   is added to that sum and keeps running for the init containers after
///   it; every other init container needs its own request plus the sidecars
///   started before it;
/// - the result is, per resource, the larger of the sum and the largest
///   init-container need;
/// - pod-level `spec.resources.requests` replace it for `cpu`, `memory` and
///   `hugepages-*`;
/// - a pod resizing in place counts its allocated and actuated requests
///   too, as `version` does (C.75);
/// - `spec.overhead` is added.
pub fn pod_request_list(
    pod: &Pod,
    version: KubernetesVersion,
) -> Result<BTreeMap<String, Quantity>, QuantityProblem> {
    request_list(pod, false, version)
}

/// `schedutil.DefaultMilliCPURequest`: 100m, the CPU a container without a
/// CPU request counts for in scoring (C.42).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// `schedutil.DefaultMemoryRequest`: 200 MiB, the memory a container
/// without a memory request counts for in scoring (C.42).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// `applyNonMissing`: a container without a `cpu` (`memory`) request key
/// counts the default; an explicit zero stays zero.
fn apply_non_missing(list: &mut List) {
    list.entry(CPU.to_owned()).or_insert(Quantity::from_nanos(
        i128::from(DEFAULT_MILLI_CPU_REQUEST) * 1_000_000,
    ));
    list.entry(MEMORY.to_owned())
        .or_insert(Quantity::from_nanos(
            i128::from(DEFAULT_MEMORY_REQUEST) * 1_000_000_000,
        ));
}

/// Which requests of a container count (`containerSpecRequests`,
/// `containerAllocatedRequests`, `containerActuatedRequests` of 1.37,
/// `determineEffectiveRequests` of 1.34–1.36).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// `spec.containers[].resources.requests`.
    Spec,
    /// The container status's `allocatedResources`, else the spec's (none
    /// when the resize is infeasible).
    Allocated { infeasible: bool },
    /// The container status's `resources.requests`, else its
    /// `allocatedResources`, else the spec's (none when the resize is
    /// infeasible).
    Actuated { infeasible: bool },
    /// 1.34–1.36: a regular or restartable init container whose status
    /// has `resources` counts, per resource, the largest of its spec's, its
    /// `resources.requests` and its `allocatedResources` (the spec's left
    /// out when the resize is infeasible); any other container its spec's.
    LargestPerContainer { infeasible: bool },
}

/// A container's requests from `source`.
fn source_requests(
    pod: &Pod,
    c: &Container,
    field: &str,
    source: Source,
) -> Result<List, QuantityProblem> {
    let status = || {
        let statuses = pod.status.as_ref()?;
        statuses
            .container_statuses
            .iter()
            .flatten()
            .chain(statuses.init_container_statuses.iter().flatten())
            .find(|s| s.name == c.name)
    };
    let status_field = format!("status of container {:?}", c.name);
    let (allocated, actuated, infeasible) = match source {
        Source::Spec => return container_requests(c, field),
        Source::Allocated { infeasible } => (true, false, infeasible),
        Source::Actuated { infeasible } => (true, true, infeasible),
        Source::LargestPerContainer { infeasible } => {
            let Some((found, resources)) =
                status().and_then(|s| s.resources.as_ref().map(|r| (s, r)))
            else {
                return container_requests(c, field);
            };
            let mut list = if infeasible {
                List::new()
            } else {
                container_requests(c, field)?
            };
            let actuated = parse_list(
                resources.requests.as_ref(),
                &format!("{status_field}.resources.requests"),
            )?;
            let allocated = parse_list(
                found.allocated_resources.as_ref(),
                &format!("{status_field}.allocatedResources"),
            )?;
            max_into(&mut list, &actuated);
            max_into(&mut list, &allocated);
            return Ok(list);
        }
    };
    let found = status();
    if actuated
        && let Some(requests) = found
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
    {
        return parse_list(
            Some(requests),
            &format!("{status_field}.resources.requests"),
        );
    }
    if allocated && let Some(list) = found.and_then(|s| s.allocated_resources.as_ref()) {
        return parse_list(Some(list), &format!("{status_field}.allocatedResources"));
    }
    if infeasible {
        return Ok(List::new());
    }
    container_requests(c, field)
}

/// `IsPodResizeInfeasible`: the `PodResizePending` condition's reason is
/// `Infeasible`.
fn resize_infeasible(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "PodResizePending"))
        .is_some_and(|c| c.reason.as_deref() == Some("Infeasible"))
}

/// Whether any container status reports resources, or the pod's own
/// status does: otherwise the allocated and actuated requests are the
/// spec's and a resize changes nothing.
fn reports_status_resources(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        s.resources.is_some()
            || s.allocated_resources.is_some()
            || s.container_statuses
                .iter()
                .flatten()
                .chain(s.init_container_statuses.iter().flatten())
                .any(|c| c.resources.is_some() || c.allocated_resources.is_some())
    })
}

/// `aggregateContainerResourcesByFn`: the containers' requests from
/// `source`, restartable init containers (sidecars) added and the largest
/// init-container need taken.
fn aggregate(pod: &Pod, non_missing: bool, source: Source) -> Result<List, QuantityProblem> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(List::new());
    };
    let with_defaults = |mut list: List| {
        if non_missing {
            apply_non_missing(&mut list);
        }
        list
    };
    let mut reqs = List::new();
    for (i, c) in spec.containers.iter().enumerate() {
        let field = format!("spec.containers[{i}]");
        add_into(
            &mut reqs,
            &with_defaults(source_requests(pod, c, &field, source)?),
        );
    }
    let mut sidecars = List::new();
    let mut init_max = List::new();
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        let field = format!("spec.initContainers[{i}]");
        let restartable = c.restart_policy.as_deref() == Some("Always");
        let source = match source {
            Source::LargestPerContainer { .. } if !restartable => Source::Spec,
            other => other,
        };
        let own = with_defaults(source_requests(pod, c, &field, source)?);
        let need = if restartable {
            add_into(&mut reqs, &own);
            add_into(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut need = own;
            add_into(&mut need, &sidecars);
            need
        };
        max_into(&mut init_max, &need);
    }
    max_into(&mut reqs, &init_max);
    Ok(reqs)
}

/// The pod's own `status.allocatedResources` and `status.resources.requests`
/// when both are set (InPlacePodLevelResourcesVerticalScaling, on by
/// default from 1.36).
fn pod_status_lists(pod: &Pod) -> Result<Option<(List, List)>, QuantityProblem> {
    let Some(status) = pod.status.as_ref() else {
        return Ok(None);
    };
    let (Some(allocated), Some(actuated)) = (
        status.allocated_resources.as_ref(),
        status.resources.as_ref().and_then(|r| r.requests.as_ref()),
    ) else {
        return Ok(None);
    };
    Ok(Some((
        parse_list(Some(allocated), "status.allocatedResources")?,
        parse_list(Some(actuated), "status.resources.requests")?,
    )))
}

/// The containers' requests of a pod that may be resizing in place (on by
/// default in every supported release; C.75).
///
/// - 1.37 (`AggregateContainerRequests` with `UseStatusResources`): per
///   resource, the largest of the spec's, the allocated and the actuated
///   sums, or of the allocated and actuated sums alone when the resize is
///   infeasible. The allocated and actuated sums are the pod's own
///   `status.allocatedResources` and `status.resources.requests` when both
///   are set.
/// - 1.34–1.36: each container's largest of its three lists, summed.
fn container_level(
    pod: &Pod,
    non_missing: bool,
    version: KubernetesVersion,
) -> Result<List, QuantityProblem> {
    let infeasible = resize_infeasible(pod);
    if version < KubernetesVersion::V1_37 {
        let source = if reports_status_resources(pod) {
            Source::LargestPerContainer { infeasible }
        } else {
            Source::Spec
        };
        return aggregate(pod, non_missing, source);
    }
    if !infeasible && !reports_status_resources(pod) {
        return aggregate(pod, non_missing, Source::Spec);
    }
    let (allocated, actuated) = match pod_status_lists(pod)? {
        Some(lists) => lists,
        None => (
            aggregate(pod, non_missing, Source::Allocated { infeasible })?,
            aggregate(pod, non_missing, Source::Actuated { infeasible })?,
        ),
    };
    let mut reqs = if infeasible {
        List::new()
    } else {
        aggregate(pod, non_missing, Source::Spec)?
    };
    max_into(&mut reqs, &actuated);
    max_into(&mut reqs, &allocated);
    Ok(reqs)
}

/// Pod-level requests (`spec.resources.requests`) replace the containers'
/// for `cpu`, `memory` and `hugepages-*` when one of those is set. From
/// 1.36 (InPlacePodLevelResourcesVerticalScaling) a pod whose
/// `status.resources` is set counts, per resource, the largest of the
/// spec's, `status.resources.requests` and `status.allocatedResources` (the
/// spec's left out when the resize is infeasible): 1.36 for the resources
/// the spec names (zero where the statuses lack one), 1.37 for every
/// supported resource of the three.
fn apply_pod_level(
    reqs: &mut List,
    pod: &Pod,
    version: KubernetesVersion,
) -> Result<(), QuantityProblem> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(());
    };
    let pod_level = parse_list(
        spec.resources.as_ref().and_then(|r| r.requests.as_ref()),
        "spec.resources.requests",
    )?;
    if !pod_level.keys().any(|n| is_supported_pod_level_resource(n)) {
        return Ok(());
    }
    let status_resources = pod
        .status
        .as_ref()
        .and_then(|s| s.resources.as_ref().map(|r| (s, r)));
    let effective = match status_resources {
        Some((status, resources)) if version >= KubernetesVersion::V1_36 => {
            let mut effective = if resize_infeasible(pod) {
                List::new()
            } else {
                pod_level.clone()
            };
            max_into(
                &mut effective,
                &parse_list(resources.requests.as_ref(), "status.resources.requests")?,
            );
            max_into(
                &mut effective,
                &parse_list(
                    status.allocated_resources.as_ref(),
                    "status.allocatedResources",
                )?,
            );
            if version == KubernetesVersion::V1_36 {
                pod_level
                    .keys()
                    .map(|n| {
                        (
                            n.clone(),
                            effective.get(n).copied().unwrap_or(Quantity::ZERO),
                        )
                    })
                    .collect()
            } else {
                effective
            }
        }
        _ => pod_level,
    };
    for (name, q) in effective {
        if is_supported_pod_level_resource(&name) {
            reqs.insert(name, q);
        }
    }
    Ok(())
}

/// [`pod_request_list`], with `non_missing` the scoring variant
/// (`NonMissingContainerRequests`: 100m CPU and 200 MiB for every container,
/// init containers included, that lacks the key).
fn request_list(
    pod: &Pod,
    non_missing: bool,
    version: KubernetesVersion,
) -> Result<List, QuantityProblem> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(List::new());
    };
    let mut reqs = container_level(pod, non_missing, version)?;
    apply_pod_level(&mut reqs, pod, version)?;
    add_into(
        &mut reqs,
        &parse_list(spec.overhead.as_ref(), "spec.overhead")?,
    );
    Ok(reqs)
}

/// [`pod_request_list`] in kube-scheduler's units (`SetMaxResource` on an
/// empty `Resource`: `pods` and unknown names are ignored).
pub fn pod_requests(pod: &Pod, version: KubernetesVersion) -> Result<Resources, QuantityProblem> {
    pod_request_list(pod, version).map(|list| Resources::from_list(&list, false))
}

/// The CPU (millicores) and memory (bytes) kube-scheduler's resource scores
/// count for a pod (`calculatePodResourceRequest` without `useRequested`,
/// and `NodeInfo.NonZeroRequested` for the pods on a node): as
/// [`pod_requests`], but a container (or init container) with no `cpu`
/// or `memory` request key counts 100m / 200 MiB (C.42).
pub fn pod_non_zero_requests(
    pod: &Pod,
    version: KubernetesVersion,
) -> Result<(i64, i64), QuantityProblem> {
    request_list(pod, true, version).map(|list| {
        let r = Resources::from_list(&list, false);
        (r.milli_cpu, r.memory)
    })
}

/// A node's `status.allocatable` in kube-scheduler's units, `None` when the
/// node has no `status.allocatable` at all.
pub fn node_allocatable(node: &Node) -> Result<Option<Resources>, QuantityProblem> {
    let Some(list) = node.status.as_ref().and_then(|s| s.allocatable.as_ref()) else {
        return Ok(None);
    };
    parse_list(Some(list), "status.allocatable").map(|l| Some(Resources::from_list(&l, true)))
}

/// How an amount of `resource` is usually written: CPU in cores or
/// millicores (`4`, `100m`), byte amounts with the largest exact binary
/// suffix (`512Mi`), others as plain integers.
pub fn format_amount(resource: &str, amount: i64) -> String {
    if resource == CPU {
        return if amount % 1000 == 0 {
            (amount / 1000).to_string()
        } else {
            format!("{amount}m")
        };
    }
    let bytes =
        resource == MEMORY || resource == EPHEMERAL_STORAGE || resource.starts_with("hugepages-");
    if bytes && amount != 0 {
        for (suffix, shift) in [
            ("Ei", 60),
            ("Pi", 50),
            ("Ti", 40),
            ("Gi", 30),
            ("Mi", 20),
            ("Ki", 10),
        ] {
            let unit = 1i64 << shift;
            if amount % unit == 0 {
                return format!("{}{suffix}", amount / unit);
            }
        }
    }
    amount.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod of containers `(name, spec cpu, allocated cpu, actuated cpu)`
    /// (`""` leaves a field out), with `PodResizePending` reason `pending`.
    fn resizing(containers: &[(&str, &str, &str, &str)], pending: Option<&str>) -> Pod {
        let spec: Vec<serde_json::Value> = containers
            .iter()
            .map(|(name, cpu, _, _)| {
                serde_json::json!({"name": name, "resources": {"requests": {"cpu": cpu}}})
            })
            .collect();
        let statuses: Vec<serde_json::Value> = containers
            .iter()
            .map(|(name, _, allocated, actuated)| {
                let mut status = serde_json::json!({"name": name, "image": "x", "imageID": "",
                    "ready": true, "restartCount": 0});
                if !allocated.is_empty() {
                    status["allocatedResources"] = serde_json::json!({"cpu": allocated});
                }
                if !actuated.is_empty() {
                    status["resources"] = serde_json::json!({"requests": {"cpu": actuated}});
                }
                status
            })
            .collect();
        let conditions = resize_pending(pending);
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"containers": spec},
            "status": {"containerStatuses": statuses, "conditions": conditions},
        }))
        .unwrap()
    }

    /// A `PodResizePending` condition with reason `pending`, if any.
    fn resize_pending(pending: Option<&str>) -> Vec<serde_json::Value> {
        pending
            .map(|reason| serde_json::json!({"type": "PodResizePending", "status": "True", "reason": reason}))
            .into_iter()
            .collect()
    }

    fn cpu(pod: &Pod) -> i64 {
        cpu_in(pod, KubernetesVersion::V1_37)
    }

    fn cpu_in(pod: &Pod, version: KubernetesVersion) -> i64 {
        pod_requests(pod, version).unwrap().milli_cpu
    }

    /// Every release before 1.37 (same rules).
    const PER_CONTAINER: [KubernetesVersion; 3] = [
        KubernetesVersion::V1_34,
        KubernetesVersion::V1_35,
        KubernetesVersion::V1_36,
    ];

    /// A pod with pod-level `spec` requests, one container requesting 1
    /// CPU, the pod's own `status.allocatedResources` and
    /// `status.resources.requests`, and `PodResizePending` reason `pending`.
    fn pod_level(
        spec: serde_json::Value,
        allocated: serde_json::Value,
        actuated: serde_json::Value,
        pending: Option<&str>,
    ) -> Pod {
        let conditions = resize_pending(pending);
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"resources": {"requests": spec},
                "containers": [{"name": "c1", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
            "status": {"allocatedResources": allocated, "resources": {"requests": actuated},
                "conditions": conditions},
        }))
        .unwrap()
    }

    // TestPodResourceRequests, its "resized" cases with UseStatusResources
    // (component-helpers/resource/helpers_test.go, v0.37.2).
    #[test]
    fn a_resizing_pod_counts_the_largest_of_spec_allocated_and_actuated() {
        // "resized, no resize status".
        assert_eq!(cpu(&resizing(&[("container-1", "4", "", "2")], None)), 4000);
        // "resized, infeasible".
        let infeasible = resizing(&[("container-1", "4", "", "2")], Some("Infeasible"));
        assert_eq!(cpu(&infeasible), 2000);
        // "resized, infeasible & in-progress".
        let in_progress = resizing(&[("container-1", "6", "4", "2")], Some("Infeasible"));
        assert_eq!(cpu(&in_progress), 4000);
        // "resized: per-resource 3-way maximum".
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "container-1", "resources": {"requests":
                {"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"}}}]},
            "status": {"containerStatuses": [{"name": "container-1", "image": "x", "imageID": "",
                "ready": true, "restartCount": 0,
                "allocatedResources": {"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"},
                "resources": {"requests": {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"}}}]},
        }))
        .unwrap();
        for version in KubernetesVersion::ALL {
            let r = pod_requests(&pod, version).unwrap();
            assert_eq!(
                (r.milli_cpu, r.memory, r.ephemeral_storage),
                (30, 30_000_000, 30_000_000_000),
                "{version}"
            );
        }
    }

    // TestPodResourceRequests, its "resized, restartable init container"
    // cases (v0.36.3 and v0.37.2), and "resized, infeasible" in every
    // release.
    #[test]
    fn every_release_counts_a_resizing_sidecar_and_an_infeasible_resize_alike() {
        let sidecar = |pending: Option<&str>| -> Pod {
            let mut pod = resizing(&[("restartable-init-1", "4", "", "2")], pending);
            let spec = pod.spec.as_mut().unwrap();
            let mut container = spec.containers.remove(0);
            container.restart_policy = Some("Always".into());
            spec.init_containers = Some(vec![container]);
            let status = pod.status.as_mut().unwrap();
            status.init_container_statuses = status.container_statuses.take();
            pod
        };
        for version in KubernetesVersion::ALL {
            assert_eq!(
                cpu_in(&sidecar(Some("Infeasible")), version),
                2000,
                "{version}"
            );
            assert_eq!(cpu_in(&sidecar(None), version), 4000, "{version}");
            let infeasible = resizing(&[("container-1", "4", "", "2")], Some("Infeasible"));
            assert_eq!(cpu_in(&infeasible, version), 2000, "{version}");
        }
    }

    // `determineEffectiveRequests` per container (component-helpers
    // v0.36.3) against the sums of 1.37 (v0.37.2): only a pod whose
    // containers resize in opposite directions tells them apart.
    #[test]
    fn before_1_37_each_container_counts_its_own_largest_list() {
        let pod = resizing(&[("a", "2", "1", "1"), ("b", "1", "2", "2")], None);
        for version in PER_CONTAINER {
            assert_eq!(cpu_in(&pod, version), 4000, "{version}");
        }
        // Only a status with `resources` counts before 1.37: an allocation
        // alone does not.
        let allocated_only = resizing(&[("a", "1", "3", "")], None);
        for version in PER_CONTAINER {
            assert_eq!(cpu_in(&allocated_only, version), 1000, "{version}");
        }
        assert_eq!(cpu(&allocated_only), 3000);
    }

    // TestPodRequestsAndLimitsVerticalScalingWrappers, its pod-level cases
    // (component-helpers v0.37.2); the same arithmetic in 1.36
    // (`PodRequests`, v0.36.3); before 1.36 the pod-level status is not
    // read (InPlacePodLevelResourcesVerticalScaling is off by default).
    #[test]
    fn pod_level_resize_counts_from_1_36() {
        let populated = pod_level(
            serde_json::json!({"cpu": "2"}),
            serde_json::json!({"cpu": "3"}),
            serde_json::json!({"cpu": "3.5"}),
            None,
        );
        let infeasible = pod_level(
            serde_json::json!({"cpu": "10"}),
            serde_json::json!({"cpu": "3"}),
            serde_json::json!({"cpu": "4"}),
            Some("Infeasible"),
        );
        for version in [KubernetesVersion::V1_36, KubernetesVersion::V1_37] {
            assert_eq!(cpu_in(&populated, version), 3500, "{version}");
            assert_eq!(cpu_in(&infeasible, version), 4000, "{version}");
        }
        for version in [KubernetesVersion::V1_34, KubernetesVersion::V1_35] {
            assert_eq!(cpu_in(&populated, version), 2000, "{version}");
            assert_eq!(cpu_in(&infeasible, version), 10_000, "{version}");
        }
    }

    // Ours, from the two releases' `PodRequests`: 1.36 replaces only the
    // resources the pod-level spec names, 1.37 every supported resource of
    // the spec and the statuses.
    #[test]
    fn pod_level_resize_of_a_resource_the_spec_does_not_name() {
        let pod = pod_level(
            serde_json::json!({"cpu": "2"}),
            serde_json::json!({"cpu": "2", "memory": "4Gi"}),
            serde_json::json!({"cpu": "2", "memory": "4Gi"}),
            None,
        );
        let memory = |version| pod_requests(&pod, version).unwrap().memory;
        assert_eq!(memory(KubernetesVersion::V1_36), 1 << 30);
        assert_eq!(memory(KubernetesVersion::V1_37), 4 << 30);
    }

    // Ours, from `containerAllocatedRequests` (v0.37.2): an infeasible
    // resize of a pod without any status counts nothing; before 1.37 the
    // spec counts.
    #[test]
    fn an_infeasible_resize_without_status_counts_nothing_from_1_37() {
        let mut pod = resizing(&[("c", "4", "", "")], Some("Infeasible"));
        pod.status.as_mut().unwrap().container_statuses = None;
        assert_eq!(cpu(&pod), 0);
        for version in PER_CONTAINER {
            assert_eq!(cpu_in(&pod, version), 4000, "{version}");
        }
    }

    // Ours: what 1.37 changed (C.75).
    #[test]
    fn resizes_in_opposite_directions_take_the_largest_sum_not_the_sum_of_largest() {
        // Sums: spec 3, allocated 3, actuated 3 (1.37); the per-container
        // maximum of 1.34-1.36 gives 4.
        let pod = resizing(&[("a", "2", "1", "1"), ("b", "1", "2", "2")], None);
        assert_eq!(cpu(&pod), 3000);
    }

    #[test]
    fn scalar_resource_names() {
        assert!(is_scalar_resource_name("example.com/gpu"));
        assert!(is_scalar_resource_name("nvidia.com/gpu"));
        assert!(is_scalar_resource_name("hugepages-2Mi"));
        assert!(is_scalar_resource_name("kubernetes.io/something"));
        assert!(is_scalar_resource_name("attachable-volumes-csi-x"));
        assert!(!is_scalar_resource_name("foo"));
        assert!(!is_scalar_resource_name("requests.example.com/x"));
        assert!(!is_extended_resource_name("kubernetes.io/something"));
        assert!(!is_extended_resource_name("cpu"));
    }

    #[test]
    fn amounts_are_written_as_kubectl_users_write_them() {
        assert_eq!(format_amount(CPU, 4000), "4");
        assert_eq!(format_amount(CPU, 100), "100m");
        assert_eq!(format_amount(MEMORY, 512 << 20), "512Mi");
        assert_eq!(format_amount(MEMORY, 1000), "1000");
        assert_eq!(format_amount(MEMORY, 0), "0");
        assert_eq!(format_amount("example.com/gpu", 2), "2");
    }
}
