//! Verdicts that name their cause: data movers without node-agent pods in
//! the input, other data movers, copies on nodes without a topology key,
//! kube-scheduler's own skips and nominated nodes, required and preferred
//! host rules.

mod common;

use common::run_with_stdin;
use policyctl::Exit;
use serde_json::Value;

fn ok_with(args: &[&str], input: &str) -> String {
    let mut all = vec!["-f", "-"];
    all.extend_from_slice(args);
    let run = run_with_stdin(&all, input);
    assert_eq!(run.exit, Exit::Success, "policyctl {all:?}: {}", run.stderr);
    run.stdout
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).expect("JSON output")
}

const NODE: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: worker-1
  labels:
    kubernetes.io/os: linux
    kubernetes.io/hostname: worker-1
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "20"}
"#;

const UPLOADS: &str = r#"
---
apiVersion: velero.io/v2alpha1
kind: DataUpload
metadata:
  name: du-csi
  namespace: velero
spec:
  snapshotType: CSI
  sourceNamespace: shop
  sourcePVC: data-0
  csiSnapshot:
    storageClass: fast
status:
  phase: New
---
apiVersion: velero.io/v2alpha1
kind: DataUpload
metadata:
  name: du-vm
  namespace: velero
spec:
  datamover: kubevirt
  snapshotType: CSI
  sourceNamespace: vms
  sourcePVC: ""
status:
  phase: New
"#;

const NODE_AGENT_NOT_READY: &str = r#"
---
apiVersion: v1
kind: Pod
metadata:
  name: node-agent-abcde
  namespace: velero
  labels: {name: node-agent}
spec:
  nodeName: worker-1
  containers: [{name: node-agent, image: velero}]
status:
  phase: Pending
"#;

#[test]
fn a_data_mover_without_node_agent_pods_in_the_input_says_so() {
    let input = format!("{NODE}{UPLOADS}");
    let table = ok_with(&["report"], &input);
    assert!(!table.contains("can never schedule"), "{table}");
    assert!(
        table.contains("Note: the input has no node-agent pods"),
        "{table}"
    );
    let doc = json(&ok_with(&["report", "-o", "json"], &input));
    let entry = &doc["dataMovers"]["DataUpload/velero/du-csi"];
    assert_eq!(entry["nodeAgents"], "not in input", "{entry}");
    assert_eq!(entry["schedulableNodes"][0], "worker-1", "{entry}");
}

#[test]
fn a_data_mover_whose_node_agent_is_not_ready_names_that_cause() {
    let input = format!("{NODE}{UPLOADS}{NODE_AGENT_NOT_READY}");
    let table = ok_with(&["report"], &input);
    assert!(!table.contains("can never schedule"), "{table}");
    assert!(
        !table.contains("Note: the input has no node-agent"),
        "{table}"
    );
    let doc = json(&ok_with(&["report", "-o", "json"], &input));
    let entry = &doc["dataMovers"]["DataUpload/velero/du-csi"];
    assert_eq!(
        entry["cause"],
        "no node-agent pod is Running and Ready on worker-1, the node(s) that match otherwise",
        "{entry}"
    );
    assert_eq!(entry["nodeAgents"], Value::Null, "{entry}");
}

#[test]
fn a_load_of_another_data_mover_is_left_to_it() {
    let input = format!("{NODE}{UPLOADS}");
    let table = ok_with(&["report"], &input);
    assert!(!table.contains("vms/ is not in the input"), "{table}");
    assert!(!table.contains("is not in the input"), "{table}");
    let doc = json(&ok_with(&["report", "-o", "json"], &input));
    let entry = &doc["dataMovers"]["DataUpload/velero/du-vm"];
    assert_eq!(entry["dataMover"], "kubevirt", "{entry}");
    assert_eq!(entry["error"], Value::Null, "{entry}");
    assert!(
        entry["note"]
            .as_str()
            .expect("note")
            .starts_with("not Velero's data mover: spec.datamover is \"kubevirt\""),
        "{entry}"
    );
}

const SPREAD: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: a
  labels: {kubernetes.io/hostname: a}
