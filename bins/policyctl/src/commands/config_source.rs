//! Where the node-agent configuration comes from: `--config FILE` (a
//! ConfigMap manifest or the bare configuration JSON), else the ConfigMap
//! named by `--config-map` among the input objects, else Velero's defaults.

use std::io::Write;

use affinity_translate::{LoadError, Loaded, NodeAgentConfig, load_config_map, load_json};
use serde_json::Value;

use crate::cli::GlobalArgs;
use crate::commands::CommandError;
use crate::manifest::{Inventory, parse_documents, read_str};

/// The configuration the commands use, with where it came from.
#[derive(Clone, Debug)]
pub struct ConfigInput {
    /// Where it came from, for messages (`--config FILE`, `ConfigMap
    /// velero/node-agent-config`, or Velero's defaults).
    pub origin: String,
    /// The loaded configuration, or why Velero's node-agent would refuse it.
    pub loaded: Result<Loaded, LoadError>,
}

impl ConfigInput {
    /// The configuration, or an error for commands that need one.
    pub fn config(&self) -> Result<&NodeAgentConfig, CommandError> {
        match &self.loaded {
            Ok(loaded) => Ok(&loaded.config),
            Err(error) => Err(CommandError::Input(format!(
                "the node-agent configuration ({}) cannot be loaded: {error}",
                self.origin
            ))),
        }
    }
}

/// Resolves the configuration for this run. A note on `stderr` says when
/// Velero's defaults are used.
pub fn resolve(
    global: &GlobalArgs,
    inventory: &Inventory,
    stderr: &mut dyn Write,
) -> Result<ConfigInput, CommandError> {
    if let Some(path) = &global.config {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| {
            CommandError::Input(format!("--config {name}: cannot read the file: {error}"))
        })?;
        return from_file(&name, &text);
    }
    let matches: Vec<_> = inventory
        .config_maps
        .iter()
        .filter(|(key, _)| key.name == global.config_map)
        .collect();
    match matches.as_slice() {
        [] => {
            let _ = writeln!(
                stderr,
                "note: no ConfigMap named {} in the input and no --config: using Velero's default node-agent configuration",
                global.config_map
            );
            Ok(ConfigInput {
                origin: "Velero's defaults".to_owned(),
                loaded: Ok(Loaded {
                    config: NodeAgentConfig::default(),
                    findings: Vec::new(),
                }),
            })
        }
        [(key, located)] => Ok(ConfigInput {
            origin: format!("ConfigMap {key} ({})", located.origin),
            loaded: load_config_map(&located.object),
        }),
        several => Err(CommandError::Input(format!(
            "ConfigMap {} is in several namespaces ({}); choose one with --config FILE",
            global.config_map,
            several
                .iter()
                .map(|(key, _)| key.namespace.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// A `--config` file: a single ConfigMap manifest (YAML or JSON), or the
/// configuration JSON itself.
pub fn from_file(name: &str, text: &str) -> Result<ConfigInput, CommandError> {
    if let Ok(documents) = parse_documents(name, text) {
        let objects: Vec<&Value> = documents.iter().filter(|d| !d.is_null()).collect();
        if let [document] = objects.as_slice()
            && document.get("kind").and_then(Value::as_str) == Some("ConfigMap")
            && document.get("apiVersion").and_then(Value::as_str) == Some("v1")
        {
            let inventory = read_str(name, text)?;
            if let Some((key, located)) = inventory.config_maps.iter().next() {
                return Ok(ConfigInput {
                    origin: format!("--config {name} (ConfigMap {key})"),
                    loaded: load_config_map(&located.object),
                });
            }
        }
    }
    Ok(ConfigInput {
        origin: format!("--config {name}"),
        loaded: load_json(text),
    })
}
