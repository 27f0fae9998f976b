//! The life of a controller process, shared by every binary: serve
//! `/metrics`, `/healthz` and `/readyz`, take part in leader election (not
//! under `--dry-run`, where taking the Lease would be a write), run the
//! controller's work while leading, then release the Lease and stop the
//! server.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use prometheus_client::registry::Registry;

use crate::args::LeaderElectionConfig;
use crate::fence::WriteFence;
use crate::leader::acquire_fenced_leadership;
use crate::server::{HealthServer, Readiness};
use crate::{Error, Shutdown, ShutdownReason};

/// A controller's own metric set, registered on the process registry.
pub trait RegisteredMetrics {
    /// Registers the metrics on `registry` and returns their handles.
    fn register_on(registry: &mut Registry) -> Self;
}

/// The metric registry, a controller's metrics `M` and the `/readyz` flag,
/// created before the controller runs so that a caller (a test) can read
/// them.
#[derive(Debug)]
pub struct Telemetry<M> {
    /// The registry served on `/metrics`.
    pub registry: Registry,
    /// The controller's metrics (shared handles).
    pub metrics: M,
    /// The `/readyz` flag.
    pub readiness: Readiness,
    /// The write fence of the work's clients ([`RunSettings::fence`]):
    /// closed by the runner when the leadership ends; a caller (a test)
    /// may close it too, as a lost Lease would.
    pub fence: WriteFence,
}

impl<M: RegisteredMetrics> Default for Telemetry<M> {
    fn default() -> Self {
        let mut registry = Registry::default();
        let metrics = M::register_on(&mut registry);
        Self {
            registry,
            metrics,
            readiness: Readiness::new(),
            fence: WriteFence::new(),
        }
    }
}

impl<M> Telemetry<M> {
    /// Splits into the [`RunSettings`] for [`run_controller`] (with the
    /// process settings given here) and what the work keeps: its metrics
    /// and the readiness flag.
    pub fn into_run_settings(
        self,
        metrics_addr: Option<SocketAddr>,
        leader: Option<LeaderElectionConfig>,
        dry_run: bool,
    ) -> (RunSettings, M, Readiness) {
        let settings = RunSettings {
            metrics_addr,
            leader,
            dry_run,
            registry: self.registry,
            readiness: self.readiness.clone(),
            fence: self.fence,
        };
        (settings, self.metrics, self.readiness)
    }
}

/// What [`run_controller`] needs besides the work itself.
#[derive(Debug)]
pub struct RunSettings {
    /// Where to serve `/metrics`, `/healthz` and `/readyz`; `None` serves
    /// nothing (tests).
    pub metrics_addr: Option<SocketAddr>,
    /// Leader election; `None` acts at once (single replica, or every
    /// replica acts).
    pub leader: Option<LeaderElectionConfig>,
    /// `--dry-run`: leader election is skipped, since it writes the Lease.
    pub dry_run: bool,
    /// The registry served on `/metrics`.
    pub registry: Registry,
    /// The `/readyz` flag, shared with the work (which sets it once its
    /// watches have listed).
    pub readiness: Readiness,
    /// Fences the writes of the clients the work gets from
    /// [`WriteFence::guard`] to this replica's leadership (see
    /// [`crate::fence`]); open for good without leader election.
    pub fence: WriteFence,
}

/// Runs `work` as a controller process until it returns or `shutdown`
/// fires, and returns the shutdown reason (its exit code tells `main` how
/// to exit).
///
/// A standby replica reports ready while it waits for the Lease (so that a
/// rolling update can proceed) and not ready once it leads, until the work
/// marks itself ready. An error of the work fires `shutdown` with a fatal
/// reason and is returned; the Lease is released in every case.
pub async fn run_controller<E, Fut>(
    client: kube::Client,
    settings: RunSettings,
    shutdown: Shutdown,
    work: impl FnOnce() -> Fut,
) -> Result<ShutdownReason, E>
where
    Fut: Future<Output = Result<(), E>>,
    E: From<Error> + std::fmt::Display,
{
    let RunSettings {
        metrics_addr,
        leader,
        dry_run,
        registry,
        readiness,
        fence,
    } = settings;
    let server = match metrics_addr {
        Some(addr) => {
            let server = HealthServer::bind(addr, Arc::new(registry), readiness.clone()).await?;
            tracing::info!(addr = %server.local_addr()?, "serving /metrics, /healthz, /readyz");
            Some(tokio::spawn(server.serve(shutdown.clone())))
        }
        None => None,
    };
    let result = lead_and_work(
        client,
        leader,
        dry_run,
        (&shutdown, &fence),
        &readiness,
        work,
    )
    .await;
    readiness.set_ready(false);
    if let Err(error) = &result {
        shutdown.trigger(ShutdownReason::Fatal(error.to_string()));
    }
    if let Some(server) = server {
        shutdown.trigger(ShutdownReason::Requested);
        let _ = server.await;
    }
    result.map(|()| shutdown.reason().unwrap_or(ShutdownReason::Requested))
}

async fn lead_and_work<E, Fut>(
    client: kube::Client,
    leader: Option<LeaderElectionConfig>,
    dry_run: bool,
    (shutdown, fence): (&Shutdown, &WriteFence),
    readiness: &Readiness,
    work: impl FnOnce() -> Fut,
) -> Result<(), E>
where
    Fut: Future<Output = Result<(), E>>,
    E: From<Error>,
{
    let guard = match (&leader, dry_run) {
        (Some(_), true) => {
            tracing::info!(
                "--dry-run: not taking part in leader election (it would write the Lease)"
            );
            None
        }
        (Some(leader), false) => {
            // A standby replica is healthy and ready; it just does not act.
            readiness.set_ready(true);
            match acquire_fenced_leadership(client, leader, shutdown, fence).await? {
                Some(guard) => {
                    readiness.set_ready(false);
                    Some(guard)
                }
                None => return Ok(()),
            }
        }
        (None, _) => None,
    };
    let result = work().await;
    match guard {
        // Leadership already ended: another replica may hold the Lease by
        // now, and a release made from stale state could clear its holder.
        // Dropping the guard stops renewing and leaves the Lease to expire.
        Some(guard) if shutdown.reason() == Some(ShutdownReason::LeaseLost) => drop(guard),
        Some(guard) => {
            if let Err(error) = guard.release().await {
                tracing::warn!(%error, "could not release the leader Lease");
            }
        }
        None => {}
    }
    result
}
