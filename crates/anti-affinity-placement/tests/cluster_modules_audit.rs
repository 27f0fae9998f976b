//! The module audit and the count-only rebalance: unit cases and
//! properties with independent oracles (brute force over every placement).

use std::collections::{BTreeMap, BTreeSet};

use anti_affinity_placement::cluster_modules::{
    AuditMember, GroupAudit, GroupId, GroupKind, HostPool, audit_groups, plan_moves,
};
use anti_affinity_placement::hosts::{Host, HostInventory};
use proptest::prelude::*;

fn md(name: &str) -> GroupId {
    GroupId {
        kind: GroupKind::MachineDeployment,
        name: name.to_owned(),
    }
}

fn member(group: &GroupId, machine: &str, host: Option<&str>) -> AuditMember {
    AuditMember {
        group: group.clone(),
        machine: machine.to_owned(),
        vm: machine.to_owned(),
        host: host.map(str::to_owned),
    }
}

fn pool(hosts: &[(&str, bool)]) -> HostPool {
    let mut inventory = HostInventory::new();
    inventory.hosts = hosts
        .iter()
        .map(|(name, maintenance)| Host {
            name: (*name).to_owned(),
            capacity: BTreeMap::new(),
            maintenance: *maintenance,
        })
        .collect();
    HostPool::from_inventory(&inventory, &[])
}

#[test]
fn stacked_after_a_scale_down_is_fixable_and_moves_spread_it() {
    // Four workers were on two hosts while a third was in maintenance;
    // scaled down to three, two still share esx1.
    let g = md("workers");
    let members = [
        member(&g, "w-1", Some("esx1")),
        member(&g, "w-2", Some("esx1")),
        member(&g, "w-3", Some("esx2")),
    ];
    let pool = pool(&[("esx1", false), ("esx2", false), ("esx3", false)]);
    let audits = audit_groups(&members, [], &pool);
    let audit = &audits[&g];
    assert_eq!(audit.hosts["esx1"], ["w-1", "w-2"]);
    assert_eq!(
        (audit.violations, audit.forced, audit.fixable()),
        (1, false, 1)
    );
    let plan = plan_moves(&members, &audits, &pool);
    assert_eq!(plan.moves.len(), 1);
    assert_eq!(
        (plan.moves[0].from.as_str(), plan.moves[0].to.as_str()),
        ("esx1", "esx3")
    );
    assert_eq!(plan.moves[0].vm, "w-1");
}

#[test]
fn the_plan_evens_the_group_out_which_can_take_more_moves_than_fixable_violations() {
    // Five workers, three hosts: four on esx1, one on esx2, none on esx3.
    // Only one violation is fixable (filling esx3; five members on three
    // hosts keep two violations), but the rebalance planner evens the group
    // out to 2/2/1, which takes two moves.
    let g = md("workers");
    let members = [
        member(&g, "w-1", Some("esx1")),
        member(&g, "w-2", Some("esx1")),
        member(&g, "w-3", Some("esx1")),
        member(&g, "w-4", Some("esx1")),
        member(&g, "w-5", Some("esx2")),
    ];
    let pool = pool(&[("esx1", false), ("esx2", false), ("esx3", false)]);
    let audits = audit_groups(&members, [], &pool);
    let audit = &audits[&g];
    assert_eq!(
        (audit.violations, audit.forced, audit.fixable()),
        (3, false, 1)
    );
    let plan = plan_moves(&members, &audits, &pool);
    assert_eq!(plan.moves.len(), 2, "{:?}", plan.moves);
    assert!(
        plan.moves.iter().all(|m| m.from == "esx1"),
        "{:?}",
        plan.moves
    );
    let targets: BTreeSet<&str> = plan.moves.iter().map(|m| m.to.as_str()).collect();
    assert_eq!(targets, BTreeSet::from(["esx2", "esx3"]));
}

#[test]
fn more_members_than_hosts_is_forced_and_plans_nothing() {
    let g = md("workers");
    let members = [
        member(&g, "w-1", Some("esx1")),
        member(&g, "w-2", Some("esx1")),
        member(&g, "w-3", Some("esx2")),
    ];
    let pool = HostPool::observed(&members);
    let audits = audit_groups(&members, [], &pool);
    assert_eq!((audits[&g].violations, audits[&g].forced), (1, true));
    assert!(plan_moves(&members, &audits, &pool).moves.is_empty());
}

