//! `tacker::base_hot` (E.7): server groups, hints through nested templates,
//! scaling groups and the findings of a Tacker BaseHOT.

use std::collections::BTreeMap;
use std::path::Path;

use anti_affinity_placement::tacker::base_hot::{BaseHot, HotFindingKind, read_base_hot};
use anti_affinity_placement::tacker::vnfd::{LoadResult, VnfdError};

/// Reads `top` with nested templates from `files` (name → text).
fn read(top: &str, files: &[(&str, &str)]) -> Result<BaseHot, VnfdError> {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
        .collect();
    read_base_hot("hot/top.yaml", top, &mut |name| -> LoadResult {
        Ok(files.get(name).cloned())
    })
}

const NESTED_WITH_PARAM: &str = "resources:\n  worker:\n    type: OS::Nova::Server\n    properties:\n      scheduler_hints:\n        group: {get_param: sg}\n";

#[test]
fn a_group_passed_down_to_the_nested_server_makes_its_vdu_a_member() {
    let top = "parameters:\n  group_name: {type: string, default: spread-workers}\nresources:\n  srvgroup:\n    type: OS::Nova::ServerGroup\n    properties:\n      name: {get_param: group_name}\n      policies: [anti-affinity]\n  workers:\n    type: OS::Heat::AutoScalingGroup\n    properties:\n      min_size: 2\n      max_size: 5\n      desired_capacity: {get_param: [nfv, VDU, worker, desired_capacity]}\n      resource:\n        type: worker.yaml\n        properties:\n          sg: {get_resource: srvgroup}\n";
    let hot = read(top, &[("hot/nested/worker.yaml", NESTED_WITH_PARAM)]).unwrap();
    let group = &hot.translation.groups[0];
    assert_eq!(group.name, "spread-workers");
    assert_eq!(group.policy, "anti-affinity");
    assert_eq!(group.members, ["worker"]);
    assert_eq!(
        hot.translation.group_of("worker").map(|g| g.name.as_str()),
        Some("spread-workers")
    );
    assert_eq!(hot.scaling[0].vdus, ["worker"]);
    assert_eq!(
        (
            hot.scaling[0].min,
            hot.scaling[0].max,
            hot.scaling[0].desired
        ),
        (Some(2), Some(5), None)
    );
    assert!(hot.findings.is_empty(), "{:?}", hot.findings);
}

#[test]
fn a_nested_template_beside_the_top_one_is_found_before_the_nested_directory() {
    let top = "resources:\n  sg:\n    type: OS::Nova::ServerGroup\n    properties: {policies: [soft-anti-affinity]}\n  workers:\n    type: OS::Heat::AutoScalingGroup\n    properties:\n      resource:\n        type: worker.yaml\n        properties: {sg: {get_resource: sg}}\n";
    let hot = read(
        top,
        &[
            ("hot/worker.yaml", NESTED_WITH_PARAM),
            ("hot/nested/worker.yaml", "resources: {}\n"),
        ],
    )
    .unwrap();
    // No `name`: Nova's group is named after the resource.
    assert_eq!(hot.translation.groups[0].name, "sg");
    assert_eq!(hot.translation.groups[0].policy, "soft-anti-affinity");
    assert_eq!(hot.translation.groups[0].members, ["worker"]);
}

#[test]
fn a_group_without_policies_is_anti_affinity_as_heat_defaults_it() {
    let top = "resources:\n  sg:\n    type: OS::Nova::ServerGroup\n  vdu:\n    type: OS::Nova::Server\n    properties:\n      scheduler_hints: {group: {get_resource: sg}}\n";
    let hot = read(top, &[]).unwrap();
    assert_eq!(hot.translation.groups[0].policy, "anti-affinity");
    assert_eq!(hot.translation.hints, [("vdu".to_owned(), "sg".to_owned())]);
}

#[test]
fn a_hint_on_the_scaling_group_itself_is_a_finding_and_places_nothing() {
    let top = "resources:\n  sg:\n    type: OS::Nova::ServerGroup\n    properties: {policies: [anti-affinity]}\n  workers:\n    type: OS::Heat::AutoScalingGroup\n    properties:\n      scheduler_hints: {group: {get_resource: sg}}\n      resource: {type: worker.yaml}\n";
    let nested =
        "resources:\n  worker:\n    type: OS::Nova::Server\n    properties: {name: worker}\n";
    let hot = read(top, &[("hot/nested/worker.yaml", nested)]).unwrap();
    let kinds: Vec<&HotFindingKind> = hot.findings.iter().map(|f| &f.kind).collect();
    assert_eq!(
        kinds,
        [
            &HotFindingKind::HintOnScalingGroup,
            &HotFindingKind::NoHint,
            &HotFindingKind::UnusedGroup
        ]
    );
    assert_eq!(
        hot.findings[0].path,
        "resources.workers.properties.scheduler_hints"
    );
    assert_eq!(hot.findings[1].file, "hot/nested/worker.yaml");
    assert!(hot.translation.group_of("worker").is_none());
}

