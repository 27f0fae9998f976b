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

mod all_clusters {
    use super::*;
    use host_label_controller::manifests::{DEFAULT_IMAGE, Features, render, render_with};
    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use kube_fake_api::ResourceId;
    use kube_fake_api::server::Loopback;

    fn clusters_id() -> ResourceId {
        ResourceId::new("cluster.x-k8s.io", "v1beta1", "clusters")
    }

    /// A workload cluster served over HTTP, with a Node `n1`, enforcing the
    /// controller's generated RBAC, and its `<cluster>-kubeconfig` Secret
    /// plus Cluster and Machine in the management cluster.
    async fn workload(management: &FakeApi, cluster: &str, host: &str) -> (FakeApi, Loopback) {
        let fake = FakeApi::new();
        seed_node(&fake, "n1", &[]);
        fake.enforce_rbac(&render(OPS_NS, DEFAULT_IMAGE).unwrap())
            .unwrap();
        let server = Loopback::start(
            fake.clone(),
            Some((OPS_NS, host_label_controller::CONTROLLER_NAME)),
        )
        .await
        .unwrap();
        let kubeconfig = std::fs::read(server.kubeconfig_path()).unwrap();
        let mut secret = Secret::default();
        secret.metadata.name = Some(format!("{cluster}-kubeconfig"));
        secret.metadata.namespace = Some("capi".into());
        secret.data = Some([("value".to_owned(), ByteString(kubeconfig))].into());
        management.seed(&secret).unwrap();
        management
            .seed_value(
                &clusters_id(),
                json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "metadata": {"name": cluster, "namespace": "capi"}}),
            )
            .unwrap();
        management
            .seed_value(
                &machines_id(),
                machine("capi", &format!("{cluster}-md-1"), cluster, "n1", host),
            )
            .unwrap();
        (fake, server)
    }

    #[tokio::test]
    async fn every_workload_cluster_is_reached_through_its_kubeconfig_secret_as_clusters_come_and_go()
     {
        let management = FakeApi::new();
        management
            .install_crds(crds::CLUSTER_API_1_12_MACHINE)
            .unwrap();
        let features = Features {
            all_clusters: true,
            ..Features::default()
        };
        management
            .enforce_rbac(&render_with(OPS_NS, DEFAULT_IMAGE, features).unwrap())
            .unwrap();
        let (w1, _s1) = workload(&management, "c1", "esx-01.lab").await;
        let (w2, _s2) = workload(&management, "c2", "esx-02.lab").await;

        let shutdown = Shutdown::new();
        let telemetry = Telemetry::default();
        let metrics = telemetry.metrics.clone();
        let task = tokio::spawn(host_label_controller::run_all_clusters(
            management.client_as(OPS_NS, host_label_controller::CONTROLLER_NAME),
            config(&[CAPV_KEY], HostSource::Machines),
            shutdown.clone(),
            telemetry,
        ));
        let has_series = |cluster: &str| {
            metrics
                .unlabelled_nodes
                .get(&host_label_controller::metrics::cluster_labels(cluster))
                .is_some()
        };
        // Both clusters have a Node n1; each gets its own Cluster's host.
        eventually("both n1 labelled", Duration::from_secs(10), || {
            label(&w1, "n1", CAPV_KEY).as_deref() == Some("esx-01.lab")
                && label(&w2, "n1", CAPV_KEY).as_deref() == Some("esx-02.lab")
        })
        .await;
        // One gauge series per workload cluster.
        eventually("a series per cluster", Duration::from_secs(10), || {
            has_series("capi/c1") && has_series("capi/c2")
        })
        .await;
        // A Cluster created later is picked up.
        let (w3, _s3) = workload(&management, "c3", "esx-03.lab").await;
        eventually("new cluster labelled", Duration::from_secs(10), || {
            label(&w3, "n1", CAPV_KEY).as_deref() == Some("esx-03.lab")
        })
        .await;
        // A deleted Cluster's loop stops: its Machine moving changes nothing.
        management
            .remove_value(&clusters_id(), Some("capi"), "c2")
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        move_machine_in(&management, "c2-md-1", "esx-09.lab");
        move_machine_in(&management, "c1-md-1", "esx-11.lab");
        eventually("c1 follows its Machine", Duration::from_secs(10), || {
            label(&w1, "n1", CAPV_KEY).as_deref() == Some("esx-11.lab")
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(label(&w2, "n1", CAPV_KEY).as_deref(), Some("esx-02.lab"));

        // The status: one entry per workload cluster, side by side in the
        // management cluster's ConfigMap; none in the workload clusters.
        eventually("both entries", Duration::from_secs(10), || {
            let data = management
                .get::<ConfigMap>(Some(OPS_NS), STATUS_CM)
                .unwrap()
                .and_then(|cm| cm.data)
                .unwrap_or_default();
            data.contains_key("capi_c1.summary.json") && data.contains_key("capi_c3.summary.json")
        })
        .await;
        for fake in [&w1, &w3] {
            assert!(status_summary(fake).is_none());
        }
        let entries = management
            .get::<ConfigMap>(Some(OPS_NS), STATUS_CM)
            .unwrap()
            .and_then(|cm| cm.data)
            .unwrap_or_default();
        assert!(
            !entries.contains_key("capi_c2.summary.json"),
            "the deleted Cluster's entry is gone: {:?}",
            entries.keys()
        );
        // The deleted Cluster's series went with its loop.
        assert!(has_series("capi/c1") && has_series("capi/c3"));
        assert!(!has_series("capi/c2"));

        shutdown.trigger(ShutdownReason::Requested);
        task.await.unwrap().unwrap();
        for fake in [&management, &w1, &w2, &w3] {
            assert!(fake.denied().is_empty(), "{:#?}", fake.denied());
        }
    }

    /// The leadership's write fence covers the workload clusters' clients
    /// too: once it closes (as when the Lease is lost), a Machine that
    /// moves is not followed by a label write to its workload cluster, nor
    /// by a status write to the management cluster. (That reads still pass
    /// the closed fence is controller-kit's fence tests' to show: here the
    /// loop reads from its watches' caches and need not send a request in
    /// the window, so asserting one was timing, not behaviour.)
    #[tokio::test]
    async fn a_closed_write_fence_stops_the_writes_to_every_cluster() {
        let management = FakeApi::new();
        management
            .install_crds(crds::CLUSTER_API_1_12_MACHINE)
            .unwrap();
        let features = Features {
            all_clusters: true,
            ..Features::default()
        };
        management
            .enforce_rbac(&render_with(OPS_NS, DEFAULT_IMAGE, features).unwrap())
            .unwrap();
        let (w1, _s1) = workload(&management, "c1", "esx-01.lab").await;
        let shutdown = Shutdown::new();
        let telemetry = Telemetry::default();
        let fence = telemetry.fence.clone();
        let metrics = telemetry.metrics.clone();
        let task = tokio::spawn(host_label_controller::run_all_clusters(
            management.client_as(OPS_NS, host_label_controller::CONTROLLER_NAME),
            config(&[CAPV_KEY], HostSource::Machines),
            shutdown.clone(),
            telemetry,
        ));
        eventually("n1 labelled", Duration::from_secs(10), || {
            label(&w1, "n1", CAPV_KEY).as_deref() == Some("esx-01.lab")
        })
        .await;
        eventually("the status entry", Duration::from_secs(10), || {
            management
                .get::<ConfigMap>(Some(OPS_NS), STATUS_CM)
                .unwrap()
                .and_then(|cm| cm.data)
                .is_some_and(|data| data.contains_key("capi_c1.summary.json"))
        })
        .await;

        fence.close();
        let failed_before = metrics
            .controller
            .writes
            .get_or_create(&controller_kit::metrics::WriteLabels { outcome: "failed" })
            .get();
        w1.clear_requests();
        management.clear_requests();
        move_machine_in(&management, "c1-md-1", "esx-11.lab");
        // The loop sees the move and tries to write the new label: the
        // write fails inside the client, before reaching the cluster.
        eventually("a refused label write", Duration::from_secs(10), || {
            metrics
                .controller
                .writes
                .get_or_create(&controller_kit::metrics::WriteLabels { outcome: "failed" })
                .get()
                > failed_before
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(label(&w1, "n1", CAPV_KEY).as_deref(), Some("esx-01.lab"));
        for (what, fake) in [("workload", &w1), ("management", &management)] {
            let writes: Vec<_> = fake
                .requests()
                .into_iter()
                .filter(|r| r.method != "GET")
                .map(|r| format!("{} {}", r.method, r.path))
                .collect();
            assert!(
                writes.is_empty(),
                "{what} cluster written after the fence closed: {writes:?}"
            );
        }
        shutdown.trigger(ShutdownReason::Requested);
        let _ = task.await.unwrap();
    }

    fn move_machine_in(fake: &FakeApi, name: &str, host: &str) {
        fake.modify_value(&machines_id(), Some("capi"), name, |m| {
            m["metadata"]["labels"][CAPV_KEY] = json!(host);
        })
        .unwrap();
    }
}
