//! `capacity --pod NAMESPACE/NAME | --workload KIND/NAMESPACE/NAME [--max N]`:
//! how many more pods like this one fit (`kube-scheduler-sim`'s capacity,
//! C.40), where they go, and kube-scheduler's FitError for the next one.
//!
//! Copies are placed one by one with the whole default profile over the
//! Nodes, Namespaces and bound Pods of the input (other pending pods are not
//! placed first). Copy `i` is named `<name>-copy-<i>` and carries the pod's
//! labels, so anti-affinity and topology spread against earlier copies
//! apply. A bound `--pod` stays where it is; the copies are new pods. A
//! workload's copies are its pod template in the workload's namespace,
//! named after the workload; the labels its controller adds
//! (`pod-template-hash`, `controller-revision-hash`,
//! `statefulset.kubernetes.io/pod-name`) are not added.
//!
//! The report's section on Deployments with required host or zone pod
//! anti-affinity runs the same computation for each such Deployment.
//!
//! Copies placed on a node that lacks a topology key of the pod's pod
//! (anti-)affinity rules are flagged: kube-scheduler places them (such a
//! node is in no domain of the key), but they are not kept apart as the rule
//! intends. `capacity` names them; the report does not count them as spare
//! replicas and says why.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_adapters::meta::namespace_or_default;
use kube_scheduler_sim::{Capacity, ClusterState, DEFAULT_MAX_COPIES, Options};
use serde_json::{Value, json};

use crate::cli::{CapacityArgs, WorkloadKind, WorkloadRef};
use crate::commands::CommandError;
use crate::commands::schedule::{Cluster, require_pod};
use crate::manifest::{Inventory, ObjectKey};
use crate::output::{Output, fitted_table, table};

/// Topology keys whose required pod anti-affinity the report's spare-replica
/// section looks for: one pod per node, per physical host, per zone.
pub const SPREAD_KEYS: &[&str] = &[
    "kubernetes.io/hostname",
    "node.cluster.x-k8s.io/esxi-host",
    "topology.kubernetes.io/zone",
];

/// The pod a workload's controller would create from its template: the
/// template's metadata and spec, in the workload's namespace, named after
/// the workload.
pub fn template_pod(namespace: &str, name: &str, template: &PodTemplateSpec) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: meta.labels,
            annotations: meta.annotations,
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// The pod template of `--workload`.
fn workload_pod(inventory: &Inventory, workload: &WorkloadRef) -> Result<Pod, CommandError> {
    let key = ObjectKey::namespaced(&workload.object.namespace, &workload.object.name);
    let template = match workload.kind {
        WorkloadKind::Deployment => inventory
            .deployments
            .get(&key)
            .map(|l| l.object.spec.as_ref().map(|s| &s.template)),
        WorkloadKind::StatefulSet => inventory
            .stateful_sets
            .get(&key)
            .map(|l| l.object.spec.as_ref().map(|s| &s.template)),
    };
    match template {
        None => Err(CommandError::Input(format!(
            "{workload} is not in the input ({} Deployments and {} StatefulSets read); give the file that holds it with -f",
            inventory.deployments.len(),
            inventory.stateful_sets.len()
        ))),
        Some(None) => Err(CommandError::Input(format!(
            "{workload} has no spec.template to copy"
        ))),
        Some(Some(template)) => Ok(template_pod(
            &workload.object.namespace,
            &workload.object.name,
            template,
        )),
    }
}

/// The input's cluster as a scheduler state, with the storage objects the
/// volume filters read and the workloads whose selectors kube-scheduler's
/// default topology spreading uses.
fn state(inventory: &Inventory) -> Result<ClusterState, String> {
    let cluster = Cluster::from_inventory(inventory);
    let mut state = ClusterState::for_options(
        &cluster.nodes,
        &cluster.namespaces,
        &cluster.pods,
        &inventory.kubernetes.options(),
    )
    .map_err(|error| format!("cannot compute the capacity: {error}"))?;
    state.set_storage(&cluster.storage);
    state.set_dra(&cluster.dra);
    state.add_workloads(&cluster.workloads);
    Ok(state)
}

