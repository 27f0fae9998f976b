//! `host-label-controller`: keeps a label naming the physical host on every
//! Node and audits host anti-affinity (issue 8, spec `placement.md` §B).
//!
//! Host information (Node name → host) comes from Cluster API Machines
//! (`status.nodeRef.name` and the Machine's `node.cluster.x-k8s.io/esxi-host`
//! label) or from a HostInventory in a ConfigMap ([`cli::HostSource`]). The
//! label plan for each Node comes from
//! [`anti_affinity_placement::labels::HostLabelConfig::plan_node`]: sanitised
//! values, only keys recorded in the controller's bookkeeping annotation are
//! ever changed or removed, foreign labels are never touched.
//!
//! Nodes, Pods, and Machines or the inventory ConfigMap are watched
//! (reflectors); any change triggers a pass within the debounce interval
//! (50 ms), so a vMotion shows on the Node within seconds. A pass:
//! 1. computes host information and patches each Node whose plan is not empty
//!    (a JSON merge patch of labels and the annotation only, conditioned on
//!    the resourceVersion it was planned from; a 409 re-reads the Node and
//!    re-plans, up to 5 times);
//! 2. audits ([`anti_affinity_placement::labels::audit`]) replicas of one
//!    workload sharing a physical host and Nodes without the label, sets the
//!    metrics, publishes Events (`ReplicasShareHost` on the pods' owner,
//!    `HostLabelMissing` on the Node; each once per occurrence), and writes
//!    the summary to the status ConfigMap when it changed.
//!
//! `--dry-run` plans, audits and logs, and writes nothing. `main` parses
//! [`cli::Cli`], builds the client and calls [`run`]; tests call [`run`]
//! with a client of the in-process API stand-in. See `docs/operations.md`.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod cli;
pub mod error;
pub mod manifests;
pub mod metrics;
pub mod report;
pub mod source;
mod sync;

use controller_kit::runner::run_controller;
use controller_kit::{Shutdown, ShutdownReason};

pub use cli::{CONTROLLER_NAME, Config, HostSource, ObjectName};
pub use error::Error;
pub use metrics::Metrics;

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
    run_controller(client.clone(), settings, shutdown, move || async move {
        tracing::info!(
            keys = ?config.labels.keys().iter().map(|k| k.as_str()).collect::<Vec<_>>(),
            source = ?config.source,
            dry_run = config.dry_run,
            "host label controller running"
        );
        sync::run_loop(client, config, metrics, readiness, work_shutdown).await
    })
    .await
}
