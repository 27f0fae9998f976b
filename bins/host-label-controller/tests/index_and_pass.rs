//! The index and the pass, synchronously: objects are fed to the index the
//! way the runtime's watches do, and the pass is a function call.

use capi_api::Machine;
use controller_kit::snapshot::IndexResource;
use host_label_controller::cli::label_config;
use host_label_controller::index::HostIndex;
use host_label_controller::{Config, HostSource, ObjectName, pass};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::runtime::reflector::ObjectRef;
use serde_json::json;

const KEY: &str = "node.cluster.x-k8s.io/esxi-host";

fn config(source: HostSource) -> Config {
    Config::new(label_config(&[KEY.to_owned()], None).unwrap(), source)
}

fn node(name: &str, rv: &str) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "resourceVersion": rv}})).unwrap()
}

fn machine(name: &str, node: &str, host: &str) -> Machine {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "capi", "labels": {KEY: host}},
        "status": {"nodeRef": {"name": node}},
    }))
    .unwrap()
}

fn replica(name: &str, node: &str, anti_affinity: bool) -> Pod {
    let mut spec = json!({"nodeName": node, "containers": [{"name": "c", "image": "x"}]});
    if anti_affinity {
        spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": KEY}]}});
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "app", "labels": {"app": "web"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u", "controller": true}]},
        "spec": spec,
    }))
    .unwrap()
}

#[test]
fn nodes_with_host_information_get_a_conditional_patch_and_the_audit_sees_them_labelled() {
    let cfg = config(HostSource::Machines);
    let mut index = HostIndex::new(&cfg);
    index.reset(
        vec![node("n1", "5"), node("n2", "6"), node("n3", "7")],
        vec![],
    );
    index.apply(machine("m1", "n1", "esx-1"));
    index.apply(machine("m2", "n2", "esx-1"));
    index.apply(replica("a", "n1", true));
    index.apply(replica("b", "n2", true));
    index.apply(replica("c", "n3", false));
    assert_eq!(
        index.pods().count(),
        2,
        "pods that cannot care about hosts are not kept"
    );

    let plan = pass::plan(&cfg, &index);
    let patched: Vec<(&str, Option<&str>, &str)> = plan
        .patches
        .iter()
        .map(|p| {
            (
                p.node.as_str(),
                p.resource_version.as_deref(),
                p.host.as_deref().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        patched,
        [("n1", Some("5"), "esx-1"), ("n2", Some("6"), "esx-1")]
    );
    assert_eq!(
        plan.violations.len(),
        1,
        "a and b share esx-1 once labelled"
    );
    assert_eq!(plan.violations[0].pods, ["app/a", "app/b"]);
    assert_eq!(plan.summary.unlabelled_nodes, ["n3"]);
    assert_eq!(plan.without_host_information, 1);
    assert!(plan.unlabelled[0].note.contains("has no host for it"));

    // Once the Node carries the label (the patch response), nothing to do.
    let mut labelled = node("n1", "8");
    labelled.metadata.labels = Some([(KEY.to_owned(), "esx-1".to_owned())].into());
    labelled.metadata.annotations =
        Some([("policyctl/managed-host-labels".to_owned(), KEY.to_owned())].into());
    index.apply(labelled);
    let plan = pass::plan(&cfg, &index);
    assert_eq!(plan.patches.len(), 1);
    assert_eq!(plan.patches[0].node, "n2");
    // A deleted Machine takes the host information with it.
    IndexResource::<Machine>::delete(&mut index, ObjectRef::new("m2").within("capi"));
    assert!(pass::plan(&cfg, &index).patches.is_empty());
}

#[test]
fn an_unusable_inventory_keeps_the_last_good_host_information() {
    let source = HostSource::Inventory {
        configmap: ObjectName {
            namespace: "ops".into(),
            name: "hosts".into(),
        },
        key: "inventory.yaml".into(),
    };
    let cfg = config(source);
    let mut index = HostIndex::new(&cfg);
    assert_eq!(
        index.inventory_problem(),
        Some("the inventory ConfigMap does not exist")
    );
    let inventory = |doc: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": "hosts", "namespace": "ops"},
            "data": {"inventory.yaml": doc}}))
        .unwrap()
    };
    index.apply(inventory(
        "apiVersion: policyctl/v1alpha1\nkind: HostInventory\nhosts:\n- name: esx1\nvms:\n- name: n1\n  group: w\n  host: esx1\n",
    ));
    assert_eq!(index.inventory_problem(), None);
    assert_eq!(index.hosts()["n1"], "esx1");
    index.apply(inventory("vms: ["));
    assert!(index.inventory_problem().is_some());
    assert_eq!(index.hosts()["n1"], "esx1", "last good kept");
    // Another ConfigMap is not the inventory.
    let mut other = inventory("vms: [");
    other.metadata.name = Some("other".into());
    index.apply(other);
    assert_eq!(index.hosts().len(), 1);
}

