//! The committed manifests under `deploy/host-label-controller/` are the
//! generator's output (regenerate with `UPDATE_MANIFESTS=1 cargo test -p
//! host-label-controller --test manifests_and_cli`), RBAC is least
//! privilege, and the CLI parses and documents its flags.

use std::path::PathBuf;

use clap::{CommandFactory, Parser};
use host_label_controller::cli::{Cli, Command};
use host_label_controller::config::{Config, DEFAULT_NAMESPACE};
use host_label_controller::manifests::{DEFAULT_IMAGE, render};
use host_label_controller::{HostSource, ObjectName};
use serde_json::{Value, json};

fn deploy_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/host-label-controller/host-label-controller.yaml")
}

#[test]
fn committed_manifests_match_the_generator() {
    let generated = render(DEFAULT_NAMESPACE, DEFAULT_IMAGE).unwrap();
    let path = deploy_file();
    if std::env::var_os("UPDATE_MANIFESTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert!(
        committed == generated,
        "{} is out of date; regenerate with UPDATE_MANIFESTS=1 cargo test -p host-label-controller --test manifests_and_cli",
        path.display()
    );
}

fn docs() -> Vec<Value> {
    render("infra", "img")
        .unwrap()
        .split("---\n")
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect()
}

#[test]
fn rbac_is_least_privilege() {
    let docs = docs();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Role",
            "RoleBinding",
            "Deployment"
        ]
    );
    // Cluster-wide: watch Nodes/Pods/Machines, patch Nodes (get: re-read
    // after a 409), Events.
    assert_eq!(
        docs[1]["rules"],
        json!([
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
            {"apiGroups": ["cluster.x-k8s.io"], "resources": ["machines"], "verbs": ["list", "watch"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
        ])
    );
    // Leases and ConfigMaps only in the controller's namespace.
    assert_eq!(docs[3]["metadata"]["namespace"], "infra");
    assert_eq!(docs[3]["rules"][0]["resources"], json!(["leases"]));
    assert_eq!(docs[5]["metadata"]["namespace"], "infra");
    assert_eq!(
        docs[5]["rules"],
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "patch"]}])
    );
    // Nowhere update or delete.
    for d in &docs {
        for rule in d["rules"].as_array().into_iter().flatten() {
            for verb in rule["verbs"].as_array().unwrap() {
                assert!(
                    !["update", "delete", "deletecollection"].contains(&verb.as_str().unwrap()),
                    "{rule}"
                );
            }
        }
    }
    let args = &docs[7]["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(args.as_array().unwrap().contains(&json!(
        "--status-configmap=infra/host-label-controller-status"
    )));
}

#[test]
fn cli_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn help_output_is_stable() {
    let help = Cli::command()
        .term_width(100)
        .render_long_help()
        .to_string();
    insta::assert_snapshot!(help);
}

fn parse(args: &[&str]) -> Cli {
    Cli::try_parse_from(std::iter::once("host-label-controller").chain(args.iter().copied()))
        .unwrap()
}

#[test]
fn flags_resolve_to_a_config() {
    let cli = parse(&[
        "--label-key",
        "node.cluster.x-k8s.io/esxi-host",
        "--label-key",
        "node-restriction.kubernetes.io/esxi-host",
        "--inventory-configmap",
        "hosts",
        "--status-configmap",
        "other/status",
        "-n",
        "infra",
        "--dry-run",
    ]);
    let config = Config::from_args(&cli.run, Some("ignored"), "pod-1").unwrap();
    let keys: Vec<&str> = config.labels.keys().iter().map(|k| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "node.cluster.x-k8s.io/esxi-host",
            "node-restriction.kubernetes.io/esxi-host"
        ]
    );
    assert!(config.labels.keys()[1].is_kubelet_protected());
    assert_eq!(
        config.source,
        HostSource::Inventory {
            configmap: ObjectName {
                namespace: "infra".into(),
                name: "hosts".into()
            },
            key: "inventory.yaml".into()
        }
    );
    assert_eq!(config.status_configmap.to_string(), "other/status");
    assert!(config.dry_run);
    assert!(config.leader.is_none());

    // Defaults: Machines, the CAPV key, the status ConfigMap in POD_NAMESPACE.
    let config = Config::from_args(&parse(&[]).run, Some("pods-ns"), "pod-1").unwrap();
    assert_eq!(config.source, HostSource::Machines);
    assert_eq!(
        config.labels.keys()[0].as_str(),
        "node.cluster.x-k8s.io/esxi-host"
    );
    assert_eq!(
        config.status_configmap.to_string(),
        "pods-ns/host-label-controller-status"
    );
}

