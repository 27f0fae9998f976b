//! The volume filters of the default profile — VolumeRestrictions,
//! NodeVolumeLimits, VolumeBinding, VolumeZone — with the rows of
//! kube-scheduler's own tables (`volume_restrictions_test.go`,
//! `csi_test.go` TestCSILimits, `volume_binding_test.go` TestVolumeBinding,
//! `volume_zone_test.go` TestSingleZone / TestMultiZone / TestWithBinding),
//! run through the whole profile: where upstream tests one plugin alone and
//! an earlier plugin of the profile answers first, the row says so.
//!
//! Every row runs through [`support::eval_storage`], so the indexed
//! evaluator and the brute-force reference must agree on it as well.

mod oracle;
mod support;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube_scheduler_sim::{
    ClusterState, Code, Options, Plugin, StorageObjects, diagnose, schedule_all_with_storage,
};
use serde_json::{Value, json};
use support::*;

const DISK: &str = "node(s) had no available disk";
const RWOP: &str = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";
const MAX_VOLUMES: &str = "node(s) exceed max volume count";
const NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
const BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
const UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";
const ZONE: &str = "node(s) had no available volume zone";
const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
const GA_ZONE: &str = "topology.kubernetes.io/zone";
const GA_REGION: &str = "topology.kubernetes.io/region";

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

/// A pod in `default` with the given volumes, bound to `node` if given.
fn vpod(name: &str, node: Option<&str>, volumes: Value) -> Pod {
    let mut spec = json!({"volumes": volumes});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    pod("default", name, &[], node, spec)
}

fn claim_vol(claim: &str) -> Value {
    json!({"name": claim, "persistentVolumeClaim": {"claimName": claim}})
}

/// A claim bound to `pv` (phase Bound).
fn bound_claim(name: &str, pv: &str) -> PersistentVolumeClaim {
    from(json!({"metadata": {"name": name, "namespace": "default"},
        "spec": {"volumeName": pv}, "status": {"phase": "Bound"}}))
}

/// An unbound claim of `class`, with extra spec fields.
fn unbound_claim(name: &str, class: &str, extra: Value) -> PersistentVolumeClaim {
    let mut spec = json!({"storageClassName": class});
    if let Value::Object(m) = extra {
        for (k, v) in m {
            spec[k] = v;
        }
    }
    from(json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec}))
}

fn pv(name: &str, labels: &[(&str, &str)], spec: Value) -> PersistentVolume {
    let labels: std::collections::BTreeMap<&str, &str> = labels.iter().copied().collect();
    from(json!({"metadata": {"name": name, "labels": labels}, "spec": spec}))
}

