//! The committed manifests in `deploy/load-soothe-controller/` are exactly
//! what the declared RBAC rules generate. Regenerate with
//! `UPDATE_MANIFESTS=1 cargo test -p load-soothe-controller --test manifests`.

use std::path::PathBuf;

use load_soothe_controller::manifests::{deploy_file_name, manifests_yaml};
use load_soothe_controller::{Admission, GateMode};

const ALL: [(GateMode, Admission); 4] = [
    (GateMode::Exact, Admission::Accept),
    (GateMode::Optimistic, Admission::Accept),
    (GateMode::Exact, Admission::PodGates),
    (GateMode::Optimistic, Admission::PodGates),
];

fn path(mode: GateMode, admission: Admission) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/load-soothe-controller")
        .join(deploy_file_name(mode, admission))
}

#[test]
fn committed_manifests_match_the_declared_rules() {
    for (mode, admission) in ALL {
        let generated = manifests_yaml(mode, admission).unwrap();
        let file = path(mode, admission);
        if std::env::var_os("UPDATE_MANIFESTS").is_some() {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            committed == generated,
            "{} is out of date: run `UPDATE_MANIFESTS=1 cargo test -p load-soothe-controller --test manifests` and commit it",
            file.display()
        );
    }
}

#[test]
fn least_privilege_only_exact_mode_writes_configmaps_and_no_mode_patches_pod_volume_loads() {
    let exact = manifests_yaml(GateMode::Exact, Admission::Accept).unwrap();
    let optimistic = manifests_yaml(GateMode::Optimistic, Admission::Accept).unwrap();
    insta::assert_snapshot!("exact_role", role_section(&exact));
    insta::assert_snapshot!("optimistic_role", role_section(&optimistic));
    for yaml in [&exact, &optimistic] {
        assert!(!yaml.contains("kind: ClusterRole"), "{yaml}");
        assert!(!yaml.contains("delete"), "{yaml}");
        assert!(!yaml.contains("leases"), "{yaml}");
    }
}

#[test]
fn optimistic_mode_runs_one_instance_per_node_named_after_its_node() {
    let optimistic = manifests_yaml(GateMode::Optimistic, Admission::Accept).unwrap();
    assert!(optimistic.contains("kind: DaemonSet\n"), "{optimistic}");
    assert!(!optimistic.contains("kind: Deployment"), "{optimistic}");
    assert!(
        optimistic.contains(
            "- name: NODE_NAME\n          valueFrom:\n            fieldRef:\n              fieldPath: spec.nodeName\n"
        ),
        "{optimistic}"
    );
    assert!(
        optimistic.contains("- --node=$(NODE_NAME)\n"),
        "{optimistic}"
    );
    // `--node`'s environment variable is the one the DaemonSet sets.
    let cli = <load_soothe_controller::cli::Cli as clap::CommandFactory>::command();
    let node = cli
        .get_arguments()
        .find(|a| a.get_long() == Some("node"))
        .unwrap();
    assert_eq!(node.get_env(), Some(std::ffi::OsStr::new("NODE_NAME")));

    let exact = manifests_yaml(GateMode::Exact, Admission::Accept).unwrap();
    assert!(exact.contains("kind: Deployment\n"), "{exact}");
    assert!(exact.contains("  replicas: 2\n"), "{exact}");
}

