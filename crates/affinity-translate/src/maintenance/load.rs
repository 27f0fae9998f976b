//! Loading the repository-maintenance job ConfigMap (documented on
//! [`load_maintenance_config_map`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::finding::Finding;
use crate::load::{LoadError, decode};
use crate::maintenance::config::JobConfig;
use crate::schema::JOB_CONFIG;
use crate::version::VeleroVersion;

/// The key of the entry every repository falls back to (R5.2).
pub const GLOBAL_KEY: &str = "global";

/// One entry of the ConfigMap that decoded: the typed value and the
/// loading warnings about it (unknown and mis-cased keys), whose paths
/// start with the entry's key.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedJobConfig {
    /// The decoded entry.
    pub config: JobConfig,
    /// Warnings from decoding, paths prefixed with the entry's key.
    pub findings: Vec<Finding>,
}

/// The repository-maintenance job ConfigMap, every entry decoded on its own:
/// Velero decodes only the entries a job needs when it builds the job
/// (R5.2), so a broken entry breaks only the repositories that read it
/// (and the server's start-up check, R5.5).
#[derive(Clone, Debug, PartialEq)]
pub struct MaintenanceConfig {
    /// `namespace/name` of the ConfigMap (for messages).
    pub name: String,
    /// Every key of `data`, sorted, with its decoded value or why it does
    /// not decode.
    pub entries: BTreeMap<String, Result<LoadedJobConfig, LoadError>>,
}

impl MaintenanceConfig {
    /// The decoded `global` entry, if there is one and it decodes.
    pub fn global(&self) -> Option<&LoadedJobConfig> {
        self.entries
            .get(GLOBAL_KEY)
            .and_then(|entry| entry.as_ref().ok())
    }

    /// The entries that do not decode, by key.
    pub fn broken(&self) -> impl Iterator<Item = (&str, &LoadError)> {
        self.entries
            .iter()
            .filter_map(|(key, entry)| entry.as_ref().err().map(|e| (key.as_str(), e)))
    }
}

/// Why the ConfigMap as a whole cannot be used (R5.3).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MaintenanceConfigError {
    /// The ConfigMap has no `data` (or an empty one).
    #[error(
        "data is not available in config map {name}: put one JSON value per key under `data` (`global` and `<volumeNamespace>-<backupStorageLocation>-<repositoryType>`)"
    )]
    NoData {
        /// `namespace/name` of the ConfigMap.
        name: String,
    },
}

/// Loads the repository-maintenance job ConfigMap (R5.1–R5.3): every key of
/// `data` is one JSON value of Velero's `JobConfigs`, decoded with Go's
/// rules like the node-agent configuration (C1.8; unknown keys are
/// warnings, duplicate keys errors). `binaryData` is never read.
pub fn load_maintenance_config_map(
    config_map: &ConfigMap,
) -> Result<MaintenanceConfig, MaintenanceConfigError> {
    let name = format!(
        "{}/{}",
        config_map
            .metadata
            .namespace
            .as_deref()
            .unwrap_or("default"),
        config_map.metadata.name.as_deref().unwrap_or_default()
    );
    load_maintenance_data(&name, config_map.data.as_ref())
}

/// Loads the `data` of the repository-maintenance job ConfigMap `name`
/// ([`load_maintenance_config_map`]).
pub fn load_maintenance_data(
    name: &str,
    data: Option<&BTreeMap<String, String>>,
) -> Result<MaintenanceConfig, MaintenanceConfigError> {
    let data = match data {
        Some(data) if !data.is_empty() => data,
        _ => {
            return Err(MaintenanceConfigError::NoData {
                name: name.to_owned(),
            });
        }
    };
    let entries = data
        .iter()
        .map(|(key, text)| (key.clone(), load_entry(name, key, text)))
        .collect();
    Ok(MaintenanceConfig {
        name: name.to_owned(),
        entries,
    })
}

/// Decodes one entry's JSON text; `origin` names the ConfigMap and key.
pub fn load_job_config_json(key: &str, text: &str) -> Result<LoadedJobConfig, LoadError> {
    load_entry("configuration", key, text)
}

fn load_entry(name: &str, key: &str, text: &str) -> Result<LoadedJobConfig, LoadError> {
    let origin = format!("ConfigMap {name}, key {key}");
    // Every modelled Velero version reads the same keys here.
    let (config, findings) =
        decode::<JobConfig>(&origin, text, JOB_CONFIG, VeleroVersion::NEWEST_RELEASE)?;
    let findings = findings
        .into_iter()
        .map(|mut finding| {
            finding.path = prefixed(key, &finding.path);
            finding
        })
        .collect();
    Ok(LoadedJobConfig { config, findings })
}

/// `key.path`, or `key` for the whole entry.
pub(crate) fn prefixed(key: &str, path: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else if path.starts_with('[') {
        format!("{key}{path}")
    } else {
        format!("{key}.{path}")
    }
}
