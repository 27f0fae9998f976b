//! The scheduling-gate queue (`plan_lifts`, `plan_exact_lifts`) against
//! oracles written from the rules: count the loads in `Accepted`/`Prepared`
//! without a gated pod, sort the gated ones by creation, take what is free.

use std::collections::BTreeSet;

use jiff::Timestamp;
use load_soothe::{
    Ledger, LedgerEntry, LedgerSnapshot, Limit, Load, LoadId, LoadKind, MoverPod, Phase, PodRef,
    plan_exact_lifts, plan_lifts,
};
use proptest::prelude::*;

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).unwrap()
}

fn id(i: usize) -> LoadId {
    LoadId::new(
        LoadKind::ALL[i % 4],
        "velero",
        format!("l{i:03}"),
        format!("u{i}"),
    )
}

fn load(i: usize, phase: Phase, created: i64, label: bool) -> Load {
    Load {
        id: id(i),
        phase,
        expose_on_going: label,
        cancel_requested: false,
        created: t(created),
        resource_version: Some("1".into()),
        handled_here: true,
    }
}

fn pod(i: usize, gated: bool) -> MoverPod {
    MoverPod {
        namespace: "velero".into(),
        name: format!("l{i:03}"),
        load: id(i),
        gated,
    }
}

fn limit(n: u64) -> Limit {
    Limit::new(n).unwrap()
}

fn names(pods: &[PodRef]) -> Vec<&str> {
    pods.iter().map(|p| p.name.as_str()).collect()
}

#[test]
fn the_oldest_gated_loads_are_lifted_while_places_are_free() {
    let loads = vec![
        load(0, Phase::Prepared, 0, true),
        load(1, Phase::Accepted, 30, true),
        load(2, Phase::Accepted, 10, true),
        load(3, Phase::Accepted, 20, true),
    ];
    let pods = vec![pod(0, false), pod(1, true), pod(2, true), pod(3, true)];
    let plan = plan_lifts(limit(3), &loads, &pods);
    assert_eq!(plan.in_preparation, 1);
    assert_eq!(names(&plan.lift), ["l002", "l003"]);
    assert_eq!(plan.waiting.len(), 1);
    assert_eq!(plan.waiting[0].0.name, "l001");
}

#[test]
fn a_finished_load_that_keeps_the_expose_label_takes_no_place() {
    // A third-party mover left `velero.io/expose-on-going` on a Completed load.
    let loads = vec![
        load(0, Phase::Completed, 0, true),
        load(1, Phase::Accepted, 10, true),
    ];
    let pods = vec![pod(0, false), pod(1, true)];
    let plan = plan_lifts(limit(1), &loads, &pods);
    assert_eq!(plan.in_preparation, 0);
    assert_eq!(names(&plan.lift), ["l001"]);
}

#[test]
fn a_gated_pod_of_a_cancelled_load_is_lifted_without_taking_a_place() {
    let mut cancelled = load(1, Phase::Accepted, 0, true);
    cancelled.cancel_requested = true;
    let loads = vec![
        load(0, Phase::Prepared, 0, true),
        cancelled,
        load(2, Phase::Accepted, 5, true),
    ];
    let pods = vec![pod(0, false), pod(1, true), pod(2, true)];
    let plan = plan_lifts(limit(1), &loads, &pods);
    assert_eq!(names(&plan.lift), ["l001"]);
    assert_eq!(plan.waiting.len(), 1);
}

#[test]
fn a_pod_whose_load_is_not_seen_waits_and_an_ungated_one_counts() {
    let loads = vec![load(2, Phase::Accepted, 0, true)];
    // l000 gated, load unseen: waits. l001 ungated, load unseen: counted.
    let pods = vec![pod(0, true), pod(1, false), pod(2, true)];
    let plan = plan_lifts(limit(2), &loads, &pods);
    assert_eq!(plan.in_preparation, 1);
    assert_eq!(names(&plan.lift), ["l002"]);
    assert_eq!(plan.waiting[0].0.name, "l000");
}

#[test]
fn exact_mode_writes_the_ledger_before_it_lifts() {
    let loads = vec![
        load(0, Phase::Accepted, 0, true),
        load(1, Phase::Accepted, 1, true),
    ];
    let pods = vec![pod(0, true), pod(1, true)];
    let empty = LedgerSnapshot {
        resource_version: Some("7".into()),
        ledger: Ledger::empty(),
    };
    let first = plan_exact_lifts(
        limit(1),
        &empty,
        &loads,
        &pods,
        &BTreeSet::new(),
        "r1",
        t(100),
    );
    assert!(first.lift.is_empty(), "nothing is lifted before the write");
    let write = first.write.unwrap();
    assert_eq!(write.admitted, vec![id(0)]);
    assert_eq!(write.expected_resource_version.as_deref(), Some("7"));
    let written = LedgerSnapshot {
        resource_version: Some("8".into()),
        ledger: write.ledger,
    };
    let second = plan_exact_lifts(
        limit(1),
        &written,
        &loads,
        &pods,
        &BTreeSet::new(),
        "r1",
        t(101),
    );
    assert_eq!(names(&second.lift), ["l000"]);
    assert_eq!(second.write, None);
}

