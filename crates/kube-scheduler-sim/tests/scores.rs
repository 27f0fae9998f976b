//! The score plugins of the default profile with the rows of
//! kube-scheduler's own tables: `taint_toleration_test.go`
//! TestTaintTolerationScore, `least_allocated_test.go`
//! TestLeastAllocatedScoringStrategy, `balanced_allocation_test.go`
//! TestNodeResourcesBalancedAllocation, `image_locality_test.go`
//! TestImageLocalityPriority; then the weighted totals and the selection.
//!
//! Every row runs through [`support::eval`], so the indexed evaluator and
//! the brute-force reference must agree on it as well.

mod oracle;
mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube_scheduler_sim::{KubernetesVersion, Options, Plugin, ScheduleResult};
use serde_json::{Value, json};
use support::*;

/// A node with `status.allocatable` (cpu, memory; `pods: 110`), taints and
/// images (name list, size) as given.
fn node_full(name: &str, allocatable: Option<(&str, &str)>, taints: Value, images: Value) -> Node {
    let mut n = json!({"metadata": {"name": name}, "spec": {}, "status": {}});
    if let Some((cpu, memory)) = allocatable {
        n["status"]["allocatable"] = json!({"cpu": cpu, "memory": memory, "pods": "110"});
    }
    if !taints.is_null() {
        n["spec"]["taints"] = taints;
    }
    if !images.is_null() {
        n["status"]["images"] = images;
    }
    serde_json::from_value(n).unwrap()
}

fn sized(name: &str, cpu: &str, memory: &str) -> Node {
    node_full(name, Some((cpu, memory)), Value::Null, Value::Null)
}

/// A pod whose containers request the given (cpu, memory) (`None` leaves
/// the key out), bound to `node` if given.
fn pod_req(name: &str, node: Option<&str>, containers: &[(Option<&str>, Option<&str>)]) -> Pod {
    let containers: Vec<Value> = containers
        .iter()
        .enumerate()
        .map(|(i, (cpu, mem))| {
            let mut requests = serde_json::Map::new();
            if let Some(c) = cpu {
                requests.insert("cpu".into(), json!(c));
            }
            if let Some(m) = mem {
                requests.insert("memory".into(), json!(m));
            }
            json!({"name": format!("c{i}"), "resources": {"requests": requests}})
        })
        .collect();
    let mut spec = json!({"containers": containers});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    serde_json::from_value(
        json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec}),
    )
    .unwrap()
}

fn all_nodes() -> Options {
    Options {
        score_all_nodes: true,
        ..Options::default()
    }
}

fn normalized(r: &ScheduleResult, plugin: Plugin) -> BTreeMap<String, i64> {
    r.scores.get(plugin).unwrap().normalized.clone()
}

fn raw(r: &ScheduleResult, plugin: Plugin) -> BTreeMap<String, i64> {
    r.scores.get(plugin).unwrap().raw.clone()
}

