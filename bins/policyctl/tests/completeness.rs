//! Every answer states which kinds it needed and how each was read, with
//! `-f` inputs that lack some of them. (Kinds a cluster would not let live
//! mode list are in `live.rs` and `live_real_server.rs`.)

mod common;

use common::{example, ok, run};
use policyctl::Exit;
use serde_json::{Value, json};

fn json_of(stdout: &str) -> Value {
    serde_json::from_str(stdout).expect("JSON output")
}

/// `queue` needs Backups and Namespaces: a file of Backups alone states
/// that the input has no Namespace, and the answer is complete (a file
/// cannot tell "none in the cluster" from "not collected"; what it lacks
/// is taken as none, and said).
#[test]
fn a_kind_the_input_lacks_is_stated_in_json_and_table() {
    let backups = example("backups.yaml");
    let json = ok(&["-f", &backups, "queue", "-o", "json"]);
    let document = json_of(&json.stdout);
    assert_eq!(
        document["inputs"],
        json!({"Backup": "read", "Namespace": "not in input"})
    );
    assert_eq!(document["complete"], true);
    assert_eq!(document["incomplete"], json!({}));

    let table = ok(&["-f", &backups, "queue"]);
    assert!(
        table.stdout.ends_with(
            "\nInputs not read with objects:\n  not in the input (taken as none):\n    Namespace\n"
        ),
        "{}",
        table.stdout
    );
    assert!(!table.stdout.contains("INCOMPLETE"), "{}", table.stdout);
}

/// With every kind a command needs, the table has no closing block and the
/// JSON states each as read.
#[test]
fn every_kind_read_needs_no_closing_block() {
    let files = [example("backups.yaml"), example("namespaces.yaml")];
    let table = ok(&["-f", &files[0], "-f", &files[1], "queue"]);
    assert!(
        !table.stdout.contains("Inputs not read"),
        "{}",
        table.stdout
    );
    let json = ok(&["-f", &files[0], "-f", &files[1], "queue", "-o", "json"]);
    let document = json_of(&json.stdout);
    assert_eq!(
        document["inputs"],
        json!({"Backup": "read", "Namespace": "read"})
    );
}

/// `report` states every kind; a file of Nodes alone leaves all the
/// others "not in input", in the JSON and in the table's closing block.
#[test]
fn report_on_a_partial_dump_states_every_kind_it_lacks() {
    let nodes = example("nodes.yaml");
    let json = ok(&["-f", &nodes, "report", "-o", "json"]);
    let document = json_of(&json.stdout);
    let inputs = document["inputs"].as_object().unwrap();
    assert_eq!(inputs.len(), policyctl::live::Kind::ALL.len());
    assert_eq!(inputs["Node"], "read");
    for (kind, status) in inputs {
        if kind != "Node" {
            assert_eq!(status, "not in input", "{kind}");
        }
    }
    assert_eq!(document["complete"], true);
    let table = ok(&["-f", &nodes, "report"]);
    insta::assert_snapshot!(
        "report_inputs_block_of_a_nodes_only_dump",
        &table.stdout[table.stdout.find("\nInputs not read").unwrap()..]
    );
}

/// `--config FILE` gives the configuration: the ConfigMaps of the input
/// are then no dependency of `config check`.
#[test]
fn a_config_file_takes_the_config_map_out_of_the_dependencies() {
    let config = example("node-agent-config.yaml");
    let nodes = example("nodes.yaml");
    let json = ok(&[
        "-f", &nodes, "--config", &config, "config", "check", "-o", "json",
    ]);
    assert_eq!(json_of(&json.stdout)["inputs"], json!({}));
    let json = ok(&["-f", &nodes, "config", "check", "-o", "json"]);
    assert_eq!(
        json_of(&json.stdout)["inputs"],
        json!({"ConfigMap": "not in input"})
    );
}

/// `--allow-partial` and `--request-timeout` are accepted everywhere;
/// a malformed duration is a usage error naming the forms it takes.
#[test]
fn request_timeout_values_read_as_kubectl_reads_them() {
    let backups = example("backups.yaml");
    for value in ["0", "30", "30s", "1m", "1h30m", "1.5s"] {
        ok(&["-f", &backups, "--request-timeout", value, "queue"]);
    }
    for value in ["-1s", "5x", "soon", ""] {
        let flag = format!("--request-timeout={value}");
        let refused = run(&["-f", &backups, &flag, "queue"]);
        assert_eq!(refused.exit, Exit::Usage, "{value:?}: {}", refused.stderr);
        assert!(
            refused.stderr.contains("30s, 2m or 1h30m"),
            "{}",
            refused.stderr
        );
    }
    ok(&["-f", &backups, "--allow-partial", "queue"]);
}
