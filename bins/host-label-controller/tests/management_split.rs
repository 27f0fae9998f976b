//! Machines in a management cluster, Nodes in a workload cluster: two
//! independent API stand-ins. The controller reads only the Machines of
//! its `--cluster` through the management client and labels Nodes through
//! the workload client (as its ServiceAccount there, with its generated
//! RBAC rules); a Machine of another Cluster naming a Node of the same
//! name never labels it.

mod support;

use std::time::Duration;

use clap::Parser;
use controller_kit::{Shutdown, ShutdownReason};
use host_label_controller::cli::Cli;
use host_label_controller::{Config, HostSource, ObjectName, Telemetry};
use kube_fake_api::{FakeApi, crds, eventually};
use serde_json::json;
use support::*;

fn machine(
    namespace: &str,
    name: &str,
    cluster: &str,
    node: &str,
    host: &str,
) -> serde_json::Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Machine",
        "metadata": {"name": name, "namespace": namespace, "labels": {CAPV_KEY: host, "cluster.x-k8s.io/cluster-name": cluster}},
        "spec": {"clusterName": cluster, "bootstrap": {}, "infrastructureRef": {"kind": "VSphereMachine", "name": name}},
        "status": {"nodeRef": {"kind": "Node", "name": node}, "phase": "Running"},
    })
}

#[tokio::test]
async fn nodes_are_labelled_from_their_own_clusters_machines_only() {
    let management = FakeApi::new();
    management
        .install_crds(crds::CLUSTER_API_1_12_MACHINE)
        .unwrap();
    for m in [
        machine("capi", "c1-md-1", "c1", "n1", "esx-01.lab"),
        // Another workload cluster also has a Node called n1.
        machine("capi", "c2-md-1", "c2", "n1", "esx-99.lab"),
        // Same cluster name, other namespace: another Cluster.
        machine("other", "c1-md-1", "c1", "n2", "esx-77.lab"),
    ] {
        management.seed_value(&machines_id(), m).unwrap();
    }
    let workload = FakeApi::new();
    seed_node(&workload, "n1", &[]);
    seed_node(&workload, "n2", &[]);
    let manifests = host_label_controller::manifests::render(
        OPS_NS,
        host_label_controller::manifests::DEFAULT_IMAGE,
    )
    .unwrap();
    workload.enforce_rbac(&manifests).unwrap();

    let mut cfg = config(&[CAPV_KEY], HostSource::Machines);
    cfg.cluster = Some(ObjectName {
        namespace: "capi".into(),
        name: "c1".into(),
    });
    let shutdown = Shutdown::new();
    let task = tokio::spawn(host_label_controller::run_with_clients(
        workload.client_as(OPS_NS, host_label_controller::CONTROLLER_NAME),
        Some(management.client()),
        cfg,
        shutdown.clone(),
        Telemetry::default(),
    ));
    eventually(
        "n1 labelled from c1's Machine",
        Duration::from_secs(10),
        || label(&workload, "n1", CAPV_KEY).as_deref() == Some("esx-01.lab"),
    )
    .await;
    // A pass or two later: still from c1, and n2 (only named by the other
    // Cluster's Machine) stays unlabelled.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        label(&workload, "n1", CAPV_KEY).as_deref(),
        Some("esx-01.lab")
    );
    assert_eq!(label(&workload, "n2", CAPV_KEY), None);
    shutdown.trigger(ShutdownReason::Requested);
    task.await.unwrap().unwrap();

    assert!(workload.denied().is_empty(), "{:#?}", workload.denied());
    let resources = |api: &FakeApi| -> Vec<String> {
        api.requests()
            .iter()
            .filter_map(|r| r.resource.as_ref().map(|id| id.plural.clone()))
            .collect()
    };
    assert!(
        !resources(&workload).iter().any(|r| r == "machines"),
        "{:?}",
        resources(&workload)
    );
    assert!(
        !resources(&management).iter().any(|r| r == "nodes"),
        "{:?}",
        resources(&management)
    );
    // The Machine watch is namespaced and selects the Cluster's label.
    assert!(
        management.requests().iter().all(|r| {
            r.namespace.as_deref() == Some("capi")
                && r.query.contains("cluster.x-k8s.io%2Fcluster-name%3Dc1")
                || r.resource.is_none()
        }),
        "{:#?}",
        management.requests()
    );
}

#[test]
fn the_split_needs_a_cluster_and_refuses_the_module_audit() {
    let parse = |args: &[&str]| Cli::try_parse_from([&["host-label-controller"], args].concat());
    let err = parse(&["--machines-kubeconfig", "/m"]).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("--cluster"), "{err}");
    let cli = parse(&["--machines-kubeconfig", "/m", "--cluster", "c1"]).unwrap();
    let err = Config::from_args(&cli.run, None, "id")
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected NAMESPACE/NAME"), "{err}");
    let cli = parse(&[
        "--machines-kubeconfig",
        "/m",
        "--cluster",
        "capi/c1",
        "--audit-cluster-modules",
    ])
    .unwrap();
    let err = Config::from_args(&cli.run, None, "id")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not supported with --machines-kubeconfig"),
        "{err}"
    );
    let cli = parse(&["--machines-kubeconfig", "/m", "--cluster", "capi/c1"]).unwrap();
    let config = Config::from_args(&cli.run, None, "id").unwrap();
    assert_eq!(
        config.cluster,
        Some(ObjectName {
            namespace: "capi".into(),
            name: "c1".into()
        })
    );
}
