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

pub mod capi_sync;
pub mod cli;
pub mod config;
pub mod credentials;
pub mod error;
pub mod index;
pub mod manifests;
pub mod metrics;
pub mod modules;
pub mod pass;
pub mod report;
pub mod source;
pub mod status;
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
    // The work writes through the leadership's fence: nothing after the
    // renewal deadline.
    let work_client = settings.fence.guard(client.clone());
    let work_machines = machines.map(|machines| settings.fence.guard(machines));
    run_controller(client, settings, shutdown, move || async move {
        let client = work_client;
        tracing::info!(
            keys = %config.labels.keys().iter().map(|k| k.as_str()).collect::<Vec<_>>().join(","),
            source = %match &config.source {
                HostSource::Machines => "machines".to_owned(),
                HostSource::Inventory { configmap, key } => format!("configmap {configmap} key {key}"),
            },
            dry_run = config.dry_run,
            "host label controller running"
        );
        let machines = work_machines.unwrap_or_else(|| client.clone());
        label_nodes(
            client,
            machines,
            config,
            status::StatusPlace::Workload,
            metrics,
            readiness,
            work_shutdown,
        )
        .await
    })
    .await
}

/// The labelling loop of one workload cluster: Nodes through `client`,
/// Machines through `machines`, the status where `status` says, until
/// `shutdown`.
async fn label_nodes(
    client: kube::Client,
    machines: kube::Client,
    config: Config,
    status: status::StatusPlace,
    metrics: Metrics,
    readiness: controller_kit::server::Readiness,
    shutdown: Shutdown,
) -> Result<(), Error> {
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
        writes::Labeller::with_status(client.clone(), config.clone(), metrics.clone(), status),
        metrics.controller.clone(),
        readiness,
    );
    index::watches(runtime, &client, &machines, &config)
        .run(&shutdown)
        .await?;
    Ok(())
}

/// `--all-clusters`: runs in the management cluster (`management`: its
/// client, also used for leader election) and labels the Nodes of every
/// Cluster API Cluster's workload cluster, reached through the Cluster's
/// `<name>-kubeconfig` Secret (key `value`) as Cluster API does. Clusters
/// are tracked as they come and go (`controller_kit::fleet`); a Cluster
/// whose Secret cannot be read yet is tried again within
/// [`ALL_CLUSTERS_RECHECK`]. Each workload cluster gets its own labelling
/// loop over its own Cluster's Machines, so Node names are matched only
/// within their own cluster. The Secret is read again every
/// [`ALL_CLUSTERS_RECHECK`] and whenever the workload cluster answers
/// `401`/`403` ([`credentials`]); when its content changed, the loop is
/// restarted with a client built from it. The status summary goes into the
/// management cluster's status ConfigMap, one entry per workload cluster
/// ([`status`]).
pub async fn run_all_clusters(
    management: kube::Client,
    config: Config,
    shutdown: Shutdown,
    telemetry: Telemetry,
) -> Result<ShutdownReason, Error> {
    let (settings, metrics, readiness) =
        telemetry.into_run_settings(config.metrics_addr, config.leader.clone(), config.dry_run);
    let work_shutdown = shutdown.clone();
    // Every client of the work writes through the leadership's fence: the
    // management cluster's (status) and each workload cluster's (Nodes,
    // Events), built as clusters come and go.
    let fence = settings.fence.clone();
    let work_management = fence.guard(management.clone());
    run_controller(management, settings, shutdown, move || async move {
        clusters::supervise(
            work_management,
            fence,
            config,
            metrics,
            readiness,
            work_shutdown,
        )
        .await
    })
    .await
}

/// How often `--all-clusters` retries Clusters whose kubeconfig Secret
/// could not be used, and reads the Secrets of running ones again.
pub const ALL_CLUSTERS_RECHECK: Duration = Duration::from_secs(10);

/// The shortest time between two reads of one kubeconfig Secret after
/// authentication failures (a storm of `401`s reads it once).
pub const CREDENTIAL_REREAD_PACE: Duration = Duration::from_secs(1);

