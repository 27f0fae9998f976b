//! Lease-based leader election with kube-lease-manager.
//!
//! [`acquire_leadership`] waits until this replica holds the Lease (or the
//! shutdown token fires first). While leading, a monitor task watches the
//! Lease state: losing it fires the shutdown token with
//! [`ShutdownReason::LeaseLost`], whose exit code is non-zero, so the
//! controller stops acting at once and the process restarts as a follower.
//!
//! Failing to renew counts as losing it. kube-lease-manager reports a
//! Lease taken by another replica, but when its renewals fail (kube-apiserver
//! unreachable, the ServiceAccount's token revoked or its namespace deleted)
//! it only logs and retries, and would keep this replica leading forever.
//! So the client it renews through records when a write to the Lease last
//! succeeded, and the monitor steps down once none has for
//! [`renewal_deadline`]: before the Lease, as last written, can expire and
//! pass to another replica.
//!
//! Stepping down alone does not stop a write already on its way out of a
//! reconcile, so leadership also closes a [`WriteFence`]: the clients it
//! guards (the work's, and the one renewing the Lease) send no write after
//! the renewal deadline. A replica that stepped down does not release the
//! Lease either: kube-lease-manager's release is a patch made without a
//! precondition, from what it last read, and could clear the holder that
//! took the Lease over; the Lease is left to expire instead.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use kube_lease_manager::{LeaseManager, LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::args::LeaderElectionConfig;
use crate::error::Error;
use crate::fence::{Deadline, WriteFence};
use crate::shutdown::{Shutdown, ShutdownReason};

/// Held while this replica leads.
///
/// [`LeaderGuard::release`] stops renewing and frees the Lease (graceful
/// hand-over). Dropping the guard instead behaves like a crash: renewing
/// stops at once (the background tasks are aborted) but the Lease is left to
/// expire, so a follower takes over only after the lease duration.
#[derive(Debug)]
pub struct LeaderGuard {
    monitor: Option<JoinHandle<()>>,
    manager: Option<JoinHandle<Result<LeaseManager, LeaseManagerError>>>,
    config: LeaderElectionConfig,
}

impl LeaderGuard {
    /// Stops renewing and releases the Lease (so a follower can take over
    /// at once instead of waiting for expiry). Call after the controller stopped.
    pub async fn release(mut self) -> Result<(), Error> {
        if let Some(monitor) = self.monitor.take() {
            // Dropping the monitor's receiver makes kube-lease-manager release the Lease.
            monitor.abort();
            let _ = monitor.await;
        }
        let Some(manager) = self.manager.take() else {
            return Ok(());
        };
        match manager.await {
            Ok(Ok(_)) | Err(_) => Ok(()),
            Ok(Err(source)) => Err(lease_error(&self.config, source)),
        }
    }
}

impl Drop for LeaderGuard {
    fn drop(&mut self) {
        if let Some(m) = self.monitor.take() {
            m.abort();
        }
        if let Some(m) = self.manager.take() {
            m.abort();
        }
    }
}

fn lease_error(config: &LeaderElectionConfig, source: LeaseManagerError) -> Error {
    Error::LeaderElection {
        namespace: config.lease_namespace.clone(),
        name: config.lease_name.clone(),
        source,
    }
}

/// Waits until this replica holds the Lease described by `config`.
/// Returns `Ok(None)` if `shutdown` fired first. The returned guard's monitor
/// fires `shutdown` with [`ShutdownReason::LeaseLost`] when the Lease is lost.
pub async fn acquire_leadership(
    client: kube::Client,
    config: &LeaderElectionConfig,
    shutdown: &Shutdown,
) -> Result<Option<LeaderGuard>, Error> {
    acquire_fenced_leadership(client, config, shutdown, &WriteFence::new()).await
}

