//! DynamicResources: pods with ResourceClaims, filtered and placed as
//! kube-scheduler's plugin and structured allocator do (DR.1–DR.10), with
//! the reasons upstream gives (`dynamicresources_test.go`,
//! `allocator_test.go`).

use kube_scheduler_sim::{ClusterState, DraObjects, KubernetesVersion, Options};
use serde_json::{Value, json};

use k8s_openapi::api::core::v1::{Node, Pod};

mod support {
    pub const CANNOT_ALLOCATE: &str = "cannot allocate all claims";
    pub const NOT_AVAILABLE: &str = "resourceclaim not available on the node";
}
use support::*;

const DRIVER: &str = "gpu.example.com";

fn node(name: &str, labels: Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

/// A slice publishing `devices` on `node` in its own pool.
fn slice(node: &str, devices: Value) -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-{DRIVER}")},
        "spec": {"driver": DRIVER, "nodeName": node, "devices": devices,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}},
    })
}

fn gpu(name: &str, model: &str, memory: &str) -> Value {
    json!({"name": name,
           "attributes": {"model": {"string": model}, "numa": {"int": 0}},
           "capacity": {"memory": {"value": memory}}})
}

fn class(name: &str, expression: Option<&str>) -> Value {
    let selectors = expression.map(|e| json!([{"cel": {"expression": e}}]));
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
           "metadata": {"name": name},
           "spec": {"selectors": selectors.unwrap_or(json!([]))}})
}

fn claim(name: &str, requests: Value) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"devices": {"requests": requests}}})
}

fn exactly(name: &str, class: &str, count: i64) -> Value {
    json!({"name": name, "exactly": {"deviceClassName": class, "count": count}})
}

fn pod_with_claims(name: &str, claims: &[&str]) -> Pod {
    let entries: Vec<Value> = claims
        .iter()
        .map(|c| json!({"name": c, "resourceClaimName": c}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"containers": [{"name": "c", "image": "x"}], "resourceClaims": entries},
    }))
    .unwrap()
}

fn parse<T: serde::de::DeserializeOwned>(values: &[Value]) -> Vec<T> {
    values
        .iter()
        .map(|v| serde_json::from_value(v.clone()).unwrap())
        .collect()
}

fn dra(classes: &[Value], claims: &[Value], slices: &[Value]) -> DraObjects {
    DraObjects {
        device_classes: parse(classes),
        claims: parse(claims),
        claim_templates: Vec::new(),
        slices: parse(slices),
    }
}

fn state(nodes: &[Node], objects: &DraObjects) -> ClusterState {
    let mut state = ClusterState::new(nodes, &[], &[], true);
    state.set_dra(objects);
    state
}

fn two_nodes() -> Vec<Node> {
    vec![node("node-1", json!({})), node("node-2", json!({}))]
}

fn two_gpu_slices() -> Vec<Value> {
    vec![
        slice("node-1", json!([gpu("gpu-0", "t4", "16Gi")])),
        slice(
            "node-2",
            json!([gpu("gpu-0", "a100", "80Gi"), gpu("gpu-1", "a100", "80Gi")]),
        ),
    ]
}