fn expect(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn taint(key: &str, value: &str, effect: &str) -> Value {
    json!({"key": key, "value": value, "effect": effect})
}

fn toleration(key: &str, value: &str, effect: &str) -> Value {
    json!({"key": key, "operator": "Equal", "value": value, "effect": effect})
}

fn tolerating(tolerations: Vec<Value>) -> Pod {
    pod(
        "default",
        "p",
        &[],
        None,
        json!({"tolerations": tolerations}),
    )
}

fn tainted(name: &str, taints: Vec<Value>) -> Node {
    node_full(name, None, json!(taints), Value::Null)
}

// TestTaintTolerationScore (tainttoleration/taint_toleration_test.go).
#[test]
fn taint_toleration_score_table() {
    let pns = "PreferNoSchedule";
    let rows: Vec<NodesRow> = vec![
        (
            "node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
            tolerating(vec![toleration("foo", "bar", pns)]),
            vec![
                tainted("nodeA", vec![taint("foo", "bar", pns)]),
                tainted("nodeB", vec![taint("foo", "blah", pns)]),
            ],
            &[("nodeA", 100), ("nodeB", 0)],
        ),
        (
            "the nodes that all of their taints are tolerated by the pod, get the same score, no matter how many tolerable taints a node has",
            tolerating(vec![
                toleration("cpu-type", "arm64", pns),
                toleration("disk-type", "ssd", pns),
            ]),
            vec![
                tainted("nodeA", vec![]),
                tainted("nodeB", vec![taint("cpu-type", "arm64", pns)]),
                tainted(
                    "nodeC",
                    vec![
                        taint("cpu-type", "arm64", pns),
                        taint("disk-type", "ssd", pns),
                    ],
                ),
            ],
            &[("nodeA", 100), ("nodeB", 100), ("nodeC", 100)],
        ),
        (
            "the more intolerable taints a node has, the lower score it gets.",
            tolerating(vec![toleration("foo", "bar", pns)]),
            vec![
                tainted("nodeA", vec![]),
                tainted("nodeB", vec![taint("cpu-type", "arm64", pns)]),
                tainted(
                    "nodeC",
                    vec![
                        taint("cpu-type", "arm64", pns),
                        taint("disk-type", "ssd", pns),
                    ],
                ),
            ],
            &[("nodeA", 100), ("nodeB", 50), ("nodeC", 0)],
        ),
        (
            "only taints and tolerations that have effect PreferNoSchedule are checked by prioritizer function",
            tolerating(vec![
                toleration("cpu-type", "arm64", "NoSchedule"),
                toleration("disk-type", "ssd", "NoSchedule"),
            ]),
            vec![
                tainted("nodeA", vec![]),
                tainted("nodeB", vec![taint("cpu-type", "arm64", "NoSchedule")]),
                tainted(
                    "nodeC",
                    vec![
                        taint("cpu-type", "arm64", pns),
                        taint("disk-type", "ssd", pns),
                    ],
                ),
            ],
            &[("nodeA", 100), ("nodeB", 100), ("nodeC", 0)],
        ),
        (
            "Default behaviour No taints and tolerations, lands on node with no taints",
            tolerating(vec![]),
            vec![
                tainted("nodeA", vec![]),
                tainted("nodeB", vec![taint("cpu-type", "arm64", pns)]),
            ],
            &[("nodeA", 100), ("nodeB", 0)],
        ),
    ];
    for (name, p, nodes, want) in rows {
        // Scored over every node: the NoSchedule taint above would filter.
        let r = eval(&nodes, &[], &[], &p, &all_nodes());
        assert_eq!(
            normalized(&r, Plugin::TaintToleration),
            expect(want),
            "{name}"
        );
        assert!(!r.scores.taint_toleration.skipped, "{name}");
    }
}

#[test]
fn an_empty_effect_toleration_counts_and_weight_three_selects_the_untainted_node() {
    let nodes = vec![
        tainted("a", vec![taint("spot", "true", "PreferNoSchedule")]),
        tainted("b", vec![]),
    ];
    let r = eval(&nodes, &[], &[], &tolerating(vec![]), &Options::default());
    assert_eq!(
        raw(&r, Plugin::TaintToleration),
        expect(&[("a", 1), ("b", 0)])
    );
    assert_eq!(r.selected.as_deref(), Some("b"));
    assert_eq!(r.totals["b"] - r.totals["a"], 3 * 100);
    let any_effect = json!({"key": "spot", "operator": "Exists"});
    let r = eval(
        &nodes,
        &[],
        &[],
        &tolerating(vec![any_effect]),
        &Options::default(),
    );
    assert_eq!(
        raw(&r, Plugin::TaintToleration),
        expect(&[("a", 0), ("b", 0)])
    );
    assert_eq!(
        r.selected.as_deref(),
        Some("a"),
        "ties go to the first name"
    );
}

// TestLeastAllocatedScoringStrategy (noderesources/least_allocated_test.go),
// the rows with the default resources (cpu and memory, weight 1). Upstream
// writes CPU in cores ("4000"); the ratios are the same.
#[test]
fn least_allocated_table() {
    type Row<'a> = (&'a str, Pod, Vec<Node>, Vec<Pod>, &'a [(&'a str, i64)]);
    let two =
        |a: (&str, &str), b: (&str, &str)| vec![sized("node1", a.0, a.1), sized("node2", b.0, b.1)];
    let requested = || {
        pod_req(
            "p",
            None,
            &[(Some("1000"), Some("2000")), (Some("2000"), Some("3000"))],
        )
    };
    let rows: Vec<Row> = vec![
        (
            "nothing scheduled, nothing requested",
            pod_req("p", None, &[]),
            two(("4000", "10000"), ("4000", "10000")),
            vec![],
            &[("node1", 100), ("node2", 100)],
        ),
        (
            "nothing scheduled, resources requested, differently sized nodes",
            requested(),
            two(("4000", "10000"), ("6000", "10000")),
            vec![],
            &[("node1", 37), ("node2", 50)],
        ),
        (
            "no resources requested, pods scheduled",
            pod_req("p", None, &[]),
            two(("4000", "10000"), ("4000", "10000")),
            vec![
                pod_req("e1", Some("node1"), &[]),
                pod_req("e2", Some("node1"), &[]),
                pod_req("e3", Some("node2"), &[]),
                pod_req("e4", Some("node2"), &[]),
            ],
            &[("node1", 100), ("node2", 100)],
        ),
        (
            "no resources requested, pods scheduled with resources",
            pod_req("p", None, &[]),
            two(("10000", "20000"), ("10000", "20000")),
            vec![
                pod_req("e1", Some("node1"), &[(Some("3000"), Some("0"))]),
                pod_req("e2", Some("node1"), &[(Some("3000"), Some("0"))]),
                pod_req("e3", Some("node2"), &[(Some("3000"), Some("0"))]),
                pod_req("e4", Some("node2"), &[(Some("3000"), Some("5000"))]),
            ],
            &[("node1", 70), ("node2", 57)],
        ),
        (
            "resources requested, pods scheduled with resources",
            requested(),
            two(("10000", "20000"), ("10000", "20000")),
            vec![
                pod_req("e1", Some("node1"), &[(Some("3000"), Some("0"))]),
                pod_req("e2", Some("node2"), &[(Some("3000"), Some("5000"))]),
            ],
            &[("node1", 57), ("node2", 45)],
        ),
        (
            "resources requested, pods scheduled with resources, differently sized nodes",
            requested(),
            two(("10000", "20000"), ("10000", "50000")),
            vec![
                pod_req("e1", Some("node1"), &[(Some("3000"), Some("0"))]),
                pod_req("e2", Some("node2"), &[(Some("3000"), Some("5000"))]),
            ],
            &[("node1", 57), ("node2", 60)],
        ),
        (
            "requested resources exceed node capacity",
            pod_req("p", None, &[(Some("3000"), Some("0"))]),
            two(("4000", "10000"), ("4000", "10000")),
            vec![
                pod_req("e1", Some("node1"), &[(Some("3000"), Some("0"))]),
                pod_req("e2", Some("node2"), &[(Some("3000"), Some("5000"))]),
            ],
            &[("node1", 50), ("node2", 25)],
        ),
        (
            "zero node resources, pods scheduled with resources",
            pod_req("p", None, &[]),
            vec![node("node1", &[]), node("node2", &[])],
            vec![
                pod_req("e1", Some("node1"), &[(Some("3000"), Some("0"))]),
                pod_req("e2", Some("node2"), &[(Some("3000"), Some("5000"))]),
            ],
            &[("node1", 0), ("node2", 0)],
        ),
    ];
    for (name, p, nodes, existing, want) in rows {
        let r = eval(&nodes, &[], &existing, &p, &all_nodes());
        assert_eq!(raw(&r, Plugin::NodeResourcesFit), expect(want), "{name}");
        // No normalisation: the raw score is the normalised one.
        assert_eq!(
            normalized(&r, Plugin::NodeResourcesFit),
            expect(want),
            "{name}"
        );
    }
}

