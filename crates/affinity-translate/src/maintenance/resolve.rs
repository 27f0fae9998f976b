//! Which configuration a repository's maintenance job gets (documented on
//! [`resolve`]).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::load::LoadError;
use crate::maintenance::config::JobConfig;
use crate::maintenance::load::{GLOBAL_KEY, MaintenanceConfig};

/// How many finished maintenance jobs of a repository Velero keeps when the
/// configuration does not say (R5.13).
pub const DEFAULT_KEEP_LATEST_MAINTENANCE_JOBS: i64 = 3;

/// The key of a repository's own entry (R5.2):
/// `<volumeNamespace>-<backupStorageLocation>-<repositoryType>`, the three
/// spec fields joined with `-` (absent fields are empty).
pub fn repository_key(
    volume_namespace: &str,
    backup_storage_location: &str,
    repository_type: &str,
) -> String {
    format!("{volume_namespace}-{backup_storage_location}-{repository_type}")
}

/// A field of the effective configuration and the entry it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum JobField {
    /// `loadAffinity`.
    LoadAffinity,
    /// `podResources`.
    PodResources,
    /// `keepLatestMaintenanceJobs`.
    KeepLatestMaintenanceJobs,
    /// `priorityClassName`.
    PriorityClassName,
    /// `podLabels`.
    PodLabels,
    /// `podAnnotations`.
    PodAnnotations,
}

impl JobField {
    /// The JSON key.
    pub fn key(self) -> &'static str {
        match self {
            Self::LoadAffinity => "loadAffinity",
            Self::PodResources => "podResources",
            Self::KeepLatestMaintenanceJobs => "keepLatestMaintenanceJobs",
            Self::PriorityClassName => "priorityClassName",
            Self::PodLabels => "podLabels",
            Self::PodAnnotations => "podAnnotations",
        }
    }
}

/// What Velero uses for one repository's maintenance job.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolution {
    /// No ConfigMap, or neither the repository's key nor `global` in it:
    /// every setting keeps its default (R5.3).
    Defaults,
    /// The merged configuration (R5.4) and, for each field set, the key of
    /// the entry it came from.
    Configured {
        /// The effective configuration.
        config: JobConfig,
        /// Which entry each set field came from.
        sources: BTreeMap<JobField, String>,
    },
    /// An entry the repository reads does not decode: Velero logs a warning
    /// and builds the job with the defaults, and keeps the default number
    /// of jobs (R5.5).
    Broken {
        /// The key of the entry that does not decode.
        key: String,
        /// Why.
        error: LoadError,
    },
}

impl Resolution {
    /// The configuration the job is built from (`None`: the defaults).
    pub fn config(&self) -> Option<&JobConfig> {
        match self {
            Self::Configured { config, .. } => Some(config),
            Self::Defaults | Self::Broken { .. } => None,
        }
    }

    /// The number of finished jobs kept (R5.13), default 3.
    pub fn keep_latest_jobs(&self) -> i64 {
        self.config()
            .and_then(|c| c.keep_latest_maintenance_jobs)
            .unwrap_or(DEFAULT_KEEP_LATEST_MAINTENANCE_JOBS)
    }
}

/// The configuration of the repository whose key is `key` (R5.2–R5.5):
/// Velero's `getJobConfig`.
///
/// The repository's own entry is decoded first, then `global`; a decoding
/// error in either gives [`Resolution::Broken`]. With `global`:
/// `podResources` and `keepLatestMaintenanceJobs` come from it when the own
/// entry has none, `loadAffinity` when the own entry's list is empty or
/// absent; `priorityClassName`, `podLabels` and `podAnnotations` come from
/// it whenever it sets them (non-empty), *replacing* the own entry's, which
/// are otherwise kept (R5.4).
pub fn resolve(config: Option<&MaintenanceConfig>, key: &str) -> Resolution {
    let Some(config) = config else {
        return Resolution::Defaults;
    };
    let mut sources = BTreeMap::new();
    let mut result: Option<JobConfig> = None;
    if let Some(entry) = config.entries.get(key) {
        match entry {
            Ok(loaded) => {
                let own = loaded.config.clone();
                for field in set_fields(&own) {
                    sources.insert(field, key.to_owned());
                }
                result = Some(own);
            }
            Err(error) => {
                return Resolution::Broken {
                    key: key.to_owned(),
                    error: error.clone(),
                };
            }
        }
    }
    if key != GLOBAL_KEY
        && let Some(entry) = config.entries.get(GLOBAL_KEY)
    {
        let global = match entry {
            Ok(loaded) => &loaded.config,
            Err(error) => {
                return Resolution::Broken {
                    key: GLOBAL_KEY.to_owned(),
                    error: error.clone(),
                };
            }
        };
        let merged = result.get_or_insert_with(JobConfig::default);
        merge_global(merged, global, &mut sources);
    }
    match result {
        Some(config) => Resolution::Configured { config, sources },
        None => Resolution::Defaults,
    }
}

fn merge_global(
    merged: &mut JobConfig,
    global: &JobConfig,
    sources: &mut BTreeMap<JobField, String>,
) {
    let take = |field: JobField, sources: &mut BTreeMap<JobField, String>| {
        sources.insert(field, GLOBAL_KEY.to_owned());
    };
    if merged.pod_resources.is_none() && global.pod_resources.is_some() {
        merged.pod_resources = global.pod_resources.clone();
        take(JobField::PodResources, sources);
    }
    if merged.load_affinities().is_none() {
        merged.load_affinity = global.load_affinity.clone();
        sources.remove(&JobField::LoadAffinity);
        if global.load_affinities().is_some() {
            take(JobField::LoadAffinity, sources);
        }
    }
    if merged.keep_latest_maintenance_jobs.is_none()
        && global.keep_latest_maintenance_jobs.is_some()
    {
        merged.keep_latest_maintenance_jobs = global.keep_latest_maintenance_jobs;
        take(JobField::KeepLatestMaintenanceJobs, sources);
    }
    if global.priority_class().is_some() {
        merged.priority_class_name = global.priority_class_name.clone();
        take(JobField::PriorityClassName, sources);
    }
    if global.labels().is_some() {
        merged.pod_labels = global.pod_labels.clone();
        take(JobField::PodLabels, sources);
    }
    if global.annotations().is_some() {
        merged.pod_annotations = global.pod_annotations.clone();
        take(JobField::PodAnnotations, sources);
    }
}

/// The fields of an entry that count as set, as Go's checks see them.
fn set_fields(config: &JobConfig) -> Vec<JobField> {
    let mut out = Vec::new();
    if config.load_affinities().is_some() {
        out.push(JobField::LoadAffinity);
    }
    if config.pod_resources.is_some() {
        out.push(JobField::PodResources);
    }
    if config.keep_latest_maintenance_jobs.is_some() {
        out.push(JobField::KeepLatestMaintenanceJobs);
    }
    if config.priority_class().is_some() {
        out.push(JobField::PriorityClassName);
    }
    if config.labels().is_some() {
        out.push(JobField::PodLabels);
    }
    if config.annotations().is_some() {
        out.push(JobField::PodAnnotations);
    }
    out
}
