//! Every command on a large cluster: the bundled example cluster, the
//! example management cluster's Cluster API objects, and a
//! `kubectl get nodes,pods -A -o yaml` dump of 10,000 pods on 500 nodes,
//! each pod with managedFields, status, container statuses, tolerations and
//! a projected volume. The dump is read once, by the reader `-f` uses; each
//! command then runs on it and renders its table and its JSON.

use clap::Parser;
use policyctl::manifest::{Inventory, Source, read_sources};
use policyctl::{Cli, Exit, bundled, commands, output};
use testkit::cluster_dump::{DumpFormat, DumpShape, dump};

const PODS: usize = 10_000;
const NODES: usize = 500;

fn large_cluster() -> Inventory {
    let yaml = String::from_utf8(dump(DumpShape::new(PODS, NODES), DumpFormat::Yaml))
        .expect("the generator writes UTF-8");
    assert!(
        yaml.len() > 50_000_000,
        "a realistic dump is large: {} bytes",
        yaml.len()
    );
    let mut sources = bundled::example_sources();
    // The management cluster's Cluster API objects, for `modules`.
    let management = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/management-cluster"
    );
    for file in ["cluster.yaml", "control-plane.yaml", "workers.yaml"] {
        let path = format!("{management}/{file}");
        let text = std::fs::read_to_string(&path).expect("example file");
        sources.push(Source { name: path, text });
    }
    sources.push(Source {
        name: "dump.yaml".to_owned(),
        text: yaml,
    });
    let mut inventory = read_sources(&sources).expect("the dump reads");
    // As `policyctl` does after reading: the HostInventory kept in a
    // ConfigMap joins the objects.
    let cli = Cli::try_parse_from(["policyctl", "report"]).expect("parses");
    policyctl::host_source::adopt(&mut inventory, &cli.global).expect("the inventory reads");
    inventory
}

/// Runs `policyctl ARGS` on the inventory; returns the table and the JSON.
fn run(inventory: &Inventory, args: &[&str]) -> (String, serde_json::Value) {
    let mut rendered = Vec::new();
    for format in ["table", "json"] {
        let line = std::iter::once("policyctl")
            .chain(args.iter().copied())
            .chain(["-o", format]);
        let cli = Cli::try_parse_from(line).unwrap_or_else(|error| panic!("{args:?}: {error}"));
        let mut stderr = Vec::new();
        let result = commands::execute(&cli.command, &cli.global, inventory, &mut stderr)
            .unwrap_or_else(|error| panic!("{args:?} failed: {error}"));
        assert_eq!(
            result.exit,
            Exit::Success,
            "{args:?}: {}",
            String::from_utf8_lossy(&stderr)
        );
        let mut out = Vec::new();
        output::write(cli.global.output, &result.output, &mut out).expect("renders");
        rendered.push(String::from_utf8(out).expect("UTF-8"));
    }
    let json = serde_json::from_str(&rendered[1]).expect("JSON output");
    (rendered.swap_remove(0), json)
}

#[test]
fn every_command_answers_on_a_dump_of_ten_thousand_pods() {
    let inventory = large_cluster();
    assert!(inventory.pods.len() > PODS);
    assert!(inventory.nodes.len() > NODES);
    assert!(
        inventory
            .pods
            .values()
            .all(|pod| pod.object.metadata.managed_fields.is_none()),
        "managedFields are not kept"
    );
    let dump_pod = inventory
        .pods
        .keys()
        .find(|key| key.namespace == "team-07")
        .expect("a pod of the dump")
        .to_string();

    let (table, _) = run(&inventory, &["concurrency"]);
    assert!(table.contains("node-0499"), "{table}");
    let (_, report) = run(&inventory, &["report"]);
    assert!(
        report["objects"]["Pod"].as_u64() > Some(PODS as u64),
        "{report}"
    );
    for args in [
        &["config", "check"][..],
        &["affinity", "--pvc", "shop/data-shop-0"],
        &["queue"],
        &["soothe"],
        &["schedule", "--pod", "shop/web-7c9f8d6b5-r9t2x"],
        &["schedule", "--pod", &dump_pod],
        &["schedule", "--all"],
        &["diagnose", "--pod", "shop/web-7c9f8d6b5-r9t2x"],
        &["diagnose", "--pod", &dump_pod],
        &["hosts", "plan"],
        &["host-labels"],
        &["modules"],
        &[
            "capacity",
            "--pod",
            "shop/web-7c9f8d6b5-r9t2x",
            "--max",
            "50",
        ],
        &["capacity", "--pod", &dump_pod, "--max", "50"],
    ] {
        let (table, json) = run(&inventory, args);
        assert!(!table.trim().is_empty(), "{args:?} printed nothing");
        assert!(!json.is_null(), "{args:?}");
    }
}