/// [`acquire_leadership`], with `fence` following the leadership: once
/// leading, the fence refuses writes from the renewal deadline on, and the
/// monitor closes it when the Lease is lost. The Lease itself is renewed
/// through a client behind the same fence.
pub async fn acquire_fenced_leadership(
    client: kube::Client,
    config: &LeaderElectionConfig,
    shutdown: &Shutdown,
    fence: &WriteFence,
) -> Result<Option<LeaderGuard>, Error> {
    let (client, renewed) = RenewalClock::wrap(client, config);
    let client = fence.guard(client);
    let manager = LeaseManagerBuilder::new(client, &config.lease_name)
        .with_namespace(&config.lease_namespace)
        .with_identity(&config.identity)
        .with_duration(config.duration.as_secs().max(1))
        .with_grace(config.renew_before_expiry.as_secs())
        .build()
        .await
        .map_err(|e| lease_error(config, e))?;
    let (mut rx, handle) = manager.watch().await;
    tracing::info!(lease = %config.lease_name, namespace = %config.lease_namespace, identity = %config.identity, "waiting for leadership");
    loop {
        if *rx.borrow_and_update() {
            break;
        }
        tokio::select! {
            changed = rx.changed() => {
                if changed.is_err() {
                    // The manager task ended: report its error.
                    return match handle.await {
                        Ok(Err(e)) => Err(lease_error(config, e)),
                        _ => Err(Error::LeaderElectionSettings("the lease manager stopped unexpectedly".into())),
                    };
                }
            }
            () = shutdown.signalled() => {
                drop(rx);
                let _ = handle.await;
                return Ok(None);
            }
        }
    }
    tracing::info!(lease = %config.lease_name, identity = %config.identity, "acquired leadership");
    fence.follow(Deadline {
        renewed: renewed.clone(),
        after: renewal_deadline(config),
    });
    let monitor = tokio::spawn(monitor(
        rx,
        shutdown.clone(),
        config.clone(),
        renewed,
        fence.clone(),
    ));
    Ok(Some(LeaderGuard {
        monitor: Some(monitor),
        manager: Some(handle),
        config: config.clone(),
    }))
}

async fn monitor(
    mut rx: watch::Receiver<bool>,
    shutdown: Shutdown,
    config: LeaderElectionConfig,
    renewed: Arc<Mutex<Instant>>,
    fence: WriteFence,
) {
    let deadline = renewal_deadline(&config);
    let mut tick = tokio::time::interval((deadline / 8).max(Duration::from_millis(50)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            changed = rx.changed() => {
                if changed.is_err() || !*rx.borrow_and_update() {
                    tracing::error!(lease = %config.lease_name, identity = %config.identity, "lost leadership; shutting down");
                    fence.close();
                    shutdown.trigger(ShutdownReason::LeaseLost);
                    return;
                }
            }
            _ = tick.tick() => {
                let since = renewed.lock().unwrap_or_else(PoisonError::into_inner).elapsed();
                if since >= deadline {
                    tracing::error!(
                        lease = %config.lease_name,
                        identity = %config.identity,
                        not_renewed_for_seconds = since.as_secs_f64(),
                        "could not renew the leader Lease in time (it may pass to another replica); shutting down"
                    );
                    fence.close();
                    shutdown.trigger(ShutdownReason::LeaseLost);
                    return;
                }
            }
            () = shutdown.signalled() => return,
        }
    }
}

/// How long a leader keeps acting after its last successful write of the
/// Lease: the lease duration less half the renewal margin
/// (`renew_before_expiry`), so that the renewal that kube-lease-manager
/// starts `renew_before_expiry` before expiry has the other half for its
/// retries, and the leader has stopped before the Lease, as last written,
/// expires (12.5 s with the defaults of 15 s and 5 s).
pub fn renewal_deadline(config: &LeaderElectionConfig) -> Duration {
    config
        .duration
        .saturating_sub(config.renew_before_expiry / 2)
        .max(Duration::from_millis(100))
}

/// The client kube-lease-manager uses, recording when a write to the
/// Lease last succeeded (the instant the request was sent, which is about
/// the `renewTime` it carries).
#[derive(Clone)]
struct RenewalClock {
    client: kube::Client,
    lease: String,
    renewed: Arc<Mutex<Instant>>,
}

impl RenewalClock {
    /// `client` wrapped, and the instant of the last successful write of
    /// the Lease of `config` (now, until there is one).
    fn wrap(
        client: kube::Client,
        config: &LeaderElectionConfig,
    ) -> (kube::Client, Arc<Mutex<Instant>>) {
        let renewed = Arc::new(Mutex::new(Instant::now()));
        let default_namespace = client.default_namespace().to_owned();
        let clock = RenewalClock {
            client,
            lease: format!(
                "/apis/coordination.k8s.io/v1/namespaces/{}/leases/{}",
                config.lease_namespace, config.lease_name
            ),
            renewed: renewed.clone(),
        };
        (kube::Client::new(clock, default_namespace), renewed)
    }
}

type Answer = Result<http::Response<kube::client::Body>, kube::Error>;

impl tower::Service<http::Request<kube::client::Body>> for RenewalClock {
    type Response = http::Response<kube::client::Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let write = request.method() != http::Method::GET && request.uri().path() == self.lease;
        let sent = Instant::now();
        let client = self.client.clone();
        let renewed = self.renewed.clone();
        Box::pin(async move {
            let response = client.send(request).await?;
            if write && response.status().is_success() {
                let mut last = renewed.lock().unwrap_or_else(PoisonError::into_inner);
                *last = (*last).max(sent);
            }
            Ok(response)
        })
    }
}
