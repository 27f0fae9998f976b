//! `--velero-version`: which node-agent configuration keys are read, as
//! each Velero release reads them (rule V1.1), and where the version comes
//! from when the flag is not given.

mod common;

use common::{run, run_with_stdin};
use policyctl::Exit;
use serde_json::Value;

/// A configuration with every key some release does not read yet.
const EVERY_GATED_KEY: &str = r#"{
  "privilegedFsBackup": true,
  "cachePVC": {"storageClass": "gp3", "residentThresholdInMB": 1024},
  "podAnnotations": {"team": "storage"},
  "podLabels": {"team": "storage"},
  "backupPVC": {"gp3": {"storageClass": "gp3-snap", "annotations": {"a": "b"},
                        "secretNames": ["vault"], "configMapNames": ["vault-ca"]}},
  "restorePVC": {"ignoreDelayBinding": true, "secretNames": ["vault"], "configMapNames": ["vault-ca"]},
  "csiSnapshotMetadataServiceConfigs": {"saName": "cbt"}
}"#;

fn config_file(name: &str, text: &str) -> String {
    let path = std::env::temp_dir().join(format!("policyctl-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The JSON of `config check` with the configuration file and options.
fn check(config: &str, options: &[&str]) -> Value {
    let mut args = vec!["--config", config];
    args.extend_from_slice(options);
    args.extend(["config", "check", "-o", "json"]);
    let run = run(&args);
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

/// The paths of the findings that a version does not read a key.
fn not_read(document: &Value) -> Vec<String> {
    document["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["message"].as_str().unwrap().contains(" ignores it"))
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn versions_differ_exactly_on_the_keys_added_between_them() {
    let config = config_file("gated.json", EVERY_GATED_KEY);
    let main = check(&config, &["--velero-version", "main"]);
    let released = check(&config, &["--velero-version", "1.18.1"]);
    assert_eq!(main["veleroVersion"], "main");
    assert_eq!(released["veleroVersion"], "1.18.1");
    assert_eq!(not_read(&main), Vec::<String>::new());
    assert_eq!(
        not_read(&released),
        [
            "backupPVC.gp3.secretNames",
            "backupPVC.gp3.configMapNames",
            "restorePVC.secretNames",
            "restorePVC.configMapNames",
            "csiSnapshotMetadataServiceConfigs",
        ]
    );
    // Every other finding is the same, and what 1.18.1 ignores is not in
    // its configuration.
    let others = |document: &Value| -> Vec<Value> {
        let ignored = not_read(document);
        document["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| !ignored.contains(&f["path"].as_str().unwrap().to_owned()))
            .cloned()
            .collect()
    };
    assert_eq!(others(&main), others(&released));
    assert_eq!(
        released["config"]["restorePVC"],
        serde_json::json!({"ignoreDelayBinding": true})
    );
    assert!(
        released["config"]
            .get("csiSnapshotMetadataServiceConfigs")
            .is_none()
    );
    assert_eq!(
        main["config"]["csiSnapshotMetadataServiceConfigs"]["saName"],
        "cbt"
    );

    let oldest = check(&config, &["--velero-version", "1.17.0"]);
    assert_eq!(not_read(&oldest).len(), 10, "{oldest}");
    let _ = std::fs::remove_file(config);
}

#[test]
fn without_the_flag_the_velero_deployment_image_decides_else_the_newest_release() {
    let config = config_file("cache.json", r#"{"cachePVC": {"storageClass": "gp3"}}"#);
    let deployment = |image: &str| {
        format!(
            "apiVersion: apps/v1
kind: Deployment
metadata: {{name: velero, namespace: velero}}
spec:
  selector: {{matchLabels: {{app: velero}}}}
  template:
    metadata: {{labels: {{app: velero}}}}
    spec:
      containers:
      - {{name: velero, image: {image}}}
"
        )
    };
    let table = |stdin: &str, options: &[&str]| {
        let mut args = vec!["-f", "-", "--config", config.as_str()];
        args.extend_from_slice(options);
        args.extend(["config", "check"]);
        let run = run_with_stdin(&args, stdin);
        assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
        run.stdout
    };
    let old = table(&deployment("velero/velero:v1.17.2"), &[]);
    assert!(
        old.contains("Read as Velero 1.17.2 reads it (the image of Deployment velero/velero)\n"),
        "{old}"
    );
    // The table wraps the message after "1.17.2".
    assert!(
        old.contains("key \"cachePVC\" is read from Velero 1.18.0 on; Velero 1.17.2"),
        "{old}"
    );
    let flag = table(
        &deployment("velero/velero:v1.17.2"),
        &["--velero-version", "1.18"],
    );
    assert!(
        flag.contains("Read as Velero 1.18.3 reads it (--velero-version)\nNo findings.\n"),
        "{flag}"
    );
    let untagged = table(&deployment("registry.example.com/velero/velero:main"), &[]);
    assert!(
        untagged.contains(
            "Read as Velero 1.18.3 reads it (the newest release; set --velero-version)\nNo findings.\n"
        ),
        "{untagged}"
    );
    let _ = std::fs::remove_file(config);
}
