//! The repository-maintenance job configuration (R5.1–R5.14): Velero's own
//! tables for `getJobConfig`, `buildJob`, `getPriorityClassName` and the
//! maintenance job's tolerations, in our words, plus the findings.

use std::collections::{BTreeMap, BTreeSet};

use affinity_translate::maintenance::{
    GLOBAL_KEY, JobConfig, JobError, JobField, MaintenanceConfig, MaintenanceContext, Resolution,
    ServerPodTemplate, load_maintenance_data, maintenance_job, repository_key, resolve,
    validate_maintenance,
};
use affinity_translate::{FindingKind, Severity};
use k8s_openapi::api::core::v1::Toleration;

/// The repository of Velero's tables: volume namespace `test`, location
/// `default`, type `kopia`.
const KEY: &str = "test-default-kopia";

fn config_map(entries: &[(&str, &str)]) -> MaintenanceConfig {
    let data: BTreeMap<String, String> = entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    load_maintenance_data("velero/repo-maintenance-job-config", Some(&data)).unwrap()
}

fn configured(resolution: &Resolution) -> &JobConfig {
    resolution.config().expect("a configuration")
}

const SPECIFIC: &str = r#"{"podResources":{"cpuRequest":"100m","cpuLimit":"200m","memoryRequest":"100Mi","memoryLimit":"200Mi"},"loadAffinity":[{"nodeSelector":{"matchExpressions":[{"key":"cloud.google.com/machine-family","operator":"In","values":["e2"]}]}}]}"#;
const GLOBAL: &str = r#"{"keepLatestMaintenanceJobs":1,"podResources":{"cpuRequest":"50m","cpuLimit":"100m","memoryRequest":"50Mi","memoryLimit":"100Mi"},"loadAffinity":[{"nodeSelector":{"matchExpressions":[{"key":"cloud.google.com/machine-family","operator":"In","values":["n2"]}]}}]}"#;

fn machine_family(config: &JobConfig) -> String {
    let entry = config.load_affinity.as_ref().unwrap()[0].as_ref().unwrap();
    let expression = &entry
        .node_selector
        .as_ref()
        .unwrap()
        .match_expressions
        .as_ref()
        .unwrap()[0];
    expression.values.as_ref().unwrap()[0].clone()
}

#[test]
fn the_key_joins_namespace_location_and_type() {
    assert_eq!(repository_key("test", "default", "kopia"), KEY);
    assert_eq!(repository_key("", "", ""), "--");
}

// --- Velero's getJobConfig table ----------------------------------------

#[test]
fn no_config_map_gives_the_defaults() {
    assert_eq!(resolve(None, KEY), Resolution::Defaults);
    assert_eq!(resolve(None, KEY).keep_latest_jobs(), 3);
}

