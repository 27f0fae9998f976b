//! Findings about the repository-maintenance job ConfigMap (documented on
//! [`validate_maintenance`]).

use std::collections::BTreeSet;

use kube_validation::{Quantity, validate_dns1123_subdomain};

use crate::finding::{Finding, FindingKind};
use crate::maintenance::config::JobConfig;
use crate::maintenance::job::{JobError, ServerPodTemplate, maintenance_job};
use crate::maintenance::load::{GLOBAL_KEY, MaintenanceConfig, MaintenanceConfigError, prefixed};
use crate::validate::{annotation_keys, label_errors, node_affinity_selector};

/// What the findings can be checked against, when the input has it.
#[derive(Clone, Copy, Debug, Default)]
pub struct MaintenanceContext<'a> {
    /// The keys of the BackupRepositories (`None`: not known, entries are
    /// not matched against them).
    pub repository_keys: Option<&'a BTreeSet<String>>,
    /// The names of the PriorityClasses (`None`: not known, the priority
    /// class is not looked up).
    pub priority_classes: Option<&'a BTreeSet<String>>,
}

/// Every finding about the ConfigMap, entry by entry in key order (R5.x):
/// entries that do not decode, unknown keys, everything Velero ignores
/// (later `loadAffinity` entries, `storageClass`, a repository entry's
/// `priorityClassName`, `podLabels` or `podAnnotations` that `global`
/// replaces), everything that makes the job fail (resources, a negative
/// `keepLatestMaintenanceJobs`, invalid names, a missing PriorityClass) and
/// entries no BackupRepository reads.
pub fn validate_maintenance(
    config: &MaintenanceConfig,
    context: &MaintenanceContext<'_>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let global = config.global().map(|g| &g.config);
    for (key, entry) in &config.entries {
        let loaded = match entry {
            Ok(loaded) => loaded,
            Err(error) => {
                out.push(Finding::error(
                    FindingKind::Undecodable,
                    key.clone(),
                    error.to_string(),
                    "the Velero server does not start while an entry does not decode; a running server warns and builds the jobs of every repository reading this entry with the defaults, keeping 3 (R5.5)",
                ));
                continue;
            }
        };
        out.extend(loaded.findings.iter().cloned());
        entry_findings(key, &loaded.config, global, context, &mut out);
        if key != GLOBAL_KEY {
            repository_entry(key, context, &mut out);
        }
    }
    out
}

