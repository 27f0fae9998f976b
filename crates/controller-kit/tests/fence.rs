//! The write fence on its own, against kube-fake-api: reads pass, writes
//! stop when it closes, and a write waiting for its answer is abandoned.

use std::time::Duration;

use controller_kit::WriteFence;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube_fake_api::{FakeApi, Fault};

fn config_map(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm
}

#[tokio::test]
async fn a_closed_fence_refuses_writes_and_lets_reads_through() {
    let fake = FakeApi::new();
    let fence = WriteFence::new();
    let api: Api<ConfigMap> = Api::namespaced(fence.guard(fake.client()), "default");
    api.create(&PostParams::default(), &config_map("before"))
        .await
        .unwrap();
    assert!(!fence.is_closed());
    fence.close();
    assert!(fence.is_closed());
    let refused = api
        .create(&PostParams::default(), &config_map("after"))
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("writes are fenced"),
        "{refused}"
    );
    assert!(api.get("before").await.is_ok(), "reads go on");
    let unfenced: Api<ConfigMap> = Api::namespaced(fake.client(), "default");
    assert!(unfenced.get_opt("after").await.unwrap().is_none());
}

#[tokio::test]
async fn closing_the_fence_abandons_a_write_waiting_for_its_answer() {
    let fake = FakeApi::new();
    fake.inject(Fault::latency(Duration::from_secs(30)).on_resource("configmaps"));
    let fence = WriteFence::new();
    let api: Api<ConfigMap> = Api::namespaced(fence.guard(fake.client()), "default");
    let write = tokio::spawn(async move {
        api.create(&PostParams::default(), &config_map("slow"))
            .await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    fence.close();
    let answer = tokio::time::timeout(Duration::from_secs(2), write)
        .await
        .expect("abandoned at once, not after the delay")
        .unwrap();
    assert!(
        answer
            .unwrap_err()
            .to_string()
            .contains("writes are fenced")
    );
}
