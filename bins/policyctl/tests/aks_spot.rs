//! `examples/aks-spot/`: data movers on an AKS spot pool. The node-agent
//! DaemonSet tolerates the spot taint, and Velero copies that toleration
//! onto its data-mover pods (A2.27), so the spot taint blocks nothing;
//! without the DaemonSet in the input, policyctl cannot know that and says
//! so.

mod common;

use common::run;
use policyctl::Exit;
use serde_json::{Value, json};

const SPOT_NODE: &str = "aks-spot-16180339-vmss000000";
const OTHER_ZONE_SPOT_NODE: &str = "aks-spot-16180339-vmss000001";
const DATA_MOVER: &str = "velero/daily-shop-20260520-x7k2p";
const SPOT_TAINT: &str = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule";

fn file(name: &str) -> String {
    format!(
        "{}/../../examples/aks-spot/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

const WITHOUT_DAEMON_SET: &[&str] = &[
    "namespaces.yaml",
    "nodes.yaml",
    "node-agent-config.yaml",
    "storage.yaml",
    "data-movement.yaml",
    "pods.yaml",
];

/// `policyctl -f <the example's files> ARGS -o json`, parsed.
fn json_of(with_daemon_set: bool, args: &[&str]) -> Value {
    let mut files: Vec<String> = WITHOUT_DAEMON_SET.iter().map(|f| file(f)).collect();
    if with_daemon_set {
        files.push(file("node-agent-daemonset.yaml"));
    }
    let mut all: Vec<&str> = Vec::new();
    for f in &files {
        all.extend(["-f", f.as_str()]);
    }
    all.extend(args);
    all.extend(["-o", "json"]);
    let run = run(&all);
    assert_eq!(run.exit, Exit::Success, "{args:?}: {}", run.stderr);
    serde_json::from_str(&run.stdout).expect("JSON")
}

fn spot_toleration() -> Value {
    json!({
        "effect": "NoSchedule",
        "key": "kubernetes.azure.com/scalesetpriority",
        "operator": "Equal",
        "value": "spot",
    })
}

fn notes(document: &Value) -> Vec<String> {
    document["notes"]
        .as_array()
        .map(|notes| {
            notes
                .iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn diagnose_does_not_call_the_tolerated_spot_taint_blocking() {
    let document = json_of(true, &["diagnose", "--pod", DATA_MOVER]);
    assert_eq!(document["schedulable"], json!([SPOT_NODE]), "{document:#}");
    let spot = &document["nodes"][SPOT_NODE];
    assert_eq!(spot["fits"], json!(true), "{document:#}");
    let everything = document["nodes"].to_string();
    assert!(!everything.contains(SPOT_TAINT), "{document:#}");
    // The other spot node is out for the volume's zone, not for its taint.
    let other = document["nodes"][OTHER_ZONE_SPOT_NODE]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(other.contains("zone"), "{other}");
    assert_eq!(
        document["inputs"]["DaemonSet"],
        json!("read"),
        "{document:#}"
    );
    assert!(
        notes(&document).iter().all(|n| !n.contains("DaemonSet")),
        "{document:#}"
    );
}

#[test]
fn without_the_daemon_set_diagnose_calls_the_spot_taint_blocking_and_says_why() {
    let document = json_of(false, &["diagnose", "--pod", DATA_MOVER]);
    assert_eq!(document["schedulable"], json!([]), "{document:#}");
    let reason = document["nodes"][SPOT_NODE]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains(SPOT_TAINT), "{reason}");
    let notes = notes(&document);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("no DaemonSet velero/node-agent")
                && n.contains("kubernetes.azure.com/scalesetpriority")),
        "{notes:?}"
    );
    assert_eq!(
        document["inputs"]["DaemonSet"],
        json!("not in input"),
        "{document:#}"
    );
}

#[test]
fn affinity_shows_the_tolerations_velero_copies_from_the_node_agent() {
    let document = json_of(true, &["affinity", "--pvc", "shop/data-orders-0"]);
    // Allowlisted keys only, in Velero's order; the disk-pressure
    // toleration of the DaemonSet is not copied.
    assert_eq!(
        document["tolerations"],
        json!([spot_toleration(), {"key": "CriticalAddonsOnly", "operator": "Exists"}]),
        "{document:#}"
    );
    assert!(notes(&document).is_empty(), "{document:#}");

    let without = json_of(false, &["affinity", "--pvc", "shop/data-orders-0"]);
    assert_eq!(without["tolerations"], json!([]), "{without:#}");
    assert!(
        notes(&without)
            .iter()
            .any(|n| n.contains("no DaemonSet node-agent")),
        "{without:#}"
    );
    // The rest of the pod does not depend on the DaemonSet.
    assert_eq!(document["affinity"], without["affinity"]);
}

#[test]
fn the_data_mover_pod_in_the_example_is_the_one_velero_creates() {
    // The pod's own spec (as Velero 1.17 and later write it) carries the
    // copied tolerations and the computed affinity.
    let fragment = json_of(true, &["affinity", "--pvc", "shop/data-orders-0"]);
    let pods: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(file("pods.yaml")).expect("pods.yaml"))
            .expect("YAML");
    let pod = pods["items"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|p| p["metadata"]["name"] == json!("daily-shop-20260520-x7k2p"))
        })
        .expect("the data-mover pod");
    assert_eq!(pod["spec"]["affinity"], fragment["affinity"]);
    let tolerations = pod["spec"]["tolerations"].as_array().expect("tolerations");
    for toleration in fragment["tolerations"].as_array().expect("tolerations") {
        assert!(tolerations.contains(toleration), "{toleration}");
    }
}

#[test]
fn schedule_reads_the_pod_s_own_tolerations() {
    // kube-scheduler's verdict needs no DaemonSet: the pod already carries
    // what Velero copied.
    let document = json_of(false, &["schedule", "--pod", DATA_MOVER]);
    assert_eq!(document["feasible"], json!([SPOT_NODE]), "{document:#}");
}
