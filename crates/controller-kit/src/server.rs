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

/// A shared readiness flag. Clones share state.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    /// Not ready.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets readiness.
    pub fn set_ready(&self, ready: bool) {
        self.0.store(ready, Ordering::SeqCst);
    }

    /// Whether `/readyz` answers 200.
    pub fn is_ready(&self) -> bool {
        self.0.load(Ordering::SeqCst)
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
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
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
