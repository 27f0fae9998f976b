//! `plan_pass`: one pass over a whole queue, in every mode, against simple
//! oracles written from the rules (count, sort, take).

use jiff::Timestamp;
use load_soothe::{
    CountCache, ExactInput, GateConfig, HoldReason, Load, LoadId, LoadKind, Mode, Phase,
    RecountPolicy, plan_pass, retain_tombstones,
};
use load_soothe::{ExactView, Ledger, LedgerEntry, LedgerSnapshot};
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

fn cache(mode: Mode, loads: &[Load]) -> CountCache {
    let mut cache = CountCache::new(RecountPolicy::for_mode(mode));
    cache.resync(loads.iter().cloned());
    cache
}

fn names(ids: &[LoadId]) -> Vec<&str> {
    ids.iter().map(|id| id.name.as_str()).collect()
}

fn entry(i: usize, by: &str, at: Timestamp) -> LedgerEntry {
    LedgerEntry {
        id: load(i, Phase::New, 0).id,
        admitted_at: at,
        admitted_by: by.to_owned(),
    }
}

#[test]
fn optimistic_pass_takes_the_free_slots_in_fifo_order_and_the_block_carries_over() {
    // l000 in preparation; l001..l004 wait, created out of index order.
    let loads = vec![
        load(0, Phase::Accepted, 0),
        load(1, Phase::New, 4),
        load(2, Phase::New, 1),
        load(3, Phase::New, 3),
        load(4, Phase::New, 2),
    ];
    let gate = GateConfig::new(Some(3), Mode::Optimistic);
    let plan = plan_pass(&gate, &cache(Mode::Optimistic, &loads), None, t(10));
    assert_eq!(names(&plan.accepts), ["l002", "l004"]);
    assert!(plan.ledger_write.is_none());
    let notes: Vec<String> = plan.holds.iter().map(|h| h.note()).collect();
    insta::assert_snapshot!(notes.join("\n"), @r"
    prepare queue full: 3 of 3 loads in preparation (DataUpload 1, DataDownload 0, PodVolumeBackup 0, PodVolumeRestore 0, plus 2 just admitted by this node); 0 earlier load(s) waiting ahead of this one
    prepare queue full: 3 of 3 loads in preparation (DataUpload 1, DataDownload 0, PodVolumeBackup 0, PodVolumeRestore 0, plus 2 just admitted by this node); 1 earlier load(s) waiting ahead of this one
    ");
    assert_eq!(
        plan.holds
            .iter()
            .map(|h| h.load.name.as_str())
            .collect::<Vec<_>>(),
        ["l003", "l001"]
    );
}

#[test]
fn a_disabled_gate_accepts_every_waiting_load() {
    let loads: Vec<Load> = (0..4).map(|i| load(i, Phase::New, i as i64)).collect();
    for mode in [Mode::Velero, Mode::Optimistic, Mode::Exact] {
        let plan = plan_pass(
            &GateConfig::new(Some(0), mode),
            &cache(mode, &loads),
            None,
            t(0),
        );
        assert_eq!(names(&plan.accepts), ["l000", "l001", "l002", "l003"]);
        assert!(plan.holds.is_empty() && plan.ledger_write.is_none());
    }
}

#[test]
fn velero_mode_admits_every_waiting_load_while_its_count_is_below_the_limit() {
    let mut loads: Vec<Load> = (0..4).map(|i| load(i, Phase::New, i as i64)).collect();
    let gate = GateConfig::new(Some(2), Mode::Velero);
    let plan = plan_pass(&gate, &cache(Mode::Velero, &loads), None, t(0));
    assert_eq!(
        plan.accepts.len(),
        4,
        "Velero does not count its own admissions"
    );
    loads[0].phase = Phase::Accepted;
    loads[1].phase = Phase::Accepted;
    let plan = plan_pass(&gate, &cache(Mode::Velero, &loads), None, t(0));
    assert!(plan.accepts.is_empty());
    assert_eq!(plan.holds.len(), 2);
}

#[test]
fn exact_pass_admits_all_free_slots_in_one_ledger_write() {
    let mut loads: Vec<Load> = (0..5).map(|i| load(i, Phase::New, i as i64)).collect();
    // l000 left preparation (its entry is dropped by the write).
    loads[0].phase = Phase::Completed;
    loads[0].expose_on_going = false;
    let snapshot = LedgerSnapshot {
        resource_version: Some("7".into()),
        ledger: Ledger {
            version: 1,
            admitted: vec![entry(0, "me", t(0))],
        },
    };
    let gate = GateConfig::new(Some(2), Mode::Exact);
    let view = ExactView {
        ledger: &snapshot,
        node: "me",
    };
    let plan = plan_pass(
        &gate,
        &cache(Mode::Exact, &loads),
        Some(ExactInput::Read(view)),
        t(100),
    );
    assert_eq!(names(&plan.accepts), ["l001", "l002"]);
    let write = plan.ledger_write.expect("one write admits both");
    assert_eq!(write.expected_resource_version.as_deref(), Some("7"));
    assert_eq!(names(&write.admitted), ["l001", "l002"]);
    assert_eq!(names(&write.removed), ["l000"]);
    assert_eq!(write.ledger.len(), 2);
    assert!(
        write
            .ledger
            .admitted
            .iter()
            .all(|e| e.admitted_by == "me" && e.admitted_at == t(100))
    );
    let reasons: Vec<(&str, &HoldReason, u64)> = plan
        .holds
        .iter()
        .map(|h| (h.load.name.as_str(), &h.reason, h.ahead))
        .collect();
    let full = HoldReason::LedgerFull {
        ledger_entries: 2,
        unledgered: 0,
        limit: 2,
    };
    assert_eq!(reasons, [("l003", &full, 0), ("l004", &full, 1)]);
}

#[test]
fn a_load_listed_by_another_node_waits_for_the_grace_without_blocking_others() {
    let loads: Vec<Load> = (0..3).map(|i| load(i, Phase::New, i as i64)).collect();
    let snapshot = LedgerSnapshot {
        resource_version: Some("3".into()),
        ledger: Ledger {
            version: 1,
            admitted: vec![entry(0, "other", t(0))],
        },
    };
    let gate = GateConfig::new(Some(3), Mode::Exact);
    let cache = cache(Mode::Exact, &loads);
    let view = || {
        Some(ExactInput::Read(ExactView {
            ledger: &snapshot,
            node: "me",
        }))
    };
    let plan = plan_pass(&gate, &cache, view(), t(10));
    assert_eq!(names(&plan.accepts), ["l001", "l002"]);
    assert_eq!(plan.holds.len(), 1);
    assert_eq!(
        plan.holds[0].reason,
        HoldReason::AdmittedElsewhere {
            node: "other".into()
        }
    );
    // After the grace any node accepts it, without writing the ledger again.
    let plan = plan_pass(&gate, &cache, view(), t(31));
    assert_eq!(names(&plan.accepts), ["l000", "l001", "l002"]);
    assert_eq!(
        names(&plan.ledger_write.expect("l001 and l002 are new").admitted),
        ["l001", "l002"]
    );
}

#[test]
fn exact_pass_without_a_readable_ledger_holds_everything() {
    let loads: Vec<Load> = (0..2).map(|i| load(i, Phase::New, i as i64)).collect();
    let gate = GateConfig::new(Some(5), Mode::Exact);
    let cache = cache(Mode::Exact, &loads);
    for (input, detail) in [
        (None, "not read yet"),
        (Some(ExactInput::Unavailable("bad JSON")), "bad JSON"),
    ] {
        let plan = plan_pass(&gate, &cache, input, t(0));
        assert!(plan.accepts.is_empty() && plan.ledger_write.is_none());
        assert!(plan.holds.iter().all(|h| h.reason
            == HoldReason::LedgerUnavailable {
                detail: detail.into()
            }));
        assert_eq!(plan.holds[1].ahead, 1);
    }
}

#[test]
fn tombstones_are_kept_only_while_the_exact_ledger_lists_them() {
    let loads: Vec<Load> = (0..3).map(|i| load(i, Phase::Accepted, 0)).collect();
    let mut c = cache(Mode::Exact, &loads);
    for l in &loads {
        c.delete(&l.id);
    }
    assert_eq!(c.tombstone_count(), 3);
    retain_tombstones(&mut c, Mode::Exact, None);
    assert_eq!(
        c.tombstone_count(),
        3,
        "without a ledger every tombstone may matter"
    );
    let ledger = Ledger {
        version: 1,
        admitted: vec![entry(1, "me", t(0))],
    };
    retain_tombstones(&mut c, Mode::Exact, Some(&ledger));
    assert!(c.is_deleted(&loads[1].id) && c.tombstone_count() == 1);
    retain_tombstones(&mut c, Mode::Optimistic, Some(&ledger));
    assert_eq!(c.tombstone_count(), 0);
}

/// A queue: phase, creation second and whether this gate handles the load.
fn queue() -> impl Strategy<Value = Vec<(Phase, i64, bool)>> {
    prop::collection::vec(
        (
            prop::sample::select(vec![
                Phase::New,
                Phase::New,
                Phase::New,
                Phase::Accepted,
                Phase::Prepared,
                Phase::InProgress,
            ]),
            0i64..5,
            prop::bool::weighted(0.8),
        ),
        0..30,
    )
}

proptest! {
    /// Oracle: count the loads in preparation, sort the waiting loads this
    /// gate handles by (created, namespace, name, kind, uid) and take as
    /// many as there are free slots; the rest are held, in order.
    #[test]
    fn optimistic_pass_accepts_exactly_the_first_free_waiting_loads(
        spec in queue(), limit in 1u64..8,
    ) {
        let loads: Vec<Load> = spec
            .iter()
            .enumerate()
            .map(|(i, (p, c, here))| Load { handled_here: *here, ..load(i, *p, *c) })
            .collect();
        let in_prep = loads.iter().filter(|l| l.phase == Phase::Accepted || l.phase == Phase::Prepared).count() as u64;
        let mut waiting: Vec<&Load> = loads.iter().filter(|l| l.phase == Phase::New && l.handled_here).collect();
        waiting.sort_by(|a, b| {
            (a.created, &a.id.namespace, &a.id.name, a.id.kind, &a.id.uid)
                .cmp(&(b.created, &b.id.namespace, &b.id.name, b.id.kind, &b.id.uid))
        });
        let free = limit.saturating_sub(in_prep) as usize;
        let want_accepts: Vec<&str> = waiting.iter().take(free).map(|l| l.id.name.as_str()).collect();
        let want_holds: Vec<&str> = waiting.iter().skip(free).map(|l| l.id.name.as_str()).collect();

        let plan = plan_pass(&GateConfig::new(i64::try_from(limit).ok(), Mode::Optimistic),
            &cache(Mode::Optimistic, &loads), None, t(9));
        prop_assert_eq!(names(&plan.accepts), want_accepts);
        let holds: Vec<&str> = plan.holds.iter().map(|h| h.load.name.as_str()).collect();
        prop_assert_eq!(holds, want_holds);
        for (i, h) in plan.holds.iter().enumerate() {
            prop_assert_eq!(h.ahead, i as u64);
        }
    }

    /// The ledger a pass writes never lists more loads than the limit, and
    /// together with the loads in preparation outside it never exceeds it.
    #[test]
    fn exact_pass_never_lists_more_than_the_limit(spec in queue(), limit in 1u64..8) {
        let loads: Vec<Load> = spec
            .iter()
            .enumerate()
            .map(|(i, (p, c, here))| Load { handled_here: *here, ..load(i, *p, *c) })
            .collect();
        let in_prep = loads.iter().filter(|l| l.phase == Phase::Accepted || l.phase == Phase::Prepared).count() as u64;
        let snapshot = LedgerSnapshot::absent();
        let plan = plan_pass(
            &GateConfig::new(i64::try_from(limit).ok(), Mode::Exact),
            &cache(Mode::Exact, &loads),
            Some(ExactInput::Read(ExactView { ledger: &snapshot, node: "me" })),
            t(9),
        );
        let admitted = plan.ledger_write.as_ref().map_or(0, |w| w.ledger.len() as u64);
        prop_assert!(admitted + in_prep <= limit.max(in_prep));
        prop_assert_eq!(admitted as usize, plan.accepts.len());
    }
}
