//! Hand-written cases for the rules the properties do not pin down: sets
//! (A.11), hard reasons (A.12), tie-breaks, rebalance blocked by capacity,
//! scale-down order (A.14), quantities and round trips.

mod support;

use anti_affinity_placement::hosts::{Amount, CheckedInventory, HostInventory, UnplacedReason};
use support::*;

fn plan(inv: &HostInventory) -> anti_affinity_placement::hosts::PlacementPlan {
    CheckedInventory::new(inv).unwrap().plan()
}

#[test]
fn set_members_are_counted_together() {
    // md-a already on h0 and h1; md-b (same set) must go to h2 first.
    let inv = inventory(
        vec![
            host("h0", 10, 10, false),
            host("h1", 10, 10, false),
            host("h2", 1, 1, false),
        ],
        vec![soft("md-a", Some("pool")), soft("md-b", Some("pool"))],
        vec![
            vm("a0", "md-a", 1, 1, Some("h0")),
            vm("a1", "md-a", 1, 1, Some("h1")),
            vm("b0", "md-b", 1, 1, None),
        ],
    );
    let p = plan(&inv);
    assert_eq!(p.assignments["b0"].as_deref(), Some("h2"));
    assert_eq!(p.violations.get("pool"), Some(&0));
    assert!(!p.violations.contains_key("md-a"));
}

#[test]
fn groups_outside_a_set_are_independent() {
    let inv = inventory(
        vec![host("h0", 10, 10, false), host("h1", 10, 10, false)],
        vec![soft("md-a", None), soft("md-b", None)],
        vec![
            vm("a0", "md-a", 1, 1, Some("h0")),
            vm("b0", "md-b", 1, 1, None),
        ],
    );
    // md-b ignores md-a; h1 has more free share (h0 lost 10%), so h1 — and
    // with equal shares it would be h0 by name.
    assert_eq!(plan(&inv).assignments["b0"].as_deref(), Some("h1"));
}

#[test]
fn ties_go_to_most_free_share_then_name() {
    let inv = inventory(
        vec![
            host("b", 8, 8, false),
            host("a", 8, 8, false),
            host("c", 16, 16, false),
        ],
        vec![soft("g", None), soft("other", None)],
        vec![
            vm("x", "other", 4, 4, Some("c")),
            vm("v0", "g", 1, 1, None),
            vm("v1", "g", 1, 1, None),
        ],
    );
    let p = plan(&inv);
    // a, b: share 1; c: 12/16. Equal shares → name: v0 → a, then v1 → b.
    assert_eq!(p.assignments["v0"].as_deref(), Some("a"));
    assert_eq!(p.assignments["v1"].as_deref(), Some("b"));
}

#[test]
fn hard_unplaced_reasons_distinguish_k_from_room_and_maintenance() {
    let inv = inventory(
        vec![
            host("h0", 4, 4, false),
            host("h1", 1, 1, false),
            host("h2", 100, 100, true),
        ],
        vec![hard("cp", 1, None)],
        vec![vm("cp0", "cp", 2, 2, None), vm("cp1", "cp", 2, 2, None)],
    );
    let p = plan(&inv);
    assert_eq!(p.assignments["cp0"].as_deref(), Some("h0"));
    assert_eq!(
        p.unplaced["cp1"],
        UnplacedReason::AtMaxPerHost {
            unit: "cp".into(),
            max_per_host: 1,
            hosts_with_room: 1
        }
    );
    let all_maintenance = inventory(
        vec![host("h0", 4, 4, true)],
        vec![soft("g", None)],
        vec![vm("v", "g", 1, 1, None)],
    );
    assert_eq!(
        plan(&all_maintenance).unplaced["v"],
        UnplacedReason::NoEligibleHost { in_maintenance: 1 }
    );
    let full = inventory(
        vec![host("h0", 1, 1, false)],
        vec![soft("g", None)],
        vec![vm("v", "g", 2, 1, None)],
    );
    assert_eq!(
        plan(&full).unplaced["v"],
        UnplacedReason::NoRoom { eligible: 1 }
    );
}

#[test]
fn hard_k_two_allows_two_per_host_and_reports_excess_of_existing_vms() {
    let inv = inventory(
        vec![host("h0", 10, 10, false), host("h1", 10, 10, false)],
        vec![hard("g", 2, None)],
        vec![
            vm("e0", "g", 1, 1, Some("h0")),
            vm("e1", "g", 1, 1, Some("h0")),
            vm("e2", "g", 1, 1, Some("h0")),
            vm("n0", "g", 1, 1, None),
            vm("n1", "g", 1, 1, None),
            vm("n2", "g", 1, 1, None),
        ],
    );
    let p = plan(&inv);
    assert_eq!(p.assignments["n0"].as_deref(), Some("h1"));
    assert_eq!(p.assignments["n1"].as_deref(), Some("h1"));
    assert_eq!(p.assignments["n2"], None);
    // Three existing VMs on h0 with k = 2: one beyond k, reported, not moved.
    assert_eq!(p.violations["g"], 1);
}