#[test]
fn least_allocated_counts_100m_and_200mi_for_containers_without_requests() {
    // 1 CPU, 1000 MiB: a container without requests counts 100m / 200Mi
    // here and on the node: cpu (1000 − 200) × 100 / 1000 = 80, memory
    // (1000 − 400) × 100 / 1000 = 60 → 70. An explicit zero stays zero.
    let nodes = vec![sized("a", "1", "1000Mi"), sized("b", "1", "1000Mi")];
    let existing = vec![pod_req("e", Some("a"), &[(None, None)])];
    let r = eval(
        &nodes,
        &[],
        &existing,
        &pod_req("p", None, &[(None, None)]),
        &Options::default(),
    );
    assert_eq!(
        raw(&r, Plugin::NodeResourcesFit),
        expect(&[("a", 70), ("b", 85)])
    );
    let zero = pod_req("p", None, &[(Some("0"), Some("0"))]);
    let r = eval(&nodes, &[], &existing, &zero, &Options::default());
    assert_eq!(
        raw(&r, Plugin::NodeResourcesFit),
        expect(&[("a", 85), ("b", 100)])
    );
    // Balanced allocation counts actual requests: the zero pod skips it.
    assert!(r.scores.node_resources_balanced_allocation.skipped);
    assert_eq!(r.selected.as_deref(), Some("b"));
}