fn verdicts(state: &ClusterState, pod: &Pod, opts: &Options) -> Vec<(String, String)> {
    let result = state.evaluate(pod, opts).unwrap();
    let mut out: Vec<(String, String)> = result
        .feasible
        .iter()
        .map(|n| (n.clone(), "ok".to_owned()))
        .collect();
    out.extend(
        result
            .unschedulable
            .iter()
            .map(|(n, f)| (n.clone(), f.message.clone())),
    );
    out.sort();
    out
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[test]
fn a_claim_for_two_gpus_fits_only_the_node_with_two() {
    let objects = dra(
        &[class("gpu", None)],
        &[claim("two", json!([exactly("gpus", "gpu", 2)]))],
        &two_gpu_slices(),
    );
    let state = state(&two_nodes(), &objects);
    let got = verdicts(&state, &pod_with_claims("p", &["two"]), &Options::default());
    assert_eq!(got, pairs(&[("node-1", CANNOT_ALLOCATE), ("node-2", "ok")]));
}

#[test]
fn a_missing_claim_rejects_every_node_with_the_listers_not_found_error() {
    let objects = dra(&[class("gpu", None)], &[], &two_gpu_slices());
    let state = state(&two_nodes(), &objects);
    let result = state
        .evaluate(&pod_with_claims("p", &["gone"]), &Options::default())
        .unwrap();
    assert_eq!(
        result.summary.as_deref(),
        Some("0/2 nodes are available: resourceclaim.resource.k8s.io \"gone\" not found.")
    );
}

#[test]
fn a_missing_device_class_names_the_request() {
    let objects = dra(
        &[],
        &[claim("c", json!([exactly("req-1", "nope", 1)]))],
        &two_gpu_slices(),
    );
    let state = state(&two_nodes(), &objects);
    let result = state
        .evaluate(&pod_with_claims("p", &["c"]), &Options::default())
        .unwrap();
    assert_eq!(
        result.summary.as_deref(),
        Some("0/2 nodes are available: request req-1: device class nope does not exist.")
    );
}

#[test]
fn cel_selectors_of_class_and_request_pick_devices_by_attribute_and_capacity() {
    let big = json!([{"name": "gpu", "exactly": {"deviceClassName": "gpu", "selectors": [
        {"cel": {"expression": "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"}}
    ]}}]);
    let objects = dra(
        &[class("gpu", Some("device.driver == 'gpu.example.com'"))],
        &[claim("big", big)],
        &two_gpu_slices(),
    );
    let state = state(&two_nodes(), &objects);
    let got = verdicts(&state, &pod_with_claims("p", &["big"]), &Options::default());
    assert_eq!(got, pairs(&[("node-1", CANNOT_ALLOCATE), ("node-2", "ok")]));

    let t4 = json!([{"name": "gpu", "exactly": {"deviceClassName": "gpu", "selectors": [
        {"cel": {"expression": "device.attributes['gpu.example.com'].model == 't4'"}}
    ]}}]);
    let objects = dra(&[class("gpu", None)], &[claim("t4", t4)], &two_gpu_slices());
    let state = self::state(&two_nodes(), &objects);
    let got = verdicts(&state, &pod_with_claims("p", &["t4"]), &Options::default());
    assert_eq!(got, pairs(&[("node-1", "ok"), ("node-2", CANNOT_ALLOCATE)]));
}

#[test]
fn devices_held_by_an_allocated_claim_are_in_use_and_pin_that_claims_pods() {
    let mut held = claim("held", json!([exactly("gpus", "gpu", 2)]));
    held["status"] = json!({"allocation": {
        "devices": {"results": [
            {"request": "gpus", "driver": DRIVER, "pool": "node-2", "device": "gpu-0"},
            {"request": "gpus", "driver": DRIVER, "pool": "node-2", "device": "gpu-1"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}]}}});
    let objects = dra(
        &[class("gpu", None)],
        &[held, claim("one", json!([exactly("gpu", "gpu", 1)]))],
        &two_gpu_slices(),
    );
    let state = state(&two_nodes(), &objects);
    // A new claim finds node-2's GPUs taken.
    let got = verdicts(&state, &pod_with_claims("p", &["one"]), &Options::default());
    assert_eq!(got, pairs(&[("node-1", "ok"), ("node-2", CANNOT_ALLOCATE)]));
    // A pod sharing the allocated claim must go where its devices are.
    let got = verdicts(
        &state,
        &pod_with_claims("q", &["held"]),
        &Options::default(),
    );
    assert_eq!(got, pairs(&[("node-1", NOT_AVAILABLE), ("node-2", "ok")]));
}

#[test]
fn placing_pods_allocates_devices_so_the_third_single_gpu_pod_finds_none() {
    let objects = dra(
        &[class("gpu", None)],
        &[
            claim("a", json!([exactly("gpu", "gpu", 1)])),
            claim("b", json!([exactly("gpu", "gpu", 1)])),
            claim("c", json!([exactly("gpu", "gpu", 1)])),
            claim("d", json!([exactly("gpu", "gpu", 1)])),
        ],
        &two_gpu_slices(),
    );
    let mut state = state(&two_nodes(), &objects);
    let opts = Options::default();
    let placed: Vec<Option<String>> = ["a", "b", "c", "d"]
        .iter()
        .map(|c| {
            state
                .place(&pod_with_claims(&format!("p-{c}"), &[c]), &opts)
                .unwrap()
                .node
        })
        .collect();
    let on = |n: &str| placed.iter().filter(|p| p.as_deref() == Some(n)).count();
    assert_eq!((on("node-1"), on("node-2")), (1, 2), "{placed:?}");
    let last = state.place(&pod_with_claims("p-e", &["a"]), &opts).unwrap();
    assert_eq!(
        last.node, placed[0],
        "a pod sharing claim a follows its devices"
    );
}

#[test]
fn match_attribute_keeps_both_requests_on_one_numa_node() {
    let slices = vec![slice(
        "node-1",
        json!([
            {"name": "gpu-0", "attributes": {"kind": {"string": "gpu"}, "numa": {"int": 0}}},
            {"name": "nic-0", "attributes": {"kind": {"string": "nic"}, "numa": {"int": 1}}},
            {"name": "nic-1", "attributes": {"kind": {"string": "nic"}, "numa": {"int": 0}}}
        ]),
    )];
    let kind = |k: &str| json!([{"cel": {"expression": format!("device.attributes['gpu.example.com'].kind == '{k}'")}}]);
    let mut together = claim("together", json!([]));
    together["spec"] = json!({"devices": {
        "requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "any", "selectors": kind("gpu")}},
            {"name": "nic", "exactly": {"deviceClassName": "any", "selectors": kind("nic")}}],
        "constraints": [{"matchAttribute": "gpu.example.com/numa"}]}});
    let numa = |n: i64| json!([{"name": "nic", "exactly": {"deviceClassName": "any", "selectors": [{"cel": {"expression": format!("device.attributes['gpu.example.com'].kind == 'nic' && device.attributes['gpu.example.com'].numa == {n}")}}]}}]);
    let objects = dra(
        &[class("any", None)],
        &[together, claim("numa-0", numa(0)), claim("numa-1", numa(1))],
        &slices,
    );
    let mut state = state(&[node("node-1", json!({}))], &objects);
    let opts = Options::default();
    let placed = state
        .place(&pod_with_claims("p", &["together"]), &opts)
        .unwrap();
    assert_eq!(placed.node.as_deref(), Some("node-1"));
    // nic-0 (numa 1) came first but broke the constraint: nic-1 was taken.
    let numa_0 = state
        .evaluate(&pod_with_claims("q", &["numa-0"]), &opts)
        .unwrap();
    assert_eq!(numa_0.unschedulable["node-1"].message, CANNOT_ALLOCATE);
    let numa_1 = state
        .evaluate(&pod_with_claims("r", &["numa-1"]), &opts)
        .unwrap();
    assert_eq!(numa_1.feasible, vec!["node-1".to_owned()]);
}

