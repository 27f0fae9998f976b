//! The resolved configuration of one controller instance.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use kube_adapters::velero::GateScope;
use load_soothe::Mode;

/// The controller's name (field manager, ServiceAccount, Events reporter,
/// metric prefix).
pub const CONTROLLER_NAME: &str = "load-soothe-controller";

/// How the gate decides (a subset of [`load_soothe::Mode`]: Velero's own
/// behaviour is not offered, it is what this controller replaces).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GateMode {
    /// Each replica decides on its own watch view and remembers its own
    /// admissions; no API object besides the loads is written. Soft limit:
    /// `replicas × prepareQueueLength` at worst.
    Optimistic,
    /// Admission through the shared ledger ConfigMap, written with
    /// compare-and-swap: never more than `prepareQueueLength` in
    /// preparation, however many replicas run.
    Exact,
}

impl Admission {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            Admission::Accept => "accept",
            Admission::PodGates => "pod-gates",
        }
    }
}

impl GateMode {
    /// The `load-soothe` mode.
    pub fn mode(self) -> Mode {
        match self {
            GateMode::Optimistic => Mode::Optimistic,
            GateMode::Exact => Mode::Exact,
        }
    }

    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            GateMode::Optimistic => "optimistic",
            GateMode::Exact => "exact",
        }
    }
}

/// How loads are held back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Admission {
    /// Accept `New` loads on the data mover's behalf (phase `Accepted`, the
    /// expose label), first in first out. Breaks every mover built like
    /// Velero's, which exposes a load only in the reconcile that accepts it
    /// (L3.15): use only with a mover documented to expose loads accepted by
    /// someone else.
    Accept,
    /// The default. Let the mover accept its loads; a mutating admission
    /// webhook gates its pods (`spec.schedulingGates`) at creation and the
    /// controller lifts the gates first in first out while fewer than
    /// `prepareQueueLength` loads are in preparation (L3.16). Needs no
    /// cooperation from the mover.
    PodGates,
}

/// Everything [`crate::run`] needs besides the client and the shutdown token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Velero's namespace: the loads, the node-agent ConfigMap and the ledger
    /// live there.
    pub namespace: String,
    /// This instance's identity: written to `status.acceptedByNode` and to
    /// the ledger's `admittedBy`. Must differ between replicas.
    pub node: String,
    /// Data mover names (`spec.datamover`) whose loads this instance
    /// accepts. `velero` also matches an absent or empty `spec.datamover`
    /// (Velero's built-in data mover).
    pub datamovers: BTreeSet<String>,
    /// Decision mode.
    pub mode: GateMode,
    /// Name of Velero's node-agent ConfigMap (`--node-agent-configmap`).
    pub node_agent_config_map: String,
    /// Name of the ledger ConfigMap (exact mode).
    pub ledger_config_map: String,
    /// Decide and log, write nothing (no accepts, no ledger, no Events).
    pub dry_run: bool,
    /// Delay before held loads are decided again when nothing changes
    /// (Velero: 5 s, L3.13): the runtime's resync.
    pub requeue_after: Duration,
    /// Exact mode: how often ledger entries whose load this instance never
    /// saw are checked with a GET (and dropped if the load is gone).
    pub confirm_interval: Duration,
    /// Address of `/metrics`, `/healthz`, `/readyz`; `None`: no server.
    pub metrics_addr: Option<SocketAddr>,
    /// How loads are held back.
    pub admission: Admission,
    /// `pod-gates`: where the webhook listens (HTTPS).
    pub webhook_addr: SocketAddr,
    /// `pod-gates`: the Service in front of the webhook (also names the
    /// TLS Secret `<service>-webhook-tls` and the
    /// MutatingWebhookConfiguration `<service>-<namespace>`).
    pub webhook_service: String,
    /// `pod-gates`: an existing TLS Secret to use (`--webhook-tls-secret`);
    /// `None`: `<service>-webhook-tls`, made when absent.
    pub webhook_tls_secret: Option<String>,
}

