//! Validation of a loaded configuration (documented on [`validate()`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::NodeSelectorRequirement;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_validation::{
    unparsable_node_selector_requirement, validate_dns1123_subdomain, validate_label_selector,
    validate_label_value, validate_node_selector_requirement, validate_qualified_name,
};

use crate::config::{
    BackupPvcConfig, CachePvcConfig, LoadAffinity, LoadConcurrency, NodeAgentConfig, PodResources,
};
use crate::finding::{Finding, FindingKind};
use kube_validation::Quantity;

/// Every finding about a configuration, in field order.
///
/// Validation of a loaded configuration: everything Velero would ignore,
/// replace, skip or fail on later (C1.10–C1.17, A2.x, L3.1–L3.3), as findings.
pub fn validate(config: &NodeAgentConfig) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(concurrency) = &config.load_concurrency {
        load_concurrency(concurrency, &mut out);
    }
    if let Some(entries) = &config.load_affinity {
        load_affinity(entries, config.backup_pvc.as_ref(), &mut out);
    }
    if let Some(backup_pvc) = &config.backup_pvc {
        for (class, entry) in backup_pvc {
            backup_pvc_entry(class, entry, &mut out);
        }
    }
    if let Some(resources) = &config.pod_resources {
        pod_resources(resources, &mut out);
    }
    if let Some(name) = config
        .priority_class_name
        .as_deref()
        .filter(|n| !n.is_empty())
    {
        let errors = validate_dns1123_subdomain(name);
        if !errors.is_empty() {
            out.push(Finding::warning(
                FindingKind::InvalidName,
                "priorityClassName",
                format!(
                    "{name:?} cannot name a PriorityClass: {}",
                    errors.join("; ")
                ),
                "no such PriorityClass exists, so it warns and uses the default priority (C1.15)",
            ));
        }
    }
    if let Some(cache) = &config.cache_pvc {
        cache_pvc(cache, &mut out);
    }
    if let Some(labels) = &config.pod_labels {
        pod_labels(labels, &mut out);
    }
    if let Some(annotations) = &config.pod_annotations {
        annotation_keys(
            "podAnnotations",
            annotations,
            "the API server rejects every data-mover pod",
            &mut out,
        );
    }
    out
}

fn load_concurrency(config: &LoadConcurrency, out: &mut Vec<Finding>) {
    if let Some(global) = config.global_config.filter(|g| *g <= 0) {
        out.push(Finding::warning(
            FindingKind::InvalidNumber,
            "loadConcurrency.globalConfig",
            format!("{global} is not a valid concurrency; use a number >= 1"),
            "uses the default 1 (L3.1)",
        ));
    }
    for (i, rule) in config.per_node_config.iter().flatten().enumerate() {
        let path = format!("loadConcurrency.perNodeConfig[{i}]");
        if let Some(selector) = &rule.node_selector {
            for violation in validate_label_selector(selector) {
                out.push(Finding::warning(
                    FindingKind::InvalidSelector,
                    format!("{path}.nodeSelector.{}", violation.path),
                    violation.message,
                    "the whole rule is skipped (L3.1 step 5, L3.3)",
                ));
            }
        }
        match rule.number {
            None | Some(i64::MIN..=0) => out.push(Finding::warning(
                FindingKind::InvalidNumber,
                format!("{path}.number"),
                match rule.number {
                    Some(n) => format!("{n} is not a valid concurrency; use a number >= 1"),
                    None => "missing; use a number >= 1".to_owned(),
                },
                "the rule is skipped, it never means zero or blocks a node (L3.2)",
            )),
            Some(n) if n >= i64::from(i32::MAX) => out.push(Finding::warning(
                FindingKind::InvalidNumber,
                format!("{path}.number"),
                format!("{n} is not below 2147483647"),
                "the rule can never win, as if it matched no node (L3.2)",
            )),
            Some(_) => {}
        }
    }
    if let Some(length) = config.prepare_queue_length.filter(|l| *l <= 0) {
        out.push(Finding::warning(
            FindingKind::InvalidNumber,
            "loadConcurrency.prepareQueueLength",
            format!("{length} disables the prepare queue; use a number >= 1 or remove the key"),
            "no prepare queue, new loads are never held back (L3.8)",
        ));
    }
}

