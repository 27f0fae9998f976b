//! `load-soothe-controller` entry point: parse flags, build the client, run.

use anyhow::Context as _;
use clap::Parser;
use controller_kit::Shutdown;
use load_soothe_controller::cli::Cli;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    controller_kit::telemetry::init_tracing(cli.common.log_format)?;
    let pod_name = std::env::var("POD_NAME").ok();
    let config = cli.to_config(
        pod_name.as_deref(),
        &controller_kit::args::default_identity(),
    )?;
    let client = controller_kit::args::kube_client(&cli.common).await?;
    let shutdown = Shutdown::new();
    shutdown.listen_for_signals()?;
    let reason = load_soothe_controller::run(client, config, shutdown)
        .await
        .context("load-soothe-controller failed")?;
    tracing::info!(%reason, "stopped");
    std::process::exit(reason.exit_code());
}
