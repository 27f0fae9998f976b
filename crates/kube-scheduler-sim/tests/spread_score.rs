//! PodTopologySpread's score (C.44) and the system-default constraints
//! (C.46) with the rows of kube-scheduler's `scoring_test.go`
//! TestPodTopologySpreadScore. Upstream's "failed nodes" (in the cluster,
//! not candidates) are nodes with a `NoSchedule` taint here, which the
//! TaintToleration filter removes before scoring.
//!
//! Every row runs through the indexed evaluator and the brute-force
//! reference, which must agree.

mod oracle;
mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube_scheduler_sim::{Options, ScheduleResult, Workloads};
use serde_json::{Value, json};
use support::*;

const HOST: &str = "kubernetes.io/hostname";

fn exists(key: &str) -> Value {
    json!({"matchExpressions": [{"key": key, "operator": "Exists"}]})
}

fn soft(max_skew: i32, key: &str, selector: Value) -> Value {
    let mut c =
        json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway"});
    if !selector.is_null() {
        c["labelSelector"] = selector;
    }
    c
}

/// The incoming pod `p` with labels and constraints.
fn incoming(labels: &[(&str, &str)], constraints: Vec<Value>) -> Pod {
    let spec = if constraints.is_empty() {
        json!({})
    } else {
        json!({"topologySpreadConstraints": constraints})
    };
    pod("default", "p", labels, None, spec)
}

/// `(name, labels)` on `node`.
fn on(name: &str, node: &str, labels: &[(&str, &str)]) -> Pod {
    pod("default", name, labels, Some(node), Value::Null)
}

/// Pods named `p-<node suffix><i>` with label `foo` on each node, `counts`
/// per node in order.
fn foo_pods(nodes: &[&str], counts: &[usize]) -> Vec<Pod> {
    let mut out = Vec::new();
    for (n, c) in nodes.iter().zip(counts) {
        for i in 0..*c {
            out.push(on(&format!("p-{n}-{i}"), n, &[("foo", "")]));
        }
    }
    out
}

fn hostnamed(name: &str) -> Node {
    node(name, &[(HOST, name)])
}

/// A node in the cluster that is not a candidate (a NoSchedule taint).
fn failed(name: &str, labels: &[(&str, &str)]) -> Node {
    let mut n = node(name, labels);
    n.spec = Some(
        serde_json::from_value(json!({"taints": [{"key": "failed", "effect": "NoSchedule"}]}))
            .unwrap(),
    );
    n
}

fn spread(r: &ScheduleResult) -> BTreeMap<String, i64> {
    assert!(!r.scores.pod_topology_spread.skipped);
    r.scores.pod_topology_spread.normalized.clone()
}