#[test]
fn the_machine_label_sync_merges_into_the_host_label_patch() {
    use anti_affinity_placement::labels::MachineLabelSync;
    let mut cfg = config(HostSource::Inventory {
        configmap: ObjectName {
            namespace: "ops".into(),
            name: "hosts".into(),
        },
        key: "inventory.yaml".into(),
    });
    cfg.machine_sync = Some(MachineLabelSync::default());
    assert!(
        cfg.watches_machines(),
        "the sync needs Machines even with an inventory"
    );
    let mut index = HostIndex::new(&cfg);
    index.reset(vec![node("n1", "5"), node("n2", "6")], vec![]);
    // The inventory says esx-9 for n1; the Machine's (stale) label says esx-1.
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "hosts", "namespace": "ops"},
        "data": {"inventory.yaml": "apiVersion: policyctl/v1alpha1\nkind: HostInventory\nhosts:\n- name: esx-9\nvms:\n- name: n1\n  group: w\n  host: esx-9\n"}
    }))
    .unwrap();
    index.apply(cm);
    let mut m1 = machine("m1", "n1", "esx-1");
    m1.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("node-role.kubernetes.io/worker".into(), String::new());
    index.apply(m1);
    // n2 has only a Machine: the sync alone patches it.
    index.apply(machine("m2", "n2", "esx-2"));
    let plan = pass::plan(&cfg, &index);
    let n1 = plan.patches.iter().find(|p| p.node == "n1").unwrap();
    // The host label's value (the inventory) wins over the Machine's.
    assert_eq!(n1.labels.set[KEY], "esx-9");
    assert_eq!(n1.labels.set["node-role.kubernetes.io/worker"], "");
    assert_eq!(n1.host.as_deref(), Some("esx-9"));
    assert_eq!(n1.labels.annotations.len(), 2);
    let n2 = plan.patches.iter().find(|p| p.node == "n2").unwrap();
    assert_eq!(n2.host, None);
    assert_eq!(n2.labels.set[KEY], "esx-2");
    assert_eq!(
        n2.labels.annotations["cluster.x-k8s.io/labels-from-machine"].as_deref(),
        Some(KEY)
    );
    assert!(plan.modules.is_none());
}

/// `--sync-machine-labels` beside Cluster API (B.9): a Node carrying
/// Cluster API's `annotations-from-machine` gets no Machine-label sync (the
/// host label still), a Node without it is synced.
#[test]
fn machine_labels_of_a_node_cluster_api_patched_are_left_to_cluster_api() {
    let mut cfg = config(HostSource::Machines);
    cfg.machine_sync =
        Some(anti_affinity_placement::labels::MachineLabelSync::new(["^ours\\.example/"]).unwrap());
    let mut index = HostIndex::new(&cfg);
    let mut capi_node = node("n1", "5");
    capi_node.metadata.annotations = Some(
        [(
            "cluster.x-k8s.io/annotations-from-machine".to_owned(),
            String::new(),
        )]
        .into(),
    );
    index.reset(vec![capi_node, node("n2", "6")], vec![]);
    for (name, node) in [("m1", "n1"), ("m2", "n2")] {
        let mut m = machine(name, node, "esx-1");
        m.metadata
            .labels
            .get_or_insert_default()
            .insert("ours.example/tier".into(), "gold".into());
        index.apply(m);
    }
    let plan = pass::plan(&cfg, &index);
    let sets = |node: &str| {
        plan.patches
            .iter()
            .find(|p| p.node == node)
            .map(|p| p.labels.set.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert_eq!(sets("n1"), [KEY], "the host label only");
    assert_eq!(
        sets("n2"),
        [KEY, "ours.example/tier"],
        "host label and sync"
    );
    assert_eq!(
        plan.sync_deferred,
        [(
            "n1".to_owned(),
            "the Node has Cluster API's annotation cluster.x-k8s.io/annotations-from-machine"
                .to_owned()
        )]
    );
}