/// Two nodes `node1` and `node2` of (cpu, memory) allocatable `a` and `b`
/// (the balanced-allocation tables).
fn two(a: (&str, &str), b: (&str, &str)) -> Vec<Node> {
    vec![sized("node1", a.0, a.1), sized("node2", b.0, b.1)]
}

/// upstream's `cpuOnly` pod of the balanced-allocation table, on `node`.
fn cpu_only(name: &str, node: &str) -> Pod {
    pod_req(
        name,
        Some(node),
        &[(Some("1000m"), Some("0")), (Some("2000m"), Some("0"))],
    )
}

/// upstream's `cpuAndMemory` pod of the balanced-allocation table, on `node`.
fn cpu_and_memory(name: &str, node: &str) -> Pod {
    pod_req(
        name,
        Some(node),
        &[(Some("1000m"), Some("2000")), (Some("2000m"), Some("3000"))],
    )
}

// TestNodeResourcesBalancedAllocation (noderesources/balanced_allocation_test.go
// at v1.35.4), the rows with cpu and memory: the score of the balance after
// placing the pod (C.43).
#[test]
fn balanced_allocation_table_up_to_1_35() {
    let rows: Vec<BalancedRow> = vec![
        (
            "nothing scheduled, nothing requested, skip in PreScore",
            pod_req("p", None, &[]),
            two(("4000m", "10000"), ("4000m", "10000")),
            vec![],
            None,
        ),
        (
            // CPU 3000/4000 = 0.75, memory 5000/10000 = 0.5: 100 − 12.5 = 87;
            // CPU 3000/6000 = 0.5, memory 0.5: 100.
            "nothing scheduled, resources requested, differently sized nodes",
            pod_req(
                "p",
                None,
                &[(Some("1000m"), Some("2000")), (Some("2000m"), Some("3000"))],
            ),
            two(("4000m", "10000"), ("6000m", "10000")),
            vec![],
            Some(&[("node1", 87), ("node2", 100)]),
        ),
        (
            "resources requested, pods scheduled with resources",
            pod_req(
                "p",
                None,
                &[(Some("1000m"), Some("2000")), (Some("2000m"), Some("3000"))],
            ),
            two(("10000m", "20000"), ("10000m", "20000")),
            vec![cpu_only("e1", "node1"), cpu_and_memory("e2", "node2")],
            // node1: cpu 6000/10000 = 0.6, memory 5000/20000 = 0.25 → 82;
            // node2: 0.6 and 10000/20000 = 0.5 → 95.
            Some(&[("node1", 82), ("node2", 95)]),
        ),
        (
            "resources requested, pods scheduled with resources, differently sized nodes",
            pod_req(
                "p",
                None,
                &[(Some("1000m"), Some("2000")), (Some("2000m"), Some("3000"))],
            ),
            two(("10000m", "20000"), ("10000m", "50000")),
            vec![cpu_only("e1", "node1"), cpu_and_memory("e2", "node2")],
            // node2: 0.6 and 10000/50000 = 0.2 → 80.
            Some(&[("node1", 82), ("node2", 80)]),
        ),
        (
            "requested resources at node capacity",
            pod_req(
                "p",
                None,
                &[(Some("0"), Some("0")), (Some("3000m"), Some("5000"))],
            ),
            two(("6000m", "10000"), ("6000m", "10000")),
            vec![cpu_only("e1", "node1"), cpu_and_memory("e2", "node2")],
            // node1: 1.0 and 0.5 → 75; node2: 1.0 and 1.0 → 100.
            Some(&[("node1", 75), ("node2", 100)]),
        ),
        (
            "zero node resources, pods scheduled with resources",
            pod_req("p", None, &[(Some("1000m"), Some("2000"))]),
            vec![node("node1", &[]), node("node2", &[])],
            vec![cpu_only("e1", "node1"), cpu_and_memory("e2", "node2")],
            Some(&[("node1", 100), ("node2", 100)]),
        ),
    ];
    let up_to_1_35 = Options {
        kubernetes_version: KubernetesVersion::V1_35,
        ..all_nodes()
    };
    check_balanced_allocation_rows(rows, &up_to_1_35);
}

