//! The report's `scheduling` section: kube-scheduler's verdict for each
//! pending pod (unbound, not terminated), as `schedule --pod` gives it —
//! every node's first rejecting filter, the plugins' scores, the chosen
//! node and the FitError — for at most [`MOST_PODS`] pods in
//! `namespace/name` order.

use kube_scheduler_sim::Options;
use serde_json::{Map, Value, json};

use crate::cli::ObjectRef;
use crate::commands::schedule;
use crate::manifest::Inventory;

/// Pending pods evaluated in full; the others are counted.
pub const MOST_PODS: usize = 25;

/// The `scheduling` document, or `None` when no pod is pending:
/// `{"pendingPods": N, "pods": {"<namespace>/<name>": <schedule --pod
/// document> or {"error": "..."}}}` (`pods` holds the first
/// [`MOST_PODS`]).
pub fn document(inventory: &Inventory) -> Option<Value> {
    let pending: Vec<ObjectRef> = inventory
        .pods
        .iter()
        .filter(|(_, located)| {
            let pod = &located.object;
            let bound = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            bound.is_none() && !matches!(phase, Some("Succeeded" | "Failed"))
        })
        .map(|(key, _)| ObjectRef {
            namespace: key.namespace.clone(),
            name: key.name.clone(),
        })
        .collect();
    if pending.is_empty() {
        return None;
    }
    let options = Options::default();
    let pods: Map<String, Value> = pending
        .iter()
        .take(MOST_PODS)
        .map(|pod| {
            let entry = match schedule::run_one(inventory, pod, &options) {
                Ok(output) => output.document,
                Err(error) => json!({"error": error.to_string()}),
            };
            (pod.to_string(), entry)
        })
        .collect();
    Some(json!({
        "pendingPods": pending.len(),
        "pods": pods,
    }))
}
