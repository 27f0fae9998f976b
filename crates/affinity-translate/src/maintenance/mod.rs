//! Velero's repository-maintenance jobs (`velero server
//! --repo-maintenance-job-configmap`, R5.1–R5.14 in
//! `docs/behaviour/velero.md`): the ConfigMap loaded entry by entry with
//! the node-agent configuration's decoding rules, the configuration each
//! BackupRepository's job gets, the job's placement fields, and findings.
//!
//! - [`load_maintenance_config_map`]: every key of `data` decoded on its own;
//! - [`repository_key`], [`resolve`]: the entry a repository reads and the
//!   merge with `global` (Velero's `getJobConfig`);
//! - [`maintenance_job`]: affinity, resources, priority class, labels,
//!   annotations and tolerations of the job's pod (Velero's `buildJob`);
//! - [`validate_maintenance`]: what Velero ignores or fails on.

mod config;
mod job;
mod load;
mod name_hash;
mod resolve;
mod validate;

pub use config::JobConfig;
pub use job::{
    INHERITED_ANNOTATION_KEYS, INHERITED_LABEL_KEYS, JobError, JobResources, MaintenanceJob,
    REPOSITORY_NAME_LABEL, ServerPodTemplate, maintenance_job, windows_toleration,
};
pub use load::{
    GLOBAL_KEY, LoadedJobConfig, MaintenanceConfig, MaintenanceConfigError, load_job_config_json,
    load_maintenance_config_map, load_maintenance_data,
};
pub use name_hash::repository_name_label;
pub use resolve::{
    DEFAULT_KEEP_LATEST_MAINTENANCE_JOBS, JobField, Resolution, repository_key, resolve,
};
pub use validate::{MaintenanceContext, config_map_finding, validate_maintenance};

/// The fuzzing entry point of the repository-maintenance loader (feature
/// `fuzzing`; `fuzz/fuzz_targets/maintenance_config.rs`, and the corpus
/// replay test): `data` is one entry's text, loaded as `global` and as a
/// repository's entry beside a fixed `global`; whatever loads is resolved,
/// built into a job and validated. Never panics for any input.
#[cfg(feature = "fuzzing")]
pub fn fuzz_entry(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let key = repository_key("ns", "default", "kopia");
    let global =
        r#"{"loadAffinity":[{"nodeSelector":{"matchLabels":{"a":"b"}}}],"priorityClassName":"p"}"#;
    for entries in [
        vec![(GLOBAL_KEY, text)],
        vec![(GLOBAL_KEY, global), (key.as_str(), text)],
    ] {
        let data: std::collections::BTreeMap<String, String> = entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let Ok(config) = load_maintenance_data("velero/fuzz", Some(&data)) else {
            continue;
        };
        let resolution = resolve(Some(&config), &key);
        let _ = resolution.keep_latest_jobs();
        let _ = maintenance_job(resolution.config(), text, &ServerPodTemplate::default());
        let keys = std::collections::BTreeSet::from([key.clone()]);
        let classes = std::collections::BTreeSet::from(["p".to_owned()]);
        let _ = validate_maintenance(
            &config,
            &MaintenanceContext {
                repository_keys: Some(&keys),
                priority_classes: Some(&classes),
            },
        );
    }
}