#[test]
fn a_parameter_the_scaling_group_does_not_pass_is_an_unresolved_hint() {
    let top = "resources:\n  sg:\n    type: OS::Nova::ServerGroup\n  workers:\n    type: OS::Heat::AutoScalingGroup\n    properties:\n      resource:\n        type: worker.yaml\n        properties: {other: {get_resource: sg}}\n";
    let hot = read(top, &[("hot/nested/worker.yaml", NESTED_WITH_PARAM)]).unwrap();
    assert_eq!(
        hot.findings[0].kind,
        HotFindingKind::UnresolvedHint {
            value: "{get_param: sg}".to_owned()
        },
        "{}",
        hot.findings[0]
    );
    assert_eq!(
        hot.findings[0].path,
        "resources.worker.properties.scheduler_hints.group"
    );
}

#[test]
fn a_missing_nested_template_is_a_finding() {
    let top = "resources:\n  workers:\n    type: OS::Heat::AutoScalingGroup\n    properties:\n      resource: {type: gone.yaml}\n";
    let hot = read(top, &[]).unwrap();
    assert_eq!(
        hot.findings[0].kind,
        HotFindingKind::MissingNested {
            template: "gone.yaml".to_owned()
        }
    );
}

#[test]
fn errors_name_the_file_the_path_and_the_value() {
    let bad_policy = "resources:\n  sg:\n    type: OS::Nova::ServerGroup\n    properties: {policies: [spread]}\n";
    assert_eq!(
        read(bad_policy, &[]).unwrap_err().to_string(),
        "hot/top.yaml: resources.sg.properties.policies[0]: expected one of anti-affinity, affinity, soft-anti-affinity, soft-affinity, found \"spread\""
    );
    let bad_size =
        "resources:\n  g:\n    type: OS::Heat::AutoScalingGroup\n    properties: {min_size: two}\n";
    assert_eq!(
        read(bad_size, &[]).unwrap_err().to_string(),
        "hot/top.yaml: resources.g.properties.min_size: \"two\" is not a number of instances (a non-negative integer)"
    );
    assert!(
        read("resources: [1]\n", &[])
            .unwrap_err()
            .to_string()
            .starts_with("hot/top.yaml: resources: expected a mapping")
    );
}

#[test]
fn the_example_base_hot_groups_the_workers_and_not_the_masters() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tacker/BaseHOT/simple");
    let top_path = dir.join("kubernetes_hot_top.yaml");
    let top = std::fs::read_to_string(&top_path).unwrap();
    let entry = top_path.to_string_lossy().into_owned();
    let hot = read_base_hot(&entry, &top, &mut |name| -> LoadResult {
        match std::fs::read_to_string(name) {
            Ok(text) => Ok(Some(text)),
            Err(_) => Ok(None),
        }
    })
    .unwrap();
    let workers = hot.translation.group_of("workerNode").unwrap();
    assert_eq!(
        (workers.name.as_str(), workers.policy),
        ("k8s-workers", "anti-affinity")
    );
    assert!(hot.translation.group_of("masterNode").is_none());
    let codes: Vec<&str> = hot.findings.iter().map(|f| f.code()).collect();
    assert_eq!(
        codes,
        [
            "hint-on-scaling-group",
            "no-server-group",
            "unused-server-group"
        ]
    );
}

/// The seed corpus of the `tacker_templates` fuzz target, replayed: each
/// input reads (or fails) as a BaseHOT and a VNFD, and what reads plans.
#[test]
fn the_fuzz_corpus_reads_without_panicking() {
    use anti_affinity_placement::tacker::{plan, translate, vnfd};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/tacker_templates");
    let mut inputs = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        let (top, nested) = match data.iter().position(|b| *b == 0) {
            Some(at) => (&data[..at], &data[at + 1..]),
            None => (&data[..], &[][..]),
        };
        let top = std::str::from_utf8(top).unwrap();
        let nested = std::str::from_utf8(nested).unwrap();
        let mut loader = |_: &str| -> LoadResult { Ok(Some(nested.to_owned())) };
        let hot = read_base_hot("top.yaml", top, &mut loader);
        if let Ok(vnfd) = vnfd::read_vnfd("top.yaml", top, &mut loader, None) {
            let translation = match &hot {
                Ok(hot) => hot.translation.clone(),
                Err(_) => translate::translate(&vnfd),
            };
            let hosts = [plan::ComputeHost {
                name: "compute-a".to_owned(),
                usable: true,
            }];
            let _ = plan::plan(&vnfd, &translation, &hosts, &[], None);
        }
        inputs += 1;
    }
    assert!(inputs >= 2);
}
