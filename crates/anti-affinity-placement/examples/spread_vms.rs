//! Spread the example CAPV-like inventory: plan, then rebalance and
//! scale-down advice on the planned state.
//!
//! `cargo run -p anti-affinity-placement --example spread_vms [INVENTORY.yaml]`

use anti_affinity_placement::hosts::{CheckedInventory, DELETE_MACHINE_ANNOTATION, HostInventory};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let text = match std::env::args().nth(1) {
        Some(path) => std::fs::read_to_string(path)?,
        None => include_str!("inventory.yaml").to_owned(),
    };
    let inventory: HostInventory = serde_saphyr::from_str(&text)?;
    let checked = CheckedInventory::new(&inventory)?;

    let plan = checked.plan();
    println!("# plan\n{}", serde_json::to_string_pretty(&plan)?);

    // Rebalance and scale down the cluster as it is once the plan is carried out.
    let placed = CheckedInventory::new(&plan.apply(&inventory))?;
    let rebalance = placed.rebalance("prod-md-0", Some(5))?;
    println!(
        "# rebalance prod-md-0 (budget 5 moves)\n{}",
        serde_json::to_string_pretty(&rebalance)?
    );

    let scale_down = placed.scale_down("prod-md-0", 2)?;
    println!(
        "# scale-down prod-md-0 by 2\n{}",
        serde_json::to_string_pretty(&scale_down)?
    );
    for machine in scale_down.machines_to_annotate() {
        println!("kubectl annotate machine {machine} {DELETE_MACHINE_ANNOTATION}=true");
    }
    Ok(())
}