#[test]
fn all_mode_takes_every_matching_device_and_refuses_an_incomplete_pool() {
    let objects = dra(
        &[class("gpu", None)],
        &[claim(
            "all",
            json!([{"name": "gpus", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}]),
        )],
        &two_gpu_slices(),
    );
    let mut state = state(&two_nodes(), &objects);
    let placed = state
        .place(&pod_with_claims("p", &["all"]), &Options::default())
        .unwrap();
    assert!(placed.node.is_some());

    let mut incomplete = slice("node-1", json!([gpu("gpu-0", "t4", "16Gi")]));
    incomplete["spec"]["pool"]["resourceSliceCount"] = json!(2);
    let objects = dra(
        &[class("gpu", None)],
        &[claim(
            "all",
            json!([{"name": "gpus", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}]),
        )],
        &[incomplete],
    );
    let state = self::state(&[node("node-1", json!({}))], &objects);
    let result = state
        .evaluate(&pod_with_claims("p", &["all"]), &Options::default())
        .unwrap();
    // An allocator error other than an invalid pool fails the attempt
    // (`statusError` in the plugin's Filter, v1.37.2).
    assert_eq!(
        result.error.as_deref(),
        Some(
            "running \"DynamicResources\" filter plugin: claim default/all, request gpus: asks for all devices, but resource pool gpu.example.com/node-1 is currently being updated"
        )
    );
    assert!(result.feasible.is_empty() && result.unschedulable.is_empty());
}

// `Filter` (dynamicresources.go, v1.37.2): a CEL runtime error is not an
// `ErrFailedAllocationOnNode`, so the plugin returns an Error status and
// kube-scheduler aborts the attempt, even when another node would fit.
#[test]
fn a_cel_runtime_error_on_one_node_fails_the_whole_attempt() {
    let objects = dra(
        &[class(
            "gpu",
            Some(
                "device.attributes[\"gpu.example.com\"].model == \"a100\" || device.attributes[\"gpu.example.com\"].vendor == \"x\"",
            ),
        )],
        &[claim("one", json!([exactly("gpus", "gpu", 1)]))],
        &two_gpu_slices(),
    );
    let mut state = state(&two_nodes(), &objects);
    let pod = pod_with_claims("p", &["one"]);
    let result = state.evaluate(&pod, &Options::default()).unwrap();
    let error = result.error.unwrap_or_default();
    assert!(
        error.starts_with(
            "running \"DynamicResources\" filter plugin: class gpu: selector #0 on device gpu.example.com/node-1/gpu-0: CEL runtime error: "
        ),
        "{error}"
    );
    assert_eq!(result.selected, None);
    let placed = state.place(&pod, &Options::default()).unwrap();
    assert_eq!(placed.node, None);
    assert_eq!(placed.reason.as_deref(), Some(error.as_str()));
}

