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
//! `--admission pod-gates` ([`POD_GATES_RULES`]) needs other rules, each
//! taken from a client call of `gates.rs`, `webhook.rs` and `lib.rs`:
//! - the four load kinds: list only (the gate loop lists them every pass,
//!   never watches, never writes a load);
//! - pods: list (the mover pods, every pass) and patch (the strategic merge
//!   patch that lifts a gate). No get, no watch;
//! - ConfigMaps by name: get the node-agent ConfigMap (every pass); exact
//!   mode gets and merge-patches the ledger, and creates it once
//!   (namespace-wide, as above);
//! - Secrets: get the webhook's TLS Secret by name; create it
//!   namespace-wide (made once, by the first replica, when it is absent:
//!   RBAC cannot restrict `create` by name). With a given Secret
//!   (`manifests --webhook-tls-secret NAME`, cert-manager's), only `get` on
//!   it by name, in a Role `load-soothe-controller-webhook-tls` of its own
//!   (the name is known at render time), and no `create`;
//! - the MutatingWebhookConfiguration `<service>-<namespace>` itself, as
//!   the controller writes it but without `caBundle`, and a ClusterRole
//!   `load-soothe-controller-webhook` with `mutatingwebhookconfigurations`
//!   patch, by name: the controller sets the `caBundle` (and the rest) with
//!   a forced server-side apply. An apply that finds no object creates it,
//!   and kube-apiserver authorizes that as `create` (seen on the real
//!   server, `tests/gate_real_server.rs`), which RBAC cannot restrict by
//!   name: a cluster-wide `create` on webhook configurations would let the
//!   controller register a webhook for any object in the cluster. So the
//!   manifests create the configuration, and the controller only patches
//!   it. No `get`: the apply needs none;
//! - no Events: the gate loop publishes none;
//! - a Service in front of the webhook (`--webhook-service`'s default,
//!   port 443 to the container port `webhook`, 9443).
//!
//! Workloads: exact mode is a 2-replica Deployment (the ledger keeps the
//! limit exact for any number of replicas); optimistic mode is a DaemonSet,
//! one instance per node, whose identity (`--node`, env `NODE_NAME`) is the
//! node's name from the downward API (`spec.nodeName`).

use controller_manifests::{ControllerManifest, RbacVerb::*, Rule, Scope, Workload};

use controller_manifests::{ControllerService, RenderedRole, ServedPort};

use crate::config::{
    Admission, CONTROLLER_NAME, DEFAULT_NODE_AGENT_CONFIG_MAP, DEFAULT_WEBHOOK_PORT,
    DEFAULT_WEBHOOK_TLS_SECRET, GateMode, WEBHOOK_SERVICE_PORT, webhook_configuration_name,
};
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

/// Rules of `--admission pod-gates` (both modes; see the module docs).
pub const POD_GATES_RULES: &[Rule] = &[
    Rule::new(
        "velero.io",
        &[
            "datauploads",
            "datadownloads",
            "podvolumebackups",
            "podvolumerestores",
        ],
        &[List],
    ),
    Rule::new("", &["pods"], &[List, Patch]),
    Rule::new("", &["configmaps"], &[Get]).named(&[DEFAULT_NODE_AGENT_CONFIG_MAP]),
];

/// The TLS Secret rules of `pod-gates` when the controller makes its own
/// Secret (no `--webhook-tls-secret`): get it by name, and create it
/// (`create` cannot be restricted by name; used once, by the first
/// replica).
pub const POD_GATES_OWN_SECRET_RULES: &[Rule] = &[
    Rule::new("", &["secrets"], &[Get]).named(&[DEFAULT_WEBHOOK_TLS_SECRET]),
    Rule::new("", &["secrets"], &[Create]),
];

/// The rules of the Role `load-soothe-controller-webhook-tls` when
/// `--webhook-tls-secret` names an existing Secret (cert-manager's): get
/// it, restricted at render time to its name; nothing is created.
pub const GIVEN_SECRET_RULES: &[Rule] = &[Rule::new("", &["secrets"], &[Get])];

/// Extra rules of exact mode with `pod-gates`: the ledger, read with a GET
/// and merge-patched by name, created once (namespace-wide).
pub const POD_GATES_EXACT_RULES: &[Rule] = &[
    Rule::new("", &["configmaps"], &[Get, Patch]).named(&[DEFAULT_LEDGER_NAME]),
    Rule::new("", &["configmaps"], &[Create]),
];

