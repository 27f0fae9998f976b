//! Properties of VM → host placement, rebalance and scale-down (A.10–A.14).
//! Oracles are independent: a naive greedy (tests/support/naive.rs), replays
//! with their own bookkeeping, and brute-force lower bounds.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use anti_affinity_placement::hosts::{CheckedInventory, HostInventory, Policy};
use proptest::prelude::*;
use support::naive::naive_plan;
use support::*;

fn checked(inv: &HostInventory) -> CheckedInventory {
    CheckedInventory::new(inv).expect("generated inventories are valid")
}

fn req(inv: &HostInventory, vm: &str, res: &str) -> i128 {
    let v = inv.vms.iter().find(|v| v.name == vm).unwrap();
    v.requests.get(res).map_or(0, |a| match a {
        anti_affinity_placement::hosts::Amount::Integer(n) => *n,
        _ => unreachable!(),
    })
}

fn cap(inv: &HostInventory, host: &str, res: &str) -> i128 {
    let h = inv.hosts.iter().find(|h| h.name == host).unwrap();
    h.capacity.get(res).map_or(0, |a| match a {
        anti_affinity_placement::hosts::Amount::Integer(n) => *n,
        _ => unreachable!(),
    })
}

fn unit_and_limit(inv: &HostInventory, group: &str) -> (String, Option<u32>) {
    let g = inv.groups.iter().find(|g| g.name == group).unwrap();
    let unit = g
        .anti_affinity_set
        .clone()
        .unwrap_or_else(|| g.name.clone());
    let k = (g.policy == Policy::AntiAffinity).then(|| g.max_per_host.unwrap_or(1));
    (unit, k)
}

const RES: [&str; 2] = ["cpu", "mem"];

