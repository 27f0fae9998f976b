//! The scheduling-relevant part of a repository-maintenance job's pod
//! (documented on [`maintenance_job`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, Toleration};
use kube_validation::Quantity;
use serde::Serialize;

use crate::maintenance::config::JobConfig;
use crate::maintenance::name_hash::repository_name_label;
use crate::tolerations::inherited_tolerations;
use crate::translate::{selector_requirements, to_affinity};

/// The label naming the repository on its maintenance jobs and their pods
/// (Velero's `RepositoryNameLabel`).
pub const REPOSITORY_NAME_LABEL: &str = "velero.io/repo-name";

/// Labels of the Velero server's pod template a job inherits when the
/// configuration gives no `podLabels` (Velero's `ThirdPartyLabels`, R5.12).
pub const INHERITED_LABEL_KEYS: [&str; 1] = ["azure.workload.identity/use"];

/// Annotations of the Velero server's pod template a job inherits when the
/// configuration gives no `podAnnotations` (`ThirdPartyAnnotations`, R5.12).
pub const INHERITED_ANNOTATION_KEYS: [&str; 1] = ["iam.amazonaws.com/role"];

/// What the job takes from the Velero server Deployment's pod template
/// (Deployment `velero` in the repository's namespace).
#[derive(Clone, Copy, Debug, Default)]
pub struct ServerPodTemplate<'a> {
    /// The pod template's labels.
    pub labels: Option<&'a BTreeMap<String, String>>,
    /// The pod template's annotations.
    pub annotations: Option<&'a BTreeMap<String, String>>,
    /// The pod template's tolerations.
    pub tolerations: &'a [Toleration],
}

/// Requests and limits of the job's container, resource name → quantity as
/// written (zero quantities are left out: unbounded, R5.10).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct JobResources {
    /// Requests (`cpu`, `memory`, `ephemeral-storage`).
    pub requests: BTreeMap<String, String>,
    /// Limits.
    pub limits: BTreeMap<String, String>,
}

/// The scheduling-relevant part of the maintenance job's pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceJob {
    /// `Some(0)` when the affinity comes from `loadAffinity[0]` (R5.8).
    pub load_affinity_index: Option<usize>,
    /// Required node affinity: `loadAffinity[0].nodeSelector` only (R5.8,
    /// R5.9); `None` when it expresses nothing.
    pub affinity: Option<Affinity>,
    /// Requests and limits (R5.10).
    pub resources: JobResources,
    /// Priority class name, set even when no such PriorityClass exists
    /// (R5.11).
    pub priority_class_name: Option<String>,
    /// Pod labels (R5.12).
    pub labels: BTreeMap<String, String>,
    /// Pod annotations (R5.12).
    pub annotations: BTreeMap<String, String>,
    /// Tolerations: `os=windows:NoSchedule`, then the allowlisted ones of
    /// the server's pod template (R5.12).
    pub tolerations: Vec<Toleration>,
}

/// Why Velero cannot build the job (R5.10): the maintenance of the
/// repository fails each time it is due.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// A quantity that does not parse (an absent CPU or memory value is
    /// `""`, which does not parse either).
    #[error(
        "failed to parse resource requirements for maintenance job: couldn't parse {what} {value:?} (podResources.{field}): {message}"
    )]
    Quantity {
        /// Velero's words for it (`CPU request`).
        what: &'static str,
        /// JSON key under `podResources`.
        field: &'static str,
        /// The offending value.
        value: String,
        /// Why it does not parse.
        message: String,
    },
    /// A request above its non-zero limit.
    #[error(
        "failed to parse resource requirements for maintenance job: {what} request {request:?} must be less than or equal to {what} limit {limit:?} (podResources.{field})"
    )]
    RequestAboveLimit {
        /// `CPU`, `Memory` or `Ephemeral storage`.
        what: &'static str,
        /// JSON key of the request under `podResources`.
        field: &'static str,
        /// The request.
        request: String,
        /// The limit.
        limit: String,
    },
}

/// The `os=windows:NoSchedule` toleration every maintenance job carries.
pub fn windows_toleration() -> Toleration {
    Toleration {
        key: Some("os".to_owned()),
        operator: Some("Equal".to_owned()),
        value: Some("windows".to_owned()),
        effect: Some("NoSchedule".to_owned()),
        toleration_seconds: None,
    }
}

