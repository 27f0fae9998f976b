//! `schedule` reads Services, ReplicationControllers, ReplicaSets and
//! StatefulSets from the input: a ReplicaSet's pod without constraints of
//! its own is spread by kube-scheduler's system defaults (hostname maxSkew
//! 3, zone maxSkew 5) over the ReplicaSet's selector, and the JSON carries
//! every plugin's scores and the weighted totals.

mod common;

use common::run_with_stdin;

const CLUSTER: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: a, labels: {kubernetes.io/hostname: a, topology.kubernetes.io/zone: z1}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: b, labels: {kubernetes.io/hostname: b, topology.kubernetes.io/zone: z2}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-1, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: web:1}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1-a
  namespace: shop
  labels: {app: web}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-1, uid: u1, controller: true}]
spec:
  nodeName: a
  containers: [{name: web, image: web:1, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1-b
  namespace: shop
  labels: {app: web}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-1, uid: u1, controller: true}]
spec:
  containers: [{name: web, image: web:1, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
status: {phase: Pending}
"#;

#[test]
fn a_replica_set_pod_is_spread_by_the_system_defaults() {
    let run = run_with_stdin(
        &["schedule", "--pod", "shop/web-1-b", "-f", "-", "-o", "json"],
        CLUSTER,
    );
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let spread = &json["scores"]["podTopologySpread"];
    assert_eq!(spread["skipped"], false, "{json:#}");
    // a already runs a replica: b is preferred on both default constraints.
    assert_eq!(spread["normalized"]["b"], 100);
    assert!(spread["normalized"]["a"].as_i64().unwrap() < 100);
    assert_eq!(json["selected"], "b");
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn added_affinity_filters_and_scores_every_pod() {
    let file = std::env::temp_dir().join(format!("added-affinity-{}.yaml", std::process::id()));
    std::fs::write(
        &file,
        "requiredDuringSchedulingIgnoredDuringExecution:\n  nodeSelectorTerms:\n  - matchExpressions:\n    - {key: topology.kubernetes.io/zone, operator: In, values: [z1]}\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let args = [
        "schedule",
        "--pod",
        "shop/web-1-b",
        "--added-affinity",
        path,
        "-f",
        "-",
        "-o",
        "json",
    ];
    let run = run_with_stdin(&args, CLUSTER);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(json["selected"], "a");
    assert_eq!(
        json["unschedulable"]["b"],
        "node(s) didn't match scheduler-enforced node affinity"
    );
    std::fs::write(
        &file,
        "requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}\n",
    )
    .unwrap();
    let run = run_with_stdin(&args, CLUSTER);
    assert!(
        run.stderr
            .contains("must have at least one node selector term"),
        "{}",
        run.stderr
    );
    std::fs::remove_file(&file).unwrap();
}
