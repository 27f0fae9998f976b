//! Loads a node-agent configuration, prints its findings, the data-mover
//! pod affinity for a few storage classes and the per-node concurrency of
//! some example nodes.
//!
//! `cargo run -p affinity-translate --example translate -- [config.json] [storage-class...]`
//! (without a file, a bundled sample is used).

use std::collections::BTreeMap;
use std::process::ExitCode;

use affinity_translate::{
    BackupVolume, NodeConcurrency, NodeOs, RestoreVolume, backup_fragment, load_json,
    restore_fragment,
};

const BUNDLED: &str = include_str!("../tests/data/full.json");

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (name, text) = match args.next() {
        Some(path) => match std::fs::read_to_string(&path) {
            Ok(text) => (path, text),
            Err(error) => {
                eprintln!("cannot read {path}: {error}");
                return ExitCode::FAILURE;
            }
        },
        None => (
            "bundled tests/data/full.json".to_owned(),
            BUNDLED.to_owned(),
        ),
    };
    let mut classes: Vec<String> = args.collect();
    let loaded = match load_json(&text) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("{name}: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("# {name}\n\n## findings");
    if loaded.findings.is_empty() {
        println!("none");
    }
    for finding in &loaded.findings {
        println!("- {finding}");
    }
    let config = &loaded.config;
    if classes.is_empty() {
        classes.push("standard".to_owned());
        classes.extend(
            config
                .load_affinity
                .iter()
                .flatten()
                .flatten()
                .map(|e| e.storage_class().to_owned())
                .filter(|c| !c.is_empty()),
        );
        classes.extend(config.backup_pvc.iter().flatten().map(|(k, _)| k.clone()));
        classes.sort();
        classes.dedup();
    }
    for class in &classes {
        let backup = backup_fragment(
            config,
            &BackupVolume {
                source_storage_class: class,
                ..Default::default()
            },
            NodeOs::Linux,
        );
        let restore = restore_fragment(
            config,
            &RestoreVolume {
                storage_class: class,
                ..Default::default()
            },
            NodeOs::Linux,
        );
        for (what, fragment) in [("backup", backup), ("restore", restore)] {
            println!("\n## {what} pod for storage class {class:?} (Linux)");
            match serde_json::to_string_pretty(&fragment) {
                Ok(json) => println!("{json}"),
                Err(error) => println!("cannot render: {error}"),
            }
        }
    }
    let (concurrency, _) = NodeConcurrency::compile(config.load_concurrency.as_ref());
    println!(
        "\n## per-node concurrency (global {})",
        concurrency.global()
    );
    let examples = [
        BTreeMap::from([("kubernetes.io/hostname".to_owned(), "node-1".to_owned())]),
        BTreeMap::from([
            ("kubernetes.io/hostname".to_owned(), "node-2".to_owned()),
            (
                "node-role.kubernetes.io/backup".to_owned(),
                "true".to_owned(),
            ),
        ]),
    ];
    for labels in &examples {
        let rendered: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!(
            "- {}: {}",
            rendered.join(","),
            concurrency.for_labels(labels)
        );
    }
    ExitCode::SUCCESS
}