fn repository_entry(key: &str, context: &MaintenanceContext<'_>, out: &mut Vec<Finding>) {
    if key.matches('-').count() < 2 {
        out.push(Finding::warning(
            FindingKind::UnknownEntry,
            key,
            format!(
                "key {key:?} is neither \"global\" nor of the form <volumeNamespace>-<backupStorageLocation>-<repositoryType>, so no repository ever reads it"
            ),
            "only `global` and the keys of existing repositories are read (R5.2)",
        ));
        return;
    }
    if let Some(keys) = context.repository_keys
        && !keys.contains(key)
    {
        let known = if keys.is_empty() {
            "the input has no BackupRepository".to_owned()
        } else {
            format!(
                "keys of the BackupRepositories read: {}",
                keys.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        };
        out.push(Finding::warning(
            FindingKind::UnknownEntry,
            key,
            format!("no BackupRepository has key {key:?} ({known})"),
            "read only once a repository with this volume namespace, storage location and type exists (R5.2)",
        ));
    }
}

fn entry_findings(
    key: &str,
    config: &JobConfig,
    global: Option<&JobConfig>,
    context: &MaintenanceContext<'_>,
    out: &mut Vec<Finding>,
) {
    let at = |path: &str| prefixed(key, path);
    if let Some(entries) = config.load_affinities() {
        match entries.first().and_then(Option::as_ref).ok_or(()) {
            Err(()) => out.push(Finding::warning(
                FindingKind::NullEntry,
                at("loadAffinity[0]"),
                "null first entry: the job gets no node affinity at all",
                "a null first entry translates to no affinity (R5.8)",
            )),
            Ok(first) => {
                if !first.storage_class().is_empty() {
                    out.push(Finding::warning(
                        FindingKind::Ineffective,
                        at("loadAffinity[0].storageClass"),
                        format!(
                            "storageClass {:?} is ignored: the entry applies to every job that reads it",
                            first.storage_class()
                        ),
                        "maintenance jobs use only the nodeSelector of the first entry (R5.9)",
                    ));
                }
                if let Some(selector) = &first.node_selector {
                    node_affinity_selector(
                        &at("loadAffinity[0].nodeSelector"),
                        selector,
                        "copied into the job's node affinity; the API server rejects the job, so maintenance fails (R5.8)",
                        "copied into the job's node affinity; the scheduler cannot parse it, so the job's pod stays Pending (R5.8)",
                        out,
                    );
                }
            }
        }
        for (i, _) in entries.iter().enumerate().skip(1) {
            out.push(Finding::warning(
                FindingKind::DeadEntry,
                at(&format!("loadAffinity[{i}]")),
                "never used: only loadAffinity[0] is read, entries are never OR-ed; fold the alternatives into the first entry's selector",
                "maintenance jobs use only the first entry (R5.8, D5.1)",
            ));
        }
    } else if config.load_affinity.is_some() && key != GLOBAL_KEY {
        out.push(Finding::warning(
            FindingKind::Ineffective,
            at("loadAffinity"),
            "an empty list does not clear global's loadAffinity: the global one is used",
            "an empty list counts as absent (R5.4)",
        ));
    }
    if config.pod_resources.is_some()
        && let Err(error) = maintenance_job(Some(config), "", &ServerPodTemplate::default())
    {
        let field = match &error {
            JobError::Quantity { field, .. } | JobError::RequestAboveLimit { field, .. } => *field,
        };
        out.push(Finding::error(
            FindingKind::InvalidResources,
            at(&format!("podResources.{field}")),
            error.to_string(),
            "the job cannot be built: every maintenance of the repositories using these resources fails (R5.10)",
        ));
    }
    if let Some(resources) = &config.pod_resources {
        for (field, value) in [
            ("cpuRequest", &resources.cpu_request),
            ("cpuLimit", &resources.cpu_limit),
            ("memoryRequest", &resources.memory_request),
            ("memoryLimit", &resources.memory_limit),
            (
                "ephemeralStorageRequest",
                &resources.ephemeral_storage_request,
            ),
            ("ephemeralStorageLimit", &resources.ephemeral_storage_limit),
        ] {
            if let Some(text) = value.as_deref()
                && Quantity::parse(text).is_ok_and(Quantity::is_negative)
            {
                out.push(Finding::error(
                    FindingKind::InvalidResources,
                    at(&format!("podResources.{field}")),
                    format!("{text:?} is negative"),
                    "used as is; the API server rejects the job (R5.10)",
                ));
            }
        }
    }
    match config.keep_latest_maintenance_jobs {
        Some(n) if n < 0 => out.push(Finding::error(
            FindingKind::InvalidNumber,
            at("keepLatestMaintenanceJobs"),
            format!("{n} is negative; use 0 or more"),
            "old-job clean-up deletes every job of the repository and then indexes past the end of the list: a panic in the BackupRepository reconcile, after every maintenance (R5.13)",
        )),
        Some(0) => out.push(Finding::warning(
            FindingKind::InvalidNumber,
            at("keepLatestMaintenanceJobs"),
            "0 keeps no finished job: their pods and logs are deleted right after each maintenance",
            "every job of the repository is deleted after each reconcile (R5.13)",
        )),
        _ => {}
    }
    // A repository entry's priority class that global replaces is only
    // reported as ignored (below), not looked up.
    let replaced = key != GLOBAL_KEY && global.and_then(JobConfig::priority_class).is_some();
    if let Some(name) = config.priority_class().filter(|_| !replaced) {
        priority_class(key, name, context, out);
    }
    if let Some(labels) = config.labels() {
        for (label, value) in labels {
            let errors = label_errors(label, value);
            if !errors.is_empty() {
                out.push(Finding::error(
                    FindingKind::InvalidName,
                    at(&format!("podLabels.{label}")),
                    errors.join("; "),
                    "the API server rejects the job, so maintenance fails (R5.12)",
                ));
            }
        }
    }
    if let Some(annotations) = config.annotations() {
        annotation_keys(
            &at("podAnnotations"),
            annotations,
            "the API server rejects the job, so maintenance fails (R5.12)",
            out,
        );
    }
    if key != GLOBAL_KEY {
        global_only(key, config, global, out);
    }
}

fn priority_class(key: &str, name: &str, context: &MaintenanceContext<'_>, out: &mut Vec<Finding>) {
    let path = prefixed(key, "priorityClassName");
    let errors = validate_dns1123_subdomain(name);
    if !errors.is_empty() {
        out.push(Finding::error(
            FindingKind::InvalidName,
            path,
            format!(
                "{name:?} cannot name a PriorityClass: {}",
                errors.join("; ")
            ),
            "set on the job anyway; its pods are rejected, so maintenance never runs (R5.11)",
        ));
        return;
    }
    if let Some(classes) = context.priority_classes
        && !classes.contains(name)
    {
        out.push(Finding::error(
            FindingKind::MissingPriorityClass,
            path,
            format!(
                "no PriorityClass {name:?} in the input ({})",
                if classes.is_empty() {
                    "it has none".to_owned()
                } else {
                    format!(
                        "PriorityClasses read: {}",
                        classes.iter().cloned().collect::<Vec<_>>().join(", ")
                    )
                }
            ),
            "Velero only warns and sets it on the job anyway; the API server then refuses the job's pods, so maintenance never runs (R5.11)",
        ));
    }
}

/// A repository entry's `priorityClassName`, `podLabels` and
/// `podAnnotations` (R5.4, D5.2).
fn global_only(key: &str, config: &JobConfig, global: Option<&JobConfig>, out: &mut Vec<Finding>) {
    let fields: [(&str, bool, bool); 3] = [
        (
            "priorityClassName",
            config.priority_class().is_some(),
            global.and_then(JobConfig::priority_class).is_some(),
        ),
        (
            "podLabels",
            config.labels().is_some(),
            global.and_then(JobConfig::labels).is_some(),
        ),
        (
            "podAnnotations",
            config.annotations().is_some(),
            global.and_then(JobConfig::annotations).is_some(),
        ),
    ];
    for (field, own, in_global) in fields {
        if !own {
            continue;
        }
        if in_global {
            out.push(Finding::warning(
                FindingKind::Ineffective,
                prefixed(key, field),
                format!("ignored: global sets {field}, which replaces this one"),
                "global's value replaces a repository entry's (R5.4)",
            ));
        } else {
            out.push(Finding::warning(
                FindingKind::Ineffective,
                prefixed(key, field),
                format!(
                    "used only because global sets no {field}; Velero documents it as read from global only, so setting it in global later silently replaces it"
                ),
                "a repository entry's value is kept when global has none (R5.4, D5.2)",
            ));
        }
    }
}

/// The finding for a ConfigMap that cannot be used at all (R5.3, R5.5).
pub fn config_map_finding(error: &MaintenanceConfigError) -> Finding {
    Finding::error(
        FindingKind::Undecodable,
        "",
        error.to_string(),
        "the Velero server does not start; a running server builds every job with the defaults (R5.3, R5.5)",
    )
}