fn load_affinity(
    entries: &[Option<LoadAffinity>],
    backup_pvc: Option<&BTreeMap<String, BackupPvcConfig>>,
    out: &mut Vec<Finding>,
) {
    let mut first_for_class: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, entry) in entries.iter().enumerate() {
        let path = format!("loadAffinity[{i}]");
        let Some(entry) = entry else {
            out.push(Finding::error(
                FindingKind::NullEntry,
                path,
                "null entry; remove it",
                "nil-pointer panic in every data-mover expose that scans this far; the CR stays Accepted until the prepare timeout (A2.6)",
            ));
            continue;
        };
        let class = entry.storage_class();
        if let Some(first) = first_for_class.get(class) {
            let what = if class.is_empty() {
                "a second global entry".to_owned()
            } else {
                format!("a second entry for storage class {class:?}")
            };
            out.push(Finding::warning(
                FindingKind::DeadEntry,
                if class.is_empty() { path.clone() } else { format!("{path}.storageClass") },
                format!("{what} is never used: loadAffinity[{first}] is always selected first; merge the two selectors into one"),
                "uses only the first matching entry, entries are never OR-ed (A2.5, W2.2)",
            ));
        } else {
            first_for_class.insert(class, i);
        }
        if !class.is_empty()
            && let Some(target) = backup_pvc
                .and_then(|b| b.get(class))
                .and_then(|b| b.storage_class.as_deref())
                .filter(|t| !t.is_empty() && *t != class)
        {
            out.push(Finding::warning(
                FindingKind::Ineffective,
                format!("{path}.storageClass"),
                format!(
                    "backups of {class:?} volumes use backupPVC class {target:?}, so they select the entry for {target:?} (or the global one), not this one; it applies to restores only"
                ),
                "selects with the remapped backupPVC class (A2.15)",
            ));
        }
        if let Some(selector) = &entry.node_selector {
            node_affinity_selector(
                &format!("{path}.nodeSelector"),
                selector,
                "copied verbatim into the pod's node affinity; the API server rejects the data-mover pod (A2.8, W2.4)",
                "copied verbatim into the pod's node affinity; the scheduler cannot parse it, so the data-mover pod stays Pending (A2.8, W2.4)",
                out,
            );
        }
    }
}

/// Findings about a label selector that is copied into a pod's required
/// node affinity: keys and values of `matchLabels`, and each expression as
/// the API server (`rejected`) and the scheduler (`unparsable`) see it.
pub(crate) fn node_affinity_selector(
    path: &str,
    selector: &LabelSelector,
    rejected_effect: &str,
    unparsable_effect: &str,
    out: &mut Vec<Finding>,
) {
    for (key, value) in selector.match_labels.iter().flatten() {
        let errors: Vec<String> = validate_qualified_name(key)
            .into_iter()
            .map(|e| format!("key {key:?}: {e}"))
            .chain(
                validate_label_value(value)
                    .into_iter()
                    .map(|e| format!("value {value:?}: {e}")),
            )
            .collect();
        if !errors.is_empty() {
            out.push(Finding::error(
                FindingKind::InvalidRequirement,
                format!("{path}.matchLabels.{key}"),
                errors.join("; "),
                rejected_effect,
            ));
        }
    }
    for (j, e) in selector.match_expressions.iter().flatten().enumerate() {
        let requirement = NodeSelectorRequirement {
            key: e.key.clone(),
            operator: e.operator.clone(),
            values: e.values.clone(),
        };
        let requirement_path = format!("{path}.matchExpressions[{j}]");
        let rejected = validate_node_selector_requirement(&requirement_path, &requirement);
        let (violations, effect) = if rejected.is_empty() {
            (
                unparsable_node_selector_requirement(&requirement_path, &requirement),
                unparsable_effect,
            )
        } else {
            (rejected, rejected_effect)
        };
        for violation in violations {
            out.push(Finding::error(
                FindingKind::InvalidRequirement,
                violation.path,
                violation.message,
                effect,
            ));
        }
    }
}

fn backup_pvc_entry(class: &str, entry: &BackupPvcConfig, out: &mut Vec<Finding>) {
    let path = format!("backupPVC.{class}");
    if class.is_empty() {
        out.push(Finding::warning(
            FindingKind::Ineffective,
            path.clone(),
            "an entry for the empty storage class is never used",
            "a source PVC without a storage class cannot be exposed at all (A2.13, W2.7)",
        ));
    }
    if entry.spc_no_relabeling == Some(true) && entry.read_only != Some(true) {
        out.push(Finding::warning(
            FindingKind::Ineffective,
            format!("{path}.spcNoRelabeling"),
            "spcNoRelabeling has no effect without readOnly: true",
            "ignored with a warning (A2.14)",
        ));
    }
    if let Some(target) = entry.storage_class.as_deref().filter(|t| !t.is_empty()) {
        let errors = validate_dns1123_subdomain(target);
        if !errors.is_empty() {
            out.push(Finding::error(
                FindingKind::InvalidName,
                format!("{path}.storageClass"),
                format!(
                    "{target:?} cannot name a StorageClass: {}",
                    errors.join("; ")
                ),
                "creating the backup PVC fails, so every data-mover backup of this class fails",
            ));
        }
    }
    if let Some(annotations) = &entry.annotations {
        annotation_keys(
            &format!("{path}.annotations"),
            annotations,
            "the API server rejects the backup PVC",
            out,
        );
    }
}

pub(crate) fn annotation_keys(
    path: &str,
    annotations: &BTreeMap<String, String>,
    effect: &str,
    out: &mut Vec<Finding>,
) {
    for key in annotations.keys() {
        let errors = validate_qualified_name(key);
        if !errors.is_empty() {
            out.push(Finding::error(
                FindingKind::InvalidName,
                format!("{path}.{key}"),
                format!("annotation key {key:?}: {}", errors.join("; ")),
                effect,
            ));
        }
    }
}

