//! The committed manifests in `deploy/load-soothe-controller/` are exactly
//! what the declared RBAC rules generate. Regenerate with
//! `UPDATE_MANIFESTS=1 cargo test -p load-soothe-controller --test manifests`.

use std::path::PathBuf;

use load_soothe_controller::GateMode;
use load_soothe_controller::manifests::manifests_yaml;

fn path(mode: GateMode) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/load-soothe-controller")
        .join(format!("{}.yaml", mode.as_str()))
}

#[test]
fn committed_manifests_match_the_declared_rules() {
    for mode in [GateMode::Exact, GateMode::Optimistic] {
        let generated = manifests_yaml(mode).unwrap();
        let file = path(mode);
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
    let exact = manifests_yaml(GateMode::Exact).unwrap();
    let optimistic = manifests_yaml(GateMode::Optimistic).unwrap();
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
    let optimistic = manifests_yaml(GateMode::Optimistic).unwrap();
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

    let exact = manifests_yaml(GateMode::Exact).unwrap();
    assert!(exact.contains("kind: Deployment\n"), "{exact}");
    assert!(exact.contains("  replicas: 2\n"), "{exact}");
}

#[test]
fn configmap_reads_and_ledger_patches_are_restricted_by_name_only_create_is_not() {
    let exact = load_soothe_controller::manifests::manifest(GateMode::Exact).role_rules();
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
    let optimistic = load_soothe_controller::manifests::manifest(GateMode::Optimistic).role_rules();
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
