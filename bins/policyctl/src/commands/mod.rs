//! One module per command. Each maps the inventory to its policy crate's
//! input, calls the crate, and builds the [`Output`]: the JSON document of
//! the `-o json` contract (docs/policyctl.md) and a table.

mod affinity;
mod capacity;
mod concurrency;
mod config_check;
mod config_source;
mod devices;
mod diagnose;
mod host_labels;
mod hosts;
mod maintenance;
mod modules;
mod placement;
mod queue;
mod render;
mod report;
mod restore_cache;
mod schedule;
mod scheduling;
mod soothe;
pub mod vnf;

use std::io::Write;

use crate::Exit;
use kube_scheduler_sim::Options;

use crate::cli::{Command, ConfigAction, GlobalArgs, HostLabelsAction};
use crate::manifest::Inventory;
use crate::output::Output;

/// What a command produced and how the process should exit.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandResult {
    /// The rendered result.
    pub output: Output,
    /// Exit status (e.g. `config check` exits 1 on errors but still prints).
    pub exit: Exit,
}

impl CommandResult {
    /// A successful result.
    pub fn success(output: Output) -> Self {
        Self {
            output,
            exit: Exit::Success,
        }
    }
}

pub use crate::error::CommandError;
pub use soothe::DataMovers;

/// `host-labels sanitize VALUE`, which reads no input.
pub fn sanitize(value: &str) -> Output {
    host_labels::run_sanitize(value)
}

/// Exit 1 (with the reason on `stderr`) when the configuration does not
/// load: Velero's node-agent would not start, so no answer holds.
fn refused_config_exit(config: &config_source::ConfigInput, stderr: &mut dyn Write) -> Exit {
    match config.config() {
        Ok(_) => Exit::Success,
        Err(error) => {
            let _ = writeln!(stderr, "error: {error}");
            Exit::Failure
        }
    }
}

/// Runs a command over the inventory.
pub fn execute(
    command: &Command,
    global: &GlobalArgs,
    inventory: &Inventory,
    stderr: &mut dyn Write,
) -> Result<CommandResult, CommandError> {
    match command {
        Command::Config {
            action: ConfigAction::Check { strict },
        } => {
            let config = config_source::resolve(global, inventory, stderr)?;
            let mut result = config_check::run(&config, *strict)?;
            maintenance::append_check(
                &mut result,
                global.maintenance_config_map.as_ref(),
                inventory,
                *strict,
            )?;
            Ok(result)
        }
        Command::Concurrency => {
            let config = config_source::resolve(global, inventory, stderr)?;
            concurrency::run(config.config()?, inventory).map(CommandResult::success)
        }
        Command::Affinity(args) => {
            let config = config_source::resolve(global, inventory, stderr)?;
            let direction = if args.restore {
                affinity::Direction::Restore
            } else {
                affinity::Direction::Backup
            };
            affinity::run(
                config.config()?,
                inventory,
                &args.pvc,
                direction,
                args.node_os,
            )
            .map(CommandResult::success)
        }
        Command::Queue(args) => queue::run(
            inventory,
            queue::ConcurrentBackups::new(args.concurrent_backups),
            stderr,
        )
        .map(CommandResult::success),
        Command::Soothe(args) => {
            let config = config_source::resolve(global, inventory, stderr)?;
            let movers = DataMovers::from_args(&args.datamovers);
            soothe::run(config.config()?, inventory, args.mode, &movers, stderr)
                .map(CommandResult::success)
        }
        Command::Schedule(args) => {
            let options = Options {
                hard_pod_affinity_weight: args.hard_pod_affinity_weight,
                ignore_preferred_terms_of_existing_pods: args
                    .ignore_preferred_terms_of_existing_pods,
                score_all_nodes: args.score_all_nodes,
                added_affinity: read_added_affinity(args.added_affinity.as_deref())?,
                ..inventory.kubernetes.options()
            };
            match &args.pod {
                // The document names its pod (the page of `-o html` shows it).
                Some(pod) => schedule::run_one(inventory, pod, &options).map(|mut output| {
                    if let serde_json::Value::Object(document) = &mut output.document {
                        document.insert("pod".to_owned(), serde_json::json!(pod.to_string()));
                    }
                    output
                }),
                None => schedule::run_all(inventory, &options),
            }
            .map(CommandResult::success)
        }
        Command::Capacity(args) => capacity::run(inventory, args).map(CommandResult::success),
        Command::Hosts { action } => hosts::run(inventory, action).map(CommandResult::success),
        Command::HostLabels(args) => match &args.action {
            Some(HostLabelsAction::Sanitize { value }) => {
                Ok(CommandResult::success(host_labels::run_sanitize(value)))
            }
            None => {
                let sync = args
                    .sync_machine_labels
                    .then(|| host_labels::machine_sync(&args.additional_sync_machine_labels))
                    .transpose()?;
                host_labels::run(inventory, &args.keys, sync.as_ref(), stderr)
                    .map(CommandResult::success)
            }
        },
        Command::Diagnose(args) => {
            let config = config_source::resolve(global, inventory, stderr)?;
            let options = Options {
                added_affinity: read_added_affinity(args.added_affinity.as_deref())?,
                ..inventory.kubernetes.options()
            };
            diagnose::run(config.config()?, inventory, &args.pod, &options)
                .map(CommandResult::success)
        }
        Command::Maintenance => {
            maintenance::run(global.maintenance_config_map.as_ref(), inventory, stderr)
                .map(CommandResult::success)
        }
        Command::Modules(args) => {
            modules::run(inventory, args.cluster.as_ref()).map(CommandResult::success)
        }
        Command::Vnf { .. } => Err(CommandError::Usage(
            "vnf commands read no cluster objects; they run before the input is read".to_owned(),
        )),
        Command::Rbac(args) => crate::live::rbac::run(args, global)
            .map(CommandResult::success)
            .map_err(CommandError::Input),
        Command::Report(args) => {
            let config = config_source::resolve(global, inventory, stderr)?;
            let options = report::Options {
                concurrent_backups: queue::ConcurrentBackups::new(args.concurrent_backups),
                soothe_mode: args.soothe_mode,
                data_movers: DataMovers::from_args(&args.datamovers),
                maintenance_config_map: global.maintenance_config_map.clone(),
                vnf: args.vnf_plan(),
            };
            let output = report::run(&config, inventory, &options, stderr)?;
            Ok(CommandResult {
                output,
                exit: refused_config_exit(&config, stderr),
            })
        }
    }
}

/// `--added-affinity FILE`: a NodeAffinity (YAML or JSON) as in
/// kube-scheduler's NodeAffinityArgs `addedAffinity`, checked the way
/// kube-scheduler checks its configuration.
fn read_added_affinity(
    path: Option<&std::path::Path>,
) -> Result<Option<k8s_openapi::api::core::v1::NodeAffinity>, CommandError> {
    let Some(path) = path else { return Ok(None) };
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|error| CommandError::Input(format!("--added-affinity {shown}: {error}")))?;
    let affinity: k8s_openapi::api::core::v1::NodeAffinity = serde_saphyr::from_str(&text)
        .map_err(|error| CommandError::Input(format!("--added-affinity {shown}: {error}")))?;
    let options = Options {
        added_affinity: Some(affinity),
        ..Options::default()
    };
    options
        .validate()
        .map_err(|error| CommandError::Input(format!("--added-affinity {shown}: {error}")))?;
    Ok(options.added_affinity)
}