#[test]
fn unknown_hosts_and_empty_groups_are_listed_without_violations() {
    let g = md("workers");
    let empty = md("idle");
    let members = [member(&g, "w-1", None), member(&g, "w-2", Some("esx1"))];
    let audits = audit_groups(&members, [empty.clone()], &HostPool::observed(&members));
    assert_eq!(audits[&g].without_host, ["w-1"]);
    assert_eq!(audits[&g].violations, 0);
    assert_eq!(
        audits[&empty],
        GroupAudit {
            hosts: BTreeMap::new(),
            violations: 0,
            forced: false,
            minimum: 0,
            without_host: vec![]
        }
    );
}

#[test]
fn maintenance_hosts_are_not_eligible_but_their_members_count() {
    let g = md("workers");
    let members = [
        member(&g, "w-1", Some("esx1")),
        member(&g, "w-2", Some("esx1")),
    ];
    // Only esx1 is eligible besides the maintenance host esx2: forced.
    let audits = audit_groups(&members, [], &pool(&[("esx1", false), ("esx2", true)]));
    assert!(audits[&g].forced);
    // No eligible host at all: nothing can move, the count is the minimum.
    let audits = audit_groups(&members, [], &pool(&[("esx1", true)]));
    assert_eq!(
        (audits[&g].violations, audits[&g].minimum, audits[&g].forced),
        (1, 1, true)
    );
}

#[test]
fn groups_are_planned_one_after_another_over_the_hosts_the_earlier_moves_leave() {
    // esx1 holds 2 slots, esx2 3. Group a moves a-1 from esx1 to esx2; only
    // because that frees a slot on esx1 can group b then move b-1 there.
    let a = md("a");
    let b = md("b");
    let members = [
        member(&a, "a-1", Some("esx1")),
        member(&a, "a-2", Some("esx1")),
        member(&b, "b-1", Some("esx2")),
        member(&b, "b-2", Some("esx2")),
    ];
    let mut inventory = HostInventory::new();
    inventory.hosts = [("esx1", 2u64), ("esx2", 3)]
        .iter()
        .map(|(name, slots)| Host {
            name: (*name).to_owned(),
            capacity: BTreeMap::from([("slots".to_owned(), (*slots).into())]),
            maintenance: false,
        })
        .collect();
    inventory.vms = ["a-1", "a-2", "b-1", "b-2"]
        .iter()
        .map(|name| anti_affinity_placement::hosts::Vm {
            name: (*name).to_owned(),
            group: "unused".to_owned(),
            requests: BTreeMap::from([("slots".to_owned(), 1u64.into())]),
            host: None,
        })
        .collect();
    let pool = HostPool::from_inventory(&inventory, &members);
    let audits = audit_groups(&members, [], &pool);
    let plan = plan_moves(&members, &audits, &pool);
    assert_eq!(plan.error, None);
    let targets: Vec<(&str, &str)> = plan
        .moves
        .iter()
        .map(|m| (m.vm.as_str(), m.to.as_str()))
        .collect();
    assert_eq!(targets, [("a-1", "esx2"), ("b-1", "esx1")]);
    assert!(plan.incomplete.is_empty());

    // With esx1 holding a single slot, b-1 cannot follow: the plan says so.
    inventory.hosts[0]
        .capacity
        .insert("slots".to_owned(), 1u64.into());
    inventory.hosts[1]
        .capacity
        .insert("slots".to_owned(), 2u64.into());
    let pool = HostPool::from_inventory(&inventory, &members);
    let plan = plan_moves(&members, &audit_groups(&members, [], &pool), &pool);
    assert!(plan.moves.is_empty());
    assert_eq!(
        plan.incomplete.values().copied().collect::<Vec<_>>(),
        [1, 1]
    );
}

