//! `affinity --restore` shows the cache volume Velero (1.18.0 and later)
//! gives a restore pod when `cachePVC` is configured (rule A2.28).

mod common;

use common::run_with_stdin;
use policyctl::Exit;
use serde_json::{Value, json};

fn objects(cache_binding: &str, snapshot_size: Option<i64>) -> String {
    let mut text = format!(
        "apiVersion: v1
kind: Node
metadata: {{name: worker-1, labels: {{kubernetes.io/hostname: worker-1, kubernetes.io/os: linux}}}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: local}}
provisioner: local.csi.example.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: scratch}}
provisioner: ebs.csi.aws.com
volumeBindingMode: {cache_binding}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: shop
  annotations: {{volume.kubernetes.io/selected-node: worker-1}}
spec: {{storageClassName: local, accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 10Gi}}}}}}
"
    );
    if let Some(size) = snapshot_size {
        text.push_str(&format!(
            "---
apiVersion: velero.io/v2alpha1
kind: DataDownload
metadata: {{name: restore-shop-x7k2p, namespace: velero}}
spec:
  targetVolume: {{namespace: shop, pvc: data}}
  snapshotSize: {size}
"
        ));
    }
    text
}

fn config(cache: &str) -> String {
    let path = std::env::temp_dir().join(format!(
        "policyctl-cache-{}-{}.json",
        std::process::id(),
        cache.len()
    ));
    std::fs::write(&path, format!(r#"{{"cachePVC": {cache}}}"#)).unwrap();
    path.display().to_string()
}

fn affinity(objects: &str, config: &str, extra: &[&str]) -> (String, Value) {
    let mut outputs = Vec::new();
    for format in ["table", "json"] {
        let mut args = vec!["-f", "-", "--config", config];
        args.extend_from_slice(extra);
        args.extend(["affinity", "--pvc", "shop/data", "--restore", "-o", format]);
        let run = run_with_stdin(&args, objects);
        assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
        outputs.push(run.stdout);
    }
    let json = serde_json::from_str(&outputs[1]).unwrap();
    (outputs.remove(0), json)
}

#[test]
fn a_restore_above_the_threshold_gets_a_cache_claim_pinned_with_its_target() {
    let config = config(r#"{"storageClass": "scratch", "residentThresholdInMB": 1024}"#);
    let (table, json) = affinity(
        &objects("WaitForFirstConsumer", Some(4 << 30)),
        &config,
        &[],
    );
    assert!(
        table.contains(
            "cache volume                               restore-shop-x7k2p-cache (6 GiB of scratch, selected node worker-1)\n"
        ),
        "{table}"
    );
    assert_eq!(
        json["cacheVolume"],
        json!({
            "decision": "volume",
            "claimName": "restore-shop-x7k2p-cache",
            "storageClass": "scratch",
            "sizeBytes": 6_i64 << 30,
            "selectedNode": "worker-1",
            "bindsImmediately": false,
        })
    );
    // Velero 1.17 reads no cachePVC.
    let (old, _) = affinity(
        &objects("WaitForFirstConsumer", Some(4 << 30)),
        &config,
        &["--velero-version", "1.17.2"],
    );
    assert!(
        old.contains("cache volume                               none (no cachePVC)\n"),
        "{old}"
    );
}

#[test]
fn a_small_restore_gets_none_and_an_immediate_cache_class_is_a_warning() {
    let config = config(r#"{"storageClass": "scratch", "residentThresholdInMB": 1024}"#);
    let (small, json) = affinity(&objects("Immediate", Some(100 << 20)), &config, &[]);
    assert!(
        small.contains("none: the restore's 100 MiB is below residentThresholdInMB (1024 MiB)"),
        "{small}"
    );
    assert_eq!(json["cacheVolume"]["decision"], "notNeeded");
    let (large, json) = affinity(&objects("Immediate", None), &config, &[]);
    assert_eq!(json["cacheVolume"]["bindsImmediately"], true);
    let notes = json["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with("the cache class scratch binds immediately")),
        "{large}"
    );
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with("no DataDownload for this PVC in the input")),
        "{large}"
    );
}

/// A restore pod pinned to worker-1 whose cache claim was provisioned (the
/// class binds immediately) on worker-2.
const PINNED_RESTORE_WITH_A_FAR_CACHE: &str = "apiVersion: v1
kind: Node
metadata: {name: worker-1, labels: {kubernetes.io/hostname: worker-1, kubernetes.io/os: linux}}
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}
---
apiVersion: v1
kind: Node
metadata: {name: worker-2, labels: {kubernetes.io/hostname: worker-2, kubernetes.io/os: linux}}
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: scratch}
provisioner: local.csi.example.com
volumeBindingMode: Immediate
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-cache}
spec:
  capacity: {storage: 6Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: scratch
  claimRef: {namespace: velero, name: restore-shop-x7k2p-cache}
  csi: {driver: local.csi.example.com, volumeHandle: cache-1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [worker-2]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: restore-shop-x7k2p-cache, namespace: velero}
spec: {storageClassName: scratch, volumeName: pv-cache, accessModes: [ReadWriteOnce], resources: {requests: {storage: 6Gi}}}
status: {phase: Bound}
---
apiVersion: v1
kind: Pod
metadata:
  name: restore-shop-x7k2p
  namespace: velero
  labels: {velero.io/exposer-pod-group: data-mover-restore}
spec:
  nodeSelector: {kubernetes.io/hostname: worker-1}
  containers: [{name: restore, image: velero/velero:v1.18.3}]
  volumes:
  - name: cachedir
    persistentVolumeClaim: {claimName: restore-shop-x7k2p-cache}
status: {phase: Pending}
";

/// A restore pod already created with its cache claim: `diagnose` checks
/// the claim like any volume, so a cache volume provisioned away from the
/// pinned node is named as the reason.
#[test]
fn diagnose_names_a_cache_volume_provisioned_away_from_the_pinned_node() {
    let objects = PINNED_RESTORE_WITH_A_FAR_CACHE;
    let run = run_with_stdin(
        &[
            "-f",
            "-",
            "diagnose",
            "--pod",
            "velero/restore-shop-x7k2p",
            "-o",
            "json",
        ],
        objects,
    );
    let document: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|error| panic!("{error}: {} {}", run.stdout, run.stderr));
    let problems = document["nodes"]["worker-1"]["problems"].to_string();
    assert!(
        problems.contains(
            "PersistentVolumeClaim restore-shop-x7k2p-cache is bound to PersistentVolume pv-cache, whose spec.nodeAffinity does not match the node's labels"
        ),
        "{document}"
    );
    assert_eq!(document["nodes"]["worker-1"]["fits"], false, "{document}");
}

/// `schedule` runs kube-scheduler's filters on the same pod: the cache
/// claim's volume keeps it off the one node it is pinned to.
#[test]
fn schedule_finds_no_node_for_a_restore_pinned_away_from_its_cache_volume() {
    let run = run_with_stdin(
        &[
            "-f",
            "-",
            "schedule",
            "--pod",
            "velero/restore-shop-x7k2p",
            "-o",
            "json",
        ],
        PINNED_RESTORE_WITH_A_FAR_CACHE,
    );
    let document: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|error| panic!("{error}: {} {}", run.stdout, run.stderr));
    assert_eq!(document["feasible"], json!([]), "{document}");
    assert_eq!(
        document["unschedulable"]["worker-1"],
        "node(s) didn't match PersistentVolume's node affinity",
        "{document}"
    );
    let summary = document["summary"].to_string();
    assert!(
        summary.contains("1 node(s) didn't match PersistentVolume's node affinity"),
        "{document}"
    );
}
