//! `host-labels [--key K]... [--sync-machine-labels]` and `host-labels sanitize
//! VALUE`: the physical-host label every Node should carry, optionally the
//! labels Cluster API would copy from each Machine to its Node (B.5, B.8),
//! and an audit of replicas sharing a host (anti-affinity-placement's
//! `labels` module).
//!
//! Host information comes from Cluster API Machines (the Machine's
//! `node.cluster.x-k8s.io/esxi-host` label, for the Node named by
//! `status.nodeRef.name`) and from a HostInventory whose VM names are node
//! names. Where both know a node, the HostInventory wins (it is read from the
//! hypervisor; CAPV refreshes the Machine label only on its resync, B.4) and
//! a note on standard error shows the disagreement.

use std::collections::BTreeMap;
use std::io::Write;

use anti_affinity_placement::labels::{
    HostLabelConfig, HostLabelsReport, LabelKey, MachineLabelSync, sanitize,
};
use k8s_openapi::api::core::v1::{Node, Pod, PodAffinityTerm, WeightedPodAffinityTerm};
use kube_adapters::capi::{host_map, machine_label_plans};
use serde_json::{Value, json};

use crate::commands::CommandError;
use crate::commands::hosts::host_of_vm;
use crate::manifest::Inventory;
use crate::output::{Output, fitted_table};

/// Node name → host name from Machines and the HostInventory.
pub fn host_of_node(inventory: &Inventory, stderr: &mut dyn Write) -> BTreeMap<String, String> {
    let from_machines = host_map(inventory.machines.values().map(|located| &located.object));
    for shadowed in &from_machines.shadowed {
        let _ = writeln!(
            stderr,
            "note: node {}: Machine {} also names it (host {}); using the host of Machine {}, first in namespace/name order",
            shadowed.node, shadowed.machine, shadowed.host, shadowed.used
        );
    }
    let mut hosts = from_machines.hosts;
    for (node, host) in host_of_vm(inventory).unwrap_or_default() {
        if let Some(previous) = hosts.insert(node.clone(), host.clone())
            && previous != host
        {
            let _ = writeln!(
                stderr,
                "note: node {node}: its Machine says host {previous}, the HostInventory says {host}; using {host}"
            );
        }
    }
    hosts
}

/// The label configuration for the `--key` values: the first is the
/// primary key, the others are kept in step with it (as
/// `host-label-controller --label-key`); none means the default key. Every
/// invalid key is reported.
pub fn config(keys: &[String]) -> Result<HostLabelConfig, CommandError> {
    let mut parsed = Vec::new();
    let mut problems = Vec::new();
    for key in keys {
        match LabelKey::new("--key", key) {
            Ok(key) => parsed.push(key),
            Err(error) => problems.push(error.to_string()),
        }
    }
    if !problems.is_empty() {
        return Err(CommandError::Input(problems.join("; ")));
    }
    let mut parsed = parsed.into_iter();
    let Some(first) = parsed.next() else {
        return Ok(HostLabelConfig::default());
    };
    Ok(parsed.fold(HostLabelConfig::new(first), |config, key| {
        config.with_additional_key(key)
    }))
}

/// The plans and the audit of `host-labels`, with what the input lacked.
#[derive(Debug)]
pub struct HostLabels {
    /// The label plans and the audit.
    pub report: HostLabelsReport,
    /// Set when the input holds no host information at all (no Machine, no
    /// HostInventory, no Node carrying a host key): the one line said instead
    /// of an audit that would call every node unlabelled.
    pub no_host_information: Option<String>,
    /// Planned label removals that drop a key running pods use as
    /// `topologyKey` (pod affinity, pod anti-affinity or a topology spread
    /// constraint), one line per removed key.
    pub warnings: Vec<String>,
}

/// Where a pod uses a topology key.
fn topology_key_uses(pod: &Pod) -> Vec<(&str, &'static str)> {
    let mut uses = Vec::new();
    let Some(spec) = pod.spec.as_ref() else {
        return uses;
    };
    if let Some(affinity) = spec.affinity.as_ref() {
        if let Some(terms) = affinity.pod_affinity.as_ref() {
            let all = affinity_terms(
                terms
                    .required_during_scheduling_ignored_during_execution
                    .as_ref(),
                terms
                    .preferred_during_scheduling_ignored_during_execution
                    .as_ref(),
            );
            uses.extend(all.map(|term| (term.topology_key.as_str(), "pod affinity")));
        }
        if let Some(terms) = affinity.pod_anti_affinity.as_ref() {
            let all = affinity_terms(
                terms
                    .required_during_scheduling_ignored_during_execution
                    .as_ref(),
                terms
                    .preferred_during_scheduling_ignored_during_execution
                    .as_ref(),
            );
            uses.extend(all.map(|term| (term.topology_key.as_str(), "pod anti-affinity")));
        }
    }
    uses.extend(
        spec.topology_spread_constraints
            .iter()
            .flatten()
            .map(|constraint| {
                (
                    constraint.topology_key.as_str(),
                    "topologySpreadConstraints",
                )
            }),
    );
    uses
}

