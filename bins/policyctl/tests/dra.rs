//! `examples/dra/`: a 1.37 cluster whose GPUs are allocated by Dynamic
//! Resource Allocation. `schedule`, `diagnose` and `capacity` allocate the
//! pending pod's claim as kube-scheduler does (DR.1–DR.9), and `report`
//! shows the devices per node and per class.

mod common;

use common::run;
use policyctl::Exit;
use serde_json::{Value, json};

const CLUSTER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/dra/cluster.yaml"
);

/// `policyctl -f examples/dra/cluster.yaml ARGS -o json`, parsed.
fn json_of(args: &[&str]) -> Value {
    let mut all = vec!["-f", CLUSTER];
    all.extend(args);
    all.extend(["-o", "json"]);
    let run = run(&all);
    assert_eq!(run.exit, Exit::Success, "{args:?}: {}", run.stderr);
    serde_json::from_str(&run.stdout).expect("JSON")
}

#[test]
fn the_gpu_pair_fits_only_where_two_free_gpus_share_a_numa_node() {
    let schedule = json_of(&["schedule", "--pod", "ml/trainer-1"]);
    assert_eq!(schedule["kubernetesVersion"], "1.37");
    assert_eq!(schedule["feasible"], json!(["gpu-a100-1"]));
    assert_eq!(schedule["selected"], "gpu-a100-1");
    for node in ["cpu-1", "gpu-a100-2", "gpu-t4-1"] {
        assert_eq!(
            schedule["unschedulable"][node], "cannot allocate all claims",
            "{node}"
        );
    }
}

#[test]
fn diagnose_names_the_claim_and_what_each_node_lacks() {
    let diagnosis = json_of(&["diagnose", "--pod", "ml/trainer-1"]);
    let text = diagnosis.to_string();
    assert!(
        text.contains("claim ml/trainer-1-gpus-p7x2n: request gpus asks for 2 device(s) of class gpu.example.com; the node has 0 that match, 0 of them free"),
        "{diagnosis:#}"
    );
    assert!(
        text.contains("claim ml/trainer-1-gpus-p7x2n: each request finds devices, but no set of them meets the claim's constraints together"),
        "{diagnosis:#}"
    );
}

#[test]
fn capacity_gives_each_copy_a_claim_of_its_own_and_stops_when_no_pair_is_left() {
    let capacity = json_of(&["capacity", "--pod", "ml/trainer-1"]);
    assert_eq!(capacity["count"], 1, "{capacity:#}");
    assert_eq!(
        capacity["reason"],
        "0/4 nodes are available: 4 cannot allocate all claims."
    );
}

#[test]
fn report_counts_devices_per_node_and_class() {
    let report = json_of(&["report"]);
    insta::assert_json_snapshot!(report["devices"]);
    let table = run(&["-f", CLUSTER, "report"]);
    let section: String = table
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("== Devices"))
        .take_while(|l| !l.starts_with("shared:"))
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(section);
}