#[test]
fn configmap_reads_and_ledger_patches_are_restricted_by_name_only_create_is_not() {
    let exact = load_soothe_controller::manifests::manifest(GateMode::Exact, Admission::Accept)
        .role_rules();
    let configmaps: Vec<_> = exact
        .iter()
        .filter(|r| r.resources.as_deref() == Some(&["configmaps".to_owned()][..]))
        .collect();
    for rule in &configmaps {
        let names = rule.resource_names.clone().unwrap_or_default();
        if rule.verbs.iter().any(|v| v == "create") {
            assert!(
                names.is_empty(),
                "create cannot be restricted by name: {rule:?}"
            );
            assert_eq!(rule.verbs, ["create"], "{rule:?}");
        } else {
            assert!(!names.is_empty(), "unrestricted ConfigMap access: {rule:?}");
            if rule.verbs.iter().any(|v| v == "patch" || v == "update") {
                assert_eq!(names, ["velero-prepare-queue-ledger"], "{rule:?}");
            }
        }
    }
    assert!(
        configmaps
            .iter()
            .any(|r| r.verbs.iter().any(|v| v == "create"))
    );
    let optimistic =
        load_soothe_controller::manifests::manifest(GateMode::Optimistic, Admission::Accept)
            .role_rules();
    for rule in optimistic
        .iter()
        .filter(|r| r.resources.as_deref() == Some(&["configmaps".to_owned()][..]))
    {
        assert_eq!(rule.verbs, ["get", "list", "watch"], "{rule:?}");
        assert_eq!(
            rule.resource_names.as_deref(),
            Some(&["node-agent-config".to_owned()][..])
        );
    }
}

fn role_section(yaml: &str) -> String {
    yaml.split("---\n")
        .find(|doc| doc.contains("kind: Role\n") || doc.starts_with("kind: Role"))
        .unwrap_or_default()
        .to_owned()
}

/// The pod-gates manifests: the Role as reviewed, the webhook's
/// ClusterRole, Service and container port, and the argument.
#[test]
fn pod_gates_manifests_add_the_webhook_and_only_what_the_gate_loop_calls() {
    for mode in [GateMode::Exact, GateMode::Optimistic] {
        let yaml = manifests_yaml(mode, Admission::PodGates).unwrap();
        insta::assert_snapshot!(
            format!("pod_gates_{}_role", mode.as_str()),
            role_section(&yaml)
        );
        let docs: Vec<serde_json::Value> = yaml
            .split("---\n")
            .map(|d| serde_saphyr::from_str(d).unwrap())
            .collect();
        let find = |kind: &str| {
            docs.iter()
                .find(|d| d["kind"] == kind)
                .unwrap_or_else(|| panic!("no {kind} in {yaml}"))
        };
        let cluster_role = find("ClusterRole");
        assert_eq!(
            cluster_role["metadata"]["name"],
            "load-soothe-controller-webhook"
        );
        assert_eq!(
            cluster_role["rules"],
            serde_json::json!([{
                "apiGroups": ["admissionregistration.k8s.io"],
                "resources": ["mutatingwebhookconfigurations"],
                "resourceNames": ["load-soothe-controller-velero"],
                "verbs": ["patch"],
            }])
        );
        assert_eq!(
            find("ClusterRoleBinding")["roleRef"]["name"],
            "load-soothe-controller-webhook"
        );
        let service = find("Service");
        assert_eq!(service["metadata"]["name"], "load-soothe-controller");
        assert_eq!(
            service["spec"]["ports"],
            serde_json::json!([{"name": "webhook", "port": 443, "protocol": "TCP", "targetPort": "webhook"}])
        );
        let workload = find(match mode {
            GateMode::Exact => "Deployment",
            GateMode::Optimistic => "DaemonSet",
        });
        assert_eq!(
            service["spec"]["selector"],
            workload["spec"]["template"]["metadata"]["labels"]
        );
        let container = &workload["spec"]["template"]["spec"]["containers"][0];
        assert!(
            container["ports"].as_array().unwrap().contains(
                &serde_json::json!({"name": "webhook", "containerPort": 9443, "protocol": "TCP"})
            ),
            "{container}"
        );
        assert!(
            container["args"]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!("--admission=pod-gates")),
            "{container}"
        );
        // The configuration the controller patches (it may not create
        // one): everything but the caBundle, which the controller sets.
        let configuration = find("MutatingWebhookConfiguration");
        assert_eq!(
            configuration["metadata"]["name"],
            "load-soothe-controller-velero"
        );
        let client_config = &configuration["webhooks"][0]["clientConfig"];
        assert_eq!(
            client_config["service"],
            serde_json::json!({"namespace": "velero", "name": "load-soothe-controller", "path": "/mutate", "port": 443})
        );
        assert!(client_config.get("caBundle").is_none(), "{configuration}");
        assert_eq!(configuration["webhooks"][0]["failurePolicy"], "Ignore");
        // The accept workload has none of it.
        let accept = manifests_yaml(mode, Admission::Accept).unwrap();
        for absent in ["kind: Service\n", "webhook", "secrets", "pods"] {
            assert!(!accept.contains(absent), "{absent} in {accept}");
        }
        assert!(accept.contains("--admission=accept"), "{accept}");
    }
}

