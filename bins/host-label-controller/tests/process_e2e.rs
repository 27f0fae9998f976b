//! The built binary as a user deploys it: a process with `--kubeconfig`,
//! talking HTTP to the stand-in served on a loopback port, as its
//! ServiceAccount with exactly the generated manifests' RBAC rules, on
//! Cluster API 1.12's Machine CRD. Exit 0 on SIGTERM.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kube_fake_api::server::Loopback;
use kube_fake_api::{FakeApi, crds};
use support::*;

#[tokio::test]
async fn the_binary_labels_nodes_through_its_kubeconfig() {
    let fake = FakeApi::new();
    fake.install_crds(crds::CLUSTER_API_1_12_MACHINE).unwrap();
    let manifests = host_label_controller::manifests::render(
        OPS_NS,
        host_label_controller::manifests::DEFAULT_IMAGE,
    )
    .unwrap();
    fake.enforce_rbac(&manifests).unwrap();
    seed_node(&fake, "n1", &[]);
    fake.seed_value(
        &machines_id(),
        serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "kind": "Machine",
            "metadata": {"name": "m1", "namespace": "capi", "labels": {CAPV_KEY: "esx-01.lab"}},
            "spec": {"clusterName": "c1", "bootstrap": {}, "infrastructureRef": {"kind": "VSphereMachine", "name": "m1"}},
            "status": {"nodeRef": {"kind": "Node", "name": "n1"}, "phase": "Running"},
        }),
    )
    .unwrap();
    let server = Loopback::start(fake.clone(), Some((OPS_NS, "host-label-controller")))
        .await
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_host-label-controller"))
        .args([
            "--namespace",
            OPS_NS,
            "--label-key",
            CAPV_KEY,
            "--metrics-addr",
            "127.0.0.1:0",
            "--kubeconfig",
        ])
        .arg(server.kubeconfig_path())
        .env_remove("KUBECONFIG")
        .env("RUST_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while label(&fake, "n1", CAPV_KEY).as_deref() != Some("esx-01.lab") {
        assert!(start.elapsed() < Duration::from_secs(20), "n1 not labelled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(fake.denied().is_empty(), "{:#?}", fake.denied());
    process_testkit::sigterm(&child);
    let start = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no exit after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let output = child.wait_with_output().unwrap();
    assert_eq!(code, Some(0), "{}", String::from_utf8_lossy(&output.stderr));
}
