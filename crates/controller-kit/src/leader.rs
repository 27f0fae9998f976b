//! Lease-based leader election with kube-lease-manager.
//!
//! [`acquire_leadership`] waits until this replica holds the Lease (or the
//! shutdown token fires first). While leading, a monitor task watches the
//! Lease state: losing it fires the shutdown token with
//! [`ShutdownReason::LeaseLost`], whose exit code is non-zero, so the
//! controller stops acting at once and the process restarts as a follower.

use kube_lease_manager::{LeaseManager, LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::args::LeaderElectionConfig;
use crate::error::Error;
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
    let monitor = tokio::spawn(monitor(rx, shutdown.clone(), config.clone()));
    Ok(Some(LeaderGuard {
        monitor: Some(monitor),
        manager: Some(handle),
        config: config.clone(),
    }))
}

async fn monitor(mut rx: watch::Receiver<bool>, shutdown: Shutdown, config: LeaderElectionConfig) {
    loop {
        tokio::select! {
            changed = rx.changed() => {
                if changed.is_err() || !*rx.borrow_and_update() {
                    tracing::error!(lease = %config.lease_name, identity = %config.identity, "lost leadership; shutting down");
                    shutdown.trigger(ShutdownReason::LeaseLost);
                    return;
                }
            }
            () = shutdown.signalled() => return,
        }
    }
}
