//! End to end, against the in-process API stand-in: Cluster API's Machine →
//! Node label sync (`--sync-machine-labels`) and the cluster-module audit
//! (`--audit-cluster-modules`) of the real `run()`.

mod support;

use std::collections::BTreeMap;

use anti_affinity_placement::labels::{LABELS_FROM_MACHINE_ANNOTATION, MachineLabelSync};
use host_label_controller::HostSource;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube_fake_api::{FakeApi, ResourceId, eventually};
use serde_json::{Value, json};
use support::*;

fn labels(fake: &FakeApi, node: &str) -> BTreeMap<String, String> {
    fake.get::<Node>(None, node)
        .unwrap()
        .unwrap()
        .metadata
        .labels
        .unwrap_or_default()
}

fn from_machine(fake: &FakeApi, node: &str) -> Option<String> {
    fake.get::<Node>(None, node)
        .unwrap()
        .unwrap()
        .metadata
        .annotations
        .unwrap_or_default()
        .get(LABELS_FROM_MACHINE_ANNOTATION)
        .cloned()
}

fn set_machine_label(fake: &FakeApi, machine: &str, key: &str, value: Option<&str>) {
    fake.modify_value(&machines_id(), Some("capi"), machine, |m| {
        m["metadata"]["labels"][key] = value.map_or(Value::Null, |v| json!(v));
        if value.is_none() {
            m["metadata"]["labels"].as_object_mut().unwrap().remove(key);
        }
    })
    .unwrap();
}

/// Host labels on a kubelet-proof key from the Machines, and the Machine
/// label sync on top.
fn sync_config() -> host_label_controller::Config {
    let mut config = config(&[NR_KEY], HostSource::Machines);
    config.machine_sync = Some(MachineLabelSync::default());
    config
}

#[tokio::test]
async fn managed_machine_labels_reach_the_node_and_follow_a_vmotion() {
    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[("team", "db")]);
    seed_machine(&fake, "m1", "n1", "esx-01");
    set_machine_label(&fake, "m1", "node-role.kubernetes.io/worker", Some(""));
    let run = start(&fake, sync_config());
    eventually("n1 synced", SOON, || {
        from_machine(&fake, "n1").as_deref()
            == Some("node-role.kubernetes.io/worker,node.cluster.x-k8s.io/esxi-host")
    })
    .await;
    let got = labels(&fake, "n1");
    assert_eq!(got.get(CAPV_KEY).map(String::as_str), Some("esx-01"));
    assert_eq!(
        got.get("node-role.kubernetes.io/worker")
            .map(String::as_str),
        Some("")
    );
    assert_eq!(got.get(NR_KEY).map(String::as_str), Some("esx-01"));
    // Not in a managed domain: never copied.
    assert!(!got.contains_key("cluster.x-k8s.io/cluster-name"));
    assert_eq!(got.get("team").map(String::as_str), Some("db"));

    // CAPV rewrites the Machine's host label after a vMotion.
    move_machine(&fake, "m1", "esx-07");
    eventually("n1 follows the vMotion", SOON, || {
        let got = labels(&fake, "n1");
        got.get(CAPV_KEY).map(String::as_str) == Some("esx-07")
            && got.get(NR_KEY).map(String::as_str) == Some("esx-07")
    })
    .await;
    run.stop().await;
}

#[tokio::test]
async fn a_key_removed_from_the_machine_leaves_the_node() {
    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[]);
    seed_machine(&fake, "m1", "n1", "esx-01");
    set_machine_label(&fake, "m1", "node.cluster.x-k8s.io/pool", Some("batch"));
    let run = start(&fake, sync_config());
    eventually("pool label synced", SOON, || {
        labels(&fake, "n1")
            .get("node.cluster.x-k8s.io/pool")
            .map(String::as_str)
            == Some("batch")
    })
    .await;
    set_machine_label(&fake, "m1", "node.cluster.x-k8s.io/pool", None);
    eventually("pool label removed and unrecorded", SOON, || {
        !labels(&fake, "n1").contains_key("node.cluster.x-k8s.io/pool")
            && from_machine(&fake, "n1").as_deref() == Some("node.cluster.x-k8s.io/esxi-host")
    })
    .await;
    // The host labels are untouched.
    assert_eq!(
        labels(&fake, "n1").get(NR_KEY).map(String::as_str),
        Some("esx-01")
    );
    run.stop().await;
}

