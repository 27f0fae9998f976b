//! kube-scheduler's own skips (C.70: another scheduler name, scheduling
//! gates, a deletion timestamp) and nominated nodes (C.71).

mod oracle;
mod support;

use k8s_openapi::api::core::v1::Pod;
use kube_scheduler_sim::{
    ClusterState, Options, SchedulingSkip, capacity, diagnose, schedule, schedule_all,
};
use serde_json::json;
use support::*;

fn two_nodes() -> Vec<k8s_openapi::api::core::v1::Node> {
    vec![
        node("n1", &[("kubernetes.io/hostname", "n1")]),
        node("n2", &[("kubernetes.io/hostname", "n2")]),
    ]
}

fn with_meta(mut pod: Pod, meta: serde_json::Value) -> Pod {
    let mut value = serde_json::to_value(&pod).unwrap();
    for (k, v) in meta.as_object().unwrap() {
        value["metadata"][k] = v.clone();
    }
    pod = serde_json::from_value(value).unwrap();
    pod
}

fn nominated(pod: Pod, node: &str) -> Pod {
    let mut value = serde_json::to_value(&pod).unwrap();
    value["status"] = json!({"nominatedNodeName": node});
    serde_json::from_value(value).unwrap()
}

fn port_80(priority: i32) -> serde_json::Value {
    json!({"priority": priority, "containers": [], "overhead": null,
        "initContainers": null})
}

