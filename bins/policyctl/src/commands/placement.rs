//! The report's `placement` section: for every Node, its physical host
//! (from Machines and the HostInventory, as `host-labels` finds it), its
//! zone, and the pods bound to it grouped by the workload that owns them.
//! The HTML page draws its Hosts view from it; `-o json` has the same
//! numbers.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Map, Value, json};

use crate::commands::host_labels::host_of_node;
use crate::manifest::Inventory;

/// The label kube-scheduler's zone spreading reads.
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// The owner group of a pod: `namespace/Kind/name` of its controller, or
/// `namespace/Pod/name` for a pod nothing owns.
fn owner_of(namespace: &str, name: &str, pod: &Pod) -> String {
    let controller = pod
        .metadata
        .owner_references
        .as_ref()
        .and_then(|owners| owners.iter().find(|o| o.controller == Some(true)));
    match controller {
        Some(owner) => format!("{namespace}/{}/{}", owner.kind, owner.name),
        None => format!("{namespace}/Pod/{name}"),
    }
}

fn is_terminated(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The `placement` document: `{"nodes": {"<node>": {"host": "<host>" or
/// null, "zone": "<zone>" or null, "pods": N, "workloads": {"<namespace>/<Kind>/<name>": N}}},
/// "unboundPods": N}`. Terminated pods are not counted; pods bound to a
/// node that is not in the input are counted under `podsOnUnknownNodes`.
pub fn document(inventory: &Inventory) -> Value {
    let hosts = host_of_node(inventory, &mut std::io::sink());
    let zones: BTreeMap<&str, Option<&String>> = inventory
        .nodes
        .iter()
        .map(|(key, located)| {
            let zone = located
                .object
                .metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get(ZONE_LABEL));
            (key.name.as_str(), zone)
        })
        .collect();
    let mut nodes: BTreeMap<&str, (usize, BTreeMap<String, usize>)> = zones
        .keys()
        .map(|name| (*name, (0, BTreeMap::new())))
        .collect();
    let mut unbound = 0usize;
    let mut unknown = 0usize;
    for (key, located) in &inventory.pods {
        let pod = &located.object;
        if is_terminated(pod) {
            continue;
        }
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
            unbound += 1;
            continue;
        };
        match nodes.get_mut(node) {
            Some((count, workloads)) => {
                *count += 1;
                *workloads
                    .entry(owner_of(&key.namespace, &key.name, pod))
                    .or_default() += 1;
            }
            None => unknown += 1,
        }
    }
    let entries: Map<String, Value> = nodes
        .into_iter()
        .map(|(name, (pods, workloads))| {
            let entry = json!({
                "host": hosts.get(name),
                "zone": zones.get(name).copied().flatten(),
                "pods": pods,
                "workloads": workloads,
            });
            (name.to_owned(), entry)
        })
        .collect();
    json!({
        "nodes": entries,
        "unboundPods": unbound,
        "podsOnUnknownNodes": unknown,
    })
}