#[tokio::test]
async fn a_foreign_label_in_a_managed_domain_survives_until_the_machine_sets_it() {
    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[("node-role.kubernetes.io/gpu", "admin")]);
    seed_machine(&fake, "m1", "n1", "esx-01");
    let run = start(&fake, sync_config());
    eventually("n1 synced", SOON, || from_machine(&fake, "n1").is_some()).await;
    assert_eq!(
        labels(&fake, "n1")
            .get("node-role.kubernetes.io/gpu")
            .map(String::as_str),
        Some("admin")
    );
    // The Machine takes it over, then drops it: from then on it is the
    // Machine's, and it goes.
    set_machine_label(&fake, "m1", "node-role.kubernetes.io/gpu", Some("true"));
    eventually("taken over", SOON, || {
        labels(&fake, "n1")
            .get("node-role.kubernetes.io/gpu")
            .map(String::as_str)
            == Some("true")
    })
    .await;
    set_machine_label(&fake, "m1", "node-role.kubernetes.io/gpu", None);
    eventually("removed with the Machine's label", SOON, || {
        !labels(&fake, "n1").contains_key("node-role.kubernetes.io/gpu")
    })
    .await;
    run.stop().await;
}

#[tokio::test]
async fn additional_expressions_widen_the_sync_and_dry_run_writes_nothing() {
    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[]);
    seed_machine(&fake, "m1", "n1", "esx-01");
    let mut config = sync_config();
    config.machine_sync =
        Some(MachineLabelSync::new(["^cluster\\.x-k8s\\.io/cluster-name$"]).unwrap());
    let run = start(&fake, config.clone());
    eventually("cluster-name synced", SOON, || {
        labels(&fake, "n1")
            .get("cluster.x-k8s.io/cluster-name")
            .map(String::as_str)
            == Some("c1")
    })
    .await;
    run.stop().await;

    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[]);
    seed_machine(&fake, "m1", "n1", "esx-01");
    config.dry_run = true;
    let run = start(&fake, config);
    eventually("planned", SOON, || run.metrics.node_patches.get() >= 1).await;
    assert!(labels(&fake, "n1").is_empty());
    assert!(!fake.requests().iter().any(|r| r.is_write()));
    run.stop().await;
}

// ------------------------------------------------------- cluster-module audit

fn id(group: &str, plural: &str) -> ResourceId {
    ResourceId::new(group, "v1beta1", plural)
}

fn seed(fake: &FakeApi, group: &str, plural: &str, value: Value) {
    fake.seed_value(&id(group, plural), value).unwrap();
}