/// Builds the job's pod fields as Velero's `buildJob` does (R5.8–R5.12),
/// from the effective configuration (`None`: the defaults) of the
/// BackupRepository named `repository_name`.
///
/// - affinity: `loadAffinity[0].nodeSelector` alone, `matchLabels` as `In`
///   requirements in key order, then `matchExpressions` verbatim, in one
///   term; no OS requirement, no storage class, no topology; a `null` first
///   entry or an empty selector gives none;
/// - resources: CPU and memory default to `"0"` only without
///   `podResources`; with it, each value is used as written (absent is
///   `""`, an error), ephemeral storage defaults to `"0"`; zero is left out;
/// - priority class: as configured (never checked here, R5.11);
/// - labels: `velero.io/repo-name`, then `podLabels` (which may replace
///   it) or else the server's `azure.workload.identity/use`; annotations:
///   `podAnnotations` or else the server's `iam.amazonaws.com/role`;
/// - tolerations: `os=windows:NoSchedule`, then the server's allowlisted.
pub fn maintenance_job(
    config: Option<&JobConfig>,
    repository_name: &str,
    server: &ServerPodTemplate<'_>,
) -> Result<MaintenanceJob, JobError> {
    let resources = resources(config)?;
    let first = config
        .and_then(JobConfig::load_affinities)
        .and_then(|entries| entries.first());
    let affinity = first
        .and_then(Option::as_ref)
        .and_then(|entry| entry.node_selector.as_ref())
        .and_then(|selector| to_affinity(&selector_requirements(selector), None));
    let load_affinity_index = affinity.as_ref().map(|_| 0);
    let mut labels = BTreeMap::from([(
        REPOSITORY_NAME_LABEL.to_owned(),
        repository_name_label(repository_name),
    )]);
    match config.and_then(JobConfig::labels) {
        Some(own) => labels.extend(own.clone()),
        None => labels.extend(inherited(server.labels, &INHERITED_LABEL_KEYS)),
    }
    let annotations = match config.and_then(JobConfig::annotations) {
        Some(own) => own.clone(),
        None => inherited(server.annotations, &INHERITED_ANNOTATION_KEYS),
    };
    let mut tolerations = vec![windows_toleration()];
    tolerations.extend(inherited_tolerations(server.tolerations));
    Ok(MaintenanceJob {
        load_affinity_index,
        affinity,
        resources,
        priority_class_name: config
            .and_then(JobConfig::priority_class)
            .map(str::to_owned),
        labels,
        annotations,
        tolerations,
    })
}

/// The allowlisted keys of `from` with a non-empty value.
fn inherited(from: Option<&BTreeMap<String, String>>, keys: &[&str]) -> BTreeMap<String, String> {
    keys.iter()
        .filter_map(|key| {
            from.and_then(|map| map.get(*key))
                .filter(|value| !value.is_empty())
                .map(|value| ((*key).to_owned(), value.clone()))
        })
        .collect()
}

/// One resource: Velero's words, JSON key, resource name.
struct Slot {
    what: &'static str,
    field: &'static str,
    resource: &'static str,
}

const SLOTS: [(Slot, Slot); 3] = [
    (
        Slot {
            what: "CPU request",
            field: "cpuRequest",
            resource: "cpu",
        },
        Slot {
            what: "CPU limit",
            field: "cpuLimit",
            resource: "cpu",
        },
    ),
    (
        Slot {
            what: "memory request",
            field: "memoryRequest",
            resource: "memory",
        },
        Slot {
            what: "memory limit",
            field: "memoryLimit",
            resource: "memory",
        },
    ),
    (
        Slot {
            what: "ephemeral storage request",
            field: "ephemeralStorageRequest",
            resource: "ephemeral-storage",
        },
        Slot {
            what: "ephemeral storage limit",
            field: "ephemeralStorageLimit",
            resource: "ephemeral-storage",
        },
    ),
];

fn resources(config: Option<&JobConfig>) -> Result<JobResources, JobError> {
    let Some(own) = config.and_then(|c| c.pod_resources.as_ref()) else {
        return Ok(JobResources::default());
    };
    let text = |value: &Option<String>| value.clone().unwrap_or_default();
    let ephemeral = |value: &Option<String>| {
        value
            .clone()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "0".to_owned())
    };
    let values = [
        (text(&own.cpu_request), text(&own.cpu_limit)),
        (text(&own.memory_request), text(&own.memory_limit)),
        (
            ephemeral(&own.ephemeral_storage_request),
            ephemeral(&own.ephemeral_storage_limit),
        ),
    ];
    // Velero parses in this order: CPU, memory, ephemeral requests, then
    // the limits; the first error wins.
    let parse = |slot: &Slot, value: &str| {
        Quantity::parse(value).map_err(|e| JobError::Quantity {
            what: slot.what,
            field: slot.field,
            value: value.to_owned(),
            message: e.to_string(),
        })
    };
    let mut requests = Vec::new();
    for ((slot, _), (request, _)) in SLOTS.iter().zip(&values) {
        requests.push(parse(slot, request)?);
    }
    let mut limits = Vec::new();
    for ((_, slot), (_, limit)) in SLOTS.iter().zip(&values) {
        limits.push(parse(slot, limit)?);
    }
    let mut out = JobResources::default();
    for (i, ((request_slot, limit_slot), (request_text, limit_text))) in
        SLOTS.iter().zip(&values).enumerate()
    {
        let (request, limit) = (requests[i], limits[i]);
        if !limit.is_zero() && request > limit {
            let what = match i {
                0 => "CPU",
                1 => "Memory",
                _ => "Ephemeral storage",
            };
            return Err(JobError::RequestAboveLimit {
                what,
                field: request_slot.field,
                request: request_text.clone(),
                limit: limit_text.clone(),
            });
        }
        if !request.is_zero() {
            out.requests
                .insert(request_slot.resource.to_owned(), request_text.clone());
        }
        if !limit.is_zero() {
            out.limits
                .insert(limit_slot.resource.to_owned(), limit_text.clone());
        }
    }
    Ok(out)
}
