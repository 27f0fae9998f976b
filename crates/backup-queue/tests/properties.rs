//! Properties of the planner, checked against an independent oracle
//! (`common::oracle_sets`) and the reference model of Velero's loop.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use backup_queue::{
    BackupInput, NamespaceMatcher, Phase, QueueEvent, QueueInput, QueueState, StatusChange,
    WaitReason, plan, reference,
};
use common::*;
use proptest::prelude::*;

fn applied(input: &QueueInput) -> (backup_queue::Plan, QueueInput) {
    let p = plan(input);
    let mut after = input.clone();
    p.apply_to(&mut after);
    (p, after)
}

fn phase_of<'a>(input: &'a QueueInput, name: &str) -> &'a BackupInput {
    input.backups.iter().find(|b| b.name == name).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn at_most_concurrent_backups_are_active_after_a_plan(input in any_input()) {
        let limit = input.concurrent_backups.max(1) as usize;
        let before = active_names(&input).len();
        let (p, after) = applied(&input);
        let now = active_names(&after).len();
        let started = p.started().count();
        prop_assert_eq!(now, before + started);
        if started > 0 {
            prop_assert!(now <= limit, "{} active with limit {}", now, limit);
        }
        prop_assert_eq!(p.active as usize, now);
    }

    #[test]
    fn started_backups_share_no_namespace_with_any_active_backup(input in any_input()) {
        let sets = oracle_sets(&input);
        let (p, after) = applied(&input);
        let started: Vec<&str> = p.started().collect();
        for s in &started {
            for a in active_names(&after) {
                if a != *s {
                    prop_assert!(!overlap(&sets, s, &a), "{} started although it overlaps {}", s, a);
                }
            }
        }
    }

    #[test]
    fn no_two_active_backups_share_a_namespace_when_none_did_before(input in any_input()) {
        let sets = oracle_sets(&input);
        let before = active_names(&input);
        let disjoint = |names: &[String]| names.iter().enumerate().all(|(i, a)| names[i + 1..].iter().all(|b| !overlap(&sets, a, b)));
        prop_assume!(disjoint(&before));
        let (_, after) = applied(&input);
        prop_assert!(disjoint(&active_names(&after)));
    }

    #[test]
    fn queue_positions_are_dense_and_unique_after_a_plan(input in any_input()) {
        let (p, after) = applied(&input);
        let order = queue_order(&input);
        let mut positions: Vec<(u32, String)> = after.backups.iter()
            .filter(|b| b.phase == Phase::Queued)
            .map(|b| (b.queue_position, b.name.clone()))
            .collect();
        positions.sort();
        prop_assert!(after.backups.iter().all(|b| b.phase != Phase::New));
        for (i, (pos, _)) in positions.iter().enumerate() {
            prop_assert_eq!(*pos as usize, i + 1);
        }
        // The waiting backups keep their relative queue order.
        let remaining: Vec<&String> = order.iter().filter(|n| phase_of(&after, n).phase == Phase::Queued).collect();
        let by_position: Vec<&String> = positions.iter().map(|(_, n)| n).collect();
        prop_assert_eq!(remaining, by_position);
        prop_assert_eq!(p.waiting.len(), positions.len());
    }

    #[test]
    fn a_queued_backup_never_starts_before_an_earlier_queued_backup_it_overlaps(input in any_input()) {
        let sets = oracle_sets(&input);
        let (p, after) = applied(&input);
        let order = queue_order(&input);
        let started: BTreeSet<&str> = p.started().collect();
        for (i, b) in order.iter().enumerate() {
            if !started.contains(b.as_str()) {
                continue;
            }
            for e in &order[..i] {
                if phase_of(&after, e).phase == Phase::Queued {
                    prop_assert!(!overlap(&sets, b, e), "{} started before earlier overlapping {}", b, e);
                }
            }
        }
    }

    #[test]
    fn planning_the_applied_plan_writes_nothing(input in any_input()) {
        let (p, after) = applied(&input);
        let again = plan(&after);
        prop_assert!(again.is_noop(), "second plan writes {:?}", again.writes);
        prop_assert_eq!(again.waiting, p.waiting, "explanations are stable once applied");
    }

    #[test]
    fn writes_only_planning_writes_exactly_what_explained_planning_writes(input in any_input()) {
        // `plan_writes` stops checking overlaps once capacity is full;
        // `plan` checks every backup to explain it.
        let state = QueueState::from_input(&input);
        let cheap = state.plan_writes();
        let full = state.plan();
        prop_assert_eq!(cheap.writes, full.writes);
        prop_assert_eq!(cheap.active, full.active);
        prop_assert_eq!(cheap.invalid, full.invalid);
    }

    #[test]
    fn writes_carry_the_snapshot_resource_version_and_starts_come_first(input in any_input()) {
        let p = plan(&input);
        let rv: HashMap<&str, &Option<String>> = input.backups.iter().map(|b| (b.name.as_str(), &b.resource_version)).collect();
        let mut seen_position_write = false;
        let mut last_position = 0;
        let mut names = BTreeSet::new();
        for w in &p.writes {
            prop_assert_eq!(w.resource_version.as_deref(), rv[&*w.backup].as_deref());
            prop_assert!(names.insert(w.backup.clone()), "one write per backup");
            if w.change == StatusChange::Start {
                prop_assert!(!seen_position_write, "dequeues precede position writes");
            } else {
                seen_position_write = true;
                prop_assert!(w.change.queue_position() > last_position, "position writes ascend");
                last_position = w.change.queue_position();
            }
        }
    }

    #[test]
    fn explanations_name_a_real_reason(input in any_input()) {
        let sets = oracle_sets(&input);
        let (p, after) = applied(&input);
        let order = queue_order(&input);
        let rank = |n: &str| order.iter().position(|o| o == n).unwrap();
        for w in &p.waiting {
            match &w.reason {
                WaitReason::OverlapsActive { backup, phase, namespaces } => {
                    prop_assert!(phase_of(&after, backup).phase.is_active());
                    prop_assert_eq!(phase_of(&after, backup).phase, *phase);
                    prop_assert!(overlap(&sets, &w.backup, backup));
                    let shared: BTreeSet<_> = sets[&*w.backup].intersection(&sets[&**backup]).cloned().collect();
                    prop_assert_eq!(namespaces.total, shared.len());
                    prop_assert_eq!(namespaces.first.iter().map(|n| n.to_string()).collect::<Vec<_>>(), shared.iter().take(5).cloned().collect::<Vec<_>>());
                }
                WaitReason::BehindEarlier { backup, position, .. } => {
                    prop_assert!(rank(backup) < rank(&w.backup));
                    prop_assert_eq!(phase_of(&after, backup).phase, Phase::Queued);
                    prop_assert_eq!(phase_of(&after, backup).queue_position, *position);
                    prop_assert!(overlap(&sets, &w.backup, backup));
                    // No active backup overlaps it (that reason comes first).
                    for a in active_names(&after) {
                        prop_assert!(!overlap(&sets, &w.backup, &a));
                    }
                }
                WaitReason::CapacityFull { limit } => {
                    prop_assert_eq!(*limit, input.concurrent_backups.max(1));
                    prop_assert!(active_names(&after).len() as u32 >= *limit);
                    for a in active_names(&after) {
                        prop_assert!(!overlap(&sets, &w.backup, &a));
                    }
                    for e in &order[..rank(&w.backup)] {
                        if phase_of(&after, e).phase == Phase::Queued {
                            prop_assert!(!overlap(&sets, &w.backup, e));
                        }
                    }
                }
                other => prop_assert!(false, "unexpected reason {other:?}"),
            }
        }
    }

    #[test]
    fn final_phases_agree_with_velero_reference_model(input in velero_input()) {
        let velero = reference::run_to_fixed_point(&input);
        let (_, after) = applied(&input);
        for r in &velero.backups {
            let ours = phase_of(&after, &r.name);
            prop_assert_eq!(ours.phase, r.phase, "phase of {}", r.name);
        }
        // Same queue order for the backups left waiting.
        let mut theirs: Vec<_> = velero.backups.iter().filter(|r| r.phase == Phase::Queued).map(|r| (r.queue_position, r.name.clone())).collect();
        theirs.sort();
        let mut ours: Vec<_> = after.backups.iter().filter(|b| b.phase == Phase::Queued).map(|b| (b.queue_position, b.name.clone())).collect();
        ours.sort();
        let names = |v: &[(u32, String)]| v.iter().map(|(_, n)| n.clone()).collect::<Vec<_>>();
        prop_assert_eq!(names(&theirs), names(&ours));
    }

    #[test]
    fn matcher_resolution_agrees_with_velero_resolution_for_valid_patterns(f in filter(true, false), cluster in cluster()) {
        let b = backup("x", &[], Phase::Queued, 1, 0);
        let b = BackupInput { namespaces: f.clone(), ..b };
        let velero = reference::velero_namespaces(&b, &cluster);
        let ours: Vec<String> = match NamespaceMatcher::compile(&f) {
            Ok(m) => m.resolve(cluster.iter().map(String::as_str)).into_iter().map(str::to_owned).collect(),
            Err(_) => Vec::new(),
        };
        prop_assert_eq!(ours, velero);
    }

    #[test]
    fn every_backup_eventually_starts_when_backups_finish_one_by_one(
        input in any_input(),
        picks in proptest::collection::vec(0..8usize, 40),
    ) {
        let waiting: BTreeSet<String> = input.backups.iter().filter(|b| b.phase.is_waiting()).map(|b| b.name.clone()).collect();
        let mut state = input.clone();
        let mut started = BTreeSet::new();
        for step in 0..40 {
            // Sets change as literal-only namespaces stop being named.
            let sets = oracle_sets(&state);
            let order = queue_order(&state);
            let p = plan(&state);
            p.apply_to(&mut state);
            for (i, b) in order.iter().enumerate() {
                if p.started().any(|s| s == b) {
                    // Nothing earlier and overlapping is still waiting.
                    for e in &order[..i] {
                        prop_assert!(
                            phase_of(&state, e).phase != Phase::Queued || !overlap(&sets, b, e),
                            "{} overtook {}", b, e
                        );
                    }
                    started.insert(b.clone());
                }
            }
            let active = active_names(&state);
            if active.is_empty() {
                break;
            }
            let done = &active[picks[step] % active.len()];
            state.backups.iter_mut().find(|b| &b.name == done).unwrap().phase = Phase::Other;
        }
        prop_assert_eq!(started, waiting);
    }
}