#[test]
fn first_available_scores_the_first_alternative_highest_from_1_35_only() {
    let prioritized = json!([{"name": "gpu", "firstAvailable": [
        {"name": "a100", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'a100'"}}]},
        {"name": "t4", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 't4'"}}]}
    ]}]);
    let objects = dra(
        &[class("gpu", None)],
        &[claim("pick", prioritized)],
        &two_gpu_slices(),
    );
    let state = state(&two_nodes(), &objects);
    let pod = pod_with_claims("p", &["pick"]);
    let newest = state.evaluate(&pod, &Options::default()).unwrap();
    assert_eq!(
        newest.feasible,
        vec!["node-1".to_owned(), "node-2".to_owned()]
    );
    let raw = &newest.scores.dynamic_resources.raw;
    assert_eq!((raw["node-1"], raw["node-2"]), (7, 8));
    assert_eq!(newest.scores.dynamic_resources.normalized["node-1"], 87);
    let old = state
        .evaluate(
            &pod,
            &Options {
                kubernetes_version: KubernetesVersion::V1_34,
                ..Options::default()
            },
        )
        .unwrap();
    assert!(old.scores.dynamic_resources.skipped);
}

#[test]
fn device_taints_keep_untolerating_claims_off_from_1_36() {
    let tainted = vec![slice(
        "node-1",
        json!([{"name": "gpu-0", "taints": [{"key": "broken", "effect": "NoSchedule"}]}]),
    )];
    let objects = dra(
        &[class("gpu", None)],
        &[claim("one", json!([exactly("gpu", "gpu", 1)]))],
        &tainted,
    );
    let state = state(&[node("node-1", json!({}))], &objects);
    let pod = pod_with_claims("p", &["one"]);
    let at = |version| {
        let opts = Options {
            kubernetes_version: version,
            ..Options::default()
        };
        state.evaluate(&pod, &opts).unwrap().feasible.len()
    };
    assert_eq!(at(KubernetesVersion::V1_35), 1);
    assert_eq!(at(KubernetesVersion::V1_36), 0);
}

#[test]
fn a_template_claim_not_yet_created_is_made_from_its_template() {
    let mut objects = dra(&[class("gpu", None)], &[], &two_gpu_slices());
    objects.claim_templates = vec![
        serde_json::from_value(
            json!({"metadata": {"name": "two-gpus", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [exactly("gpus", "gpu", 2)]}}}}),
        )
        .unwrap(),
    ];
    let state = state(&two_nodes(), &objects);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [], "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}]},
    }))
    .unwrap();
    assert_eq!(
        state.evaluate(&pod, &Options::default()).unwrap().feasible,
        vec!["node-2".to_owned()]
    );
    let missing: Pod = serde_json::from_value(json!({
        "metadata": {"name": "q", "namespace": "default"},
        "spec": {"containers": [], "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "nope"}]},
    }))
    .unwrap();
    assert_eq!(
        state
            .evaluate(&missing, &Options::default())
            .unwrap()
            .summary
            .as_deref(),
        Some("0/2 nodes are available: pod \"default/q\": ResourceClaim not created yet.")
    );
}

mod properties {
    use std::collections::{BTreeMap, BTreeSet};

    use kube_scheduler_sim::{ClusterState, DraObjects, Options};
    use proptest::prelude::*;
    use serde_json::json;

    use super::{DRIVER, class, dra, node, pod_with_claims, slice};

    /// GPU memory sizes in GiB per node, and per pod (count, whether it
    /// asks for 40 GiB or more).
    type Case = (Vec<Vec<u32>>, Vec<(i64, bool)>);

    fn case() -> impl Strategy<Value = Case> {
        (
            prop::collection::vec(
                prop::collection::vec(prop::sample::select(vec![16u32, 40, 80]), 0..5),
                1..5,
            ),
            prop::collection::vec((1i64..4, any::<bool>()), 1..9),
        )
    }

    fn objects(case: &Case) -> DraObjects {
        let (nodes, pods) = case;
        let slices: Vec<_> = nodes
            .iter()
            .enumerate()
            .map(|(n, gpus)| {
                let devices: Vec<_> = gpus
                    .iter()
                    .enumerate()
                    .map(|(g, memory)| {
                        json!({"name": format!("gpu-{g}"),
                               "capacity": {"memory": {"value": format!("{memory}Gi")}}})
                    })
                    .collect();
                slice(&format!("node-{n}"), json!(devices))
            })
            .collect();
        let claims: Vec<_> = pods
            .iter()
            .enumerate()
            .map(|(p, (count, big))| {
                let mut exactly = json!({"deviceClassName": "gpu", "count": count});
                if *big {
                    exactly["selectors"] = json!([{"cel": {"expression":
                        format!("device.capacity['{DRIVER}'].memory.compareTo(quantity('40Gi')) >= 0")}}]);
                }
                super::claim(&format!("c-{p}"), json!([{"name": "gpus", "exactly": exactly}]))
            })
            .collect();
        dra(&[class("gpu", None)], &claims, &slices)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Against a brute-force count of the devices: every placed pod's
        /// claim holds its count of devices of its node that its selector
        /// accepts, no device is held twice, and a pod left pending finds
        /// on no node enough free devices it accepts.
        #[test]
        fn placements_allocate_distinct_matching_devices_and_pending_pods_find_too_few(case in case()) {
            let (gpus, pods) = &case;
            let nodes: Vec<_> = (0..gpus.len()).map(|n| node(&format!("node-{n}"), json!({}))).collect();
            let mut state = ClusterState::new(&nodes, &[], &[], true);
            state.set_dra(&objects(&case));
            let pod_objects: Vec<_> = (0..pods.len())
                .map(|p| pod_with_claims(&format!("p-{p}"), &[&format!("c-{p}")]))
                .collect();
            let batch = state.place_batch(&pod_objects, &Options::default()).unwrap();
            let memory = |node: &str, device: &str| -> u32 {
                let n: usize = node.trim_start_matches("node-").parse().unwrap();
                let g: usize = device.trim_start_matches("gpu-").parse().unwrap();
                gpus[n][g]
            };
            let claims: BTreeMap<String, _> = state
                .resource_claims()
                .map(|c| (c.metadata.name.clone().unwrap_or_default(), c))
                .collect();
            let mut held = BTreeSet::new();
            for claim in claims.values() {
                let results = claim.status.as_ref().and_then(|s| s.allocation.as_ref())
                    .and_then(|a| a.devices.as_ref()).and_then(|d| d.results.clone()).unwrap_or_default();
                for r in results {
                    prop_assert!(held.insert((r.pool.clone(), r.device.clone())), "{} held twice", r.device);
                }
            }
            for (p, placement) in batch.placements.iter().enumerate() {
                let (count, big) = pods[p];
                let claim = claims[&format!("c-{p}")];
                let results = claim.status.as_ref().and_then(|s| s.allocation.as_ref())
                    .and_then(|a| a.devices.as_ref()).and_then(|d| d.results.clone()).unwrap_or_default();
                match &placement.node {
                    Some(node) => {
                        prop_assert_eq!(results.len() as i64, count);
                        for r in &results {
                            prop_assert_eq!(&r.pool, node);
                            prop_assert!(!big || memory(node, &r.device) >= 40);
                        }
                    }
                    None => {
                        prop_assert!(results.is_empty());
                        for (n, node_gpus) in gpus.iter().enumerate() {
                            let pool = format!("node-{n}");
                            let free = node_gpus.iter().enumerate()
                                .filter(|(g, m)| (!big || **m >= 40) && !held.contains(&(pool.clone(), format!("gpu-{g}"))))
                                .count() as i64;
                            prop_assert!(free < count, "{} pending, but node-{} has {} free", placement.pod, n, free);
                        }
                    }
                }
            }
        }
    }
}

