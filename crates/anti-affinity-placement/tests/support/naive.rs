//! Straightforward reference for SA2 greedy placement, written independently
//! of the library: every VM scans every host and recomputes the host's free
//! share. O(VMs × hosts × resources). Used as the test oracle and as the
//! benchmark baseline. Assumes a valid inventory with integer amounts.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use anti_affinity_placement::hosts::{Amount, HostInventory, Policy};

fn int(amount: &Amount) -> i128 {
    match amount {
        Amount::Integer(n) => *n,
        other => panic!("naive oracle supports integer amounts only, got {other:?}"),
    }
}

/// Greedy placement of every VM without a host, in document order:
/// VM name → chosen host name (None = unplaced).
pub fn naive_plan(inventory: &HostInventory) -> BTreeMap<String, Option<String>> {
    let mut resources: Vec<&String> = inventory
        .hosts
        .iter()
        .flat_map(|h| h.capacity.keys())
        .chain(inventory.vms.iter().flat_map(|v| v.requests.keys()))
        .collect();
    resources.sort();
    resources.dedup();
    let vector = |m: &BTreeMap<String, Amount>| -> Vec<i128> {
        resources.iter().map(|r| m.get(*r).map_or(0, int)).collect()
    };
    let mut hosts: Vec<_> = inventory.hosts.iter().collect();
    hosts.sort_by(|a, b| a.name.cmp(&b.name));
    let host_pos: BTreeMap<&str, usize> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| (h.name.as_str(), i))
        .collect();
    let capacity: Vec<Vec<i128>> = hosts.iter().map(|h| vector(&h.capacity)).collect();
    let mut free = capacity.clone();

    let unit_of = |group: &str| -> (String, Option<u32>) {
        let g = inventory
            .groups
            .iter()
            .find(|g| g.name == group)
            .expect("valid group");
        let unit = g
            .anti_affinity_set
            .clone()
            .unwrap_or_else(|| g.name.clone());
        let limit = match g.policy {
            Policy::SoftAntiAffinity => None,
            Policy::AntiAffinity => Some(g.max_per_host.unwrap_or(1)),
        };
        (unit, limit)
    };
    // unit → per-host count
    let mut counts: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for vm in &inventory.vms {
        if let Some(h) = &vm.host {
            let h = host_pos[h.as_str()];
            let req = vector(&vm.requests);
            for (f, r) in free[h].iter_mut().zip(&req) {
                *f -= r;
            }
            counts
                .entry(unit_of(&vm.group).0)
                .or_insert_with(|| vec![0; hosts.len()])[h] += 1;
        }
    }

    // share = min over resources with capacity > 0 of max(free,0)/capacity; 1 if none.
    let share = |free: &[i128], cap: &[i128]| -> (i128, i128) {
        let mut best = (1, 1);
        for (f, c) in free.iter().zip(cap) {
            if *c > 0 {
                let f = (*f).clamp(0, *c);
                if f * best.1 < best.0 * c {
                    best = (f, *c);
                }
            }
        }
        best
    };

    let mut out = BTreeMap::new();
    for vm in &inventory.vms {
        if vm.host.is_some() {
            continue;
        }
        let (unit, limit) = unit_of(&vm.group);
        let req = vector(&vm.requests);
        let unit_counts = counts.entry(unit).or_insert_with(|| vec![0; hosts.len()]);
        let mut best: Option<(u32, (i128, i128), usize)> = None;
        for h in 0..hosts.len() {
            if hosts[h].maintenance || !free[h].iter().zip(&req).all(|(f, r)| r <= f) {
                continue;
            }
            let c = unit_counts[h];
            if limit.is_some_and(|k| c >= k) {
                continue;
            }
            let s = share(&free[h], &capacity[h]);
            let better = match best {
                None => true,
                Some((bc, bs, _)) => match c.cmp(&bc) {
                    Ordering::Less => true,
                    Ordering::Greater => false,
                    // larger share wins; equal share keeps the earlier (smaller) name
                    Ordering::Equal => s.0 * bs.1 > bs.0 * s.1,
                },
            };
            if better {
                best = Some((c, s, h));
            }
        }
        match best {
            Some((_, _, h)) => {
                for (f, r) in free[h].iter_mut().zip(&req) {
                    *f -= r;
                }
                unit_counts[h] += 1;
                out.insert(vm.name.clone(), Some(hosts[h].name.clone()));
            }
            None => {
                out.insert(vm.name.clone(), None);
            }
        }
    }
    out
}
