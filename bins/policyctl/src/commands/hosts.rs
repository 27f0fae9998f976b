//! `hosts plan | rebalance --group G [--budget N] | scale-down --group G
//! --remove N`: VM placement over physical hosts from the input's
//! HostInventory (anti-affinity-placement's `hosts` module, A.10–A.14).

use anti_affinity_placement::hosts::CheckedInventory;
use serde_json::json;

use crate::cli::HostsAction;
use crate::commands::CommandError;
use crate::manifest::Inventory;
use crate::output::{Output, fitted_table, or_dash};

/// The single HostInventory of the input, validated.
fn checked(inventory: &Inventory) -> Result<(String, CheckedInventory), CommandError> {
    let mut inventories = inventory.host_inventories.values();
    let (Some(located), None) = (inventories.next(), inventories.next()) else {
        return Err(CommandError::Input(
            if inventory.host_inventories.is_empty() {
                "no HostInventory (apiVersion policyctl/v1alpha1) in the input; give one with -f, or name the ConfigMap holding it with --inventory-config-map NAMESPACE/NAME (see examples/cluster/host-inventory.yaml)".to_owned()
            } else {
                format!(
                    "{} HostInventories in the input ({}); give exactly one",
                    inventory.host_inventories.len(),
                    inventory
                        .host_inventories
                        .values()
                        .map(|l| l.origin.to_string())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            },
        ));
    };
    let origin = located.origin.to_string();
    let checked = CheckedInventory::new(&located.object)
        .map_err(|error| CommandError::Input(format!("{origin}: {error}")))?;
    Ok((origin, checked))
}

/// Runs one `hosts` action.
pub fn run(inventory: &Inventory, action: &HostsAction) -> Result<Output, CommandError> {
    let (origin, checked) = checked(inventory)?;
    let to_json = |value: Result<serde_json::Value, serde_json::Error>| {
        value.map_err(|error| CommandError::Input(error.to_string()))
    };
    match action {
        HostsAction::Plan => {
            let plan = checked.plan();
            let mut text = format!(
                "HostInventory {origin}: {} VM(s) to place\n\n",
                plan.assignments.len()
            );
            text.push_str(&fitted_table(
                &["vm", "host", "reason"],
                plan.assignments.iter().map(|(vm, host)| {
                    [
                        vm.clone(),
                        or_dash(host.as_ref()),
                        plan.unplaced
                            .get(vm)
                            .map(ToString::to_string)
                            .unwrap_or_default(),
                    ]
                }),
            ));
            text.push_str(
                "\nViolations after the plan (VMs beyond one per host, per group or set):\n\n",
            );
            text.push_str(&fitted_table(
                &["group or set", "violations"],
                plan.violations
                    .iter()
                    .map(|(unit, n)| [unit.clone(), n.to_string()]),
            ));
            Ok(Output {
                document: json!({
                    "assignments": plan.assignments,
                    "unplaced": to_json(serde_json::to_value(&plan.unplaced))?,
                    "violations": plan.violations,
                }),
                table: text,
            })
        }
        HostsAction::Rebalance { group, budget } => {
            let plan = checked
                .rebalance(group, *budget)
                .map_err(|error| CommandError::Input(format!("hosts rebalance: {error}")))?;
            let mut text = format!(
                "Group {group}: {} migration(s){}\n\n",
                plan.moves.len(),
                if plan.remaining > 0 {
                    format!(
                        ", {} more needed to reach the target (budget or capacity)",
                        plan.remaining
                    )
                } else {
                    String::new()
                }
            );
            if !plan.moves.is_empty() {
                text.push_str(&fitted_table(
                    &["order", "vm", "from", "to"],
                    plan.moves.iter().enumerate().map(|(i, m)| {
                        [
                            (i + 1).to_string(),
                            m.vm.clone(),
                            m.from.clone(),
                            m.to.clone(),
                        ]
                    }),
                ));
                text.push('\n');
            }
            text.push_str(&fitted_table(
                &["host", "before", "after", "target"],
                plan.counts_before.iter().map(|(host, before)| {
                    [
                        host.clone(),
                        before.to_string(),
                        or_dash(plan.counts_after.get(host)),
                        or_dash(plan.target.get(host)),
                    ]
                }),
            ));
            Ok(Output {
                document: json!({
                    "moves": to_json(serde_json::to_value(&plan.moves))?,
                    "countsBefore": plan.counts_before,
                    "countsAfter": plan.counts_after,
                }),
                table: text,
            })
        }
        HostsAction::ScaleDown { group, remove } => {
            let plan = checked
                .scale_down(group, *remove)
                .map_err(|error| CommandError::Input(format!("hosts scale-down: {error}")))?;
            let mut text = format!(
                "Group {group}: remove {} VM(s); annotate their Machines with {}\n\n",
                plan.victims.len(),
                anti_affinity_placement::hosts::DELETE_MACHINE_ANNOTATION
            );
            text.push_str(&fitted_table(
                &["order", "vm", "host"],
                plan.victims
                    .iter()
                    .enumerate()
                    .map(|(i, v)| [(i + 1).to_string(), v.vm.clone(), or_dash(v.host.as_ref())]),
            ));
            text.push('\n');
            text.push_str(&fitted_table(
                &["host", "after"],
                plan.counts_after
                    .iter()
                    .map(|(host, n)| [host.clone(), n.to_string()]),
            ));
            Ok(Output {
                document: json!({
                    "victims": to_json(serde_json::to_value(&plan.victims))?,
                    "countsAfter": plan.counts_after,
                }),
                table: text,
            })
        }
    }
}

/// Node name → host name from the input's HostInventory (VM names are node
/// names), if there is exactly one.
pub fn host_of_vm(inventory: &Inventory) -> Option<std::collections::BTreeMap<String, String>> {
    let mut inventories = inventory.host_inventories.values();
    match (inventories.next(), inventories.next()) {
        (Some(located), None) => Some(located.object.host_of_vm()),
        _ => None,
    }
}