/// Extended resources backed by DRA (DR.11): the rows of `TestPlugin`
/// (dynamicresources_test.go, v1.37.2) about extended resources, with its
/// fixtures: node `worker`, driver `some-driver`'s pool `worker` of
/// `instance-1` (or four instances), classes `my-resource-class` and
/// `my-resource-class2` naming `example.com/gpu` and `example.com/gpu2`.
mod extended_resources {
    use super::*;
    use kube_scheduler_sim::KubernetesVersion;

    const GPU: &str = "example.com/gpu";
    const GPU2: &str = "example.com/gpu2";

    fn worker(allocatable: Value) -> Node {
        let mut all = json!({"cpu": "8", "memory": "16Gi", "pods": "110"});
        for (k, v) in allocatable.as_object().unwrap() {
            all[k] = v.clone();
        }
        serde_json::from_value(json!({"metadata": {"name": "worker",
            "labels": {"kubernetes.io/hostname": "worker"}},
            "status": {"allocatable": all}}))
        .unwrap()
    }

    fn worker_slice(instances: usize) -> Value {
        let devices: Vec<Value> = (1..=instances)
            .map(|i| json!({"name": format!("instance-{i}")}))
            .collect();
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
               "metadata": {"name": "worker-some-driver"},
               "spec": {"driver": "some-driver", "nodeName": "worker", "devices": devices,
                        "pool": {"name": "worker", "generation": 1, "resourceSliceCount": 1}}})
    }

    fn named_class(name: &str, extended: Option<&str>) -> Value {
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
               "metadata": {"name": name}, "spec": {"extendedResourceName": extended}})
    }

    fn classes() -> Vec<Value> {
        vec![
            named_class("my-resource-class", Some(GPU)),
            named_class("my-resource-class2", Some(GPU2)),
        ]
    }

    fn pod(containers: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "my-pod", "namespace": "default", "uid": "1234"},
            "spec": {"containers": containers},
        }))
        .unwrap()
    }

    fn requesting(requests: Value) -> Pod {
        pod(json!([{"name": "c", "image": "x", "resources": {"requests": requests}}]))
    }

    fn state_of(node: Node, classes: &[Value], slices: &[Value]) -> ClusterState {
        let mut state = ClusterState::new(&[node], &[], &[], true);
        state.set_dra(&dra(classes, &[], slices));
        state
    }

    /// A device request as (name, class, count).
    type Request = (String, String, i64);

    /// The extended-resource claim a placement recorded: its requests and
    /// the devices allocated (`request:device`).
    fn extended_claim(state: &ClusterState) -> Option<(Vec<Request>, Vec<String>)> {
        let claim = state
            .resource_claims()
            .into_iter()
            .find(|c| c.metadata.name.as_deref() == Some("my-pod-extended-resources"))?;
        assert_eq!(
            claim.metadata.annotations.as_ref().unwrap()["resource.kubernetes.io/extended-resource-claim"],
            "true"
        );
        let requests = claim
            .spec
            .devices
            .iter()
            .flat_map(|d| d.requests.iter().flatten())
            .map(|r| {
                let exact = r.exactly.as_ref().unwrap();
                (
                    r.name.clone(),
                    exact.device_class_name.clone(),
                    exact.count.unwrap(),
                )
            })
            .collect();
        let devices = claim
            .status
            .iter()
            .flat_map(|s| s.allocation.iter())
            .flat_map(|a| a.devices.iter())
            .flat_map(|d| d.results.iter().flatten())
            .map(|r| format!("{}:{}", r.request, r.device))
            .collect();
        Some((requests, devices))
    }

    fn place(state: &mut ClusterState, pod: &Pod) -> Option<String> {
        state.place(pod, &Options::default()).unwrap().node
    }

    // "extended-resource-name-with-node-resource": a device plugin serves it.
    #[test]
    fn a_node_advertising_the_resource_serves_it_without_a_claim() {
        let mut state = state_of(worker(json!({GPU: "1"})), &classes(), &[worker_slice(1)]);
        assert_eq!(
            place(&mut state, &requesting(json!({GPU: "1"}))).as_deref(),
            Some("worker")
        );
        assert_eq!(extended_claim(&state), None);
    }

    // "extended-resource-one-device-plugin-one-dra".
    #[test]
    fn only_the_resources_the_node_does_not_advertise_go_to_devices() {
        let mut state = state_of(worker(json!({GPU: "1"})), &classes(), &[worker_slice(1)]);
        let pod = requesting(json!({GPU: "1", GPU2: "1"}));
        assert_eq!(place(&mut state, &pod).as_deref(), Some("worker"));
        assert_eq!(
            extended_claim(&state),
            Some((
                vec![(
                    "container-0-request-1".into(),
                    "my-resource-class2".into(),
                    1
                )],
                vec!["container-0-request-1:instance-1".into()]
            ))
        );
    }

    // "extended-resource-name-with-zero-allocatable" and
    // "extended-resource-name-with-resources".
    #[test]
    fn a_node_without_the_resource_serves_it_with_devices_of_its_class() {
        let mut state = state_of(worker(json!({GPU: "0"})), &classes(), &[worker_slice(1)]);
        assert_eq!(
            place(&mut state, &requesting(json!({GPU: "1"}))).as_deref(),
            Some("worker")
        );
        assert_eq!(
            extended_claim(&state),
            Some((
                vec![(
                    "container-0-request-0".into(),
                    "my-resource-class".into(),
                    1
                )],
                vec!["container-0-request-0:instance-1".into()]
            ))
        );
        // The device is taken: a second pod finds none.
        let mut second = requesting(json!({GPU: "1"}));
        second.metadata.name = Some("second".into());
        let result = state.evaluate(&second, &Options::default()).unwrap();
        assert_eq!(result.unschedulable["worker"].message, CANNOT_ALLOCATE);
    }

    // "non-DRA-extended-resource-name-with-zero-allocatable": no class
    // names the resource, so NodeResourcesFit checks it.
    #[test]
    fn a_resource_no_class_names_is_checked_by_node_resources_fit() {
        let state = state_of(
            worker(json!({GPU: "0"})),
            &[named_class("my-resource-class", None)],
            &[worker_slice(1)],
        );
        let result = state
            .evaluate(&requesting(json!({GPU: "1"})), &Options::default())
            .unwrap();
        assert_eq!(
            result.unschedulable["worker"].message,
            format!("Insufficient {GPU}")
        );
    }

    // "extended-resource-name-no-resource".
    #[test]
    fn no_devices_of_the_class_means_cannot_allocate_all_claims() {
        let state = state_of(worker(json!({})), &classes(), &[]);
        let result = state
            .evaluate(&requesting(json!({GPU: "1"})), &Options::default())
            .unwrap();
        assert_eq!(result.unschedulable["worker"].message, CANNOT_ALLOCATE);
    }

    // "implicit-extended-resource-name-with-resources" and
    // "...-two-containers-with-resources".
    #[test]
    fn implicit_class_names_are_served_too() {
        let implicit = "deviceclass.resource.kubernetes.io/my-resource-class";
        let mut state = state_of(worker(json!({})), &classes(), &[worker_slice(4)]);
        let pod = requesting(json!({implicit: "1", GPU: "2"}));
        assert_eq!(place(&mut state, &pod).as_deref(), Some("worker"));
        let (requests, devices) = extended_claim(&state).unwrap();
        assert_eq!(
            requests,
            vec![
                (
                    "container-0-request-0".into(),
                    "my-resource-class".into(),
                    1
                ),
                (
                    "container-0-request-1".into(),
                    "my-resource-class".into(),
                    2
                )
            ]
        );
        assert_eq!(devices.len(), 3);

        let mut state = state_of(worker(json!({})), &classes(), &[worker_slice(4)]);
        let pod = self::pod(json!([
            {"name": "c0", "image": "x", "resources": {"requests": {implicit: "1"}}},
            {"name": "c1", "image": "x", "resources": {"requests": {GPU: "2"}}},
        ]));
        assert_eq!(place(&mut state, &pod).as_deref(), Some("worker"));
        let (requests, _) = extended_claim(&state).unwrap();
        assert_eq!(
            requests,
            vec![
                (
                    "container-0-request-0".into(),
                    "my-resource-class".into(),
                    1
                ),
                (
                    "container-1-request-0".into(),
                    "my-resource-class".into(),
                    2
                )
            ]
        );
    }

    // fit_test.go's "extended resource backed by DRA not enabled": before
    // 1.36 the gate is off and NodeResourcesFit checks the resource.
    #[test]
    fn before_1_36_node_resources_fit_checks_the_resource() {
        let state = state_of(worker(json!({})), &classes(), &[worker_slice(1)]);
        let opts = Options {
            kubernetes_version: KubernetesVersion::V1_35,
            ..Options::default()
        };
        let result = state
            .evaluate(&requesting(json!({GPU: "1"})), &opts)
            .unwrap();
        assert_eq!(
            result.unschedulable["worker"].message,
            format!("Insufficient {GPU}")
        );
    }
}