mod clusters {
    use capi_api::Cluster;
    use controller_kit::fleet::{self, Fleet, Member};
    use kube::api::Api;
    use kube::runtime::watcher;

    use super::*;
    use crate::credentials::{self, AuthFailures};
    use crate::status::StatusPlace;
    use controller_kit::WriteFence;

    /// Why a cluster's labelling loop was stopped from outside.
    enum Restart {
        /// The controller (or this Cluster's supervision) stops.
        Stop,
        /// The kubeconfig Secret's content changed: these are the new bytes.
        Rotated(Vec<u8>),
    }

    /// Waits until `stop` fires or the Secret of `cluster` holds
    /// credentials other than `current`: read every
    /// [`ALL_CLUSTERS_RECHECK`], and on `failures` (paced by
    /// [`CREDENTIAL_REREAD_PACE`]).
    async fn until_restart(
        management: &kube::Client,
        cluster: &ObjectName,
        current: &[u8],
        failures: &AuthFailures,
        stop: &Shutdown,
    ) -> Restart {
        let mut recheck = tokio::time::interval(ALL_CLUSTERS_RECHECK);
        recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        recheck.tick().await;
        loop {
            let why = tokio::select! {
                () = stop.signalled() => return Restart::Stop,
                _ = recheck.tick() => "periodic check",
                () = failures.next() => "the workload cluster answered 401/403",
            };
            match credentials::read_kubeconfig(management, cluster).await {
                Ok(bytes) if bytes != current => {
                    tracing::info!(%cluster, why, "the kubeconfig Secret changed; reconnecting");
                    return Restart::Rotated(bytes);
                }
                Ok(_) => tracing::debug!(%cluster, why, "the kubeconfig Secret is unchanged"),
                Err(error) => {
                    tracing::warn!(%cluster, why, %error, "cannot read the kubeconfig Secret again; keeping the current client");
                }
            }
            tokio::select! {
                () = stop.signalled() => return Restart::Stop,
                () = tokio::time::sleep(CREDENTIAL_REREAD_PACE) => {}
            }
        }
    }

    /// What one workload cluster's loop works with, besides its
    /// connection.
    struct ClusterContext {
        management: kube::Client,
        fence: WriteFence,
        cluster: ObjectName,
        config: Config,
        metrics: Metrics,
        readiness: controller_kit::server::Readiness,
    }

    /// A workload cluster's client and what it was built from.
    struct Connection {
        /// The Secret's kubeconfig bytes.
        kubeconfig: Vec<u8>,
        /// The client built from them.
        client: kube::Client,
        /// Its `401`/`403` answers.
        failures: AuthFailures,
    }

    impl Connection {
        /// Reads the Secret of `cluster` and builds the client.
        async fn open(
            management: &kube::Client,
            cluster: &ObjectName,
            fence: &WriteFence,
        ) -> Result<Connection, credentials::CredentialError> {
            let kubeconfig = credentials::read_kubeconfig(management, cluster).await?;
            Connection::from_kubeconfig(cluster, kubeconfig, fence).await
        }

        /// Builds the client from `kubeconfig`, writing through `fence`.
        async fn from_kubeconfig(
            cluster: &ObjectName,
            kubeconfig: Vec<u8>,
            fence: &WriteFence,
        ) -> Result<Connection, credentials::CredentialError> {
            let failures = AuthFailures::default();
            let client = fence.guard(
                credentials::workload_client(
                    &credentials::secret_name(cluster),
                    &kubeconfig,
                    failures.clone(),
                )
                .await?,
            );
            Ok(Connection {
                kubeconfig,
                client,
                failures,
            })
        }
    }

