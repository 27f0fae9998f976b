//! One module per command. Each maps the inventory to its policy crate's
//! input, calls the crate, and builds the [`Output`]: the JSON document of
//! the issue-6 contract and a table.

mod report;

use std::io::Write;

use crate::Exit;
use crate::cli::{Command, GlobalArgs};
use crate::manifest::{Inventory, ManifestError};
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

/// A command that cannot produce a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// The input manifests are invalid.
    #[error(transparent)]
    Manifest(Box<ManifestError>),
    /// Another problem with the input, described for the user.
    #[error("{0}")]
    Input(String),
    /// Writing the output failed.
    #[error("cannot write the output: {0}")]
    Output(std::io::Error),
}

impl From<ManifestError> for CommandError {
    fn from(error: ManifestError) -> Self {
        Self::Manifest(Box::new(error))
    }
}

/// Runs a command over the inventory.
pub fn execute(
    command: &Command,
    global: &GlobalArgs,
    inventory: &Inventory,
    stderr: &mut dyn Write,
) -> Result<CommandResult, CommandError> {
    let _ = (global, stderr);
    match command {
        Command::Report => report::run(inventory).map(CommandResult::success),
    }
}
