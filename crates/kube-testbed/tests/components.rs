//! The optional components, each on a bed of its own: kube-scheduler
//! binds, kube-controller-manager deletes namespaces and collects
//! garbage, the Velero server reconciles its objects.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{eventually, start, status_code};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, Namespace, Node, NodeCondition, NodeStatus, Pod, PodSpec,
    ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, DynamicObject, GroupVersionKind, ObjectMeta, PostParams};
use kube::discovery::ApiResource;
use kube_testbed::{Component, Testbed};

fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), Quantity((*value).to_owned())))
        .collect()
}

#[tokio::test]
async fn the_scheduler_binds_a_pod_to_a_ready_node() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = start(Testbed::builder().with_scheduler()).await;
    let nodes: Api<Node> = Api::all(bed.client());
    let capacity = quantities(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]);
    let node = Node {
        metadata: ObjectMeta {
            name: Some("node-a".to_owned()),
            labels: Some(BTreeMap::from([(
                "kubernetes.io/hostname".to_owned(),
                "node-a".to_owned(),
            )])),
            ..Default::default()
        },
        status: Some(NodeStatus {
            capacity: Some(capacity.clone()),
            allocatable: Some(capacity),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".to_owned(),
                status: "True".to_owned(),
                reason: Some("KubeletReady".to_owned()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    nodes.create(&PostParams::default(), &node).await.unwrap();

    let namespace = bed.namespace("scheduling").await.unwrap();
    let pods: Api<Pod> = Api::namespaced(bed.client(), &namespace);
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("placed".to_owned()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".to_owned(),
                image: Some("registry.k8s.io/pause:3.10".to_owned()),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities(&[("cpu", "100m"), ("memory", "64Mi")])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let node_name = eventually("the pod to be bound", Duration::from_secs(60), || async {
        pods.get("placed")
            .await
            .ok()
            .and_then(|pod| pod.spec)
            .and_then(|spec| spec.node_name)
    })
    .await;
    assert_eq!(node_name, "node-a");
}

#[tokio::test]
async fn the_controller_manager_finishes_namespace_deletion_and_collects_garbage() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = start(Testbed::builder().with_controller_manager()).await;
    let namespace = bed.namespace("deleted").await.unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(bed.client(), &namespace);
    let owner = config_maps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("owner".to_owned()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    config_maps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("dependent".to_owned()),
                    owner_references: Some(vec![OwnerReference {
                        api_version: "v1".to_owned(),
                        kind: "ConfigMap".to_owned(),
                        name: "owner".to_owned(),
                        uid: owner.metadata.uid.clone().unwrap(),
                        ..Default::default()
                    }]),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    config_maps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("bystander".to_owned()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();

    // Garbage collection: the dependent goes with its owner.
    config_maps
        .delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    eventually(
        "the garbage collector to delete the dependent",
        Duration::from_secs(60),
        || async {
            match config_maps.get("dependent").await {
                Err(error) if status_code(&error) == Some(404) => Some(()),
                _ => None,
            }
        },
    )
    .await;

    // Namespace deletion: its contents go, then the namespace.
    let namespaces: Api<Namespace> = Api::all(bed.client());
    namespaces
        .delete(&namespace, &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "the namespace to be deleted",
        Duration::from_secs(60),
        || async {
            match namespaces.get(&namespace).await {
                Err(error) if status_code(&error) == Some(404) => Some(()),
                _ => None,
            }
        },
    )
    .await;
    let error = config_maps.get("bystander").await.unwrap_err();
    assert_eq!(status_code(&error), Some(404), "{error}");
}

#[tokio::test]
async fn the_velero_server_reconciles_a_backup() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = start(Testbed::builder().with_velero()).await;
    assert!(bed.pid(Component::Velero).is_some());
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("velero.io", "v1", "Backup"));
    let backups: Api<DynamicObject> = Api::namespaced_with(bed.client(), "velero", &resource);
    let backup: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "velero.io/v1",
        "kind": "Backup",
        "metadata": { "name": "nowhere", "namespace": "velero" },
        "spec": { "includedNamespaces": ["default"] },
    }))
    .unwrap();
    backups
        .create(&PostParams::default(), &backup)
        .await
        .unwrap();
    // The server queues the Backup, then its backup controller rejects
    // it: there is no backup storage location.
    let mut seen: Vec<String> = Vec::new();
    let started = std::time::Instant::now();
    while seen.last().map(String::as_str) != Some("FailedValidation") {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "Velero did not reject the Backup in 90 s; its phases: {seen:?}"
        );
        let phase = backups
            .get("nowhere")
            .await
            .ok()
            .and_then(|backup| backup.data.pointer("/status/phase").cloned())
            .and_then(|phase| phase.as_str().map(str::to_owned));
        if let Some(phase) = phase
            && seen.last() != Some(&phase)
        {
            seen.push(phase);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let backup = backups.get("nowhere").await.unwrap();
    let errors = backup.data.pointer("/status/validationErrors").cloned();
    assert!(
        errors.is_some_and(|errors| errors.to_string().contains("default")),
        "{:?}",
        backup.data.pointer("/status")
    );
}