// ------------------------------------------------- incremental == full

#[derive(Debug, Clone)]
enum Op {
    Upsert(usize, backup_queue::NamespaceFilter, Phase, u32, i64),
    Delete(usize),
    AddNs(usize),
    DeleteNs(usize),
    Limit(u32),
}

const NS_EVENTS: &[&str] = &[
    "app-a", "app-b", "app-z", "db-a", "web", "new-a", "logs", "web2",
];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..8usize, filter(true, true), phase(), 0..5u32, 0..4i64)
            .prop_map(|(i, f, ph, pos, c)| Op::Upsert(i, f, ph, pos, c)),
        1 => (0..8usize).prop_map(Op::Delete),
        2 => (0..NS_EVENTS.len()).prop_map(Op::AddNs),
        2 => (0..NS_EVENTS.len()).prop_map(Op::DeleteNs),
        1 => (0..4u32).prop_map(Op::Limit),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn incremental_state_agrees_with_full_planning_after_every_event(
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let mut state = QueueState::new(2);
        let mut backups: BTreeMap<usize, BackupInput> = BTreeMap::new();
        let mut cluster: BTreeSet<&str> = BTreeSet::new();
        let mut limit = 2;
        for op in ops {
            let event = match op {
                Op::Upsert(i, f, phase, pos, created) => {
                    let b = BackupInput {
                        name: format!("b{i}"),
                        resource_version: Some(format!("{pos}{created}")),
                        phase,
                        queue_position: pos,
                        created: ts(created),
                        namespaces: f,
                    };
                    backups.insert(i, b.clone());
                    QueueEvent::UpsertBackup(b)
                }
                Op::Delete(i) => {
                    backups.remove(&i);
                    QueueEvent::DeleteBackup(format!("b{i}"))
                }
                Op::AddNs(i) => {
                    cluster.insert(NS_EVENTS[i]);
                    QueueEvent::AddNamespace(NS_EVENTS[i].to_owned())
                }
                Op::DeleteNs(i) => {
                    cluster.remove(NS_EVENTS[i]);
                    QueueEvent::DeleteNamespace(NS_EVENTS[i].to_owned())
                }
                Op::Limit(n) => {
                    limit = n;
                    QueueEvent::SetConcurrency(n)
                }
            };
            state.apply(event);
            let snapshot = QueueInput {
                backups: backups.values().cloned().collect(),
                cluster_namespaces: cluster.iter().map(|s| s.to_string()).collect(),
                concurrent_backups: limit,
            };
            let full = plan(&snapshot);
            prop_assert_eq!(&state.plan(), &full);
            let cheap = state.plan_writes();
            prop_assert_eq!(&cheap.writes, &full.writes);
            prop_assert!(cheap.waiting.is_empty());
        }
    }
}