#[test]
fn an_entry_that_does_not_decode_gives_the_defaults() {
    let cm = config_map(&[(KEY, r#"{"cpuRequest:"100m"}"#)]);
    let resolution = resolve(Some(&cm), KEY);
    let Resolution::Broken { key, error } = &resolution else {
        panic!("{resolution:?}")
    };
    assert_eq!(key, KEY);
    assert!(
        error.to_string().contains("key test-default-kopia"),
        "{error}"
    );
    assert_eq!(resolution.config(), None);
    assert_eq!(resolution.keep_latest_jobs(), 3);
}

#[test]
fn a_repository_entry_alone_is_used_as_is() {
    let cm = config_map(&[(KEY, SPECIFIC)]);
    let resolution = resolve(Some(&cm), KEY);
    let config = configured(&resolution);
    assert_eq!(machine_family(config), "e2");
    assert_eq!(
        config
            .pod_resources
            .as_ref()
            .unwrap()
            .cpu_request
            .as_deref(),
        Some("100m")
    );
    assert_eq!(config.keep_latest_maintenance_jobs, None);
}

#[test]
fn global_alone_is_used_for_every_repository() {
    let cm = config_map(&[(GLOBAL_KEY, GLOBAL)]);
    let config = configured(&resolve(Some(&cm), KEY)).clone();
    assert_eq!(machine_family(&config), "n2");
    assert_eq!(
        config
            .pod_resources
            .as_ref()
            .unwrap()
            .cpu_request
            .as_deref(),
        Some("50m")
    );
    assert_eq!(
        configured(&resolve(Some(&cm), "other-default-kopia")),
        &config
    );
}

#[test]
fn the_repository_entry_supersedes_global() {
    let cm = config_map(&[(GLOBAL_KEY, GLOBAL), (KEY, SPECIFIC)]);
    let resolution = resolve(Some(&cm), KEY);
    let config = configured(&resolution);
    assert_eq!(machine_family(config), "e2");
    assert_eq!(
        config
            .pod_resources
            .as_ref()
            .unwrap()
            .memory_limit
            .as_deref(),
        Some("200Mi")
    );
    // Not in the repository's entry: from global.
    assert_eq!(config.keep_latest_maintenance_jobs, Some(1));
    assert_eq!(resolution.keep_latest_jobs(), 1);
    let Resolution::Configured { sources, .. } = &resolution else {
        unreachable!()
    };
    assert_eq!(sources[&JobField::LoadAffinity], KEY);
    assert_eq!(sources[&JobField::KeepLatestMaintenanceJobs], GLOBAL_KEY);
}

#[test]
fn global_only_fields_supersede_the_repository_entry() {
    let global = r#"{"keepLatestMaintenanceJobs":1,"priorityClassName":"global-priority","podAnnotations":{"global-key":"global-value"},"podLabels":{"global-key":"global-value"}}"#;
    let specific = r#"{"loadAffinity":[{"nodeSelector":{"matchLabels":{"a":"b"}}}],"priorityClassName":"specific-priority","podAnnotations":{"specific-key":"specific-value"},"podLabels":{"specific-key":"specific-value"}}"#;
    let cm = config_map(&[(GLOBAL_KEY, global), (KEY, specific)]);
    let config = configured(&resolve(Some(&cm), KEY)).clone();
    assert_eq!(
        config.priority_class_name.as_deref(),
        Some("global-priority")
    );
    let global_only = BTreeMap::from([("global-key".to_owned(), "global-value".to_owned())]);
    assert_eq!(config.pod_labels, Some(global_only.clone()));
    assert_eq!(config.pod_annotations, Some(global_only));
}

// --- Beyond Velero's table: what the code does that its tests do not pin --

#[test]
fn a_repository_entrys_priority_class_is_used_when_global_sets_none() {
    // D5.2: documented as global-only, but kept.
    let cm = config_map(&[
        (GLOBAL_KEY, r#"{"keepLatestMaintenanceJobs":2}"#),
        (
            KEY,
            r#"{"priorityClassName":"specific","podLabels":{"team":"a"}}"#,
        ),
    ]);
    let config = configured(&resolve(Some(&cm), KEY)).clone();
    assert_eq!(config.priority_class_name.as_deref(), Some("specific"));
    assert_eq!(
        config.pod_labels,
        Some(BTreeMap::from([("team".to_owned(), "a".to_owned())]))
    );
    let findings = validate_maintenance(&cm, &MaintenanceContext::default());
    assert!(
        findings
            .iter()
            .any(|f| f.path == format!("{KEY}.priorityClassName") && f.velero.contains("D5.2"))
    );
}

#[test]
fn an_empty_load_affinity_list_does_not_clear_globals() {
    let cm = config_map(&[(GLOBAL_KEY, GLOBAL), (KEY, r#"{"loadAffinity":[]}"#)]);
    assert_eq!(machine_family(configured(&resolve(Some(&cm), KEY))), "n2");
}

#[test]
fn a_broken_global_breaks_every_repository_even_with_its_own_entry() {
    let cm = config_map(&[(GLOBAL_KEY, "{"), (KEY, SPECIFIC)]);
    assert!(matches!(
        resolve(Some(&cm), KEY),
        Resolution::Broken { ref key, .. } if key == GLOBAL_KEY
    ));
}

#[test]
fn a_broken_unrelated_entry_changes_nothing() {
    let cm = config_map(&[(KEY, SPECIFIC), ("other-default-kopia", "[")]);
    assert_eq!(machine_family(configured(&resolve(Some(&cm), KEY))), "e2");
}

#[test]
fn neither_key_gives_the_defaults() {
    let cm = config_map(&[("other-default-kopia", SPECIFIC)]);
    assert_eq!(resolve(Some(&cm), KEY), Resolution::Defaults);
}

#[test]
fn a_config_map_without_data_is_an_error() {
    let error = load_maintenance_data("velero/x", None).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("data is not available in config map velero/x")
    );
    assert!(load_maintenance_data("velero/x", Some(&BTreeMap::new())).is_err());
}

// --- Velero's buildJob table (placement fields) -------------------------

fn job_config(json: &str) -> JobConfig {
    affinity_translate::maintenance::load_job_config_json("test", json)
        .unwrap()
        .config
}

fn toleration(key: &str, value: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.to_owned()),
        operator: Some("Equal".to_owned()),
        value: Some(value.to_owned()),
        effect: Some(effect.to_owned()),
        toleration_seconds: None,
    }
}

const RESOURCES: &str = r#"{"podResources":{"cpuRequest":"100m","memoryRequest":"128Mi","cpuLimit":"200m","memoryLimit":"256Mi"}}"#;

#[test]
fn resources_without_third_party_labels() {
    let config = job_config(RESOURCES);
    let job = maintenance_job(Some(&config), "test-123", &ServerPodTemplate::default()).unwrap();
    assert_eq!(
        job.resources.requests,
        BTreeMap::from([
            ("cpu".to_owned(), "100m".to_owned()),
            ("memory".to_owned(), "128Mi".to_owned())
        ])
    );
    assert_eq!(
        job.resources.limits,
        BTreeMap::from([
            ("cpu".to_owned(), "200m".to_owned()),
            ("memory".to_owned(), "256Mi".to_owned())
        ])
    );
    assert_eq!(
        job.labels,
        BTreeMap::from([("velero.io/repo-name".to_owned(), "test-123".to_owned())])
    );
    assert!(job.annotations.is_empty());
    assert_eq!(job.affinity, None);
    assert_eq!(job.priority_class_name, None);
}

#[test]
fn third_party_labels_come_from_the_server_template() {
    let config = job_config(RESOURCES);
    let labels = BTreeMap::from([
        (
            "azure.workload.identity/use".to_owned(),
            "fake-label-value".to_owned(),
        ),
        ("app".to_owned(), "velero".to_owned()),
    ]);
    let annotations = BTreeMap::from([
        ("iam.amazonaws.com/role".to_owned(), "role".to_owned()),
        ("other".to_owned(), "x".to_owned()),
    ]);
    let server = ServerPodTemplate {
        labels: Some(&labels),
        annotations: Some(&annotations),
        tolerations: &[],
    };
    let job = maintenance_job(Some(&config), "test-123", &server).unwrap();
    assert_eq!(
        job.labels,
        BTreeMap::from([
            (
                "azure.workload.identity/use".to_owned(),
                "fake-label-value".to_owned()
            ),
            ("velero.io/repo-name".to_owned(), "test-123".to_owned()),
        ])
    );
    assert_eq!(
        job.annotations,
        BTreeMap::from([("iam.amazonaws.com/role".to_owned(), "role".to_owned())])
    );
}

#[test]
fn configured_labels_and_annotations_replace_the_inherited_ones() {
    let config = job_config(
        r#"{"podLabels":{"global-label-1":"v1","global-label-2":"v2"},"podAnnotations":{"global-annotation-1":"a1"}}"#,
    );
    let labels = BTreeMap::from([("azure.workload.identity/use".to_owned(), "x".to_owned())]);
    let server = ServerPodTemplate {
        labels: Some(&labels),
        ..ServerPodTemplate::default()
    };
    let job = maintenance_job(Some(&config), "test-123", &server).unwrap();
    assert_eq!(
        job.labels.keys().collect::<Vec<_>>(),
        ["global-label-1", "global-label-2", "velero.io/repo-name"]
    );
    assert_eq!(job.annotations.len(), 1);
}

#[test]
fn a_long_repository_name_is_hashed_in_the_label() {
    let name = "x".repeat(200);
    let job = maintenance_job(None, &name, &ServerPodTemplate::default()).unwrap();
    assert_eq!(
        job.labels["velero.io/repo-name"],
        "abc93b8bf26dd0d48b74004f33f4c184d94322938a5c6b15469b1aac"
    );
}

#[test]
fn the_priority_class_is_set_as_configured() {
    let config = job_config(r#"{"priorityClassName":"low-priority"}"#);
    let job = maintenance_job(Some(&config), "r", &ServerPodTemplate::default()).unwrap();
    assert_eq!(job.priority_class_name.as_deref(), Some("low-priority"));
    let none =
        maintenance_job(Some(&job_config("{}")), "r", &ServerPodTemplate::default()).unwrap();
    assert_eq!(none.priority_class_name, None);
}

#[test]
fn tolerations_start_with_windows_then_the_allowlisted_ones() {
    let cases: &[(&str, Vec<Toleration>, Vec<&str>)] = &[
        ("no tolerations on the server", vec![], vec!["os"]),
        (
            "a toleration outside the allowlist is not inherited",
            vec![toleration("dedicated", "velero", "NoSchedule")],
            vec!["os"],
        ),
        (
            "an allowlisted toleration is inherited",
            vec![toleration(
                "kubernetes.azure.com/scalesetpriority",
                "spot",
                "NoSchedule",
            )],
            vec!["os", "kubernetes.azure.com/scalesetpriority"],
        ),
        (
            "mixed: only the allowlisted, in allowlist order, first of each key",
            vec![
                toleration("CriticalAddonsOnly", "true", "NoSchedule"),
                toleration("dedicated", "velero", "NoSchedule"),
                toleration(
                    "kubernetes.azure.com/scalesetpriority",
                    "spot",
                    "NoSchedule",
                ),
                toleration(
                    "kubernetes.azure.com/scalesetpriority",
                    "other",
                    "NoExecute",
                ),
            ],
            vec![
                "os",
                "kubernetes.azure.com/scalesetpriority",
                "CriticalAddonsOnly",
            ],
        ),
    ];
    for (name, server, want) in cases {
        let job = maintenance_job(
            None,
            "r",
            &ServerPodTemplate {
                tolerations: server,
                ..ServerPodTemplate::default()
            },
        )
        .unwrap();
        let keys: Vec<&str> = job
            .tolerations
            .iter()
            .map(|t| t.key.as_deref().unwrap())
            .collect();
        assert_eq!(&keys, want, "{name}");
        assert_eq!(
            job.tolerations[0].value.as_deref(),
            Some("windows"),
            "{name}"
        );
    }
}

// --- Affinity: the first entry only (R5.8, R5.9) -------------------------

#[test]
fn only_the_first_entrys_node_selector_becomes_the_affinity() {
    let config = job_config(
        r#"{"loadAffinity":[
            {"storageClass":"gp3","nodeSelector":{"matchLabels":{"zone":"a","pool":"infra"},"matchExpressions":[{"key":"arch","operator":"NotIn","values":["arm64"]}]}},
            {"nodeSelector":{"matchLabels":{"zone":"b"}}}]}"#,
    );
    let job = maintenance_job(Some(&config), "r", &ServerPodTemplate::default()).unwrap();
    assert_eq!(job.load_affinity_index, Some(0));
    let terms = job
        .affinity
        .unwrap()
        .node_affinity
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .unwrap()
        .node_selector_terms;
    assert_eq!(terms.len(), 1);
    let rendered: Vec<String> = terms[0]
        .match_expressions
        .iter()
        .flatten()
        .map(affinity_translate::render_requirement)
        .collect();
    // matchLabels in key order, then the expressions; no OS requirement.
    assert_eq!(
        rendered,
        ["pool In [infra]", "zone In [a]", "arch NotIn [arm64]"]
    );
}

#[test]
fn a_null_or_empty_first_entry_gives_no_affinity() {
    for json in [
        r#"{"loadAffinity":[null,{"nodeSelector":{"matchLabels":{"a":"b"}}}]}"#,
        r#"{"loadAffinity":[{"nodeSelector":{}},{"nodeSelector":{"matchLabels":{"a":"b"}}}]}"#,
        r#"{"loadAffinity":[{"storageClass":"x"}]}"#,
    ] {
        let job =
            maintenance_job(Some(&job_config(json)), "r", &ServerPodTemplate::default()).unwrap();
        assert_eq!(job.affinity, None, "{json}");
        assert_eq!(job.load_affinity_index, None, "{json}");
    }
}

// --- Resources (R5.10) ---------------------------------------------------

#[test]
fn resources_follow_velero_parsing() {
    /// (name, entry, Ok((requests, limits)) or Err(message part)).
    type Case<'a> = (&'a str, &'a str, Result<(usize, usize), &'a str>);
    let cases: &[Case<'_>] = &[
        ("no podResources: nothing", "{}", Ok((0, 0))),
        (
            "zeros are unbounded",
            r#"{"podResources":{"cpuRequest":"0","cpuLimit":"0","memoryRequest":"0","memoryLimit":"0"}}"#,
            Ok((0, 0)),
        ),
        (
            "ephemeral storage is used when given",
            r#"{"podResources":{"cpuRequest":"1","cpuLimit":"0","memoryRequest":"1Gi","memoryLimit":"0","ephemeralStorageRequest":"1Gi","ephemeralStorageLimit":"2Gi"}}"#,
            Ok((3, 1)),
        ),
        (
            "an absent memory value does not parse",
            r#"{"podResources":{"cpuRequest":"100m","cpuLimit":"200m"}}"#,
            Err("couldn't parse memory request \"\""),
        ),
        (
            "a request above its limit",
            r#"{"podResources":{"cpuRequest":"2","cpuLimit":"1","memoryRequest":"0","memoryLimit":"0"}}"#,
            Err("CPU request \"2\" must be less than or equal to CPU limit \"1\""),
        ),
        (
            "requests are parsed before limits",
            r#"{"podResources":{"cpuRequest":"1","cpuLimit":"x","memoryRequest":"y","memoryLimit":"0"}}"#,
            Err("couldn't parse memory request \"y\""),
        ),
    ];
    for (name, json, want) in cases {
        let got = maintenance_job(Some(&job_config(json)), "r", &ServerPodTemplate::default());
        match (got, want) {
            (Ok(job), Ok((requests, limits))) => {
                assert_eq!(job.resources.requests.len(), *requests, "{name}");
                assert_eq!(job.resources.limits.len(), *limits, "{name}");
            }
            (Err(error), Err(text)) => {
                assert!(error.to_string().contains(text), "{name}: {error}");
                assert!(matches!(
                    error,
                    JobError::Quantity { .. } | JobError::RequestAboveLimit { .. }
                ));
            }
            (got, _) => panic!("{name}: {got:?}"),
        }
    }
}

// --- Findings ------------------------------------------------------------

#[test]
fn findings_name_the_entry_path_and_rule() {
    let cm = config_map(&[
        (
            GLOBAL_KEY,
            r#"{"priorityClassName":"missing","keepLatestMaintenanceJobs":-1,"loadAffinty":[],
                "loadAffinity":[{"storageClass":"gp3","nodeSelector":{"matchLabels":{"a":"b"}}},{"nodeSelector":{}}],
                "podResources":{"cpuRequest":"1"}}"#,
        ),
        (KEY, r#"{"priorityClassName":"ignored"}"#),
        ("nobody-default-kopia", "{}"),
        ("broken", "{"),
    ]);
    let repositories = BTreeSet::from([KEY.to_owned()]);
    let classes = BTreeSet::from(["ignored".to_owned()]);
    let findings = validate_maintenance(
        &cm,
        &MaintenanceContext {
            repository_keys: Some(&repositories),
            priority_classes: Some(&classes),
        },
    );
    let got: Vec<(Severity, FindingKind, &str)> = findings
        .iter()
        .map(|f| (f.severity, f.kind, f.path.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (Severity::Error, FindingKind::Undecodable, "broken"),
            (
                Severity::Warning,
                FindingKind::UnknownKey,
                "global.loadAffinty"
            ),
            (
                Severity::Warning,
                FindingKind::Ineffective,
                "global.loadAffinity[0].storageClass"
            ),
            (
                Severity::Warning,
                FindingKind::DeadEntry,
                "global.loadAffinity[1]"
            ),
            (
                Severity::Error,
                FindingKind::InvalidResources,
                "global.podResources.memoryRequest"
            ),
            (
                Severity::Error,
                FindingKind::InvalidNumber,
                "global.keepLatestMaintenanceJobs"
            ),
            (
                Severity::Error,
                FindingKind::MissingPriorityClass,
                "global.priorityClassName"
            ),
            (
                Severity::Warning,
                FindingKind::UnknownEntry,
                "nobody-default-kopia"
            ),
            (
                Severity::Warning,
                FindingKind::Ineffective,
                "test-default-kopia.priorityClassName"
            ),
        ],
        "{findings:#?}"
    );
    let unknown = &findings[1];
    assert!(
        unknown.message.contains("did you mean \"loadAffinity\""),
        "{}",
        unknown.message
    );
}
