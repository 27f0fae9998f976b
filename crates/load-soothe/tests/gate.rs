//! Gate decisions: enablement, holds, the per-view limit, FIFO order,
//! Velero mode, and the user-readable hold reasons.

use std::collections::BTreeSet;

use jiff::Timestamp;
use load_soothe::wake_delay;
use load_soothe::{
    CountCache, Decision, Enablement, GateConfig, HoldReason, KindCounts, Load, LoadId, LoadKind,
    Mode, NotGated, Phase, RecountPolicy, decide,
};
use load_soothe::{ExactView, LedgerSnapshot};
use proptest::prelude::*;

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).unwrap()
}

fn load(i: usize, phase: Phase, created: i64) -> Load {
    Load {
        id: LoadId::new(
            LoadKind::ALL[i % 4],
            "velero",
            format!("l{i:03}"),
            format!("u{i}"),
        ),
        phase,
        expose_on_going: phase == Phase::Accepted || phase == Phase::Prepared,
        cancel_requested: false,
        created: t(created),
        resource_version: Some("1".into()),
        handled_here: true,
    }
}

/// A view: loads with phases and creation seconds.
fn view() -> impl Strategy<Value = Vec<(Phase, i64)>> {
    prop::collection::vec(
        (
            prop::sample::select(vec![
                Phase::New,
                Phase::New,
                Phase::New,
                Phase::Accepted,
                Phase::Prepared,
                Phase::InProgress,
                Phase::Completed,
            ]),
            0i64..6,
        ),
        0..24,
    )
}

fn build(mode: Mode, loads: &[(Phase, i64)]) -> (CountCache, Vec<Load>) {
    let mut cache = CountCache::new(RecountPolicy::for_mode(mode));
    let all: Vec<Load> = loads
        .iter()
        .enumerate()
        .map(|(i, (p, c))| load(i, *p, *c))
        .collect();
    for l in &all {
        // Created New, then moved to its phase: a realistic event sequence.
        cache.apply(Load {
            phase: Phase::New,
            expose_on_going: false,
            ..l.clone()
        });
        cache.apply(l.clone());
    }
    (cache, all)
}

fn in_prep(loads: &[Load]) -> u64 {
    loads.iter().filter(|l| l.in_preparation()).count() as u64
}

fn mode() -> impl Strategy<Value = Mode> {
    prop::sample::select(vec![Mode::Velero, Mode::Optimistic, Mode::Exact])
}

const NODE: &str = "node-a";

