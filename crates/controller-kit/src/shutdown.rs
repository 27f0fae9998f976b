//! Graceful shutdown: a cloneable [`Shutdown`] token that `run()` functions
//! accept, triggered by SIGTERM/SIGINT, by losing the leader Lease, or by a
//! test, carrying the [`ShutdownReason`] that decides the exit code.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;

/// Why the process is shutting down.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShutdownReason {
    /// SIGTERM or SIGINT (name of the signal).
    Signal(&'static str),
    /// The leader Lease was lost: another replica may be acting now.
    LeaseLost,
    /// Shutdown was requested programmatically (tests, embedding).
    Requested,
    /// A fatal error in a component.
    Fatal(String),
}

impl ShutdownReason {
    /// The process exit code: 0 for signals and requests, 1 for fatal
    /// errors, 2 for a lost Lease (so that the restart is visible).
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Signal(_) | Self::Requested => 0,
            Self::Fatal(_) => 1,
            Self::LeaseLost => 2,
        }
    }
}

impl std::fmt::Display for ShutdownReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Signal(s) => write!(f, "received {s}"),
            Self::LeaseLost => f.write_str("lost the leader Lease"),
            Self::Requested => f.write_str("shutdown requested"),
            Self::Fatal(e) => write!(f, "fatal error: {e}"),
        }
    }
}

/// A shutdown token. Clones share state; the first trigger's reason wins.
#[derive(Debug, Clone)]
pub struct Shutdown {
    tx: Arc<watch::Sender<Option<ShutdownReason>>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    /// A token that has not fired.
    pub fn new() -> Self {
        let (tx, _) = watch::channel(None);
        Self { tx: Arc::new(tx) }
    }

    /// Fires the token with `reason`; returns `false` if it had already fired
    /// (the first reason is kept).
    pub fn trigger(&self, reason: ShutdownReason) -> bool {
        self.tx.send_if_modified(|cur| {
            if cur.is_some() {
                return false;
            }
            *cur = Some(reason);
            true
        })
    }

    /// The reason, once fired.
    pub fn reason(&self) -> Option<ShutdownReason> {
        self.tx.borrow().clone()
    }

    /// Whether the token has fired.
    pub fn is_triggered(&self) -> bool {
        self.tx.borrow().is_some()
    }

    /// Waits until the token fires and returns the reason.
    pub async fn triggered(&self) -> ShutdownReason {
        let mut rx = self.tx.subscribe();
        loop {
            if let Some(r) = rx.borrow_and_update().clone() {
                return r;
            }
            if rx.changed().await.is_err() {
                // Cannot happen while `self` holds the sender; treat as a request.
                return ShutdownReason::Requested;
            }
        }
    }

    /// A `'static` future that completes when the token fires, for
    /// `kube::runtime::Controller::graceful_shutdown_on` and `axum`'s
    /// `with_graceful_shutdown`.
    pub fn signalled(&self) -> impl Future<Output = ()> + Send + Sync + 'static {
        let mut rx = self.tx.subscribe();
        async move {
            let _ = rx.wait_for(Option::is_some).await;
        }
    }

    /// Spawns a task that fires the token on SIGTERM or SIGINT.
    pub fn listen_for_signals(&self) -> Result<tokio::task::JoinHandle<()>, crate::Error> {
        let this = self.clone();
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let mut term = signal(SignalKind::terminate()).map_err(crate::Error::Signals)?;
            let mut int = signal(SignalKind::interrupt()).map_err(crate::Error::Signals)?;
            Ok(tokio::spawn(async move {
                let name = tokio::select! {
                    _ = term.recv() => "SIGTERM",
                    _ = int.recv() => "SIGINT",
                    () = this.signalled() => return,
                };
                tracing::info!(signal = name, "shutting down gracefully");
                this.trigger(ShutdownReason::Signal(name));
            }))
        }
        #[cfg(not(unix))]
        {
            Ok(tokio::spawn(async move {
                tokio::select! {
                    r = tokio::signal::ctrl_c() => if r.is_ok() { this.trigger(ShutdownReason::Signal("SIGINT")); },
                    () = this.signalled() => {}
                }
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn first_reason_wins_and_all_waiters_wake() {
        let s = Shutdown::new();
        assert!(!s.is_triggered());
        let waiter = tokio::spawn({
            let s = s.clone();
            async move { s.triggered().await }
        });
        let fut = s.signalled();
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(s.trigger(ShutdownReason::LeaseLost));
        assert!(!s.trigger(ShutdownReason::Requested));
        assert_eq!(waiter.await.unwrap(), ShutdownReason::LeaseLost);
        tokio::time::timeout(Duration::from_secs(1), fut)
            .await
            .unwrap();
        assert_eq!(s.reason().map(|r| r.exit_code()), Some(2));
        // Waiting after the fact returns at once.
        assert_eq!(s.triggered().await, ShutdownReason::LeaseLost);
    }

    #[test]
    fn exit_codes_distinguish_lease_loss_from_clean_stops() {
        assert_eq!(ShutdownReason::Signal("SIGTERM").exit_code(), 0);
        assert_eq!(ShutdownReason::Requested.exit_code(), 0);
        assert_ne!(ShutdownReason::LeaseLost.exit_code(), 0);
        assert_ne!(ShutdownReason::Fatal("x".into()).exit_code(), 0);
    }

    #[tokio::test]
    async fn sigterm_triggers_shutdown() {
        let s = Shutdown::new();
        let task = s.listen_for_signals().unwrap();
        // Signal our own process (the handler is installed, so it is not killed).
        let status = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let reason = tokio::time::timeout(Duration::from_secs(5), s.triggered())
            .await
            .unwrap();
        assert_eq!(reason, ShutdownReason::Signal("SIGTERM"));
        task.await.unwrap();
    }
}