/// Consumable capacity (DR.12): rows of allocator_testing.go
/// (dynamic-resource-allocation v0.37.2) played as pods placed one after
/// another on one node, each with one claim.
mod consumable_capacity {
    use super::*;
    use kube_scheduler_sim::KubernetesVersion;

    fn device(name: &str, multiple: bool, capacity: Value) -> Value {
        json!({"name": name, "allowMultipleAllocations": multiple, "capacity": capacity,
               "attributes": {"model": {"string": name}}})
    }

    /// One `gpu` device, asking for `capacity` of capacity-0 if given.
    fn request(capacity: Option<&str>) -> Value {
        let mut exact = json!({"deviceClassName": "gpu", "count": 1});
        if let Some(c) = capacity {
            exact["capacity"] = json!({"requests": {"capacity-0": c}});
        }
        json!([{"name": "req", "exactly": exact}])
    }

    /// One node with a slice of `devices`; claims `c0`, `c1`, … of
    /// `requests` placed by pods `p0`, `p1`, … one after another. Per pod:
    /// the devices its claim got, whether as a share (a `shareID`), and the
    /// capacity-0 the share consumes.
    fn place_all(
        devices: Value,
        requests: &[Value],
        opts: &Options,
    ) -> Vec<Vec<(String, bool, Option<String>)>> {
        let claims: Vec<Value> = requests
            .iter()
            .enumerate()
            .map(|(i, r)| claim(&format!("c{i}"), r.clone()))
            .collect();
        let objects = dra(&[class("gpu", None)], &claims, &[slice("node-1", devices)]);
        let mut state = state(&[node("node-1", json!({}))], &objects);
        let mut out = Vec::new();
        for i in 0..requests.len() {
            let name = format!("c{i}");
            let placed = state
                .place(&pod_with_claims(&format!("p{i}"), &[&name]), opts)
                .unwrap();
            let claim = state
                .resource_claims()
                .into_iter()
                .find(|c| c.metadata.name.as_deref() == Some(name.as_str()))
                .unwrap();
            let got = claim
                .status
                .iter()
                .flat_map(|s| s.allocation.iter())
                .flat_map(|a| a.devices.iter())
                .flat_map(|d| d.results.iter().flatten())
                .map(|r| {
                    let consumed = r
                        .consumed_capacity
                        .as_ref()
                        .and_then(|c| c.get("capacity-0"))
                        .map(|q| q.0.clone());
                    (r.device.clone(), r.share_id.is_some(), consumed)
                })
                .collect();
            assert_eq!(placed.node.is_some(), claim.status.is_some(), "p{i}");
            out.push(got);
        }
        out
    }

