//! Every command on the example cluster: table and JSON snapshots, plus the
//! error paths users hit most.

mod common;

use common::{example, ok, run, run_with_stdin};
use policyctl::Exit;

/// Snapshots the table and the JSON of one command line.
fn snapshot(name: &str, args: &[&str]) {
    let table = ok(args);
    insta::assert_snapshot!(format!("{name}_table"), table.stdout);
    let mut json_args = args.to_vec();
    json_args.extend(["-o", "json"]);
    let json = ok(&json_args);
    insta::assert_snapshot!(format!("{name}_json"), json.stdout);
    let document: serde_json::Value =
        serde_json::from_str(&json.stdout).expect("-o json prints JSON");
    assert!(document.is_object(), "{name}: {document}");
}

#[test]
fn config_check_snapshots() {
    snapshot("config_check", &["config", "check"]);
}

#[test]
fn concurrency_snapshots() {
    snapshot("concurrency", &["concurrency"]);
}

#[test]
fn affinity_snapshots() {
    snapshot(
        "affinity_local_volume",
        &["affinity", "--pvc", "analytics/scratch-analytics-0"],
    );
    snapshot(
        "affinity_backup_pvc_remap",
        &["affinity", "--pvc", "shop/data-shop-0"],
    );
    snapshot(
        "affinity_windows",
        &[
            "affinity",
            "--pvc",
            "team-blue/db-data",
            "--node-os",
            "windows",
        ],
    );
    snapshot(
        "affinity_restore",
        &["affinity", "--pvc", "shop/restored-data", "--restore"],
    );
}

#[test]
fn schedule_snapshots() {
    snapshot(
        "schedule_pending_web_pod",
        &["schedule", "--pod", "shop/web-7c9f8d6b5-r9t2x"],
    );
    snapshot(
        "schedule_bound_web_pod_score_all_nodes",
        &[
            "schedule",
            "--pod",
            "shop/web-7c9f8d6b5-2xq9l",
            "--score-all-nodes",
        ],
    );
    snapshot("schedule_all", &["schedule", "--all"]);
}

#[test]
fn diagnose_snapshots() {
    snapshot(
        "diagnose_data_mover_pod",
        &["diagnose", "--pod", "velero/nightly-apps-20260520-c7d5n"],
    );
    snapshot(
        "diagnose_web_pod",
        &["diagnose", "--pod", "shop/web-7c9f8d6b5-r9t2x"],
    );
}

#[test]
fn report_snapshots() {
    snapshot("report", &["report"]);
}

/// The keys stating how each kind was read, in every document of a
/// command that reads objects.
const COMPLETENESS_KEYS: [&str; 3] = ["complete", "incomplete", "inputs"];

#[test]
fn every_contract_key_is_present() {
    let json = |args: &[&str]| -> serde_json::Value {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        serde_json::from_str(&ok(&args).stdout).expect("JSON")
    };
    // The keys of a document, but for the completeness keys every
    // command's document has (checked in `completeness.rs`).
    let keys = |value: &serde_json::Value| -> Vec<String> {
        value
            .as_object()
            .expect("object")
            .keys()
            .filter(|key| !COMPLETENESS_KEYS.contains(&key.as_str()))
            .cloned()
            .collect()
    };
    assert_eq!(
        keys(&json(&["config", "check"])),
        ["config", "findings", "maintenance", "veleroVersion"]
    );
    assert_eq!(
        keys(&json(&["maintenance"])),
        ["configMap", "findings", "kubernetesVersion", "repositories"]
    );
    assert_eq!(keys(&json(&["concurrency"])), ["global", "nodes"]);
    assert_eq!(
        keys(&json(&[
            "affinity",
            "--pvc",
            "shop/restored-data",
            "--restore"
        ])),
        [
            "affinity",
            // Restores only.
            "cacheVolume",
            "nodeSelector",
            // The bundled example has no node-agent DaemonSet.
            "notes",
            "selectedLoadAffinity",
            "storageClass",
            "tolerations",
            "waitingForFirstConsumer"
        ]
    );
    let schedule = json(&["schedule", "--pod", "shop/web-7c9f8d6b5-r9t2x"]);
    assert_eq!(
        keys(&schedule),
        [
            "feasible",
            "kubernetesVersion",
            "pod",
            "scores",
            "selected",
            "summary",
            "totals",
            "unschedulable"
        ]
    );
    assert_eq!(schedule["kubernetesVersion"], "1.37");
    assert_eq!(schedule["pod"], "shop/web-7c9f8d6b5-r9t2x");
    assert_eq!(
        keys(&schedule["scores"]),
        [
            "dynamicResources",
            "imageLocality",
            "interPodAffinity",
            "nodeAffinity",
            "nodeResourcesBalancedAllocation",
            "nodeResourcesFit",
            "podTopologySpread",
            "taintToleration"
        ]
    );
    for plugin in keys(&schedule["scores"]) {
        assert_eq!(
            keys(&schedule["scores"][&plugin]),
            ["normalized", "raw", "skipped"],
            "{plugin}"
        );
    }
    assert_eq!(
        keys(&json(&["schedule", "--all"])),
        ["assignments", "kubernetesVersion", "order", "unschedulable"]
    );
    assert_eq!(
        json(&["--kubernetes-version", "v1.35.4", "schedule", "--all"])["kubernetesVersion"],
        "1.35"
    );
    let concurrency = json(&["concurrency"]);
    assert_eq!(
        concurrency["nodes"].as_object().map(|nodes| nodes.len()),
        Some(7),
        "one entry per Node of the input"
    );
}

