//! Command-line arguments (every flag also has an environment variable) and
//! the resolved [`Config`] that [`crate::run`] takes.

use std::net::SocketAddr;
use std::time::Duration;

use anti_affinity_placement::labels::{DEFAULT_HOST_LABEL_KEY, HostLabelConfig, LabelKey};
use controller_kit::{ControllerArgs, LeaderElectionConfig};

use crate::error::Error;

/// The controller's name: field manager, Event reporter, Lease name, RBAC
/// object names and metric prefix (with `_`).
pub const CONTROLLER_NAME: &str = "host-label-controller";

/// Namespace used when neither `--namespace` nor `POD_NAMESPACE` is set.
pub const DEFAULT_NAMESPACE: &str = "host-label-controller";

/// Name of the status ConfigMap when `--status-configmap` is not given
/// (in the controller's namespace).
pub const DEFAULT_STATUS_CONFIGMAP: &str = "host-label-controller-status";

/// Data key of the status ConfigMap holding the audit summary (JSON).
pub const STATUS_DATA_KEY: &str = "summary.json";

/// `host-label-controller [FLAGS]` runs the controller;
/// `host-label-controller manifests` prints its deployment manifests.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = CONTROLLER_NAME, version, about, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// What to do (default: run the controller).
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Controller settings.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Print the ServiceAccount, RBAC and Deployment manifests as YAML.
    Manifests(ManifestArgs),
}

/// Flags of `manifests`.
#[derive(Debug, Clone, clap::Args)]
pub struct ManifestArgs {
    /// Namespace the controller runs in (its ConfigMaps live there too).
    #[arg(long, default_value = DEFAULT_NAMESPACE, value_name = "NAMESPACE")]
    pub namespace: String,
    /// Container image.
    #[arg(long, default_value = crate::manifests::DEFAULT_IMAGE, value_name = "IMAGE")]
    pub image: String,
}

/// Flags of the controller itself.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct RunArgs {
    /// Shared controller flags (kubeconfig, namespace = where the status and
    /// inventory ConfigMaps live unless given as NS/NAME, dry run, logging,
    /// metrics, leader election).
    #[command(flatten)]
    pub common: ControllerArgs,

    /// Node label key(s) carrying the physical host; repeat the flag (or
    /// separate with commas) for several, e.g. also
    /// `node-restriction.kubernetes.io/esxi-host`, which kubelets cannot set.
    #[arg(
        long = "label-key",
        env = "HOST_LABEL_KEYS",
        hide_env_values = true,
        value_delimiter = ',',
        default_value = DEFAULT_HOST_LABEL_KEY,
        value_name = "KEY"
    )]
    pub label_keys: Vec<String>,

    /// Node annotation recording which label keys this controller manages
    /// (default: `policyctl/managed-host-labels`).
    #[arg(
        long,
        env = "MANAGED_ANNOTATION",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub managed_annotation: Option<String>,

    /// Take host information from this ConfigMap (`NAMESPACE/NAME` or `NAME`)
    /// holding a HostInventory whose VM names are Node names, instead of
    /// from Cluster API Machines.
    #[arg(
        long,
        env = "INVENTORY_CONFIGMAP",
        hide_env_values = true,
        value_name = "NS/NAME"
    )]
    pub inventory_configmap: Option<String>,

    /// Data key of the HostInventory (YAML or JSON) in the inventory ConfigMap.
    #[arg(
        long,
        env = "INVENTORY_KEY",
        hide_env_values = true,
        default_value = "inventory.yaml",
        value_name = "KEY"
    )]
    pub inventory_key: String,

    /// ConfigMap (`NAMESPACE/NAME` or `NAME`) receiving the audit summary.
    #[arg(
        long,
        env = "STATUS_CONFIGMAP",
        hide_env_values = true,
        default_value = DEFAULT_STATUS_CONFIGMAP,
        value_name = "NS/NAME"
    )]
    pub status_configmap: String,

    /// Safety-net full resync interval in seconds (changes are picked up
    /// from watches within seconds; this only bounds the damage of a missed event).
    #[arg(
        long,
        env = "RESYNC_SECONDS",
        hide_env_values = true,
        default_value_t = 600,
        value_name = "SECONDS"
    )]
    pub resync_seconds: u64,
}

/// A namespaced object name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectName {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectName {
    /// Parses `NS/NAME` or `NAME` (then in `default_namespace`); `flag`
    /// names the origin for the error message.
    pub fn parse(flag: &str, value: &str, default_namespace: &str) -> Result<Self, Error> {
        let invalid = |why: &str| Error::InvalidArgument {
            flag: flag.to_owned(),
            value: value.to_owned(),
            problem: why.to_owned(),
        };
        let (namespace, name) = match value.split_once('/') {
            Some((ns, name)) => (ns, name),
            None => (default_namespace, value),
        };
        if namespace.is_empty() || name.is_empty() || name.contains('/') {
            return Err(invalid(
                "expected NAMESPACE/NAME or NAME with a non-empty namespace and name",
            ));
        }
        Ok(Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })
    }
}