#[test]
fn exact_mode_frees_an_entry_once_its_load_is_past_preparation() {
    let loads = vec![
        load(0, Phase::InProgress, 0, false),
        load(1, Phase::Accepted, 1, true),
    ];
    let pods = vec![pod(0, false), pod(1, true)];
    let snapshot = LedgerSnapshot {
        resource_version: Some("3".into()),
        ledger: Ledger {
            admitted: vec![LedgerEntry {
                id: id(0),
                admitted_at: t(0),
                admitted_by: "r2".into(),
            }],
            ..Ledger::empty()
        },
    };
    let plan = plan_exact_lifts(
        limit(1),
        &snapshot,
        &loads,
        &pods,
        &BTreeSet::new(),
        "r1",
        t(5),
    );
    let write = plan.write.unwrap();
    assert_eq!(write.removed, vec![id(0)]);
    assert_eq!(write.admitted, vec![id(1)]);
}

/// A cluster: loads with a phase, a creation second, and a pod that is
/// gated or not (or no pod).
fn cluster() -> impl Strategy<Value = (Vec<Load>, Vec<MoverPod>)> {
    let phase = prop::sample::select(Phase::ALL.to_vec());
    prop::collection::vec((phase, 0i64..20, any::<bool>(), 0u8..3), 0..24).prop_map(|spec| {
        let mut loads = Vec::new();
        let mut pods = Vec::new();
        for (i, (phase, created, label, pod_state)) in spec.into_iter().enumerate() {
            loads.push(load(i, phase, created, label));
            match pod_state {
                0 => {}
                1 => pods.push(pod(i, true)),
                _ => pods.push(pod(i, false)),
            }
        }
        (loads, pods)
    })
}

/// The oracle's count: loads in Accepted/Prepared without a gated pod.
fn oracle_in_preparation(loads: &[Load], pods: &[MoverPod], lifted: &BTreeSet<String>) -> u64 {
    loads
        .iter()
        .filter(|l| matches!(l.phase, Phase::Accepted | Phase::Prepared))
        .filter(|l| {
            !pods
                .iter()
                .any(|p| p.load == l.id && p.gated && !lifted.contains(&p.name))
        })
        .count() as u64
}

proptest! {
    #[test]
    fn lifting_never_raises_the_count_above_the_limit((loads, pods) in cluster(), n in 1u64..6) {
        let before = oracle_in_preparation(&loads, &pods, &BTreeSet::new());
        let plan = plan_lifts(limit(n), &loads, &pods);
        prop_assert_eq!(plan.in_preparation, before);
        let lifted: BTreeSet<String> = plan.lift.iter().map(|p| p.name.clone()).collect();
        let after = oracle_in_preparation(&loads, &pods, &lifted);
        prop_assert!(after <= n.max(before), "{} -> {} with limit {}", before, after, n);
    }

    #[test]
    fn gates_are_lifted_first_in_first_out_and_while_places_are_free((loads, pods) in cluster(), n in 1u64..6) {
        let plan = plan_lifts(limit(n), &loads, &pods);
        // The gated loads that would take a place, oldest first.
        let mut queued: Vec<&Load> = loads
            .iter()
            .filter(|l| pods.iter().any(|p| p.load == l.id && p.gated))
            .filter(|l| !l.phase.is_past_preparation() && !l.cancel_requested)
            .collect();
        queued.sort_by_key(|l| (l.created, l.id.namespace.clone(), l.id.name.clone()));
        let free = n.saturating_sub(plan.in_preparation) as usize;
        let expected: BTreeSet<String> = queued.iter().take(free).map(|l| l.id.name.clone()).collect();
        let lifted_taking_place: BTreeSet<String> = plan
            .lift
            .iter()
            .map(|p| p.name.clone())
            .filter(|name| queued.iter().any(|l| &l.id.name == name))
            .collect();
        prop_assert_eq!(lifted_taking_place, expected);
    }

    #[test]
    fn exact_mode_never_lists_more_than_the_limit_nor_lifts_an_unlisted_load(
        (loads, pods) in cluster(), n in 1u64..6, listed in prop::collection::btree_set(0usize..24, 0..6),
    ) {
        let entries: Vec<LedgerEntry> = listed
            .iter()
            .filter(|i| **i < loads.len())
            .take(n as usize)
            .map(|i| LedgerEntry { id: id(*i), admitted_at: t(0), admitted_by: "r2".into() })
            .collect();
        let snapshot = LedgerSnapshot {
            resource_version: Some("1".into()),
            ledger: Ledger { admitted: entries, ..Ledger::empty() },
        };
        let plan = plan_exact_lifts(limit(n), &snapshot, &loads, &pods, &BTreeSet::new(), "r1", t(50));
        if let Some(write) = &plan.write {
            prop_assert!(write.ledger.admitted.len() as u64 <= n);
            let outside = loads
                .iter()
                .filter(|l| matches!(l.phase, Phase::Accepted | Phase::Prepared))
                .filter(|l| !pods.iter().any(|p| p.load == l.id && p.gated))
                .filter(|l| !write.ledger.contains(&l.id))
                .count() as u64;
            prop_assert!(
                write.admitted.is_empty() || write.ledger.admitted.len() as u64 + outside <= n,
                "admitted beyond the limit"
            );
        }
        for lifted in &plan.lift {
            let load = loads.iter().find(|l| l.id.name == lifted.name).unwrap();
            prop_assert!(
                snapshot.ledger.contains(&load.id) || load.phase.is_past_preparation() || load.cancel_requested,
                "{} lifted without a ledger entry", lifted.name
            );
        }
    }
}
