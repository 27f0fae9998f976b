//! `policyctl maintenance` (R5.1–R5.14): the bundled example's three
//! repositories, and the ConfigMap problems `config check` reports.

mod common;

use common::{example, ok, run, run_with_stdin};
use policyctl::Exit;
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    serde_json::from_str(&ok(&args).stdout).expect("JSON")
}

fn repository<'a>(document: &'a Value, name: &str) -> &'a Value {
    document["repositories"]
        .as_array()
        .expect("repositories")
        .iter()
        .find(|r| r["repository"] == name)
        .unwrap_or_else(|| panic!("{name} not in {document}"))
}

#[test]
fn maintenance_snapshots() {
    let table = ok(&["maintenance"]);
    insta::assert_snapshot!("maintenance_table", table.stdout);
    let document = ok(&["maintenance", "-o", "json"]);
    insta::assert_snapshot!("maintenance_json", document.stdout);
}

#[test]
fn the_repository_entry_and_global_merge_as_velero_merges_them() {
    let document = json(&["maintenance"]);
    let shop = repository(&document, "velero/shop-default-kopia-x7k2p");
    assert_eq!(shop["key"], "shop-default-kopia");
    assert_eq!(shop["sources"]["loadAffinity"], "shop-default-kopia");
    // global's priority class replaces the entry's (R5.4).
    assert_eq!(shop["sources"]["priorityClassName"], "global");
    assert_eq!(shop["job"]["priorityClassName"], "velero-maintenance");
    assert_eq!(shop["job"]["resources"]["requests"]["cpu"], "100m");
    assert_eq!(
        shop["nodes"],
        serde_json::json!(["worker-b1", "worker-b2", "worker-b3"])
    );
    let analytics = repository(&document, "velero/analytics-default-kopia-m4q8r");
    assert_eq!(analytics["keepLatestMaintenanceJobs"], 1);
}

#[test]
fn no_node_gives_a_node_by_node_diagnosis() {
    let document = json(&["maintenance"]);
    let analytics = repository(&document, "velero/analytics-default-kopia-m4q8r");
    assert_eq!(analytics["nodes"], serde_json::json!([]));
    let diagnosis = analytics["diagnosis"].as_object().expect("diagnosis");
    assert_eq!(diagnosis.len(), 7, "{diagnosis:?}");
    let table = ok(&["maintenance"]).stdout;
    assert!(
        table.contains("No node can run the maintenance job:"),
        "{table}"
    );
}

#[test]
fn windows_nodes_are_not_kept_out() {
    // W5.1: the job tolerates os=windows:NoSchedule and has no OS
    // requirement, so without a loadAffinity it can land on win-1.
    let document = json(&["maintenance"]);
    let payments = repository(&document, "velero/payments-default-kopia-a1b2c");
    let nodes: Vec<&str> = payments["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(nodes.contains(&"win-1"), "{nodes:?}");
    assert!(!nodes.contains(&"cp-1"), "{nodes:?}");
}

const BROKEN: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: repo-maintenance-job-config
  namespace: velero
data:
  global: |
    {"priorityClassName": "missing", "podResources": {"cpuRequest": "1"}}
  shop-default-kopia: |
    {"loadAffinity": [
"#;

#[test]
fn a_missing_priority_class_is_reported_and_still_set() {
    let text = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: repo-maintenance-job-config
  namespace: velero
data:
  global: |
    {"priorityClassName": "missing"}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: other
value: 1
---
apiVersion: velero.io/v1
kind: BackupRepository
metadata:
  name: payments-default-kopia-a1b2c
  namespace: velero
spec:
  backupStorageLocation: default
  repositoryType: kopia
  volumeNamespace: payments
"#;
    let nodes = example("nodes.yaml");
    let run = run_with_stdin(
        &["-f", &nodes, "-f", "-", "maintenance", "-o", "json"],
        text,
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    let document: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let payments = repository(&document, "velero/payments-default-kopia-a1b2c");
    // R5.11: Velero only warns and sets it anyway.
    assert_eq!(payments["job"]["priorityClassName"], "missing");
    let findings = document["findings"].as_array().expect("findings");
    assert!(
        findings
            .iter()
            .any(|f| f["kind"] == "missing-priority-class"
                && f["path"] == "global.priorityClassName"
                && f["severity"] == "error"),
        "{findings:?}"
    );
}

#[test]
fn config_check_refuses_an_entry_that_does_not_decode() {
    let run = run_with_stdin(&["-f", "-", "config", "check"], BROKEN);
    assert_eq!(run.exit, Exit::Failure, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("The Velero server would refuse to start with this configuration."),
        "{}",
        run.stdout
    );
    insta::assert_snapshot!("config_check_broken_maintenance_entry", run.stdout);
}

#[test]
fn a_named_config_map_must_exist() {
    let run = run(&["maintenance", "--maintenance-config-map", "velero/nope"]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr
            .contains("--maintenance-config-map velero/nope: no such ConfigMap"),
        "{}",
        run.stderr
    );
}

#[test]
fn without_the_config_map_every_job_gets_the_defaults() {
    let run = run(&[
        "-f",
        &example("nodes.yaml"),
        "-f",
        &example("namespaces.yaml"),
        "maintenance",
    ]);
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    assert!(run.stdout.contains("Velero's defaults"), "{}", run.stdout);
    assert!(
        run.stdout.contains("The input has no BackupRepository"),
        "{}",
        run.stdout
    );
}