impl Config {
    /// A configuration with the defaults of the flags.
    pub fn new(namespace: &str, node: &str, datamovers: &[&str], mode: GateMode) -> Config {
        Config {
            namespace: namespace.to_owned(),
            node: node.to_owned(),
            datamovers: datamovers.iter().map(|s| (*s).to_owned()).collect(),
            mode,
            node_agent_config_map: DEFAULT_NODE_AGENT_CONFIG_MAP.to_owned(),
            ledger_config_map: load_soothe::DEFAULT_LEDGER_NAME.to_owned(),
            dry_run: false,
            requeue_after: load_soothe::HOLD_REQUEUE_AFTER,
            confirm_interval: Duration::from_secs(60),
            metrics_addr: None,
            admission: Admission::PodGates,
            webhook_addr: SocketAddr::from(([0, 0, 0, 0], DEFAULT_WEBHOOK_PORT)),
            webhook_service: CONTROLLER_NAME.to_owned(),
            webhook_tls_secret: None,
        }
    }

    /// The loads this instance accepts: DataUploads and DataDownloads of
    /// its data movers.
    pub fn gate_scope(&self) -> GateScope<'_> {
        GateScope::DataMovers(&self.datamovers)
    }

    /// `pod-gates`: the webhook's TLS Secret, given or the default.
    pub fn webhook_tls_secret(&self) -> String {
        self.webhook_tls_secret
            .clone()
            .unwrap_or_else(|| webhook_tls_secret_name(&self.webhook_service))
    }

    /// `pod-gates`: the MutatingWebhookConfiguration's name.
    pub fn webhook_configuration(&self) -> String {
        webhook_configuration_name(&self.webhook_service, &self.namespace)
    }
}

/// The webhook's default port (`--webhook-addr`), the container port of
/// the generated `pod-gates` workload.
pub const DEFAULT_WEBHOOK_PORT: u16 = 9443;

/// The port of the Service in front of the webhook, which the webhook
/// configuration names.
pub const WEBHOOK_SERVICE_PORT: u16 = 443;

/// The TLS Secret of the webhook behind the Service `service`.
pub fn webhook_tls_secret_name(service: &str) -> String {
    format!("{service}-webhook-tls")
}

/// The TLS Secret's name for the default `--webhook-service` (the
/// generated Role grants it by name).
pub const DEFAULT_WEBHOOK_TLS_SECRET: &str = "load-soothe-controller-webhook-tls";

/// The MutatingWebhookConfiguration of the webhook behind the Service
/// `service` in Velero's namespace `namespace` (cluster-scoped: one per
/// Velero namespace).
pub fn webhook_configuration_name(service: &str, namespace: &str) -> String {
    format!("{service}-{namespace}")
}

/// Default name of the node-agent ConfigMap (the name Velero's docs use).
pub const DEFAULT_NODE_AGENT_CONFIG_MAP: &str = "node-agent-config";

/// Why a `--datamover` value is refused, if it is: empty (Velero's
/// built-in data mover) or `velero` once trimmed
/// ([`velero_api::is_built_in_data_mover`]). Velero's own node-agent accepts the
/// built-in data mover's loads; gating them too makes the two race for
/// each `New` load, and when this controller wins, Velero never exposes
/// the volume and later cancels the load.
pub fn refused_datamover(name: &str) -> Option<String> {
    let trimmed = name.trim();
    if !velero_api::is_built_in_data_mover(Some(trimmed)) {
        return None;
    }
    let which = if trimmed.is_empty() {
        "an empty data mover name means Velero's built-in data mover"
    } else {
        "`velero` is Velero's built-in data mover"
    };
    Some(format!(
        "--datamover {name:?} is refused: {which}, whose loads Velero's node-agent accepts itself; \
         gating them too would race it for each New load, and a load this controller accepted \
         first is never exposed by Velero and is cancelled later. Name third-party data movers only"
    ))
}
