//! The Events wrapper (dry-run writes nothing) and generated RBAC manifests.

use controller_kit::events::EventPublisher;
use controller_kit::rbac::{ControllerManifest, RbacVerb::*, Rule, Scope, Workload};
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

const RULES: &[Rule] = &[
    Rule::new("velero.io", &["backups"], &[Get, List, Watch, Patch]),
    Rule::new("", &["namespaces"], &[Get, List, Watch]),
];

#[test]
fn cluster_scoped_manifests() {
    let m = ControllerManifest::new(
        "demo-controller",
        "velero",
        "example.invalid/demo:0.1.0",
        RULES,
    );
    insta::assert_snapshot!(m.to_yaml().unwrap());
}

#[test]
fn namespaced_manifests_without_leader_election() {
    let mut m = ControllerManifest::new(
        "demo-controller",
        "velero",
        "example.invalid/demo:0.1.0",
        RULES,
    );
    m.scope = Scope::Namespaced;
    m.leader_election = false;
    m.replicas = 1;
    m.args = vec!["--namespace=velero".into()];
    insta::assert_snapshot!(m.to_yaml().unwrap());
}

#[test]
fn manifests_are_deterministic_and_parse_back() {
    let m = ControllerManifest::new("demo-controller", "velero", "img", RULES);
    let y = m.to_yaml().unwrap();
    assert_eq!(y, m.to_yaml().unwrap());
    let reversed: Vec<Rule> = RULES.iter().rev().copied().collect();
    assert_eq!(
        y,
        ControllerManifest::new("demo-controller", "velero", "img", &reversed)
            .to_yaml()
            .unwrap()
    );
    let docs: Vec<serde_json::Value> = y
        .split("---\n")
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Deployment"
        ]
    );
}

#[test]
fn daemon_set_with_name_restricted_rules() {
    const NAMED: &[Rule] = &[
        Rule::new("", &["configmaps"], &[Get, List, Watch, Patch]).named(&["demo-state"]),
        Rule::new("", &["configmaps"], &[Create]),
    ];
    let mut m = ControllerManifest::new(
        "demo-controller",
        "velero",
        "example.invalid/demo:0.1.0",
        NAMED,
    );
    m.scope = Scope::Namespaced;
    m.leader_election = false;
    m.workload = Workload::DaemonSet;
    m.args = vec!["--node=$(NODE_NAME)".into()];
    let yaml = m.to_yaml().unwrap();
    assert!(yaml.contains("kind: DaemonSet\n"), "{yaml}");
    assert!(!yaml.contains("kind: Deployment"), "{yaml}");
    assert!(!yaml.contains("replicas:"), "{yaml}");
    insta::assert_snapshot!(yaml);
}
