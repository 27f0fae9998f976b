//! The crate's error type.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Errors of the controller runtime.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kubeconfig file could not be read or parsed.
    #[error("cannot read kubeconfig {path}: {source}; check --kubeconfig / KUBECONFIG")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// No usable kubeconfig context was found.
    #[error("cannot load the kubeconfig context{}: {source}; check --context / KUBE_CONTEXT", context.as_ref().map(|c| format!(" {c:?}")).unwrap_or_default())]
    Context {
        /// The requested context, if any.
        context: Option<String>,
        /// Why.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// Neither in-cluster configuration nor a kubeconfig was found.
    #[error("cannot find a Kubernetes configuration (in-cluster or kubeconfig): {0}")]
    Infer(#[from] kube::config::InferConfigError),
    /// The kube client could not be built from the configuration.
    #[error("cannot build the Kubernetes client: {0}")]
    Client(#[source] kube::Error),
    /// A Kubernetes API call failed.
    #[error("Kubernetes API call failed: {0}")]
    Kube(#[from] kube::Error),
    /// Leader election failed.
    #[error("leader election on Lease {namespace}/{name} failed: {source}")]
    LeaderElection {
        /// Lease namespace.
        namespace: String,
        /// Lease name.
        name: String,
        /// Why.
        #[source]
        source: kube_lease_manager::LeaseManagerError,
    },
    /// Invalid leader-election settings.
    #[error("invalid leader election settings: {0}")]
    LeaderElectionSettings(String),
    /// The metrics/health server could not bind its address.
    #[error(
        "cannot listen on {addr} for /metrics, /healthz, /readyz: {source}; check --metrics-addr / METRICS_ADDR"
    )]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The metrics/health server failed while serving.
    #[error("the metrics/health server failed: {0}")]
    Serve(#[source] std::io::Error),
    /// Installing the signal handlers failed.
    #[error("cannot install the SIGTERM/SIGINT handlers: {0}")]
    Signals(#[source] std::io::Error),
    /// The tracing subscriber could not be installed.
    #[error("cannot install the tracing subscriber: {0}")]
    Tracing(String),
    /// A watch stream ended, which kube's watcher never does on its own.
    #[error("a watch stream ended unexpectedly")]
    WatchEnded,
}