/// A cluster `c1` in namespace `capi`: VSphereCluster with modules for the
/// KubeadmControlPlane `cp` and the MachineDeployment `md`; `md` has three
/// workers, two of them on esx-01 (hosts esx-01..esx-03 are in use).
fn seed_cluster(fake: &FakeApi) {
    let labels = json!({"cluster.x-k8s.io/cluster-name": "c1"});
    seed(
        fake,
        "infrastructure.cluster.x-k8s.io",
        "vsphereclusters",
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "VSphereCluster",
            "metadata": {"name": "c1", "namespace": "capi", "labels": labels},
            "spec": {"server": "vc", "clusterModules": [
                {"controlPlane": true, "targetObjectName": "cp", "moduleUUID": "uuid-cp"},
                {"controlPlane": false, "targetObjectName": "md", "moduleUUID": "uuid-md"}
            ]},
            "status": {"vCenterVersion": "8.0.2"}
        }),
    );
    let template = json!({"kind": "VSphereMachineTemplate", "name": "t"});
    seed(
        fake,
        "controlplane.cluster.x-k8s.io",
        "kubeadmcontrolplanes",
        json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane",
            "metadata": {"name": "cp", "namespace": "capi", "labels": labels},
            "spec": {"machineTemplate": {"infrastructureRef": template}}
        }),
    );
    seed(
        fake,
        "cluster.x-k8s.io",
        "machinedeployments",
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
            "metadata": {"name": "md", "namespace": "capi", "labels": labels},
            "spec": {"template": {"spec": {"infrastructureRef": template}}}
        }),
    );
    seed(
        fake,
        "cluster.x-k8s.io",
        "machinesets",
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet",
            "metadata": {"name": "md-x", "namespace": "capi", "labels": labels,
                         "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment", "name": "md", "uid": "u-md"}]}
        }),
    );
    for (machine, owner_kind, owner, host) in [
        ("cp-1", "KubeadmControlPlane", "cp", "esx-03"),
        ("w-1", "MachineSet", "md-x", "esx-01"),
        ("w-2", "MachineSet", "md-x", "esx-01"),
        ("w-3", "MachineSet", "md-x", "esx-02"),
    ] {
        let mut machine_labels = labels.clone();
        if owner_kind == "KubeadmControlPlane" {
            machine_labels["cluster.x-k8s.io/control-plane"] = json!("");
        }
        let api_version = if owner_kind == "KubeadmControlPlane" {
            "controlplane.cluster.x-k8s.io/v1beta1"
        } else {
            "cluster.x-k8s.io/v1beta1"
        };
        seed(
            fake,
            "cluster.x-k8s.io",
            "machines",
            json!({
                "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
                "metadata": {"name": machine, "namespace": "capi", "labels": machine_labels, "uid": format!("uid-{machine}"),
                             "ownerReferences": [{"apiVersion": api_version, "kind": owner_kind, "name": owner, "uid": "x"}]},
                "spec": {"clusterName": "c1", "infrastructureRef": {"kind": "VSphereMachine", "name": machine}}
            }),
        );
        seed(
            fake,
            "infrastructure.cluster.x-k8s.io",
            "vspherevms",
            json!({
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "VSphereVM",
                "metadata": {"name": machine, "namespace": "capi", "labels": labels,
                             "ownerReferences": [{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "VSphereMachine", "name": machine, "uid": "y"}]},
                "status": {"host": host}
            }),
        );
    }
}

fn modules_json(fake: &FakeApi) -> Option<Value> {
    let cm = fake.get::<ConfigMap>(Some(OPS_NS), STATUS_CM).unwrap()?;
    let text = cm.data?.get("modules.json")?.clone();
    Some(serde_json::from_str(&text).unwrap())
}

fn module_events(fake: &FakeApi) -> Vec<K8sEvent> {
    fake.list::<K8sEvent>(Some("capi"))
        .unwrap()
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("ModuleMembersShareHost"))
        .collect()
}

