//! `schedule --pod NAMESPACE/NAME [...]` and `schedule --all`: kube-scheduler's
//! filters and scores over the Nodes, Namespaces and Pods of the input, with
//! the PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes
//! the volume filters read.
//!
//! Per node, `unschedulable` gives the first rejecting filter's reason in the
//! default profile's order (cordon, node name, taints, node affinity, host
//! ports, resources, volumes, topology spread, pod (anti-)affinity); when no node is
//! feasible, `summary` is kube-scheduler's FitError line (`0/3 nodes are
//! available: 1 Insufficient cpu, ...`), also printed under the table's
//! heading.
//!
//! Pods in phase `Succeeded` or `Failed` are left out: kube-scheduler's cache
//! does not count terminated pods.
//!
//! Pods kube-scheduler never tries (another `spec.schedulerName`,
//! `spec.schedulingGates`, a `metadata.deletionTimestamp`) are not placed
//! and say why; pending pods nominated to a node (`status.nominatedNodeName`)
//! keep room there for pods of lower or equal priority, and take it first
//! themselves when they fit (`kube-scheduler-sim`, C.70 and C.71).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube_scheduler_sim::{
    self as scheduler, DraObjects, Options, Plugin, ScheduleResult, Snapshot, StorageObjects,
    Workloads,
};
use serde_json::{Value, json};

use crate::cli::ObjectRef;
use crate::commands::CommandError;
use crate::manifest::{Inventory, ObjectKey};
use crate::output::{Output, or_dash, table};

/// The cluster as the scheduler sees it.
pub struct Cluster {
    /// Nodes, by name.
    pub nodes: Vec<Node>,
    /// Namespaces, by name.
    pub namespaces: Vec<Namespace>,
    /// Pods that are not terminated, by `namespace/name`.
    pub pods: Vec<Pod>,
    /// Claims, volumes, storage classes and CSINodes (the volume filters).
    pub storage: StorageObjects,
    /// Services, ReplicationControllers, ReplicaSets and StatefulSets: the
    /// selectors of kube-scheduler's default topology spreading.
    pub workloads: Workloads,
    /// DeviceClasses, ResourceClaims, their templates and ResourceSlices
    /// (the DynamicResources plugin).
    pub dra: DraObjects,
}

impl Cluster {
    /// Collects the objects from the input.
    pub fn from_inventory(inventory: &Inventory) -> Self {
        Self {
            nodes: inventory.nodes.values().map(|l| l.object.clone()).collect(),
            namespaces: inventory
                .namespaces
                .values()
                .map(|l| l.object.clone())
                .collect(),
            pods: inventory
                .pods
                .values()
                .map(|l| &l.object)
                .filter(|pod| !is_terminated(pod))
                .cloned()
                .collect(),
            storage: StorageObjects {
                claims: objects(&inventory.persistent_volume_claims),
                volumes: objects(&inventory.persistent_volumes),
                classes: objects(&inventory.storage_classes),
                csi_nodes: objects(&inventory.csi_nodes),
            },
            workloads: Workloads {
                services: objects(&inventory.services),
                replication_controllers: objects(&inventory.replication_controllers),
                replica_sets: objects(&inventory.replica_sets),
                stateful_sets: objects(&inventory.stateful_sets),
            },
            dra: DraObjects {
                device_classes: objects(&inventory.device_classes),
                claims: objects(&inventory.resource_claims),
                claim_templates: objects(&inventory.resource_claim_templates),
                slices: objects(&inventory.resource_slices),
            },
        }
    }
}

fn objects<T: Clone>(objects: &crate::manifest::Objects<T>) -> Vec<T> {
    objects.values().map(|l| l.object.clone()).collect()
}

fn is_terminated(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Checks that the pod is in the input.
pub fn require_pod<'a>(inventory: &'a Inventory, pod: &ObjectRef) -> Result<&'a Pod, CommandError> {
    inventory
        .pods
        .get(&ObjectKey::namespaced(&pod.namespace, &pod.name))
        .map(|located| &located.object)
        .ok_or_else(|| {
            CommandError::Input(format!(
                "pod {pod} is not in the input ({} pods read); give the file that holds it with -f",
                inventory.pods.len()
            ))
        })
}

/// Evaluates one pod.
pub fn evaluate(
    inventory: &Inventory,
    pod: &ObjectRef,
    options: &Options,
) -> Result<ScheduleResult, CommandError> {
    require_pod(inventory, pod)?;
    let cluster = Cluster::from_inventory(inventory);
    let snapshot = Snapshot {
        nodes: &cluster.nodes,
        namespaces: &cluster.namespaces,
        pods: &cluster.pods,
        workloads: &cluster.workloads,
        storage: &cluster.storage,
        dra: &cluster.dra,
    };
    let result = scheduler::schedule_snapshot(&snapshot, &pod.namespace, &pod.name, options)
        .map_err(|error| CommandError::Input(format!("cannot schedule pod {pod}: {error}")))?;
    if let Some(error) = &result.error {
        return Err(CommandError::Input(format!(
            "pod {pod} cannot be scheduled at all: {error}"
        )));
    }
    Ok(result)
}

