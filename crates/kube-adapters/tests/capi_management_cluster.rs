//! The example management cluster (`examples/management-cluster/`, Cluster
//! API v1beta1 and v1beta2 objects mixed as `kubectl get -o yaml` prints
//! them) through `capi::ClusterApiObjects`: every reading pinned.

use anti_affinity_placement::cluster_modules::{GroupKind, ReconcileStatus};
use anti_affinity_placement::labels::MachineLabelSync;
use capi_api::{
    Cluster, KubeadmControlPlane, Machine, MachineDeployment, MachineSet, VSphereCluster,
    VSphereMachineTemplate, VSphereVM,
};
use k8s_openapi::api::core::v1::Node;
use kube_adapters::capi::{ClusterApiObjects, machine_label_plans};
use serde::de::DeserializeOwned;
use serde_json::Value;

#[derive(Default)]
struct Objects {
    clusters: Vec<Cluster>,
    vsphere_clusters: Vec<VSphereCluster>,
    kcps: Vec<KubeadmControlPlane>,
    mds: Vec<MachineDeployment>,
    mss: Vec<MachineSet>,
    machines: Vec<Machine>,
    vms: Vec<VSphereVM>,
    templates: Vec<VSphereMachineTemplate>,
    nodes: Vec<Node>,
}

fn typed<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn load() -> Objects {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/management-cluster"
    );
    let mut objects = Objects::default();
    for file in [
        "cluster.yaml",
        "control-plane.yaml",
        "workers.yaml",
        "workload-nodes.yaml",
    ] {
        let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
        let mut documents: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
        let mut queue: Vec<Value> = Vec::new();
        for document in documents.drain(..) {
            match document["kind"].as_str() {
                Some("List") => queue.extend(document["items"].as_array().unwrap().iter().cloned()),
                _ => queue.push(document),
            }
        }
        for object in queue {
            match object["kind"].as_str().unwrap() {
                "Cluster" => objects.clusters.push(typed(object)),
                "VSphereCluster" => objects.vsphere_clusters.push(typed(object)),
                "KubeadmControlPlane" => objects.kcps.push(typed(object)),
                "MachineDeployment" => objects.mds.push(typed(object)),
                "MachineSet" => objects.mss.push(typed(object)),
                "Machine" => objects.machines.push(typed(object)),
                "VSphereVM" => objects.vms.push(typed(object)),
                "VSphereMachineTemplate" => objects.templates.push(typed(object)),
                "Node" => objects.nodes.push(typed(object)),
                other => panic!("unexpected kind {other}"),
            }
        }
    }
    objects
}

fn view(objects: &Objects) -> ClusterApiObjects<'_> {
    ClusterApiObjects {
        clusters: objects.clusters.iter().collect(),
        vsphere_clusters: objects.vsphere_clusters.iter().collect(),
        kubeadm_control_planes: objects.kcps.iter().collect(),
        machine_deployments: objects.mds.iter().collect(),
        machine_sets: objects.mss.iter().collect(),
        machines: objects.machines.iter().collect(),
        vsphere_vms: objects.vms.iter().collect(),
        vsphere_machine_templates: objects.templates.iter().collect(),
    }
}

#[test]
fn both_versions_of_every_kind_are_read() {
    let objects = load();
    let kcp = &objects.kcps[0];
    // v1beta2: spec.machineTemplate.spec.infrastructureRef.
    assert_eq!(kcp.infrastructure_ref().unwrap().name, "prod-east-cp-v2");
    // v1beta1 and v1beta2 MachineDeployments.
    let refs: Vec<&str> = objects
        .mds
        .iter()
        .map(|md| md.infrastructure_ref().unwrap().kind.as_str())
        .collect();
    assert_eq!(refs, ["VSphereMachineTemplate", "VSphereMachineTemplate"]);
    // v1beta1 and v1beta2 Machines both link their VSphereMachine.
    assert!(
        objects
            .machines
            .iter()
            .all(|m| m.infrastructure_ref().unwrap().kind == "VSphereMachine")
    );
    // VSphereCluster v1beta2.
    let vc = &objects.vsphere_clusters[0];
    assert_eq!(
        (vc.server(), vc.vcenter_version()),
        ("vcenter.lab.example", "8.0.2")
    );
    assert_eq!(vc.cluster_modules().len(), 3);
    assert_eq!(vc.cluster_modules()[0].control_plane, Some(true));
    // VSphereVMs of both versions; one has no host yet.
    assert_eq!(
        objects.vms.iter().filter(|vm| vm.host().is_some()).count(),
        7
    );
    assert_eq!(
        objects
            .templates
            .iter()
            .map(VSphereMachineTemplate::server)
            .collect::<Vec<_>>(),
        ["vcenter.lab.example"; 2]
    );
}