#[test]
fn rebalance_blocked_by_capacity_reports_remaining_moves() {
    let inv = inventory(
        vec![host("h0", 10, 10, false), host("h1", 0, 0, false)],
        vec![soft("g", None)],
        vec![
            vm("a", "g", 1, 1, Some("h0")),
            vm("b", "g", 1, 1, Some("h0")),
        ],
    );
    let r = CheckedInventory::new(&inv)
        .unwrap()
        .rebalance("g", None)
        .unwrap();
    assert!(r.moves.is_empty());
    assert_eq!(r.remaining, 1);
    assert_eq!(r.target["h1"], 1);
}

#[test]
fn rebalance_budget_takes_the_most_urgent_moves_first() {
    // h2 in maintenance is evacuated before the stack on h0 is thinned.
    let inv = inventory(
        vec![
            host("h0", 10, 10, false),
            host("h1", 10, 10, false),
            host("h2", 10, 10, true),
        ],
        vec![soft("g", None)],
        vec![
            vm("a", "g", 1, 1, Some("h0")),
            vm("b", "g", 1, 1, Some("h0")),
            vm("c", "g", 1, 1, Some("h0")),
            vm("d", "g", 1, 1, Some("h2")),
        ],
    );
    let r = CheckedInventory::new(&inv)
        .unwrap()
        .rebalance("g", Some(1))
        .unwrap();
    assert_eq!(r.moves.len(), 1);
    assert_eq!(
        (
            r.moves[0].vm.as_str(),
            r.moves[0].from.as_str(),
            r.moves[0].to.as_str()
        ),
        ("d", "h2", "h1")
    );
    assert_eq!(r.remaining, 1);
}

#[test]
fn scale_down_takes_unplaced_first_then_fullest_host_and_last_name() {
    let inv = inventory(
        vec![host("h0", 10, 10, false), host("h1", 10, 10, false)],
        vec![soft("g", None)],
        vec![
            vm("g-a", "g", 1, 1, Some("h0")),
            vm("g-b", "g", 1, 1, Some("h0")),
            vm("g-c", "g", 1, 1, Some("h1")),
            vm("g-pending", "g", 1, 1, None),
        ],
    );
    let s = CheckedInventory::new(&inv)
        .unwrap()
        .scale_down("g", 2)
        .unwrap();
    let victims: Vec<(&str, Option<&str>)> = s
        .victims
        .iter()
        .map(|v| (v.vm.as_str(), v.host.as_deref()))
        .collect();
    assert_eq!(victims, vec![("g-pending", None), ("g-b", Some("h0"))]);
    assert_eq!(
        s.machines_to_annotate().collect::<Vec<_>>(),
        vec!["g-pending", "g-b"]
    );
}

#[test]
fn scale_down_in_a_set_ranks_hosts_by_the_set_count() {
    // md-b has one VM on each host, but h1 is fuller for the set.
    let inv = inventory(
        vec![host("h0", 10, 10, false), host("h1", 10, 10, false)],
        vec![soft("md-a", Some("pool")), soft("md-b", Some("pool"))],
        vec![
            vm("a0", "md-a", 1, 1, Some("h1")),
            vm("b0", "md-b", 1, 1, Some("h0")),
            vm("b1", "md-b", 1, 1, Some("h1")),
        ],
    );
    let s = CheckedInventory::new(&inv)
        .unwrap()
        .scale_down("md-b", 1)
        .unwrap();
    assert_eq!(s.victims[0].vm, "b1");
}

#[test]
fn quantity_strings_are_accepted_as_capacity() {
    let mut inv = inventory(
        vec![host("h0", 1, 1, false)],
        vec![soft("g", None)],
        vec![vm("v", "g", 1, 1000, None)],
    );
    inv.hosts[0]
        .capacity
        .insert("mem".into(), Amount::Text("1k".into()));
    assert_eq!(plan(&inv).assignments["v"].as_deref(), Some("h0"));
}

#[test]
fn applied_plan_round_trips_through_yaml() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/inventory.yaml"
    ))
    .unwrap();
    let inv: HostInventory = serde_saphyr::from_str(&text).unwrap();
    let placed = plan(&inv).apply(&inv);
    let yaml = serde_saphyr::to_string(&placed).unwrap();
    let back: HostInventory = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(back, placed);
    // Once everything is placed, planning again assigns nothing.
    let again = plan(&back);
    assert!(again.assignments.values().all(|h| h.is_none()));
}
