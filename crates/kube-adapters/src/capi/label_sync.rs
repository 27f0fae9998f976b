//! Machines and Nodes → Machine → Node label sync plans
//! ([`anti_affinity_placement::labels::MachineLabelSync`]).

use std::collections::BTreeMap;

use anti_affinity_placement::labels::{MachineLabelSync, NodeLabelPlan};
use k8s_openapi::api::core::v1::Node;

use crate::meta::namespace_or_default;
use capi_api::Machine;

/// The label plans of every Node a Machine names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineLabelPlans {
    /// Node name → its non-empty plan.
    pub nodes: BTreeMap<String, NodeLabelPlan>,
    /// `(node, machine used, machine ignored)`: Machines naming a Node an
    /// earlier Machine (in `namespace/name` order) already names.
    pub shadowed: Vec<(String, String, String)>,
}

/// For each Node that a Machine names in `status.nodeRef.name`, the plan
/// that copies the Machine's managed labels to it. Nodes without a Machine
/// are left alone; a Machine whose Node is not among `nodes` plans nothing.
/// Two Machines naming one Node (stale data) do not depend on listing
/// order: the first in `namespace/name` order is used, the others are
/// reported in [`MachineLabelPlans::shadowed`].
pub fn machine_label_plans<'a>(
    nodes: impl IntoIterator<Item = &'a Node>,
    machines: impl IntoIterator<Item = &'a Machine>,
    sync: &MachineLabelSync,
) -> MachineLabelPlans {
    let mut named: Vec<(String, &Machine, &str)> = machines
        .into_iter()
        .filter_map(|machine| {
            let node = machine.node_name()?;
            let id = format!(
                "{}/{}",
                namespace_or_default(machine.metadata.namespace.as_deref()),
                machine.metadata.name.as_deref().unwrap_or_default()
            );
            Some((id, machine, node))
        })
        .collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    let mut by_node: BTreeMap<&str, (String, &Machine)> = BTreeMap::new();
    let mut plans = MachineLabelPlans::default();
    for (id, machine, node) in named {
        match by_node.get(node) {
            Some((used, _)) => plans.shadowed.push((node.to_owned(), used.clone(), id)),
            None => {
                by_node.insert(node, (id, machine));
            }
        }
    }
    let empty = BTreeMap::new();
    for node in nodes {
        let Some(name) = node.metadata.name.as_deref() else {
            continue;
        };
        let Some((_, machine)) = by_node.get(name) else {
            continue;
        };
        let plan = sync.plan(
            node.metadata.labels.as_ref().unwrap_or(&empty),
            node.metadata.annotations.as_ref().unwrap_or(&empty),
            machine.metadata.labels.as_ref().unwrap_or(&empty),
        );
        if !plan.is_empty() {
            plans.nodes.insert(name.to_owned(), plan);
        }
    }
    plans
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn machine(namespace: &str, name: &str, node: &str, labels: serde_json::Value) -> Machine {
        serde_json::from_value(json!({
            "metadata": {"namespace": namespace, "name": name, "labels": labels},
            "status": {"nodeRef": {"name": node}}
        }))
        .unwrap()
    }

    fn node(name: &str, labels: serde_json::Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
    }

    #[test]
    fn each_node_gets_its_machines_managed_labels_and_the_first_machine_wins() {
        let machines = [
            machine(
                "b",
                "m",
                "n1",
                json!({"node-role.kubernetes.io/worker": "b"}),
            ),
            machine(
                "a",
                "m",
                "n1",
                json!({"node-role.kubernetes.io/worker": "a", "team": "x"}),
            ),
            machine(
                "a",
                "gone",
                "n9",
                json!({"node-role.kubernetes.io/worker": ""}),
            ),
        ];
        let nodes = [node("n1", json!({})), node("n2", json!({}))];
        let plans = machine_label_plans(&nodes, &machines, &MachineLabelSync::default());
        assert_eq!(plans.nodes.keys().collect::<Vec<_>>(), ["n1"]);
        assert_eq!(
            plans.nodes["n1"].set,
            BTreeMap::from([("node-role.kubernetes.io/worker".to_owned(), "a".to_owned())])
        );
        assert_eq!(
            plans.shadowed,
            [("n1".to_owned(), "a/m".to_owned(), "b/m".to_owned())]
        );
    }
}