// TestNodeResourcesBalancedAllocation (noderesources/balanced_allocation_test.go
// at v1.37.2; the same table at v1.36.3), the rows with cpu and memory: the
// score of the change the pod makes to the balance (C.74).
#[test]
fn balanced_allocation_table_since_1_36() {
    let incoming = || {
        pod_req(
            "p",
            None,
            &[(Some("1000m"), Some("2000")), (Some("2000m"), Some("3000"))],
        )
    };
    let rows: Vec<BalancedRow> = vec![
        (
            "nothing scheduled, nothing requested, skip in PreScore",
            pod_req("p", None, &[]),
            two(("4000m", "10000"), ("4000m", "10000")),
            vec![],
            None,
        ),
        (
            // node1: 100 before, 87 after → 50 + (50 − 13) / 2 = 68;
            // node2: 100 → 100 → 75.
            "nothing scheduled, resources requested, differently sized nodes",
            incoming(),
            two(("4000m", "10000"), ("6000m", "10000")),
            vec![],
            Some(&[("node1", 68), ("node2", 75)]),
        ),
        (
            // node1: 85 → 82, node2: 97 → 95.
            "resources requested, pods scheduled with resources",
            incoming(),
            two(("10000m", "20000"), ("10000m", "20000")),
            vec![cpu_only("e1", "node1"), cpu_and_memory("e2", "node2")],
            Some(&[("node1", 73), ("node2", 74)]),
        ),
        (
            // node2: 90 → 80.
            "resources requested, pods scheduled with resources, differently sized nodes",
            incoming(),
            two(("10000m", "20000"), ("10000m", "50000")),
            vec![cpu_only("e1", "node1"), cpu_and_memory("e2", "node2")],
            Some(&[("node1", 73), ("node2", 70)]),
        ),
        (
            // node1: 50 → 100, node2: 100 → 50.
            "resources requested, pods scheduled with resources, nodes to reach min/max score",
            pod_req("p", None, &[(None, Some("2000")), (None, Some("3000"))]),
            two(("3000m", "5000"), ("3000m", "5000")),
            vec![cpu_only("e1", "node1")],
            Some(&[("node1", 100), ("node2", 50)]),
        ),
        (
            // node1: 75 → 50, node2: 100 → 75.
            "requested resources at node capacity",
            pod_req(
                "p",
                None,
                &[(Some("1000m"), Some("0")), (Some("2000m"), Some("0"))],
            ),
            two(("6000m", "10000"), ("6000m", "10000")),
            vec![cpu_only("e1", "node1"), cpu_and_memory("e2", "node2")],
            Some(&[("node1", 62), ("node2", 62)]),
        ),
    ];
    for version in [KubernetesVersion::V1_36, KubernetesVersion::V1_37] {
        let options = Options {
            kubernetes_version: version,
            ..all_nodes()
        };
        check_balanced_allocation_rows(rows.clone(), &options);
    }
}

