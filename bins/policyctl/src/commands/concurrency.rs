//! `concurrency`: the data-path concurrency of every Node (L3.1–L3.3).

use affinity_translate::{NodeAgentConfig, NodeConcurrency};
use k8s_openapi::api::core::v1::Node;
use serde_json::json;

use crate::commands::CommandError;
use crate::manifest::Inventory;
use crate::output::{Output, fitted_table, or_dash};

/// Computes the per-node numbers.
pub fn run(config: &NodeAgentConfig, inventory: &Inventory) -> Result<Output, CommandError> {
    let (compiled, _findings) = NodeConcurrency::compile(config.load_concurrency.as_ref());
    let nodes: Vec<Node> = inventory.nodes.values().map(|l| l.object.clone()).collect();
    let per_node = compiled.for_nodes(&nodes);
    let document = json!({
        "global": compiled.global(),
        "nodes": per_node,
    });
    let zone = |node: &Node| {
        node.metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get("topology.kubernetes.io/zone").cloned())
    };
    let mut text = format!("Global concurrency: {}\n\n", compiled.global());
    text.push_str(&fitted_table(
        &["node", "zone", "concurrency"],
        inventory.nodes.values().map(|located| {
            let name = located.object.metadata.name.clone().unwrap_or_default();
            let number = per_node
                .get(&name)
                .copied()
                .unwrap_or_else(|| compiled.global());
            [name, or_dash(zone(&located.object)), number.to_string()]
        }),
    ));
    Ok(Output {
        document,
        table: text,
    })
}
