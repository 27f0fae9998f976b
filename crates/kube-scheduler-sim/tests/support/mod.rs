//! Builders shared by the scheduler tests: objects are written as the JSON a
//! user would write, so table rows read like kube-scheduler's test cases.
#![allow(dead_code)]

use std::collections::BTreeMap;

use kube_scheduler_sim::{ClusterState, Options, ScheduleResult};

use super::oracle as reference;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use serde_json::{Value, json};

pub fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

pub fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
    let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

/// A pod in `ns` with `labels`, bound to `node` if given, with `spec` merged
/// into its spec (e.g. `json!({"affinity": ...})`).
pub fn pod(ns: &str, name: &str, labels: &[(&str, &str)], node: Option<&str>, spec: Value) -> Pod {
    let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
    let mut spec = match spec {
        Value::Null => json!({}),
        v => v,
    };
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    spec["containers"] = json!([]);
    serde_json::from_value(
        json!({"metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": spec}),
    )
    .unwrap()
}

/// Label selector `key In values`.
pub fn sel_in(key: &str, values: &[&str]) -> Value {
    json!({"matchExpressions": [{"key": key, "operator": "In", "values": values}]})
}

/// Evaluate with the indexed evaluator AND the brute-force reference;
/// they must agree. Returns the result.
pub fn eval(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    incoming: &Pod,
    opts: &Options,
) -> ScheduleResult {
    let state = ClusterState::new(nodes, namespaces, pods, opts.merge_match_label_keys);
    let fast = state.evaluate(incoming, opts).unwrap();
    let slow = reference::evaluate(nodes, namespaces, pods, incoming, opts);
    assert_eq!(fast, slow, "indexed and reference evaluators disagree");
    fast
}

/// [`eval`] with storage objects (the volume filters).
pub fn eval_storage(
    nodes: &[Node],
    pods: &[Pod],
    storage: &kube_scheduler_sim::StorageObjects,
    incoming: &Pod,
) -> ScheduleResult {
    let opts = Options::default();
    let mut state = ClusterState::new(nodes, &[], pods, opts.merge_match_label_keys);
    state.set_storage(storage);
    let fast = state.evaluate(incoming, &opts).unwrap();
    let slow = reference::evaluate_with_storage(nodes, &[], pods, storage, incoming, &opts);
    assert_eq!(fast, slow, "indexed and reference evaluators disagree");
    fast
}

/// Each node's verdict: "ok" or the failure message.
pub fn verdicts(r: &ScheduleResult) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = r
        .feasible
        .iter()
        .map(|n| (n.clone(), "ok".to_owned()))
        .collect();
    for (n, f) in &r.unschedulable {
        out.insert(n.clone(), f.message.clone());
    }
    out
}

pub const OK: &str = "ok";
pub const NODE_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
pub const AFFINITY: &str = "node(s) didn't match pod affinity rules";
pub const ANTI: &str = "node(s) didn't match pod anti-affinity rules";
pub const EXISTING_ANTI: &str = "node(s) didn't satisfy existing pods anti-affinity rules";
pub const SPREAD: &str = "node(s) didn't match pod topology spread constraints";
pub const SPREAD_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";
pub const TAINT: &str = "node(s) had untolerated taint(s)";
pub const UNSCHEDULABLE: &str = "node(s) were unschedulable";
pub const NODE_NAME: &str = "node(s) didn't match the requested node name";
pub const PORTS: &str = "node(s) didn't have free ports for the requested pod ports";

/// [`eval`] with the snapshot's Services, ReplicationControllers,
/// ReplicaSets and StatefulSets (system-default spreading).
pub fn eval_with_workloads(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    workloads: &kube_scheduler_sim::Workloads,
    incoming: &Pod,
    opts: &Options,
) -> ScheduleResult {
    let mut state = ClusterState::new(nodes, namespaces, pods, opts.merge_match_label_keys);
    state.add_workloads(workloads);
    let fast = state.evaluate(incoming, opts).unwrap();
    let slow =
        reference::evaluate_with_workloads(nodes, namespaces, pods, workloads, incoming, opts);
    assert_eq!(fast, slow, "indexed and reference evaluators disagree");
    fast
}