status:
  allocatable: {cpu: "8", memory: 8Gi, pods: "10"}
---
apiVersion: v1
kind: Node
metadata:
  name: b
  labels: {kubernetes.io/hostname: b}
status:
  allocatable: {cpu: "8", memory: 8Gi, pods: "10"}
---
apiVersion: v1
kind: Node
metadata:
  name: c-unlabelled
status:
  allocatable: {cpu: "8", memory: 8Gi, pods: "6"}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: web, image: web}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels: {app: web}
            topologyKey: kubernetes.io/hostname
"#;

#[test]
fn capacity_flags_copies_on_a_node_without_the_topology_key() {
    let table = ok_with(&["capacity", "--workload", "deployment/shop/web"], SPREAD);
    insta::assert_snapshot!("verdicts_capacity_missing_topology_key", table);
    let doc = json(&ok_with(
        &[
            "capacity",
            "--workload",
            "deployment/shop/web",
            "-o",
            "json",
        ],
        SPREAD,
    ));
    assert_eq!(doc["count"], 8, "{doc}");
    assert_eq!(doc["copiesOnNodesMissingTopologyKey"], 6, "{doc}");
    assert_eq!(
        doc["nodesMissingTopologyKey"]["c-unlabelled"][0],
        "kubernetes.io/hostname"
    );
}

#[test]
fn report_does_not_count_spare_replicas_on_a_node_without_the_topology_key() {
    let table = ok_with(&["report"], SPREAD);
    let doc = json(&ok_with(&["report", "-o", "json"], SPREAD));
    let entry = &doc["spareReplicas"]["shop/web"];
    assert_eq!(entry["moreReplicasFit"], 2, "{entry}");
    assert_eq!(entry["notCounted"]["copies"], 6, "{entry}");
    assert!(
        entry["notCounted"]["reason"]
            .as_str()
            .expect("reason")
            .contains("6 on c-unlabelled (no label kubernetes.io/hostname)"),
        "{entry}"
    );
    assert!(table.contains("c-unlabelled ×6"), "{table}");
}

const SKIPS: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {kubernetes.io/hostname: n1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "20"}
---
apiVersion: v1
kind: Node
metadata:
  name: n2
  labels: {kubernetes.io/hostname: n2}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "20"}
---
apiVersion: v1
kind: Pod
metadata: {name: gated, namespace: app}
spec:
  schedulingGates: [{name: example.com/quota}]
  containers: [{name: c, image: c}]
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere, namespace: app}
spec:
  schedulerName: volcano
  containers: [{name: c, image: c}]
---
apiVersion: v1
kind: Pod
metadata: {name: leaving, namespace: app, deletionTimestamp: "2026-05-20T01:00:00Z"}
spec:
  containers: [{name: c, image: c}]
---
apiVersion: v1
kind: Pod
metadata: {name: holder, namespace: app}
spec:
  priority: 100
  containers: [{name: c, image: c, ports: [{containerPort: 80, hostPort: 80}]}]
status:
  phase: Pending
  nominatedNodeName: n2
---
apiVersion: v1
kind: Pod
metadata: {name: low, namespace: app}
spec:
  priority: 1
  containers: [{name: c, image: c, ports: [{containerPort: 80, hostPort: 80}]}]
"#;

#[test]
fn diagnose_names_kube_schedulers_own_skips() {
    let table = ok_with(&["diagnose", "--pod", "app/gated"], SKIPS);
    insta::assert_snapshot!("verdicts_diagnose_gated", table);
    assert!(!table.contains("node(s) can run it"), "{table}");
    let doc = json(&ok_with(
        &["diagnose", "--pod", "app/gated", "-o", "json"],
        SKIPS,
    ));
    assert_eq!(doc["skipped"]["kind"], "scheduling gated");
    assert_eq!(doc["schedulable"], Value::Array(Vec::new()));
    let other = ok_with(&["diagnose", "--pod", "app/elsewhere"], SKIPS);
    assert!(
        other.contains("spec.schedulerName is \"volcano\""),
        "{other}"
    );
    let leaving = ok_with(&["diagnose", "--pod", "app/leaving"], SKIPS);
    assert!(leaving.contains("being deleted"), "{leaving}");
}

