//! `kube-fake-apiserver`: the in-process Kubernetes API stand-in as a
//! loopback HTTP server for process-level tests.
//!
//! ```sh
//! cargo run -p kube-fake-api --bin kube-fake-apiserver -- \
//!     --listen 127.0.0.1:8001 --crds crates/kube-fake-api/crds/velero-1.18 \
//!     --kubeconfig-out /tmp/fake.kubeconfig
//! ```
//!
//! Prints `listening on http://127.0.0.1:PORT` once it accepts requests,
//! writes a kubeconfig `kubectl` and kube-rs can use, and stops on SIGTERM
//! or SIGINT. See docs/kube-fake-api.md.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use kube_fake_api::{FakeApi, server};

/// Serves the kube-fake-api stand-in over plain HTTP on a loopback address.
#[derive(Debug, Parser)]
#[command(name = "kube-fake-apiserver", version, about)]
struct Cli {
    /// Loopback address to listen on (port 0: any free port).
    #[arg(
        long,
        env = "KUBE_FAKE_LISTEN",
        default_value = "127.0.0.1:0",
        value_name = "ADDR"
    )]
    listen: SocketAddr,
    /// Directory of CustomResourceDefinition YAML files to install
    /// (repeatable; every `*.yaml`/`*.yml` file in it).
    #[arg(long, env = "KUBE_FAKE_CRDS", value_name = "DIR")]
    crds: Vec<PathBuf>,
    /// Write a kubeconfig for this server to FILE.
    #[arg(long, env = "KUBE_FAKE_KUBECONFIG_OUT", value_name = "FILE")]
    kubeconfig_out: Option<PathBuf>,
    /// Enforce the RBAC objects (Roles, ClusterRoles, bindings) of this
    /// YAML file on requests made with a ServiceAccount token.
    #[arg(long, env = "KUBE_FAKE_RBAC", value_name = "FILE")]
    rbac: Option<PathBuf>,
    /// Put this ServiceAccount's token (`NAMESPACE/NAME`) into the written
    /// kubeconfig (default: an unchecked administrator token).
    #[arg(long, env = "KUBE_FAKE_SERVICE_ACCOUNT", value_name = "NS/NAME")]
    service_account: Option<String>,
}

fn main() {
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("kube-fake-apiserver: error: {message}");
            1
        }
    };
    std::process::exit(code);
}

#[tokio::main]
async fn run(cli: Cli) -> Result<(), String> {
    let fake = FakeApi::new();
    for dir in &cli.crds {
        fake.install_crds_from_dir(dir).map_err(|e| e.to_string())?;
    }
    if let Some(path) = &cli.rbac {
        let yaml = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --rbac {}: {e}", path.display()))?;
        fake.enforce_rbac(&yaml).map_err(|e| e.to_string())?;
    }
    let service_account =
        match &cli.service_account {
            Some(sa) => Some(sa.split_once('/').ok_or_else(|| {
                format!("invalid --service-account {sa:?}: expected NAMESPACE/NAME")
            })?),
            None => None,
        };
    let listener = server::bind(cli.listen).await.map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let url = format!("http://{addr}");
    if let Some(path) = &cli.kubeconfig_out {
        std::fs::write(path, server::kubeconfig(&url, service_account))
            .map_err(|e| format!("cannot write --kubeconfig-out {}: {e}", path.display()))?;
    }
    let stop = async {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => std::future::pending::<()>().await,
        }
    };
    println!("listening on {url}");
    server::serve(fake, listener, stop)
        .await
        .map_err(|e| e.to_string())
}