/// The topology keys of the pod's pod affinity and anti-affinity terms,
/// required and preferred, sorted and without duplicates.
fn affinity_topology_keys(pod: &Pod) -> Vec<String> {
    let Some(affinity) = pod.spec.as_ref().and_then(|s| s.affinity.as_ref()) else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    for (required, preferred) in [
        affinity.pod_affinity.as_ref().map(|a| {
            (
                &a.required_during_scheduling_ignored_during_execution,
                &a.preferred_during_scheduling_ignored_during_execution,
            )
        }),
        affinity.pod_anti_affinity.as_ref().map(|a| {
            (
                &a.required_during_scheduling_ignored_during_execution,
                &a.preferred_during_scheduling_ignored_during_execution,
            )
        }),
    ]
    .into_iter()
    .flatten()
    {
        keys.extend(required.iter().flatten().map(|t| t.topology_key.clone()));
        keys.extend(
            preferred
                .iter()
                .flatten()
                .map(|t| t.pod_affinity_term.topology_key.clone()),
        );
    }
    keys.retain(|k| !k.is_empty());
    keys.sort();
    keys.dedup();
    keys
}

/// Copies placed on nodes that lack a topology key of the pod's pod
/// (anti-)affinity rules, by node, with the keys each lacks. kube-scheduler
/// places them (a node without the key is in no domain, so the rule neither
/// counts nor blocks pods there), but they do not have the separation the
/// rule asks for: these copies are not spare capacity of that rule.
fn copies_missing_keys(
    inventory: &Inventory,
    pod: &Pod,
    result: &Capacity,
) -> BTreeMap<String, (usize, Vec<String>)> {
    let keys = affinity_topology_keys(pod);
    let mut out = BTreeMap::new();
    if keys.is_empty() {
        return out;
    }
    for (node, count) in &result.nodes {
        let labels = inventory
            .nodes
            .get(&ObjectKey::cluster(node))
            .and_then(|located| located.object.metadata.labels.as_ref());
        let missing: Vec<String> = keys
            .iter()
            .filter(|key| labels.is_none_or(|labels| !labels.contains_key(key.as_str())))
            .cloned()
            .collect();
        if !missing.is_empty() {
            out.insert(node.clone(), (*count, missing));
        }
    }
    out
}

