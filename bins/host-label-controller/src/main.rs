//! `host-label-controller`: parse arguments, build the client, run.

use clap::Parser;
use controller_kit::Shutdown;
use controller_kit::process::{self, Exit};
use host_label_controller::Config;
use host_label_controller::cli::{Cli, Command};
use host_label_controller::config::CONTROLLER_NAME;

fn main() {
    let cli = Cli::parse();
    process::finish(CONTROLLER_NAME, real_main(cli));
}

#[tokio::main]
async fn real_main(cli: Cli) -> Result<i32, Exit> {
    if let Some(Command::Manifests(m)) = &cli.command {
        let yaml = host_label_controller::manifests::render_with(
            &m.namespace,
            &m.image,
            host_label_controller::manifests::Features {
                sync_machine_labels: m.sync_machine_labels,
                audit_cluster_modules: m.audit_cluster_modules,
                all_clusters: m.all_clusters,
            },
        )?;
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
    let machines = match &cli.run.machines_kubeconfig {
        Some(path) => {
            let mut management = common.clone();
            management.kubeconfig = Some(path.clone());
            management.context.clone_from(&cli.run.machines_context);
            Some(controller_kit::args::kube_client(&management).await?)
        }
        None => None,
    };
    let shutdown = Shutdown::new();
    shutdown.listen_for_signals()?;
    let telemetry = host_label_controller::Telemetry::default();
    if cli.run.all_clusters {
        let reason = host_label_controller::run_all_clusters(client, config, shutdown, telemetry)
            .await
            .map_err(Exit::failure)?;
        tracing::info!(%reason, "stopped");
        return Ok(reason.exit_code());
    }
    let reason =
        host_label_controller::run_with_clients(client, machines, config, shutdown, telemetry)
            .await
            .map_err(Exit::failure)?;
    tracing::info!(%reason, "stopped");
    Ok(reason.exit_code())
}
