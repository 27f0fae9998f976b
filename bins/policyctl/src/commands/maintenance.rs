//! `maintenance`: for every BackupRepository, the repository-maintenance
//! job Velero would create (R5.1–R5.14): which ConfigMap entries it reads,
//! its affinity, resources, priority class, labels, annotations and
//! tolerations, the nodes it can run on, and, when none can, why not,
//! node by node (kube-scheduler's filters, as `diagnose`).
//!
//! The ConfigMap is the one `--maintenance-config-map` names (Velero's
//! `--repo-maintenance-job-configmap`), default
//! [`DEFAULT_MAINTENANCE_CONFIG_MAP`], the name Velero's documentation
//! uses; without it, Velero's defaults (as a server without the flag).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use affinity_translate::Finding;
use affinity_translate::maintenance::{
    MaintenanceConfig, MaintenanceConfigError, MaintenanceContext, MaintenanceJob, Resolution,
    ServerPodTemplate, config_map_finding, load_maintenance_config_map, maintenance_job,
    repository_key, resolve, validate_maintenance,
};
use affinity_translate::render_requirement;
use k8s_openapi::api::core::v1::Pod;
use kube_scheduler_sim::{ClusterState, Options, Plugin, diagnose as diagnose_scheduling};
use kube_validation::node_selector::requirement_holds;
use serde_json::{Value, json};
use velero_api::BackupRepository;

use crate::Exit;
use crate::cli::ConfigMapRef;
use crate::commands::config_check::{self, FindingRow};
use crate::commands::render;
use crate::commands::schedule::Cluster;
use crate::commands::{CommandError, CommandResult};
use crate::manifest::{Inventory, ObjectKey};
use crate::output::{Output, fitted_table, or_dash, wrap_to_width};

/// The ConfigMap name looked for when `--maintenance-config-map` is not
/// given: the one of Velero's repository-maintenance documentation (Velero
/// itself has no default: without its flag no ConfigMap is read).
pub const DEFAULT_MAINTENANCE_CONFIG_MAP: &str = "repo-maintenance-job-config";

/// The name of the Velero server Deployment the job copies from (R5.7).
const SERVER_DEPLOYMENT: &str = "velero";

/// The ConfigMap the commands use, with where it came from.
#[derive(Clone, Debug)]
pub struct MaintenanceInput {
    /// `namespace/name` of the ConfigMap used, if any.
    pub name: Option<String>,
    /// `namespace/name (origin)`, or why there is none.
    pub origin: String,
    /// `None`: no ConfigMap (Velero's defaults); else the loaded ConfigMap
    /// or why it cannot be used.
    pub loaded: Option<Result<MaintenanceConfig, MaintenanceConfigError>>,
}