    fn share(device: &str, consumed: Option<&str>) -> Vec<(String, bool, Option<String>)> {
        vec![(device.to_owned(), true, consumed.map(str::to_owned))]
    }

    #[test]
    fn a_device_without_capacity_is_shared_by_every_claim() {
        // "...-multi-allocatable-device-without-capacity-without-capacity-request".
        let devices = json!([device("dev1", true, json!({}))]);
        let got = place_all(
            devices,
            &[request(None), request(None)],
            &Options::default(),
        );
        assert_eq!(got, vec![share("dev1", None), share("dev1", None)]);
    }

    #[test]
    fn a_request_without_capacity_consumes_the_whole_capacity() {
        // "...-without-policy-without-capacity-request-block".
        let devices = json!([device("dev1", true, json!({"capacity-0": {"value": "2"}}))]);
        let got = place_all(
            devices,
            &[request(None), request(None)],
            &Options::default(),
        );
        assert_eq!(got, vec![share("dev1", Some("2")), Vec::new()]);
    }

    #[test]
    fn capacity_requests_share_a_device_until_it_is_used_up() {
        // "...-without-policy-with-capacity-request", then a third.
        let devices = json!([device("dev1", true, json!({"capacity-0": {"value": "2"}}))]);
        let got = place_all(
            devices,
            &[request(Some("1")), request(Some("1")), request(Some("1"))],
            &Options::default(),
        );
        assert_eq!(
            got,
            vec![
                share("dev1", Some("1")),
                share("dev1", Some("1")),
                Vec::new()
            ]
        );
    }

