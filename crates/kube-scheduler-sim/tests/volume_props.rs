//! Property tests of the volume filters (C.50–C.54) on random clusters:
//! the indexed evaluator against the brute-force reference, AddPod/RemovePod,
//! and one invariant of each filter over batch placement.

mod oracle;
mod support;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube_scheduler_sim::{ClusterState, Options, StorageObjects, schedule_all_with_storage};
use oracle as reference;
use proptest::prelude::*;
use serde_json::{Value, json};

const ZONE: &str = "topology.kubernetes.io/zone";
const DRIVER: &str = "csi.example.com";

#[derive(Debug, Clone)]
struct Cluster {
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    storage: StorageObjects,
    incoming: Pod,
}

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

/// Claim `i`: 0 bound with a zone label, 1 bound with node affinity,
/// 2 unbound WaitForFirstConsumer (provisioned in zone a), 3 bound to a
/// missing PV, 4 missing.
fn claim_kind() -> impl Strategy<Value = (u8, bool, u8)> {
    (0..5u8, prop::bool::weighted(0.3), 0..3u8)
}

fn volumes_of(claims: &[usize], disks: &[(u8, bool)]) -> Value {
    let mut v: Vec<Value> = claims
        .iter()
        .map(|c| json!({"name": format!("c{c}"), "persistentVolumeClaim": {"claimName": format!("c{c}")}}))
        .collect();
    for (i, (id, gce)) in disks.iter().enumerate() {
        v.push(if *gce {
            json!({"name": format!("d{i}"), "gcePersistentDisk": {"pdName": format!("pd{id}"), "readOnly": id % 2 == 0}})
        } else {
            json!({"name": format!("d{i}"), "awsElasticBlockStore": {"volumeID": format!("ebs{id}")}})
        });
    }
    json!(v)
}

fn pod(name: &str, node: Option<String>, volumes: Value) -> Pod {
    let mut spec = json!({"containers": [], "volumes": volumes});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    from(json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec}))
}

fn pod_volumes() -> impl Strategy<Value = (Vec<usize>, Vec<(u8, bool)>)> {
    (
        prop::sample::subsequence((0..6usize).collect::<Vec<_>>(), 0..3),
        prop::collection::vec((0..3u8, any::<bool>()), 0..2),
    )
}

