//! `backup-queue-controller`: parse arguments, build the client, run.

use backup_queue_controller::cli::{Cli, Command};
use backup_queue_controller::config::CONTROLLER_NAME;
use backup_queue_controller::{Config, Error};
use clap::Parser;
use controller_kit::Shutdown;
use controller_kit::process::{self, Exit};

fn main() {
    let cli = Cli::parse();
    process::finish(CONTROLLER_NAME, real_main(cli));
}

fn exit(error: Error) -> Exit {
    match error {
        Error::Kit(kit) => kit.into(),
        error => Exit::failure(error),
    }
}

#[tokio::main]
async fn real_main(cli: Cli) -> Result<i32, Exit> {
    if let Some(Command::Manifests(m)) = &cli.command {
        let yaml = backup_queue_controller::manifests::render(m.scope, &m.namespace, &m.image)?;
        process::write_stdout(&yaml).map_err(Exit::failure)?;
        return Ok(0);
    }
    let common = &cli.run.common;
    controller_kit::telemetry::init_tracing(common.log_format)?;
    let pod_namespace = std::env::var("POD_NAMESPACE").ok();
    let identity = controller_kit::args::default_identity();
    let config =
        Config::from_args(&cli.run, pod_namespace.as_deref(), &identity).map_err(Exit::usage)?;
    let client = controller_kit::args::kube_client(common).await?;
    let shutdown = Shutdown::new();
    shutdown.listen_for_signals()?;
    let reason = backup_queue_controller::run(client, config, shutdown)
        .await
        .map_err(exit)?;
    tracing::info!(%reason, "stopped");
    Ok(reason.exit_code())
}
