//! `controller-scale`: measures the controllers at scale on the real API
//! server of the test bed and prints the figures as Markdown tables (see
//! the library's documentation for what is measured).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use controller_scale::{Controller, Options, measure};

/// Measures backup-queue-controller, load-soothe-controller and
/// host-label-controller at scale on the real kube-apiserver of the test
/// bed (`bash testbed/build.sh`): peak memory, API requests per event,
/// LISTs after the initial ones, event-to-write latency and convergence
/// after a restart. Build the controllers first (`cargo build --release
/// -p backup-queue-controller -p load-soothe-controller -p
/// host-label-controller`).
#[derive(Debug, Parser)]
#[command(name = "controller-scale", version)]
struct Cli {
    /// Controllers to measure (repeat or comma-separate; default: all).
    #[arg(
        long = "controller",
        value_enum,
        value_delimiter = ',',
        env = "SCALE_CONTROLLERS"
    )]
    controllers: Vec<Controller>,
    /// Directory of the controller binaries (default: the directory of
    /// this program, e.g. target/release).
    #[arg(long, env = "SCALE_BIN_DIR")]
    bin_dir: Option<PathBuf>,
    /// Full size for every controller instead of its own (10,000 Backups,
    /// 20,000 DataUploads, 5,000 Machines and Nodes).
    #[arg(long, env = "SCALE_SIZE")]
    size: Option<usize>,
    /// Sizes measured, as fractions of the full size.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0.1,0.5,1",
        env = "SCALE_FRACTIONS"
    )]
    fractions: Vec<f64>,
    /// Events made at each size, at --event-rate.
    #[arg(long, default_value_t = 200, env = "SCALE_EVENTS")]
    events: usize,
    /// Events per second.
    #[arg(long, default_value_t = 10.0, env = "SCALE_EVENT_RATE")]
    event_rate: f64,
    /// Completions of the running Backup (each renumbers the queue), one
    /// at a time, at each size.
    #[arg(long, default_value_t = 3, env = "SCALE_SLOW_EVENTS")]
    slow_events: usize,
    /// Changes made while the controller is stopped, before its restart.
    #[arg(long, default_value_t = 100, env = "SCALE_RESTART_CHANGES")]
    restart_changes: usize,
    /// Requests in flight while creating objects.
    #[arg(long, default_value_t = 16, env = "SCALE_CREATE_CONCURRENCY")]
    create_concurrency: usize,
    /// Percentage of the Backups created New (queued); the rest are
    /// Completed.
    #[arg(long, default_value_t = 10, env = "SCALE_QUEUED_PERCENT")]
    queued_percent: u32,
    /// Nodes the DataUploads were accepted on.
    #[arg(long, default_value_t = 500, env = "SCALE_NODES")]
    nodes: usize,
    /// Seconds any one wait (readiness, convergence) may take.
    #[arg(long, default_value_t = 900, env = "SCALE_TIMEOUT_SECONDS")]
    timeout_seconds: u64,
    /// Also write every figure as JSON to this file.
    #[arg(long, env = "SCALE_JSON")]
    json: Option<PathBuf>,
}

impl Cli {
    fn options(&self) -> anyhow::Result<Options> {
        let bin_dir = match &self.bin_dir {
            Some(dir) => dir.clone(),
            None => std::env::current_exe()
                .context("cannot find this program's path")?
                .parent()
                .context("this program's path has no directory")?
                .to_owned(),
        };
        let mut fractions = self.fractions.clone();
        if fractions.iter().any(|f| !(*f > 0.0 && *f <= 1.0)) {
            anyhow::bail!("--fractions must lie in (0, 1], not {fractions:?}");
        }
        fractions.sort_by(f64::total_cmp);
        Ok(Options {
            controllers: if self.controllers.is_empty() {
                Controller::ALL.to_vec()
            } else {
                self.controllers.clone()
            },
            bin_dir,
            size: self.size,
            fractions,
            events: self.events,
            event_rate: self.event_rate,
            slow_events: self.slow_events,
            restart_changes: self.restart_changes,
            create_concurrency: self.create_concurrency,
            queued_percent: self.queued_percent,
            nodes: self.nodes,
            timeout: Duration::from_secs(self.timeout_seconds),
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let options = cli.options()?;
    println!(
        "controller-scale {} on {} cores, {}; load average at start {}\n",
        env!("CARGO_PKG_VERSION"),
        controller_scale::system::cores(),
        jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M UTC"),
        controller_scale::system::loadavg()
    );
    let mut reports = Vec::new();
    for &controller in &options.controllers {
        let mut progress = |line: &str| {
            eprintln!(
                "[{}] {line} (load {})",
                jiff::Timestamp::now().strftime("%H:%M:%S"),
                controller_scale::system::loadavg()
            );
        };
        let report = measure(controller, &options, &mut progress).await?;
        println!("{}", report.markdown());
        reports.push(report);
    }
    if let Some(path) = &cli.json {
        let text = serde_json::to_string_pretty(&reports)?;
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn fractions_outside_zero_to_one_are_refused() {
        let cli = Cli::parse_from(["controller-scale", "--fractions", "0.5,2"]);
        assert!(cli.options().is_err());
        let cli = Cli::parse_from(["controller-scale", "--controller", "host-label,load-soothe"]);
        let options = cli.options().unwrap();
        assert_eq!(
            options.controllers,
            [Controller::HostLabel, Controller::LoadSoothe]
        );
    }
}