#[test]
fn schedule_and_capacity_name_kube_schedulers_own_skips() {
    let one = ok_with(&["schedule", "--pod", "app/elsewhere"], SKIPS);
    assert!(
        one.contains("kube-scheduler does not try to place it"),
        "{one}"
    );
    let all = json(&ok_with(&["schedule", "--all", "-o", "json"], SKIPS));
    assert_eq!(all["assignments"]["app/gated"], Value::Null, "{all}");
    assert!(
        all["unschedulable"]["app/leaving"]
            .as_str()
            .expect("reason")
            .contains("being deleted"),
        "{all}"
    );
    let capacity = json(&ok_with(
        &["capacity", "--pod", "app/gated", "-o", "json"],
        SKIPS,
    ));
    assert_eq!(capacity["count"], 0);
    assert_eq!(capacity["skipped"]["kind"], "scheduling gated");
}

#[test]
fn a_nominated_pod_keeps_its_node_from_lower_priority_pods() {
    let doc = json(&ok_with(
        &["schedule", "--pod", "app/low", "-o", "json"],
        SKIPS,
    ));
    assert_eq!(doc["feasible"], serde_json::json!(["n1"]), "{doc}");
    let table = ok_with(&["diagnose", "--pod", "app/low"], SKIPS);
    assert!(
        table.contains("room on this node is kept for the pending pods nominated to it"),
        "{table}"
    );
    let holder = json(&ok_with(
        &["schedule", "--pod", "app/holder", "-o", "json"],
        SKIPS,
    ));
    assert_eq!(holder["selected"], "n2", "{holder}");
    assert_eq!(holder["nominatedNode"], "n2", "{holder}");
}

const HOSTS: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {node.cluster.x-k8s.io/esxi-host: esx1}
---
apiVersion: v1
kind: Node
metadata:
  name: n2
  labels: {node.cluster.x-k8s.io/esxi-host: esx1}
"#;

fn host_pod(name: &str, owner: &str, node: &str, required: bool) -> String {
    let rule = if required {
        "requiredDuringSchedulingIgnoredDuringExecution:\n          - labelSelector: {matchLabels: {app: OWNER}}\n            topologyKey: node.cluster.x-k8s.io/esxi-host"
    } else {
        "preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 100\n            podAffinityTerm:\n              labelSelector: {matchLabels: {app: OWNER}}\n              topologyKey: node.cluster.x-k8s.io/esxi-host"
    }
    .replace("OWNER", owner);
    format!(
        r#"
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: app
  labels: {{app: {owner}}}
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: {owner}, uid: u-{owner}, controller: true}}]
spec:
  nodeName: {node}
  containers: [{{name: c, image: c}}]
  affinity:
    podAntiAffinity:
        {rule}
status:
  phase: Running
"#
    )
}

#[test]
fn the_host_audit_lists_required_rules_and_summarises_preferred_ones() {
    let mut input = HOSTS.to_owned();
    for (name, node) in [("soft-1", "n1"), ("soft-2", "n2")] {
        input.push_str(&host_pod(name, "soft", node, false));
    }
    for (name, node) in [("hard-1", "n1"), ("hard-2", "n2")] {
        input.push_str(&host_pod(name, "hard", node, true));
    }
    let table = ok_with(&["host-labels"], &input);
    insta::assert_snapshot!("verdicts_host_audit_required_and_preferred", table);
    assert!(!table.contains("app/soft-1, app/soft-2"), "{table}");
    let doc = json(&ok_with(&["host-labels", "-o", "json"], &input));
    let shared = doc["audit"]["sharedHosts"].as_array().expect("sharedHosts");
    let rules: Vec<(&str, &str)> = shared
        .iter()
        .map(|s| {
            (
                s["pods"][0].as_str().expect("pod"),
                s["rule"].as_str().expect("rule"),
            )
        })
        .collect();
    assert_eq!(
        rules,
        vec![("app/hard-1", "required"), ("app/soft-1", "preferred")]
    );
    assert_eq!(doc["audit"]["preferredSummary"][0]["pods"], 2);
}