/// Kubernetes never authorizes `create` by name: every `create` of the
/// pod-gates Role is in an unnamed rule of its own, and every other
/// Secret or ConfigMap rule names its objects.
#[test]
fn pod_gates_secrets_and_configmaps_are_named_except_create() {
    for mode in [GateMode::Exact, GateMode::Optimistic] {
        let rules =
            load_soothe_controller::manifests::manifest(mode, Admission::PodGates).role_rules();
        for rule in &rules {
            let resources = rule.resources.clone().unwrap_or_default();
            if !resources
                .iter()
                .any(|r| r == "secrets" || r == "configmaps")
            {
                continue;
            }
            let names = rule.resource_names.clone().unwrap_or_default();
            if rule.verbs.iter().any(|v| v == "create") {
                assert!(names.is_empty(), "{rule:?}");
                assert_eq!(rule.verbs, ["create"], "{rule:?}");
            } else {
                assert!(!names.is_empty(), "{rule:?}");
            }
        }
        let secrets_get = rules
            .iter()
            .find(|r| {
                r.resources.as_deref() == Some(&["secrets".to_owned()][..]) && r.verbs == ["get"]
            })
            .unwrap();
        assert_eq!(
            secrets_get.resource_names.as_deref(),
            Some(&["load-soothe-controller-webhook-tls".to_owned()][..])
        );
    }
}

/// `manifests --admission pod-gates --webhook-tls-secret NAME` (a
/// cert-manager Secret): the workload is told the Secret, a Role of its
/// own grants `get` on it by name, and no Secret may be created.
#[test]
fn a_given_tls_secret_is_read_by_name_and_never_created() {
    use load_soothe_controller::manifests::{IMAGE, render};
    let yaml = render(
        GateMode::Exact,
        Admission::PodGates,
        "velero",
        IMAGE,
        &["acme".to_owned()],
        Some("webhook-cert"),
    )
    .unwrap();
    let docs: Vec<serde_json::Value> = yaml
        .split("---\n")
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect();
    let named = |kind: &str, name: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name} in {yaml}"))
    };
    assert_eq!(
        named("Role", "load-soothe-controller-webhook-tls")["rules"],
        serde_json::json!([{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["webhook-cert"], "verbs": ["get"]}])
    );
    assert_eq!(
        named("RoleBinding", "load-soothe-controller-webhook-tls")["roleRef"]["name"],
        "load-soothe-controller-webhook-tls"
    );
    let main_role = named("Role", "load-soothe-controller");
    assert!(
        !main_role.to_string().contains("secrets"),
        "the main Role grants nothing on Secrets: {main_role}"
    );
    let args = &named("Deployment", "load-soothe-controller")["spec"]["template"]["spec"]["containers"]
        [0]["args"];
    assert!(
        args.as_array()
            .unwrap()
            .contains(&serde_json::json!("--webhook-tls-secret=webhook-cert")),
        "{args}"
    );

    let refused = |admission, secret: &str| {
        render(
            GateMode::Exact,
            admission,
            "velero",
            IMAGE,
            &["acme".to_owned()],
            Some(secret),
        )
        .unwrap_err()
        .to_string()
    };
    insta::assert_snapshot!(
        [
            refused(Admission::Accept, "webhook-cert"),
            refused(Admission::PodGates, "Webhook_Cert"),
        ]
        .join("\n")
    );
}