/// Why the API server refuses the label `key: value` (empty when it
/// accepts it).
pub(crate) fn label_errors(key: &str, value: &str) -> Vec<String> {
    validate_qualified_name(key)
        .into_iter()
        .map(|e| format!("key {key:?}: {e}"))
        .chain(
            validate_label_value(value)
                .into_iter()
                .map(|e| format!("value {value:?}: {e}")),
        )
        .collect()
}

fn pod_labels(labels: &BTreeMap<String, String>, out: &mut Vec<Finding>) {
    for (key, value) in labels {
        let errors = label_errors(key, value);
        if !errors.is_empty() {
            out.push(Finding::error(
                FindingKind::InvalidName,
                format!("podLabels.{key}"),
                errors.join("; "),
                "the API server rejects every data-mover pod",
            ));
        }
    }
}

fn pod_resources(resources: &PodResources, out: &mut Vec<Finding>) {
    const DROPPED: &str = "the whole podResources section is ignored (\"Pod resource requirements are invalid, ignore\"): pods get no requests or limits (C1.14, W1.3)";
    let required = [
        ("cpuRequest", &resources.cpu_request),
        ("cpuLimit", &resources.cpu_limit),
        ("memoryRequest", &resources.memory_request),
        ("memoryLimit", &resources.memory_limit),
    ];
    let optional = [
        (
            "ephemeralStorageRequest",
            &resources.ephemeral_storage_request,
        ),
        ("ephemeralStorageLimit", &resources.ephemeral_storage_limit),
    ];
    let mut parsed: BTreeMap<&str, Quantity> = BTreeMap::new();
    for (name, value) in required {
        let path = format!("podResources.{name}");
        match value.as_deref() {
            None | Some("") => out.push(Finding::warning(
                FindingKind::InvalidResources,
                path,
                "missing; cpuRequest, cpuLimit, memoryRequest and memoryLimit must all be set (use \"0\" for unbounded)",
                DROPPED,
            )),
            Some(text) => quantity(&path, text, DROPPED, out).map_or((), |q| {
                parsed.insert(name, q);
            }),
        }
    }
    for (name, value) in optional {
        let path = format!("podResources.{name}");
        let text = value.as_deref().filter(|t| !t.is_empty()).unwrap_or("0");
        if let Some(q) = quantity(&path, text, DROPPED, out) {
            parsed.insert(name, q);
        }
    }
    for (request, limit) in [
        ("cpuRequest", "cpuLimit"),
        ("memoryRequest", "memoryLimit"),
        ("ephemeralStorageRequest", "ephemeralStorageLimit"),
    ] {
        if let (Some(r), Some(l)) = (parsed.get(request), parsed.get(limit))
            && !l.is_zero()
            && r > l
        {
            out.push(Finding::warning(
                FindingKind::InvalidResources,
                format!("podResources.{request}"),
                format!("request {r} is greater than limit {l}"),
                DROPPED,
            ));
        }
    }
}

fn quantity(path: &str, text: &str, dropped: &str, out: &mut Vec<Finding>) -> Option<Quantity> {
    match Quantity::parse(text) {
        Ok(q) if q.is_negative() => {
            out.push(Finding::error(
                FindingKind::InvalidResources,
                path,
                format!("{text:?} is negative"),
                "used as is; the API server rejects every data-mover pod (must be greater than or equal to 0)",
            ));
            Some(q)
        }
        Ok(q) => Some(q),
        Err(e) => {
            out.push(Finding::warning(
                FindingKind::InvalidResources,
                path,
                format!("{text:?} is not a quantity: {e}"),
                dropped,
            ));
            None
        }
    }
}

fn cache_pvc(cache: &CachePvcConfig, out: &mut Vec<Finding>) {
    match cache.storage_class.as_deref() {
        None | Some("") => out.push(Finding::warning(
            FindingKind::Ineffective,
            "cachePVC.storageClass",
            "missing; the cache volume needs a storage class",
            "cachePVC is ignored with warning \"storage class is absent\" (C1.16)",
        )),
        Some(class) => {
            let errors = validate_dns1123_subdomain(class);
            if !errors.is_empty() {
                out.push(Finding::warning(
                    FindingKind::InvalidName,
                    "cachePVC.storageClass",
                    format!(
                        "{class:?} cannot name a StorageClass: {}",
                        errors.join("; ")
                    ),
                    "the StorageClass GET fails, cachePVC is ignored (C1.16)",
                ));
            }
        }
    }
    match cache.resident_threshold_in_mb {
        Some(t) if t < 0 => out.push(Finding::warning(
            FindingKind::InvalidNumber,
            "cachePVC.residentThresholdInMB",
            format!("{t} is negative"),
            "not checked: the negative value is shifted to a negative byte threshold and used as is (C1.16)",
        )),
        Some(t) if t > (i64::MAX >> 20) => out.push(Finding::warning(
            FindingKind::InvalidNumber,
            "cachePVC.residentThresholdInMB",
            format!("{t} MiB does not fit in 64 bits once converted to bytes"),
            "the shift by 20 overflows and wraps to an unrelated threshold (C1.16)",
        )),
        _ => {}
    }
}
