//! `policyctl modules`, `host-labels --sync-machine-labels` and the report's
//! cluster-module section on the example management cluster
//! (`examples/management-cluster/`): one KubeadmControlPlane, two
//! MachineDeployments, one module missing, one stale entry, and workers left
//! stacked on one ESXi host after a scale-down.

mod common;

use policyctl::Exit;
use serde_json::Value;

fn management(file: &str) -> String {
    format!(
        "{}/../../examples/management-cluster/{file}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `-f` arguments for the management cluster's objects (and, optionally,
/// the workload cluster's Nodes).
fn files(with_nodes: bool) -> Vec<String> {
    let mut names = vec!["cluster.yaml", "control-plane.yaml", "workers.yaml"];
    if with_nodes {
        names.push("workload-nodes.yaml");
    }
    names
        .into_iter()
        .flat_map(|name| ["-f".to_owned(), management(name)])
        .collect()
}

fn args<'a>(files: &'a [String], rest: &[&'a str]) -> Vec<&'a str> {
    files
        .iter()
        .map(String::as_str)
        .chain(rest.iter().copied())
        .collect()
}

fn json(run: &common::Run) -> Value {
    serde_json::from_str(&run.stdout).expect("JSON output")
}

#[test]
fn modules_snapshots() {
    let files = files(false);
    let table = common::ok(&args(&files, &["modules"]));
    insta::assert_snapshot!("modules_table", table.stdout);
    let document = common::ok(&args(&files, &["modules", "-o", "json"]));
    insta::assert_snapshot!("modules_json", document.stdout);
}

#[test]
fn modules_json_has_exactly_the_contract_keys() {
    let files = files(false);
    let document = json(&common::ok(&args(&files, &["modules", "-o", "json"])));
    let keys =
        |value: &Value| -> Vec<String> { value.as_object().unwrap().keys().cloned().collect() };
    // How each kind was read: in every document (see `completeness.rs`).
    let mut document = document;
    for key in ["complete", "incomplete", "inputs"] {
        assert!(
            document.as_object_mut().unwrap().remove(key).is_some(),
            "{key}"
        );
    }
    assert_eq!(
        keys(&document),
        [
            "audit",
            "clusterModulesSupported",
            "membership",
            "modules",
            "moves",
            "vCenterVersion"
        ]
    );
    assert_eq!(keys(&document["modules"]), ["create", "delete", "keep"]);
    assert_eq!(
        document["modules"]["create"],
        serde_json::json!([{"targetObjectName": "prod-east-md-1", "controlPlane": false}])
    );
    assert_eq!(
        document["modules"]["delete"],
        serde_json::json!([{"targetObjectName": "prod-east-md-gpu", "moduleUUID": "52a81f0e-33c4-4d7b-b0a1-6f2e9c1d7a03"}])
    );
    for entry in document["membership"].as_object().unwrap().values() {
        assert_eq!(
            keys(entry),
            ["error", "groupKind", "groupName", "moduleUUID"]
        );
    }
    for entry in document["audit"].as_object().unwrap().values() {
        assert_eq!(keys(entry), ["forced", "hosts", "violations"]);
    }
    for step in document["moves"].as_array().unwrap() {
        assert_eq!(keys(step), ["from", "to", "vm"]);
    }
    assert_eq!(document["audit"]["prod-east-md-0"]["violations"], 1);
    assert_eq!(document["audit"]["prod-east-md-0"]["forced"], false);
}

/// Replaces `from` by `to` in the management cluster's files and reads
/// them from standard input.
fn edited(from: &str, to: &str, rest: &[&str]) -> common::Run {
    let text: String = ["cluster.yaml", "control-plane.yaml", "workers.yaml"]
        .iter()
        .map(|name| std::fs::read_to_string(management(name)).unwrap())
        .collect::<Vec<_>>()
        .join("---\n");
    assert!(text.contains(from), "{from:?} not in the example");
    let mut argv = vec!["-f", "-"];
    argv.extend_from_slice(rest);
    common::run_with_stdin(&argv, &text.replace(from, to))
}

#[test]
fn an_old_vcenter_closes_the_gate_and_nothing_changes() {
    for version in ["6.7.0", "\"7.0\"", "\"\"", "v7.0.3"] {
        let run = edited(
            "vCenterVersion: 8.0.2",
            &format!("vCenterVersion: {version}"),
            &["modules", "-o", "json"],
        );
        assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
        let document = json(&run);
        assert_eq!(document["clusterModulesSupported"], false, "{version}");
        assert_eq!(document["modules"]["create"], serde_json::json!([]));
        assert_eq!(document["modules"]["delete"], serde_json::json!([]));
        assert_eq!(document["modules"]["keep"].as_array().unwrap().len(), 3);
    }
    let run = edited(
        "vCenterVersion: 8.0.2",
        "vCenterVersion: 6.7.0",
        &["modules"],
    );
    insta::assert_snapshot!("modules_vcenter_6_table", run.stdout);
}

#[test]
fn a_machine_set_without_deployment_is_a_membership_error() {
    let run = edited(
        "    kind: MachineDeployment\n    name: prod-east-md-1\n",
        "    kind: Cluster\n    name: prod-east\n",
        &["modules", "-o", "json"],
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    let document = json(&run);
    let entry = &document["membership"]["clusters/prod-east-md-1-8d6bb-p4ncs"];
    assert_eq!(entry["groupKind"], "MachineDeployment");
    assert_eq!(entry["groupName"], Value::Null);
    assert_eq!(entry["moduleUUID"], Value::Null);
    assert!(
        entry["error"]
            .as_str()
            .unwrap()
            .starts_with("MachineSet clusters/prod-east-md-1-8d6bb: unable to find owner reference with APIVersion cluster.x-k8s.io/v1beta2 and Kind MachineDeployment"),
        "{entry}"
    );
}

#[test]
fn with_cluster_modules_disabled_capv_looks_nothing_up_and_hits_no_error() {
    let text: String = ["cluster.yaml", "control-plane.yaml", "workers.yaml"]
        .iter()
        .map(|name| std::fs::read_to_string(management(name)).unwrap())
        .collect::<Vec<_>>()
        .join("---\n")
        .replace(
            "    kind: MachineDeployment\n    name: prod-east-md-1\n",
            "    kind: Cluster\n    name: prod-east\n",
        )
        .replacen(
            "spec:\n  clusterModules:\n",
            "spec:\n  disableClusterModule: true\n  clusterModules:\n",
            1,
        );
    assert!(text.contains("disableClusterModule: true"));
    let run = common::run_with_stdin(&["-f", "-", "modules", "-o", "json"], &text);
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    let document = json(&run);
    // Every entry stays, no VM joins a module, and the MachineSet without a
    // MachineDeployment fails nothing.
    assert_eq!(document["modules"]["keep"].as_array().unwrap().len(), 3);
    for (machine, entry) in document["membership"].as_object().unwrap() {
        assert_eq!(entry["moduleUUID"], Value::Null, "{machine}");
        assert_eq!(entry["error"], Value::Null, "{machine}");
    }
    // The table still says why the group is unknown.
    // (Its cells wrap: the last column's lines are read back together.)
    let run = common::run_with_stdin(&["-f", "-", "modules"], &text);
    let words = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("cluster modules disabled, so CAPV does not look the group up (it would fail: MachineSet clusters/prod-east-md-1-8d6bb: unable to find owner reference"),
        "{}",
        run.stdout
    );
}

#[test]
fn two_control_planes_stop_reconciliation_with_capvs_error() {
    // A second KubeadmControlPlane of the cluster, next to the example's.
    let text = std::fs::read_to_string(management("control-plane.yaml")).unwrap();
    let second = text
        .split("---\n")
        .next()
        .unwrap()
        .replace("name: prod-east-cp\n", "name: prod-east-cp-old\n");
    let files = files(false);
    let run = common::run_with_stdin(
        &args(&files, &["-f", "-", "modules", "-o", "json"]),
        &second,
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    let document = json(&run);
    assert_eq!(
        document["modules"]["error"],
        "multiple KubeadmControlPlane objects found, expected 1, found 2: prod-east-cp, prod-east-cp-old (CAPV creates no module until one is left)"
    );
    assert_eq!(document["modules"]["create"], serde_json::json!([]));
    assert_eq!(document["modules"]["keep"].as_array().unwrap().len(), 3);
}

#[test]
fn clusters_are_chosen_with_the_cluster_flag() {
    let files = files(false);
    // One cluster in the input: --cluster may name it by Cluster or
    // VSphereCluster name, and must match.
    common::ok(&args(
        &files,
        &["modules", "--cluster", "clusters/prod-east"],
    ));
    let run = common::run(&args(
        &files,
        &["modules", "--cluster", "clusters/prod-west"],
    ));
    assert_eq!(run.exit, Exit::Failure);
    insta::assert_snapshot!("modules_unknown_cluster", run.stderr);
    // No VSphereCluster at all.
    let run = common::run(&["-f", &common::example("machines.yaml"), "modules"]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(run.stderr.contains("no VSphereCluster"), "{}", run.stderr);
}

#[test]
fn two_clusters_need_the_cluster_flag() {
    let west: String = ["cluster.yaml", "control-plane.yaml", "workers.yaml"]
        .iter()
        .map(|name| std::fs::read_to_string(management(name)).unwrap())
        .collect::<Vec<_>>()
        .join("---\n")
        .replace("namespace: clusters", "namespace: west");
    let files = files(false);
    let run = common::run_with_stdin(&args(&files, &["-f", "-", "modules"]), &west);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr.contains("the input has 2 clusters with a VSphereCluster (clusters/prod-east, west/prod-east); choose one with --cluster NAMESPACE/NAME"),
        "{}",
        run.stderr
    );
    let run = common::run_with_stdin(
        &args(
            &files,
            &[
                "-f",
                "-",
                "modules",
                "--cluster",
                "west/prod-east",
                "-o",
                "json",
            ],
        ),
        &west,
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    assert!(
        json(&run)["membership"]
            .as_object()
            .unwrap()
            .keys()
            .all(|k| k.starts_with("west/"))
    );
}

#[test]
fn host_labels_sync_machine_labels_snapshots() {
    let files = files(true);
    let table = common::ok(&args(&files, &["host-labels", "--sync-machine-labels"]));
    insta::assert_snapshot!("host_labels_sync_table", table.stdout);
    let document = common::ok(&args(
        &files,
        &["host-labels", "--sync-machine-labels", "-o", "json"],
    ));
    insta::assert_snapshot!("host_labels_sync_json", document.stdout);
    let nodes = &json(&document)["nodes"];
    // After the vMotion, the Node gets the host its Machine names now.
    assert_eq!(
        nodes["prod-east-md-0-5c7f9-2b4xq"]["set"]["node.cluster.x-k8s.io/esxi-host"],
        "esx-01.lab.example"
    );
    // A key the Machine dropped leaves the Node, and the bookkeeping says so.
    assert_eq!(
        nodes["prod-east-md-0-5c7f9-kq8zv"]["remove"],
        serde_json::json!(["node.cluster.x-k8s.io/pool"])
    );
    assert_eq!(
        nodes["prod-east-md-0-5c7f9-kq8zv"]["annotations"]["cluster.x-k8s.io/labels-from-machine"],
        "node-role.kubernetes.io/worker,node.cluster.x-k8s.io/esxi-host"
    );
    // The admin's node-role label on 7hd9w is in a managed domain but was
    // never recorded: untouched.
    assert!(
        nodes["prod-east-md-0-5c7f9-7hd9w"]["remove"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn additional_expressions_widen_the_sync_and_are_checked() {
    let files = files(true);
    let run = common::ok(&args(
        &files,
        &[
            "host-labels",
            "--sync-machine-labels",
            "--additional-sync-machine-labels",
            "^cluster\\.x-k8s\\.io/deployment-name$",
            "-o",
            "json",
        ],
    ));
    assert_eq!(
        json(&run)["nodes"]["prod-east-md-1-8d6bb-p4ncs"]["set"]["cluster.x-k8s.io/deployment-name"],
        "prod-east-md-1"
    );
    let run = common::run(&args(
        &files,
        &[
            "host-labels",
            "--sync-machine-labels",
            "--additional-sync-machine-labels",
            "(unclosed",
        ],
    ));
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr.contains(
            "at least one of --additional-sync-machine-labels regexes is invalid: \"(unclosed\""
        ),
        "{}",
        run.stderr
    );
    let run = common::run(&args(
        &files,
        &["host-labels", "--additional-sync-machine-labels", "x"],
    ));
    assert_eq!(run.exit, Exit::Usage);
}

#[test]
fn report_includes_the_module_audit_when_cluster_api_objects_are_present() {
    let files = files(true);
    let run = common::ok(&args(&files, &["report"]));
    insta::assert_snapshot!("report_management_cluster_table", run.stdout);
    let document = json(&common::ok(&args(&files, &["report", "-o", "json"])));
    assert_eq!(
        document["clusterModules"]["clusters/prod-east"]["audit"]["prod-east-md-0"]["violations"],
        1
    );
    // Cluster API objects without their VSphereCluster: one line says so.
    let without_vsphere_cluster: Vec<String> = ["control-plane.yaml", "workers.yaml"]
        .into_iter()
        .flat_map(|name| ["-f".to_owned(), management(name)])
        .collect();
    let run = common::ok(&args(&without_vsphere_cluster, &["report"]));
    assert!(
        run.stdout.contains("8 Machine(s) and 3 KubeadmControlPlane/MachineDeployment group(s), but no VSphereCluster"),
        "{}",
        run.stdout
    );
    let document = json(&common::ok(&args(
        &without_vsphere_cluster,
        &["report", "-o", "json"],
    )));
    assert!(
        document["clusterModules"]["note"]
            .as_str()
            .is_some_and(|note| note.contains("no VSphereCluster")),
        "{document}"
    );
    // Without Cluster API objects there is no such section.
    let document = json(&common::ok(&["report", "-o", "json"]));
    assert!(document.get("clusterModules").is_none());
}
