//! The Events wrapper: Events are published, and under `--dry-run` only logged.

use controller_kit::events::EventPublisher;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::Resource;
use kube::runtime::events::{Event, EventType};
use kube_fake_api::{FakeApi, Verb};
use serde_json::json;

fn event() -> Event {
    Event {
        type_: EventType::Normal,
        reason: "Queued".into(),
        note: Some("queued at position 1".into()),
        action: "Queue".into(),
        secondary: None,
    }
}

#[tokio::test]
async fn events_are_published_unless_dry_run() {
    let fake = FakeApi::new();
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "a", "namespace": "default"}})).unwrap();
    let cm = fake.seed(&cm).unwrap();

    let dry = EventPublisher::new(fake.client(), "demo", None, true);
    dry.publish(&event(), &cm.object_ref(&())).await.unwrap();
    assert!(
        fake.requests().iter().all(|r| !r.is_write()),
        "dry-run wrote: {:?}",
        fake.requests()
    );

    let real = EventPublisher::new(fake.client(), "demo", Some("pod-a".into()), false);
    real.publish(&event(), &cm.object_ref(&())).await.unwrap();
    let events: Vec<K8sEvent> = fake.list(Some("default")).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason.as_deref(), Some("Queued"));
    assert_eq!(events[0].reporting_controller.as_deref(), Some("demo"));
    assert_eq!(
        fake.requests()
            .iter()
            .filter(|r| r.is(Verb::Create, "events"))
            .count(),
        1
    );
}