/// `schedule --pod`.
pub fn run_one(
    inventory: &Inventory,
    pod: &ObjectRef,
    options: &Options,
) -> Result<Output, CommandError> {
    let result = evaluate(inventory, pod, options)?;
    if let Some(skip) = &result.skipped {
        return Ok(Output {
            document: json!({
                "feasible": [],
                "unschedulable": {},
                "selected": null,
                "skipped": {"kind": skip.label(), "message": skip.to_string()},
            }),
            table: format!("Pod {pod}: kube-scheduler does not try to place it:\n{skip}\n"),
        });
    }
    let scores = &result.scores;
    let mut document = json!({
        "feasible": result.feasible,
        "unschedulable": result.unschedulable.iter().map(|(node, failure)| (node.clone(), Value::String(failure.message.clone()))).collect::<serde_json::Map<_, _>>(),
        "scores": scores,
        "totals": result.totals,
        "selected": result.selected,
        "summary": result.summary,
    });
    let mut text = format!(
        "Pod {pod}: {} feasible node(s), selected: {}\n",
        result.feasible.len(),
        or_dash(result.selected.as_ref())
    );
    if let Some(nominated) = &result.nominated_node {
        document["nominatedNode"] = json!(nominated);
        text.push_str(&format!(
            "{nominated} is the pod's nominated node (status.nominatedNodeName) and passes every filter: kube-scheduler takes it without comparing scores\n"
        ));
    }
    if let Some(summary) = &result.summary {
        text.push_str(summary);
        text.push('\n');
    }
    text.push('\n');
    let node_names: Vec<String> = inventory.nodes.keys().map(|key| key.name.clone()).collect();
    let score = |map: &BTreeMap<String, i64>, node: &str| or_dash(map.get(node));
    // Normalised score per plugin, in the profile's order, then the
    // weighted total (C.21).
    let weights = scheduler::score_weights(options.kubernetes_version);
    let mut header = vec!["node", "feasible"];
    header.extend(weights.iter().map(|(plugin, _)| short_name(*plugin)));
    header.extend(["total", "reason"]);
    text.push_str(&table(
        &header,
        node_names.iter().map(|node| {
            let failure = result.unschedulable.get(node);
            let mut row = vec![
                node.clone(),
                if failure.is_none() { "yes" } else { "no" }.to_owned(),
            ];
            for (plugin, _) in &weights {
                row.push(
                    scores
                        .get(*plugin)
                        .map(|s| score(&s.normalized, node))
                        .unwrap_or_default(),
                );
            }
            row.push(score(&result.totals, node));
            row.push(failure.map(|f| f.message.clone()).unwrap_or_default());
            row
        }),
    ));
    text.push_str(&format!(
        "\nweights: {}\n",
        weights
            .iter()
            .map(|(plugin, weight)| format!("{} ×{weight}", short_name(*plugin)))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok(Output {
        document,
        table: text,
    })
}

/// A score plugin's column header.
fn short_name(plugin: Plugin) -> &'static str {
    match plugin {
        Plugin::TaintToleration => "taints",
        Plugin::NodeAffinity => "node aff.",
        Plugin::NodeResourcesFit => "least alloc.",
        Plugin::NodeResourcesBalancedAllocation => "balanced",
        Plugin::PodTopologySpread => "spread",
        Plugin::InterPodAffinity => "pod aff.",
        Plugin::ImageLocality => "images",
        Plugin::DynamicResources => "devices",
        _ => "?",
    }
}

/// `schedule --all`: every unbound pod placed in kube-scheduler's queue
/// order (highest priority, then creation time),
/// then `namespace/name`, each placement updating the cluster.
pub fn run_all(inventory: &Inventory, options: &Options) -> Result<Output, CommandError> {
    let cluster = Cluster::from_inventory(inventory);
    let snapshot = Snapshot {
        nodes: &cluster.nodes,
        namespaces: &cluster.namespaces,
        pods: &cluster.pods,
        workloads: &cluster.workloads,
        storage: &cluster.storage,
        dra: &cluster.dra,
    };
    let batch = scheduler::schedule_all_snapshot(&snapshot, options)
        .map_err(|error| CommandError::Input(format!("cannot place the pending pods: {error}")))?;
    let assignments: serde_json::Map<String, Value> = batch
        .placements
        .iter()
        .map(|p| (p.pod.clone(), json!(p.node)))
        .collect();
    // The queue order, which the map of assignments (sorted by name) loses.
    let order: Vec<&str> = batch.placements.iter().map(|p| p.pod.as_str()).collect();
    let unschedulable: serde_json::Map<String, Value> = batch
        .placements
        .iter()
        .filter_map(|p| p.reason.as_ref().map(|r| (p.pod.clone(), json!(r))))
        .collect();
    let text = format!(
        "{} pending pod(s) placed in queue order (highest priority, then oldest, first):\n\n{}",
        batch.placements.len(),
        table(
            &["order", "pod", "node", "reason"],
            batch.placements.iter().enumerate().map(|(i, p)| {
                [
                    (i + 1).to_string(),
                    p.pod.clone(),
                    or_dash(p.node.as_ref()),
                    p.reason.clone().unwrap_or_default(),
                ]
            }),
        )
    );
    Ok(Output {
        document: json!({
            "assignments": assignments,
            "order": order,
            "unschedulable": unschedulable,
        }),
        table: text,
    })
}
