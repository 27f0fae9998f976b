//! Where the node-agent configuration comes from: `--config FILE` (a
//! ConfigMap manifest or the bare configuration JSON), else the ConfigMap
//! named by `--config-map` among the input objects, else Velero's defaults.

use std::io::Write;

use affinity_translate::{
    LoadError, Loaded, NodeAgentConfig, VeleroVersion, load_config_map_at, load_json_at,
};
use serde_json::Value;

use crate::cli::{ConfigMapRef, DEFAULT_CONFIG_MAP, GlobalArgs};
use crate::commands::CommandError;
use crate::live::Kind;
use crate::manifest::{Inventory, Located, ObjectKey, parse_documents, read_str};
use k8s_openapi::api::core::v1::ConfigMap;

/// The configuration the commands use, with where it came from.
#[derive(Clone, Debug)]
pub struct ConfigInput {
    /// Where it came from, for messages (`--config FILE`, `ConfigMap
    /// velero/node-agent-config`, or Velero's defaults).
    pub origin: String,
    /// The loaded configuration, or why Velero's node-agent would refuse it.
    pub loaded: Result<Loaded, LoadError>,
    /// The Velero version it is read for.
    pub velero: VersionInput,
}

/// The Velero version whose behaviour the answers follow, and where it
/// came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionInput {
    /// The version.
    pub version: VeleroVersion,
    /// Where it came from, for the output: `--velero-version`, the image of
    /// the Velero Deployment, or the default.
    pub origin: String,
}

impl VersionInput {
    /// `--velero-version` when given, else the release tag of the Velero
    /// server Deployment's image in the input (a Deployment `velero` with a
    /// container `velero`, as Velero's install creates it; all such agree),
    /// else the newest release.
    pub fn of(global: &GlobalArgs, inventory: &Inventory) -> Self {
        if let Some(version) = global.velero_version {
            return Self {
                version,
                origin: "--velero-version".to_owned(),
            };
        }
        let mut found: Vec<(String, VeleroVersion)> = inventory
            .deployments
            .iter()
            .filter(|(key, _)| key.name == "velero")
            .filter_map(|(key, located)| {
                let spec = located.object.spec.as_ref()?.template.spec.as_ref()?;
                let container = spec.containers.iter().find(|c| c.name == "velero")?;
                let version = VeleroVersion::from_image(container.image.as_deref()?)?;
                Some((key.to_string(), version))
            })
            .collect();
        found.dedup_by_key(|(_, version)| *version);
        match found.as_slice() {
            [(deployment, version)] => Self {
                version: *version,
                origin: format!("the image of Deployment {deployment}"),
            },
            _ => Self {
                version: VeleroVersion::NEWEST_RELEASE,
                origin: "the newest release; set --velero-version".to_owned(),
            },
        }
    }
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
    let velero = VersionInput::of(global, inventory);
    if let Some(path) = &global.config {
        let name = path.display().to_string();
        let text = crate::input::read_one(path, global.max_input_bytes.0)
            .map_err(|error| CommandError::Input(format!("--config {error}")))?;
        return from_file(&name, &text, global.config_map.as_ref(), velero);
    }
    let wanted = global.config_map.clone().unwrap_or_else(|| ConfigMapRef {
        namespace: None,
        name: DEFAULT_CONFIG_MAP.to_owned(),
    });
    let matches: Vec<_> = inventory
        .config_maps
        .iter()
        .filter(|(key, _)| wanted.matches(&key.namespace, &key.name))
        .collect();
    // ConfigMaps the user may not list (or whose listing failed) are not
    // absent: the configuration is unknown, not Velero's defaults.
    let unread = inventory
        .reading
        .unread(Kind::ConfigMap.reading_key())
        .filter(|unread| unread.status.is_missing());
    match (matches.as_slice(), unread) {
        ([], Some(unread)) if global.config_map.is_some() => Err(CommandError::Input(format!(
            "--config-map {wanted}: cannot tell whether it exists: {} could not be listed ({}); give the configuration with --config FILE, or let the user list ConfigMaps (policyctl rbac)",
            unread.what,
            unread.status.name()
        ))),
        ([], Some(unread)) => {
            let _ = writeln!(
                stderr,
                "note: cannot tell whether ConfigMap {wanted} exists: {} could not be listed ({}); the node-agent configuration is unknown and answers assume Velero's defaults (give it with --config FILE)",
                unread.what,
                unread.status.name()
            );
            Ok(ConfigInput {
                origin: format!(
                    "unknown: {} could not be listed ({}); Velero's defaults are assumed",
                    unread.what,
                    unread.status.name()
                ),
                loaded: Ok(Loaded {
                    config: NodeAgentConfig::default(),
                    findings: Vec::new(),
                }),
                velero,
            })
        }
        (matches, _) => resolve_among(global, inventory, &wanted, matches, velero, stderr),
    }
}

