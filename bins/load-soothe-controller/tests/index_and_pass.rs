//! The index and the pass, synchronously: objects are fed to the index the
//! way the runtime's watches do, and the pass is a function call. No API
//! stand-in, no runtime.

use std::collections::BTreeMap;

use controller_kit::snapshot::IndexResource;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::reflector::ObjectRef;
use load_soothe::HoldReason;
use load_soothe_controller::index::{GateIndex, LedgerState};
use load_soothe_controller::{Config, GateMode, pass};
use serde_json::json;
use velero_api::{DataUpload, PodVolumeBackup};

const NS: &str = "velero";

fn now() -> jiff::Timestamp {
    "2026-11-22T03:00:00Z".parse().unwrap()
}

fn du(name: &str, uid: &str, rv: &str, second: i64, phase: Option<&str>) -> DataUpload {
    let mut du = DataUpload::new(name, velero_api::DataUploadSpec::default());
    du.metadata.namespace = Some(NS.into());
    du.metadata.uid = Some(uid.into());
    du.metadata.resource_version = Some(rv.into());
    du.metadata.creation_timestamp = Some(Time(
        jiff::Timestamp::from_second(1_800_000_000 + second).unwrap(),
    ));
    du.spec.data_mover = Some("acme".into());
    if let Some(p) = phase {
        du.status = Some(serde_json::from_value(json!({ "phase": p })).unwrap());
    }
    du
}

fn node_agent(limit: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("node-agent-config".into());
    cm.metadata.namespace = Some(NS.into());
    cm.data = Some(BTreeMap::from([(
        "node-agent-config.json".to_owned(),
        format!("{{\"loadConcurrency\": {{\"prepareQueueLength\": {limit}}}}}"),
    )]));
    cm
}

fn ledger(rv: &str, json: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("velero-prepare-queue-ledger".into());
    cm.metadata.namespace = Some(NS.into());
    cm.metadata.resource_version = Some(rv.into());
    cm.data = Some(BTreeMap::from([(
        "ledger.json".to_owned(),
        json.to_owned(),
    )]));
    cm
}

fn index(mode: GateMode) -> GateIndex {
    GateIndex::new(Config::new(NS, "n1", &["acme"], mode))
}

fn accepted(index: &GateIndex) -> Vec<String> {
    pass::plan(index, now())
        .accepts
        .iter()
        .map(|id| id.name.clone())
        .collect()
}

#[test]
fn a_fresh_index_has_the_gate_disabled_until_the_node_agent_config_map_says_otherwise() {
    let mut idx = index(GateMode::Optimistic);
    idx.reset(
        vec![du("a", "ua", "1", 0, None), du("b", "ub", "2", 1, None)],
        vec![],
    );
    assert_eq!(accepted(&idx), ["a", "b"]);
    idx.apply(node_agent("1"));
    let plan = pass::plan(&idx, now());
    assert_eq!(plan.accepts.len(), 1);
    assert_eq!(plan.holds[0].load.name, "b");
    // An unreadable edit keeps the last good limit; deleting it disables.
    idx.apply(node_agent("\"many\""));
    assert_eq!(idx.config_errors(), 1);
    assert_eq!(accepted(&idx), ["a"]);
    IndexResource::<ConfigMap>::delete(&mut idx, ObjectRef::new("node-agent-config").within(NS));
    assert_eq!(accepted(&idx), ["a", "b"]);
}

#[test]
fn nothing_is_decided_while_the_node_agent_config_map_was_never_readable() {
    let mut idx = index(GateMode::Optimistic);
    idx.apply(du("a", "ua", "1", 0, None));
    idx.apply(node_agent("\"many\""));
    let plan = pass::plan(&idx, now());
    assert!(plan.accepts.is_empty() && plan.holds.is_empty());
    idx.apply(node_agent("1"));
    assert_eq!(accepted(&idx), ["a"]);
}

#[test]
fn loads_in_preparation_of_any_kind_count_and_older_versions_are_ignored() {
    let mut idx = index(GateMode::Optimistic);
    idx.apply(node_agent("2"));
    let mut pvb = PodVolumeBackup::new("pvb", Default::default());
    pvb.metadata.namespace = Some(NS.into());
    pvb.metadata.uid = Some("up".into());
    pvb.status = Some(serde_json::from_value(json!({"phase": "Accepted"})).unwrap());
    idx.apply(pvb);
    idx.apply(du("a", "ua", "5", 0, Some("Accepted")));
    idx.apply(du("b", "ub", "6", 1, None));
    assert!(accepted(&idx).is_empty(), "2 of 2 in preparation");
    // A late event from before the accept must not free the slot.
    idx.apply(du("a", "ua", "4", 0, None));
    assert!(accepted(&idx).is_empty());
    idx.apply(du("a", "ua", "9", 0, Some("InProgress")));
    assert_eq!(accepted(&idx), ["b"]);
}

#[test]
fn a_load_recreated_under_its_name_replaces_the_old_one_and_a_delete_frees_its_slot() {
    let mut idx = index(GateMode::Optimistic);
    idx.apply(node_agent("1"));
    idx.apply(du("a", "old", "1", 0, Some("Accepted")));
    idx.apply(du("b", "ub", "2", 1, None));
    assert!(accepted(&idx).is_empty());
    idx.apply(du("a", "new", "3", 5, None));
    assert_eq!(accepted(&idx), ["b"], "the old `a` no longer counts");
    IndexResource::<DataUpload>::delete(&mut idx, ObjectRef::new("b").within(NS));
    assert_eq!(accepted(&idx), ["a"]);
    // A re-list that no longer has `a` removes it too.
    idx.reset(vec![], vec![ObjectRef::<DataUpload>::new("a").within(NS)]);
    assert_eq!(idx.cache().waiting_len(), 0);
}

#[test]
fn exact_mode_plans_one_ledger_write_and_holds_on_an_unreadable_ledger() {
    let mut idx = index(GateMode::Exact);
    idx.apply(node_agent("2"));
    for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
        idx.apply(du(name, &format!("u{name}"), "1", i as i64, None));
    }
    let plan = pass::plan(&idx, now());
    let write = plan.ledger_write.expect("the ledger is written first");
    assert_eq!(write.expected_resource_version, None, "absent: created");
    assert_eq!(write.admitted.len(), 2);
    assert_eq!(plan.holds.len(), 1);
    assert!(matches!(
        plan.holds[0].reason,
        HoldReason::LedgerFull { .. }
    ));

    idx.apply(ledger("10", "{not json"));
    assert!(matches!(idx.ledger(), LedgerState::Invalid(_)));
    let plan = pass::plan(&idx, now());
    assert!(plan.accepts.is_empty());
    assert!(
        plan.holds
            .iter()
            .all(|h| matches!(h.reason, HoldReason::LedgerUnavailable { .. }))
    );
    // Fixed: an older copy is ignored, the newer one is used.
    idx.apply(ledger("11", r#"{"version":1,"admitted":[]}"#));
    idx.apply(ledger("9", "{not json"));
    assert!(
        matches!(idx.ledger(), LedgerState::Valid(s) if s.resource_version.as_deref() == Some("11"))
    );
    assert_eq!(pass::plan(&idx, now()).accepts.len(), 2);
}

#[test]
fn optimistic_mode_ignores_a_ledger_config_map() {
    let mut idx = index(GateMode::Optimistic);
    idx.apply(ledger("3", "{not json"));
    assert!(idx.exact_input().is_none());
    assert!(matches!(idx.ledger(), LedgerState::Valid(_)));
}
