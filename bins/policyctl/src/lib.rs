//! `policyctl`: every placement and admission policy of this workspace,
//! offline, over the objects users already have (`kubectl get -o yaml`).
//!
//! The binary's `main` parses the command line into a [`Cli`] and calls
//! [`run`], which reads the manifests, maps the objects to the policy crates'
//! inputs and renders their decisions. policyctl implements no policy itself.
//!
//! Exit codes: 0 success; 1 invalid input or a policy error; 2 usage error
//! (clap reports most of those before [`run`] is called; [`run`] reports the
//! combinations clap cannot express, such as `hosts` in live mode); 3 an
//! answer built without a kind it depends on (forbidden or failed in live
//! mode), unless `--allow-partial` ([`completeness`]).
//!
//! Input comes from `-f` files, the bundled example cluster, or in live
//! mode (`--kubeconfig`, `--context`, `--live`) from a cluster, read-only
//! ([`live`]).
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod bundled;
pub mod byte_size;
mod cli;
pub mod commands;
pub mod completeness;
mod error;
pub mod host_source;
pub mod html;
pub mod input;
pub mod live;
pub mod manifest;
pub mod output;
pub mod plugin;
pub mod reading;
pub mod release;
pub mod rules;
pub mod timeout;

use std::io::{Read, Write};

pub use cli::{
    AffinityArgs, CapacityArgs, Cli, Command, ConfigAction, ConfigMapRef, DiagnoseArgs, GlobalArgs,
    HostLabelsAction, HostLabelsArgs, HostsAction, NodeOsArg, ObjectRef, QueueArgs, ScheduleArgs,
    SootheArgs, SootheMode, VnfAction, VnfPlanArgs, VnfdArgs, WorkloadKind, WorkloadRef,
};
pub use error::CommandError;
pub use output::OutputFormat;

use manifest::Inventory;

/// Stack size of the thread `main` runs [`run`] on: enough for input nested
/// as deep as the reader allows ([`manifest::text::MAX_DEPTH`]) in a debug
/// build, whatever the platform's default for the main thread.
pub const STACK_BYTES: usize = 64 << 20;

/// The process exit status of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Success,
    /// 1: invalid input or a policy error.
    Failure,
    /// 2: usage error.
    Usage,
    /// 3: the answer (or the error) depends on a kind that could not be
    /// read; the output says which (not with `--allow-partial`).
    Incomplete,
}

impl Exit {
    /// The numeric exit code.
    pub fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::Failure => 1,
            Self::Usage => 2,
            Self::Incomplete => 3,
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        Self::from(exit.code())
    }
}

/// Runs one command: reads the input (`-f` files, standard input for `-`,
/// or the bundled example cluster), computes, and writes the result to
/// `stdout`; notes and errors go to `stderr`.
pub fn run(cli: Cli, stdin: &mut dyn Read, stdout: &mut dyn Write, stderr: &mut dyn Write) -> Exit {
    match try_run(&cli, stdin, stdout, stderr) {
        Ok(exit) => exit,
        Err(Failed::Incomplete { error, missing }) => {
            let _ = writeln!(
                stderr,
                "error: {error} (the input is incomplete: {missing})"
            );
            if cli.global.allow_partial {
                Exit::Failure
            } else {
                Exit::Incomplete
            }
        }
        Err(Failed::Error(error)) => report_error(error, stderr),
    }
}

/// Why a run ended without an answer.
enum Failed {
    /// An error.
    Error(CommandError),
    /// An error of a command whose input lacks kinds it depends on, which
    /// may be the cause.
    Incomplete {
        error: CommandError,
        missing: String,
    },
}

impl From<CommandError> for Failed {
    fn from(error: CommandError) -> Self {
        Self::Error(error)
    }
}

fn report_error(error: CommandError, stderr: &mut dyn Write) -> Exit {
    match error {
        CommandError::Usage(message) => {
            let _ = writeln!(
                stderr,
                "error: {message}\n\nFor more information, try '--help'."
            );
            Exit::Usage
        }
        error => {
            // If standard error is gone there is nowhere left to report to.
            let _ = writeln!(stderr, "error: {error}");
            Exit::Failure
        }
    }
}

/// The HTML page of a command, if it has one.
fn page_of(command: &Command) -> Option<html::Page> {
    match command {
        Command::Report(_) => Some(html::Page::Report),
        Command::Schedule(_) => Some(html::Page::Schedule),
        Command::Diagnose(_) => Some(html::Page::Diagnose),
        Command::Capacity(_) => Some(html::Page::Capacity),
        _ => None,
    }
}

