//! One case per validation finding (C1.x, A2.x, L3.1–L3.3): each snippet and
//! the findings it produces, snapshotted; plus the cases that must produce
//! none.

use affinity_translate::{FindingKind, Severity, load_json};

const CASES: &[(&str, &str)] = &[
    (
        "globalConfig 0 (L3.1)",
        r#"{"loadConcurrency": {"globalConfig": 0}}"#,
    ),
    (
        "rule with lowercase operator (L3.3)",
        r#"{"loadConcurrency": {"perNodeConfig": [{"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "in", "values": ["x"]}]}, "number": 2}]}}"#,
    ),
    (
        "rule with Gt is invalid for label selectors (L3.3)",
        r#"{"loadConcurrency": {"perNodeConfig": [{"nodeSelector": {"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["4"]}]}, "number": 2}]}}"#,
    ),
    (
        "rule In without values (L3.3)",
        r#"{"loadConcurrency": {"perNodeConfig": [{"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}, "number": 2}]}}"#,
    ),
    (
        "rule with invalid value (L3.3)",
        r#"{"loadConcurrency": {"perNodeConfig": [{"nodeSelector": {"matchLabels": {"a": "not valid"}}, "number": 2}]}}"#,
    ),
    (
        "rule without number (L3.2)",
        r#"{"loadConcurrency": {"perNodeConfig": [{"nodeSelector": {}}]}}"#,
    ),
    (
        "rule with negative number (L3.2)",
        r#"{"loadConcurrency": {"perNodeConfig": [{"number": -1}]}}"#,
    ),
    (
        "rule number that never wins (L3.2)",
        r#"{"loadConcurrency": {"perNodeConfig": [{"number": 4294967296}]}}"#,
    ),
    (
        "prepareQueueLength 0 (L3.8)",
        r#"{"loadConcurrency": {"prepareQueueLength": 0}}"#,
    ),
    (
        "null loadAffinity entry (A2.6)",
        r#"{"loadAffinity": [null]}"#,
    ),
    (
        "loadAffinity invalid label key (A2.8)",
        r#"{"loadAffinity": [{"nodeSelector": {"matchLabels": {"a/b/c": "x"}}}]}"#,
    ),
    (
        "loadAffinity Exists with values (A2.8)",
        r#"{"loadAffinity": [{"nodeSelector": {"matchExpressions": [{"key": "gpu", "operator": "Exists", "values": ["1"]}]}}]}"#,
    ),
    (
        "loadAffinity Gt with a non-integer (A2.8)",
        r#"{"loadAffinity": [{"nodeSelector": {"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["many"]}]}}]}"#,
    ),
    (
        "loadAffinity Lt with a negative integer, not a label value (A2.8)",
        r#"{"loadAffinity": [{"nodeSelector": {"matchExpressions": [{"key": "cpus", "operator": "Lt", "values": ["-1"]}]}}]}"#,
    ),
    (
        "loadAffinity unknown operator (A2.8)",
        r#"{"loadAffinity": [{"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}}]}"#,
    ),
    (
        "second entry for a class (A2.5)",
        r#"{"loadAffinity": [{"storageClass": "gp3"}, {"storageClass": "gp3"}]}"#,
    ),
    (
        "second global entry (A2.5)",
        r#"{"loadAffinity": [{"storageClass": ""}, {}]}"#,
    ),
    (
        "entry shadowed by backupPVC remap (A2.15)",
        r#"{"loadAffinity": [{"storageClass": "gp3"}], "backupPVC": {"gp3": {"storageClass": "gp3-backup"}}}"#,
    ),
    (
        "backupPVC for the empty class (A2.13)",
        r#"{"backupPVC": {"": {"readOnly": true}}}"#,
    ),
    (
        "spcNoRelabeling without readOnly (A2.14)",
        r#"{"backupPVC": {"gp3": {"spcNoRelabeling": true, "readOnly": false}}}"#,
    ),
    (
        "backupPVC invalid class name",
        r#"{"backupPVC": {"gp3": {"storageClass": "GP3_Backup"}}}"#,
    ),
    (
        "backupPVC invalid annotation key",
        r#"{"backupPVC": {"gp3": {"annotations": {"a b": "x"}}}}"#,
    ),
    (
        "podResources missing memory (C1.14, W1.3)",
        r#"{"podResources": {"cpuRequest": "1", "cpuLimit": "2"}}"#,
    ),
    (
        "podResources unparsable (C1.14)",
        r#"{"podResources": {"cpuRequest": "1 core", "cpuLimit": "2", "memoryRequest": "1Gi", "memoryLimit": "2GB"}}"#,
    ),
    (
        "podResources request above limit (C1.14)",
        r#"{"podResources": {"cpuRequest": "2", "cpuLimit": "1500m", "memoryRequest": "1Gi", "memoryLimit": "1G", "ephemeralStorageRequest": "2Gi", "ephemeralStorageLimit": "1Gi"}}"#,
    ),
    (
        "podResources negative (C1.14)",
        r#"{"podResources": {"cpuRequest": "-1", "cpuLimit": "0", "memoryRequest": "1Gi", "memoryLimit": "0"}}"#,
    ),
    (
        "priorityClassName invalid (C1.15)",
        r#"{"priorityClassName": "High Priority"}"#,
    ),
    (
        "cachePVC without class (C1.16)",
        r#"{"cachePVC": {"residentThresholdInMB": 10}}"#,
    ),
    (
        "cachePVC invalid class name (C1.16)",
        r#"{"cachePVC": {"storageClass": "-gp3"}}"#,
    ),
    (
        "cachePVC negative threshold (C1.16)",
        r#"{"cachePVC": {"storageClass": "gp3", "residentThresholdInMB": -1}}"#,
    ),
    (
        "cachePVC overflowing threshold (C1.16)",
        r#"{"cachePVC": {"storageClass": "gp3", "residentThresholdInMB": 9000000000000}}"#,
    ),
    (
        "podLabels invalid (C1.17)",
        r#"{"podLabels": {"app": "a b", "-x": "y"}}"#,
    ),
    (
        "podAnnotations invalid key (C1.17)",
        r#"{"podAnnotations": {"example.com/": "x"}}"#,
    ),
];

