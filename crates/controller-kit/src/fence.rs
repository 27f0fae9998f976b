//! The write fence: a leader's writes end when its leadership does.
//!
//! Stepping down fires the [`crate::Shutdown`] token, but a controller
//! stops gracefully: a reconcile already running finishes, and its next
//! write (the status patch after a failed one, the Warning Event its error
//! path publishes) would still reach kube-apiserver once the network comes
//! back, after another replica has taken the Lease. A [`WriteFence`] closes
//! that gap below the controller: every client it [guards](WriteFence::guard)
//! refuses to send a write (any request but `GET`; watches are `GET`s) once
//! the fence is closed, and abandons the writes it is waiting on at that
//! moment. Reads go on, so that a stopping controller can still drain.
//!
//! The leader monitor closes the fence when the Lease is lost, and every
//! write checks the renewal deadline itself, so a write is refused even in
//! the moment between the deadline and the monitor's next look.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// Why a guarded client refused or abandoned a write.
#[derive(Debug, thiserror::Error)]
#[error(
    "{method} {path} not sent: this replica no longer holds the leader Lease (writes are fenced)"
)]
pub struct Fenced {
    /// The request's method.
    pub method: String,
    /// The request's path.
    pub path: String,
}

/// The renewal clock a fence checks: the instant of the last successful
/// write of the Lease and how long after it this replica may act.
#[derive(Debug, Clone)]
pub(crate) struct Deadline {
    pub(crate) renewed: Arc<Mutex<Instant>>,
    pub(crate) after: Duration,
}

impl Deadline {
    fn passed(&self) -> bool {
        self.renewed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed()
            >= self.after
    }
}

#[derive(Debug)]
struct State {
    closed: watch::Sender<bool>,
    deadline: Mutex<Option<Deadline>>,
}

/// A fence shared by the clients it guards (clones share it). Open until
/// [`WriteFence::close`]; a fence that is never closed (no leader election,
/// `--dry-run`) lets everything through.
#[derive(Debug, Clone)]
pub struct WriteFence {
    state: Arc<State>,
}

impl Default for WriteFence {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteFence {
    /// An open fence.
    pub fn new() -> Self {
        let (closed, _) = watch::channel(false);
        Self {
            state: Arc::new(State {
                closed,
                deadline: Mutex::new(None),
            }),
        }
    }

    /// `client` with its writes fenced: the returned client refuses writes
    /// with [`Fenced`] (as `kube::Error::Service`) once the fence is closed,
    /// and abandons the ones in flight when it closes.
    pub fn guard(&self, client: kube::Client) -> kube::Client {
        let namespace = client.default_namespace().to_owned();
        kube::Client::new(
            Guarded {
                client,
                fence: self.clone(),
            },
            namespace,
        )
    }

    /// Closes the fence for good.
    pub fn close(&self) {
        self.state.closed.send_replace(true);
    }

    /// Whether writes are refused now: the fence was closed, or the
    /// renewal deadline it was given has passed.
    pub fn is_closed(&self) -> bool {
        if *self.state.closed.borrow() {
            return true;
        }
        let deadline = self
            .state
            .deadline
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        deadline.as_ref().is_some_and(Deadline::passed)
    }

    /// Makes writes also wait on `deadline` (set while leading).
    pub(crate) fn follow(&self, deadline: Deadline) {
        *self
            .state
            .deadline
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(deadline);
    }

    /// Resolves once [`WriteFence::close`] was called.
    async fn closed(&self) {
        let mut rx = self.state.closed.subscribe();
        // The sender lives in `self.state`, so `wait_for` cannot fail.
        let _ = rx.wait_for(|closed| *closed).await;
    }
}

#[derive(Clone)]
struct Guarded {
    client: kube::Client,
    fence: WriteFence,
}

type Answer = Result<http::Response<kube::client::Body>, kube::Error>;

impl tower::Service<http::Request<kube::client::Body>> for Guarded {
    type Response = http::Response<kube::client::Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let client = self.client.clone();
        if request.method() == http::Method::GET {
            return Box::pin(async move { client.send(request).await });
        }
        let fenced = move |request: &http::Request<kube::client::Body>| {
            kube::Error::Service(Box::new(Fenced {
                method: request.method().to_string(),
                path: request.uri().path().to_owned(),
            }))
        };
        let refusal = fenced(&request);
        if self.fence.is_closed() {
            tracing::warn!(error = %refusal, "write refused");
            return Box::pin(async move { Err(refusal) });
        }
        let fence = self.fence.clone();
        Box::pin(async move {
            tokio::select! {
                biased;
                () = fence.closed() => {
                    tracing::warn!(error = %refusal, "write abandoned");
                    Err(refusal)
                }
                answer = client.send(request) => answer,
            }
        })
    }
}
