//! Violations: VMs beyond the ideal spread (soft: one per host, SA5) or
//! beyond `maxPerHost` (hard), per anti-affinity unit. Always reported, for
//! every unit, zero included.

use std::collections::BTreeMap;

use super::model::CheckedInventory;

/// `Σ_h max(0, c_U(h) − threshold)` for every unit `U`, counted over all
/// hosts (hosts in maintenance included), keyed by unit name.
pub(crate) fn violations(
    inventory: &CheckedInventory,
    host_of: &[Option<usize>],
) -> BTreeMap<String, u64> {
    let mut counts: BTreeMap<(usize, usize), u32> = BTreeMap::new();
    for (vm, host) in inventory.vms.iter().zip(host_of) {
        if let Some(h) = host {
            *counts.entry((vm.unit, *h)).or_default() += 1;
        }
    }
    let mut out: BTreeMap<String, u64> = inventory
        .units
        .iter()
        .map(|u| (u.name.clone(), 0))
        .collect();
    for ((unit, _), count) in counts {
        let unit = &inventory.units[unit];
        let excess = u64::from(count.saturating_sub(unit.limit.threshold()));
        if let Some(total) = out.get_mut(&unit.name) {
            *total += excess;
        }
    }
    out
}

impl CheckedInventory {
    /// Violations of the inventory as it stands (before any plan).
    pub fn violations(&self) -> BTreeMap<String, u64> {
        violations(self, &self.current_hosts())
    }
}