#[test]
fn invalid_flags_are_explained() {
    let err = |args: &[&str]| {
        Config::from_args(&parse(args).run, None, "p")
            .unwrap_err()
            .to_string()
    };
    let bad_key = err(&["--label-key", "bad key/"]);
    assert!(
        bad_key.starts_with(r#"--label-key: "bad key/" is not a valid label key: "#),
        "{bad_key}"
    );
    insta::assert_snapshot!(err(&["--inventory-configmap", "a/b/c"]), @r#"--inventory-configmap: "a/b/c" is invalid: expected NAMESPACE/NAME or NAME with a non-empty namespace and name"#);
    insta::assert_snapshot!(err(&["--label-key", ""]), @r#"--label-key: "" is invalid: at least one label key is required"#);
}

#[test]
fn manifests_subcommand_parses() {
    let cli = parse(&["manifests", "--namespace", "x"]);
    assert!(matches!(cli.command, Some(Command::Manifests(m)) if m.namespace == "x"));
}

#[test]
fn machine_label_sync_and_module_audit_flags() {
    let cli = parse(&[
        "--sync-machine-labels",
        "--additional-sync-machine-labels",
        "^example\\.com/",
        "--additional-sync-machine-labels",
        "team{1,2}",
        "--audit-cluster-modules",
    ]);
    let config = Config::from_args(&cli.run, None, "p").unwrap();
    let sync = config.machine_sync.as_ref().expect("sync enabled");
    assert_eq!(
        sync.patterns().collect::<Vec<_>>(),
        ["^example\\.com/", "team{1,2}"]
    );
    assert!(sync.is_managed("example.com/x") && sync.is_managed("node-role.kubernetes.io/x"));
    assert!(config.audit_cluster_modules);
    assert!(config.watches_machines());
    // Off by default.
    let config = Config::from_args(&parse(&[]).run, None, "p").unwrap();
    assert!(config.machine_sync.is_none() && !config.audit_cluster_modules);
    // An additional expression needs the sync; an invalid one is explained.
    assert!(
        Cli::try_parse_from([
            "host-label-controller",
            "--additional-sync-machine-labels",
            "x"
        ])
        .is_err()
    );
    let error = Config::from_args(
        &parse(&[
            "--sync-machine-labels",
            "--additional-sync-machine-labels",
            "(unclosed",
        ])
        .run,
        None,
        "p",
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with(r#"--additional-sync-machine-labels: "(unclosed" is invalid: at least one of --additional-sync-machine-labels regexes is invalid: "(unclosed": "#),
        "{error}"
    );
}

#[test]
fn the_module_audit_adds_read_only_access_to_the_cluster_api_kinds() {
    use host_label_controller::manifests::{Features, render_with};
    let docs: Vec<Value> = render_with(
        "infra",
        "img",
        Features {
            sync_machine_labels: true,
            audit_cluster_modules: true,
            all_clusters: false,
        },
    )
    .unwrap()
    .split("---\n")
    .map(|d| serde_saphyr::from_str(d).unwrap())
    .collect();
    assert_eq!(
        docs[1]["rules"],
        json!([
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
            {"apiGroups": ["cluster.x-k8s.io"], "resources": ["clusters", "machinedeployments", "machines", "machinesets"], "verbs": ["list", "watch"]},
            {"apiGroups": ["controlplane.cluster.x-k8s.io"], "resources": ["kubeadmcontrolplanes"], "verbs": ["list", "watch"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
            {"apiGroups": ["infrastructure.cluster.x-k8s.io"], "resources": ["vsphereclusters", "vspheremachinetemplates", "vspherevms"], "verbs": ["list", "watch"]},
        ])
    );
    let args = docs[7]["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .clone();
    assert!(args.contains(&json!("--sync-machine-labels")));
    assert!(args.contains(&json!("--audit-cluster-modules")));
}

/// `--all-clusters` runs in the management cluster, where it only watches
/// Clusters and Machines, reads kubeconfig Secrets and writes its status
/// ConfigMap (one entry per workload cluster) in its own namespace: Nodes,
/// Pods and Events are all reached through the workload clusters' own
/// credentials, so the management identity gets none of them.
#[test]
fn all_clusters_manifests_grant_the_management_identity_only_clusters_machines_secrets_and_its_status()
 {
    use host_label_controller::manifests::{Features, render_with};
    let docs: Vec<Value> = render_with(
        "infra",
        "img",
        Features {
            all_clusters: true,
            ..Features::default()
        },
    )
    .unwrap()
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
            "Role",
            "RoleBinding",
            "Deployment"
        ],
        "leader election's Role and the status ConfigMap's"
    );
    assert_eq!(
        docs[1]["rules"],
        json!([
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
            {"apiGroups": ["cluster.x-k8s.io"], "resources": ["clusters", "machines"], "verbs": ["list", "watch"]},
        ])
    );
    assert_eq!(docs[3]["rules"][0]["resources"], json!(["leases"]));
    assert_eq!(
        docs[5]["rules"],
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "patch"]}]),
        "the status ConfigMap, in the controller's own namespace, nothing to read"
    );
    assert_eq!(docs[5]["metadata"]["namespace"], "infra");
    let args = docs[7]["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .clone();
    assert!(args.contains(&json!("--all-clusters")));
}