/// [`resolve`] when the ConfigMaps could be read: the one wanted among
/// `matches`, or Velero's defaults when there is none.
fn resolve_among(
    global: &GlobalArgs,
    inventory: &Inventory,
    wanted: &ConfigMapRef,
    matches: &[(&ObjectKey, &Located<ConfigMap>)],
    velero: VersionInput,
    stderr: &mut dyn Write,
) -> Result<ConfigInput, CommandError> {
    match matches {
        [] if global.config_map.is_some() => Err(CommandError::Input(format!(
            "--config-map {wanted}: no such ConfigMap in the input ({}); add it with -f, or give the configuration with --config FILE",
            config_map_names(inventory)
        ))),
        [] => {
            let _ = writeln!(
                stderr,
                "note: no ConfigMap named {wanted} in the input and no --config: using Velero's default node-agent configuration"
            );
            Ok(ConfigInput {
                origin: "Velero's defaults".to_owned(),
                loaded: Ok(Loaded {
                    config: NodeAgentConfig::default(),
                    findings: Vec::new(),
                }),
                velero,
            })
        }
        [(key, located)] => Ok(ConfigInput {
            origin: format!("ConfigMap {key} ({})", located.origin),
            loaded: load_config_map_at(&located.object, velero.version),
            velero,
        }),
        several => Err(CommandError::Input(format!(
            "ConfigMap {} is in several namespaces ({}); choose one with --config-map NAMESPACE/{}",
            wanted.name,
            several
                .iter()
                .map(|(key, _)| key.namespace.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            wanted.name
        ))),
    }
}

/// The ConfigMaps of an inventory, for messages.
fn config_map_names(inventory: &Inventory) -> String {
    if inventory.config_maps.is_empty() {
        return "it has no ConfigMap".to_owned();
    }
    format!(
        "ConfigMaps read: {}",
        inventory
            .config_maps
            .keys()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A `--config` file: Kubernetes manifests (a ConfigMap, or a `kind: List`
/// or several documents holding ConfigMaps, of which the one `--config-map`
/// names is used, or the only one), or the configuration JSON itself.
pub fn from_file(
    name: &str,
    text: &str,
    wanted: Option<&ConfigMapRef>,
    velero: VersionInput,
) -> Result<ConfigInput, CommandError> {
    let is_manifest = parse_documents(name, text).is_ok_and(|documents| {
        documents.iter().any(|document| {
            document
                .value
                .get("apiVersion")
                .is_some_and(Value::is_string)
                && document.value.get("kind").is_some_and(Value::is_string)
        })
    });
    if !is_manifest {
        return Ok(ConfigInput {
            origin: format!("--config {name}"),
            loaded: load_json_at(text, velero.version),
            velero,
        });
    }
    let inventory = read_str(name, text)?;
    let candidates: Vec<_> = inventory
        .config_maps
        .iter()
        .filter(|(key, _)| wanted.is_none_or(|wanted| wanted.matches(&key.namespace, &key.name)))
        .collect();
    let chosen = match candidates.as_slice() {
        [only] => *only,
        [] => {
            return Err(CommandError::Input(format!(
                "--config {name}: {}; {}",
                match wanted {
                    Some(wanted) => format!("no ConfigMap {wanted} in the file"),
                    None => "the file holds Kubernetes objects but no ConfigMap".to_owned(),
                },
                config_map_names(&inventory)
            )));
        }
        several => {
            // Several ConfigMaps: the default name decides, else ask.
            let default: Vec<_> = several
                .iter()
                .filter(|(key, _)| wanted.is_none() && key.name == DEFAULT_CONFIG_MAP)
                .collect();
            match default.as_slice() {
                [only] => **only,
                _ => {
                    // Name the ones that make the choice ambiguous.
                    let names: Vec<String> = if default.is_empty() {
                        several.iter().map(|(key, _)| key.to_string()).collect()
                    } else {
                        default.iter().map(|(key, _)| key.to_string()).collect()
                    };
                    return Err(CommandError::Input(format!(
                        "--config {name}: the file holds several ConfigMaps ({}); choose one with --config-map [NAMESPACE/]NAME",
                        names.join(", ")
                    )));
                }
            }
        }
    };
    let (key, located) = chosen;
    Ok(ConfigInput {
        origin: format!("--config {name} (ConfigMap {key})"),
        loaded: load_config_map_at(&located.object, velero.version),
        velero,
    })
}