fn cluster() -> impl Strategy<Value = Cluster> {
    (
        prop::collection::vec((prop::sample::select(vec!["a", "b", ""]), prop::option::of(0..3i32)), 1..5),
        prop::collection::vec(claim_kind(), 6),
        prop::collection::vec((0..5usize, pod_volumes()), 0..6),
        pod_volumes(),
    )
        .prop_map(|(node_specs, claim_specs, placed, incoming)| {
            let nodes: Vec<Node> = node_specs
                .iter()
                .enumerate()
                .map(|(i, (zone, _))| {
                    let mut labels = json!({"kubernetes.io/hostname": format!("n{i}")});
                    if !zone.is_empty() {
                        labels[ZONE] = json!(zone);
                    }
                    from(json!({"metadata": {"name": format!("n{i}"), "labels": labels}}))
                })
                .collect();
            let csi_nodes: Vec<CSINode> = node_specs
                .iter()
                .enumerate()
                .filter_map(|(i, (_, limit))| {
                    let limit = (*limit)?;
                    Some(from(json!({"metadata": {"name": format!("n{i}")},
                        "spec": {"drivers": [{"name": DRIVER, "nodeID": format!("n{i}"), "allocatable": {"count": limit}}]}})))
                })
                .collect();
            let mut claims: Vec<PersistentVolumeClaim> = Vec::new();
            let mut pvs: Vec<PersistentVolume> = Vec::new();
            for (i, (kind, rwop, zone)) in claim_specs.iter().enumerate() {
                let name = format!("c{i}");
                let pv = format!("pv{i}");
                let zone = ["a", "b", "a__b"][*zone as usize];
                let modes = if *rwop { json!(["ReadWriteOncePod"]) } else { json!(["ReadWriteOnce"]) };
                match kind {
                    0 | 1 | 3 => claims.push(from(json!({"metadata": {"name": name, "namespace": "default"},
                        "spec": {"volumeName": pv, "accessModes": modes}, "status": {"phase": "Bound"}}))),
                    2 => claims.push(from(json!({"metadata": {"name": name, "namespace": "default"},
                        "spec": {"storageClassName": "wait", "accessModes": modes}}))),
                    _ => {}
                }
                let csi = json!({"driver": DRIVER, "volumeHandle": format!("h{i}")});
                match kind {
                    0 => pvs.push(from(json!({"metadata": {"name": pv, "labels": {ZONE: zone}}, "spec": {"csi": csi}}))),
                    1 => pvs.push(from(json!({"metadata": {"name": pv}, "spec": {"csi": csi, "nodeAffinity": {"required": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": zone.split("__").collect::<Vec<_>>()}]}]}}}}))),
                    _ => {}
                }
            }
            let classes: Vec<StorageClass> = vec![from(json!({"metadata": {"name": "wait"}, "provisioner": DRIVER,
                "volumeBindingMode": "WaitForFirstConsumer",
                "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}]}))];
            let pods = placed
                .iter()
                .enumerate()
                .map(|(i, (n, (c, d)))| pod(&format!("p{i}"), Some(format!("n{}", n % nodes.len())), volumes_of(c, d)))
                .collect();
            Cluster {
                nodes,
                pods,
                storage: StorageObjects { claims, volumes: pvs, classes, csi_nodes },
                incoming: pod("incoming", None, volumes_of(&incoming.0, &incoming.1)),
            }
        })
}

fn state(c: &Cluster) -> ClusterState {
    let mut s = ClusterState::new(&c.nodes, &[], &c.pods, true);
    s.set_storage(&c.storage);
    s
}

/// The placed pods followed by `n` pending copies of the incoming pod.
fn with_batch(c: &Cluster, n: usize) -> Vec<Pod> {
    let mut pods = c.pods.clone();
    pods.extend(batch(c, n));
    pods
}

/// The pending copies of the incoming pod, as a batch.
fn batch(c: &Cluster, n: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            let mut p = c.incoming.clone();
            p.metadata.name = Some(format!("r{i}"));
            p
        })
        .collect()
}

fn node_labels(c: &Cluster, name: &str) -> BTreeMap<String, String> {
    c.nodes
        .iter()
        .find(|n| n.metadata.name.as_deref() == Some(name))
        .and_then(|n| n.metadata.labels.clone())
        .unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Verdicts, messages and the selected node agree with the reference.
    #[test]
    fn volume_filters_equal_brute_force_reference_on_random_clusters(c in cluster()) {
        let fast = state(&c).evaluate(&c.incoming, &Options::default()).unwrap();
        let slow = reference::evaluate_with_storage(&c.nodes, &[], &c.pods, &c.storage, &c.incoming, &Options::default());
        prop_assert_eq!(fast, slow);
    }

    /// AddPod then RemovePod restores the claim users, disks and attached
    /// volumes (C.54).
    #[test]
    fn add_pod_then_remove_pod_restores_the_volume_counts(c in cluster(), node in 0..5usize) {
        let mut s = state(&c);
        let before = s.index_fingerprint();
        let mut added = c.incoming.clone();
        added.spec.as_mut().unwrap().node_name = Some(format!("n{}", node % c.nodes.len()));
        let id = s.add_pod(&added).unwrap();
        s.remove_pod(id).unwrap();
        prop_assert_eq!(s.index_fingerprint(), before);
    }

    /// Placing a batch keeps every node within its CSI attach limit when it
    /// started within it (NodeVolumeLimits), and each placement agrees with
    /// the reference on the growing pod list.
    #[test]
    fn batch_placement_never_exceeds_a_node_csi_volume_limit(c in cluster(), replicas in 1..5usize) {
        let r = schedule_all_with_storage(&c.nodes, &[], &with_batch(&c, replicas), &c.storage, &Options::default()).unwrap();
        let mut pods = c.pods.clone();
        for (p, got) in batch(&c, replicas).iter().zip(&r.placements) {
            let want = reference::evaluate_with_storage(&c.nodes, &[], &pods, &c.storage, p, &Options::default()).selected;
            prop_assert_eq!(&got.node, &want);
            if let Some(n) = &got.node {
                let mut bound = p.clone();
                bound.spec.as_mut().unwrap().node_name = Some(n.clone());
                // The node takes no new volume beyond its limit.
                let limit = c.storage.csi_nodes.iter().find(|x| x.metadata.name.as_deref() == Some(n.as_str()))
                    .and_then(|x| x.spec.drivers[0].allocatable.as_ref()?.count);
                let handles = |pods: &[Pod]| -> BTreeSet<String> {
                    pods.iter()
                        .filter(|q| q.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(n.as_str()))
                        .flat_map(|q| q.spec.as_ref().and_then(|s| s.volumes.clone()).unwrap_or_default())
                        .filter_map(|v| v.persistent_volume_claim.map(|c| c.claim_name))
                        .filter(|claim| c.storage.claims.iter().any(|x| x.metadata.name.as_deref() == Some(claim.as_str())))
                        .filter(|claim| {
                            let x = c.storage.claims.iter().find(|x| x.metadata.name.as_deref() == Some(claim.as_str())).unwrap();
                            let vn = x.spec.as_ref().and_then(|s| s.volume_name.clone()).unwrap_or_default();
                            vn.is_empty() || c.storage.volumes.iter().any(|v| v.metadata.name.as_deref() == Some(vn.as_str()))
                        })
                        .collect()
                };
                let before = handles(&pods).len();
                pods.push(bound);
                let after = handles(&pods).len();
                if let Some(limit) = limit && after > before {
                    prop_assert!(after as i64 <= i64::from(limit));
                }
            }
        }
    }

    /// A placed pod never lands outside the zone of a bound volume's zone
    /// label (VolumeZone) nor outside a bound volume's node affinity
    /// (VolumeBinding), and never next to a conflicting inline disk
    /// (VolumeRestrictions).
    #[test]
    fn placed_pods_respect_volume_zones_node_affinity_and_disk_conflicts(c in cluster()) {
        let r = schedule_all_with_storage(&c.nodes, &[], &with_batch(&c, 1), &c.storage, &Options::default()).unwrap();
        let Some(n) = r.placements[0].node.clone() else { return Ok(()) };
        let labels = node_labels(&c, &n);
        let zone = labels.get(ZONE);
        for v in c.incoming.spec.as_ref().unwrap().volumes.clone().unwrap_or_default() {
            if let Some(claim) = v.persistent_volume_claim {
                let pv_name = format!("pv{}", &claim.claim_name[1..]);
                if let Some(pv) = c.storage.volumes.iter().find(|x| x.metadata.name.as_deref() == Some(pv_name.as_str())) {
                    let allowed: Vec<String> = pv.metadata.labels.as_ref().and_then(|l| l.get(ZONE)).cloned()
                        .or_else(|| pv.spec.as_ref()?.node_affinity.as_ref()?.required.as_ref()?.node_selector_terms[0]
                            .match_expressions.as_ref()?[0].values.as_ref().map(|v| v.join("__")))
                        .unwrap_or_default().split("__").map(str::to_owned).collect();
                    let via_label = pv.metadata.labels.as_ref().is_some_and(|l| l.contains_key(ZONE));
                    // Unlabelled nodes pass VolumeZone (single-zone clusters).
                    if !(via_label && zone.is_none()) {
                        prop_assert!(zone.is_some_and(|z| allowed.contains(z)), "{n} {zone:?} {allowed:?}");
                    }
                }
            }
            if let Some(e) = v.aws_elastic_block_store {
                let clash = c.pods.iter().any(|p| {
                    p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(n.as_str())
                        && p.spec.as_ref().and_then(|s| s.volumes.clone()).unwrap_or_default().iter()
                            .any(|w| w.aws_elastic_block_store.as_ref().is_some_and(|x| x.volume_id == e.volume_id))
                });
                prop_assert!(!clash);
            }
        }
    }
}