proptest! {
    #[test]
    fn hold_decisions_write_nothing_and_change_nothing(mode in mode(), loads in view(), limit in 1i64..8, pick in 0usize..24) {
        let (mut cache, all) = build(mode, &loads);
        prop_assume!(!all.is_empty());
        let target = &all[pick % all.len()];
        let snapshot = LedgerSnapshot::absent();
        let before_res: Vec<LoadId> = cache.reservations().cloned().collect();
        let before_counts = cache.clone().counts();
        let config = GateConfig::new(Some(limit), mode);
        let d = decide(&config, &mut cache, Some(ExactView { ledger: &snapshot, node: NODE }), target, t(100));
        if let Decision::Hold(h) = d {
            let after_res: Vec<LoadId> = cache.reservations().cloned().collect();
            prop_assert_eq!(before_res, after_res);
            prop_assert_eq!(before_counts, cache.counts());
            prop_assert_eq!(h.requeue_after, std::time::Duration::from_secs(5));
        }
    }

    #[test]
    fn within_one_gates_view_admissions_never_take_the_count_above_the_limit(
        mode in prop::sample::select(vec![Mode::Optimistic, Mode::Exact]),
        loads in view(),
        limit in 1i64..8,
        order in prop::collection::vec(0usize..24, 0..40),
    ) {
        let (mut cache, all) = build(mode, &loads);
        let mut snapshot = LedgerSnapshot::absent();
        let config = GateConfig::new(Some(limit), mode);
        let start = in_prep(&all);
        let mut admitted: BTreeSet<LoadId> = BTreeSet::new();
        for i in order {
            if all.is_empty() { break; }
            let l = &all[i % all.len()];
            match decide(&config, &mut cache, Some(ExactView { ledger: &snapshot, node: NODE }), l, t(100)) {
                Decision::Admit(_) => { admitted.insert(l.id.clone()); }
                Decision::WriteLedger(w) => {
                    // The write succeeds (this gate is alone); only the load
                    // decided on is accepted now.
                    snapshot = LedgerSnapshot { resource_version: Some(format!("{}", admitted.len() + 1)), ledger: w.ledger };
                    admitted.insert(l.id.clone());
                }
                _ => {}
            }
            let total = start + admitted.len() as u64;
            prop_assert!(total <= (limit as u64).max(start), "{} in preparation, limit {}", total, limit);
            if start >= limit as u64 { prop_assert!(admitted.is_empty()); }
        }
    }

    #[test]
    fn fifo_admits_exactly_the_earliest_waiting_loads_in_any_decision_order(
        loads in view(),
        limit in 1i64..8,
        order in prop::collection::vec(0usize..24, 0..60),
    ) {
        let (mut cache, all) = build(Mode::Optimistic, &loads);
        let config = GateConfig::new(Some(limit), Mode::Optimistic);
        let free = (limit as u64).saturating_sub(in_prep(&all)) as usize;
        // Oracle: sort waiting loads by (created, namespace, name, kind, uid).
        let mut waiting: Vec<&Load> = all.iter().filter(|l| l.phase == Phase::New).collect();
        waiting.sort_by(|a, b| (a.created, &a.id.namespace, &a.id.name, a.id.kind, &a.id.uid)
            .cmp(&(b.created, &b.id.namespace, &b.id.name, b.id.kind, &b.id.uid)));
        let allowed: BTreeSet<LoadId> = waiting.iter().take(free).map(|l| l.id.clone()).collect();
        let mut admitted = BTreeSet::new();
        for i in order.iter().copied().chain(0..all.len()) {
            if all.is_empty() { break; }
            let l = &all[i % all.len()];
            if let Decision::Admit(_) = decide(&config, &mut cache, None, l, t(100)) {
                admitted.insert(l.id.clone());
            }
        }
        prop_assert_eq!(admitted, allowed);
    }

    #[test]
    fn velero_mode_holds_exactly_when_the_cached_sum_reaches_the_limit(loads in view(), limit in 1i64..8, pick in 0usize..24) {
        let (mut cache, all) = build(Mode::Velero, &loads);
        prop_assume!(!all.is_empty());
        let target = &all[pick % all.len()];
        prop_assume!(target.phase == Phase::New);
        let counted = cache.clone().counts().total();
        let d = decide(&GateConfig::new(Some(limit), Mode::Velero), &mut cache, None, target, t(0));
        prop_assert_eq!(d.is_hold(), counted >= limit as u64);
        // Velero keeps no reservations.
        prop_assert_eq!(cache.reservation_count(), 0);
    }

    #[test]
    fn gate_applies_only_when_prepare_queue_length_is_positive(value in prop::option::of(any::<i64>()), mode in mode()) {
        let config = GateConfig::new(value, mode);
        let enabled = matches!(config.enablement, Enablement::Enabled(_));
        prop_assert_eq!(enabled, value.is_some_and(|v| v > 0));
        // A full queue: one load in preparation, limit at most... anything.
        let (mut cache, all) = build(mode, &[(Phase::Accepted, 0), (Phase::New, 1)]);
        let snapshot = LedgerSnapshot::absent();
        let d = decide(&config, &mut cache, Some(ExactView { ledger: &snapshot, node: NODE }), &all[1], t(5));
        if !enabled {
            prop_assert!(matches!(d, Decision::NotGated(NotGated::Disabled(_))), "{:?}", d);
        } else {
            prop_assert!(!matches!(d, Decision::NotGated(_)));
        }
    }
}