/// Finds the repository-maintenance ConfigMap among the input objects.
pub fn resolve_input(
    wanted: Option<&ConfigMapRef>,
    inventory: &Inventory,
    stderr: &mut dyn Write,
) -> Result<MaintenanceInput, CommandError> {
    let name = wanted.cloned().unwrap_or_else(|| ConfigMapRef {
        namespace: None,
        name: DEFAULT_MAINTENANCE_CONFIG_MAP.to_owned(),
    });
    let matches: Vec<_> = inventory
        .config_maps
        .iter()
        .filter(|(key, _)| name.matches(&key.namespace, &key.name))
        .collect();
    match matches.as_slice() {
        [] if wanted.is_some() => Err(CommandError::Input(format!(
            "--maintenance-config-map {name}: no such ConfigMap in the input; add it with -f"
        ))),
        [] => {
            let _ = writeln!(
                stderr,
                "note: no ConfigMap named {name} in the input: maintenance jobs get Velero's defaults (as a server without --repo-maintenance-job-configmap); name yours with --maintenance-config-map"
            );
            Ok(MaintenanceInput {
                name: None,
                origin: format!("no ConfigMap {name}: Velero's defaults"),
                loaded: None,
            })
        }
        [(key, located)] => Ok(MaintenanceInput {
            name: Some(key.to_string()),
            origin: format!("ConfigMap {key} ({})", located.origin),
            loaded: Some(load_maintenance_config_map(&located.object)),
        }),
        several => Err(CommandError::Input(format!(
            "ConfigMap {} is in several namespaces ({}); choose one with --maintenance-config-map NAMESPACE/{}",
            name.name,
            several
                .iter()
                .map(|(key, _)| key.namespace.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            name.name
        ))),
    }
}

/// The keys of the BackupRepositories of the input, when it has any
/// (without any, entries are not matched against repositories: a command
/// that does not list them would otherwise call every entry unread).
fn repository_keys(inventory: &Inventory) -> Option<BTreeSet<String>> {
    (!inventory.backup_repositories.is_empty()).then(|| {
        inventory
            .backup_repositories
            .values()
            .map(|located| key_of(&located.object))
            .collect()
    })
}

fn key_of(repository: &BackupRepository) -> String {
    let spec = &repository.spec;
    repository_key(
        spec.volume_namespace.as_deref().unwrap_or_default(),
        spec.backup_storage_location.as_deref().unwrap_or_default(),
        spec.repository_type.as_deref().unwrap_or_default(),
    )
}

/// The PriorityClasses of the input, when it has any (a cluster always has
/// Kubernetes' own two, so none means they were not read).
fn priority_classes(inventory: &Inventory) -> Option<BTreeSet<String>> {
    (!inventory.priority_classes.is_empty()).then(|| {
        inventory
            .priority_classes
            .keys()
            .map(|key| key.name.clone())
            .collect()
    })
}

/// Every finding about the ConfigMap (R5.x), for `config check` and
/// `report`: the ConfigMap-level error first, then the entries'.
pub fn findings(input: &MaintenanceInput, inventory: &Inventory) -> Vec<Finding> {
    match &input.loaded {
        None => Vec::new(),
        Some(Err(error)) => vec![config_map_finding(error)],
        Some(Ok(config)) => {
            let keys = repository_keys(inventory);
            let classes = priority_classes(inventory);
            validate_maintenance(
                config,
                &MaintenanceContext {
                    repository_keys: keys.as_ref(),
                    priority_classes: classes.as_ref(),
                },
            )
        }
    }
}

/// One repository's answer.
#[derive(Clone, Debug)]
pub struct RepositoryAnswer {
    /// `namespace/name`.
    pub name: String,
    /// Its key in the ConfigMap.
    pub key: String,
    /// What Velero resolves for it.
    pub resolution: Resolution,
    /// The job, or why Velero cannot build it.
    pub job: Result<MaintenanceJob, String>,
    /// Nodes the job's pod can run on.
    pub nodes: Vec<String>,
    /// Why it cannot run on each other node.
    pub rejected: BTreeMap<String, String>,
    /// What the answer could not take into account.
    pub notes: Vec<String>,
}

/// Computes the answer of every BackupRepository of the input.
pub fn answers(
    input: &MaintenanceInput,
    inventory: &Inventory,
) -> Result<Vec<RepositoryAnswer>, CommandError> {
    let config = match &input.loaded {
        Some(Ok(config)) => Some(config),
        _ => None,
    };
    let cluster = Cluster::from_inventory(inventory);
    let options = inventory.kubernetes.options();
    let mut state =
        ClusterState::for_options(&cluster.nodes, &cluster.namespaces, &cluster.pods, &options)
            .map_err(|error| {
                CommandError::Input(format!("cannot place maintenance jobs: {error}"))
            })?;
    state.set_storage(&cluster.storage);
    state.set_dra(&cluster.dra);
    let mut out = Vec::new();
    for (object_key, located) in &inventory.backup_repositories {
        let repository = &located.object;
        let key = key_of(repository);
        let resolution = resolve(config, &key);
        let mut notes = Vec::new();
        if let Some(Err(error)) = &input.loaded {
            notes.push(format!(
                "{error}; Velero builds the job with the defaults (R5.3)"
            ));
        }
        let deployment = inventory
            .deployments
            .get(&ObjectKey::namespaced(
                &object_key.namespace,
                SERVER_DEPLOYMENT,
            ))
            .map(|located| &located.object);
        if deployment.is_none() {
            notes.push(format!(
                "the input has no Deployment {}/{SERVER_DEPLOYMENT}: Velero cannot build the job without it (R5.7); its inherited labels, annotations and tolerations are left out here",
                object_key.namespace
            ));
        }
        let template = deployment
            .and_then(|d| d.spec.as_ref())
            .map(|spec| &spec.template);
        let tolerations = template
            .and_then(|t| t.spec.as_ref())
            .and_then(|s| s.tolerations.as_deref())
            .unwrap_or_default();
        let server = ServerPodTemplate {
            labels: template
                .and_then(|t| t.metadata.as_ref())
                .and_then(|m| m.labels.as_ref()),
            annotations: template
                .and_then(|t| t.metadata.as_ref())
                .and_then(|m| m.annotations.as_ref()),
            tolerations,
        };
        let name = repository.metadata.name.clone().unwrap_or_default();
        let job = maintenance_job(resolution.config(), &name, &server).map_err(|e| e.to_string());
        let (nodes, rejected) = match &job {
            Ok(job) => {
                let pod = job_pod(&object_key.namespace, &name, job)?;
                place(&state, &pod, inventory, &options)
            }
            Err(_) => (Vec::new(), BTreeMap::new()),
        };
        let windows: Vec<&str> = nodes
            .iter()
            .filter(|node| is_windows(inventory, node))
            .map(String::as_str)
            .collect();
        if !windows.is_empty() {
            notes.push(format!(
                "the job can be placed on Windows node(s) {}, where its Linux image cannot run: it tolerates os=windows:NoSchedule and has no OS requirement (W5.1); exclude them in loadAffinity[0]",
                windows.join(", ")
            ));
        }
        out.push(RepositoryAnswer {
            name: object_key.to_string(),
            key,
            resolution,
            job,
            nodes,
            rejected,
            notes,
        });
    }
    Ok(out)
}

/// Whether the node is labelled `kubernetes.io/os=windows`.
fn is_windows(inventory: &Inventory, node: &str) -> bool {
    inventory
        .nodes
        .get(&ObjectKey::cluster(node))
        .and_then(|located| located.object.metadata.labels.as_ref())
        .and_then(|labels| labels.get("kubernetes.io/os"))
        .is_some_and(|os| os == "windows")
}

/// The job's pod as kube-scheduler sees it (R5.14).
fn job_pod(namespace: &str, repository: &str, job: &MaintenanceJob) -> Result<Pod, CommandError> {
    let resources = json!({
        "requests": job.resources.requests,
        "limits": job.resources.limits,
    });
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": namespace,
            "name": format!("{repository}-maintain-job"),
            "labels": job.labels,
            "annotations": job.annotations,
        },
        "spec": {
            "containers": [{
                "name": "velero-repo-maintenance-container",
                "image": "velero",
                "resources": resources,
            }],
            "affinity": job.affinity,
            "tolerations": job.tolerations,
            "priorityClassName": job.priority_class_name,
            "restartPolicy": "Never",
        },
    }))
    .map_err(|error| CommandError::Input(format!("cannot build the maintenance pod: {error}")))
}

