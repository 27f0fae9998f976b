//! A condition the controller needs before it may act, checked at start-up
//! and, while it cannot be decided, again in the background: for example
//! that a CRD has the fields the controller writes.
//!
//! [`require`] probes once. Met: the controller goes on. Unmet: the caller
//! gets the message and stops (a usage or version error, exit 1). Unknown
//! (the probe could not decide, say the read was forbidden): `/readyz`
//! fails with the reason under the condition's key while a task probes
//! again, waiting [`Precondition::retry`] and doubling up to
//! [`Precondition::max_retry`]; a later Met makes the controller ready, a
//! later Unmet stops it through its [`Shutdown`] with
//! [`ShutdownReason::Fatal`].

use std::future::Future;
use std::time::Duration;

use crate::server::Readiness;
use crate::shutdown::{Shutdown, ShutdownReason};

/// What one probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The condition holds.
    Met,
    /// The condition does not hold: the message says what to fix.
    Unmet(String),
    /// The probe could not decide: the reason, for `/readyz`.
    Unknown(String),
}

/// A named condition and how often it is probed again while unknown.
#[derive(Debug, Clone, Copy)]
pub struct Precondition {
    /// The readiness key its reason is stored under.
    pub key: &'static str,
    /// First wait before probing again.
    pub retry: Duration,
    /// Upper bound of the doubling wait.
    pub max_retry: Duration,
}

/// Probes `precondition` once: `Ok(())` when met or not yet decidable (then
/// a background task keeps probing, see the module docs), `Err(message)`
/// when unmet.
pub async fn require<P, F>(
    precondition: Precondition,
    readiness: &Readiness,
    shutdown: &Shutdown,
    mut probe: P,
) -> Result<(), String>
where
    P: FnMut() -> F + Send + 'static,
    F: Future<Output = Probe> + Send,
{
    let reason = match probe().await {
        Probe::Met => return Ok(()),
        Probe::Unmet(message) => return Err(message),
        Probe::Unknown(reason) => reason,
    };
    tracing::warn!(%reason, condition = precondition.key, "not ready");
    readiness.block(precondition.key, reason);
    let (readiness, shutdown) = (readiness.clone(), shutdown.clone());
    tokio::spawn(async move {
        let mut wait = precondition.retry;
        loop {
            tokio::select! {
                () = shutdown.signalled() => return,
                () = tokio::time::sleep(wait) => {}
            }
            match probe().await {
                Probe::Met => {
                    readiness.unblock(precondition.key);
                    tracing::info!(condition = precondition.key, "met");
                    return;
                }
                Probe::Unmet(message) => {
                    tracing::error!(%message, condition = precondition.key, "stopping");
                    shutdown.trigger(ShutdownReason::Fatal(message));
                    return;
                }
                Probe::Unknown(reason) => {
                    readiness.block(precondition.key, reason);
                    wait = (wait * 2).min(precondition.max_retry);
                }
            }
        }
    });
    Ok(())
}
