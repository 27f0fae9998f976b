//! `host-label-controller`: keeps a label naming the physical host on every
//! Node and audits host anti-affinity.
//!
//! Host information (Node name → host) comes from Cluster API Machines
//! (`status.nodeRef.name` and the Machine's `node.cluster.x-k8s.io/esxi-host`
//! label) or from a HostInventory in a ConfigMap ([`config::HostSource`]).
//! It runs on controller-kit's snapshot runtime:
//!
//! - [`index`]: Nodes, the Pods whose placement may care about hosts, and
//!   the Machines or the inventory ConfigMap, from watches; any
//!   host-relevant change causes a pass within the debounce interval
//!   (50 ms), Pod churn within the audit interval (1 s), so a vMotion shows
//!   on the Node within seconds;
//! - [`pass`]: the label plan of each Node
//!   ([`anti_affinity_placement::labels::HostLabelConfig::plan_node`]:
//!   sanitised values, only keys recorded in the bookkeeping annotation are
//!   ever changed or removed, foreign labels are never touched) and the audit
//!   ([`anti_affinity_placement::labels::audit`]) of the Nodes as they will
//!   be after the patches;
//! - [`writes`]: the Node patches (conditioned on the resourceVersion they
//!   were planned from; a 409 re-reads the Node and plans again), metrics,
//!   Events (`ReplicasShareHost` on the pods' owner, `HostLabelMissing` on
//!   the Node; each once per occurrence), and the summary in the status
//!   ConfigMap when it changed.
//!
//! `--dry-run` plans, audits and logs, and writes nothing. `main` parses
//! [`cli::Cli`], builds the client and calls [`run`]; tests call [`run`]
//! with a client of the in-process API stand-in. See `docs/operations.md`.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod cli;
pub mod config;
pub mod error;
pub mod index;
pub mod manifests;
pub mod metrics;
pub mod modules;
pub mod pass;
pub mod report;
pub mod source;
pub mod writes;

use std::time::Duration;

use controller_kit::runner::run_controller;
use controller_kit::snapshot::{Runtime, Settings};
use controller_kit::{Shutdown, ShutdownReason};

pub use config::{CONTROLLER_NAME, Config, HostSource, ObjectName};
pub use error::Error;
pub use metrics::Metrics;

/// The metric registry, the controller's [`Metrics`] and the `/readyz`
/// flag, created before [`run_with`] so a caller (a test) can read them.
pub type Telemetry = controller_kit::runner::Telemetry<Metrics>;

/// Wait before retrying a pass that failed; doubled per consecutive
/// failure up to [`MAX_RETRY_AFTER`].
pub const RETRY_AFTER: Duration = Duration::from_secs(1);
/// Upper bound of the retry wait.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

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
    run_with_clients(client, None, config, shutdown, telemetry).await
}

/// [`run_with`] with Machines (and the other Cluster API kinds) read
/// through `machines` — a management cluster — when given, while Nodes,
/// Pods, ConfigMaps, Events and the Lease go through `client` (the
/// workload cluster).
pub async fn run_with_clients(
    client: kube::Client,
    machines: Option<kube::Client>,
    config: Config,
    shutdown: Shutdown,
    telemetry: Telemetry,
) -> Result<ShutdownReason, Error> {
    let (settings, metrics, readiness) =
        telemetry.into_run_settings(config.metrics_addr, config.leader.clone(), config.dry_run);
    let work_shutdown = shutdown.clone();
    run_controller(client.clone(), settings, shutdown, move || async move {
        tracing::info!(
            keys = ?config.labels.keys().iter().map(|k| k.as_str()).collect::<Vec<_>>(),
            source = ?config.source,
            dry_run = config.dry_run,
            "host label controller running"
        );
        let mut settings = Settings::new(CONTROLLER_NAME);
        settings.instance.clone_from(&config.instance);
        settings.dry_run = config.dry_run;
        settings.resync = Some(config.resync);
        settings.retry_backoff = RETRY_AFTER;
        settings.max_retry_backoff = MAX_RETRY_AFTER;
        let runtime = Runtime::new(
            client.clone(),
            settings,
            index::HostIndex::new(&config),
            writes::Labeller::new(client.clone(), config.clone(), metrics.clone()),
            metrics.controller.clone(),
            readiness,
        );
        let machines = machines.unwrap_or_else(|| client.clone());
        index::watches(runtime, &client, &machines, &config)
            .run(&work_shutdown)
            .await?;
        Ok(())
    })
    .await
}
