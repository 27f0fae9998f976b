//! Entry points and state bookkeeping.

mod oracle;
mod support;

use kube_scheduler_sim::{ClusterState, Options, diagnose_all, schedule, schedule_all};
use serde_json::json;
use support::*;

fn anti_host() -> serde_json::Value {
    json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}})
}

fn two_nodes() -> Vec<k8s_openapi::api::core::v1::Node> {
    vec![
        node("n1", &[("kubernetes.io/hostname", "n1")]),
        node("n2", &[("kubernetes.io/hostname", "n2")]),
    ]
}

#[test]
fn schedule_names_an_unknown_pod() {
    let err = schedule(&two_nodes(), &[], &[], "prod", "db-0", &Options::default()).unwrap_err();
    assert_eq!(err.to_string(), "pod prod/db-0 not found in the given pods");
}

#[test]
fn schedule_evaluates_a_bound_pod_as_if_it_were_not_placed() {
    let pods = vec![pod(
        "prod",
        "db-0",
        &[("app", "db")],
        Some("n1"),
        anti_host(),
    )];
    let r = schedule(
        &two_nodes(),
        &[],
        &pods,
        "prod",
        "db-0",
        &Options::default(),
    )
    .unwrap();
    assert_eq!(
        r.feasible,
        vec!["n1", "n2"],
        "its own anti-affinity does not repel itself"
    );
}

#[test]
fn schedule_all_places_pending_pods_in_namespace_name_order() {
    let pods = vec![
        pod("prod", "db-1", &[("app", "db")], None, anti_host()),
        pod("prod", "db-0", &[("app", "db")], None, anti_host()),
        pod("prod", "db-2", &[("app", "db")], None, anti_host()),
        pod("prod", "bound", &[("app", "web")], Some("n1"), json!({})),
    ];
    let r = schedule_all(&two_nodes(), &[], &pods, &Options::default()).unwrap();
    let got: Vec<(&str, Option<&str>)> = r
        .placements
        .iter()
        .map(|p| (p.pod.as_str(), p.node.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("prod/db-0", Some("n1")),
            ("prod/db-1", Some("n2")),
            ("prod/db-2", None)
        ]
    );
    assert_eq!(
        r.placements[2].reason.as_deref(),
        Some("0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.")
    );
}

/// kube-scheduler's queue (C.72): the highest priority goes first, even
/// when a lower-priority pod is older or sorts first by name.
#[test]
fn schedule_all_places_the_highest_priority_first() {
    let mut spec = anti_host();
    spec["priority"] = json!(1000);
    let pods = vec![
        pod("prod", "db-0", &[("app", "db")], None, anti_host()),
        pod("prod", "db-1", &[("app", "db")], None, anti_host()),
        pod("prod", "db-urgent", &[("app", "db")], None, spec),
    ];
    let r = schedule_all(&two_nodes(), &[], &pods, &Options::default()).unwrap();
    let got: Vec<(&str, Option<&str>)> = r
        .placements
        .iter()
        .map(|p| (p.pod.as_str(), p.node.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("prod/db-urgent", Some("n1")),
            ("prod/db-0", Some("n2")),
            ("prod/db-1", None)
        ]
    );
}

#[test]
fn add_pod_rejects_pending_unknown_node_and_duplicate_pods() {
    let mut state = ClusterState::new(&two_nodes(), &[], &[], true);
    let e = state
        .add_pod(&pod("prod", "p", &[], None, json!({})))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "pod prod/p has no spec.nodeName; only bound pods can be added"
    );
    let e = state
        .add_pod(&pod("prod", "p", &[], Some("n9"), json!({})))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "pod prod/p is bound to node \"n9\", which is not in the cluster state"
    );
    state
        .add_pod(&pod("prod", "p", &[], Some("n1"), json!({})))
        .unwrap();
    let e = state
        .add_pod(&pod("prod", "p", &[], Some("n2"), json!({})))
        .unwrap_err();
    assert_eq!(e.to_string(), "pod prod/p is already placed");
    assert_eq!(state.pod_count(), 1);
    assert!(state.remove_pod_named("prod", "p").is_some());
    assert_eq!(state.pod_count(), 0);
}

#[test]
fn terminating_pods_count_for_anti_affinity_but_not_for_spread() {
    let mut terminating = pod("prod", "old", &[("app", "db")], Some("n1"), json!({}));
    terminating.metadata.deletion_timestamp =
        Some(serde_json::from_value(json!("2026-01-01T00:00:00Z")).unwrap());
    let spread = pod(
        "prod",
        "p",
        &[("app", "db")],
        None,
        json!({"topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "db"}}}]}),
    );
    let other = pod("prod", "q", &[("app", "db")], Some("n1"), json!({}));
    // Without the terminating pod counted, n1 has 1 and n2 has 0: both within skew 1.
    let r = eval(
        &two_nodes(),
        &[],
        &[terminating.clone(), other],
        &spread,
        &Options::default(),
    );
    assert_eq!(r.feasible, vec!["n2"]);
    let r = eval(
        &two_nodes(),
        &[],
        std::slice::from_ref(&terminating),
        &spread,
        &Options::default(),
    );
    assert_eq!(
        r.feasible,
        vec!["n1", "n2"],
        "a terminating pod does not count for spread"
    );
    let anti = pod("prod", "p", &[("app", "db")], None, anti_host());
    let r = eval(
        &two_nodes(),
        &[],
        &[terminating],
        &anti,
        &Options::default(),
    );
    assert_eq!(
        r.feasible,
        vec!["n2"],
        "a terminating pod still counts for anti-affinity"
    );
}

#[test]
fn diagnose_all_agrees_with_the_evaluation_on_every_node() {
    let pods = vec![pod(
        "prod",
        "db-0",
        &[("app", "db")],
        Some("n1"),
        anti_host(),
    )];
    let state = ClusterState::new(&two_nodes(), &[], &pods, true);
    let incoming = pod("prod", "db-1", &[("app", "db")], None, anti_host());
    let r = state.evaluate(&incoming, &Options::default()).unwrap();
    let all = diagnose_all(&state, &incoming, &Options::default());
    assert_eq!(
        all.iter().map(|d| d.node.as_str()).collect::<Vec<_>>(),
        vec!["n1", "n2"]
    );
    for d in &all {
        assert_eq!(d.fits, r.feasible.contains(&d.node), "node {}", d.node);
        assert_eq!(
            d.message.as_ref(),
            r.unschedulable.get(&d.node).map(|f| &f.message)
        );
    }
}

/// A pod whose `metadata.namespace` is empty is in `default`, like one
/// without it (`kube_validation::namespace_or_default`, the workspace's one
/// rule; kube-apiserver fills an empty namespace from the request,
/// `k8s.io/apiserver/pkg/registry/rest/meta.go`
/// `EnsureObjectNamespaceMatchesRequestNamespace`, Kubernetes v1.35.4): it is
/// found as `default/…`, and its labels count for a term scoped to `default`.
#[test]
fn an_empty_namespace_is_default() {
    let pods = vec![
        pod("", "db-0", &[("app", "db")], Some("n1"), json!({})),
        pod("", "db-1", &[("app", "db")], None, anti_host()),
    ];
    let r = schedule(
        &two_nodes(),
        &[],
        &pods,
        "default",
        "db-1",
        &Options::default(),
    )
    .unwrap();
    assert_eq!(r.feasible, vec!["n2"], "db-0 counts in default");
}
