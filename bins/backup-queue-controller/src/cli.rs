//! Command-line arguments (every flag also has an environment variable) and
//! the resolved [`Config`] that [`crate::run`] takes.

use std::net::SocketAddr;
use std::time::Duration;

use controller_kit::{ControllerArgs, LeaderElectionConfig};

use crate::error::Error;
use crate::manifests::ManifestScope;

/// The controller's name: field manager, Event reporter, Lease name, RBAC
/// object names and metric prefix (with `_`).
pub const CONTROLLER_NAME: &str = "backup-queue-controller";

/// Velero's default namespace, used when `--namespace` is not given.
pub const DEFAULT_VELERO_NAMESPACE: &str = "velero";

/// How status is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum StatusSubresource {
    /// Ask API discovery whether `backups/status` exists (the default).
    #[default]
    Auto,
    /// Patch `/status` (a Backup CRD changed to declare the subresource).
    Enabled,
    /// Merge-patch the object itself (Velero's own CRD declares no status
    /// subresource).
    Disabled,
}

/// `backup-queue-controller [FLAGS]` runs the controller;
/// `backup-queue-controller manifests` prints its deployment manifests.
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
    /// Where the Backup permissions apply.
    #[arg(long, value_enum, default_value_t = ManifestScope::Namespaced)]
    pub scope: ManifestScope,
    /// The Velero namespace (the controller runs there too).
    #[arg(long, default_value = DEFAULT_VELERO_NAMESPACE, value_name = "NAMESPACE")]
    pub namespace: String,
    /// Container image.
    #[arg(long, default_value = crate::manifests::DEFAULT_IMAGE, value_name = "IMAGE")]
    pub image: String,
}

/// Flags of the controller itself.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct RunArgs {
    /// Shared controller flags (kubeconfig, namespace = the Velero
    /// namespace, dry run, logging, metrics, leader election).
    #[command(flatten)]
    pub common: ControllerArgs,

    /// Maximum number of backups ReadyToStart or InProgress at once (Velero's
    /// --concurrent-backups; values below 1 mean 1).
    #[arg(
        long,
        env = "CONCURRENT_BACKUPS",
        hide_env_values = true,
        default_value_t = 1,
        value_name = "N"
    )]
    pub concurrent_backups: u32,

    /// Whether the Backup CRD has a status subresource.
    #[arg(
        long,
        env = "STATUS_SUBRESOURCE",
        hide_env_values = true,
        value_enum,
        default_value_t = StatusSubresource::Auto
    )]
    pub status_subresource: StatusSubresource,
}

/// Everything [`crate::run`] needs, resolved from the arguments (no
/// environment reads inside `run`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The Velero namespace whose Backups form the queue.
    pub namespace: String,
    /// `--concurrent-backups` (below 1 means 1).
    pub concurrent_backups: u32,
    /// Decide and log, write nothing (no status, no Events, no Lease).
    pub dry_run: bool,
    /// How status is written.
    pub status_subresource: StatusSubresource,
    /// Leader election, if enabled.
    pub leader: Option<LeaderElectionConfig>,
    /// Address of `/metrics`, `/healthz`, `/readyz` (`None`: no server).
    pub metrics_addr: Option<SocketAddr>,
    /// This replica's name in Events (`reportingInstance`).
    pub instance: Option<String>,
    /// Shortest wait before retrying after a failed write (doubles up to
    /// [`Config::max_retry_backoff`]).
    pub retry_backoff: Duration,
    /// Longest wait between retries.
    pub max_retry_backoff: Duration,
    /// How long to wait for the watch to show a write before planning again
    /// anyway (the writes stay conditional, so this only costs a 409).
    pub settle_timeout: Duration,
}

impl Config {
    /// A configuration with defaults for `namespace`: concurrency 1, no
    /// dry run, status mode `auto`, no leader election, no metrics server.
    pub fn new(namespace: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            concurrent_backups: 1,
            dry_run: false,
            status_subresource: StatusSubresource::Auto,
            leader: None,
            metrics_addr: None,
            instance: None,
            retry_backoff: Duration::from_millis(100),
            max_retry_backoff: Duration::from_secs(10),
            settle_timeout: Duration::from_secs(10),
        }
    }

    /// Resolves the arguments; `pod_namespace` and `fallback_identity` come
    /// from the environment in `main`.
    pub fn from_args(
        args: &RunArgs,
        pod_namespace: Option<&str>,
        fallback_identity: &str,
    ) -> Result<Self, Error> {
        let common = &args.common;
        let leader = if common.leader.leader_elect {
            Some(
                common
                    .leader
                    .resolve(CONTROLLER_NAME, pod_namespace, fallback_identity)?,
            )
        } else {
            None
        };
        let instance = leader
            .as_ref()
            .map(|l| l.identity.clone())
            .or_else(|| common.leader.leader_identity.clone());
        Ok(Self {
            concurrent_backups: args.concurrent_backups,
            dry_run: common.dry_run,
            status_subresource: args.status_subresource,
            leader,
            metrics_addr: Some(common.metrics_addr),
            instance,
            ..Self::new(
                common
                    .namespace
                    .as_deref()
                    .unwrap_or(DEFAULT_VELERO_NAMESPACE),
            )
        })
    }
}