/// A row of the balanced-allocation tables: name, incoming pod, nodes,
/// existing pods, expected scores (`None`: the plugin skips).
type BalancedRow<'a> = (
    &'a str,
    Pod,
    Vec<Node>,
    Vec<Pod>,
    Option<&'a [(&'a str, i64)]>,
);

fn check_balanced_allocation_rows(rows: Vec<BalancedRow<'_>>, options: &Options) {
    for (name, p, nodes, existing, want) in rows {
        let r = eval(&nodes, &[], &existing, &p, options);
        let s = &r.scores.node_resources_balanced_allocation;
        match want {
            None => assert!(s.skipped && s.raw.is_empty(), "{name}"),
            Some(want) => {
                assert_eq!(
                    raw(&r, Plugin::NodeResourcesBalancedAllocation),
                    expect(want),
                    "{name}"
                );
                assert_eq!(
                    normalized(&r, Plugin::NodeResourcesBalancedAllocation),
                    expect(want),
                    "{name}"
                );
            }
        }
    }
}

fn with_images(name: &str, images: &[(&[&str], i64)]) -> Node {
    let images: Vec<Value> = images
        .iter()
        .map(|(names, size)| json!({"names": names, "sizeBytes": size}))
        .collect();
    node_full(name, None, Value::Null, json!(images))
}

fn pod_images(init: &[&str], containers: &[&str]) -> Pod {
    let c = |images: &[&str]| -> Vec<Value> {
        images
            .iter()
            .enumerate()
            .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
            .collect()
    };
    serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"initContainers": c(init), "containers": c(containers)}
    }))
    .unwrap()
}

/// (case, incoming pod, nodes, expected scores).
type NodesRow<'a> = (&'a str, Pod, Vec<Node>, &'a [(&'a str, i64)]);

const MB: i64 = 1024 * 1024;

