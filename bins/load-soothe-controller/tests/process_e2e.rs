//! The built binary as a user deploys it: a process with `--kubeconfig`,
//! talking HTTP to the stand-in served on a loopback port, as its
//! ServiceAccount with exactly the generated manifests' RBAC rules. With
//! `prepareQueueLength: 1` it accepts one of two DataUploads; exit 0 on
//! SIGTERM.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube_fake_api::server::Loopback;
use kube_fake_api::{FakeApi, id_of};
use load_soothe_controller::GateMode;
use serde_json::json;
use velero_api::DataUpload;

const NS: &str = "velero";

#[tokio::test]
async fn the_binary_admits_through_its_kubeconfig() {
    let fake = FakeApi::new();
    let manifests = load_soothe_controller::manifests::manifest(
        GateMode::Exact,
        load_soothe_controller::Admission::Accept,
    )
    .to_yaml()
    .unwrap();
    fake.enforce_rbac(&manifests).unwrap();
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("node-agent-config".into());
    cm.metadata.namespace = Some(NS.into());
    cm.data = Some(BTreeMap::from([(
        "node-agent-config.json".to_owned(),
        json!({"loadConcurrency": {"prepareQueueLength": 1}}).to_string(),
    )]));
    fake.seed(&cm).unwrap();
    for name in ["du-1", "du-2"] {
        let mut du = DataUpload::new(name, velero_api::DataUploadSpec::default());
        du.metadata.namespace = Some(NS.into());
        du.spec.data_mover = Some("acme".into());
        fake.seed(&du).unwrap();
    }
    let server = Loopback::start(fake.clone(), Some((NS, "load-soothe-controller")))
        .await
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_load-soothe-controller"))
        .args([
            "--admission",
            "accept",
            "--datamover",
            "acme",
            "--mode",
            "exact",
            "--namespace",
            NS,
            "--node",
            "n1",
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
    let accepted = || {
        fake.list_values(&id_of::<DataUpload>(), Some(NS))
            .iter()
            .filter(|d| d["status"]["phase"] == "Accepted")
            .count()
    };
    let start = Instant::now();
    while accepted() == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "nothing accepted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Held at the limit.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(accepted(), 1);
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