/// The sentence on copies placed where a topology key is missing, or
/// `None` when there are none.
fn missing_keys_note(missing: &BTreeMap<String, (usize, Vec<String>)>) -> Option<String> {
    if missing.is_empty() {
        return None;
    }
    let total: usize = missing.values().map(|(n, _)| n).sum();
    let places = missing
        .iter()
        .map(|(node, (n, keys))| format!("{n} on {node} (no label {})", keys.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    Some(format!(
        "{total} of them land only on nodes without a topology key the pod's affinity rules use: {places}. kube-scheduler would place them (a node without the key is in no topology domain, so the rule neither counts nor blocks pods there), but they are not kept apart as the rule intends; label the node(s) to count them."
    ))
}

/// Capacity of `pod` over a copy of `state`, with the scheduler options
/// of the release the answers follow.
fn compute(
    state: &ClusterState,
    pod: &Pod,
    max: usize,
    options: &Options,
) -> Result<Capacity, String> {
    state
        .clone()
        .capacity(pod, max, options)
        .map_err(|error| format!("cannot compute the capacity: {error}"))
}

/// `N more copies fit` and what stopped the run, in one sentence.
fn outcome(result: &Capacity) -> String {
    let copies = if result.count == 1 { "copy" } else { "copies" };
    if let Some(skip) = &result.skipped {
        return format!("kube-scheduler does not place these pods: {skip}");
    }
    match &result.reason {
        _ if result.limit_reached => format!(
            "{} {copies} fit; stopped at the limit of {} copies (--max), so more may fit",
            result.count, result.max
        ),
        Some(reason) => format!(
            "{} {copies} fit; the next one does not: {reason}",
            result.count
        ),
        None => format!("{} {copies} fit", result.count),
    }
}

/// Runs `capacity`.
pub fn run(inventory: &Inventory, args: &CapacityArgs) -> Result<Output, CommandError> {
    let (pod, source, bound_to) = match (&args.pod, &args.workload) {
        (Some(pod_ref), _) => {
            let pod = require_pod(inventory, pod_ref)?.clone();
            let bound_to = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .filter(|n| !n.is_empty());
            (pod, json!({"pod": pod_ref.to_string()}), bound_to)
        }
        (None, Some(workload)) => (
            workload_pod(inventory, workload)?,
            json!({"workload": workload.to_string()}),
            None,
        ),
        (None, None) => {
            return Err(CommandError::Usage(
                "give --pod NAMESPACE/NAME or --workload KIND/NAMESPACE/NAME".to_owned(),
            ));
        }
    };
    let result = state(inventory)
        .and_then(|state| compute(&state, &pod, args.max, &inventory.kubernetes.options()))
        .map_err(CommandError::Input)?;
    let name = pod.metadata.name.clone().unwrap_or_default();
    let namespace = namespace_or_default(pod.metadata.namespace.as_deref());
    let copy_names = format!("{namespace}/{name}-copy-<i>");
    let missing = copies_missing_keys(inventory, &pod, &result);
    let mut document = json!({
        "source": source,
        "boundTo": bound_to,
        "count": result.count,
        "max": result.max,
        "limitReached": result.limit_reached,
        "nodes": result.nodes,
        "reason": result.reason,
        "copyNames": copy_names,
        "copiesOnNodesMissingTopologyKey": missing.values().map(|(n, _)| n).sum::<usize>(),
        "nodesMissingTopologyKey": missing.iter().map(|(node, (_, keys))| (node.clone(), json!(keys))).collect::<serde_json::Map<_, _>>(),
    });
    if let Some(skip) = &result.skipped {
        document["skipped"] = json!({"kind": skip.label(), "message": skip.to_string()});
    }
    let what = match (&args.pod, &args.workload) {
        (Some(pod_ref), _) => match &bound_to {
            Some(node) => format!(
                "Pod {pod_ref} (bound to {node}; it stays there and the copies are new pods)"
            ),
            None => format!("Pod {pod_ref} (pending; its own place is among the copies)"),
        },
        (None, Some(workload)) => format!("{workload} (its pod template)"),
        (None, None) => String::new(),
    };
    let mut text = format!("{what}:\n{}\n", outcome(&result));
    if let Some(note) = missing_keys_note(&missing) {
        text.push_str(&note);
        text.push('\n');
    }
    text.push_str(&format!(
        "Copies are named {copy_names} and carry the pod's labels.\n\n"
    ));
    if result.nodes.is_empty() {
        text.push_str("No copy was placed.\n");
    } else if missing.is_empty() {
        text.push_str(&table(
            &["node", "copies"],
            result
                .nodes
                .iter()
                .map(|(node, n)| [node.clone(), n.to_string()]),
        ));
    } else {
        text.push_str(&table(
            &["node", "copies", "note"],
            result.nodes.iter().map(|(node, n)| {
                [
                    node.clone(),
                    n.to_string(),
                    missing
                        .get(node)
                        .map(|(_, keys)| format!("no label {}", keys.join(", ")))
                        .unwrap_or_default(),
                ]
            }),
        ));
    }
    Ok(Output {
        document,
        table: text,
    })
}

/// The required pod anti-affinity topology keys of a template among
/// [`SPREAD_KEYS`], sorted and without duplicates.
fn spread_keys(template: &PodTemplateSpec) -> Vec<String> {
    let mut keys: Vec<String> = template
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .into_iter()
        .flatten()
        .map(|term| term.topology_key.clone())
        .filter(|key| SPREAD_KEYS.contains(&key.as_str()))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The report's section: for each Deployment whose pod template has required
/// pod anti-affinity on a host or zone key ([`SPREAD_KEYS`]), how many more
/// replicas fit while keeping it. `None` when no Deployment has such
/// anti-affinity.
pub fn report_section(inventory: &Inventory) -> Option<(String, Value)> {
    let mut rows = Vec::new();
    let mut reasons = Vec::new();
    let mut document = BTreeMap::new();
    // One state for every Deployment, cloned for each run.
    let mut shared: Option<Result<ClusterState, String>> = None;
    for (key, located) in &inventory.deployments {
        let Some(spec) = located.object.spec.as_ref() else {
            continue;
        };
        let keys = spread_keys(&spec.template);
        if keys.is_empty() {
            continue;
        }
        let pod = template_pod(&key.namespace, &key.name, &spec.template);
        let replicas = spec.replicas.unwrap_or(1);
        let name = format!("{}/{}", key.namespace, key.name);
        let outcome = shared
            .get_or_insert_with(|| state(inventory))
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|state| {
                compute(
                    state,
                    &pod,
                    DEFAULT_MAX_COPIES,
                    &inventory.kubernetes.options(),
                )
            });
        match outcome {
            Ok(result) => {
                // Copies on nodes without a key of the pod's rules are not
                // spare replicas of the rule: counted apart, with the reason.
                let missing = copies_missing_keys(inventory, &pod, &result);
                let uncounted: usize = missing.values().map(|(n, _)| n).sum();
                let counted = result.count - uncounted;
                let nodes = result
                    .nodes
                    .iter()
                    .filter(|(node, _)| !missing.contains_key(*node))
                    .map(|(node, n)| format!("{node} ×{n}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                rows.push([
                    name.clone(),
                    replicas.to_string(),
                    keys.join(", "),
                    if result.limit_reached {
                        format!("{counted}+")
                    } else {
                        counted.to_string()
                    },
                    if nodes.is_empty() {
                        "-".to_owned()
                    } else {
                        nodes
                    },
                    if missing.is_empty() {
                        "-".to_owned()
                    } else {
                        missing
                            .iter()
                            .map(|(node, (n, _))| format!("{node} ×{n}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                ]);
                let mut reason = result.reason.clone().unwrap_or_else(|| {
                    format!("not tried: the limit of {} copies was reached", result.max)
                });
                if let Some(note) = missing_keys_note(&missing) {
                    reason = format!("{}. Not counted: {note}", reason.trim_end_matches('.'));
                }
                reasons.push([name.clone(), reason]);
                document.insert(
                    name,
                    json!({
                        "replicas": replicas,
                        "antiAffinityKeys": keys,
                        "moreReplicasFit": counted,
                        "limitReached": result.limit_reached,
                        "nodes": result.nodes.iter().filter(|(node, _)| !missing.contains_key(*node)).collect::<BTreeMap<_, _>>(),
                        "notCounted": {
                            "copies": uncounted,
                            "nodes": missing.iter().map(|(node, (n, keys))| (node.clone(), json!({"copies": n, "missingLabels": keys}))).collect::<serde_json::Map<_, _>>(),
                            "reason": missing_keys_note(&missing),
                        },
                        "reason": result.reason,
                    }),
                );
            }
            Err(error) => {
                rows.push([
                    name.clone(),
                    replicas.to_string(),
                    keys.join(", "),
                    "-".to_owned(),
                    "-".to_owned(),
                    "-".to_owned(),
                ]);
                reasons.push([name.clone(), format!("error: {error}")]);
                document.insert(
                    name,
                    json!({"replicas": replicas, "antiAffinityKeys": keys, "error": error}),
                );
            }
        }
    }
    if rows.is_empty() {
        return None;
    }
    let any_uncounted = rows.iter().any(|row| row[5] != "-");
    let spare_table = if any_uncounted {
        fitted_table(
            &[
                "deployment",
                "replicas",
                "anti-affinity key",
                "more fit",
                "new replicas on",
                "not counted (no key)",
            ],
            rows,
        )
    } else {
        fitted_table(
            &[
                "deployment",
                "replicas",
                "anti-affinity key",
                "more fit",
                "new replicas on",
            ],
            rows.into_iter().map(|[a, b, c, d, e, _]| [a, b, c, d, e]),
        )
    };
    let text = format!(
        "Each template copied until a copy fits nowhere, as `policyctl capacity --workload deployment/NAMESPACE/NAME` does:\n\n{}\nWhy the next replica does not fit:\n\n{}",
        spare_table,
        fitted_table(&["deployment", "reason"], reasons)
    );
    Some((text, json!(document)))
}