fn place(
    state: &ClusterState,
    pod: &Pod,
    inventory: &Inventory,
    options: &Options,
) -> (Vec<String>, BTreeMap<String, String>) {
    let mut nodes = Vec::new();
    let mut rejected = BTreeMap::new();
    for key in inventory.nodes.keys() {
        match diagnose_scheduling(state, pod, &key.name, options) {
            Some(verdict) if verdict.fits => nodes.push(key.name.clone()),
            Some(verdict) => {
                let explanation = if verdict.plugin == Some(Plugin::NodeAffinity) {
                    load_affinity_miss(pod, inventory, key)
                } else {
                    None
                };
                rejected.insert(key.name.clone(), explanation.unwrap_or(verdict.explanation));
            }
            None => {}
        }
    }
    (nodes, rejected)
}

/// The first requirement of the job's one node affinity term (all from
/// `loadAffinity[0]`, R5.8) that the node's labels fail, in words.
fn load_affinity_miss(pod: &Pod, inventory: &Inventory, node: &ObjectKey) -> Option<String> {
    let labels = inventory
        .nodes
        .get(node)?
        .object
        .metadata
        .labels
        .clone()
        .unwrap_or_default();
    let terms = &pod
        .spec
        .as_ref()?
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    let [term] = terms.as_slice() else {
        return None;
    };
    let failing = term
        .match_expressions
        .iter()
        .flatten()
        .find(|r| requirement_holds(r, &labels) != Some(true))?;
    let actual = match labels.get(&failing.key) {
        Some(value) => format!("the node has {}={value}", failing.key),
        None => format!("the node has no label {}", failing.key),
    };
    Some(format!(
        "loadAffinity[0] requires {}, but {actual}",
        render_requirement(failing)
    ))
}

