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
/// - `spec.overhead` is added.
pub fn pod_request_list(pod: &Pod) -> Result<BTreeMap<String, Quantity>, QuantityProblem> {
    request_list(pod, false)
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
/// `containerAllocatedRequests`, `containerActuatedRequests`).
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

/// Whether any container status reports resources (an in-place resize
/// may be under way).
fn reports_status_resources(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        s.container_statuses
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
        let own = with_defaults(source_requests(pod, c, &field, source)?);
        let need = if c.restart_policy.as_deref() == Some("Always") {
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

/// [`pod_request_list`], with `non_missing` the scoring variant
/// (`NonMissingContainerRequests`: 100m CPU and 200 MiB for every container,
/// init containers included, that lacks the key).
///
/// A pod whose container statuses report resources may be resizing in
/// place (on by default in every supported release): its requests are,
/// per resource, the largest of the spec's, the allocated and the actuated
/// sums, or of the allocated and actuated sums alone when the resize is
/// infeasible (`AggregateContainerRequests` with `UseStatusResources`,
/// 1.37; C.75).
fn request_list(pod: &Pod, non_missing: bool) -> Result<List, QuantityProblem> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(List::new());
    };
    let mut reqs = aggregate(pod, non_missing, Source::Spec)?;
    if reports_status_resources(pod) {
        let infeasible = resize_infeasible(pod);
        let allocated = aggregate(pod, non_missing, Source::Allocated { infeasible })?;
        let actuated = aggregate(pod, non_missing, Source::Actuated { infeasible })?;
        if infeasible {
            reqs = List::new();
        }
        max_into(&mut reqs, &actuated);
        max_into(&mut reqs, &allocated);
    }
    let pod_level = parse_list(
        spec.resources.as_ref().and_then(|r| r.requests.as_ref()),
        "spec.resources.requests",
    )?;
    for (name, q) in pod_level {
        if is_supported_pod_level_resource(&name) {
            reqs.insert(name, q);
        }
    }
    add_into(
        &mut reqs,
        &parse_list(spec.overhead.as_ref(), "spec.overhead")?,
    );
    Ok(reqs)
}

/// [`pod_request_list`] in kube-scheduler's units (`SetMaxResource` on an
/// empty `Resource`: `pods` and unknown names are ignored).
pub fn pod_requests(pod: &Pod) -> Result<Resources, QuantityProblem> {
    pod_request_list(pod).map(|list| Resources::from_list(&list, false))
}

/// The CPU (millicores) and memory (bytes) kube-scheduler's resource scores
/// count for a pod (`calculatePodResourceRequest` without `useRequested`,
/// and `NodeInfo.NonZeroRequested` for the pods on a node): as
/// [`pod_requests`], but a container (or init container) with no `cpu`
/// or `memory` request key counts 100m / 200 MiB (C.42).
pub fn pod_non_zero_requests(pod: &Pod) -> Result<(i64, i64), QuantityProblem> {
    request_list(pod, true).map(|list| {
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
        let conditions: Vec<serde_json::Value> = pending
            .map(|reason| serde_json::json!({"type": "PodResizePending", "status": "True", "reason": reason}))
            .into_iter()
            .collect();
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"containers": spec},
            "status": {"containerStatuses": statuses, "conditions": conditions},
        }))
        .unwrap()
    }

    fn cpu(pod: &Pod) -> i64 {
        pod_requests(pod).unwrap().milli_cpu
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
        let r = pod_requests(&pod).unwrap();
        assert_eq!(
            (r.milli_cpu, r.memory, r.ephemeral_storage),
            (30, 30_000_000, 30_000_000_000)
        );
    }

    // Ours: what 1.37 changed (C.75).
    #[test]
    fn resizes_in_opposite_directions_take_the_largest_sum_not_the_sum_of_largest() {
        // Sums: spec 3, allocated 3, actuated 3 (1.37); the per-container
        // maximum of 1.34-1.36 would give 4.
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
