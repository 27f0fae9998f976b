//! `load-soothe-controller` entry point: parse flags, build the client, run.

use controller_kit::Shutdown;
use controller_kit::process::{self, Exit};
use load_soothe_controller::cli::{self, Cli, Command};
use load_soothe_controller::config::CONTROLLER_NAME;

fn main() {
    let cli = cli::parse();
    process::finish(CONTROLLER_NAME, real_main(cli));
}

#[tokio::main]
async fn real_main(cli: Cli) -> Result<i32, Exit> {
    if let Some(Command::Manifests(m)) = &cli.command {
        let yaml = load_soothe_controller::manifests::render(
            m.mode,
            m.admission,
            &m.namespace,
            &m.image,
            &m.datamovers,
            m.webhook_tls_secret.as_deref(),
        )?;
        process::write_stdout(&yaml).map_err(Exit::failure)?;
        return Ok(0);
    }
    controller_kit::telemetry::init_tracing(cli.common.log_format)?;
    let pod_name = std::env::var("POD_NAME").ok();
    let config = cli
        .to_config(
            pod_name.as_deref(),
            &controller_kit::args::default_identity(),
        )
        .map_err(Exit::usage)?;
    let client = controller_kit::args::kube_client(&cli.common).await?;
    let shutdown = Shutdown::new();
    shutdown.listen_for_signals()?;
    let reason = load_soothe_controller::run(client, config, shutdown)
        .await
        .map_err(Exit::failure)?;
    tracing::info!(%reason, "stopped");
    Ok(reason.exit_code())
}