#[test]
fn the_example_reconciles_audits_and_plans_as_documented() {
    let objects = load();
    let capi = view(&objects);
    let vc = capi.vsphere_clusters[0];
    assert_eq!(capi.cluster_name_of(vc).as_deref(), Some("prod-east"));
    let input = capi.cluster_modules_input(vc, None);
    assert_eq!(input.owners.len(), 3);
    assert_eq!(input.machines.len(), 8);
    let report = input.report();
    assert!(report.cluster_modules_supported);
    assert_eq!(report.modules.status, ReconcileStatus::Reconciled);
    // The missing module and the stale entry.
    assert_eq!(report.modules.create.len(), 1);
    assert_eq!(
        report.modules.create[0].target_object_name,
        "prod-east-md-1"
    );
    assert_eq!(report.modules.delete.len(), 1);
    assert_eq!(
        report.modules.delete[0].target_object_name,
        "prod-east-md-gpu"
    );
    assert_eq!(report.modules.keep.len(), 2);
    // Membership: control plane with its module, md-1 without one yet.
    let cp = &report.membership["clusters/prod-east-cp-x7k2p"];
    assert_eq!(
        (cp.kind(), cp.group()),
        (GroupKind::KubeadmControlPlane, Some("prod-east-cp"))
    );
    assert_eq!(
        cp.module_uuid(),
        Some("52a81f0e-33c4-4d7b-b0a1-6f2e9c1d7a01")
    );
    let w = &report.membership["clusters/prod-east-md-1-8d6bb-tw7rf"];
    assert_eq!((w.group(), w.module_uuid()), (Some("prod-east-md-1"), None));
    // The host of tw7rf comes from its Machine's label (its VSphereVM has none).
    assert_eq!(
        report.audit["prod-east-md-1"].hosts["esx-04.lab.example"],
        ["prod-east-md-1-8d6bb-tw7rf"]
    );
    // Stacked after the scale-down: fixable, one vMotion.
    let md0 = &report.audit["prod-east-md-0"];
    assert_eq!((md0.violations, md0.forced), (1, false));
    assert_eq!(report.moves.len(), 1);
    assert_eq!(report.moves[0].from, "esx-01.lab.example");
}

#[test]
fn the_workload_nodes_get_the_machine_labels_cluster_api_would_sync() {
    let objects = load();
    let plans = machine_label_plans(
        &objects.nodes,
        &objects.machines,
        &MachineLabelSync::default(),
    );
    let changed: Vec<&str> = plans.nodes.keys().map(String::as_str).collect();
    assert_eq!(
        changed,
        [
            "prod-east-md-0-5c7f9-2b4xq",
            "prod-east-md-0-5c7f9-kq8zv",
            "prod-east-md-1-8d6bb-p4ncs",
            "prod-east-md-1-8d6bb-tw7rf",
        ]
    );
    // After the vMotion the Node still names the old host.
    assert_eq!(
        plans.nodes["prod-east-md-0-5c7f9-2b4xq"].set["node.cluster.x-k8s.io/esxi-host"],
        "esx-01.lab.example"
    );
    // The pool label left the Machine.
    assert_eq!(
        plans.nodes["prod-east-md-0-5c7f9-kq8zv"].remove,
        ["node.cluster.x-k8s.io/pool"]
    );
}
