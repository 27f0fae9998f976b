//! The resolved configuration [`crate::run`] takes, and the names the
//! controller uses.

use std::net::SocketAddr;
use std::time::Duration;

use controller_kit::LeaderElectionConfig;

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

/// Why a backup is still `Queued`, in words. Velero's `BackupStatus` has no
/// message field (and Velero's CRD schema would prune one), so the reason is
/// kept in this annotation, written together with the status and removed
/// when the backup starts.
pub const REASON_ANNOTATION: &str = "backup-queue.placement-policies.io/waiting-reason";

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
    /// First wait before reading the Backup CRD again when it could not be
    /// read at start-up (doubles up to a minute).
    pub crd_retry: Duration,
    /// How long a `ReadyToStart` Backup may wait for Velero before it is
    /// nudged ([`crate::pickup`]); zero turns the nudge off.
    pub pickup_timeout: Duration,
    /// The Velero server's Deployment (in [`Config::namespace`]) read to see
    /// whether Velero's own queue controller is disabled; empty: not read
    /// ([`crate::velero_queue`]).
    pub velero_deployment: String,
    /// How often that Deployment is read again, and how long a `New` Backup
    /// must stay `New` before a sighting of Velero's queue is stale.
    pub velero_queue_recheck: Duration,
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
            crd_retry: Duration::from_secs(5),
            pickup_timeout: Duration::from_secs(30),
            velero_deployment: crate::velero_queue::DEFAULT_VELERO_DEPLOYMENT.to_owned(),
            velero_queue_recheck: Duration::from_secs(10),
        }
    }
}
