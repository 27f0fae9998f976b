//! The committed manifests under `deploy/backup-queue-controller/` are the
//! generator's output (regenerate with `UPDATE_MANIFESTS=1 cargo test -p
//! backup-queue-controller --test manifests_and_cli`), and the CLI's help is
//! stable.

use std::path::PathBuf;

use backup_queue_controller::cli::Cli;
use backup_queue_controller::manifests::{DEFAULT_IMAGE, ManifestScope, render};
use backup_queue_controller::{Config, StatusSubresource};
use clap::{CommandFactory, Parser};

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/backup-queue-controller")
}

#[test]
fn committed_manifests_match_the_generator() {
    for scope in [ManifestScope::Namespaced, ManifestScope::Cluster] {
        let generated = render(scope, "velero", DEFAULT_IMAGE).unwrap();
        let path = deploy_dir().join(scope.file_name());
        if std::env::var_os("UPDATE_MANIFESTS").is_some() {
            std::fs::create_dir_all(deploy_dir()).unwrap();
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        assert!(
            committed == generated,
            "{} is out of date; regenerate with UPDATE_MANIFESTS=1 cargo test -p backup-queue-controller --test manifests_and_cli",
            path.display()
        );
    }
}

#[test]
fn namespaced_variant_grants_backups_only_in_the_velero_namespace() {
    let yaml = render(ManifestScope::Namespaced, "velero", DEFAULT_IMAGE).unwrap();
    let docs: Vec<serde_json::Value> = yaml
        .split("---\n")
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "Role",
            "RoleBinding",
            "ClusterRole",
            "ClusterRoleBinding",
            "Deployment"
        ]
    );
    // The only cluster-wide permissions: list/watch Namespaces, get the Backup CRD.
    let cluster_role = &docs[5];
    assert_eq!(
        cluster_role["rules"],
        serde_json::json!([
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list", "watch"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get"], "resourceNames": ["backups.velero.io"]}
        ])
    );
    // No create/update/delete on Backups anywhere.
    for d in &docs {
        for rule in d["rules"].as_array().into_iter().flatten() {
            if rule["apiGroups"][0] == "velero.io" {
                let verbs: Vec<&str> = rule["verbs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                assert!(
                    verbs
                        .iter()
                        .all(|v| ["get", "list", "watch", "patch"].contains(v))
                );
            }
        }
    }
}

#[test]
fn cli_is_consistent_and_its_help_is_stable() {
    Cli::command().debug_assert();
    let help = Cli::command().render_long_help().to_string();
    insta::assert_snapshot!(help);
}

#[test]
fn arguments_resolve_to_a_config() {
    let cli = Cli::try_parse_from([
        "backup-queue-controller",
        "--namespace=backups",
        "--concurrent-backups=3",
        "--status-subresource=disabled",
        "--leader-elect",
        "--dry-run",
    ])
    .unwrap();
    let config = Config::from_args(&cli.run, Some("ops"), "host-1").unwrap();
    assert_eq!(config.namespace, "backups");
    assert_eq!(config.concurrent_backups, 3);
    assert_eq!(config.status_subresource, StatusSubresource::Disabled);
    assert!(config.dry_run);
    let leader = config.leader.unwrap();
    assert_eq!(leader.lease_name, "backup-queue-controller");
    assert_eq!(leader.lease_namespace, "ops");
    assert_eq!(leader.identity, "host-1");

    let cli = Cli::try_parse_from(["backup-queue-controller"]).unwrap();
    let config = Config::from_args(&cli.run, None, "h").unwrap();
    assert_eq!(config.namespace, "velero");
    assert_eq!(config.concurrent_backups, 1);
    assert_eq!(config.leader, None);

    let err = Cli::try_parse_from(["backup-queue-controller", "--status-subresource=maybe"])
        .unwrap_err()
        .to_string();
    insta::assert_snapshot!(err);
}