#[test]
fn every_finding_message() {
    let mut out = String::new();
    for (name, text) in CASES {
        let loaded = load_json(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!loaded.findings.is_empty(), "{name}: expected a finding");
        out.push_str(&format!("## {name}\n{text}\n"));
        for finding in &loaded.findings {
            out.push_str(&format!("=> [{:?}] {finding}\n", finding.kind));
        }
        out.push('\n');
    }
    insta::assert_snapshot!(out);
}

#[test]
fn valid_settings_produce_no_findings() {
    for text in [
        r#"{"loadConcurrency": {"globalConfig": 1, "perNodeConfig": [{"number": 2147483646}], "prepareQueueLength": 1}}"#,
        r#"{"loadAffinity": [{"nodeSelector": {"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["4"]}, {"key": "a", "operator": "DoesNotExist"}]}}]}"#,
        r#"{"loadAffinity": [{"storageClass": "a"}, {"storageClass": "b"}, {}]}"#,
        r#"{"backupPVC": {"gp3": {"spcNoRelabeling": true, "readOnly": true, "annotations": {"example.com/x": "any value at all"}}}}"#,
        r#"{"podResources": {"cpuRequest": "2", "cpuLimit": "0", "memoryRequest": "1Gi", "memoryLimit": "1Gi"}}"#,
        r#"{"priorityClassName": "", "cachePVC": {"storageClass": "gp3", "residentThresholdInMB": 0}, "podLabels": {}, "podAnnotations": {}}"#,
    ] {
        let loaded = load_json(text).unwrap();
        assert!(loaded.findings.is_empty(), "{text}: {:#?}", loaded.findings);
    }
}

#[test]
fn severities_follow_what_velero_does() {
    let loaded = load_json(r#"{"loadAffinity": [null, {}, {}]}"#).unwrap();
    let got: Vec<(Severity, FindingKind)> = loaded
        .findings
        .iter()
        .map(|f| (f.severity, f.kind))
        .collect();
    assert_eq!(
        got,
        vec![
            (Severity::Error, FindingKind::NullEntry),
            (Severity::Warning, FindingKind::DeadEntry)
        ]
    );
    let json = serde_json::to_string(&loaded.findings[0]).unwrap();
    insta::assert_snapshot!(json, @r#"{"severity":"error","kind":"null-entry","path":"loadAffinity[0]","message":"null entry; remove it","velero":"nil-pointer panic in every data-mover expose that scans this far; the CR stays Accepted until the prepare timeout (A2.6)"}"#);
}
