//! The stand-in as a loopback HTTP server, so that real clients — the
//! controller binaries, `kubectl`, any kube-rs or client-go program — can
//! be tested as processes against it. Plain HTTP on a loopback address
//! only: it has no authentication worth the name (identities are bearer
//! tokens of the form `fake-sa:<namespace>:<name>`, see [`crate::rbac`]).

use std::future::Future;
use std::net::SocketAddr;

use crate::FakeApi;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address is not a loopback address.
    #[error(
        "refusing to listen on {0}: the stand-in serves plain HTTP without authentication, so only loopback addresses (127.0.0.1, ::1) are allowed"
    )]
    NotLoopback(SocketAddr),
    /// Binding or serving failed.
    #[error("cannot serve on {addr}: {source}")]
    Io {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Binds `addr` (a loopback address; port 0 picks a free port).
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, ServeError> {
    if !addr.ip().is_loopback() {
        return Err(ServeError::NotLoopback(addr));
    }
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Io { addr, source })
}

/// Serves `fake` on `listener` until `stop` completes (open watches are
/// dropped then, not drained).
pub async fn serve(
    fake: FakeApi,
    listener: tokio::net::TcpListener,
    stop: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let addr = listener
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)));
    let app = axum::Router::new().fallback_service(fake);
    tokio::select! {
        result = axum::serve(listener, app) => result.map_err(|source| ServeError::Io { addr, source }),
        () = stop => Ok(()),
    }
}

/// A kubeconfig for the server at `url` (`http://127.0.0.1:PORT`), with
/// context, cluster and user `kube-fake-api` and namespace `default`. With
/// `service_account` (`(namespace, name)`) the user's token is that
/// ServiceAccount's (requests are then authorized by the RBAC objects the
/// server enforces); without, requests are not checked.
pub fn kubeconfig(url: &str, service_account: Option<(&str, &str)>) -> String {
    let token = match service_account {
        Some((namespace, name)) => format!("{}{namespace}:{name}", crate::rbac::TOKEN_PREFIX),
        None => "admin".to_owned(),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kube-fake-api\n  cluster:\n    server: {url}\nusers:\n- name: kube-fake-api\n  user:\n    token: {token}\ncontexts:\n- name: kube-fake-api\n  context:\n    cluster: kube-fake-api\n    user: kube-fake-api\n    namespace: default\ncurrent-context: kube-fake-api\npreferences: {{}}\n"
    )
}

/// A stand-in served on a loopback port from within a test, with a
/// kubeconfig file for it: run the real binaries against it with
/// `--kubeconfig`. The server stops when this is dropped.
#[derive(Debug)]
pub struct Loopback {
    url: String,
    kubeconfig: std::path::PathBuf,
    task: tokio::task::JoinHandle<Result<(), ServeError>>,
}

impl Loopback {
    /// Serves `fake` on `127.0.0.1` (a free port) and writes a kubeconfig
    /// for it (as `service_account` if given, see [`kubeconfig`]) into the
    /// system's temporary directory.
    pub async fn start(
        fake: FakeApi,
        service_account: Option<(&str, &str)>,
    ) -> Result<Self, ServeError> {
        let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr().map_err(|source| ServeError::Io {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            source,
        })?;
        let url = format!("http://{addr}");
        let kubeconfig = std::env::temp_dir().join(format!(
            "kube-fake-api-{}-{}.kubeconfig",
            std::process::id(),
            addr.port()
        ));
        std::fs::write(&kubeconfig, self::kubeconfig(&url, service_account))
            .map_err(|source| ServeError::Io { addr, source })?;
        let task = tokio::spawn(serve(fake, listener, std::future::pending()));
        Ok(Self {
            url,
            kubeconfig,
            task,
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The kubeconfig file.
    pub fn kubeconfig_path(&self) -> &std::path::Path {
        &self.kubeconfig
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}
