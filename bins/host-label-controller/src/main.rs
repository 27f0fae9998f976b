//! `host-label-controller`: parse arguments, build the client, run.

use anyhow::Context as _;
use clap::Parser;
use controller_kit::Shutdown;
use host_label_controller::Config;
use host_label_controller::cli::{Cli, Command};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Some(Command::Manifests(m)) = &cli.command {
        print!(
            "{}",
            host_label_controller::manifests::render_with(
                &m.namespace,
                &m.image,
                host_label_controller::manifests::Features {
                    sync_machine_labels: m.sync_machine_labels,
                    audit_cluster_modules: m.audit_cluster_modules,
                },
            )?
        );
        return Ok(());
    }
    let common = &cli.run.common;
    controller_kit::telemetry::init_tracing(common.log_format)?;
    let pod_namespace = std::env::var("POD_NAMESPACE").ok();
    let identity = controller_kit::args::default_identity();
    let config = Config::from_args(&cli.run, pod_namespace.as_deref(), &identity)?;
    let client = controller_kit::args::kube_client(common).await?;
    let shutdown = Shutdown::new();
    shutdown.listen_for_signals()?;
    let reason = host_label_controller::run(client, config, shutdown)
        .await
        .context("host-label-controller failed")?;
    tracing::info!(%reason, "stopped");
    std::process::exit(reason.exit_code());
}