fn expect(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn run(nodes: &[Node], pods: &[Pod], p: &Pod) -> BTreeMap<String, i64> {
    spread(&eval(nodes, &[], pods, p, &Options::default()))
}

#[test]
fn one_constraint_on_hostname() {
    let four = ["node-a", "node-b", "node-c", "node-d"].map(hostnamed);
    let names = ["node-a", "node-b", "node-c", "node-d"];
    let foo = || exists("foo");
    // one constraint on node, no existing pods
    let p = incoming(&[("foo", "")], vec![soft(1, HOST, foo())]);
    assert_eq!(
        run(&four[..2], &[], &p),
        expect(&[("node-a", 100), ("node-b", 100)])
    );
    // one constraint on node, all nodes have the same number of matching pods
    assert_eq!(
        run(&four[..2], &foo_pods(&names, &[1, 1]), &p),
        expect(&[("node-a", 100), ("node-b", 100)])
    );
    // one constraint on node, all 4 nodes are candidates: 2/1/0/3
    let pods = foo_pods(&names, &[2, 1, 0, 3]);
    assert_eq!(
        run(&four, &pods, &p),
        expect(&[
            ("node-a", 20),
            ("node-b", 60),
            ("node-c", 100),
            ("node-d", 0)
        ])
    );
    // one constraint on node, null selector
    let null = incoming(&[("foo", "")], vec![soft(1, HOST, Value::Null)]);
    assert_eq!(
        run(&four, &pods, &null),
        expect(&[
            ("node-a", 100),
            ("node-b", 100),
            ("node-c", 100),
            ("node-d", 100)
        ])
    );
    // maxSkew=2
    let skew2 = incoming(&[("foo", "")], vec![soft(2, HOST, foo())]);
    assert_eq!(
        run(&four, &pods, &skew2),
        expect(&[
            ("node-a", 33),
            ("node-b", 66),
            ("node-c", 100),
            ("node-d", 16)
        ])
    );
    // maxSkew=3, 4/3/2/1
    let skew3 = incoming(&[("foo", "")], vec![soft(3, HOST, foo())]);
    let pods = foo_pods(&names, &[4, 3, 2, 1]);
    assert_eq!(
        run(&four, &pods, &skew3),
        expect(&[
            ("node-a", 44),
            ("node-b", 66),
            ("node-c", 77),
            ("node-d", 100)
        ])
    );
}

#[test]
fn system_defaulting_uses_the_service_selector() {
    // system defaulting, nodes don't have zone, pods match service:
    // the same scores as the maxSkew=3 hostname constraint.
    let names = ["node-a", "node-b", "node-c", "node-d"];
    let nodes = names.map(hostnamed);
    let pods = foo_pods(&names, &[4, 3, 2, 1]);
    let service = serde_json::from_value(json!({
        "metadata": {"name": "svc", "namespace": "default"},
        "spec": {"selector": {"foo": ""}}
    }))
    .unwrap();
    let workloads = Workloads {
        services: vec![service],
        ..Default::default()
    };
    let p = incoming(&[("foo", "")], vec![]);
    let r = eval_with_workloads(&nodes, &[], &pods, &workloads, &p, &Options::default());
    assert_eq!(
        spread(&r),
        expect(&[
            ("node-a", 44),
            ("node-b", 66),
            ("node-c", 77),
            ("node-d", 100)
        ])
    );
    // Without the Service the pod has no selector: the plugin skips.
    let r = eval(&nodes, &[], &pods, &p, &Options::default());
    assert!(r.scores.pod_topology_spread.skipped);
}

#[test]
fn candidates_and_topology_keys() {
    let foo = || exists("foo");
    let p = incoming(&[("foo", "")], vec![soft(1, HOST, foo())]);
    let names = ["node-a", "node-b", "node-x", "node-y"];
    let pods = foo_pods(&names, &[4, 2, 1, 3]);
    // one constraint on node, 3 out of 4 nodes are candidates
    let nodes = vec![
        hostnamed("node-a"),
        hostnamed("node-b"),
        hostnamed("node-x"),
        failed("node-y", &[(HOST, "node-y")]),
    ];
    assert_eq!(
        run(&nodes, &pods, &p),
        expect(&[("node-a", 33), ("node-b", 83), ("node-x", 100)])
    );
    // ... one node doesn't match topology key
    let nodes = vec![
        hostnamed("node-a"),
        node("node-b", &[("n", "node-b")]),
        hostnamed("node-x"),
        failed("node-y", &[(HOST, "node-y")]),
    ];
    assert_eq!(
        run(&nodes, &pods, &p),
        expect(&[("node-a", 16), ("node-b", 0), ("node-x", 100)])
    );
    // one constraint on zone, 3 out of 4 nodes are candidates
    let zoned = incoming(&[("foo", "")], vec![soft(1, "zone", foo())]);
    let nodes = vec![
        node("node-a", &[("zone", "zone1"), (HOST, "node-a")]),
        node("node-b", &[("zone", "zone1"), (HOST, "node-b")]),
        node("node-x", &[("zone", "zone2"), (HOST, "node-x")]),
        failed("node-y", &[("zone", "zone2"), (HOST, "node-y")]),
    ];
    assert_eq!(
        run(&nodes, &pods, &zoned),
        expect(&[("node-a", 75), ("node-b", 75), ("node-x", 100)])
    );
}

#[test]
fn two_constraints() {
    let zone_nodes = |failed_nodes: &[&str]| -> Vec<Node> {
        [
            ("node-a", "zone1"),
            ("node-b", "zone1"),
            ("node-x", "zone2"),
            ("node-y", "zone2"),
        ]
        .iter()
        .map(|(n, z)| {
            if failed_nodes.contains(n) {
                failed(n, &[("zone", z), (HOST, n)])
            } else {
                node(n, &[("zone", z), (HOST, n)])
            }
        })
        .collect()
    };
    // two Constraints on zone and node, 2 out of 4 nodes are candidates: 2/~1~/2/~4~
    let p = incoming(
        &[("foo", "")],
        vec![soft(1, "zone", exists("foo")), soft(1, HOST, exists("foo"))],
    );
    let pods = foo_pods(&["node-a", "node-b", "node-x", "node-y"], &[2, 1, 2, 4]);
    assert_eq!(
        run(&zone_nodes(&["node-b", "node-y"]), &pods, &p),
        expect(&[("node-a", 100), ("node-x", 63)])
    );
    // two Constraints on zone, 2 out of 4 nodes are candidates
    let p = incoming(
        &[("foo", ""), ("bar", "")],
        vec![
            soft(1, "zone", exists("foo")),
            soft(1, "zone", exists("bar")),
        ],
    );
    let pods = vec![
        on("p-a1", "node-a", &[("foo", ""), ("bar", "")]),
        on("p-a2", "node-a", &[("foo", "")]),
        on("p-b1", "node-b", &[("foo", ""), ("bar", "")]),
        on("p-y1", "node-y", &[("foo", "")]),
        on("p-y2", "node-y", &[("foo", ""), ("bar", "")]),
        on("p-y3", "node-y", &[("foo", "")]),
    ];
    let nodes = vec![
        node("node-a", &[("zone", "zone1")]),
        node("node-x", &[("zone", "zone2")]),
        failed("node-b", &[("zone", "zone1")]),
        failed("node-y", &[("zone", "zone2")]),
    ];
    assert_eq!(
        run(&nodes, &pods, &p),
        expect(&[("node-a", 85), ("node-x", 100)])
    );
    // two Constraints on zone and node, with different labelSelectors
    let p = incoming(
        &[("foo", ""), ("bar", "")],
        vec![soft(1, "zone", exists("foo")), soft(1, HOST, exists("bar"))],
    );
    let pods = vec![
        on("p-a1", "node-a", &[("foo", "")]),
        on("p-b1", "node-b", &[("foo", ""), ("bar", "")]),
        on("p-y1", "node-y", &[("foo", "")]),
        on("p-y2", "node-y", &[("bar", "")]),
    ];
    assert_eq!(
        run(&zone_nodes(&[]), &pods, &p),
        expect(&[
            ("node-a", 60),
            ("node-b", 20),
            ("node-x", 100),
            ("node-y", 60)
        ])
    );
    // ... 3 out of 4 nodes are candidates
    assert_eq!(
        run(&zone_nodes(&["node-y"]), &pods, &p),
        expect(&[("node-a", 50), ("node-b", 25), ("node-x", 100)])
    );
    // ... some nodes have 0 pods
    let pods = vec![
        on("p-b1", "node-b", &[("bar", "")]),
        on("p-x1", "node-x", &[("foo", "")]),
        on("p-y1", "node-y", &[("foo", ""), ("bar", "")]),
    ];
    assert_eq!(
        run(&zone_nodes(&[]), &pods, &p),
        expect(&[
            ("node-a", 100),
            ("node-b", 60),
            ("node-x", 40),
            ("node-y", 0)
        ])
    );
}

#[test]
fn namespaces_and_terminating_pods() {
    let p = incoming(&[("foo", "")], vec![soft(1, HOST, exists("foo"))]);
    let nodes = vec![hostnamed("node-a"), hostnamed("node-b")];
    // existing pods in a different namespace do not count
    let pods = vec![
        pod("ns1", "p-a1", &[("foo", "")], Some("node-a"), Value::Null),
        on("p-a2", "node-a", &[("foo", "")]),
        on("p-b1", "node-b", &[("foo", "")]),
        on("p-b2", "node-b", &[("foo", "")]),
    ];
    assert_eq!(
        run(&nodes, &pods, &p),
        expect(&[("node-a", 100), ("node-b", 33)])
    );
    // terminating Pods should be excluded
    let mut terminating = on("p-a", "node-a", &[("foo", "")]);
    terminating.metadata.deletion_timestamp =
        Some(serde_json::from_value(json!("2026-01-01T00:00:00Z")).unwrap());
    let pods = vec![terminating, on("p-b", "node-b", &[("foo", "")])];
    assert_eq!(
        run(&nodes, &pods, &p),
        expect(&[("node-a", 100), ("node-b", 0)])
    );
}

#[test]
fn do_not_schedule_constraints_alone_skip_the_score_and_block_the_defaults() {
    let nodes = vec![hostnamed("node-a"), hostnamed("node-b")];
    let hard = json!({"maxSkew": 5, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
                      "labelSelector": exists("foo")});
    let p = incoming(&[("foo", "")], vec![hard]);
    let service = serde_json::from_value(json!({
        "metadata": {"name": "svc", "namespace": "default"},
        "spec": {"selector": {"foo": ""}}
    }))
    .unwrap();
    let workloads = Workloads {
        services: vec![service],
        ..Default::default()
    };
    let r = eval_with_workloads(&nodes, &[], &[], &workloads, &p, &Options::default());
    assert!(r.scores.pod_topology_spread.skipped);
}

#[test]
fn default_selector_from_replica_sets_and_stateful_sets() {
    // Zones z1 (a, b) and z2 (c); nodes of z1 hold 2 and 1 pods of the
    // ReplicaSet, z2 none: c wins on both default constraints.
    let nodes = vec![
        node("a", &[(HOST, "a"), ("topology.kubernetes.io/zone", "z1")]),
        node("b", &[(HOST, "b"), ("topology.kubernetes.io/zone", "z1")]),
        node("c", &[(HOST, "c"), ("topology.kubernetes.io/zone", "z2")]),
    ];
    let owned = |name: &str, node: Option<&str>, kind: &str| -> Pod {
        let mut p = pod("default", name, &[("app", "web")], node, Value::Null);
        p.metadata.owner_references =
            Some(vec![serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": kind, "name": "web", "uid": "u", "controller": true
        }))
        .unwrap()]);
        p
    };
    let pods = vec![
        owned("w1", Some("a"), "ReplicaSet"),
        owned("w2", Some("a"), "ReplicaSet"),
        owned("w3", Some("b"), "ReplicaSet"),
    ];
    let selector = json!({"matchLabels": {"app": "web"}});
    let rs = serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": selector}}))
    .unwrap();
    let ss = serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": selector, "serviceName": "web", "template": {}}}))
    .unwrap();
    let workloads = Workloads {
        replica_sets: vec![rs],
        stateful_sets: vec![ss],
        ..Default::default()
    };
    let r = eval_with_workloads(
        &nodes,
        &[],
        &pods,
        &workloads,
        &owned("w4", None, "ReplicaSet"),
        &Options::default(),
    );
    // hostname: ln(5) weight, counts 2/1/0, +2; zone: ln(4), counts 3/3/0, +4.
    assert_eq!(
        r.scores.pod_topology_spread.raw,
        expect(&[("a", 13), ("b", 12), ("c", 6)])
    );
    assert_eq!(spread(&r), expect(&[("a", 46), ("b", 53), ("c", 100)]));
    assert_eq!(r.selected.as_deref(), Some("c"));
    // A StatefulSet owner gives the same selector.
    let r = eval_with_workloads(
        &nodes,
        &[],
        &pods,
        &workloads,
        &owned("w4", None, "StatefulSet"),
        &Options::default(),
    );
    assert_eq!(spread(&r), expect(&[("a", 46), ("b", 53), ("c", 100)]));
    // An owner kind kube-scheduler does not know (Deployment) gives none.
    let r = eval_with_workloads(
        &nodes,
        &[],
        &pods,
        &workloads,
        &owned("w4", None, "Deployment"),
        &Options::default(),
    );
    assert!(r.scores.pod_topology_spread.skipped);
}

#[test]
fn unparsable_soft_selector_fails_pre_score() {
    let nodes = vec![hostnamed("node-a"), hostnamed("node-b")];
    let bad = json!({"matchExpressions": [{"key": "foo", "operator": "In", "values": []}]});
    let p = incoming(&[("foo", "")], vec![soft(1, HOST, bad)]);
    let r = eval(&nodes, &[], &[], &p, &Options::default());
    let error = r.error.unwrap();
    assert!(
        error.starts_with("running PreScore plugin \"PodTopologySpread\": calculating preScoreState: obtaining pod's soft topology spread constraints: "),
        "{error}"
    );
    assert_eq!(r.selected, None);
}
