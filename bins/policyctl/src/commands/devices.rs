//! The report's section on Dynamic Resource Allocation: the devices the
//! ResourceSlices publish and how many allocated claims hold, per node and
//! per DeviceClass (DR.3, DR.4).

use kube_scheduler_sim::{ClusterState, DraObjects};
use serde_json::Value;

use crate::manifest::Inventory;
use crate::output::table;

/// The section's text and its `-o json` document; `None` when the input
/// has no ResourceSlice and no DeviceClass.
pub fn report_section(inventory: &Inventory) -> Option<(String, Value)> {
    if inventory.resource_slices.is_empty() && inventory.device_classes.is_empty() {
        return None;
    }
    let nodes: Vec<_> = inventory.nodes.values().map(|l| l.object.clone()).collect();
    let mut state = ClusterState::new(&nodes, &[], &[], true);
    state.set_dra(&DraObjects {
        device_classes: all(&inventory.device_classes),
        claims: all(&inventory.resource_claims),
        claim_templates: Vec::new(),
        slices: all(&inventory.resource_slices),
    });
    let usage = state.device_usage();
    let mut text = table(
        &["node", "driver", "devices", "allocated", "free", "shared"],
        usage.nodes.iter().map(|n| {
            vec![
                n.node.clone(),
                n.driver.clone(),
                n.devices.to_string(),
                n.allocated.to_string(),
                (n.devices - n.allocated).to_string(),
                n.shared.to_string(),
            ]
        }),
    );
    text.push('\n');
    text.push_str(&table(
        &["device class", "devices", "allocated", "free", "note"],
        usage.classes.iter().map(|c| {
            vec![
                c.class.clone(),
                c.devices.to_string(),
                c.allocated.to_string(),
                (c.devices - c.allocated).to_string(),
                c.error.clone().unwrap_or_default(),
            ]
        }),
    ));
    text.push_str(
        "\nshared: devices the node reaches through a slice for several nodes (allNodes or a node selector); they count on each such node\n",
    );
    let document = serde_json::to_value(&usage).unwrap_or(Value::Null);
    Some((text, document))
}

/// Every object of one kind in the input.
fn all<T: Clone>(objects: &crate::manifest::Objects<T>) -> Vec<T> {
    objects.values().map(|l| l.object.clone()).collect()
}