/// Where each set field of the effective configuration came from.
fn sources(resolution: &Resolution) -> Value {
    match resolution {
        Resolution::Configured { sources, .. } => json!(
            sources
                .iter()
                .map(|(field, key)| (field.key().to_owned(), json!(key)))
                .collect::<serde_json::Map<_, _>>()
        ),
        _ => json!({}),
    }
}

fn configuration(resolution: &Resolution) -> String {
    match resolution {
        Resolution::Defaults => "Velero's defaults (no entry for it, no global)".to_owned(),
        Resolution::Configured { sources, .. } => {
            let keys: BTreeSet<&str> = sources.values().map(String::as_str).collect();
            if keys.is_empty() {
                "its entry sets nothing: Velero's defaults".to_owned()
            } else {
                format!(
                    "from {}",
                    keys.iter()
                        .map(|k| format!("entry {k}"))
                        .collect::<Vec<_>>()
                        .join(" and ")
                )
            }
        }
        Resolution::Broken { key, error } => format!(
            "Velero's defaults: entry {key} does not decode, so Velero warns and ignores the whole configuration (R5.5): {error}"
        ),
    }
}

/// The document of one repository's answer.
pub fn answer_json(answer: &RepositoryAnswer) -> Value {
    let mut document = json!({
        "repository": answer.name,
        "key": answer.key,
        "configuration": configuration(&answer.resolution),
        "sources": sources(&answer.resolution),
        "keepLatestMaintenanceJobs": answer.resolution.keep_latest_jobs(),
    });
    match &answer.job {
        Ok(job) => {
            document["job"] = json!({
                "affinity": job.affinity,
                "resources": job.resources,
                "priorityClassName": job.priority_class_name,
                "labels": job.labels,
                "annotations": job.annotations,
                "tolerations": job.tolerations,
            });
            document["nodes"] = json!(answer.nodes);
            if answer.nodes.is_empty() {
                document["diagnosis"] = json!(answer.rejected);
            }
        }
        Err(error) => document["jobError"] = json!(error),
    }
    if !answer.notes.is_empty() {
        document["notes"] = json!(answer.notes);
    }
    document
}