/// The required and the preferred terms of a pod (anti-)affinity.
fn affinity_terms<'a>(
    required: Option<&'a Vec<PodAffinityTerm>>,
    preferred: Option<&'a Vec<WeightedPodAffinityTerm>>,
) -> impl Iterator<Item = &'a PodAffinityTerm> {
    let preferred = preferred
        .into_iter()
        .flatten()
        .map(|weighted| &weighted.pod_affinity_term);
    required.into_iter().flatten().chain(preferred)
}

/// One line per label key the plans remove that running pods (phase
/// `Running`) use as a topology key: the nodes losing it and the pods with
/// where they use it.
fn topology_key_warnings(inventory: &Inventory, report: &HostLabelsReport) -> Vec<String> {
    let mut removed: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (node, plan) in &report.nodes {
        for key in &plan.remove {
            removed.entry(key.as_str()).or_default().push(node.as_str());
        }
    }
    let mut users: BTreeMap<&str, BTreeMap<String, Vec<&'static str>>> = BTreeMap::new();
    for (key, located) in &inventory.pods {
        let pod = &located.object;
        let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        if !running {
            continue;
        }
        for (topology_key, place) in topology_key_uses(pod) {
            if removed.contains_key(topology_key) {
                let places = users
                    .entry(topology_key)
                    .or_default()
                    .entry(key.to_string())
                    .or_default();
                if !places.contains(&place) {
                    places.push(place);
                }
            }
        }
    }
    users
        .into_iter()
        .map(|(topology_key, pods)| {
            let nodes = removed.get(topology_key).map_or_else(String::new, |n| n.join(", "));
            let pods: Vec<String> = pods
                .into_iter()
                .map(|(pod, places)| format!("{pod} ({})", places.join(", ")))
                .collect();
            format!(
                "removing label {topology_key} from node(s) {nodes}: running pod(s) use it as topologyKey: {}; those nodes drop out of that topology domain",
                pods.join(", ")
            )
        })
        .collect()
}

/// Computes the plans and the audit.
pub fn report(
    inventory: &Inventory,
    keys: &[String],
    stderr: &mut dyn Write,
) -> Result<HostLabels, CommandError> {
    report_with_sync(inventory, keys, None, stderr)
}

/// The line saying the input holds no host information, when it holds none:
/// no Machine, no HostInventory and no Node carrying any of the host keys.
fn no_host_information(inventory: &Inventory, config: &HostLabelConfig) -> Option<String> {
    if !inventory.machines.is_empty() || !inventory.host_inventories.is_empty() {
        return None;
    }
    let labelled = inventory.nodes.values().any(|located| {
        located
            .object
            .metadata
            .labels
            .as_ref()
            .is_some_and(|labels| {
                config
                    .keys()
                    .iter()
                    .any(|key| labels.contains_key(key.as_str()))
            })
    });
    if labelled {
        return None;
    }
    let keys: Vec<&str> = config.keys().iter().map(LabelKey::as_str).collect();
    Some(format!(
        "no host information: no Machines, no HostInventory and no Node with label {}; nothing to audit",
        keys.join(" or ")
    ))
}

/// The Machine → Node label sync of `--sync-machine-labels` with the
/// `--additional-sync-machine-labels` expressions.
pub fn machine_sync(patterns: &[String]) -> Result<MachineLabelSync, CommandError> {
    MachineLabelSync::new(patterns).map_err(|error| CommandError::Input(error.to_string()))
}

/// Computes the plans and the audit; with `sync`, each Node's plan also
/// copies its Machine's managed labels (Cluster API's Machine → Node sync,
/// B.5, B.8), merged into the host-label plan (sets win over removals, the
/// host label's value over the Machine's).
pub fn report_with_sync(
    inventory: &Inventory,
    keys: &[String],
    sync: Option<&MachineLabelSync>,
    stderr: &mut dyn Write,
) -> Result<HostLabels, CommandError> {
    let config = config(keys)?;
    let no_host_information = no_host_information(inventory, &config);
    let nodes: Vec<Node> = inventory.nodes.values().map(|l| l.object.clone()).collect();
    let pods: Vec<Pod> = inventory.pods.values().map(|l| l.object.clone()).collect();
    let hosts = host_of_node(inventory, stderr);
    let mut report = config.host_labels(&nodes, &pods, &hosts);
    if let Some(sync) = sync {
        let synced = machine_label_plans(
            &nodes,
            inventory.machines.values().map(|located| &located.object),
            sync,
        );
        for (node, used, ignored) in &synced.shadowed {
            let _ = writeln!(
                stderr,
                "note: node {node}: Machine {ignored} also names it; syncing the labels of Machine {used}, first in namespace/name order"
            );
        }
        for (node, plan) in synced.nodes {
            let merged = match report.nodes.remove(&node) {
                Some(host_plan) => host_plan.merge(plan),
                None => plan,
            };
            report.nodes.insert(node, merged);
        }
    }
    if no_host_information.is_some() {
        report.audit.unlabelled_nodes.clear();
    }
    let warnings = topology_key_warnings(inventory, &report);
    for warning in &warnings {
        let _ = writeln!(stderr, "warning: {warning}");
    }
    Ok(HostLabels {
        report,
        no_host_information,
        warnings,
    })
}

