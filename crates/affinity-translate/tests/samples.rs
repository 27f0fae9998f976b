//! The sample configurations of the design documents and the spec
//! (`tests/data/`), loaded, validated and translated.

use std::collections::BTreeSet;

use affinity_translate::{
    BackupVolume, NodeConcurrency, NodeOs, RestoreVolume, backup_fragment, load_json,
    restore_fragment,
};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn report(file: &str) -> Value {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let loaded = match load_json(&text) {
        Ok(loaded) => loaded,
        Err(error) => return json!({ "error": error.to_string() }),
    };
    let config = &loaded.config;
    let mut classes: BTreeSet<String> = BTreeSet::from([String::new(), "other".to_owned()]);
    for entry in config.load_affinity.iter().flatten().flatten() {
        classes.insert(entry.storage_class().to_owned());
    }
    classes.extend(config.backup_pvc.iter().flatten().map(|(k, _)| k.clone()));
    let attached = vec!["node-b".to_owned(), "node-a".to_owned()];
    let mut fragments = serde_json::Map::new();
    for class in classes.iter().filter(|c| !c.is_empty()) {
        for os in [NodeOs::Linux, NodeOs::Windows] {
            let fragment = backup_fragment(
                config,
                &BackupVolume {
                    source_storage_class: class,
                    attached_nodes: &attached,
                    ..Default::default()
                },
                os,
            );
            fragments.insert(
                format!("backup {class} {os:?}"),
                serde_json::to_value(fragment).unwrap(),
            );
        }
    }
    for class in &classes {
        let fragment = restore_fragment(
            config,
            &RestoreVolume {
                storage_class: class,
                ..Default::default()
            },
            NodeOs::Linux,
        );
        fragments.insert(
            format!("restore {class:?} Linux"),
            serde_json::to_value(fragment).unwrap(),
        );
    }
    let (concurrency, _) = NodeConcurrency::compile(config.load_concurrency.as_ref());
    let nodes = [
        node("node1", &[("kubernetes.io/hostname", "node1")]),
        node(
            "node2",
            &[
                ("kubernetes.io/hostname", "node2"),
                ("beta.kubernetes.io/instance-type", "Standard_B4ms"),
                ("node-role.kubernetes.io/backup", "true"),
            ],
        ),
        node("node3", &[("kubernetes.io/hostname", "node3")]),
    ];
    json!({
        "findings": loaded.findings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "config": config,
        "fragments": fragments,
        "concurrency": concurrency.for_nodes(&nodes),
    })
}

macro_rules! sample {
    ($name:ident, $file:literal) => {
        #[test]
        fn $name() {
            insta::assert_json_snapshot!(report($file));
        }
    };
}

sample!(design_load_affinity_sample, "design_load_affinity.json");
sample!(design_load_soothing_sample, "design_load_soothing.json");
sample!(
    docs_prepare_queue_sample_at_top_level_warns,
    "docs_prepare_queue_top_level.json"
);
sample!(
    docs_cache_threshold_in_gb_warns,
    "docs_cache_threshold_in_gb.json"
);
sample!(
    docs_backup_pvc_bool_annotation_fails,
    "docs_backup_pvc_bool_annotation.json"
);
sample!(storage_class_entries_sample, "storage_class_entries.json");
sample!(full_sample, "full.json");
sample!(problems_sample, "problems.json");
