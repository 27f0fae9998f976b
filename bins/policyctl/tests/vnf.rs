//! `policyctl vnf translate` and `vnf plan` (E.1–E.6) on the Tacker example
//! (examples/tacker) and on heat-translator's cases.

mod common;

use common::{ok, run};
use policyctl::Exit;
use serde_json::Value;

const EXAMPLE: &str = "../../examples/tacker";
const CASES: &str = "../../crates/anti-affinity-placement/tests/data/tacker/heat-translator";

fn example(file: &str) -> String {
    format!("{EXAMPLE}/{file}")
}

fn plan_args() -> Vec<String> {
    [
        "vnf",
        "plan",
        "--vnfd",
        &example("Definitions"),
        "--hypervisors",
        &example("hypervisors.json"),
        "--servers",
        &example("servers.json"),
        "-f",
        &example("nodes.yaml"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn translate_writes_heat_translators_yaml_and_json_byte_for_byte() {
    for case in [
        "scope_nfvi_node",
        "unsupported_scope",
        "unsupported_targets",
        "mixed_targets",
    ] {
        let vnfd = format!("{CASES}/{case}.vnfd.yaml");
        for (format, extension) in [("yaml", "yaml"), ("json", "json")] {
            let out = ok(&["vnf", "translate", "--vnfd", &vnfd, "-o", format]);
            let expected =
                std::fs::read_to_string(format!("{CASES}/{case}.hot.{extension}")).unwrap();
            assert_eq!(out.stdout, expected, "{case} -o {format}");
        }
    }
}

#[test]
fn translate_warns_on_stderr_of_every_dropped_rule_in_yaml_mode() {
    let vnfd = format!("{CASES}/unsupported_targets.vnfd.yaml");
    let out = ok(&["vnf", "translate", "--vnfd", &vnfd, "-o", "yaml"]);
    assert_eq!(out.stderr.lines().count(), 4, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("policies[1].AntiAffinity: target \"AntiAffinityGroup\" is a group"),
        "{}",
        out.stderr
    );
}

#[test]
fn translate_explains_the_placement_group_trap_of_the_example() {
    let out = ok(&[
        "vnf",
        "translate",
        "--vnfd",
        &example("Definitions/kubernetes_top.vnfd.yaml"),
    ]);
    assert!(
        out.stdout.contains("`targets: [masterNode]`"),
        "{}",
        out.stdout
    );
    insta::assert_snapshot!("vnf_translate_table", out.stdout);
}

#[test]
fn plan_names_the_scale_level_that_fails_with_no_valid_host() {
    let args = plan_args();
    let mut json_args: Vec<&str> = args.iter().map(String::as_str).collect();
    json_args.extend(["-o", "json"]);
    let document: Value = serde_json::from_str(&ok(&json_args).stdout).unwrap();
    let plan = &document["plan"];
    assert_eq!(plan["firstNoValidHost"], "scale worker_instance to level 2");
    let steps = plan["steps"].as_array().unwrap();
    let fits: Vec<bool> = steps.iter().map(|s| s["fits"].as_bool().unwrap()).collect();
    assert_eq!(fits, [true, true, false]);
    assert_eq!(steps[2]["groups"][0]["noValidHost"], 1);
    let workers = plan["workers"].as_array().unwrap();
    let worker1 = workers
        .iter()
        .find(|w| w["server"] == "workerNode-1")
        .unwrap();
    assert_eq!(worker1["labels"]["CIS-node"], "compute-c");
    assert_eq!(worker1["guessedNode"], "worker46");
    assert_eq!(worker1["nodeExists"], false);
    assert_eq!(worker1["label"], "noNode");
    // worker45 was labelled on compute-a and has moved to compute-b.
    let worker0 = workers
        .iter()
        .find(|w| w["server"] == "workerNode-0")
        .unwrap();
    assert_eq!(worker0["label"]["stale"]["labelled"], "compute-a");
    assert_eq!(document["findings"][0]["finding"], "group-target");
}

#[test]
fn plan_table_snapshot() {
    let args = plan_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    insta::assert_snapshot!("vnf_plan_table", ok(&args).stdout);
}

#[test]
fn plan_without_hosts_is_a_usage_error() {
    let out = run(&["vnf", "plan", "--vnfd", &example("Definitions")]);
    assert_eq!(out.exit, Exit::Usage);
    assert!(out.stderr.contains("--hypervisors"), "{}", out.stderr);
}

#[test]
fn a_missing_import_names_the_file_the_path_and_the_value() {
    let dir = std::env::temp_dir().join(format!("policyctl-vnf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("top.yaml");
    std::fs::write(
        &file,
        "imports:\n  - etsi_nfv_sol001_common_types.yaml\n  - df.yaml\n",
    )
    .unwrap();
    let out = run(&["vnf", "translate", "--vnfd", file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.exit, Exit::Failure);
    let expected = format!(
        "error: {}: imports[1]: import \"df.yaml\" ({}): no such file\n",
        file.display(),
        dir.join("df.yaml").display()
    );
    assert_eq!(out.stderr, expected);
}

#[test]
fn a_bad_server_list_names_the_file_the_entry_and_the_field() {
    let dir = std::env::temp_dir().join(format!("policyctl-vnf-servers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let servers = dir.join("servers.json");
    std::fs::write(&servers, r#"[{"Name": "w-0", "Host": 7}]"#).unwrap();
    let out = run(&[
        "vnf",
        "plan",
        "--vnfd",
        &example("Definitions"),
        "--servers",
        servers.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.exit, Exit::Failure);
    assert!(
        out.stderr.contains(&format!(
            "--servers {}: [0].\"Host\": expected a string, found 7",
            servers.display()
        )),
        "{}",
        out.stderr
    );
}

/// With the package's BaseHOT, its server groups are the ones that count
/// (E.7): the workers are kept apart through the nested template; the
/// masters' hint sits on the scaling group, where Heat has no such
/// property, so the masters get no group.
#[test]
fn plan_with_a_base_hot_uses_its_server_groups_and_names_the_hint_that_places_nothing() {
    let mut args = plan_args();
    args.extend([
        "--base-hot".to_owned(),
        example("BaseHOT/simple/kubernetes_hot_top.yaml"),
    ]);
    let table_args: Vec<&str> = args.iter().map(String::as_str).collect();
    insta::assert_snapshot!("vnf_plan_base_hot_table", ok(&table_args).stdout);
    let mut json_args = table_args.clone();
    json_args.extend(["-o", "json"]);
    let document: Value = serde_json::from_str(&ok(&json_args).stdout).unwrap();
    let vdus = document["plan"]["vdus"].as_array().unwrap();
    let group_of = |name: &str| {
        vdus.iter()
            .find(|v| v["name"] == name)
            .map(|v| v["serverGroup"].clone())
            .unwrap()
    };
    assert_eq!(group_of("workerNode"), "k8s-workers");
    assert_eq!(group_of("masterNode"), Value::Null);
    assert_eq!(
        document["plan"]["firstNoValidHost"],
        "scale worker_instance to level 2"
    );
    let codes: Vec<&str> = document["baseHot"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["finding"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "hint-on-scaling-group",
            "no-server-group",
            "unused-server-group"
        ]
    );
    assert_eq!(document["findings"], serde_json::json!([]));
}

/// With the CNF's manifests too, the plan follows the layers down to the
/// pods (E.8): compute host → worker (by address) → Node → pod.
#[test]
fn plan_with_the_cnf_joins_hosts_workers_and_pods() {
    let mut args = plan_args();
    args.extend(["-f".to_owned(), example("cnf.yaml")]);
    let table_args: Vec<&str> = args.iter().map(String::as_str).collect();
    insta::assert_snapshot!("vnf_plan_cnf_table", ok(&table_args).stdout);
    let mut json_args = table_args.clone();
    json_args.extend(["-o", "json"]);
    let document: Value = serde_json::from_str(&ok(&json_args).stdout).unwrap();
    let upf = &document["cnf"][0];
    assert_eq!(upf["workload"], "deployment/cnf/upf");
    assert_eq!(upf["rule"], "required");
    assert_eq!(upf["labelledHosts"], 1);
    assert_eq!(upf["beyondLabelledHosts"], 2);
    assert_eq!(
        upf["podsPerHost"],
        serde_json::json!({
            "compute-b": ["cnf/upf-7d4b9c-a"],
            "compute-c": ["cnf/upf-7d4b9c-b", "cnf/upf-7d4b9c-c"],
        })
    );
    assert_eq!(upf["sharedHosts"], serde_json::json!(["compute-c"]));
}

/// `report --vnfd …` carries the same plan as its `vnf` section, joined
/// with the report's own input (E.8).
#[test]
fn report_with_a_vnfd_has_the_vnf_section_of_vnf_plan() {
    let inputs = [
        "--vnfd",
        &example("Definitions"),
        "--servers",
        &example("servers.json"),
        "-f",
        &example("nodes.yaml"),
        "-f",
        &example("cnf.yaml"),
        "-o",
        "json",
    ];
    // The completeness fields are each command's own.
    let document = |args: &[&str]| {
        let mut value: Value = serde_json::from_str(&ok(args).stdout).unwrap();
        for key in ["complete", "incomplete", "inputs"] {
            if let Some(fields) = value.as_object_mut() {
                fields.remove(key);
            }
        }
        value
    };
    let plan = document(&[&["vnf", "plan"][..], &inputs].concat());
    let report = document(&[&["report"][..], &inputs].concat());
    assert_eq!(report["vnf"], plan);
    assert_eq!(report["vnf"]["cnf"][0]["sharedHosts"][0], "compute-c");
}

#[test]
fn report_options_of_the_vnf_section_need_the_vnfd() {
    let out = run(&["report", "--servers", &example("servers.json")]);
    assert_eq!(out.exit, Exit::Usage);
    assert!(out.stderr.contains("--vnfd"), "{}", out.stderr);
}