/// The contract's JSON of a report.
pub fn document(labels: &HostLabels) -> Value {
    let report = &labels.report;
    let mut document = json!({
        "nodes": report.nodes.iter().map(|(node, plan)| {
            let mut entry = json!({"set": plan.set, "remove": plan.remove});
            if !plan.annotations.is_empty() {
                entry["annotations"] = json!(plan.annotations);
            }
            (node.clone(), entry)
        }).collect::<serde_json::Map<_, _>>(),
        "audit": {
            "unlabelledNodes": report.audit.unlabelled_nodes,
            "sharedHosts": report.audit.shared_hosts.iter().map(|shared| json!({
                "host": shared.host,
                "pods": shared.pods,
                "rule": shared.rule.as_str(),
                "group": shared.group,
            })).collect::<Vec<_>>(),
            "preferredSummary": report.audit.preferred_summary().iter().map(|group| json!({
                "group": group.group,
                "hosts": group.hosts,
                "pods": group.pods,
            })).collect::<Vec<_>>(),
        },
    });
    if let Some(line) = &labels.no_host_information {
        document["audit"]["noHostInformation"] = json!(line);
    }
    if !labels.warnings.is_empty() {
        document["warnings"] = json!(labels.warnings);
    }
    document
}

/// The people's view of a report.
pub fn table_text(labels: &HostLabels) -> String {
    let report = &labels.report;
    let mut text = String::new();
    if report.nodes.is_empty() {
        text.push_str("Every Node with known host information is labelled correctly.\n");
    } else {
        text.push_str("Label changes:\n\n");
        let mut rows = Vec::new();
        for (node, plan) in &report.nodes {
            for (key, value) in &plan.set {
                rows.push([node.clone(), "set".to_owned(), format!("{key}={value}")]);
            }
            for key in &plan.remove {
                rows.push([node.clone(), "remove".to_owned(), key.clone()]);
            }
            for (key, value) in &plan.annotations {
                rows.push([
                    node.clone(),
                    "annotate".to_owned(),
                    match value {
                        Some(value) => format!("{key}={value}"),
                        None => format!("{key} (remove)"),
                    },
                ]);
            }
        }
        text.push_str(&fitted_table(&["node", "action", "label"], rows));
    }
    text.push_str("\nAudit of the current labels:\n\n");
    let audit = &report.audit;
    if let Some(line) = &labels.no_host_information {
        text.push_str(line);
        text.push('\n');
    } else if audit.unlabelled_nodes.is_empty() && audit.shared_hosts.is_empty() {
        text.push_str("No unlabelled node, no replicas sharing a host.\n");
    } else {
        let mut rows: Vec<[String; 2]> = audit
            .unlabelled_nodes
            .iter()
            .map(|node| {
                [
                    "unlabelled node".to_owned(),
                    format!("{node} (host anti-affinity cannot see it)"),
                ]
            })
            .collect();
        // Required rules: every shared host (a label problem). Preferred
        // rules allow sharing: one line per workload.
        rows.extend(audit.required_sharing().map(|shared| {
            [
                format!("shared host {} (required rule)", shared.host),
                shared.pods.join(", "),
            ]
        }));
        let preferred = audit.preferred_summary();
        rows.extend(preferred.iter().map(|group| {
            [
                "preferred rule only".to_owned(),
                format!(
                    "{}: {} replicas share {} host(s), which the rule allows",
                    group.group, group.pods, group.hosts
                ),
            ]
        }));
        text.push_str(&fitted_table(&["finding", "detail"], rows));
        if !preferred.is_empty() {
            text.push_str(
                "\nPreferred rules are summarised per workload; every shared host with its pods is in -o json (audit.sharedHosts, rule \"preferred\").\n",
            );
        }
    }
    text
}

/// `host-labels [--key K]... [--sync-machine-labels [--additional-sync-machine-labels RE]...]`.
pub fn run(
    inventory: &Inventory,
    keys: &[String],
    sync: Option<&MachineLabelSync>,
    stderr: &mut dyn Write,
) -> Result<Output, CommandError> {
    let labels = report_with_sync(inventory, keys, sync, stderr)?;
    Ok(Output {
        document: document(&labels),
        table: table_text(&labels),
    })
}

/// `host-labels sanitize VALUE`.
pub fn run_sanitize(value: &str) -> Output {
    let sanitized = sanitize(value);
    Output {
        document: json!({"value": sanitized.value, "valid": sanitized.valid}),
        table: fitted_table(
            &["input", "label value", "valid"],
            [[
                value.to_owned(),
                sanitized.value.clone(),
                if sanitized.valid { "yes" } else { "no" }.to_owned(),
            ]],
        ),
    }
}
