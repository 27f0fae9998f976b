//! The `/metrics`, `/healthz` and `/readyz` HTTP server (axum).
//!
//! `/healthz` answers 200 while the process serves; `/readyz` answers 200
//! once [`Readiness::set_ready`] was called with `true` (e.g. after the
//! caches synced, or after winning the leader election) and 503 otherwise.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::error::Error;
use crate::shutdown::Shutdown;

/// A shared readiness flag plus named reasons that hold it down. Clones
/// share state.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<ReadinessState>);

#[derive(Debug, Default)]
struct ReadinessState {
    ready: AtomicBool,
    blocked: std::sync::Mutex<std::collections::BTreeMap<&'static str, String>>,
}

impl Readiness {
    /// Not ready.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets readiness.
    pub fn set_ready(&self, ready: bool) {
        self.0.ready.store(ready, Ordering::SeqCst);
    }

    /// Keeps `/readyz` failing with `reason` (shown in its body) until
    /// [`Readiness::unblock`] with the same `key`, whatever
    /// [`Readiness::set_ready`] says.
    pub fn block(&self, key: &'static str, reason: impl Into<String>) {
        self.blocked().insert(key, reason.into());
    }

    /// Removes the reason stored under `key`.
    pub fn unblock(&self, key: &'static str) {
        self.blocked().remove(key);
    }

    /// The reasons holding readiness down, sorted by key.
    pub fn reasons(&self) -> Vec<String> {
        self.blocked().values().cloned().collect()
    }

    fn blocked(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<&'static str, String>> {
        self.0
            .blocked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `/readyz` answers 200: set ready and nothing blocking.
    pub fn is_ready(&self) -> bool {
        self.0.ready.load(Ordering::SeqCst) && self.blocked().is_empty()
    }
}

#[derive(Clone)]
struct AppState {
    registry: Arc<Registry>,
    readiness: Readiness,
}

/// The OpenMetrics content type.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    match crate::metrics::encode(&state.registry) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)],
            body,
        )
            .into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics").into_response(),
    }
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    if state.readiness.is_ready() {
        return (StatusCode::OK, "ok".to_owned());
    }
    let reasons = state.readiness.reasons();
    if reasons.is_empty() {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready".to_owned())
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {}\n", reasons.join("; ")),
        )
    }
}

/// The router serving the three endpoints.
pub fn router(registry: Arc<Registry>, readiness: Readiness) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(AppState {
            registry,
            readiness,
        })
}

/// A bound (not yet serving) metrics/health server.
#[derive(Debug)]
pub struct HealthServer {
    listener: TcpListener,
    router: Router,
}

impl HealthServer {
    /// Binds `addr` (use port 0 in tests and read [`HealthServer::local_addr`]).
    pub async fn bind(
        addr: SocketAddr,
        registry: Arc<Registry>,
        readiness: Readiness,
    ) -> Result<Self, Error> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        Ok(Self {
            listener,
            router: router(registry, readiness),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        self.listener.local_addr().map_err(Error::Serve)
    }

    /// Serves until `shutdown` fires.
    pub async fn serve(self, shutdown: Shutdown) -> Result<(), Error> {
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown.signalled())
            .await
            .map_err(Error::Serve)
    }
}