impl std::fmt::Display for ObjectName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Where host information (Node name → physical host) comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostSource {
    /// Cluster API Machines: `status.nodeRef.name` → the Machine's
    /// `node.cluster.x-k8s.io/esxi-host` label.
    Machines,
    /// A HostInventory document in a ConfigMap.
    Inventory {
        /// The ConfigMap.
        configmap: ObjectName,
        /// Its data key.
        key: String,
    },
}

/// Everything [`crate::run`] needs, resolved from the arguments (no
/// environment reads inside `run`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Keys and bookkeeping annotation.
    pub labels: HostLabelConfig,
    /// Host information source.
    pub source: HostSource,
    /// The status ConfigMap.
    pub status_configmap: ObjectName,
    /// Decide and log, write nothing (no Node patches, no Events, no status, no Lease).
    pub dry_run: bool,
    /// Leader election, when enabled.
    pub leader: Option<LeaderElectionConfig>,
    /// Where to serve `/metrics`, `/healthz`, `/readyz` (`None`: not at all).
    pub metrics_addr: Option<SocketAddr>,
    /// Safety-net resync interval.
    pub resync: Duration,
    /// How long to wait after a watch event for more before acting (coalesces bursts).
    pub debounce: Duration,
    /// How long to coalesce Pod-only changes (they only affect the audit).
    pub audit_debounce: Duration,
    /// This replica's name for Events (`reportingInstance`).
    pub instance: Option<String>,
}

impl Config {
    /// A configuration with defaults for everything but the keys and the source
    /// (handy for tests and embedding): status ConfigMap
    /// `host-label-controller/host-label-controller-status`, no leader
    /// election, no metrics server, resync 600 s, debounce 50 ms, audit
    /// debounce 1 s.
    pub fn new(labels: HostLabelConfig, source: HostSource) -> Self {
        Self {
            labels,
            source,
            status_configmap: ObjectName {
                namespace: DEFAULT_NAMESPACE.to_owned(),
                name: DEFAULT_STATUS_CONFIGMAP.to_owned(),
            },
            dry_run: false,
            leader: None,
            metrics_addr: None,
            resync: Duration::from_secs(600),
            debounce: Duration::from_millis(50),
            audit_debounce: Duration::from_secs(1),
            instance: None,
        }
    }

    /// Resolves the arguments; `pod_namespace` (the `POD_NAMESPACE` value)
    /// and `identity` are passed in by `main`.
    pub fn from_args(
        args: &RunArgs,
        pod_namespace: Option<&str>,
        identity: &str,
    ) -> Result<Self, Error> {
        let namespace = args
            .common
            .namespace
            .as_deref()
            .or(pod_namespace)
            .unwrap_or(DEFAULT_NAMESPACE);
        let labels = label_config(&args.label_keys, args.managed_annotation.as_deref())?;
        let source = match &args.inventory_configmap {
            Some(cm) => HostSource::Inventory {
                configmap: ObjectName::parse("--inventory-configmap", cm, namespace)?,
                key: args.inventory_key.clone(),
            },
            None => HostSource::Machines,
        };
        let leader = if args.common.leader.leader_elect {
            Some(
                args.common
                    .leader
                    .resolve(CONTROLLER_NAME, pod_namespace, identity)?,
            )
        } else {
            None
        };
        Ok(Self {
            labels,
            source,
            status_configmap: ObjectName::parse(
                "--status-configmap",
                &args.status_configmap,
                namespace,
            )?,
            dry_run: args.common.dry_run,
            leader,
            metrics_addr: Some(args.common.metrics_addr),
            resync: Duration::from_secs(args.resync_seconds.max(1)),
            debounce: Duration::from_millis(50),
            audit_debounce: Duration::from_secs(1),
            instance: Some(identity.to_owned()),
        })
    }
}

/// Builds the [`HostLabelConfig`] from `--label-key` values (first = primary)
/// and `--managed-annotation`.
pub fn label_config(keys: &[String], annotation: Option<&str>) -> Result<HostLabelConfig, Error> {
    let mut parsed = keys
        .iter()
        .map(|k| k.trim())
        .filter(|k| !k.is_empty())
        .map(|k| LabelKey::new("--label-key", k));
    let first = parsed.next().ok_or_else(|| Error::InvalidArgument {
        flag: "--label-key".into(),
        value: keys.join(","),
        problem: "at least one label key is required".into(),
    })??;
    let mut config = HostLabelConfig::new(first);
    for key in parsed {
        config = config.with_additional_key(key?);
    }
    if let Some(annotation) = annotation {
        config = config.with_managed_annotation(LabelKey::new("--managed-annotation", annotation)?);
    }
    Ok(config)
}
