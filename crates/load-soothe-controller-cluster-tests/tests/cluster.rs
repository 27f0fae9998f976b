//! `load-soothe-controller` against a real API server. Ignored by default:
//! `KUBECONFIG=... cargo test -p load-soothe-controller-cluster-tests -- --ignored`
//! (a throwaway kind/k3d cluster; the load CRDs are installed if absent).

use std::collections::BTreeMap;
use std::time::Duration;

use controller_kit::{Shutdown, ShutdownReason};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use load_soothe_controller::{Config, GateMode};
use load_soothe_controller_cluster_tests::{
    delete_namespace, install_crds, throwaway_namespace, uninstall_crds, wait_for,
};
use velero_api::DataUpload;

fn limit_data(limit: i64) -> BTreeMap<String, String> {
    BTreeMap::from([(
        "node-agent-config.json".to_owned(),
        serde_json::json!({"loadConcurrency": {"prepareQueueLength": limit}}).to_string(),
    )])
}

async fn accepted(api: &Api<DataUpload>) -> Vec<String> {
    api.list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|d| d.phase().as_str() == "Accepted")
        .filter_map(|d| d.metadata.name)
        .collect()
}

async fn until_accepted(api: &Api<DataUpload>, n: usize) {
    let ok = wait_for("accepted count", Duration::from_secs(30), || async {
        Ok(accepted(api).await.len() == n)
    })
    .await
    .unwrap();
    assert!(ok, "want {n} accepted, have {:?}", accepted(api).await);
}

#[tokio::test]
#[ignore = "needs cluster"]
async fn admits_within_the_limit_follows_config_edits_and_frees_deleted_slots() {
    for mode in [GateMode::Exact, GateMode::Optimistic] {
        let client = kube::Client::try_default().await.expect("KUBECONFIG");
        let crds = install_crds(&client).await.unwrap();
        let ns = throwaway_namespace(&client, "lsc-test").await.unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("node-agent-config".into());
        cm.data = Some(limit_data(2));
        cms.create(&PostParams::default(), &cm).await.unwrap();
        let dus: Api<DataUpload> = Api::namespaced(client.clone(), &ns);
        for i in 0..6 {
            let mut du = DataUpload::new(&format!("du-{i}"), Default::default());
            du.spec.data_mover = Some("acme".into());
            dus.create(&PostParams::default(), &du).await.unwrap();
        }
        let shutdown = Shutdown::new();
        let mut config = Config::new(&ns, "cluster-test", &["acme"], mode);
        config.requeue_after = Duration::from_millis(500);
        let controller = tokio::spawn(load_soothe_controller::run(
            client.clone(),
            config,
            shutdown.clone(),
        ));

        until_accepted(&dus, 2).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(accepted(&dus).await.len(), 2, "{mode:?}");

        cms.patch(
            "node-agent-config",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": limit_data(3)})),
        )
        .await
        .unwrap();
        until_accepted(&dus, 3).await;

        let first = accepted(&dus).await[0].clone();
        dus.delete(&first, &DeleteParams::default()).await.unwrap();
        until_accepted(&dus, 3).await;

        shutdown.trigger(ShutdownReason::Requested);
        controller.await.unwrap().unwrap();
        delete_namespace(&client, &ns).await.unwrap();
        uninstall_crds(&client, &crds).await.unwrap();
    }
}
