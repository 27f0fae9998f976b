//! The built binary as a user deploys it: a process with `--kubeconfig`,
//! talking HTTP to the stand-in served on a loopback port, as its
//! ServiceAccount with exactly the generated manifests' RBAC rules, on
//! Velero 1.18's Backup CRD. Stops with exit 0 on SIGTERM.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use backup_queue_controller::manifests::{DEFAULT_IMAGE, ManifestScope, render};
use kube_fake_api::server::Loopback;
use kube_fake_api::{FakeApi, crds};
use support::*;

#[tokio::test]
async fn the_binary_queues_backups_through_its_kubeconfig() {
    let fake = FakeApi::new();
    fake.install_crds(crds::VELERO_1_18_BACKUP).unwrap();
    fake.enforce_rbac(&render(ManifestScope::Namespaced, NS, DEFAULT_IMAGE).unwrap())
        .unwrap();
    seed_namespaces(&fake, ["a"].map(String::from));
    seed_backup(&fake, backup("b1", &["a"], 1, "New", 0));
    seed_backup(&fake, backup("b2", &["a"], 2, "New", 0));
    let server = Loopback::start(fake.clone(), Some((NS, "backup-queue-controller")))
        .await
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_backup-queue-controller"))
        .args([
            "--namespace",
            NS,
            "--concurrent-backups",
            "1",
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
    eventually("b1 started, b2 queued", 20, || {
        phases(&fake) == expect(&[("b1", "ReadyToStart", 0), ("b2", "Queued", 1)])
    })
    .await;
    assert!(fake.denied().is_empty(), "{:#?}", fake.denied());
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.field_manager.as_deref() == Some("backup-queue-controller")),
        "writes carry the controller's field manager"
    );
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

#[tokio::test]
async fn the_binary_refuses_velero_1_17_with_exit_1_and_one_line() {
    let fake = FakeApi::new();
    fake.install_crds(crds::VELERO_1_17_BACKUP).unwrap();
    fake.enforce_rbac(&render(ManifestScope::Namespaced, NS, DEFAULT_IMAGE).unwrap())
        .unwrap();
    let server = Loopback::start(fake.clone(), Some((NS, "backup-queue-controller")))
        .await
        .unwrap();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_backup-queue-controller"))
        .args([
            "--namespace",
            NS,
            "--metrics-addr",
            "127.0.0.1:0",
            "--kubeconfig",
        ])
        .arg(server.kubeconfig_path())
        .env_remove("KUBECONFIG")
        .env_remove("RUST_BACKTRACE")
        .env("RUST_LOG", "off")
        .stderr(Stdio::piped())
        .output();
    let output = tokio::time::timeout(Duration::from_secs(20), child)
        .await
        .expect("exits at once")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with(
            "backup-queue-controller: error: the Backup CRD (backups.velero.io) lacks phase Queued"
        ) && lines[0].contains("needs Velero 1.18 or later"),
        "{stderr}"
    );
    assert!(fake.requests().iter().all(|r| !r.is_write()));
    assert!(fake.denied().is_empty(), "{:#?}", fake.denied());
}
