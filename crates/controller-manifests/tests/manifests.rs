//! The generated manifests: deterministic, parseable, and as reviewed
//! (snapshots) for each scope and workload.

use controller_manifests::{ControllerManifest, RbacVerb::*, Rule, Scope, Workload};

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

#[test]
fn webhook_service_and_a_cluster_role_named_at_render_time() {
    use controller_manifests::{ControllerService, RenderedRole, ServedPort};
    const WEBHOOK: &[Rule] = &[Rule::new(
        "admissionregistration.k8s.io",
        &["mutatingwebhookconfigurations"],
        &[Patch],
    )
    .named(&["declared-name-is-replaced"])];
    let mut m = ControllerManifest::new(
        "demo-controller",
        "backup",
        "example.invalid/demo:0.1.0",
        RULES,
    );
    m.scope = Scope::Namespaced;
    m.leader_election = false;
    m.rendered_roles = vec![RenderedRole {
        suffix: "webhook".into(),
        scope: Scope::Cluster,
        rules: WEBHOOK.to_vec(),
        resource_names: vec!["demo-controller-backup".into()],
    }];
    m.service = Some(ControllerService {
        name: "demo-webhook".into(),
        ports: vec![ServedPort {
            name: "webhook".into(),
            container_port: 9443,
            service_port: 443,
        }],
    });
    let yaml = m.to_yaml().unwrap();
    let docs: Vec<serde_json::Value> = yaml
        .split("---\n")
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect();
    let kinds: Vec<(&str, &str)> = docs
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("ServiceAccount", "demo-controller"),
            ("Role", "demo-controller"),
            ("RoleBinding", "demo-controller"),
            ("ClusterRole", "demo-controller-webhook"),
            ("ClusterRoleBinding", "demo-controller-webhook"),
            ("Service", "demo-webhook"),
            ("Deployment", "demo-controller"),
        ]
    );
    // The Service selects exactly the pods of the workload, and forwards
    // to the container port of the same name.
    let service = &docs[5];
    let template_labels = &docs[6]["spec"]["template"]["metadata"]["labels"];
    assert_eq!(&service["spec"]["selector"], template_labels);
    let container = &docs[6]["spec"]["template"]["spec"]["containers"][0];
    assert!(
        container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "webhook" && p["containerPort"] == 9443),
        "{container}"
    );
    insta::assert_snapshot!(yaml);
}