#[test]
fn the_gate_does_not_apply_to_loads_past_new_cancelled_or_handled_elsewhere() {
    let config = GateConfig::new(Some(1), Mode::Optimistic);
    let mut cache = CountCache::new(RecountPolicy::Fixed);
    let l = load(0, Phase::Prepared, 0);
    assert_eq!(
        decide(&config, &mut cache, None, &l, t(0)),
        Decision::NotGated(NotGated::NotNew(Phase::Prepared))
    );
    let mut c = load(1, Phase::New, 0);
    c.cancel_requested = true;
    assert_eq!(
        decide(&config, &mut cache, None, &c, t(0)),
        Decision::NotGated(NotGated::CancelRequested)
    );
    let mut o = load(2, Phase::New, 0);
    o.handled_here = false;
    assert_eq!(
        decide(&config, &mut cache, None, &o, t(0)),
        Decision::NotGated(NotGated::NotHandledHere)
    );
}

#[test]
fn a_limit_of_one_with_one_load_in_preparation_holds() {
    // Edge case 3: the gate is `sum >= limit`.
    for mode in [Mode::Velero, Mode::Optimistic, Mode::Exact] {
        let (mut cache, all) = build(mode, &[(Phase::Prepared, 0), (Phase::New, 1)]);
        let snapshot = LedgerSnapshot::absent();
        let d = decide(
            &GateConfig::new(Some(1), mode),
            &mut cache,
            Some(ExactView {
                ledger: &snapshot,
                node: NODE,
            }),
            &all[1],
            t(2),
        );
        assert!(d.is_hold(), "{mode:?}: {d:?}");
    }
}

#[test]
fn exact_mode_without_a_ledger_holds() {
    let (mut cache, all) = build(Mode::Exact, &[(Phase::New, 0)]);
    let d = decide(
        &GateConfig::new(Some(3), Mode::Exact),
        &mut cache,
        None,
        &all[0],
        t(0),
    );
    assert!(matches!(
        d,
        Decision::Hold(ref h) if matches!(h.reason, HoldReason::LedgerUnavailable { .. })
    ));
}

#[test]
fn wake_delay_is_deterministic_and_within_spread() {
    let id = LoadId::new(LoadKind::DataUpload, "velero", "a", "u1");
    let spread = std::time::Duration::from_millis(1000);
    let d = wake_delay("node-1", &id, spread);
    assert_eq!(d, wake_delay("node-1", &id, spread));
    assert!(d < spread);
    let distinct: BTreeSet<_> = (0..50)
        .map(|n| wake_delay(&format!("node-{n}"), &id, spread))
        .collect();
    assert!(distinct.len() > 40);
}

#[test]
fn hold_reasons_read_well() {
    let counts = KindCounts {
        data_upload: 2,
        data_download: 1,
        pod_volume_backup: 0,
        pod_volume_restore: 1,
    };
    let reasons = [
        HoldReason::QueueFull {
            counts,
            reserved: 0,
            limit: 4,
        },
        HoldReason::QueueFull {
            counts,
            reserved: 1,
            limit: 5,
        },
        HoldReason::WaitingBehind {
            ahead: 2,
            free: 2,
            limit: 6,
        },
        HoldReason::LedgerFull {
            ledger_entries: 3,
            unledgered: 1,
            limit: 4,
        },
        HoldReason::AdmittedElsewhere {
            node: "worker-7".into(),
        },
        HoldReason::LedgerUnavailable {
            detail: "data.ledger.json of the prepare-queue ledger has version 2, this gate understands version 1".into(),
        },
    ];
    let text: Vec<String> = reasons
        .into_iter()
        .map(|reason| {
            load_soothe::Hold {
                requeue_after: load_soothe::HOLD_REQUEUE_AFTER,
                reason,
            }
            .to_string()
        })
        .collect();
    insta::assert_snapshot!(text.join("\n"));
}

