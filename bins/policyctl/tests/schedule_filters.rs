//! `schedule` and `diagnose` on the cluster of a real report: a pod asking
//! for 4 CPUs, one node tainted `dedicated=infra:NoSchedule`, one cordoned,
//! one with 100m CPU allocatable. kube-scheduler answers `0/3 nodes are
//! available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), 1
//! node(s) were unschedulable.` (kube-scheduler 1.35 names no taint);
//! so must policyctl.

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
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable."
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

/// Three zones; a pod whose claim is bound to a volume in zone `a` and
/// `c`, and a pod whose local volume's node affinity names one host.
const ZONED: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a, topology.kubernetes.io/zone: zone-a}}
- apiVersion: v1
  kind: Node
  metadata: {name: node-b, labels: {kubernetes.io/hostname: node-b, topology.kubernetes.io/zone: zone-b}}
- apiVersion: v1
  kind: Node
  metadata: {name: node-c, labels: {kubernetes.io/hostname: node-c, topology.kubernetes.io/zone: zone-c}}
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata: {name: zonal}
  provisioner: ebs.csi.aws.com
  volumeBindingMode: WaitForFirstConsumer
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv-data, labels: {topology.kubernetes.io/zone: zone-a__zone-c}}
  spec:
    capacity: {storage: 10Gi}
    accessModes: [ReadWriteOnce]
    storageClassName: zonal
    csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0a}
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv-local}
  spec:
    capacity: {storage: 10Gi}
    accessModes: [ReadWriteOnce]
    storageClassName: local
    local: {path: /mnt/disks/1}
    nodeAffinity:
      required:
        nodeSelectorTerms:
        - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node-b]}]
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: data, namespace: shop, annotations: {pv.kubernetes.io/bind-completed: "yes"}}
  spec: {volumeName: pv-data, storageClassName: zonal, accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
  status: {phase: Bound}
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: cache, namespace: shop}
  spec: {volumeName: pv-local, storageClassName: local, accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
  status: {phase: Bound}
- apiVersion: storage.k8s.io/v1
  kind: CSINode
  metadata: {name: node-c}
  spec:
    drivers: [{name: ebs.csi.aws.com, nodeID: i-0c, allocatable: {count: 0}}]
- apiVersion: v1
  kind: Pod
  metadata: {name: db-0, namespace: shop}
  spec:
    containers: [{name: db, image: registry.example/db:1}]
    volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
  status: {phase: Pending}
- apiVersion: v1
  kind: Pod
  metadata: {name: cache-0, namespace: shop}
  spec:
    containers: [{name: cache, image: registry.example/cache:1}]
    volumes: [{name: cache, persistentVolumeClaim: {claimName: cache}}]
  status: {phase: Pending}
"#;

fn zoned(args: &[&str]) -> String {
    let mut all = vec!["-f", "-"];
    all.extend_from_slice(args);
    let run = run_with_stdin(&all, ZONED);
    assert_eq!(run.exit, Exit::Success, "policyctl {all:?}: {}", run.stderr);
    run.stdout
}

#[test]
fn diagnose_says_which_volume_zone_or_node_affinity_keeps_a_pod_off_each_node() {
    // node-a fits; node-b is in another zone; node-c is in the volume's
    // zone but its CSINode admits no more EBS volumes.
    insta::assert_snapshot!(
        "diagnose_volume_zone_table",
        zoned(&["diagnose", "--pod", "shop/db-0"])
    );
    insta::assert_snapshot!(
        "diagnose_volume_node_affinity_table",
        zoned(&["diagnose", "--pod", "shop/cache-0"])
    );
    let schedule = zoned(&["schedule", "--pod", "shop/db-0", "-o", "json"]);
    let document: serde_json::Value = serde_json::from_str(&schedule).expect("JSON");
    assert_eq!(document["selected"], "node-a", "{schedule}");
    assert_eq!(
        document["unschedulable"]["node-b"],
        "node(s) had no available volume zone"
    );
    assert_eq!(
        document["unschedulable"]["node-c"],
        "node(s) exceed max volume count"
    );
    let all = zoned(&["schedule", "--all", "-o", "json"]);
    let document: serde_json::Value = serde_json::from_str(&all).expect("JSON");
    assert_eq!(
        document["assignments"],
        serde_json::json!({"shop/cache-0": "node-b", "shop/db-0": "node-a"}),
        "{all}"
    );
}
