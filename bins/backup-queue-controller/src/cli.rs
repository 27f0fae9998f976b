//! Command-line arguments (every flag also has an environment variable) and
//! their resolution into a [`Config`].

use controller_kit::ControllerArgs;

use crate::config::{CONTROLLER_NAME, Config, DEFAULT_VELERO_NAMESPACE, StatusSubresource};
use crate::error::Error;
use crate::manifests::ManifestScope;

/// `backup-queue-controller [FLAGS]` runs the controller;
/// `backup-queue-controller manifests` prints its deployment manifests.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = CONTROLLER_NAME,
    version,
    about,
    args_conflicts_with_subcommands = true,
    mut_arg("namespace", |arg| arg.help(
        "Velero's namespace, whose Backups are queued (default: velero)"
    ))
)]
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

    /// Seconds a ReadyToStart backup may wait for Velero to start it before
    /// it is nudged with a metadata-only update (Velero starts backups only
    /// on Update events); repeated every SECONDS while it waits. 0 turns the
    /// nudge off.
    #[arg(
        long,
        env = "PICKUP_TIMEOUT_SECONDS",
        hide_env_values = true,
        default_value_t = 30,
        value_name = "SECONDS"
    )]
    pub pickup_timeout: u64,

    /// The Velero server's Deployment in the Velero namespace, read to
    /// check that Velero's own backup queue controller is disabled
    /// (--disable-controllers=backup-queue); empty: do not read it, judge
    /// from Velero's writes only.
    #[arg(
        long,
        env = "VELERO_DEPLOYMENT",
        hide_env_values = true,
        default_value = crate::velero_queue::DEFAULT_VELERO_DEPLOYMENT,
        value_name = "NAME"
    )]
    pub velero_deployment: String,

    /// Seconds between reads of the Velero Deployment while it matters, and
    /// how long a New backup must stay New before a sighting of Velero's
    /// queue is taken as stale.
    #[arg(
        long,
        env = "VELERO_QUEUE_RECHECK_SECONDS",
        hide_env_values = true,
        default_value_t = 10,
        value_name = "SECONDS"
    )]
    pub velero_queue_recheck: u64,
}

impl Config {
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
            pickup_timeout: std::time::Duration::from_secs(args.pickup_timeout),
            velero_deployment: args.velero_deployment.clone(),
            velero_queue_recheck: std::time::Duration::from_secs(args.velero_queue_recheck.max(1)),
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
