//! `load-soothe-controller`: a prepare-queue admission gate for third-party
//! Velero data movers.
//!
//! Velero's node-agent holds back new loads while too many are in
//! preparation (`loadConcurrency.prepareQueueLength`, L3.8–L3.14), but only
//! for the loads it handles itself, and only after a restart when the
//! ConfigMap changes (L3.4). This controller does the same for the
//! DataUploads and DataDownloads whose `spec.datamover` names one of the
//! configured data movers, with the `load-soothe` gate:
//!
//! - it watches the four load kinds in Velero's namespace (all four count
//!   against the limit) and the node-agent ConfigMap (edits take effect at
//!   once);
//! - it accepts `New` loads of its data movers the way Velero's node-agent
//!   does (phase `Accepted`, label `velero.io/expose-on-going=true`,
//!   `status.acceptedByNode`, `status.acceptedTimestamp`), first in first
//!   out, with merge patches conditioned on the load's resourceVersion;
//! - `--mode exact` admits through the shared ledger ConfigMap
//!   (compare-and-swap on its resourceVersion): never more than the limit in
//!   preparation, however many replicas run; `--mode optimistic` decides on
//!   its own view only (bound: replicas × limit, see [`writes`]).
//!
//! It runs on controller-kit's snapshot runtime: [`index`] (what the gate
//! knows), [`pass`] (`load_soothe::plan_pass`), [`writes`] (the executor).
//! Every replica acts (no leader election). `main.rs` parses [`cli::Cli`]
//! and calls [`run`] with an injected client.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod cli;
pub mod config;
pub mod error;
pub mod gates;
pub mod index;
pub mod loads;
pub mod manifests;
pub mod metrics;
pub mod pass;
pub mod tls_secret;
pub mod webhook;
pub mod writes;

use controller_kit::runner::run_controller;
use controller_kit::snapshot::{Runtime, Settings};
use controller_kit::{Shutdown, ShutdownReason};

pub use config::{Admission, CONTROLLER_NAME, Config, GateMode};
pub use error::Error;
pub use metrics::Metrics;

/// The metric registry, the controller's [`Metrics`] and the `/readyz`
/// flag, created before [`run_with`] so a caller (a test) can read them.
pub type Telemetry = controller_kit::runner::Telemetry<Metrics>;

/// Runs the controller until `shutdown` fires; returns the shutdown reason
/// (its exit code tells `main` how to exit).
///
/// The client is injected (tests pass one talking to `kube-fake-api`).
/// Serves `/metrics`, `/healthz`, `/readyz` on [`Config::metrics_addr`] if
/// set; `/readyz` turns ready once every watch has listed.
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
        telemetry.into_run_settings(config.metrics_addr, None, config.dry_run);
    if config.admission == Admission::PodGates {
        let work_shutdown = shutdown.clone();
        return run_controller(client.clone(), settings, shutdown, move || async move {
            run_pod_gates(client, config, work_shutdown, readiness).await
        })
        .await;
    }
    tracing::warn!(
        "--admission accept: accepting loads on the data mover's behalf; a mover that exposes a load only in the reconcile that accepts it (Velero's design) never exposes these loads and cancels them at its prepare timeout; prefer --admission pod-gates"
    );
    let work_shutdown = shutdown.clone();
    run_controller(client.clone(), settings, shutdown, move || async move {
        tracing::info!(
            node = %config.node,
            mode = config.mode.as_str(),
            namespace = %config.namespace,
            datamovers = %config.datamovers.iter().map(String::as_str).collect::<Vec<_>>().join(","),
            dry_run = config.dry_run,
            "load soothe controller running"
        );
        let mut settings = Settings::new(CONTROLLER_NAME);
        settings.instance = Some(config.node.clone());
        settings.dry_run = config.dry_run;
        settings.resync = Some(config.requeue_after);
        let runtime = Runtime::new(
            client.clone(),
            settings,
            index::GateIndex::new(config.clone()),
            writes::Gate::new(client.clone(), config.clone(), metrics.clone()),
            metrics.controller.clone(),
            readiness,
        );
        index::watches(runtime, &client, &config)
            .run(&work_shutdown)
            .await?;
        Ok(())
    })
    .await
}

/// The `pod-gates` admission: the shared TLS Secret, the webhook
/// configuration (its `caBundle` set to the shared CA), the webhook server
/// and the gate loop, until `shutdown` fires.
async fn run_pod_gates(
    client: kube::Client,
    config: Config,
    shutdown: Shutdown,
    readiness: controller_kit::server::Readiness,
) -> Result<(), Error> {
    let service = &config.webhook_service;
    let names = vec![
        format!("{service}.{}.svc", config.namespace),
        format!("{service}.{}.svc.cluster.local", config.namespace),
    ];
    let secret = config.webhook_tls_secret();
    let tls = if config.webhook_tls_secret.is_some() {
        webhook::WebhookTls::existing(&client, &config.namespace, &secret).await?
    } else {
        webhook::WebhookTls::shared(&client, &config.namespace, &secret, &names).await?
    };
    let server = webhook::WebhookServer::bind(config.webhook_addr, &tls).await?;
    if !config.dry_run {
        let configuration = webhook::configuration(
            &config.webhook_configuration(),
            &config.namespace,
            &webhook::WebhookEndpoint::Service {
                namespace: config.namespace.clone(),
                name: service.clone(),
                port: i32::from(config::WEBHOOK_SERVICE_PORT),
            },
            tls.ca_pem(),
        );
        webhook::apply_configuration(&client, &configuration, CONTROLLER_NAME).await?;
    }
    let server = tokio::spawn(server.run(shutdown.clone()));
    let keeping = match config.mode {
        GateMode::Exact => gates::GateKeeping::Exact {
            ledger: config.ledger_config_map.clone(),
            replica: config.node.clone(),
        },
        GateMode::Optimistic => gates::GateKeeping::Soft,
    };
    readiness.set_ready(true);
    gates::run(
        client,
        gates::GateLoopConfig {
            namespace: config.namespace.clone(),
            limit: gates::LimitSource::NodeAgentConfigMap(config.node_agent_config_map.clone()),
            keeping,
            interval: std::time::Duration::from_millis(500),
            dry_run: config.dry_run,
        },
        shutdown,
    )
    .await;
    let _ = server.await;
    Ok(())
}