    #[test]
    fn a_range_policy_rounds_requests_up_and_refuses_above_its_maximum() {
        // "...-with-range-policy-step" and "...-with-request-over-max-sharing-policy".
        let policy = json!({"capacity-0": {"value": "10", "requestPolicy": {"default": "2",
            "validRange": {"min": "2", "step": "2", "max": "4"}}}});
        let devices = json!([device("dev1", true, policy)]);
        let got = place_all(
            devices,
            &[request(Some("3")), request(Some("6"))],
            &Options::default(),
        );
        assert_eq!(got, vec![share("dev1", Some("4")), Vec::new()]);
    }

    #[test]
    fn a_device_allowing_one_allocation_is_taken_whole_by_a_capacity_request() {
        // "consumable-capacity-dedicated-device-with-(multiple-)consumable-capacity-request".
        let devices = json!([device("dev1", false, json!({"capacity-0": {"value": "1"}}))]);
        let got = place_all(
            devices,
            &[request(Some("1")), request(Some("1"))],
            &Options::default(),
        );
        assert_eq!(
            got,
            vec![vec![("dev1".to_owned(), false, None)], Vec::new()]
        );
    }

    #[test]
    fn before_1_36_a_shareable_device_is_taken_whole() {
        let devices = json!([device("dev1", true, json!({}))]);
        let opts = Options {
            kubernetes_version: KubernetesVersion::V1_35,
            ..Options::default()
        };
        let got = place_all(devices, &[request(None), request(None)], &opts);
        assert_eq!(
            got,
            vec![vec![("dev1".to_owned(), false, None)], Vec::new()]
        );
    }

    #[test]
    fn distinct_attribute_keeps_two_requests_off_one_shared_device() {
        // "with-distinct-constraints": one shared device cannot serve both.
        let two = json!({"requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu"}},
                {"name": "b", "exactly": {"deviceClassName": "gpu"}}],
            "constraints": [{"distinctAttribute": format!("{DRIVER}/model")}]});
        let claim_value = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "two", "namespace": "default"}, "spec": {"devices": two}});
        let objects = dra(
            &[class("gpu", None)],
            std::slice::from_ref(&claim_value),
            &[slice("node-1", json!([device("dev1", true, json!({}))]))],
        );
        let one = state(&[node("node-1", json!({}))], &objects);
        let result = one
            .evaluate(&pod_with_claims("p", &["two"]), &Options::default())
            .unwrap();
        assert_eq!(result.unschedulable["node-1"].message, CANNOT_ALLOCATE);
        let objects = dra(
            &[class("gpu", None)],
            &[claim_value],
            &[slice(
                "node-1",
                json!([
                    device("dev1", true, json!({})),
                    device("dev2", true, json!({}))
                ]),
            )],
        );
        let both = state(&[node("node-1", json!({}))], &objects);
        let result = both
            .evaluate(&pod_with_claims("p", &["two"]), &Options::default())
            .unwrap();
        assert_eq!(result.feasible, vec!["node-1".to_owned()]);
    }

    /// An allocated claim holding a share of `dev1` that consumes 1.
    fn share_in_use() -> Value {
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "held", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "req", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": {"allocation": {"devices": {"results": [{"request": "req", "driver": DRIVER,
                "pool": "node-1", "device": "dev1", "shareID": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
                "consumedCapacity": {"capacity-0": "1"}}]}}}})
    }

    // "...-allocation-mode-all-in-use-insufficient": 1.37 fails an All
    // request whose device has no room left, 1.36 leaves the device out.
    #[test]
    fn an_all_request_on_a_used_up_share_fails_in_1_37_and_skips_it_in_1_36() {
        let all = json!([{"name": "req", "exactly": {"deviceClassName": "gpu",
            "allocationMode": "All", "capacity": {"requests": {"capacity-0": "1"}}}}]);
        let devices = json!([
            device("dev1", true, json!({"capacity-0": {"value": "1"}})),
            device("dev2", true, json!({"capacity-0": {"value": "1"}})),
        ]);
        let objects = dra(
            &[class("gpu", None)],
            &[share_in_use(), claim("all", all)],
            &[slice("node-1", devices)],
        );
        let state = state(&[node("node-1", json!({}))], &objects);
        let pod = pod_with_claims("p", &["all"]);
        let result = state.evaluate(&pod, &Options::default()).unwrap();
        assert_eq!(result.unschedulable["node-1"].message, CANNOT_ALLOCATE);
        let opts = Options {
            kubernetes_version: KubernetesVersion::V1_36,
            ..Options::default()
        };
        let result = state.evaluate(&pod, &opts).unwrap();
        assert_eq!(result.feasible, vec!["node-1".to_owned()]);
    }
}