/// The two nodes of TestImageLocalityPriority.
fn image_nodes() -> Vec<Node> {
    vec![
        with_images(
            "node1",
            &[
                (
                    &["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"],
                    40 * MB,
                ),
                (&["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
                (&["gcr.io/2000:latest"], 2000 * MB),
            ],
        ),
        with_images(
            "node2",
            &[
                (&["gcr.io/250:latest"], 250 * MB),
                (&["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB),
            ],
        ),
    ]
}

// TestImageLocalityPriority (imagelocality/image_locality_test.go).
#[test]
fn image_locality_table() {
    let rows: Vec<NodesRow> = vec![
        (
            // node1: 40 MiB × 1/2 = 20 MiB < 23 MiB → 0; node2: 250 MiB × 1/2
            // = 125 MiB → 100 × (125 − 23) / (2000 − 23) = 5.
            "two images spread on two nodes, prefer the larger image one",
            pod_images(&[], &["gcr.io/40", "gcr.io/250"]),
            image_nodes(),
            &[("node1", 0), ("node2", 5)],
        ),
        (
            // node1: (40 + 300) / 2 = 170 MiB → 7; node2: 5 MiB → 0.
            "two images on one node, prefer this node",
            pod_images(&[], &["gcr.io/40", "gcr.io/300"]),
            image_nodes(),
            &[("node1", 7), ("node2", 0)],
        ),
        (
            // node1: 2000 × 1/2 = 1000 MiB, two containers → 100 × (1000 −
            // 23) / (2000 − 23) = 49.
            "if exceed limit, use limit",
            pod_images(&[], &["gcr.io/2000", "gcr.io/10"]),
            image_nodes(),
            &[("node1", 49), ("node2", 0)],
        ),
        (
            "if exceed limit, use limit (with init container)",
            pod_images(&["gcr.io/2000"], &["gcr.io/10"]),
            image_nodes(),
            &[("node1", 49), ("node2", 0)],
        ),
        (
            // Both nodes hold gcr.io/250: 250 MiB × 2/2 = 250 → 100 × 227 / 977 = 23.
            "image spread on all nodes",
            pod_images(&[], &["gcr.io/250"]),
            vec![
                with_images("node1", &[(&["gcr.io/250:latest"], 250 * MB)]),
                with_images("node2", &[(&["gcr.io/250:latest"], 250 * MB)]),
            ],
            &[("node1", 23), ("node2", 23)],
        ),
        (
            "no image",
            pod_images(&[], &["gcr.io/30"]),
            vec![with_images("node1", &[]), with_images("node2", &[])],
            &[("node1", 0), ("node2", 0)],
        ),
    ];
    for (name, p, nodes, want) in rows {
        let r = eval(&nodes, &[], &[], &p, &Options::default());
        assert_eq!(raw(&r, Plugin::ImageLocality), expect(want), "{name}");
        assert_eq!(
            normalized(&r, Plugin::ImageLocality),
            expect(want),
            "{name}"
        );
    }
}

#[test]
fn image_names_get_only_the_default_tag() {
    // `nginx` is `nginx:latest`; a node listing only the registry-qualified
    // name does not match, as in kube-scheduler.
    let nodes = vec![
        with_images("a", &[(&["nginx:latest"], 900 * MB)]),
        with_images("b", &[(&["docker.io/library/nginx:latest"], 900 * MB)]),
    ];
    let r = eval(
        &nodes,
        &[],
        &[],
        &pod_images(&[], &["nginx"]),
        &Options::default(),
    );
    assert!(r.scores.image_locality.raw["a"] > 0);
    assert_eq!(r.scores.image_locality.raw["b"], 0);
}

#[test]
fn totals_are_the_weighted_sum_and_one_feasible_node_skips_scoring() {
    let nodes = vec![sized("a", "4", "8Gi"), sized("b", "4", "8Gi")];
    let existing = vec![pod_req("e", Some("a"), &[(Some("2"), Some("4Gi"))])];
    let p = pod_req("p", None, &[(Some("1"), Some("1Gi"))]);
    let r = eval(&nodes, &[], &existing, &p, &Options::default());
    for node in ["a", "b"] {
        let want: i64 = kube_scheduler_sim::SCORE_WEIGHTS
            .iter()
            .map(|(plugin, w)| {
                w * r
                    .scores
                    .get(*plugin)
                    .unwrap()
                    .normalized
                    .get(node)
                    .copied()
                    .unwrap_or(0)
            })
            .sum();
        assert_eq!(r.totals[node], want);
    }
    assert_eq!(r.selected.as_deref(), Some("b"));
    // One feasible node: nothing is scored, every plugin says so.
    let one = pod(
        "default",
        "p",
        &[],
        None,
        json!({"nodeName": "a", "containers": []}),
    );
    let r = eval(&nodes, &[], &existing, &one, &Options::default());
    assert_eq!(r.selected.as_deref(), Some("a"));
    assert!(r.totals.is_empty());
    for (plugin, _) in kube_scheduler_sim::SCORE_WEIGHTS {
        assert!(r.scores.get(plugin).unwrap().skipped, "{plugin:?}");
    }
}