/// The ClusterRole rules of `pod-gates`, restricted at render time to the
/// MutatingWebhookConfiguration `<service>-<namespace>` (see the module
/// docs for why `patch` suffices).
pub const WEBHOOK_CONFIGURATION_RULES: &[Rule] = &[Rule::new(
    "admissionregistration.k8s.io",
    &["mutatingwebhookconfigurations"],
    &[Patch],
)];

/// The name of the webhook's port, in the container and the Service.
pub const WEBHOOK_PORT_NAME: &str = "webhook";

/// Default image in the generated manifests.
pub const IMAGE: &str = "ghcr.io/placement-policies/load-soothe-controller:0.1.0";

/// The placeholder data mover of the committed manifests.
pub const PLACEHOLDER_DATAMOVER: &str = "CHANGE-ME";

/// The manifest description for a mode: Velero's namespace, a namespaced
/// Role, no leader election; exact mode runs a 2-replica Deployment,
/// optimistic mode a DaemonSet (one instance per node; its limit is per
/// instance). The data mover name is a placeholder to edit.
pub fn manifest(mode: GateMode, admission: Admission) -> ControllerManifest {
    manifest_for(
        mode,
        admission,
        "velero",
        IMAGE,
        &[PLACEHOLDER_DATAMOVER],
        None,
    )
}

/// [`manifest`] in `namespace` with `image`, admitting `datamovers`;
/// `pod-gates` with `tls_secret`: the workload serves the webhook with that
/// existing Secret (`--webhook-tls-secret`), and may only read it.
pub fn manifest_for(
    mode: GateMode,
    admission: Admission,
    namespace: &str,
    image: &str,
    datamovers: &[&str],
    tls_secret: Option<&str>,
) -> ControllerManifest {
    let mut rules = match (admission, mode) {
        (Admission::Accept, GateMode::Exact) => [RULES, EXACT_RULES].concat(),
        (Admission::Accept, GateMode::Optimistic) => RULES.to_vec(),
        (Admission::PodGates, GateMode::Exact) => [POD_GATES_RULES, POD_GATES_EXACT_RULES].concat(),
        (Admission::PodGates, GateMode::Optimistic) => POD_GATES_RULES.to_vec(),
    };
    if admission == Admission::PodGates && tls_secret.is_none() {
        rules.extend_from_slice(POD_GATES_OWN_SECRET_RULES);
    }
    let mut m = ControllerManifest::new(CONTROLLER_NAME, namespace, image, &rules);
    m.scope = Scope::Namespaced;
    m.leader_election = false;
    if admission == Admission::PodGates {
        m.events = false;
        m.rendered_roles = vec![RenderedRole {
            suffix: "webhook".into(),
            scope: Scope::Cluster,
            rules: WEBHOOK_CONFIGURATION_RULES.to_vec(),
            resource_names: vec![webhook_configuration_name(CONTROLLER_NAME, namespace)],
        }];
        if let Some(secret) = tls_secret {
            m.rendered_roles.push(RenderedRole {
                suffix: "webhook-tls".into(),
                scope: Scope::Namespaced,
                rules: GIVEN_SECRET_RULES.to_vec(),
                resource_names: vec![secret.to_owned()],
            });
        }
        // The Service's name is `--webhook-service`'s default.
        m.service = Some(ControllerService {
            name: CONTROLLER_NAME.to_owned(),
            ports: vec![ServedPort {
                name: WEBHOOK_PORT_NAME.to_owned(),
                container_port: DEFAULT_WEBHOOK_PORT,
                service_port: WEBHOOK_SERVICE_PORT,
            }],
        });
    }
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
    // The admission is always spelled out, so a manifest means the same
    // whatever the binary's default.
    m.args = vec![
        format!("--mode={}", mode.as_str()),
        format!("--admission={}", admission.as_str()),
    ];
    if let (Admission::PodGates, Some(secret)) = (admission, tls_secret) {
        m.args.push(format!("--webhook-tls-secret={secret}"));
    }
    m.args
        .extend(datamovers.iter().map(|d| format!("--datamover={d}")));
    m.args.push(format!("--namespace={namespace}"));
    m.args.push(node.to_owned());
    m
}

