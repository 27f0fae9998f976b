//! The ledger's wire format, parse errors, clean-up and admission plans.

use std::collections::BTreeMap;

use jiff::Timestamp;
use load_soothe::{
    CountCache, Decision, GateConfig, Limit, Load, LoadId, LoadKind, Mode, Phase, RecountPolicy,
    decide,
};
use load_soothe::{
    ExactView, Ledger, LedgerSnapshot, plan_admissions, plan_cleanup, unconfirmed_entries,
};

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).unwrap()
}

fn load(i: usize, phase: Phase) -> Load {
    Load {
        id: LoadId::new(
            LoadKind::ALL[i % 4],
            "velero",
            format!("l{i}"),
            format!("u{i}"),
        ),
        phase,
        expose_on_going: matches!(phase, Phase::Accepted | Phase::Prepared),
        cancel_requested: false,
        created: t(i as i64),
        resource_version: Some("7".into()),
        handled_here: true,
    }
}

#[test]
fn an_admission_writes_a_canonical_ledger_and_a_conditional_merge_patch() {
    let mut cache = CountCache::new(RecountPolicy::Fixed);
    for i in 0..3 {
        cache.apply(load(i, Phase::New));
    }
    let snapshot = LedgerSnapshot {
        resource_version: Some("41".into()),
        ledger: Ledger::empty(),
    };
    let d = decide(
        &GateConfig::new(Some(2), Mode::Exact),
        &mut cache,
        Some(ExactView {
            ledger: &snapshot,
            node: "worker-1",
        }),
        &load(1, Phase::New),
        t(60),
    );
    let Decision::WriteLedger(write) = d else {
        panic!("{d:?}")
    };
    // The head (l0) and the load decided on (l1) are admitted in one write.
    assert_eq!(write.admitted.len(), 2);
    let patch = serde_json::to_string_pretty(&write.merge_patch()).unwrap();
    insta::assert_snapshot!(patch);
    // Round trip.
    let back = Ledger::from_config_map_data(Some(&write.data())).unwrap();
    assert_eq!(back, write.ledger);
}

#[test]
fn ledger_parse_errors_name_the_key_and_the_problem() {
    let cases = [
        "{",
        r#"{"version":2,"admitted":[]}"#,
        r#"{"version":1,"admitted":[{"kind":"Backup","namespace":"velero","name":"a","uid":"u","admittedAt":"2026-01-01T00:00:00Z","admittedBy":"n"}]}"#,
        r#"{"version":1,"admitted":[{"kind":"DataUpload","namespace":"velero","name":"a","uid":"u","admittedAt":"2026-01-01T00:00:00Z","admittedBy":"n"},{"kind":"DataUpload","namespace":"velero","name":"a","uid":"u","admittedAt":"2026-01-01T00:00:01Z","admittedBy":"m"}]}"#,
    ];
    let text: Vec<String> = cases
        .iter()
        .map(|c| match Ledger::from_json(c) {
            Ok(l) => format!("ok: {l:?}"),
            Err(e) => e.to_string(),
        })
        .collect();
    insta::assert_snapshot!(text.join("\n"));
    assert_eq!(Ledger::from_config_map_data(None).unwrap(), Ledger::empty());
    assert_eq!(
        Ledger::from_config_map_data(Some(&BTreeMap::new())).unwrap(),
        Ledger::empty()
    );
}

#[test]
fn cleanup_removes_only_entries_whose_loads_left_preparation_for_good() {
    let mut cache = CountCache::new(RecountPolicy::Fixed);
    // l0 in progress (left), l1 prepared (stays), l2 deleted (left),
    // l3 never seen (stays, unconfirmed), l4 still New (stays).
    cache.apply(load(0, Phase::InProgress));
    cache.apply(load(1, Phase::Prepared));
    cache.apply(load(2, Phase::Accepted));
    cache.delete(&load(2, Phase::Accepted).id);
    cache.apply(load(4, Phase::New));
    let ids: Vec<LoadId> = (0..5).map(|i| load(i, Phase::New).id).collect();
    let json = format!(
        r#"{{"version":1,"admitted":[{}]}}"#,
        ids.iter()
            .map(|id| format!(
                r#"{{"kind":"{}","namespace":"velero","name":"{}","uid":"{}","admittedAt":"2026-01-01T00:00:00Z","admittedBy":"n"}}"#,
                id.kind, id.name, id.uid
            ))
            .collect::<Vec<_>>()
            .join(",")
    );
    let snapshot = LedgerSnapshot {
        resource_version: Some("9".into()),
        ledger: Ledger::from_json(&json).unwrap(),
    };
    let write = plan_cleanup(&snapshot, &cache).unwrap();
    assert_eq!(write.removed, vec![ids[0].clone(), ids[2].clone()]);
    assert_eq!(write.ledger.len(), 3);
    assert_eq!(write.expected_resource_version.as_deref(), Some("9"));
    assert_eq!(
        unconfirmed_entries(&snapshot.ledger, &cache),
        vec![ids[3].clone()]
    );
    // Limit 3, 3 entries kept: nothing to admit.
    let view = ExactView {
        ledger: &snapshot,
        node: "n",
    };
    assert!(plan_admissions(Limit::new(3).unwrap(), &cache, view, t(0)).is_none());
    // Limit 4: one free slot; l4 is listed already, so nothing else waits.
    assert!(plan_admissions(Limit::new(4).unwrap(), &cache, view, t(0)).is_none());
    cache.apply(load(5, Phase::New));
    let w = plan_admissions(Limit::new(4).unwrap(), &cache, view, t(0)).unwrap();
    assert_eq!(w.admitted, vec![load(5, Phase::New).id]);
    assert_eq!(w.ledger.len(), 4);
}
