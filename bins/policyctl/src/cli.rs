//! Command-line shape (a stable interface, issue 6): global input and output
//! options plus one subcommand per policy.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Every placement and admission policy, offline, over `kubectl get -o yaml`
/// output.
#[derive(Debug, Parser)]
#[command(name = "policyctl", version, about, long_about = None)]
pub struct Cli {
    /// Input and output options shared by every command.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to compute.
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Manifest file to read (YAML with one or many documents, JSON, or a
    /// `kind: List`); `-` reads standard input. Repeatable. Without any, the
    /// example cluster bundled in the binary is used.
    #[arg(
        short = 'f',
        long = "filename",
        global = true,
        env = "POLICYCTL_FILENAME",
        value_delimiter = ',',
        value_name = "FILE"
    )]
    pub filenames: Vec<String>,

    /// Output format.
    #[arg(
        short = 'o',
        long = "output",
        global = true,
        env = "POLICYCTL_OUTPUT",
        value_enum,
        default_value_t = OutputFormat::Table
    )]
    pub output: OutputFormat,

    /// Node-agent configuration: a ConfigMap manifest, or a file holding just
    /// the configuration JSON. Takes precedence over `--config-map`.
    #[arg(long, global = true, env = "POLICYCTL_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Name of the node-agent ConfigMap among the input objects.
    #[arg(
        long = "config-map",
        global = true,
        env = "POLICYCTL_CONFIG_MAP",
        default_value = "node-agent-config",
        value_name = "NAME"
    )]
    pub config_map: String,
}

/// Output formats of `-o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Tables for people (may evolve between releases).
    Table,
    /// JSON (a stable interface).
    Json,
    /// The same document as JSON, written as YAML.
    Yaml,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The whole picture in tables: everything the other commands compute.
    Report,
}

/// `NAMESPACE/NAME` of a namespaced object given on the command line.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl std::str::FromStr for ObjectRef {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.split_once('/') {
            Some((namespace, name))
                if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
            {
                Ok(Self {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                })
            }
            _ => Err(format!(
                "expected NAMESPACE/NAME (for example shop/web-0), got {text:?}"
            )),
        }
    }
}