/// What `load-soothe-controller manifests` prints: the manifests of
/// `mode` and `admission` in `namespace` with `image` for `datamovers`,
/// serving the webhook with the existing Secret `tls_secret` if given.
/// Refuses a `tls_secret` that is not a Secret name or comes without
/// `pod-gates`, an invalid
/// namespace or image, the data movers [`crate::cli::Cli::to_config`]
/// refuses, and no data mover at all (a workload that would admit
/// `--datamover=CHANGE-ME` admits nothing), naming the flag.
pub fn render(
    mode: GateMode,
    admission: Admission,
    namespace: &str,
    image: &str,
    datamovers: &[String],
    tls_secret: Option<&str>,
) -> Result<String, controller_manifests::Error> {
    if let Some(secret) = tls_secret {
        let problems = kube_validation::validate_dns1123_subdomain(secret);
        let problem = if admission != Admission::PodGates {
            Some(
                "only the pod-gates workload serves a webhook: add --admission pod-gates"
                    .to_owned(),
            )
        } else if problems.is_empty() {
            None
        } else {
            Some(format!("not a Secret name: {}", problems.join("; ")))
        };
        if let Some(problem) = problem {
            return Err(controller_manifests::Error::InvalidInput {
                flag: "--webhook-tls-secret",
                value: secret.to_owned(),
                problem,
            });
        }
    }
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
        manifest_for(
            mode,
            admission,
            namespace,
            image,
            &[PLACEHOLDER_DATAMOVER],
            tls_secret,
        )
        .to_yaml()?;
        return Err(controller_manifests::Error::InvalidInput {
            flag: "--datamover",
            value: String::new(),
            problem: "a data mover is required: give the spec.datamover of the loads the workload admits, as in --datamover acme.example/mover (repeatable)".to_owned(),
        });
    }
    let names: Vec<&str> = datamovers.iter().map(String::as_str).collect();
    to_yaml(
        &manifest_for(mode, admission, namespace, image, &names, tls_secret),
        admission,
    )
}

/// The manifests of `manifest` as multi-document YAML, with `pod-gates`'
/// MutatingWebhookConfiguration last.
fn to_yaml(
    manifest: &ControllerManifest,
    admission: Admission,
) -> Result<String, controller_manifests::Error> {
    let mut yaml = manifest.to_yaml()?;
    if admission == Admission::PodGates {
        yaml.push_str("---\n");
        yaml.push_str(&webhook_configuration_yaml(&manifest.namespace)?);
    }
    Ok(yaml)
}

/// The MutatingWebhookConfiguration of the `pod-gates` workload in
/// `namespace`, as the controller writes it but without `caBundle` (the
/// controller sets it at start).
pub fn webhook_configuration_yaml(namespace: &str) -> Result<String, controller_manifests::Error> {
    let configuration = crate::webhook::configuration(
        &webhook_configuration_name(CONTROLLER_NAME, namespace),
        namespace,
        &crate::webhook::WebhookEndpoint::Service {
            namespace: namespace.to_owned(),
            name: CONTROLLER_NAME.to_owned(),
            port: i32::from(WEBHOOK_SERVICE_PORT),
        },
        None,
    );
    serde_saphyr::to_string(&configuration)
        .map_err(|e| controller_manifests::Error::Yaml(e.to_string()))
}

/// The manifests of a mode and admission as multi-document YAML.
pub fn manifests_yaml(
    mode: GateMode,
    admission: Admission,
) -> Result<String, controller_manifests::Error> {
    let header = format!(
        "# Generated by `UPDATE_MANIFESTS=1 cargo test -p load-soothe-controller --test manifests`\n# from bins/load-soothe-controller/src/manifests.rs; do not edit. Mode: {}. Admission: {}.\n",
        mode.as_str(),
        admission.as_str()
    );
    Ok(header + &to_yaml(&manifest(mode, admission), admission)?)
}

/// The file under `deploy/load-soothe-controller/` holding the manifests
/// of `mode` and `admission`: `<mode>.yaml` for the default `pod-gates`,
/// `accept-<mode>.yaml` for `accept`.
pub fn deploy_file_name(mode: GateMode, admission: Admission) -> String {
    match admission {
        Admission::PodGates => format!("{}.yaml", mode.as_str()),
        Admission::Accept => format!("accept-{}.yaml", mode.as_str()),
    }
}