    /// One workload cluster until `stop`: its labelling loop through
    /// `connection`, restarted with a new connection whenever
    /// [`until_restart`] finds new credentials. Returns when `stop` fires,
    /// or when the loop ends on its own or the new credentials are unusable
    /// (the fleet then starts the cluster afresh).
    async fn run_cluster(context: ClusterContext, mut connection: Connection, stop: Shutdown) {
        let ClusterContext {
            management,
            fence,
            cluster,
            config,
            metrics,
            readiness,
        } = context;
        loop {
            let inner = Shutdown::new();
            let status = StatusPlace::Management {
                client: management.clone(),
                cluster: cluster.clone(),
            };
            let labelled = label_nodes(
                connection.client.clone(),
                management.clone(),
                config.clone(),
                status,
                metrics.clone(),
                readiness.clone(),
                inner.clone(),
            );
            tokio::pin!(labelled);
            let restart = tokio::select! {
                ended = &mut labelled => {
                    if let Err(error) = ended {
                        tracing::warn!(%cluster, %error, "the workload cluster's labelling stopped");
                    }
                    return;
                }
                restart = until_restart(&management, &cluster, &connection.kubeconfig, &connection.failures, &stop) => restart,
            };
            inner.trigger(ShutdownReason::Requested);
            if let Err(error) = labelled.await {
                tracing::warn!(%cluster, %error, "the workload cluster's labelling stopped");
            }
            let Restart::Rotated(bytes) = restart else {
                if !config.dry_run {
                    forget_if_gone(&management, &cluster, &config.status_configmap).await;
                }
                return;
            };
            match Connection::from_kubeconfig(&cluster, bytes, &fence).await {
                Ok(next) => connection = next,
                Err(error) => {
                    tracing::warn!(%cluster, %error, "the new credentials are unusable");
                    return;
                }
            }
        }
    }

    /// The loop of `cluster` was stopped: when its Cluster is gone (not
    /// merely the controller stopping), its status entries go too.
    async fn forget_if_gone(management: &kube::Client, cluster: &ObjectName, status: &ObjectName) {
        let clusters: Api<Cluster> = Api::namespaced(management.clone(), &cluster.namespace);
        let exists = match clusters.list(&Default::default()).await {
            Ok(list) => list
                .items
                .iter()
                .any(|c| c.metadata.name.as_deref() == Some(cluster.name.as_str())),
            Err(error) => {
                tracing::warn!(%cluster, %error, "cannot tell whether the Cluster is gone; keeping its status entry");
                return;
            }
        };
        if !exists
            && let Err(error) =
                crate::status::remove_from_management(management, status, cluster).await
        {
            tracing::warn!(%cluster, %error, "cannot remove the gone Cluster's status entry");
        }
    }

    /// One labelling loop per Cluster, on controller-kit's fleet
    /// supervisor: started once the Cluster's kubeconfig Secret gives a
    /// client, restarted on new credentials ([`run_cluster`]), stopped when
    /// the Cluster goes, started afresh (the Secret read again) when it
    /// ends. `management` and every workload cluster's client write
    /// through `fence`.
    pub(super) async fn supervise(
        management: kube::Client,
        fence: WriteFence,
        config: Config,
        metrics: Metrics,
        readiness: controller_kit::server::Readiness,
        shutdown: Shutdown,
    ) -> Result<(), Error> {
        let clusters = Fleet {
            api: Api::<Cluster>::all(management.clone()),
            config: watcher::Config::default(),
            recheck: ALL_CLUSTERS_RECHECK,
        };
        let start = |member: Member, stop: Shutdown| {
            let (management, fence, metrics, readiness) = (
                management.clone(),
                fence.clone(),
                metrics.clone(),
                readiness.clone(),
            );
            let cluster = ObjectName {
                namespace: member.namespace.clone(),
                name: member.name.clone(),
            };
            let mut cluster_config = config.clone();
            cluster_config.cluster = Some(cluster.clone());
            async move {
                let connection = Connection::open(&management, &cluster, &fence)
                    .await
                    .map_err(|e| e.to_string())?;
                let context = ClusterContext {
                    management,
                    fence,
                    cluster,
                    config: cluster_config,
                    metrics,
                    readiness,
                };
                Ok(run_cluster(context, connection, stop))
            }
        };
        fleet::supervise(clusters, &readiness, &shutdown, start)
            .await
            .map_err(Error::Runtime)
    }
}
