//! Every loading error and warning (C1.4–C1.10 and our additions), with
//! their messages snapshotted.

use std::collections::BTreeMap;

use affinity_translate::{
    FindingKind, LoadError, NodeAgentConfig, load_config_map, load_config_map_data, load_json,
    load_json_bytes,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn outcome(text: &str) -> String {
    match load_json(text) {
        Ok(loaded) => {
            let mut out = format!("ok {}", serde_json::to_string(&loaded.config).unwrap());
            for finding in &loaded.findings {
                out.push_str(&format!("\n    {finding}"));
            }
            out
        }
        Err(error) => format!("error {error}"),
    }
}

const CASES: &[(&str, &str)] = &[
    ("malformed JSON (C1.7)", "{wrong"),
    ("empty value (C1.7)", ""),
    ("trailing data (C1.7)", "{} {}"),
    ("top-level array (C1.7)", "[1, 2]"),
    ("top-level string (C1.7)", "\"config\""),
    ("top-level null is empty (C1.8)", "null"),
    (
        "string for int (C1.7)",
        r#"{"loadConcurrency": {"globalConfig": "2"}}"#,
    ),
    (
        "float for int (C1.7)",
        r#"{"loadConcurrency": {"globalConfig": 2.0}}"#,
    ),
    (
        "exponent for int (C1.7)",
        r#"{"loadConcurrency": {"perNodeConfig": [{"number": 1e3}]}}"#,
    ),
    (
        "large exponent for int (C1.7)",
        r#"{"loadConcurrency": {"globalConfig": 1e+20}}"#,
    ),
    (
        "int64 overflow (C1.7)",
        r#"{"cachePVC": {"residentThresholdInMB": 9223372036854775808}}"#,
    ),
    (
        "negative int loads (C1.8)",
        r#"{"loadConcurrency": {"globalConfig": -3}}"#,
    ),
    (
        "bool annotation value (D1.3)",
        r#"{"backupPVC": {"sc": {"annotations": {"a": true}}}}"#,
    ),
    ("bool for string (C1.7)", r#"{"priorityClassName": false}"#),
    (
        "object for list (C1.7)",
        r#"{"loadAffinity": {"storageClass": "x"}}"#,
    ),
    (
        "duplicate key",
        r#"{"priorityClassName": "a", "priorityClassName": "b"}"#,
    ),
    (
        "duplicate key differing in case",
        r#"{"loadConcurrency": {"globalConfig": 1, "GlobalConfig": 2}}"#,
    ),
    (
        "duplicate map key",
        r#"{"podLabels": {"a": "1", "a": "2"}}"#,
    ),
    (
        "case-insensitive key accepted (C1.8)",
        r#"{"LoadConcurrency": {"GLOBALCONFIG": 2}}"#,
    ),
    ("unknown top-level key", r#"{"debug": true}"#),
    ("misspelt key", r#"{"loadConcurrency": {"globalConfg": 2}}"#),
    ("misplaced key (D1.1)", r#"{"prepareQueueLength": 3}"#),
    (
        "documented wrong key (D1.2)",
        r#"{"cachePVC": {"storageClass": "gp3", "thresholdInGB": 1}}"#,
    ),
    (
        "unknown key in a selector",
        r#"{"loadAffinity": [{"nodeSelector": {"matchLabel": {"a": "b"}}}]}"#,
    ),
    (
        "null members are absent (C1.8)",
        r#"{"loadConcurrency": null, "podLabels": null, "restorePVC": {"ignoreDelayBinding": null}}"#,
    ),
    (
        "null list values are zero values (C1.8)",
        r#"{"loadAffinity": [{"nodeSelector": {"matchExpressions": [null, {"key": "a", "operator": "In", "values": [null]}]}}]}"#,
    ),
    (
        "null loadAffinity entry kept (A2.6)",
        r#"{"loadAffinity": [null, {"storageClass": "gp3"}]}"#,
    ),
    (
        "missing key and operator are empty (C1.8)",
        r#"{"loadAffinity": [{"nodeSelector": {"matchExpressions": [{}]}}]}"#,
    ),
    ("empty loadAffinity list", r#"{"loadAffinity": []}"#),
];

#[test]
fn loader_messages() {
    let mut out = String::new();
    for (name, text) in CASES {
        out.push_str(&format!("## {name}\n{text}\n=> {}\n\n", outcome(text)));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn config_map_without_data_is_an_error() {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("node-agent-config".to_owned()),
            ..Default::default()
        },
        binary_data: Some(BTreeMap::new()),
        ..Default::default()
    };
    let error = load_config_map(&cm).unwrap_err();
    assert!(matches!(error, LoadError::NoData { .. }));
    insta::assert_snapshot!(error.to_string(), @"data is not available in config map node-agent-config: put the configuration JSON under one key of `data` (`binaryData` is never read)");
    // An empty data map is nil after an API round trip (C1.4).
    let empty = BTreeMap::new();
    assert!(matches!(
        load_config_map_data("cm", Some(&empty)),
        Err(LoadError::NoData { .. })
    ));
}

#[test]
fn config_map_with_two_keys_is_an_error() {
    let data = BTreeMap::from([
        ("a.json".to_owned(), "{}".to_owned()),
        ("b.json".to_owned(), "{}".to_owned()),
    ]);
    let error = load_config_map_data("cm", Some(&data)).unwrap_err();
    insta::assert_snapshot!(error.to_string(), @"more than one keys are found in ConfigMap cm's data (a.json, b.json); only expect one: keep a single key holding the whole configuration");
}

#[test]
fn config_map_key_name_is_irrelevant_and_named_in_errors() {
    let data = BTreeMap::from([(
        "whatever".to_owned(),
        r#"{"priorityClassName": "p"}"#.to_owned(),
    )]);
    let loaded = load_config_map_data("cm", Some(&data)).unwrap();
    assert_eq!(loaded.config.priority_class_name.as_deref(), Some("p"));
    let data = BTreeMap::from([("node-agent.json".to_owned(), "{,}".to_owned())]);
    let error = load_config_map_data("cm", Some(&data)).unwrap_err();
    insta::assert_snapshot!(error.to_string(), @"ConfigMap cm, key node-agent.json: invalid JSON at line 1, column 2: key must be a string");
}

#[test]
fn invalid_utf8_is_a_syntax_error() {
    let error = load_json_bytes(b"{\"podLabels\": {\"a\": \"\xff\"}}").unwrap_err();
    assert!(matches!(error, LoadError::Syntax { .. }), "{error}");
}

#[test]
fn deeply_nested_input_is_an_error_not_a_crash() {
    let text = format!(
        "{{\"debug\": {}{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert!(load_json(&text).is_err());
}

#[test]
fn warnings_have_their_kinds() {
    let loaded = load_json(r#"{"LoadAffinity": [null], "prepareQueueLength": 1}"#).unwrap();
    let kinds: Vec<FindingKind> = loaded.findings.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        vec![
            FindingKind::KeyCase,
            FindingKind::UnknownKey,
            FindingKind::NullEntry
        ]
    );
}

#[test]
fn empty_object_is_the_default_configuration() {
    let loaded = load_json("{}").unwrap();
    assert_eq!(loaded.config, NodeAgentConfig::default());
    assert!(loaded.findings.is_empty());
    assert_eq!(serde_json::to_string(&loaded.config).unwrap(), "{}");
}

#[test]
fn wrong_number_types_are_named_in_words_not_rust_types() {
    for text in [
        r#"{"loadConcurrency": {"globalConfig": 1e+20}}"#,
        r#"{"loadConcurrency": {"globalConfig": "2"}}"#,
        r#"{"cachePVC": {"residentThresholdInMB": 9223372036854775808}}"#,
    ] {
        let Err(error) = affinity_translate::load_json(text) else {
            panic!("{text} loads");
        };
        let error = error.to_string();
        for rust in ["i64", "u64", "i32", "floating point"] {
            assert!(!error.contains(rust), "{error}");
        }
        assert!(error.contains("expected a whole number from"), "{error}");
    }
}
