//! `backup-queue-controller`: Velero's concurrent backup queue
//! (`--concurrent-backups`, Q4.1–Q4.22) as a separate,
//! leader-elected controller built on the pure [`backup_queue`] planner.
//!
//! It watches `velero.io/v1` Backups in the Velero namespace and all
//! Namespaces, keeps a [`backup_queue::QueueState`] up to date from the
//! watch events, and writes what the plan says: `status.phase`
//! (`Queued`/`ReadyToStart`) and `status.queuePosition`, plus the
//! [`REASON_ANNOTATION`] saying why a backup waits, and Events
//! (`Queued`, `Waiting`, `Started`, `ForeignQueueWriter`,
//! `InvalidNamespaceFilter`, `VeleroQueueEnabled`). It writes nothing while
//! Velero's own queue controller runs ([`velero_queue`]). It runs on
//! controller-kit's snapshot runtime:
//! [`index`] (the queue state), [`pass`] (the planner, explaining waiting
//! backups only when their reasons may have changed), [`writes`] (the
//! executor), and [`backup_write`], the planned writes both speak in.
//!
//! Safety: every write is a merge patch conditioned on the resourceVersion
//! it was planned from (a stale decision fails with 409 and is re-planned
//! from fresh state); the plan's writes are made in an order whose every
//! prefix is safe; the response of every write goes into the index at once;
//! the state is rebuilt from the objects after every (re)list, so a restart
//! loses nothing; with `--leader-elect` only the
//! Lease holder acts and losing the Lease stops it at once.
//!
//! `main` parses [`cli::Cli`], builds the client and calls [`run`]; tests
//! call [`run`] (or [`run_with`]) with a client of the in-process API
//! stand-in. See `docs/operations.md`.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod backup_write;
pub mod cli;
pub mod config;
pub mod crd_check;
pub mod error;
pub mod index;
pub mod manifests;
pub mod metrics;
pub mod pass;
pub mod pickup;
pub mod velero_queue;
pub mod writes;

use controller_kit::precondition::{self, Precondition};
use controller_kit::runner::run_controller;
use controller_kit::snapshot::{Runtime, Settings};
use controller_kit::{Shutdown, ShutdownReason};

pub use config::{CONTROLLER_NAME, Config, REASON_ANNOTATION, StatusSubresource};
pub use error::Error;
pub use index::queue_position_entry;
pub use metrics::Metrics;
pub use pass::{human_duration, reason_text};

/// The metric registry, the controller's [`Metrics`] and the `/readyz`
/// flag, created before [`run_with`] so a caller (a test) can read them.
pub type Telemetry = controller_kit::runner::Telemetry<Metrics>;

/// Runs the controller until `shutdown` fires; returns the shutdown reason
/// (its exit code tells `main` how to exit).
pub async fn run(
    client: kube::Client,
    config: Config,
    shutdown: Shutdown,
) -> Result<ShutdownReason, Error> {
    run_with(client, config, shutdown, Telemetry::default()).await
}

/// [`run`] with caller-provided [`Telemetry`].
pub async fn run_with(
    client: kube::Client,
    config: Config,
    shutdown: Shutdown,
    telemetry: Telemetry,
) -> Result<ShutdownReason, Error> {
    let (settings, metrics, readiness) =
        telemetry.into_run_settings(config.metrics_addr, config.leader.clone(), config.dry_run);
    let work_shutdown = shutdown.clone();
    // The work writes through the leadership's fence: nothing after the
    // renewal deadline.
    let work_client = settings.fence.guard(client.clone());
    run_controller(client, settings, shutdown, move || async move {
        let client = work_client;
        check_backup_crd(&client, &readiness, &work_shutdown, config.crd_retry).await?;
        let status_subresource = status_subresource(&client, config.status_subresource).await?;
        tracing::info!(
            namespace = %config.namespace,
            concurrent_backups = config.concurrent_backups.max(1),
            status_subresource,
            dry_run = config.dry_run,
            "backup queue controller running"
        );
        let mut settings = Settings::new(CONTROLLER_NAME);
        settings.instance.clone_from(&config.instance);
        settings.dry_run = config.dry_run;
        settings.retry_backoff = config.retry_backoff;
        settings.max_retry_backoff = config.max_retry_backoff;
        if !config.pickup_timeout.is_zero() {
            // Pass often enough to nudge within half a second (or a quarter
            // of a shorter timeout) of the nudge being due.
            settings.resync = Some(
                (config.pickup_timeout / 4)
                    .min(std::time::Duration::from_millis(500))
                    .max(std::time::Duration::from_millis(20)),
            );
        }
        // Pass often enough to notice Velero's queue controller being
        // disabled (the Deployment is read again at most this often).
        settings.resync = Some(settings.resync.map_or(config.velero_queue_recheck, |r| {
            r.min(config.velero_queue_recheck)
        }));
        let runtime = Runtime::new(
            client.clone(),
            settings,
            index::QueueIndex::new(config.concurrent_backups),
            writes::Queue::new(
                client.clone(),
                config.clone(),
                status_subresource,
                metrics.clone(),
                readiness.clone(),
            ),
            metrics.controller.clone(),
            readiness,
        );
        index::watches(runtime, &client, &config.namespace)
            .run(&work_shutdown)
            .await?;
        Ok(())
    })
    .await
}

/// The start-up check of the Backup CRD ([`crd_check`]): too old → the
/// error that stops the controller (exit 1); unreadable → `/readyz` fails
/// with the reason while it is read again (every `retry`, doubling up to a
/// minute) and, should the CRD turn out too old, the controller stops.
async fn check_backup_crd(
    client: &kube::Client,
    readiness: &controller_kit::server::Readiness,
    shutdown: &Shutdown,
    retry: std::time::Duration,
) -> Result<(), Error> {
    let precondition = Precondition {
        key: crd_check::READINESS_KEY,
        retry,
        max_retry: std::time::Duration::from_secs(60),
    };
    let client = client.clone();
    precondition::require(precondition, readiness, shutdown, move || {
        let client = client.clone();
        async move { crd_check::probe(&client).await }
    })
    .await
    .map_err(Error::VeleroTooOld)
}

/// Resolves `--status-subresource`: `auto` asks API discovery whether
/// `backups/status` is served in `velero.io/v1`.
pub async fn status_subresource(
    client: &kube::Client,
    mode: StatusSubresource,
) -> Result<bool, Error> {
    match mode {
        StatusSubresource::Enabled => Ok(true),
        StatusSubresource::Disabled => Ok(false),
        StatusSubresource::Auto => {
            let list = client
                .list_api_group_resources("velero.io/v1")
                .await
                .map_err(Error::Discovery)?;
            if !list.resources.iter().any(|r| r.name == "backups") {
                return Err(Error::BackupCrdMissing);
            }
            Ok(list.resources.iter().any(|r| r.name == "backups/status"))
        }
    }
}