#[test]
fn unknown_pod_is_an_error_naming_it() {
    let run = run(&["schedule", "--pod", "shop/no-such-pod"]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr.ends_with(
            "error: pod shop/no-such-pod is not in the input (18 pods read); give the file that holds it with -f\n"
        ),
        "{}",
        run.stderr
    );
    let run = run_diagnose("shop/no-such-pod");
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr
            .contains("pod shop/no-such-pod is not in the input"),
        "{}",
        run.stderr
    );
}

fn run_diagnose(pod: &str) -> common::Run {
    run(&["diagnose", "--pod", pod])
}

#[test]
fn missing_storage_class_is_an_error_naming_it() {
    let input = "\
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec: {storageClassName: gold, volumeName: pv-1}
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/os: linux}}
";
    let run = run_with_stdin(&["-f", "-", "affinity", "--pvc", "shop/data"], input);
    assert_eq!(run.exit, Exit::Failure);
    insta::assert_snapshot!("error_missing_storage_class", run.stderr);
    assert!(run.stderr.contains("gold"), "{}", run.stderr);
}

#[test]
fn unknown_pvc_is_an_error() {
    let run = run(&["affinity", "--pvc", "shop/nope"]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr
            .ends_with("error: PersistentVolumeClaim shop/nope is not in the input (6 PersistentVolumeClaims read)\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn malformed_configuration_fails_config_check_but_still_reports() {
    let config_map = "\
apiVersion: v1
kind: ConfigMap
metadata: {name: node-agent-config, namespace: velero}
data:
  config.json: '{\"loadConcurrency\": {\"globalConfig\": \"2\"}}'
";
    let run = run_with_stdin(&["-f", "-", "config", "check", "-o", "json"], config_map);
    assert_eq!(run.exit, Exit::Failure, "{}", run.stderr);
    insta::assert_snapshot!("error_config_wrong_type_json", run.stdout);
    let other = run_with_stdin(&["-f", "-", "concurrency"], config_map);
    assert_eq!(other.exit, Exit::Failure);
    assert!(
        other
            .stderr
            .contains("the node-agent configuration (ConfigMap velero/node-agent-config"),
        "{}",
        other.stderr
    );
}

#[test]
fn duplicate_key_is_our_error_but_velero_starts() {
    // Go's encoding/json keeps the last value of a repeated key and the
    // node-agent starts; policyctl still refuses the configuration.
    let config_map = "\
apiVersion: v1
kind: ConfigMap
metadata: {name: node-agent-config, namespace: velero}
data:
  config.json: '{\"loadConcurrency\": {\"globalConfig\": 2, \"globalConfig\": 3}}'
";
    let run = run_with_stdin(&["-f", "-", "config", "check"], config_map);
    assert_eq!(run.exit, Exit::Failure, "{}", run.stderr);
    assert!(!run.stdout.contains("refuse"), "{}", run.stdout);
    assert!(!run.stdout.contains("exits at start-up"), "{}", run.stdout);
    insta::assert_snapshot!("config_check_duplicate_key_table", run.stdout);
    // A real start-up failure still says so.
    let wrong_type = config_map.replace("2, \"globalConfig\": 3", "\"2\"");
    let run = run_with_stdin(&["-f", "-", "config", "check"], &wrong_type);
    assert_eq!(run.exit, Exit::Failure, "{}", run.stderr);
    assert!(
        run.stdout.contains("would refuse to start") && run.stdout.contains("exits at start-up"),
        "{}",
        run.stdout
    );
}

#[test]
fn strict_config_check_fails_on_warnings() {
    assert_eq!(ok(&["config", "check"]).exit, Exit::Success);
    assert_eq!(run(&["config", "check", "--strict"]).exit, Exit::Failure);
}

#[test]
fn config_flag_reads_bare_json_or_a_config_map_manifest() {
    let dir = std::env::temp_dir().join(format!("policyctl-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bare = dir.join("config.json");
    std::fs::write(&bare, r#"{"loadConcurrency": {"globalConfig": 5}}"#).expect("write");
    let run = ok(&[
        "--config",
        bare.to_str().expect("UTF-8 path"),
        "concurrency",
        "-o",
        "json",
    ]);
    assert!(run.stdout.contains("\"global\": 5"), "{}", run.stdout);
    let run = ok(&[
        "--config",
        &example("node-agent-config.yaml"),
        "-f",
        &example("nodes.yaml"),
        "concurrency",
        "-o",
        "json",
    ]);
    assert!(run.stdout.contains("\"global\": 2"), "{}", run.stdout);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn without_a_config_map_velero_defaults_are_used() {
    let run = ok(&["-f", &example("nodes.yaml"), "concurrency", "-o", "json"]);
    assert!(run.stdout.contains("\"global\": 1"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("using Velero's default node-agent configuration"),
        "{}",
        run.stderr
    );
}

#[test]
fn config_map_flag_selects_another_config_map() {
    let run = run_with_stdin(
        &[
            "-f",
            "-",
            "--config-map",
            "other",
            "concurrency",
            "-o",
            "json",
        ],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: velero}\ndata:\n  c: '{\"loadConcurrency\": {\"globalConfig\": 7}}'\n",
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    assert!(run.stdout.contains("\"global\": 7"), "{}", run.stdout);
}

#[test]
fn bad_pod_reference_is_a_usage_error() {
    assert_eq!(run(&["schedule", "--pod", "no-slash"]).exit, Exit::Usage);
    assert_eq!(run(&["schedule"]).exit, Exit::Usage);
    assert_eq!(
        run(&[
            "schedule",
            "--pod",
            "a/b",
            "--hard-pod-affinity-weight",
            "101"
        ])
        .exit,
        Exit::Usage
    );
}

#[test]
fn queue_snapshots() {
    snapshot("queue", &["queue"]);
    snapshot(
        "queue_two_concurrent_backups",
        &["queue", "--concurrent-backups", "2"],
    );
}

#[test]
fn the_queue_drains_one_backup_per_round_with_one_slot_and_says_why_each_waited() {
    let run = ok(&["queue", "-o", "json"]);
    let document: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let drain = &document["drain"];
    assert_eq!(drain["unit"], "round");
    assert_eq!(drain["rounds"], 6);
    assert_eq!(
        drain["order"],
        serde_json::json!([
            "velero/payments-adhoc",
            "velero/pre-upgrade-full",
            "velero/teams-config",
            "velero/analytics-hourly-0108",
            "velero/kube-system-etcd",
            "velero/shop-orders-0109"
        ])
    );
    // Disjoint from everything running, it waits for the one slot only.
    assert_eq!(
        drain["backups"]["velero/kube-system-etcd"],
        serde_json::json!({
            "start": 4,
            "alreadyRunning": false,
            "waitsOmitted": 0,
            "waits": [{
                "from": 0,
                "to": 3,
                "kind": "concurrencyLimit",
                "blocker": null,
                "reason": "capacity full: all 1 concurrent backup slots are taken"
            }]
        })
    );
    // Behind the whole-cluster backup while it is queued, then while it
    // runs, then for the slot.
    let waits = &drain["backups"]["velero/analytics-hourly-0108"]["waits"];
    let stretches: Vec<(u64, u64, &str, &str)> = waits
        .as_array()
        .expect("waits")
        .iter()
        .map(|w| {
            (
                w["from"].as_u64().unwrap_or(99),
                w["to"].as_u64().unwrap_or(99),
                w["kind"].as_str().unwrap_or_default(),
                w["blocker"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        stretches,
        [
            (0, 0, "namespaceOverlap", "velero/pre-upgrade-full"),
            (1, 1, "namespaceOverlap", "velero/pre-upgrade-full"),
            (2, 2, "concurrencyLimit", "-")
        ]
    );
    assert!(
        waits[1]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("overlaps ReadyToStart backup pre-upgrade-full")),
        "{waits}"
    );
    // Two slots: two backups a round where namespaces allow.
    let two = ok(&["queue", "--concurrent-backups", "2", "-o", "json"]);
    let two: serde_json::Value = serde_json::from_str(&two.stdout).expect("JSON");
    assert!(
        two["drain"]["rounds"].as_u64() < Some(6),
        "{}",
        two["drain"]
    );
}

#[test]
fn a_long_queue_sharing_one_namespace_drains_one_a_round_and_lists_at_most_ten_waits_each() {
    let mut input = String::from("apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n");
    for i in 0..60 {
        input.push_str(&format!(
            "---\napiVersion: velero.io/v1\nkind: Backup\nmetadata: {{name: b{i:02}, namespace: velero, creationTimestamp: \"2026-05-20T01:{i:02}:00Z\"}}\nspec: {{includedNamespaces: [shop]}}\n"
        ));
    }
    let run = run_with_stdin(&["-f", "-", "queue", "-o", "json"], &input);
    let document: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let drain = &document["drain"];
    assert_eq!(drain["rounds"], 60);
    let last = &drain["backups"]["velero/b59"];
    assert_eq!(last["start"], 59);
    // It waited behind b00, b01, ... b58 in turn: 59 stretches, 10 listed.
    let waits = last["waits"].as_array().expect("waits");
    assert_eq!(waits.len(), 10);
    assert_eq!(last["waitsOmitted"], 49);
    assert_eq!(waits[0]["blocker"], "velero/b00");
    assert_eq!(waits[8]["blocker"], "velero/b08");
    assert_eq!(waits[9]["blocker"], "velero/b58");
    assert_eq!(
        (waits[9]["from"].as_u64(), waits[9]["to"].as_u64()),
        (Some(58), Some(58))
    );
    assert_eq!(drain["backups"]["velero/b05"]["waitsOmitted"], 0);
}

#[test]
fn queue_lists_every_backup_with_contract_keys() {
    let run = ok(&["queue", "-o", "json"]);
    let document: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let keys: Vec<&String> = document
        .as_object()
        .expect("object")
        .keys()
        .filter(|key| !COMPLETENESS_KEYS.contains(&key.as_str()))
        .collect();
    assert_eq!(keys, ["backups", "drain", "started", "waiting", "writes"]);
    let backups = document["backups"].as_object().expect("backups map");
    assert_eq!(backups.len(), 9, "every Backup of the input appears");
    for (name, backup) in backups {
        let position = backup["queuePosition"].as_u64().expect("number");
        let queued = backup["phase"] == "Queued";
        assert_eq!(position > 0, queued, "{name}: {backup}");
        if queued {
            assert!(
                document["waiting"].get(name).is_some(),
                "{name} has a reason"
            );
        }
    }
}

#[test]
fn invalid_namespace_patterns_are_warned_about() {
    let input = "\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: velero.io/v1
kind: Backup
metadata: {name: odd, namespace: velero}
spec: {includedNamespaces: ['shop{a,b}']}
status: {phase: Queued, queuePosition: 1}
";
    let run = run_with_stdin(&["-f", "-", "queue", "-o", "json"], input);
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("warning: backup velero/odd has an invalid namespace filter"),
        "{}",
        run.stderr
    );
}

#[test]
fn hosts_snapshots() {
    snapshot("hosts_plan", &["hosts", "plan"]);
    snapshot(
        "hosts_rebalance",
        &["hosts", "rebalance", "--group", "prod-md-0"],
    );
    snapshot(
        "hosts_scale_down",
        &[
            "hosts",
            "scale-down",
            "--group",
            "prod-md-0",
            "--remove",
            "2",
        ],
    );
}

#[test]
fn hosts_contract_keys() {
    let keys = |args: &[&str]| -> Vec<String> {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        let value: serde_json::Value = serde_json::from_str(&ok(&args).stdout).expect("JSON");
        // Every answer read from cluster objects says how complete it is;
        // the HostInventory is read from a ConfigMap.
        let completeness = ["complete", "incomplete", "inputs"];
        value
            .as_object()
            .expect("object")
            .keys()
            .filter(|key| !completeness.contains(&key.as_str()))
            .cloned()
            .collect()
    };
    assert_eq!(
        keys(&["hosts", "plan"]),
        ["assignments", "unplaced", "violations"]
    );
    assert_eq!(
        keys(&[
            "hosts",
            "rebalance",
            "--group",
            "prod-md-0",
            "--budget",
            "0"
        ]),
        ["countsAfter", "countsBefore", "moves"]
    );
    assert_eq!(
        keys(&[
            "hosts",
            "scale-down",
            "--group",
            "prod-md-0",
            "--remove",
            "1"
        ]),
        ["countsAfter", "victims"]
    );
}

#[test]
fn hosts_errors_name_the_problem() {
    let run = run(&["hosts", "rebalance", "--group", "no-such-group"]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr.ends_with(
            "error: hosts rebalance: no group or antiAffinitySet named \"no-such-group\"\n"
        ),
        "{}",
        run.stderr
    );
    let run = common::run(&["-f", &example("nodes.yaml"), "hosts", "plan"]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr
            .contains("no HostInventory (apiVersion policyctl/v1alpha1) in the input"),
        "{}",
        run.stderr
    );
    let run = run_with_stdin(
        &["-f", "-", "hosts", "plan"],
        "apiVersion: policyctl/v1alpha1\nkind: HostInventory\nhosts:\n- {name: esx-1, capacity: {cpu: 4}, maintenanceMode: true}\n",
    );
    assert_eq!(run.exit, Exit::Failure);
    insta::assert_snapshot!("error_host_inventory_unknown_field", run.stderr);
}

#[test]
fn host_labels_snapshots() {
    snapshot("host_labels", &["host-labels"]);
    snapshot(
        "host_labels_node_restriction_key",
        &[
            "host-labels",
            "--key",
            "node-restriction.kubernetes.io/esxi-host",
        ],
    );
    snapshot(
        "host_labels_sanitize_ipv6",
        &["host-labels", "sanitize", "fe80::1%eth0"],
    );
}

#[test]
fn host_labels_contract_keys() {
    let value: serde_json::Value =
        serde_json::from_str(&ok(&["host-labels", "-o", "json"]).stdout).expect("JSON");
    assert_eq!(
        value["nodes"]["worker-b3"],
        serde_json::json!({
            "set": {"node.cluster.x-k8s.io/esxi-host": "esx-04"},
            "remove": [],
            "annotations": {"policyctl/managed-host-labels": "node.cluster.x-k8s.io/esxi-host"}
        })
    );
    assert_eq!(
        value["audit"]["unlabelledNodes"],
        serde_json::json!(["worker-b3"])
    );
    assert_eq!(
        value["audit"]["sharedHosts"][0]["host"],
        serde_json::json!("esx-04")
    );
    let sanitized = ok(&["host-labels", "sanitize", "::1", "-o", "json"]);
    let sanitized: serde_json::Value = serde_json::from_str(&sanitized.stdout).expect("JSON");
    assert_eq!(
        sanitized
            .as_object()
            .expect("object")
            .keys()
            .collect::<Vec<_>>(),
        ["valid", "value"]
    );
    assert_eq!(sanitized["valid"], serde_json::json!(true));
}

#[test]
fn sanitize_reads_no_input() {
    let run = ok(&["host-labels", "sanitize", "esx-01.example.com"]);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn invalid_host_label_key_is_an_error() {
    let run = run(&["host-labels", "--key", "bad key"]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr
            .contains("error: --key: \"bad key\" is not a valid label key"),
        "{}",
        run.stderr
    );
}

#[test]
fn soothe_snapshots() {
    snapshot("soothe", &["soothe"]);
    snapshot("soothe_exact", &["soothe", "--mode", "exact"]);
}

#[test]
fn the_backlog_overshoots_the_limit_through_velero_gate_and_not_through_the_exact_gate() {
    let value: serde_json::Value =
        serde_json::from_str(&ok(&["soothe", "-o", "json"]).stdout).expect("JSON");
    let backlog = &value["backlog"];
    assert_eq!(backlog["unit"], "step");
    assert_eq!(backlog["limit"], 4);
    // Five Nodes run a node-agent: each admits the waiting loads on the
    // stale count of 3, so all 4 go at once.
    assert_eq!(backlog["nodeAgents"], 5);
    let in_preparation = |gate: &str| -> Vec<u64> {
        backlog[gate]["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .filter_map(|s| s["inPreparation"].as_u64())
            .collect()
    };
    assert_eq!(in_preparation("velero"), [7]);
    assert_eq!(backlog["velero"]["overshoot"], 3);
    assert_eq!(in_preparation("exact"), [4, 3]);
    assert_eq!(backlog["exact"]["overshoot"], 0);
}

#[test]
fn soothe_contract_keys_and_admission_order() {
    let value: serde_json::Value =
        serde_json::from_str(&ok(&["soothe", "-o", "json"]).stdout).expect("JSON");
    assert_eq!(
        value
            .as_object()
            .expect("object")
            .keys()
            .filter(|key| !COMPLETENESS_KEYS.contains(&key.as_str()))
            .collect::<Vec<_>>(),
        [
            "admit",
            "backlog",
            "constrained",
            "dataMovers",
            "hold",
            "inPreparation",
            "notGatedHere",
            "prepareQueueLength"
        ]
    );
    assert_eq!(value["dataMovers"], serde_json::json!(["velero"]));
    assert_eq!(value["notGatedHere"], serde_json::json!([]));
    // Three loads are in preparation against a limit of four: the oldest
    // waiting load gets the one free slot.
    assert_eq!(value["prepareQueueLength"], serde_json::json!(4));
    assert_eq!(value["inPreparation"], serde_json::json!(3));
    assert_eq!(value["constrained"], serde_json::json!(false));
    assert_eq!(
        value["admit"],
        serde_json::json!(["DataUpload/velero/team-sync-20260520-2hj6f"])
    );
    assert_eq!(value["hold"].as_array().map(Vec::len), Some(3));
}

#[test]
fn soothe_without_a_limit_admits_everything() {
    let input = "\
apiVersion: velero.io/v2alpha1
kind: DataUpload
metadata: {name: a, namespace: velero, creationTimestamp: '2026-05-20T01:00:00Z'}
spec: {}
---
apiVersion: velero.io/v1
kind: PodVolumeBackup
metadata: {name: b, namespace: velero, creationTimestamp: '2026-05-20T00:59:00Z'}
spec: {node: n1}
";
    let run = run_with_stdin(&["-f", "-", "soothe", "-o", "json"], input);
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    let value: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(value["prepareQueueLength"], serde_json::Value::Null);
    assert_eq!(
        value["admit"],
        serde_json::json!(["PodVolumeBackup/velero/b", "DataUpload/velero/a"])
    );
    assert!(
        run.stderr.contains("the gate is disabled"),
        "{}",
        run.stderr
    );
}

#[test]
fn diagnose_reads_a_data_mover_pod_without_its_data_upload() {
    // Without the DataUpload and its volume, the pod's own node affinity is
    // explained (requirement origins unknown).
    let run = ok(&[
        "-f",
        &example("pods.yaml"),
        "-f",
        &example("nodes.yaml"),
        "diagnose",
        "--pod",
        "velero/nightly-apps-20260520-c7d5n",
    ]);
    insta::assert_snapshot!("diagnose_data_mover_pod_from_its_spec", run.stdout);
}

#[test]
fn unreadable_config_file_is_an_error() {
    let run = run(&["--config", "/nonexistent/config.json", "concurrency"]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr
            .contains("error: --config /nonexistent/config.json: cannot read the file: "),
        "{}",
        run.stderr
    );
}

#[test]
fn yaml_output_is_the_json_document() {
    let yaml = ok(&[
        "affinity",
        "--pvc",
        "analytics/scratch-analytics-0",
        "-o",
        "yaml",
    ]);
    insta::assert_snapshot!("affinity_local_volume_yaml", yaml.stdout);
    let json = ok(&[
        "affinity",
        "--pvc",
        "analytics/scratch-analytics-0",
        "-o",
        "json",
    ]);
    let from_yaml: serde_json::Value =
        serde_saphyr::from_str(&yaml.stdout).expect("-o yaml prints YAML");
    let from_json: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(from_yaml, from_json);
}

#[test]
fn tables_fit_a_120_column_terminal() {
    // Relative to the package directory, where tests run: file names are
    // part of some lines, as a user's would be.
    let inputs: [Option<&str>; 3] = [
        None,
        Some("../../examples/cluster"),
        Some("../../examples/management-cluster"),
    ];
    for input in &inputs {
        for command in [
            &["report"][..],
            &["config", "check"],
            &["soothe"],
            &["queue"],
        ] {
            let mut args: Vec<&str> = Vec::new();
            if let Some(input) = input {
                args.extend(["-f", input]);
            }
            args.extend(command);
            let output = run(&args);
            assert!(!output.stdout.is_empty(), "{args:?}: {}", output.stderr);
            let widest = output
                .stdout
                .lines()
                .max_by_key(|line| line.chars().count())
                .unwrap_or_default();
            assert!(
                widest.chars().count() <= 120,
                "{args:?}: a line of {} columns: {widest}",
                widest.chars().count()
            );
        }
    }
}
