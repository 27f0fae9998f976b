//! `kube-testbed`: see the library's `run`.
use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    kube_testbed::run(kube_testbed::Cli::parse()).await
}
