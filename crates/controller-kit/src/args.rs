//! Command-line arguments shared by every controller. Flatten
//! [`ControllerArgs`] into a binary's own `clap::Parser`; every flag can also
//! be set through the environment variable shown in `--help`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use kube_validation::namespace_or_default;

use crate::error::Error;

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The arguments every controller accepts.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct ControllerArgs {
    /// Path to a kubeconfig file (default: in-cluster configuration, then the usual kubeconfig).
    #[arg(long, env = "KUBECONFIG", hide_env_values = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// Kubeconfig context to use (default: the current context).
    #[arg(
        long,
        env = "KUBE_CONTEXT",
        hide_env_values = true,
        value_name = "NAME"
    )]
    pub context: Option<String>,

    /// Namespace to watch; each controller's help names which objects live
    /// there and its default.
    #[arg(
        long,
        short = 'n',
        env = "WATCH_NAMESPACE",
        hide_env_values = true,
        value_name = "NAMESPACE"
    )]
    pub namespace: Option<String>,

    /// Decide and log, but write nothing to the cluster (no status, no Events).
    #[arg(long, env = "DRY_RUN", hide_env_values = true)]
    pub dry_run: bool,

    /// Log format.
    #[arg(long, env = "LOG_FORMAT", hide_env_values = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Address for /metrics, /healthz and /readyz.
    #[arg(
        long,
        env = "METRICS_ADDR",
        hide_env_values = true,
        default_value = "0.0.0.0:8080",
        value_name = "ADDR"
    )]
    pub metrics_addr: SocketAddr,

    /// Leader election settings.
    #[command(flatten)]
    pub leader: LeaderElectionArgs,
}

/// Lease-based leader election settings.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct LeaderElectionArgs {
    /// Run only while holding the leader Lease (for more than one replica).
    #[arg(long, env = "LEADER_ELECT", hide_env_values = true)]
    pub leader_elect: bool,

    /// Name of the leader Lease (default: the controller's name).
    #[arg(long, env = "LEASE_NAME", hide_env_values = true, value_name = "NAME")]
    pub lease_name: Option<String>,

    /// Namespace of the leader Lease (default: POD_NAMESPACE, else `default`).
    #[arg(
        long,
        env = "LEASE_NAMESPACE",
        hide_env_values = true,
        value_name = "NAMESPACE"
    )]
    pub lease_namespace: Option<String>,

    /// Seconds a Lease stays valid after its last renewal.
    #[arg(
        long,
        env = "LEASE_DURATION_SECONDS",
        hide_env_values = true,
        default_value_t = 15,
        value_name = "SECONDS"
    )]
    pub lease_duration_seconds: u64,

    /// Seconds before expiry at which the holder renews (must be below the duration).
    #[arg(
        long,
        env = "LEASE_RENEW_SECONDS",
        hide_env_values = true,
        default_value_t = 5,
        value_name = "SECONDS"
    )]
    pub lease_renew_seconds: u64,

    /// This replica's identity in the Lease (default: POD_NAME, else HOSTNAME plus the process id).
    #[arg(long, env = "POD_NAME", hide_env_values = true, value_name = "ID")]
    pub leader_identity: Option<String>,
}

/// Resolved leader-election settings (see [`LeaderElectionArgs::resolve`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// Lease name.
    pub lease_name: String,
    /// Lease namespace.
    pub lease_namespace: String,
    /// This replica's identity.
    pub identity: String,
    /// Validity of the lease after a renewal.
    pub duration: Duration,
    /// How long before expiry the holder renews.
    pub renew_before_expiry: Duration,
}

impl LeaderElectionArgs {
    /// Resolves defaults: `controller_name` for the Lease name, the
    /// `POD_NAMESPACE` value (passed in by the caller, so this stays free of
    /// environment reads) or `default` for its namespace (an empty value
    /// counts as absent, [`kube_validation::namespace_or_default`]), `fallback_identity`
    /// for the identity. Rejects a renew time not below the duration.
    pub fn resolve(
        &self,
        controller_name: &str,
        pod_namespace: Option<&str>,
        fallback_identity: &str,
    ) -> Result<LeaderElectionConfig, Error> {
        if self.lease_duration_seconds == 0 {
            return Err(Error::LeaderElectionSettings(
                "--lease-duration-seconds must be at least 1".into(),
            ));
        }
        if self.lease_renew_seconds >= self.lease_duration_seconds {
            return Err(Error::LeaderElectionSettings(format!(
                "--lease-renew-seconds ({}) must be below --lease-duration-seconds ({})",
                self.lease_renew_seconds, self.lease_duration_seconds
            )));
        }
        Ok(LeaderElectionConfig {
            lease_name: self
                .lease_name
                .clone()
                .unwrap_or_else(|| controller_name.to_owned()),
            lease_namespace: namespace_or_default(
                [self.lease_namespace.as_deref(), pod_namespace]
                    .into_iter()
                    .flatten()
                    .find(|namespace| !namespace.is_empty()),
            )
            .to_owned(),
            identity: self
                .leader_identity
                .clone()
                .unwrap_or_else(|| fallback_identity.to_owned()),
            duration: Duration::from_secs(self.lease_duration_seconds),
            renew_before_expiry: Duration::from_secs(self.lease_renew_seconds),
        })
    }
}

/// The argument ids of [`LeaderElectionArgs`].
pub const LEADER_ELECTION_ARG_IDS: &[&str] = &[
    "leader_elect",
    "lease_name",
    "lease_namespace",
    "lease_duration_seconds",
    "lease_renew_seconds",
    "leader_identity",
];

/// `command` with the leader-election flags hidden from `--help`, for a
/// controller that does not elect a leader (it still parses them, so that
/// it can refuse `--leader-elect` with a reason instead of an unknown-flag
/// error).
pub fn hide_leader_election(command: clap::Command) -> clap::Command {
    command.mut_args(|arg| {
        if LEADER_ELECTION_ARG_IDS.contains(&arg.get_id().as_str()) {
            arg.hide(true)
        } else {
            arg
        }
    })
}

/// A default leader identity from the environment: `HOSTNAME-pid`.
pub fn default_identity() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "controller".to_owned());
    format!("{host}-{}", std::process::id())
}

/// Builds the kube client the arguments describe: `--kubeconfig` (with
/// `--context`), else `--context` in the default kubeconfig, else in-cluster
/// or default kubeconfig inference. Only `main` calls this; `run()`
/// functions take an injected client.
pub async fn kube_client(args: &ControllerArgs) -> Result<kube::Client, Error> {
    use kube::config::{Config, KubeConfigOptions, Kubeconfig};
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..KubeConfigOptions::default()
    };
    let config = match (&args.kubeconfig, &args.context) {
        (Some(path), _) => {
            let kc = Kubeconfig::read_from(path).map_err(|source| Error::Kubeconfig {
                path: path.clone(),
                source,
            })?;
            Config::from_custom_kubeconfig(kc, &options)
                .await
                .map_err(|source| Error::Context {
                    context: args.context.clone(),
                    source,
                })?
        }
        (None, Some(_)) => {
            Config::from_kubeconfig(&options)
                .await
                .map_err(|source| Error::Context {
                    context: args.context.clone(),
                    source,
                })?
        }
        (None, None) => Config::infer().await?,
    };
    kube::Client::try_from(config).map_err(Error::Client)
}
