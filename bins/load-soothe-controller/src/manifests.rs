//! Least-privilege RBAC, declared once, and the manifests generated from it
//! (`deploy/load-soothe-controller/`, kept in sync by a test).
//!
//! - the four load kinds: get, list, watch; patch only on DataUploads and
//!   DataDownloads (the only kinds this controller accepts; PodVolumeBackups
//!   and PodVolumeRestores are only counted);
//! - ConfigMaps, Velero's namespace only (a Role, not a ClusterRole), by
//!   name where Kubernetes allows it. The controller reads each ConfigMap
//!   with a single-object watch (`metadata.name=<name>` field selector, see
//!   `index.rs`) and exact mode re-reads the ledger with a GET, so
//!   get/list/watch are restricted to the node-agent ConfigMap and (exact
//!   mode) the ledger. Exact mode writes the ledger with a merge patch
//!   (patch, restricted to the ledger; no update) and creates it once;
//!   `create` cannot be restricted by name in Kubernetes RBAC, so it is a
//!   separate, namespace-wide rule. The names are the flag defaults: if
//!   `--node-agent-configmap` or `--ledger-configmap` is changed, change
//!   `resourceNames` too;
//! - Events (`events.k8s.io`): create, patch (added by controller-kit).
//!
//! No Lease: every replica acts (exact mode needs no leader).
//!
//! Workloads: exact mode is a 2-replica Deployment (the ledger keeps the
//! limit exact for any number of replicas); optimistic mode is a DaemonSet,
//! one instance per node, whose identity (`--node`, env `NODE_NAME`) is the
//! node's name from the downward API (`spec.nodeName`).

use controller_manifests::{ControllerManifest, RbacVerb::*, Rule, Scope, Workload};

use crate::config::{CONTROLLER_NAME, DEFAULT_NODE_AGENT_CONFIG_MAP, GateMode};
use load_soothe::DEFAULT_LEDGER_NAME;

/// Rules of both modes.
pub const RULES: &[Rule] = &[
    Rule::new(
        "velero.io",
        &[
            "datauploads",
            "datadownloads",
            "podvolumebackups",
            "podvolumerestores",
        ],
        &[Get, List, Watch],
    ),
    Rule::new("velero.io", &["datauploads", "datadownloads"], &[Patch]),
    // Single-object watch (field selector `metadata.name`): list/watch by name suffice.
    Rule::new("", &["configmaps"], &[Get, List, Watch]).named(&[DEFAULT_NODE_AGENT_CONFIG_MAP]),
];

/// Extra rules of exact mode (the ledger ConfigMap): read (single-object
/// watch and GET) and merge-patch it by name; `create` cannot be restricted
/// by name in Kubernetes RBAC, so it stays namespace-wide (used once, when
/// the ledger does not exist yet).
pub const EXACT_RULES: &[Rule] = &[
    Rule::new("", &["configmaps"], &[Get, List, Watch, Patch]).named(&[DEFAULT_LEDGER_NAME]),
    Rule::new("", &["configmaps"], &[Create]),
];

/// Default image in the generated manifests.
pub const IMAGE: &str = "ghcr.io/placement-policies/load-soothe-controller:0.1.0";

/// The placeholder data mover of the committed manifests.
pub const PLACEHOLDER_DATAMOVER: &str = "CHANGE-ME";

/// The manifest description for a mode: Velero's namespace, a namespaced
/// Role, no leader election; exact mode runs a 2-replica Deployment,
/// optimistic mode a DaemonSet (one instance per node; its limit is per
/// instance). The data mover name is a placeholder to edit.
pub fn manifest(mode: GateMode) -> ControllerManifest {
    manifest_for(mode, "velero", IMAGE, &[PLACEHOLDER_DATAMOVER])
}

/// [`manifest`] in `namespace` with `image`, admitting `datamovers`.
pub fn manifest_for(
    mode: GateMode,
    namespace: &str,
    image: &str,
    datamovers: &[&str],
) -> ControllerManifest {
    let mut rules = RULES.to_vec();
    if mode == GateMode::Exact {
        rules.extend_from_slice(EXACT_RULES);
    }
    let mut m = ControllerManifest::new(CONTROLLER_NAME, namespace, image, &rules);
    m.scope = Scope::Namespaced;
    m.leader_election = false;
    let node = match mode {
        GateMode::Exact => {
            m.workload = Workload::Deployment;
            m.replicas = 2;
            "--node=$(POD_NAME)"
        }
        GateMode::Optimistic => {
            // controller-kit sets NODE_NAME from spec.nodeName in DaemonSets.
            m.workload = Workload::DaemonSet;
            "--node=$(NODE_NAME)"
        }
    };
    m.args = vec![format!("--mode={}", mode.as_str())];
    m.args
        .extend(datamovers.iter().map(|d| format!("--datamover={d}")));
    m.args.push(format!("--namespace={namespace}"));
    m.args.push(node.to_owned());
    m
}

/// What `load-soothe-controller manifests` prints: the manifests of
/// `mode` in `namespace` with `image` for `datamovers`. Refuses an invalid
/// namespace or image, the data movers [`crate::cli::Cli::to_config`]
/// refuses, and no data mover at all (a workload that would admit
/// `--datamover=CHANGE-ME` admits nothing), naming the flag.
pub fn render(
    mode: GateMode,
    namespace: &str,
    image: &str,
    datamovers: &[String],
) -> Result<String, controller_manifests::Error> {
    if let Some(reason) = datamovers
        .iter()
        .find_map(|d| crate::config::refused_datamover(d))
    {
        return Err(controller_manifests::Error::InvalidInput {
            flag: "--datamover",
            value: datamovers.join(","),
            problem: reason,
        });
    }
    if datamovers.is_empty() {
        // The namespace and image are checked first, so that every
        // problem of the command line is named in turn.
        manifest_for(mode, namespace, image, &[PLACEHOLDER_DATAMOVER]).to_yaml()?;
        return Err(controller_manifests::Error::InvalidInput {
            flag: "--datamover",
            value: String::new(),
            problem: "a data mover is required: give the spec.datamover of the loads the workload admits, as in --datamover acme.example/mover (repeatable)".to_owned(),
        });
    }
    let names: Vec<&str> = datamovers.iter().map(String::as_str).collect();
    manifest_for(mode, namespace, image, &names).to_yaml()
}

/// The manifests of a mode as multi-document YAML.
pub fn manifests_yaml(mode: GateMode) -> Result<String, controller_manifests::Error> {
    let header = format!(
        "# Generated by `UPDATE_MANIFESTS=1 cargo test -p load-soothe-controller --test manifests`\n# from bins/load-soothe-controller/src/manifests.rs; do not edit. Mode: {}.\n",
        mode.as_str()
    );
    Ok(header + &manifest(mode).to_yaml()?)
}