/// Fewest violations over every placement of `n` VMs on `hosts` eligible
/// hosts (brute force, independent of the formula in the code).
fn brute_force_minimum(n: usize, hosts: usize) -> u64 {
    if hosts == 0 {
        return u64::MAX;
    }
    let mut best = u64::MAX;
    let total = hosts.pow(n as u32);
    for code in 0..total {
        let mut counts = vec![0u64; hosts];
        let mut c = code;
        for _ in 0..n {
            counts[c % hosts] += 1;
            c /= hosts;
        }
        best = best.min(counts.iter().map(|&x| x.saturating_sub(1)).sum());
    }
    best
}

/// Random groups of at most 5 members over up to 4 hosts, some in
/// maintenance, some members without a host.
fn arb_case() -> impl Strategy<Value = (Vec<AuditMember>, Vec<(String, bool)>)> {
    let hosts = prop::collection::vec(any::<bool>(), 1..5).prop_map(|flags| {
        flags
            .into_iter()
            .enumerate()
            .map(|(i, maintenance)| (format!("esx{i}"), maintenance && i > 0))
            .collect::<Vec<_>>()
    });
    hosts.prop_flat_map(|hosts| {
        let count = hosts.len();
        let members =
            prop::collection::vec((0..2usize, prop::option::weighted(0.9, 0..count)), 0..9)
                .prop_map(move |specs| {
                    specs
                        .into_iter()
                        .enumerate()
                        .map(|(i, (group, host))| {
                            let group = md(["a", "b"][group]);
                            let host = host.map(|h| format!("esx{h}"));
                            member(&group, &format!("m{i}"), host.as_deref())
                        })
                        .collect::<Vec<_>>()
                });
        (members, Just(hosts))
    })
}

fn pool_of(hosts: &[(String, bool)]) -> HostPool {
    let named: Vec<(&str, bool)> = hosts.iter().map(|(n, m)| (n.as_str(), *m)).collect();
    pool(&named)
}

proptest! {
    /// `forced` holds exactly when the violations are the fewest any
    /// placement can have (and there are some).
    #[test]
    fn forced_violations_are_minimal((members, hosts) in arb_case()) {
        let pool = pool_of(&hosts);
        let eligible = hosts.iter().filter(|(_, m)| !m).count();
        for (group, audit) in audit_groups(&members, [], &pool) {
            let placed = members.iter().filter(|m| m.group == group && m.host.is_some()).count();
            let fewest = brute_force_minimum(placed, eligible);
            prop_assert_eq!(audit.forced, audit.violations > 0 && audit.violations <= fewest, "{:?}", audit);
            if audit.forced {
                prop_assert!(audit.violations <= fewest);
            }
        }
    }

    /// After the planned moves, no group has a fixable violation, no VM
    /// lands on a host in maintenance, and only members of groups with
    /// fixable violations move.
    #[test]
    fn a_planned_spread_never_has_a_fixable_violation((members, hosts) in arb_case()) {
        let pool = pool_of(&hosts);
        let audits = audit_groups(&members, [], &pool);
        let plan = plan_moves(&members, &audits, &pool);
        prop_assert!(plan.error.is_none() && plan.incomplete.is_empty());
        let maintenance: BTreeSet<&str> = hosts.iter().filter(|(_, m)| *m).map(|(n, _)| n.as_str()).collect();
        let mut after = members.clone();
        for step in &plan.moves {
            prop_assert!(!maintenance.contains(step.to.as_str()));
            let vm = after.iter_mut().find(|m| m.vm == step.vm).unwrap();
            prop_assert_eq!(vm.host.as_deref(), Some(step.from.as_str()));
            prop_assert!(audits[&vm.group].fixable() > 0);
            vm.host = Some(step.to.clone());
        }
        let eligible = hosts.iter().filter(|(_, m)| !m).count();
        for (group, audit) in audit_groups(&after, [], &pool) {
            let placed = after.iter().filter(|m| m.group == group && m.host.is_some()).count();
            // No placement over the eligible hosts has fewer violations
            // (with no eligible host nothing moved).
            let fewest = if eligible == 0 { audit.violations } else { brute_force_minimum(placed, eligible) };
            prop_assert!(audit.violations <= fewest, "{:?} {:?}", group, audit);
        }
    }
}