fn class(name: &str, provisioner: &str, mode: &str, topologies: Value) -> StorageClass {
    let mut c =
        json!({"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode});
    if !topologies.is_null() {
        c["allowedTopologies"] = topologies;
    }
    from(c)
}

fn storage(
    claims: Vec<PersistentVolumeClaim>,
    volumes: Vec<PersistentVolume>,
    classes: Vec<StorageClass>,
    csi_nodes: Vec<CSINode>,
) -> StorageObjects {
    StorageObjects {
        claims,
        volumes,
        classes,
        csi_nodes,
    }
}

/// The verdict on node `n`: "ok" or the message, and the failing plugin.
fn on(r: &kube_scheduler_sim::ScheduleResult, n: &str) -> (String, Option<Plugin>) {
    match r.unschedulable.get(n) {
        None => (OK.to_owned(), None),
        Some(f) => (f.message.clone(), Some(f.plugin)),
    }
}

// ---------------------------------------------------------------- VolumeZone

/// TestSingleZone's volumes and claims (bound here with phase Bound: in the
/// whole profile VolumeBinding needs the claims bound).
fn single_zone_storage() -> StorageObjects {
    let pvs = vec![
        pv("Vol_1", &[(BETA_ZONE, "us-west1-a")], json!({})),
        pv(
            "Vol_2",
            &[(BETA_REGION, "us-west1"), ("uselessLabel", "none")],
            json!({}),
        ),
        pv("Vol_3", &[(BETA_REGION, "us-west1")], json!({})),
        pv("Vol_Stable_1", &[(GA_ZONE, "us-west1-a")], json!({})),
        pv(
            "Vol_Stable_2",
            &[(GA_REGION, "us-west1"), ("uselessLabel", "none")],
            json!({}),
        ),
        pv(
            "Vol_Stable_3",
            &[(GA_ZONE, "us-west1-a"), (GA_REGION, "us-west1-a")],
            json!({}),
        ),
    ];
    let claims = vec![
        bound_claim("PVC_1", "Vol_1"),
        bound_claim("PVC_2", "Vol_2"),
        bound_claim("PVC_3", "Vol_3"),
        bound_claim("PVC_4", "Vol_not_exist"),
        bound_claim("PVC_Stable_1", "Vol_Stable_1"),
        bound_claim("PVC_Stable_2", "Vol_Stable_2"),
        bound_claim("PVC_Stable_3", "Vol_Stable_3"),
    ];
    storage(claims, pvs, vec![], vec![])
}

/// (row name, claim of the pod, node labels, verdict).
type ZoneRow<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>, &'a str);

fn zone_rows(storage: &StorageObjects, rows: Vec<ZoneRow>) {
    for (name, claim, labels, want) in rows {
        let n = node("host1", &labels);
        let incoming = if claim.is_empty() {
            vpod("pod_1", None, json!([]))
        } else {
            vpod("pod_1", None, json!([claim_vol(claim)]))
        };
        let r = eval_storage(&[n], &[], storage, &incoming);
        let (got, plugin) = on(&r, "host1");
        assert_eq!(got, want, "{name}");
        if want == ZONE {
            assert_eq!(plugin, Some(Plugin::VolumeZone), "{name}");
            assert_eq!(
                r.unschedulable["host1"].code,
                Code::UnschedulableAndUnresolvable
            );
        }
    }
}

// TestSingleZone (volumezone/volume_zone_test.go).
#[test]
fn volume_zone_single_zone_table() {
    let u = ("uselessLabel", "none");
    zone_rows(
        &single_zone_storage(),
        vec![
            (
                "pod without volume",
                "",
                vec![(BETA_ZONE, "us-west1-a")],
                OK,
            ),
            ("node without labels", "PVC_1", vec![], OK),
            (
                "beta zone label matched",
                "PVC_1",
                vec![(BETA_ZONE, "us-west1-a"), u],
                OK,
            ),
            (
                "beta region label matched",
                "PVC_2",
                vec![(BETA_REGION, "us-west1"), u],
                OK,
            ),
            (
                "beta region label doesn't match",
                "PVC_2",
                vec![(BETA_REGION, "no_us-west1"), u],
                ZONE,
            ),
            (
                "beta zone label doesn't match",
                "PVC_1",
                vec![(BETA_ZONE, "no_us-west1-a"), u],
                ZONE,
            ),
            (
                "zone label matched",
                "PVC_Stable_1",
                vec![(GA_ZONE, "us-west1-a"), u],
                OK,
            ),
            (
                "region label matched",
                "PVC_Stable_2",
                vec![(GA_REGION, "us-west1"), u],
                OK,
            ),
            (
                "region label doesn't match",
                "PVC_Stable_2",
                vec![(GA_REGION, "no_us-west1"), u],
                ZONE,
            ),
            (
                "zone label doesn't match",
                "PVC_Stable_1",
                vec![(GA_ZONE, "no_us-west1-a"), u],
                ZONE,
            ),
            (
                "pv with zone and region, node with only zone",
                "PVC_Stable_3",
                vec![(GA_ZONE, "us-west1-a")],
                ZONE,
            ),
            (
                "pv with zone,node with beta zone",
                "PVC_Stable_1",
                vec![(BETA_ZONE, "us-west1-a")],
                ZONE,
            ),
            (
                "pv with beta label,node with ga label, matched",
                "PVC_1",
                vec![(GA_ZONE, "us-west1-a")],
                OK,
            ),
            (
                "pv with beta label,node with ga label, don't match",
                "PVC_1",
                vec![(GA_ZONE, "us-west1-b")],
                ZONE,
            ),
            // Upstream's VolumeZone alone; here its PreFilter reports the missing PV.
            (
                "bound to a missing volume",
                "PVC_4",
                vec![(GA_ZONE, "us-west1-a")],
                "persistentvolume \"Vol_not_exist\" not found",
            ),
        ],
    );
}

// TestMultiZone (volumezone/volume_zone_test.go).
#[test]
fn volume_zone_multi_zone_table() {
    let pvs = vec![
        pv("Vol_1", &[(BETA_ZONE, "us-west1-a")], json!({})),
        pv(
            "Vol_2",
            &[(BETA_ZONE, "us-west1-b"), ("uselessLabel", "none")],
            json!({}),
        ),
        pv("Vol_3", &[(BETA_ZONE, "us-west1-c__us-west1-a")], json!({})),
        pv("Vol_Stable_1", &[(GA_ZONE, "us-west1-a")], json!({})),
        pv(
            "Vol_Stable_2",
            &[(GA_ZONE, "us-west1-c__us-west1-a")],
            json!({}),
        ),
        // Not upstream: an empty element makes the label invalid, so it is ignored.
        pv(
            "Vol_Bad",
            &[(GA_ZONE, "us-west1-c____us-west1-a")],
            json!({}),
        ),
    ];
    let claims = vec![
        bound_claim("PVC_1", "Vol_1"),
        bound_claim("PVC_2", "Vol_2"),
        bound_claim("PVC_3", "Vol_3"),
        bound_claim("PVC_Stable_1", "Vol_Stable_1"),
        bound_claim("PVC_Stable_2", "Vol_Stable_2"),
        bound_claim("PVC_Bad", "Vol_Bad"),
    ];
    let u = ("uselessLabel", "none");
    zone_rows(
        &storage(claims, pvs, vec![], vec![]),
        vec![
            ("node without labels", "PVC_3", vec![], OK),
            (
                "beta zone label matched",
                "PVC_3",
                vec![(BETA_ZONE, "us-west1-a"), u],
                OK,
            ),
            (
                "beta zone label doesn't match",
                "PVC_1",
                vec![(BETA_ZONE, "us-west1-b"), u],
                ZONE,
            ),
            (
                "zone label matched",
                "PVC_Stable_2",
                vec![(GA_ZONE, "us-west1-a"), u],
                OK,
            ),
            (
                "zone label doesn't match",
                "PVC_Stable_1",
                vec![(GA_ZONE, "us-west1-b"), u],
                ZONE,
            ),
            (
                "a label with an empty zone is ignored",
                "PVC_Bad",
                vec![(GA_ZONE, "elsewhere")],
                OK,
            ),
        ],
    );
}

// TestWithBinding (volumezone/volume_zone_test.go). Upstream runs
// VolumeZone alone; in the whole profile VolumeBinding's PreFilter answers
// first for unbound claims that are not WaitForFirstConsumer.
#[test]
fn volume_zone_with_binding_table() {
    let classes = vec![
        from::<StorageClass>(json!({"metadata": {"name": "Class_Immediate"}, "provisioner": "x"})),
        class("Class_Wait", "x", "WaitForFirstConsumer", Value::Null),
    ];
    let claims = vec![
        bound_claim("PVC_1", "Vol_1"),
        unbound_claim("PVC_NoSC", "Class_0", json!({})),
        from(json!({"metadata": {"name": "PVC_EmptySC", "namespace": "default"}})),
        unbound_claim("PVC_WaitSC", "Class_Wait", json!({})),
        unbound_claim("PVC_ImmediateSC", "Class_Immediate", json!({})),
    ];
    let pvs = vec![pv("Vol_1", &[(BETA_ZONE, "us-west1-a")], json!({}))];
    let labels = vec![(BETA_ZONE, "us-west1-a"), ("uselessLabel", "none")];
    zone_rows(
        &storage(claims, pvs, classes, vec![]),
        vec![
            (
                "label zone failure domain matched",
                "PVC_1",
                labels.clone(),
                OK,
            ),
            (
                "unbound volume empty storage class",
                "PVC_EmptySC",
                labels.clone(),
                UNBOUND_IMMEDIATE,
            ),
            (
                "unbound volume no storage class",
                "PVC_NoSC",
                labels.clone(),
                UNBOUND_IMMEDIATE,
            ),
            (
                "unbound volume immediate binding mode",
                "PVC_ImmediateSC",
                labels.clone(),
                UNBOUND_IMMEDIATE,
            ),
            ("unbound volume wait binding mode", "PVC_WaitSC", labels, OK),
        ],
    );
}

// ------------------------------------------------------- VolumeRestrictions

fn disk_rows(volume: fn(&str, bool) -> Value, conflicts_when_both_read_only: bool) {
    let n = node("m", &[]);
    let rows = [
        ("nothing", None, None, OK),
        (
            "one state",
            Some(("foo", false)),
            Some(("foo", false)),
            DISK,
        ),
        ("two state", Some(("foo", false)), Some(("bar", false)), OK),
        (
            "both read-only",
            Some(("foo", true)),
            Some(("foo", true)),
            if conflicts_when_both_read_only {
                DISK
            } else {
                OK
            },
        ),
    ];
    for (name, existing, incoming, want) in rows {
        let pods: Vec<Pod> = existing
            .map(|(id, ro)| vpod("existing", Some("m"), json!([volume(id, ro)])))
            .into_iter()
            .collect();
        let p = vpod(
            "p",
            None,
            json!(
                incoming
                    .map(|(id, ro)| vec![volume(id, ro)])
                    .unwrap_or_default()
            ),
        );
        let r = eval_storage(
            std::slice::from_ref(&n),
            &pods,
            &StorageObjects::default(),
            &p,
        );
        let (got, plugin) = on(&r, "m");
        assert_eq!(got, want, "{name}");
        if want == DISK {
            assert_eq!(plugin, Some(Plugin::VolumeRestrictions));
            assert_eq!(r.unschedulable["m"].code, Code::Unschedulable);
        }
    }
}

// TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts,
// TestISCSIDiskConflicts (volumerestrictions/volume_restrictions_test.go).
#[test]
fn volume_restrictions_disk_conflict_tables() {
    disk_rows(
        |id, ro| json!({"name": "v", "gcePersistentDisk": {"pdName": id, "readOnly": ro}}),
        false,
    );
    disk_rows(
        |id, _| json!({"name": "v", "awsElasticBlockStore": {"volumeID": id}}),
        true,
    );
    disk_rows(
        |id, ro| json!({"name": "v", "rbd": {"monitors": ["a", "b"], "pool": "foo", "image": id, "readOnly": ro}}),
        false,
    );
    disk_rows(
        |id, ro| json!({"name": "v", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": id, "lun": 0, "readOnly": ro}}),
        false,
    );
}

#[test]
fn rbd_images_conflict_only_with_a_shared_monitor_and_the_default_pool() {
    let rbd = |monitors: Value, pool: Option<&str>| {
        let mut r = json!({"monitors": monitors, "image": "img"});
        if let Some(p) = pool {
            r["pool"] = json!(p);
        }
        json!([{"name": "v", "rbd": r}])
    };
    let n = node("m", &[]);
    let existing = vpod("existing", Some("m"), rbd(json!(["a"]), None));
    let no_storage = StorageObjects::default();
    let r = eval_storage(
        std::slice::from_ref(&n),
        std::slice::from_ref(&existing),
        &no_storage,
        &vpod("p", None, rbd(json!(["b", "a"]), Some("rbd"))),
    );
    assert_eq!(on(&r, "m").0, DISK);
    let r = eval_storage(
        std::slice::from_ref(&n),
        std::slice::from_ref(&existing),
        &no_storage,
        &vpod("p", None, rbd(json!(["b"]), None)),
    );
    assert_eq!(on(&r, "m").0, OK);
}

// TestAccessModeConflicts (volumerestrictions/volume_restrictions_test.go).
#[test]
fn volume_restrictions_read_write_once_pod_table() {
    let rwop = |name: &str| -> PersistentVolumeClaim {
        from(json!({"metadata": {"name": name, "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOncePod"], "volumeName": format!("pv-{name}")},
            "status": {"phase": "Bound"}}))
    };
    let rwo: PersistentVolumeClaim = from(
        json!({"metadata": {"name": "claim-with-rwo", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv-rwo"}, "status": {"phase": "Bound"}}),
    );
    let pvs = vec![
        pv("pv-claim-with-rwop-1", &[], json!({})),
        pv("pv-claim-with-rwop-2", &[], json!({})),
        pv("pv-rwo", &[], json!({})),
    ];
    let st = storage(
        vec![rwop("claim-with-rwop-1"), rwop("claim-with-rwop-2"), rwo],
        pvs,
        vec![],
        vec![],
    );
    let nodes = [node("node-1", &[]), node("node-2", &[])];
    let existing = vpod(
        "existing",
        Some("node-1"),
        json!([claim_vol("claim-with-rwop-1")]),
    );
    let rows: Vec<(&str, Vec<Pod>, &str, &str)> = vec![
        ("nothing", vec![], "claim-with-rwop-1", OK),
        (
            "failed node with two pods using the same RWOP claim",
            vec![existing.clone()],
            "claim-with-rwop-1",
            RWOP,
        ),
        (
            "another RWOP claim",
            vec![existing.clone()],
            "claim-with-rwop-2",
            OK,
        ),
        (
            "a ReadWriteOnce claim",
            vec![vpod(
                "existing",
                Some("node-1"),
                json!([claim_vol("claim-with-rwo")]),
            )],
            "claim-with-rwo",
            OK,
        ),
        (
            "missing claim",
            vec![],
            "claim-missing",
            "persistentvolumeclaim \"claim-missing\" not found",
        ),
    ];
    for (name, pods, claim, want) in rows {
        let r = eval_storage(
            &nodes,
            &pods,
            &st,
            &vpod("p", None, json!([claim_vol(claim)])),
        );
        for n in ["node-1", "node-2"] {
            assert_eq!(on(&r, n).0, want, "{name} on {n}");
        }
        if want == RWOP {
            assert_eq!(r.unschedulable["node-2"].code, Code::Unschedulable);
        }
        if want.starts_with("persistentvolumeclaim") {
            assert_eq!(r.unschedulable["node-1"].plugin, Plugin::VolumeRestrictions);
            assert_eq!(
                r.summary.as_deref(),
                Some("0/2 nodes are available: persistentvolumeclaim \"claim-missing\" not found.")
            );
        }
    }
}

// ---------------------------------------------------------- NodeVolumeLimits

fn csi_node(name: &str, drivers: &[(&str, Option<i32>)]) -> CSINode {
    let drivers: Vec<Value> = drivers
        .iter()
        .map(|(d, count)| {
            let mut v = json!({"name": d, "nodeID": name});
            if let Some(c) = count {
                v["allocatable"] = json!({"count": c});
            }
            v
        })
        .collect();
    from(json!({"metadata": {"name": name}, "spec": {"drivers": drivers}}))
}

fn csi_pv(name: &str, driver: &str, handle: &str) -> PersistentVolume {
    pv(
        name,
        &[],
        json!({"csi": {"driver": driver, "volumeHandle": handle}}),
    )
}

/// TestCSILimits (nodevolumelimits/csi_test.go): the EBS rows.
#[test]
fn csi_limits_table() {
    let ebs = "ebs.csi.aws.com";
    let gce = "pd.csi.storage.gke.io";
    let claims = vec![
        bound_claim("csi-ebs.csi.aws.com-0", "csi-ebs.csi.aws.com-0"),
        bound_claim("csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-1"),
        bound_claim("csi-ebs.csi.aws.com-2", "csi-ebs.csi.aws.com-2"),
        bound_claim("csi-ebs.csi.aws.com-3", "csi-ebs.csi.aws.com-3"),
        bound_claim("csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-1"),
        unbound_claim("csi-ebs.csi.aws.com-unbound", "csi-sc", json!({})),
        unbound_claim("csi-ebs.csi.aws.com-no-sc", "", json!({})),
    ];
    let pvs = vec![
        csi_pv("csi-ebs.csi.aws.com-0", ebs, "h0"),
        csi_pv("csi-ebs.csi.aws.com-1", ebs, "h1"),
        csi_pv("csi-ebs.csi.aws.com-2", ebs, "h2"),
        csi_pv("csi-ebs.csi.aws.com-3", ebs, "h3"),
        csi_pv("csi-pd.csi.storage.gke.io-1", gce, "g1"),
    ];
    let classes = vec![class("csi-sc", ebs, "WaitForFirstConsumer", Value::Null)];
    let vols = |claims: &[&str]| json!(claims.iter().map(|c| claim_vol(c)).collect::<Vec<_>>());
    type Row<'a> = (
        &'a str,
        Vec<&'a str>,
        Vec<Vec<&'a str>>,
        Option<i32>,
        &'a str,
    );
    let rows: Vec<Row> = vec![
        (
            "fits when node volume limit >= new pods CSI volume",
            vec!["csi-ebs.csi.aws.com-2"],
            vec![vec!["csi-ebs.csi.aws.com-0"]],
            Some(4),
            OK,
        ),
        (
            "doesn't when node volume limit <= pods CSI volume",
            vec!["csi-ebs.csi.aws.com-2"],
            vec![vec!["csi-ebs.csi.aws.com-0", "csi-ebs.csi.aws.com-1"]],
            Some(2),
            MAX_VOLUMES,
        ),
        (
            "should when driver does not support volume limits",
            vec!["csi-ebs.csi.aws.com-2"],
            vec![vec!["csi-ebs.csi.aws.com-0", "csi-ebs.csi.aws.com-1"]],
            None,
            OK,
        ),
        (
            "count pending PVCs towards volume limit <= pods CSI volume",
            vec!["csi-ebs.csi.aws.com-unbound"],
            vec![vec!["csi-ebs.csi.aws.com-0", "csi-ebs.csi.aws.com-1"]],
            Some(2),
            MAX_VOLUMES,
        ),
        (
            "should count PVCs with invalid PV name but valid SC",
            vec!["csi-ebs.csi.aws.com-2"],
            vec![
                vec!["csi-ebs.csi.aws.com-0"],
                vec!["csi-ebs.csi.aws.com-unbound"],
            ],
            Some(2),
            MAX_VOLUMES,
        ),
        (
            "don't count unbound PVCs without a StorageClass",
            vec!["csi-ebs.csi.aws.com-2"],
            vec![
                vec!["csi-ebs.csi.aws.com-0"],
                vec!["csi-ebs.csi.aws.com-no-sc"],
            ],
            Some(2),
            OK,
        ),
        (
            "the same volume in two pods counts once",
            vec!["csi-ebs.csi.aws.com-0"],
            vec![vec!["csi-ebs.csi.aws.com-0"], vec!["csi-ebs.csi.aws.com-1"]],
            Some(2),
            OK,
        ),
        (
            "limits are per driver",
            vec!["csi-pd.csi.storage.gke.io-1"],
            vec![vec!["csi-ebs.csi.aws.com-0", "csi-ebs.csi.aws.com-1"]],
            Some(2),
            OK,
        ),
        (
            "a pod whose volumes are all attached already fits a full node",
            vec!["csi-ebs.csi.aws.com-0", "csi-ebs.csi.aws.com-1"],
            vec![vec!["csi-ebs.csi.aws.com-0", "csi-ebs.csi.aws.com-1"]],
            Some(2),
            OK,
        ),
    ];
    for (name, new, existing, limit, want) in rows {
        let st = storage(
            claims.clone(),
            pvs.clone(),
            classes.clone(),
            vec![csi_node("m", &[(ebs, limit)])],
        );
        let pods: Vec<Pod> = existing
            .iter()
            .enumerate()
            .map(|(i, c)| vpod(&format!("existing-{i}"), Some("m"), vols(c)))
            .collect();
        let r = eval_storage(&[node("m", &[])], &pods, &st, &vpod("p", None, vols(&new)));
        let (got, plugin) = on(&r, "m");
        assert_eq!(got, want, "{name}");
        if want == MAX_VOLUMES {
            assert_eq!(plugin, Some(Plugin::NodeVolumeLimits), "{name}");
            assert_eq!(r.unschedulable["m"].code, Code::Unschedulable);
        }
    }
}

#[test]
fn placements_count_attached_volumes_for_the_next_pod() {
    let ebs = "ebs.csi.aws.com";
    let claims: Vec<PersistentVolumeClaim> = (0..3)
        .map(|i| bound_claim(&format!("c{i}"), &format!("v{i}")))
        .collect();
    let pvs: Vec<PersistentVolume> = (0..3)
        .map(|i| csi_pv(&format!("v{i}"), ebs, &format!("h{i}")))
        .collect();
    let st = storage(
        claims,
        pvs,
        vec![],
        vec![
            csi_node("a", &[(ebs, Some(1))]),
            csi_node("b", &[(ebs, Some(1))]),
        ],
    );
    let pods: Vec<Pod> = (0..3)
        .map(|i| vpod(&format!("p{i}"), None, json!([claim_vol(&format!("c{i}"))])))
        .collect();
    let r = schedule_all_with_storage(
        &[node("a", &[]), node("b", &[])],
        &[],
        &pods,
        &st,
        &Options::default(),
    )
    .unwrap();
    let got: Vec<(String, Option<String>)> = r
        .placements
        .iter()
        .map(|p| (p.pod.clone(), p.node.clone()))
        .collect();
    assert_eq!(got[0].1.as_deref(), Some("a"));
    assert_eq!(got[1].1.as_deref(), Some("b"));
    assert_eq!(got[2].1, None);
    assert_eq!(
        r.placements[2].reason.as_deref(),
        Some("0/2 nodes are available: 2 node(s) exceed max volume count.")
    );
    // Removing a pod releases its volume.
    let mut state = ClusterState::new(&[node("a", &[]), node("b", &[])], &[], &[], true);
    state.set_storage(&st);
    let before = state.index_fingerprint();
    state.place(&pods[0], &Options::default()).unwrap();
    assert_ne!(state.index_fingerprint(), before);
    state.remove_pod_named("default", "p0").unwrap();
    assert_eq!(state.index_fingerprint(), before);
}

// ------------------------------------------------------------- VolumeBinding

fn zone_affinity(zone: &str) -> Value {
    json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": GA_ZONE, "operator": "In", "values": [zone]}]}]}})
}

// TestVolumeBinding (volumebinding/volume_binding_test.go) and the
// FindPodVolumes cases of binder_test.go.
#[test]
fn volume_binding_table() {
    let wait = class(
        "wait-sc",
        "kubernetes.io/no-provisioner",
        "WaitForFirstConsumer",
        Value::Null,
    );
    let immediate = class("immediate-sc", "x.csi", "Immediate", Value::Null);
    let dynamic = class(
        "dynamic-sc",
        "x.csi",
        "WaitForFirstConsumer",
        json!([{"matchLabelExpressions": [{"key": GA_ZONE, "values": ["zone-a"]}]}]),
    );
    let claims = vec![
        bound_claim("pvc-a", "pv-a"),
        bound_claim("pvc-b", "pv-b"),
        bound_claim("pvc-lost-pv", "pv-missing"),
        unbound_claim("pvc-immediate", "immediate-sc", json!({})),
        unbound_claim(
            "pvc-wait",
            "wait-sc",
            json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}),
        ),
        unbound_claim(
            "pvc-wait-big",
            "wait-sc",
            json!({"resources": {"requests": {"storage": "50Gi"}}}),
        ),
        unbound_claim("pvc-dynamic", "dynamic-sc", json!({})),
        from(
            json!({"metadata": {"name": "pvc-lost", "namespace": "default"}, "spec": {"volumeName": "pv-a"}, "status": {"phase": "Lost"}}),
        ),
        from(
            json!({"metadata": {"name": "pvc-selected", "namespace": "default", "annotations": {"volume.kubernetes.io/selected-node": "node-b"}}, "spec": {"storageClassName": "any-sc"}}),
        ),
        from(
            json!({"metadata": {"name": "pvc-prebound", "namespace": "default"}, "spec": {"volumeName": "pv-a", "storageClassName": "wait-sc"}}),
        ),
    ];
    let pvs = vec![
        pv(
            "pv-a",
            &[],
            json!({"nodeAffinity": zone_affinity("zone-a")}),
        ),
        pv(
            "pv-b",
            &[],
            json!({"nodeAffinity": zone_affinity("zone-b")}),
        ),
        pv(
            "pv-wait-a",
            &[],
            json!({"storageClassName": "wait-sc", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "nodeAffinity": zone_affinity("zone-a")}),
        ),
    ];
    let any = class("any-sc", "x.csi", "WaitForFirstConsumer", Value::Null);
    let st = storage(claims, pvs, vec![wait, immediate, dynamic, any], vec![]);
    let nodes = [
        node("node-a", &[(GA_ZONE, "zone-a")]),
        node("node-b", &[(GA_ZONE, "zone-b")]),
    ];
    let rows: Vec<(&str, Value, &str, &str)> = vec![
        ("pod has not pvcs", json!([]), OK, OK),
        ("all bound", json!([claim_vol("pvc-a")]), OK, NODE_CONFLICT),
        (
            "bound claims on both sides conflict everywhere",
            json!([claim_vol("pvc-a"), claim_vol("pvc-b")]),
            NODE_CONFLICT,
            NODE_CONFLICT,
        ),
        (
            "PVC does not exist",
            json!([claim_vol("pvc-nope")]),
            "persistentvolumeclaim \"pvc-nope\" not found",
            "persistentvolumeclaim \"pvc-nope\" not found",
        ),
        (
            "immediate claims not bound",
            json!([claim_vol("pvc-immediate")]),
            UNBOUND_IMMEDIATE,
            UNBOUND_IMMEDIATE,
        ),
        (
            "pre-bound claims are immediate",
            json!([claim_vol("pvc-prebound")]),
            UNBOUND_IMMEDIATE,
            UNBOUND_IMMEDIATE,
        ),
        (
            "lost claim",
            json!([claim_vol("pvc-lost")]),
            "persistentvolumeclaim \"pvc-lost\" bound to non-existent persistentvolume \"pv-a\"",
            "persistentvolumeclaim \"pvc-lost\" bound to non-existent persistentvolume \"pv-a\"",
        ),
        (
            "unbound claims no matches",
            json!([claim_vol("pvc-wait-big")]),
            BIND_CONFLICT,
            BIND_CONFLICT,
        ),
        (
            "an available volume on one node",
            json!([claim_vol("pvc-wait")]),
            OK,
            BIND_CONFLICT,
        ),
        (
            "bound and unbound unsatisfied",
            json!([claim_vol("pvc-b"), claim_vol("pvc-wait")]),
            NODE_CONFLICT,
            BIND_CONFLICT,
        ),
        (
            "bound conflict and unbound conflict together",
            json!([claim_vol("pvc-a"), claim_vol("pvc-wait-big")]),
            BIND_CONFLICT,
            "node(s) didn't match PersistentVolume's node affinity, node(s) didn't find available persistent volumes to bind",
        ),
        (
            "dynamic provisioning within allowedTopologies",
            json!([claim_vol("pvc-dynamic")]),
            OK,
            BIND_CONFLICT,
        ),
        (
            "selected node of another node",
            json!([claim_vol("pvc-selected")]),
            BIND_CONFLICT,
            OK,
        ),
        (
            "bound to a missing volume: VolumeZone's PreFilter answers first",
            json!([claim_vol("pvc-lost-pv")]),
            "persistentvolume \"pv-missing\" not found",
            "persistentvolume \"pv-missing\" not found",
        ),
        (
            "ephemeral claim not created yet",
            json!([{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]),
            "waiting for ephemeral volume controller to create the persistentvolumeclaim \"p-scratch\"",
            "waiting for ephemeral volume controller to create the persistentvolumeclaim \"p-scratch\"",
        ),
    ];
    for (name, volumes, want_a, want_b) in rows {
        let r = eval_storage(&nodes, &[], &st, &vpod("p", None, volumes));
        assert_eq!(on(&r, "node-a").0, want_a, "{name} on node-a");
        assert_eq!(on(&r, "node-b").0, want_b, "{name} on node-b");
        for f in r.unschedulable.values() {
            assert_eq!(f.code, Code::UnschedulableAndUnresolvable, "{name}");
        }
    }
}

#[test]
fn two_claims_do_not_share_one_available_volume() {
    let wait = class(
        "wait-sc",
        "kubernetes.io/no-provisioner",
        "WaitForFirstConsumer",
        Value::Null,
    );
    let c = |n: &str| {
        unbound_claim(
            n,
            "wait-sc",
            json!({"resources": {"requests": {"storage": "1Gi"}}}),
        )
    };
    let pvs = vec![pv(
        "pv-1",
        &[],
        json!({"storageClassName": "wait-sc", "capacity": {"storage": "1Gi"}}),
    )];
    let st = storage(
        vec![c("c1"), c("c2")],
        pvs.clone(),
        vec![wait.clone()],
        vec![],
    );
    let r = eval_storage(
        &[node("m", &[])],
        &[],
        &st,
        &vpod("p", None, json!([claim_vol("c1"), claim_vol("c2")])),
    );
    assert_eq!(on(&r, "m").0, BIND_CONFLICT);
    let mut more = pvs;
    more.push(pv(
        "pv-2",
        &[],
        json!({"storageClassName": "wait-sc", "capacity": {"storage": "2Gi"}}),
    ));
    let st = storage(vec![c("c1"), c("c2")], more, vec![wait], vec![]);
    let r = eval_storage(
        &[node("m", &[])],
        &[],
        &st,
        &vpod("p", None, json!([claim_vol("c1"), claim_vol("c2")])),
    );
    assert_eq!(on(&r, "m").0, OK);
}

// ----------------------------------------------------------------- diagnose

#[test]
fn diagnose_names_the_volume_and_label_that_keep_a_pod_off_each_node() {
    let pvs = vec![
        pv("pv-zone", &[(GA_ZONE, "zone-a__zone-c")], json!({})),
        pv(
            "pv-local",
            &[],
            json!({"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-a"]}]}]}}}),
        ),
    ];
    let st = storage(
        vec![
            bound_claim("data", "pv-zone"),
            bound_claim("local", "pv-local"),
        ],
        pvs,
        vec![],
        vec![],
    );
    let nodes = [
        node(
            "node-a",
            &[(GA_ZONE, "zone-a"), ("kubernetes.io/hostname", "node-a")],
        ),
        node(
            "node-b",
            &[(GA_ZONE, "zone-b"), ("kubernetes.io/hostname", "node-b")],
        ),
        node("node-c", &[("kubernetes.io/hostname", "node-c")]),
    ];
    let mut state = ClusterState::new(&nodes, &[], &[], true);
    state.set_storage(&st);
    let zone_pod = vpod("zone", None, json!([claim_vol("data")]));
    let local_pod = vpod("local", None, json!([claim_vol("local")]));
    let mut out = String::new();
    for p in [&zone_pod, &local_pod] {
        for n in ["node-a", "node-b", "node-c"] {
            let d = diagnose(&state, p, n, &Options::default()).unwrap();
            out.push_str(&format!(
                "{} on {n}: {:?} {:?} — {}\n",
                d.pod,
                d.plugin,
                d.message.unwrap_or_default(),
                d.explanation
            ));
        }
    }
    insta::assert_snapshot!(out);
}
