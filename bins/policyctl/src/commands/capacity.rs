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
    let mut state = ClusterState::from_snapshot(
        &cluster.nodes,
        &cluster.namespaces,
        &cluster.pods,
        Options::default().merge_match_label_keys,
    )
    .map_err(|error| format!("cannot compute the capacity: {error}"))?;
    state.set_storage(&cluster.storage);
    state.add_workloads(&cluster.workloads);
    Ok(state)
}

/// Capacity of `pod` over a copy of `state`.
fn compute(state: &ClusterState, pod: &Pod, max: usize) -> Result<Capacity, String> {
    state
        .clone()
        .capacity(pod, max, &Options::default())
        .map_err(|error| format!("cannot compute the capacity: {error}"))
}

/// `N more copies fit` and what stopped the run, in one sentence.
fn outcome(result: &Capacity) -> String {
    let copies = if result.count == 1 { "copy" } else { "copies" };
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
        .and_then(|state| compute(&state, &pod, args.max))
        .map_err(CommandError::Input)?;
    let name = pod.metadata.name.clone().unwrap_or_default();
    let namespace = namespace_or_default(pod.metadata.namespace.as_deref());
    let copy_names = format!("{namespace}/{name}-copy-<i>");
    let document = json!({
        "source": source,
        "boundTo": bound_to,
        "count": result.count,
        "max": result.max,
        "limitReached": result.limit_reached,
        "nodes": result.nodes,
        "reason": result.reason,
        "copyNames": copy_names,
    });
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
    let mut text = format!(
        "{what}:\n{}\nCopies are named {copy_names} and carry the pod's labels.\n\n",
        outcome(&result)
    );
    if result.nodes.is_empty() {
        text.push_str("No copy was placed.\n");
    } else {
        text.push_str(&table(
            &["node", "copies"],
            result
                .nodes
                .iter()
                .map(|(node, n)| [node.clone(), n.to_string()]),
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
            .and_then(|state| compute(state, &pod, DEFAULT_MAX_COPIES));
        match outcome {
            Ok(result) => {
                let nodes = result
                    .nodes
                    .iter()
                    .map(|(node, n)| format!("{node} ×{n}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                rows.push([
                    name.clone(),
                    replicas.to_string(),
                    keys.join(", "),
                    if result.limit_reached {
                        format!("{}+", result.count)
                    } else {
                        result.count.to_string()
                    },
                    if nodes.is_empty() {
                        "-".to_owned()
                    } else {
                        nodes
                    },
                ]);
                reasons.push([
                    name.clone(),
                    result.reason.clone().unwrap_or_else(|| {
                        format!("not tried: the limit of {} copies was reached", result.max)
                    }),
                ]);
                document.insert(
                    name,
                    json!({
                        "replicas": replicas,
                        "antiAffinityKeys": keys,
                        "moreReplicasFit": result.count,
                        "limitReached": result.limit_reached,
                        "nodes": result.nodes,
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
    let text = format!(
        "Each template copied until a copy fits nowhere, as `policyctl capacity --workload deployment/NAMESPACE/NAME` does:\n\n{}\nWhy the next replica does not fit:\n\n{}",
        fitted_table(
            &[
                "deployment",
                "replicas",
                "anti-affinity key",
                "more fit",
                "new replicas on",
            ],
            rows,
        ),
        fitted_table(&["deployment", "reason"], reasons)
    );
    Some((text, json!(document)))
}