#[test]
fn a_reservation_lasts_until_the_view_shows_the_load_leave_new() {
    let config = GateConfig::new(Some(1), Mode::Optimistic);
    let (mut cache, all) = build(Mode::Optimistic, &[(Phase::New, 0), (Phase::New, 1)]);
    assert!(matches!(
        decide(&config, &mut cache, None, &all[0], t(2)),
        Decision::Admit(_)
    ));
    assert_eq!(cache.reservation_count(), 1);
    // The second load is held by the reservation although the view still
    // shows nothing in preparation.
    let d = decide(&config, &mut cache, None, &all[1], t(2));
    assert!(
        matches!(d, Decision::Hold(ref h) if matches!(h.reason, HoldReason::QueueFull { reserved: 1, .. })),
        "{d:?}"
    );
    // The watch shows the first load accepted: the reservation becomes a count.
    cache.apply(load(0, Phase::Accepted, 0));
    assert_eq!(cache.reservation_count(), 0);
    assert_eq!(cache.counts().total(), 1);
    // It completes: the slot frees and the second load is next.
    let applied = cache.apply(load(0, Phase::Completed, 0));
    assert!(applied.slot_freed);
    assert_eq!(
        load_soothe::wake_list(&config, &mut cache, None),
        vec![all[1].id.clone()]
    );
    assert!(matches!(
        decide(&config, &mut cache, None, &all[1], t(3)),
        Decision::Admit(_)
    ));
    // A failed accept releases the reservation.
    assert!(cache.release(&all[1].id));
    assert_eq!(cache.reservation_count(), 0);
}

#[test]
fn loads_handled_elsewhere_count_but_do_not_queue_here() {
    let mut cache = CountCache::new(RecountPolicy::Fixed);
    let mut other_prep = load(0, Phase::Prepared, 0);
    other_prep.handled_here = false;
    let mut other_new = load(1, Phase::New, 0);
    other_new.handled_here = false;
    cache.apply(other_prep);
    cache.apply(other_new);
    assert_eq!(cache.counts().total(), 1);
    assert_eq!(cache.waiting_len(), 0);
    // A local load created later is at the head of this node's queue.
    let mine = load(2, Phase::New, 5);
    cache.apply(mine.clone());
    let d = decide(
        &GateConfig::new(Some(2), Mode::Optimistic),
        &mut cache,
        None,
        &mine,
        t(6),
    );
    assert!(
        matches!(d, Decision::Admit(a) if a.ahead == 0 && a.occupied == 1),
        "{d:?}"
    );
}

/// The numbers in a hold reason's parentheses (its breakdown).
fn breakdown(text: &str) -> Vec<u64> {
    let inside = text
        .split_once('(')
        .and_then(|(_, rest)| rest.split_once(')'))
        .map_or("", |(inside, _)| inside);
    inside
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|number| number.parse().ok())
        .collect()
}

/// The first number of a hold reason (its total).
fn total(text: &str) -> Option<u64> {
    text.split(|c: char| !c.is_ascii_digit())
        .find_map(|number| number.parse().ok())
}

proptest! {
    #[test]
    fn hold_reason_breakdowns_add_up_to_their_totals(
        counts in (0u32..50, 0u32..50, 0u32..50, 0u32..50),
        reserved in 0u64..50,
        ledger_entries in 0u64..50,
        unledgered in 0u64..50,
        limit in 1u64..200,
    ) {
        let counts = KindCounts {
            data_upload: counts.0,
            data_download: counts.1,
            pod_volume_backup: counts.2,
            pod_volume_restore: counts.3,
        };
        for reason in [
            HoldReason::QueueFull { counts, reserved, limit },
            HoldReason::LedgerFull { ledger_entries, unledgered, limit },
        ] {
            let text = reason.to_string();
            let parts = breakdown(&text);
            prop_assert!(!parts.is_empty(), "{}", text);
            prop_assert_eq!(Some(parts.iter().sum::<u64>()), total(&text), "{}", text);
        }
    }
}