/// The table rows of one repository's answer.
pub fn answer_rows(answer: &RepositoryAnswer) -> Vec<[String; 2]> {
    let mut rows = vec![
        ["repository".to_owned(), answer.name.clone()],
        ["ConfigMap key".to_owned(), answer.key.clone()],
        [
            "configuration".to_owned(),
            configuration(&answer.resolution),
        ],
        [
            "jobs kept".to_owned(),
            answer.resolution.keep_latest_jobs().to_string(),
        ],
    ];
    let job = match &answer.job {
        Ok(job) => job,
        Err(error) => {
            rows.push([
                "job".to_owned(),
                format!("not created, every maintenance fails (R5.10): {error}"),
            ]);
            return rows;
        }
    };
    let terms = render::required_terms(job.affinity.as_ref());
    rows.push([
        "required node affinity".to_owned(),
        if terms.is_empty() {
            "none".to_owned()
        } else {
            format!("{} (loadAffinity[0])", terms.join(" OR "))
        },
    ]);
    let list = |map: &BTreeMap<String, String>, sep: &str| {
        if map.is_empty() {
            "-".to_owned()
        } else {
            map.iter()
                .map(|(k, v)| format!("{k}{sep}{v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    rows.push(["requests".to_owned(), list(&job.resources.requests, "=")]);
    rows.push(["limits".to_owned(), list(&job.resources.limits, "=")]);
    rows.push([
        "priority class".to_owned(),
        or_dash(job.priority_class_name.as_deref()),
    ]);
    rows.push(["labels".to_owned(), list(&job.labels, "=")]);
    rows.push(["annotations".to_owned(), list(&job.annotations, "=")]);
    rows.push([
        "tolerations".to_owned(),
        job.tolerations
            .iter()
            .map(render::toleration)
            .collect::<Vec<_>>()
            .join(", "),
    ]);
    rows.push([
        "can run on".to_owned(),
        if answer.nodes.is_empty() {
            "no node (see below)".to_owned()
        } else {
            answer.nodes.join(", ")
        },
    ]);
    rows
}

/// The `config check` part of the repository-maintenance ConfigMap: its
/// findings under the node-agent's, when the input has the ConfigMap.
/// Exits 1 when an entry does not decode (the Velero server would not
/// start, R5.5) and, with `strict`, on any finding.
pub fn append_check(
    result: &mut CommandResult,
    wanted: Option<&ConfigMapRef>,
    inventory: &Inventory,
    strict: bool,
) -> Result<(), CommandError> {
    let input = resolve_input(wanted, inventory, &mut std::io::sink())?;
    if input.loaded.is_none() {
        return Ok(());
    }
    let findings = findings(&input, inventory);
    let refused = findings
        .iter()
        .any(|f| f.kind == affinity_translate::FindingKind::Undecodable);
    if refused || (strict && !findings.is_empty()) {
        result.exit = Exit::Failure;
    }
    let text = &mut result.output.table;
    // As the node-agent's: `Configuration: ConfigMap NAME (ORIGIN)`, one
    // line, whatever its length.
    text.push_str(&format!(
        "\nRepository-maintenance jobs (--repo-maintenance-job-configmap):\nConfiguration: {}\n",
        input.origin
    ));
    if refused {
        text.push_str("The Velero server would refuse to start with this configuration.\n");
    }
    text.push_str(&findings_text(&findings));
    result.output.document["maintenance"] = json!({
        "configMap": input.name,
        "findings": findings,
    });
    Ok(())
}

/// The findings as `config check` prints them, with the rule footer.
fn findings_text(findings: &[Finding]) -> String {
    let rows: Vec<FindingRow> = findings.iter().map(FindingRow::from).collect();
    config_check::findings_text(&rows)
}

/// The report's section, when the input has BackupRepositories or the
/// ConfigMap: the section text and its document.
pub fn report_section(
    wanted: Option<&ConfigMapRef>,
    inventory: &Inventory,
    stderr: &mut dyn Write,
) -> Result<Option<(String, Value)>, CommandError> {
    let input = resolve_input(wanted, inventory, &mut std::io::sink())?;
    if input.loaded.is_none() && inventory.backup_repositories.is_empty() {
        return Ok(None);
    }
    let output = run(wanted, inventory, stderr)?;
    Ok(Some((output.table, output.document)))
}

/// Runs the command.
pub fn run(
    wanted: Option<&ConfigMapRef>,
    inventory: &Inventory,
    stderr: &mut dyn Write,
) -> Result<Output, CommandError> {
    let input = resolve_input(wanted, inventory, stderr)?;
    let answers = answers(&input, inventory)?;
    let findings = findings(&input, inventory);
    let mut text = format!("Configuration: {}\n", input.origin);
    if answers.is_empty() {
        text.push_str(
            "\nThe input has no BackupRepository (kubectl get backuprepositories -n velero -o yaml): no job to place.\n",
        );
    }
    for answer in &answers {
        text.push('\n');
        text.push_str(&fitted_table(&["field", "value"], answer_rows(answer)));
        if answer.job.is_ok() && answer.nodes.is_empty() {
            text.push_str("\nNo node can run the maintenance job:\n");
            text.push_str(&fitted_table(
                &["node", "why not"],
                answer
                    .rejected
                    .iter()
                    .map(|(node, why)| [node.clone(), why.clone()]),
            ));
        }
        for note in &answer.notes {
            text.push('\n');
            text.push_str(&wrap_to_width(&format!("Note: {note}.")));
            text.push('\n');
        }
    }
    if !findings.is_empty() {
        text.push_str("\nFindings about the ConfigMap: ");
        text.push_str(&findings_text(&findings));
    }
    let document = json!({
        "configMap": input.name,
        "repositories": answers.iter().map(answer_json).collect::<Vec<_>>(),
        "findings": findings,
    });
    Ok(Output {
        document,
        table: text,
    })
}
