//! Fixtures for the end-to-end tests: Nodes, Machines, Pods and a running
//! controller on a `kube_fake_api::FakeApi`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use controller_kit::{Shutdown, ShutdownReason};
use host_label_controller::cli::label_config;
use host_label_controller::{Config, Error, HostSource, Metrics, ObjectName, Telemetry};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube_fake_api::{FakeApi, ResourceId};
use serde_json::json;
use tokio::task::JoinHandle;

pub const CAPV_KEY: &str = "node.cluster.x-k8s.io/esxi-host";
pub const NR_KEY: &str = "node-restriction.kubernetes.io/esxi-host";
pub const ANNOTATION: &str = "policyctl/managed-host-labels";
pub const OPS_NS: &str = "ops";
pub const STATUS_CM: &str = "host-labels-status";
/// Generous upper bound for "within seconds" on a loaded 2-core CI machine.
pub const SOON: Duration = Duration::from_secs(5);

pub fn machines_id() -> ResourceId {
    ResourceId::new("cluster.x-k8s.io", "v1beta1", "machines")
}

pub fn seed_node(fake: &FakeApi, name: &str, labels: &[(&str, &str)]) {
    let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
    }))
    .unwrap();
    fake.seed(&node).unwrap();
}

pub fn seed_machine(fake: &FakeApi, name: &str, node: &str, host: &str) {
    fake.seed_value(
        &machines_id(),
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "kind": "Machine",
            "metadata": {"name": name, "namespace": "capi", "labels": {CAPV_KEY: host, "cluster.x-k8s.io/cluster-name": "c1"}},
            "spec": {"clusterName": "c1"},
            "status": {"nodeRef": {"kind": "Node", "name": node}, "phase": "Running"},
        }),
    )
    .unwrap();
}

pub fn move_machine(fake: &FakeApi, name: &str, host: &str) {
    fake.modify_value(&machines_id(), Some("capi"), name, |m| {
        m["metadata"]["labels"][CAPV_KEY] = json!(host);
    })
    .unwrap();
}

/// A pod of ReplicaSet `rs` on `node` with required anti-affinity on `key`.
pub fn seed_replica(fake: &FakeApi, name: &str, rs: &str, node: &str, key: &str) {
    seed_replica_with(fake, name, rs, node, key, true);
}

/// A replica of `rs` on `node` whose anti-affinity on `key` is required
/// or only preferred.
pub fn seed_replica_with(
    fake: &FakeApi,
    name: &str,
    rs: &str,
    node: &str,
    key: &str,
    required: bool,
) {
    let term = json!({"labelSelector": {"matchLabels": {"app": rs}}, "topologyKey": key});
    let anti_affinity = if required {
        json!({"requiredDuringSchedulingIgnoredDuringExecution": [term]})
    } else {
        json!({"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": term}
        ]})
    };
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": name, "namespace": "app", "labels": {"app": rs},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": format!("uid-{rs}"), "controller": true}],
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "nginx"}],
            "affinity": {"podAntiAffinity": anti_affinity},
        },
        "status": {"phase": "Running"},
    }))
    .unwrap();
    fake.seed(&pod).unwrap();
}

pub fn node(fake: &FakeApi, name: &str) -> Node {
    fake.get::<Node>(None, name).unwrap().unwrap()
}

pub fn label(fake: &FakeApi, node_name: &str, key: &str) -> Option<String> {
    node(fake, node_name)
        .metadata
        .labels
        .unwrap_or_default()
        .get(key)
        .cloned()
}

pub fn annotation(fake: &FakeApi, node_name: &str) -> Option<String> {
    node(fake, node_name)
        .metadata
        .annotations
        .unwrap_or_default()
        .get(ANNOTATION)
        .cloned()
}

pub fn status_summary(fake: &FakeApi) -> Option<String> {
    fake.get::<ConfigMap>(Some(OPS_NS), STATUS_CM)
        .unwrap()
        .and_then(|cm| cm.data)
        .and_then(|d| d.get("summary.json").cloned())
}

pub fn config(keys: &[&str], source: HostSource) -> Config {
    let keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
    let mut config = Config::new(label_config(&keys, None).unwrap(), source);
    config.status_configmap = ObjectName {
        namespace: OPS_NS.into(),
        name: STATUS_CM.into(),
    };
    config.debounce = Duration::from_millis(20);
    config.audit_debounce = Duration::from_millis(100);
    config
}

pub struct Running {
    pub fake: FakeApi,
    pub shutdown: Shutdown,
    pub metrics: Metrics,
    pub task: JoinHandle<Result<ShutdownReason, Error>>,
}

impl Running {
    pub async fn stop(self) {
        self.shutdown.trigger(ShutdownReason::Requested);
        let reason = tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("controller stops within 10 s")
            .expect("controller task does not panic")
            .expect("controller run() succeeds");
        assert_eq!(reason, ShutdownReason::Requested);
        let denied = self.fake.denied();
        assert!(
            denied.is_empty(),
            "the generated manifests do not grant what the controller did:\n{}",
            denied.join("\n")
        );
    }
}

/// Starts the real `run_with` as the controller's ServiceAccount in
/// `OPS_NS`, with exactly the RBAC rules its generated manifests (with the
/// features `config` uses) grant; a request they deny fails the test when
/// it stops.
pub fn start(fake: &FakeApi, config: Config) -> Running {
    let manifests = host_label_controller::manifests::render_with(
        OPS_NS,
        host_label_controller::manifests::DEFAULT_IMAGE,
        host_label_controller::manifests::Features {
            sync_machine_labels: config.machine_sync.is_some(),
            audit_cluster_modules: config.audit_cluster_modules,
            all_clusters: false,
        },
    )
    .unwrap();
    fake.enforce_rbac(&manifests).unwrap();
    let shutdown = Shutdown::new();
    let telemetry = Telemetry::default();
    let metrics = telemetry.metrics.clone();
    let task = tokio::spawn(host_label_controller::run_with(
        fake.client_as(OPS_NS, host_label_controller::CONTROLLER_NAME),
        config,
        shutdown.clone(),
        telemetry,
    ));
    Running {
        fake: fake.clone(),
        shutdown,
        metrics,
        task,
    }
}
