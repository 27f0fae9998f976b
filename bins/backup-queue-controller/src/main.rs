//! `backup-queue-controller`: parse arguments, build the client, run.

use anyhow::Context as _;
use backup_queue_controller::Config;
use backup_queue_controller::cli::{Cli, Command};
use clap::Parser;
use controller_kit::Shutdown;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Some(Command::Manifests(m)) = &cli.command {
        print!(
            "{}",
            backup_queue_controller::manifests::render(m.scope, &m.namespace, &m.image)?
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
    let reason = backup_queue_controller::run(client, config, shutdown)
        .await
        .context("backup-queue-controller failed")?;
    tracing::info!(%reason, "stopped");
    std::process::exit(reason.exit_code());
}