/// Single soft group "g" of `n` VMs (cpu 1..=4) over hosts with the given
/// maintenance flags, each host able to take at least ceil(n/|E|) VMs.
fn arb_spread_case() -> impl Strategy<Value = HostInventory> {
    (
        prop::collection::vec(prop::bool::weighted(0.2), 1..=10),
        0usize..=40,
        prop::collection::vec(1u64..=4, 40),
        0u64..=20,
    )
        .prop_map(|(maint, n, cpus, slack)| {
            let eligible = maint.iter().filter(|m| !**m).count().max(1);
            let ceil = n.div_ceil(eligible) as u64;
            let hosts = maint
                .iter()
                .enumerate()
                .map(|(i, m)| host(&format!("h{i:02}"), ceil * 4 + slack, ceil * 4 + slack, *m))
                .collect();
            let vms = (0..n)
                .map(|i| vm(&format!("vm{i:02}"), "g", cpus[i], cpus[i], None))
                .collect();
            inventory(hosts, vec![soft("g", None)], vms)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn indexed_placement_equals_naive_greedy(inv in arb_inventory(8, 30)) {
        let plan = checked(&inv).plan();
        prop_assert_eq!(plan.assignments, naive_plan(&inv));
    }

    /// SA3: from empty with enough capacity, counts are floor/ceil of n/|E|;
    /// n ≤ |E| → all distinct.
    #[test]
    fn soft_spread_from_empty_is_floor_or_ceil_per_eligible_host(inv in arb_spread_case()) {
        let eligible: Vec<&str> = inv.hosts.iter().filter(|h| !h.maintenance).map(|h| h.name.as_str()).collect();
        prop_assume!(!eligible.is_empty());
        let n = inv.vms.len();
        let after = checked(&inv).plan().apply(&inv);
        let counts = unit_counts(&after, "g");
        let (floor, ceil) = (n / eligible.len(), n.div_ceil(eligible.len()));
        for h in &eligible {
            let c = counts[*h] as usize;
            prop_assert!(c == floor || c == ceil, "host {} has {} not in {{{}, {}}}", h, c, floor, ceil);
        }
        if n <= eligible.len() {
            prop_assert!(counts.values().all(|&c| c <= 1));
        }
    }

    /// SA5: violations equal the unavoidable minimum max(0, n − |E|).
    #[test]
    fn soft_violations_from_empty_equal_the_unavoidable_minimum(inv in arb_spread_case()) {
        let eligible = inv.hosts.iter().filter(|h| !h.maintenance).count();
        prop_assume!(eligible > 0);
        let plan = checked(&inv).plan();
        prop_assert!(plan.unplaced.is_empty());
        prop_assert_eq!(plan.violations["g"], inv.vms.len().saturating_sub(eligible) as u64);
    }

    /// SA4 (and SA1, A.12 reasons): replaying the plan in order, a VM never
    /// lands on host a while an eligible host b with room has c(b) < c(a);
    /// a soft VM is unplaced only if no eligible host fits it; a hard VM only
    /// if every eligible host that fits it is at k.
    #[test]
    fn no_vm_lands_where_an_emptier_eligible_host_had_room(inv in arb_inventory(8, 30)) {
        let plan = checked(&inv).plan();
        let mut used: BTreeMap<(String, &str), i128> = BTreeMap::new();
        let mut counts: BTreeMap<(String, String), u32> = BTreeMap::new();
        for v in &inv.vms {
            if let Some(h) = &v.host {
                for r in RES { *used.entry((h.clone(), r)).or_default() += req(&inv, &v.name, r); }
                *counts.entry((unit_and_limit(&inv, &v.group).0, h.clone())).or_default() += 1;
            }
        }
        for v in inv.vms.iter().filter(|v| v.host.is_none()) {
            let (unit, k) = unit_and_limit(&inv, &v.group);
            let fits = |h: &str, used: &BTreeMap<(String, &str), i128>| RES.iter().all(|r| {
                used.get(&(h.to_owned(), *r)).copied().unwrap_or(0) + req(&inv, &v.name, r) <= cap(&inv, h, r)
            });
            let count = |h: &str, counts: &BTreeMap<(String, String), u32>| counts.get(&(unit.clone(), h.to_owned())).copied().unwrap_or(0);
            let open: Vec<&str> = inv.hosts.iter()
                .filter(|h| !h.maintenance && fits(&h.name, &used) && k.is_none_or(|k| count(&h.name, &counts) < k))
                .map(|h| h.name.as_str()).collect();
            match &plan.assignments[&v.name] {
                None => prop_assert!(open.is_empty(), "{} unplaced although {:?} could take it", v.name, open),
                Some(a) => {
                    prop_assert!(open.contains(&a.as_str()), "{} put on {} which was not open", v.name, a);
                    let ca = count(a, &counts);
                    for b in &open {
                        prop_assert!(count(b, &counts) >= ca, "{} on {} (c={}) while {} had c={}", v.name, a, ca, b, count(b, &counts));
                    }
                    for r in RES { *used.entry((a.clone(), r)).or_default() += req(&inv, &v.name, r); }
                    *counts.entry((unit.clone(), a.clone())).or_default() += 1;
                }
            }
        }
    }

    #[test]
    fn hard_mode_never_exceeds_k_on_a_host_it_places_on(inv in arb_inventory(8, 30)) {
        let plan = checked(&inv).plan();
        let after = plan.apply(&inv);
        for (name, host) in &plan.assignments {
            let Some(host) = host else { continue };
            let v = inv.vms.iter().find(|v| &v.name == name).unwrap();
            let (unit, k) = unit_and_limit(&inv, &v.group);
            if let Some(k) = k {
                let c = unit_counts(&after, &unit)[host];
                prop_assert!(c <= k, "unit {} has {} > k={} on {}", unit, c, k, host);
            }
        }
    }

    #[test]
    fn existing_vms_are_never_moved_and_only_new_vms_are_assigned(inv in arb_inventory(8, 30)) {
        let plan = checked(&inv).plan();
        let after = plan.apply(&inv);
        for (before, after) in inv.vms.iter().zip(&after.vms) {
            if before.host.is_some() {
                prop_assert_eq!(&before.host, &after.host);
                prop_assert!(!plan.assignments.contains_key(&before.name));
            } else {
                prop_assert!(plan.assignments.contains_key(&before.name));
            }
        }
    }

    #[test]
    fn capacity_is_never_exceeded_and_maintenance_hosts_never_chosen(inv in arb_inventory(8, 30)) {
        let plan = checked(&inv).plan();
        let after = plan.apply(&inv);
        let receiving: BTreeSet<&String> = plan.assignments.values().flatten().collect();
        for h in &inv.hosts {
            if !receiving.contains(&h.name) { continue; }
            prop_assert!(!h.maintenance, "VM placed on {} in maintenance", h.name);
            for r in RES {
                let used: i128 = after.vms.iter().filter(|v| v.host.as_ref() == Some(&h.name)).map(|v| req(&inv, &v.name, r)).sum();
                prop_assert!(used <= cap(&inv, &h.name, r), "{} {} used {} > {}", h.name, r, used, cap(&inv, &h.name, r));
            }
        }
    }

    #[test]
    fn violations_are_reported_for_every_unit(inv in arb_inventory(8, 30)) {
        let plan = checked(&inv).plan();
        let after = plan.apply(&inv);
        let mut expected = BTreeMap::new();
        for g in &inv.groups {
            let (unit, k) = unit_and_limit(&inv, &g.name);
            let threshold = k.unwrap_or(1);
            let total: u64 = unit_counts(&after, &unit).values().map(|&c| u64::from(c.saturating_sub(threshold))).sum();
            expected.insert(unit, total);
        }
        prop_assert_eq!(plan.violations, expected);
    }
}

/// Single soft group "g", every VM placed (some on maintenance hosts),
/// roomy hosts.
fn arb_placed_group() -> impl Strategy<Value = HostInventory> {
    prop::collection::vec(prop::bool::weighted(0.2), 1..=7)
        .prop_flat_map(|maint| {
            let nh = maint.len();
            (Just(maint), prop::collection::vec(0..nh, 0..=25))
        })
        .prop_map(|(maint, placed)| {
            let hosts = maint
                .iter()
                .enumerate()
                .map(|(i, m)| host(&format!("h{i}"), 1000, 1000, *m))
                .collect::<Vec<_>>();
            let vms = placed
                .iter()
                .enumerate()
                .map(|(i, h)| vm(&format!("vm{i:02}"), "g", 1, 1, Some(&format!("h{h}"))))
                .collect();
            inventory(hosts, vec![soft("g", None)], vms)
        })
}

/// Brute force: the fewest moves to reach *any* floor/ceil distribution
/// (every subset of eligible hosts of size n mod |E| tried for the ceilings).
fn min_moves_brute_force(counts: &[(u32, bool)]) -> u64 {
    let eligible: Vec<usize> = (0..counts.len()).filter(|&i| counts[i].1).collect();
    let n: u32 = counts.iter().map(|c| c.0).sum();
    let e = eligible.len() as u32;
    let (floor, extra) = (n / e, (n % e) as usize);
    let mut best = u64::MAX;
    for mask in 0u32..(1 << eligible.len()) {
        if mask.count_ones() as usize != extra {
            continue;
        }
        let mut moves = 0u64;
        for (i, &(c, is_eligible)) in counts.iter().enumerate() {
            let t = match eligible.iter().position(|&h| h == i) {
                Some(p) => floor + u32::from(mask & (1 << p) != 0),
                None => {
                    debug_assert!(!is_eligible);
                    0
                }
            };
            moves += u64::from(c.saturating_sub(t));
        }
        best = best.min(moves);
    }
    best
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn rebalance_reaches_floor_ceil_target_with_minimal_moves(inv in arb_placed_group()) {
        let eligible: Vec<&str> = inv.hosts.iter().filter(|h| !h.maintenance).map(|h| h.name.as_str()).collect();
        prop_assume!(!eligible.is_empty());
        let before = unit_counts(&inv, "g");
        let plan = checked(&inv).rebalance("g", None).unwrap();
        let oracle = min_moves_brute_force(&inv.hosts.iter().map(|h| (before[&h.name], !h.maintenance)).collect::<Vec<_>>());
        prop_assert_eq!(plan.moves.len() as u64, oracle);
        prop_assert_eq!(plan.remaining, 0);
        // Replay the moves independently.
        let mut at: BTreeMap<String, String> = inv.vms.iter().map(|v| (v.name.clone(), v.host.clone().unwrap())).collect();
        for m in &plan.moves {
            prop_assert_eq!(&at[&m.vm], &m.from);
            at.insert(m.vm.clone(), m.to.clone());
        }
        let mut after: BTreeMap<String, u32> = inv.hosts.iter().map(|h| (h.name.clone(), 0)).collect();
        for h in at.values() { *after.get_mut(h).unwrap() += 1; }
        prop_assert_eq!(&after, &plan.counts_after);
        let n = inv.vms.len();
        let (floor, ceil) = ((n / eligible.len()) as u32, n.div_ceil(eligible.len()) as u32);
        for h in &inv.hosts {
            let c = after[&h.name];
            if h.maintenance { prop_assert_eq!(c, 0); } else { prop_assert!(c == floor || c == ceil); }
        }
    }

    #[test]
    fn rebalance_respects_budget_and_capacity(inv in arb_inventory(6, 25), budget in 0usize..5) {
        let c = checked(&inv);
        for unit in c.unit_names().map(str::to_owned).collect::<Vec<_>>() {
            let plan = c.rebalance(&unit, Some(budget)).unwrap();
            prop_assert!(plan.moves.len() <= budget);
            let mut moved = inv.clone();
            for m in &plan.moves {
                let v = moved.vms.iter_mut().find(|v| v.name == m.vm).unwrap();
                prop_assert_eq!(v.host.as_ref(), Some(&m.from));
                v.host = Some(m.to.clone());
                // After each move the destination is within capacity and not in maintenance.
                let dest = inv.hosts.iter().find(|h| h.name == m.to).unwrap();
                prop_assert!(!dest.maintenance);
                for r in RES {
                    let used: i128 = moved.vms.iter().filter(|v| v.host.as_ref() == Some(&m.to)).map(|v| req(&inv, &v.name, r)).sum();
                    prop_assert!(used <= cap(&inv, &m.to, r));
                }
            }
            prop_assert_eq!(unit_counts(&moved, &unit), plan.counts_after);
        }
    }

    #[test]
    fn scale_down_minimises_the_resulting_maximum(inv in arb_placed_group(), m in 0usize..30) {
        let n = inv.vms.len();
        let m = m.min(n);
        let before = unit_counts(&inv, "g");
        let plan = checked(&inv).scale_down("g", m).unwrap();
        prop_assert_eq!(plan.victims.len(), m);
        let distinct: BTreeSet<&String> = plan.victims.iter().map(|v| &v.vm).collect();
        prop_assert_eq!(distinct.len(), m);
        let mut after = before.clone();
        for v in &plan.victims {
            let vm = inv.vms.iter().find(|x| x.name == v.vm).unwrap();
            prop_assert_eq!(&vm.host, &v.host);
            *after.get_mut(v.host.as_ref().unwrap()).unwrap() -= 1;
        }
        prop_assert_eq!(&after, &plan.counts_after);
        // Oracle: the smallest t with Σ max(0, c − t) ≤ m.
        let best = (0..=n as u32).find(|&t| before.values().map(|&c| c.saturating_sub(t) as usize).sum::<usize>() <= m).unwrap();
        prop_assert_eq!(after.values().copied().max().unwrap_or(0), best);
    }
}
