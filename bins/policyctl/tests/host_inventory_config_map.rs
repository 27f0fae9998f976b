//! A HostInventory kept in a ConfigMap: found by its data key and kind,
//! or named with `--inventory-config-map`; its problems named by ConfigMap,
//! key, field path and value.

mod common;

use common::{Run, run_with_stdin};
use policyctl::Exit;

const NODE: &str = "apiVersion: v1
kind: Node
metadata: {name: worker-1, labels: {kubernetes.io/hostname: worker-1}}
";

/// A ConfigMap `ns/name` whose `key` holds `value` (indented under a
/// literal block).
fn config_map(namespace: &str, name: &str, key: &str, value: &str) -> String {
    let indented: String = value.lines().map(|line| format!("    {line}\n")).collect();
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {namespace}}}\ndata:\n  {key}: |\n{indented}"
    )
}

const INVENTORY: &str = "apiVersion: policyctl/v1alpha1
kind: HostInventory
hosts:
- {name: esx-1, capacity: {cpu: 8}}
groups:
- {name: md-0, policy: soft-anti-affinity}
vms:
- {name: worker-1, group: md-0, requests: {cpu: 2}}
";

/// An Ansible inventory: YAML under the same key, someone else's.
const ANSIBLE: &str = "all:
  hosts:
    web1.example.com: {}
";

fn hosts_plan(objects: &[String], flags: &[&str]) -> Run {
    let stdin = objects.join("---\n");
    let mut args = vec!["-f", "-"];
    args.extend_from_slice(flags);
    args.extend(["hosts", "plan"]);
    run_with_stdin(&args, &stdin)
}

#[test]
fn a_config_map_holding_a_host_inventory_under_the_key_is_read_as_one() {
    let run = hosts_plan(
        &[
            NODE.to_owned(),
            config_map("kube-system", "hosts", "inventory.yaml", INVENTORY),
            config_map("ops", "ansible", "inventory.yaml", ANSIBLE),
        ],
        &[],
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    assert!(
        run.stdout.starts_with(
            "HostInventory ConfigMap kube-system/hosts, data key \"inventory.yaml\", document 1: 1 VM(s) to place\n\nVM        HOST   REASON\nworker-1  esx-1\n"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn another_key_is_read_only_when_given_with_inventory_key() {
    let objects = [config_map("kube-system", "hosts", "hosts.json", INVENTORY)];
    let unread = hosts_plan(&objects, &[]);
    assert_eq!(unread.exit, Exit::Failure);
    assert!(
        unread.stderr.contains("no HostInventory"),
        "{}",
        unread.stderr
    );
    let read = hosts_plan(&objects, &["--inventory-key", "hosts.json"]);
    assert_eq!(read.exit, Exit::Success, "{}", read.stderr);
}

#[test]
fn a_named_config_map_must_exist_and_hold_a_host_inventory() {
    let objects = [
        config_map("kube-system", "hosts", "inventory.yaml", INVENTORY),
        config_map("ops", "ansible", "inventory.yaml", ANSIBLE),
    ];
    let missing = hosts_plan(&objects, &["--inventory-config-map", "ops/nope"]);
    assert_eq!(missing.exit, Exit::Failure);
    assert_eq!(
        missing.stderr,
        "error: --inventory-config-map ops/nope: no such ConfigMap in the input\n"
    );
    let other = hosts_plan(&objects, &["--inventory-config-map", "ops/ansible"]);
    assert_eq!(other.exit, Exit::Failure);
    assert_eq!(
        other.stderr,
        "error: ConfigMap ops/ansible, data key \"inventory.yaml\": not a HostInventory (apiVersion missing, kind missing); expected apiVersion policyctl/v1alpha1 and kind HostInventory\n"
    );
    // Named, only that one is read: the other candidates are left alone.
    let named = hosts_plan(&objects, &["--inventory-configmap", "hosts"]);
    assert_eq!(named.exit, Exit::Success, "{}", named.stderr);
}

#[test]
fn a_name_without_namespace_matching_two_config_maps_is_refused() {
    let objects = [
        config_map("a", "hosts", "inventory.yaml", INVENTORY),
        config_map("b", "hosts", "inventory.yaml", INVENTORY),
    ];
    let run = hosts_plan(&objects, &["--inventory-config-map", "hosts"]);
    assert_eq!(run.exit, Exit::Failure);
    assert_eq!(
        run.stderr,
        "error: --inventory-config-map hosts matches 2 ConfigMaps (a/hosts, b/hosts); name one as NAMESPACE/NAME\n"
    );
    // Unnamed, both are read, and `hosts` wants exactly one.
    let both = hosts_plan(&objects, &[]);
    assert_eq!(both.exit, Exit::Failure);
    assert!(
        both.stderr.contains("2 HostInventories in the input (ConfigMap a/hosts, data key \"inventory.yaml\", document 1; ConfigMap b/hosts, data key \"inventory.yaml\", document 1); give exactly one"),
        "{}",
        both.stderr
    );
}

#[test]
fn a_bad_field_is_named_with_its_config_map_key_and_path() {
    let bad = INVENTORY.replace("policy: soft-anti-affinity", "policy: spread");
    let run = hosts_plan(
        &[config_map("kube-system", "hosts", "inventory.yaml", &bad)],
        &[],
    );
    assert_eq!(run.exit, Exit::Failure);
    assert_eq!(
        run.stderr,
        "error: ConfigMap kube-system/hosts, data key \"inventory.yaml\", document 1: HostInventory: field `groups[0].policy`: unknown variant `spread`, expected `soft-anti-affinity` or `anti-affinity` (offending value: \"spread\")\n"
    );
}

#[test]
fn commands_that_read_no_host_inventory_ignore_the_flag() {
    let run = run_with_stdin(
        &[
            "-f",
            "-",
            "--inventory-config-map",
            "ops/nope",
            "schedule",
            "--all",
        ],
        NODE,
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
}

#[test]
fn an_unreadable_inventory_under_the_key_is_an_error_not_a_missing_inventory() {
    let broken = "apiVersion: policyctl/v1alpha1\nkind: HostInventory\nhosts: [\n";
    let run = hosts_plan(
        &[config_map("kube-system", "hosts", "inventory.yaml", broken)],
        &[],
    );
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr
            .starts_with("error: ConfigMap kube-system/hosts, data key \"inventory.yaml\""),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("no HostInventory"), "{}", run.stderr);
}