#[tokio::test]
async fn module_members_sharing_a_host_are_reported_on_the_machines_in_status_and_metrics() {
    let fake = FakeApi::new();
    seed_cluster(&fake);
    let mut config = config(&[CAPV_KEY], HostSource::Machines);
    config.audit_cluster_modules = true;
    let run = start(&fake, config);

    eventually("an Event on each stacked Machine", SOON, || {
        module_events(&fake).len() == 2
    })
    .await;
    let mut regarding: Vec<String> = module_events(&fake)
        .iter()
        .map(|e| {
            e.regarding
                .as_ref()
                .and_then(|r| r.name.clone())
                .unwrap_or_default()
        })
        .collect();
    regarding.sort();
    assert_eq!(regarding, ["w-1", "w-2"]);
    let event = &module_events(&fake)[0];
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.regarding.as_ref().and_then(|r| r.kind.as_deref()),
        Some("Machine")
    );
    let note = event.note.clone().unwrap_or_default();
    assert!(note.contains("shares ESXi host esx-01"), "{note}");
    assert!(note.contains("module uuid-md"), "{note}");
    assert!(note.contains("fixable"), "{note}");

    eventually("modules.json written", SOON, || {
        modules_json(&fake).is_some()
    })
    .await;
    let modules = modules_json(&fake).unwrap();
    let report = &modules["capi/c1"];
    assert_eq!(report["audit"]["md"]["violations"], 1);
    assert_eq!(report["audit"]["md"]["forced"], false);
    assert_eq!(report["membership"]["capi/w-1"]["moduleUUID"], "uuid-md");
    assert_eq!(report["moves"].as_array().unwrap().len(), 1);
    let gauge = |group: &str, forced: bool| {
        run.metrics
            .module_host_violations
            .get_or_create(&vec![
                ("cluster".to_owned(), String::new()),
                ("group".to_owned(), group.to_owned()),
                ("forced".to_owned(), forced.to_string()),
            ])
            .get()
    };
    assert_eq!(gauge("capi/md", false), 1);
    assert_eq!(gauge("capi/cp", false), 0);
    // Reported once, not on every pass.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(module_events(&fake).len(), 2);

    // A vMotion spreads the group: the audit clears.
    fake.modify_value(
        &id("infrastructure.cluster.x-k8s.io", "vspherevms"),
        Some("capi"),
        "w-1",
        |vm| {
            vm["status"]["host"] = json!("esx-04");
        },
    )
    .unwrap();
    eventually("spread again", SOON, || {
        modules_json(&fake).is_some_and(|m| m["capi/c1"]["audit"]["md"]["violations"] == 0)
    })
    .await;
    eventually("gauge cleared", SOON, || gauge("capi/md", false) == 0).await;
    // Nothing the audit watches is ever written.
    assert!(!fake.requests().iter().any(|r| r.is_write()
        && r.resource.as_ref().is_some_and(|x| {
            [
                "machines",
                "vsphereclusters",
                "vspherevms",
                "machinedeployments",
                "machinesets",
                "kubeadmcontrolplanes",
            ]
            .contains(&x.plural.as_str())
        })));
    run.stop().await;
}

#[tokio::test]
async fn more_members_than_hosts_is_reported_as_forced() {
    let fake = FakeApi::new();
    seed_cluster(&fake);
    // All three workers on esx-01: the cluster's VMs now use two hosts,
    // esx-01 and the control plane's esx-03.
    for vm in ["w-2", "w-3"] {
        fake.modify_value(
            &id("infrastructure.cluster.x-k8s.io", "vspherevms"),
            Some("capi"),
            vm,
            |v| {
                v["status"]["host"] = json!("esx-01");
            },
        )
        .unwrap();
    }
    let mut config = config(&[CAPV_KEY], HostSource::Machines);
    config.audit_cluster_modules = true;
    let run = start(&fake, config);
    eventually("audited", SOON, || modules_json(&fake).is_some()).await;
    let modules = modules_json(&fake).unwrap();
    // 3 workers on 2 hosts: the best spread has one violation; stacked all
    // on one host there are two, one of them fixable.
    assert_eq!(modules["capi/c1"]["audit"]["md"]["violations"], 2);
    assert_eq!(modules["capi/c1"]["audit"]["md"]["forced"], false);
    fake.modify_value(
        &id("infrastructure.cluster.x-k8s.io", "vspherevms"),
        Some("capi"),
        "w-3",
        |v| {
            v["status"]["host"] = json!("esx-03");
        },
    )
    .unwrap();
    eventually("forced now", SOON, || {
        modules_json(&fake).is_some_and(|m| m["capi/c1"]["audit"]["md"]["forced"] == true)
    })
    .await;
    let gauge = run
        .metrics
        .module_host_violations
        .get_or_create(&vec![
            ("cluster".to_owned(), String::new()),
            ("group".to_owned(), "capi/md".to_owned()),
            ("forced".to_owned(), "true".to_owned()),
        ])
        .get();
    assert_eq!(gauge, 1);
    run.stop().await;
}
