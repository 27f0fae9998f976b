//! `backup-queue-controller` against a real API server. Ignored by default:
//! `KUBECONFIG=... cargo test -p backup-queue-controller-cluster-tests -- --ignored`
//! (a throwaway kind/k3d cluster; see docs/operations.md).

use std::collections::BTreeMap;
use std::time::Duration;

use backup_queue_controller::{Config, StatusSubresource};
use backup_queue_controller_cluster_tests::{
    delete_namespace, install_backup_crd, throwaway_namespace, uninstall_backup_crd, wait_for,
};
use controller_kit::{Shutdown, ShutdownReason};
use kube::api::{Api, Patch, PatchParams, PostParams};
use velero_api::Backup;

fn backup(name: &str, namespaces: &[&str]) -> Backup {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": "Backup",
        "metadata": {"name": name},
        "spec": {"includedNamespaces": namespaces, "storageLocation": "default"},
    }))
    .unwrap()
}

async fn phases(api: &Api<Backup>) -> BTreeMap<String, (String, i64)> {
    api.list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|b| {
            (
                b.metadata.name.clone().unwrap_or_default(),
                (b.phase().as_str().to_owned(), b.queue_position()),
            )
        })
        .collect()
}

async fn until_phases(api: &Api<Backup>, want: &[(&str, &str, i64)]) {
    let want: BTreeMap<String, (String, i64)> = want
        .iter()
        .map(|(n, p, q)| ((*n).to_owned(), ((*p).to_owned(), *q)))
        .collect();
    let result = wait_for("the expected phases", Duration::from_secs(30), || async {
        Ok(phases(api).await == want)
    })
    .await;
    assert!(
        result.is_ok(),
        "want {want:?}, have {:?}",
        phases(api).await
    );
}

#[tokio::test]
#[ignore = "needs cluster"]
async fn queues_starts_and_advances_backups_on_a_real_api_server() {
    let client = kube::Client::try_default().await.expect("KUBECONFIG");
    let crd = install_backup_crd(&client).await.unwrap();
    let ns = throwaway_namespace(&client, "bqc-test").await.unwrap();
    let api: Api<Backup> = Api::namespaced(client.clone(), &ns);

    let shutdown = Shutdown::new();
    let config = Config {
        concurrent_backups: 2,
        status_subresource: StatusSubresource::Auto,
        ..Config::new(&ns)
    };
    let controller = tokio::spawn(backup_queue_controller::run(
        client.clone(),
        config,
        shutdown.clone(),
    ));

    for (name, namespaces) in [
        ("b1", &["app-a"][..]),
        ("b2", &["app-a", "app-b"][..]),
        ("b3", &["app-c"][..]),
        ("b4", &["app-b"][..]),
    ] {
        api.create(&PostParams::default(), &backup(name, namespaces))
            .await
            .unwrap();
        // Distinct creation timestamps (second resolution) keep the order.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    until_phases(
        &api,
        &[
            ("b1", "ReadyToStart", 0),
            ("b2", "Queued", 1),
            ("b3", "ReadyToStart", 0),
            ("b4", "Queued", 2),
        ],
    )
    .await;

    // Velero finishes b1: b2 starts; b4 (overlapping b2) stays queued.
    api.patch(
        "b1",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"status": {"phase": "Completed"}})),
    )
    .await
    .unwrap();
    until_phases(
        &api,
        &[
            ("b1", "Completed", 0),
            ("b2", "ReadyToStart", 0),
            ("b3", "ReadyToStart", 0),
            ("b4", "Queued", 1),
        ],
    )
    .await;

    shutdown.trigger(ShutdownReason::Requested);
    let reason = tokio::time::timeout(Duration::from_secs(10), controller)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(reason, ShutdownReason::Requested);
    delete_namespace(&client, &ns).await.unwrap();
    uninstall_backup_crd(&client, crd).await.unwrap();
}

#[tokio::test]
#[ignore = "needs cluster"]
async fn dry_run_writes_nothing_on_a_real_api_server() {
    let client = kube::Client::try_default().await.expect("KUBECONFIG");
    let crd = install_backup_crd(&client).await.unwrap();
    let ns = throwaway_namespace(&client, "bqc-dry").await.unwrap();
    let api: Api<Backup> = Api::namespaced(client.clone(), &ns);
    api.create(&PostParams::default(), &backup("b1", &["x"]))
        .await
        .unwrap();
    let shutdown = Shutdown::new();
    let config = Config {
        dry_run: true,
        ..Config::new(&ns)
    };
    let controller = tokio::spawn(backup_queue_controller::run(
        client.clone(),
        config,
        shutdown.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(phases(&api).await["b1"], ("New".to_owned(), 0));
    shutdown.trigger(ShutdownReason::Requested);
    let _ = tokio::time::timeout(Duration::from_secs(10), controller).await;
    delete_namespace(&client, &ns).await.unwrap();
    uninstall_backup_crd(&client, crd).await.unwrap();
}
