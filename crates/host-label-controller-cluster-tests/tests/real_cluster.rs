//! Real-cluster tests (`#[ignore = "needs cluster"]`): run with
//! `cargo test -p host-label-controller-cluster-tests -- --ignored` and a
//! `KUBECONFIG` pointing at a throwaway cluster.

use std::time::Duration;

use controller_kit::{Shutdown, ShutdownReason};
use host_label_controller::cli::label_config;
use host_label_controller::{Config, HostSource, ObjectName};
use host_label_controller_cluster_tests::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

async fn client() -> kube::Client {
    kube::Client::try_default()
        .await
        .expect("a cluster from KUBECONFIG or in-cluster configuration")
}

struct Setup {
    client: kube::Client,
    namespace: String,
    label: String,
    annotation: String,
    nodes: Vec<String>,
}

async fn setup() -> Setup {
    let client = client().await;
    let suffix = unique_suffix();
    let namespace = format!("hlc-itest-{suffix}");
    create_namespace(&client, &namespace).await.unwrap();
    let (label, annotation) = test_keys(&suffix);
    let nodes = node_names(&client).await.unwrap();
    assert!(!nodes.is_empty(), "the cluster has no Nodes");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "hosts"},
        "data": {"inventory.yaml": inventory_for(&nodes, "esx-a")},
    }))
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    Setup {
        client,
        namespace,
        label,
        annotation,
        nodes,
    }
}

impl Setup {
    fn config(&self) -> Config {
        let mut config = Config::new(
            label_config(std::slice::from_ref(&self.label), Some(&self.annotation)).unwrap(),
            HostSource::Inventory {
                configmap: ObjectName {
                    namespace: self.namespace.clone(),
                    name: "hosts".into(),
                },
                key: "inventory.yaml".into(),
            },
        );
        config.status_configmap = ObjectName {
            namespace: self.namespace.clone(),
            name: "status".into(),
        };
        config
    }

    async fn teardown(self) {
        let _ = remove_test_keys(&self.client, &self.label, &self.annotation).await;
        delete_namespace(&self.client, &self.namespace).await;
    }
}

#[tokio::test]
#[ignore = "needs cluster"]
async fn labels_appear_on_real_nodes_and_follow_an_inventory_edit() {
    let s = setup().await;
    let shutdown = Shutdown::new();
    let task = tokio::spawn(host_label_controller::run(
        s.client.clone(),
        s.config(),
        shutdown.clone(),
    ));
    let first = s.nodes[0].clone();
    let result = async {
        wait_for(
            "labels on the first Node",
            Duration::from_secs(30),
            || async {
                Ok(node_label(&s.client, &first, &s.label).await?.as_deref() == Some("esx-a"))
            },
        )
        .await?;
        let cms: Api<ConfigMap> = Api::namespaced(s.client.clone(), &s.namespace);
        let patch = json!({"data": {"inventory.yaml": inventory_for(&s.nodes, "esx-b")}});
        cms.patch("hosts", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        wait_for(
            "the label follows the edit",
            Duration::from_secs(10),
            || async {
                Ok(node_label(&s.client, &first, &s.label).await?.as_deref() == Some("esx-b"))
            },
        )
        .await?;
        wait_for("the status summary", Duration::from_secs(10), || async {
            Ok(cms.get_opt("status").await?.is_some())
        })
        .await
    }
    .await;
    shutdown.trigger(ShutdownReason::Requested);
    let _ = task.await;
    s.teardown().await;
    result.unwrap();
}

#[tokio::test]
#[ignore = "needs cluster"]
async fn dry_run_writes_nothing_on_a_real_cluster() {
    let s = setup().await;
    let mut config = s.config();
    config.dry_run = true;
    let shutdown = Shutdown::new();
    let task = tokio::spawn(host_label_controller::run(
        s.client.clone(),
        config,
        shutdown.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(5)).await;
    shutdown.trigger(ShutdownReason::Requested);
    let _ = task.await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client.clone(), &s.namespace);
    let status = cms.get_opt("status").await.unwrap();
    let label = node_label(&s.client, &s.nodes[0], &s.label).await.unwrap();
    s.teardown().await;
    assert!(status.is_none(), "dry-run wrote the status ConfigMap");
    assert_eq!(label, None, "dry-run labelled a Node");
}