fn try_run(
    cli: &Cli,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<Exit, Failed> {
    let page = page_of(&cli.command);
    if cli.global.output == OutputFormat::Html && page.is_none() {
        return Err(CommandError::Usage(format!(
            "-o html is available for {} only; use -o table, json or yaml",
            html::PAGE_COMMANDS
        ))
        .into());
    }
    if let Command::HostLabels(HostLabelsArgs {
        action: Some(HostLabelsAction::Sanitize { value }),
        ..
    }) = &cli.command
    {
        // Needs no input objects.
        let output = commands::sanitize(value);
        emit(cli.global.output, &output, stdout)?;
        return Ok(Exit::Success);
    }
    if let Command::Rbac(args) = &cli.command {
        // Needs no input objects either.
        let output = live::rbac::run(args, &cli.global).map_err(CommandError::Input)?;
        emit(cli.global.output, &output, stdout)?;
        return Ok(Exit::Success);
    }
    if let Command::Vnf { action } = &cli.command {
        // Reads the VNFD and OpenStack listings, and Nodes only from -f.
        return commands::vnf::run(action, &cli.global, stdin, stdout, stderr)
            .map_err(Failed::from);
    }
    let mut inventory = if live::requested(&cli.global) {
        live::load(&cli.global, &cli.command, stderr)?
    } else {
        live::check_file_mode(&cli.global)?;
        if reads_only_the_config_file(&cli.command, &cli.global) {
            // `--config FILE config check`: the example cluster has
            // nothing this command reads.
            Inventory::default()
        } else {
            load_input(&cli.global, stdin, stderr)?
        }
    };
    if live::kinds::reads_host_inventory(&cli.command) {
        host_source::adopt(&mut inventory, &cli.global)?;
    }
    inventory.kubernetes = release::resolve(
        cli.global.kubernetes_version,
        inventory.server_version.as_ref(),
        stderr,
    );
    let completeness = completeness::Completeness::of(&cli.command, &cli.global, &inventory);
    let mut result = match commands::execute(&cli.command, &cli.global, &inventory, stderr) {
        Ok(result) => result,
        Err(error @ CommandError::Usage(_)) => return Err(error.into()),
        Err(error) => {
            return Err(match completeness.filter(|c| !c.is_complete()) {
                Some(completeness) => Failed::Incomplete {
                    error,
                    missing: completeness.missing_summary(),
                },
                None => Failed::Error(error),
            });
        }
    };
    if live::kinds::simulates_scheduler(&cli.command)
        && let serde_json::Value::Object(document) = &mut result.output.document
    {
        document.insert("kubernetesVersion".to_owned(), inventory.kubernetes.json());
    }
    let allow_partial = cli.global.allow_partial;
    if let Some(completeness) = &completeness {
        completeness.annotate(&mut result.output, allow_partial);
        if !completeness.is_complete() && !allow_partial && result.exit == Exit::Success {
            result.exit = Exit::Incomplete;
        }
    }
    match page.filter(|_| cli.global.output == OutputFormat::Html) {
        Some(page) => {
            let text = html::command_page(page, &result.output.document);
            write_all(text.as_bytes(), stdout)?;
        }
        None => emit(cli.global.output, &result.output, stdout)?,
    }
    Ok(result.exit)
}

/// Writes bytes to `stdout` as [`emit`] does (a reader gone away is not an
/// error).
fn write_all(bytes: &[u8], stdout: &mut dyn Write) -> Result<(), CommandError> {
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(CommandError::Output),
    }
}

/// Writes the result to `stdout`. A reader that has gone away (`policyctl
/// report | head -1`: `EPIPE`) is not an error: the rest of the output was
/// not wanted, so the run ends quietly with the command's own exit status,
/// as `kubectl get … | head -1` ends quietly.
fn emit(
    format: OutputFormat,
    output: &output::Output,
    stdout: &mut dyn Write,
) -> Result<(), CommandError> {
    match output::write(format, output, stdout).and_then(|()| stdout.flush()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(CommandError::Output),
    }
}

/// Whether `command` reads nothing but the node-agent configuration, given
/// here by `--config` without `-f`: then no objects are read (not even the
/// bundled example cluster's) and no note is printed.
fn reads_only_the_config_file(command: &Command, global: &GlobalArgs) -> bool {
    global.config.is_some()
        && global.filenames.is_empty()
        && matches!(live::kinds::needs(command), live::Needs::Kinds(kinds) if kinds == [live::Kind::ConfigMap])
}

/// Reads the `-f` files (or the bundled example cluster when there are
/// none) and prints the notes about ignored kinds to `stderr`.
pub fn load_input(
    global: &GlobalArgs,
    stdin: &mut dyn Read,
    stderr: &mut dyn Write,
) -> Result<Inventory, CommandError> {
    let sources = if global.filenames.is_empty() {
        let note = match &global.config {
            Some(config) => format!(
                "note: no -f given: the objects are those of the example cluster bundled in policyctl (the files of examples/cluster/), the node-agent configuration is {}'s; give -f to read your cluster's objects",
                config.display()
            ),
            None => "note: no -f given: using the example cluster bundled in policyctl (the files of examples/cluster/)".to_owned(),
        };
        let _ = writeln!(stderr, "{note}");
        bundled::example_sources()
    } else {
        input::read_all(
            &global.filenames,
            input::ReadOptions {
                recursive: global.recursive,
                max_input_bytes: global.max_input_bytes.0,
            },
            stdin,
        )?
    };
    let inventory = manifest::read_sources(&sources)?;
    for note in inventory.ignored_notes() {
        let _ = writeln!(stderr, "{note}");
    }
    Ok(inventory)
}