fn with_host_port(pod: Pod) -> Pod {
    let mut value = serde_json::to_value(&pod).unwrap();
    value["spec"]["containers"] =
        json!([{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]);
    serde_json::from_value(value).unwrap()
}

#[test]
fn a_gated_pod_is_not_evaluated_and_says_why() {
    let gated = pod(
        "app",
        "gated",
        &[],
        None,
        json!({"schedulingGates": [{"name": "example.com/quota"}]}),
    );
    let r = schedule(
        &two_nodes(),
        &[],
        std::slice::from_ref(&gated),
        "app",
        "gated",
        &Options::default(),
    )
    .unwrap();
    assert!(r.feasible.is_empty());
    assert_eq!(r.selected, None);
    assert_eq!(
        r.skipped,
        Some(SchedulingSkip::SchedulingGated {
            gates: vec!["example.com/quota".into()]
        })
    );
    let state = ClusterState::new(&two_nodes(), &[], &[], true);
    let d = diagnose(&state, &gated, "n1", &Options::default()).unwrap();
    assert!(!d.fits);
    assert!(
        d.explanation
            .contains("waiting for scheduling gates: [example.com/quota]"),
        "{}",
        d.explanation
    );
}

#[test]
fn schedule_all_leaves_skipped_pods_pending_with_their_reason() {
    let other = pod(
        "app",
        "a-other",
        &[],
        None,
        json!({"schedulerName": "volcano"}),
    );
    let deleting = with_meta(
        pod("app", "b-deleting", &[], None, json!({})),
        json!({"deletionTimestamp": "2026-01-01T00:00:00Z"}),
    );
    let plain = pod(
        "app",
        "c-plain",
        &[],
        None,
        json!({"schedulerName": "default-scheduler"}),
    );
    let batch = schedule_all(
        &two_nodes(),
        &[],
        &[other, deleting, plain],
        &Options::default(),
    )
    .unwrap();
    let by_pod: Vec<(&str, Option<&str>, Option<&str>)> = batch
        .placements
        .iter()
        .map(|p| (p.pod.as_str(), p.node.as_deref(), p.reason.as_deref()))
        .collect();
    assert_eq!(by_pod[0].0, "app/a-other");
    assert_eq!(by_pod[0].1, None);
    assert!(by_pod[0].2.unwrap().contains("\"volcano\""), "{by_pod:?}");
    assert_eq!(by_pod[1].1, None);
    assert!(by_pod[1].2.unwrap().contains("being deleted"), "{by_pod:?}");
    assert_eq!(by_pod[2], ("app/c-plain", Some("n1"), None));
}

#[test]
fn capacity_of_a_gated_template_is_zero_with_the_reason() {
    let gated = pod(
        "app",
        "web",
        &[],
        None,
        json!({"schedulingGates": [{"name": "g"}]}),
    );
    let c = capacity(&two_nodes(), &[], &[], &gated, 10, &Options::default()).unwrap();
    assert_eq!(c.count, 0);
    assert!(c.skipped.is_some());
    assert!(c.reason.unwrap().contains("scheduling gates"));
}

#[test]
fn a_nominated_pod_of_higher_priority_keeps_its_room_from_lower_priority_pods() {
    let holder = nominated(
        with_host_port(pod("app", "holder", &[], None, port_80(100))),
        "n1",
    );
    let low = with_host_port(pod("app", "low", &[], None, port_80(5)));
    let high = with_host_port(pod("app", "high", &[], None, port_80(1000)));
    let pods = vec![holder.clone(), low, high];
    let opts = Options::default();
    let r = schedule(&two_nodes(), &[], &pods, "app", "low", &opts).unwrap();
    assert_eq!(r.feasible, vec!["n2".to_owned()]);
    assert!(r.unschedulable.contains_key("n1"), "{r:?}");
    // A pod of higher priority does not see the nomination.
    let r = schedule(&two_nodes(), &[], &pods, "app", "high", &opts).unwrap();
    assert_eq!(r.feasible, vec!["n1".to_owned(), "n2".to_owned()]);
    // Without the nomination both nodes are feasible for the low pod.
    let plain = with_host_port(pod("app", "holder", &[], None, port_80(100)));
    let pods = vec![
        plain,
        with_host_port(pod("app", "low", &[], None, port_80(5))),
    ];
    let r = schedule(&two_nodes(), &[], &pods, "app", "low", &opts).unwrap();
    assert_eq!(r.feasible.len(), 2);
    // diagnose names the nomination.
    let state = ClusterState::from_snapshot(&two_nodes(), &[], &[holder], true).unwrap();
    let low = with_host_port(pod("app", "low", &[], None, port_80(5)));
    let d = diagnose(&state, &low, "n1", &opts).unwrap();
    assert!(!d.fits);
    assert!(d.explanation.contains("app/holder"), "{}", d.explanation);
}

#[test]
fn a_nominated_pod_takes_its_nominated_node_first() {
    // Both nodes fit and tie; without the nomination n1 wins by name.
    let pods = vec![nominated(pod("app", "p", &[], None, json!({})), "n2")];
    let r = schedule(&two_nodes(), &[], &pods, "app", "p", &Options::default()).unwrap();
    assert_eq!(r.selected.as_deref(), Some("n2"));
    assert_eq!(r.nominated_node.as_deref(), Some("n2"));
    let batch = schedule_all(&two_nodes(), &[], &pods, &Options::default()).unwrap();
    assert_eq!(batch.placements[0].node.as_deref(), Some("n2"));
}

// `addGENominatedPods` (framework/runtime/framework.go, v1.37.2) adds only
// the pods nominated to the node being filtered. Two zones, nothing placed,
// one pod nominated to each zone's node: counting both would even the
// zones out and let the incoming pod onto n1; counting only n1's leaves
// zone z1 one ahead, and a second pod there would break maxSkew 1.
#[test]
fn only_the_pods_nominated_to_a_node_hold_room_on_it() {
    let nodes = vec![
        node("n1", &[("kubernetes.io/hostname", "n1"), ("zone", "z1")]),
        node("n2", &[("kubernetes.io/hostname", "n2"), ("zone", "z2")]),
    ];
    let spread = |priority: i32| {
        json!({"priority": priority, "topologySpreadConstraints": [{"maxSkew": 1,
            "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}}]})
    };
    let web = [("app", "web")];
    let pods = vec![
        nominated(pod("app", "held-1", &web, None, spread(100)), "n1"),
        nominated(pod("app", "held-2", &web, None, spread(100)), "n2"),
        pod("app", "low", &web, None, spread(5)),
    ];
    let r = schedule(&nodes, &[], &pods, "app", "low", &Options::default()).unwrap();
    assert_eq!(r.feasible, Vec::<String>::new(), "{r:?}");
    assert_eq!(
        r.unschedulable["n1"].message,
        "node(s) didn't match pod topology spread constraints"
    );
    let reference = oracle::evaluate(&nodes, &[], &pods[..2], &pods[2], &Options::default());
    assert_eq!(reference.feasible, r.feasible);
}
