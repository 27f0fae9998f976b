//! `schedule` and `diagnose` on the cluster of a real report: a pod asking
//! for 4 CPUs, one node tainted `dedicated=infra:NoSchedule`, one cordoned,
//! one with 100m CPU allocatable. kube-scheduler answers `0/3 nodes are
//! available: 1 Insufficient cpu, 1 node(s) had untolerated taint
//! {dedicated: infra}, 1 node(s) were unschedulable.`; so must policyctl.

mod common;

use common::run_with_stdin;
use policyctl::Exit;

const CLUSTER: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: infra-1, labels: {kubernetes.io/hostname: infra-1}}
spec:
  taints: [{key: dedicated, value: infra, effect: NoSchedule}]
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: worker-1, labels: {kubernetes.io/hostname: worker-1}}
spec: {unschedulable: true}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: worker-2, labels: {kubernetes.io/hostname: worker-2}}
status: {allocatable: {cpu: 100m, memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: shop}
spec:
  containers:
  - name: app
    image: registry.example/app:1
    resources: {requests: {cpu: "4", memory: 1Gi}}
status: {phase: Pending}
---
apiVersion: v1
kind: Pod
metadata: {name: agent, namespace: shop}
spec:
  nodeName: worker-2
  containers:
  - name: agent
    image: registry.example/agent:1
    ports: [{containerPort: 9100, hostPort: 9100}]
    resources: {requests: {cpu: 50m}}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: exporter, namespace: shop}
spec:
  tolerations: [{operator: Exists}]
  containers:
  - name: exporter
    image: registry.example/exporter:1
    ports: [{containerPort: 9100, hostPort: 9100}]
status: {phase: Pending}
"#;

fn ok(args: &[&str]) -> String {
    let mut all = vec!["-f", "-"];
    all.extend_from_slice(args);
    let run = run_with_stdin(&all, CLUSTER);
    assert_eq!(run.exit, Exit::Success, "policyctl {all:?}: {}", run.stderr);
    run.stdout
}

#[test]
fn a_4_cpu_pod_on_a_tainted_a_cordoned_and_a_100m_node() {
    let table = ok(&["schedule", "--pod", "shop/big"]);
    insta::assert_snapshot!("schedule_three_nodes_table", table);
    let json = ok(&["schedule", "--pod", "shop/big", "-o", "json"]);
    insta::assert_snapshot!("schedule_three_nodes_json", json);
    let document: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(
        document["summary"],
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: infra}, 1 node(s) were unschedulable."
    );
    assert_eq!(document["feasible"], serde_json::json!([]));
}

#[test]
fn diagnose_names_the_taint_the_cordon_and_the_cpu() {
    let table = ok(&["diagnose", "--pod", "shop/big"]);
    insta::assert_snapshot!("diagnose_three_nodes_table", table);
    for expected in [
        "dedicated=infra:NoSchedule",
        "cordoned (spec.unschedulable: true)",
        "cpu: the pod requests 4, the node has 100m allocatable of which 50m is requested",
    ] {
        assert!(
            table.contains(expected),
            "{expected:?} missing from\n{table}"
        );
    }
}

#[test]
fn a_host_port_in_use_and_a_tolerating_pod() {
    // The exporter tolerates every taint and the cordon; worker-2 already
    // runs a pod on host port 9100.
    let table = ok(&["schedule", "--pod", "shop/exporter"]);
    insta::assert_snapshot!("schedule_host_port_table", table);
    let diagnose = ok(&["diagnose", "--pod", "shop/exporter"]);
    assert!(
        diagnose.contains("host port 9100/TCP on 0.0.0.0 is taken: pod shop/agent on this node uses 9100/TCP on 0.0.0.0"),
        "{diagnose}"
    );
}
