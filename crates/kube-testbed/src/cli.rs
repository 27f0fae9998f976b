//! `kube-testbed up`: a bed for people.

use std::io::Write;

use crate::testbed::Testbed;

/// The command line of `kube-testbed`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "kube-testbed",
    about = "Runs the real control plane of the test bed on loopback",
    long_about = "Runs the real control plane of the test bed (built by `bash testbed/build.sh`) \
                  on loopback until Ctrl-C or SIGTERM. The bed is found at $KUBE_TESTBED_DIR, \
                  else under the cargo target directory."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Start a bed, print its kubeconfig, and run until Ctrl-C or SIGTERM.
    Up(UpArgs),
}

/// The options of `up`.
#[derive(Debug, clap::Args)]
pub struct UpArgs {
    /// Also run kube-scheduler.
    #[arg(long, env = "KUBE_TESTBED_SCHEDULER")]
    pub scheduler: bool,
    /// Also run kube-controller-manager.
    #[arg(long, env = "KUBE_TESTBED_CONTROLLER_MANAGER")]
    pub controller_manager: bool,
    /// Also run the Velero server (namespace `velero`, its CRDs applied).
    #[arg(long, env = "KUBE_TESTBED_VELERO")]
    pub velero: bool,
}

/// Runs the command; the process's exit code.
pub async fn run(cli: Cli) -> std::process::ExitCode {
    match cli.command {
        Command::Up(args) => up(args).await,
    }
}

async fn up(args: UpArgs) -> std::process::ExitCode {
    let mut builder = Testbed::builder();
    if args.scheduler {
        builder = builder.with_scheduler();
    }
    if args.controller_manager {
        builder = builder.with_controller_manager();
    }
    if args.velero {
        builder = builder.with_velero();
    }
    let bed = match builder.start().await {
        Ok(bed) => bed,
        Err(error) => {
            eprintln!("kube-testbed: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    let kubeconfig = bed.kubeconfig_path().display();
    let mut lines = vec![
        format!(
            "kube-testbed: kube-apiserver {} at {}",
            bed.versions().kubernetes,
            bed.server_url()
        ),
        format!("kube-testbed: directory {}", bed.dir().display()),
    ];
    for (component, took) in bed.startup_times() {
        let pid = bed
            .pid(*component)
            .map(|pid| pid.to_string())
            .unwrap_or_default();
        lines.push(format!(
            "kube-testbed: {component} ready in {:.1} s (pid {pid}, log {})",
            took.as_secs_f64(),
            bed.log_path(*component)
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ));
    }
    lines.push(format!("kubeconfig: {kubeconfig}"));
    lines.push(format!("export KUBECONFIG={kubeconfig}"));
    lines.push("kube-testbed: running until Ctrl-C or SIGTERM".to_owned());
    for line in lines {
        // A closed stdout (a pipe whose reader left) must not stop the bed.
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
    drop(out);
    wait_for_signal().await;
    eprintln!("kube-testbed: stopping");
    drop(bed);
    std::process::ExitCode::SUCCESS
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
