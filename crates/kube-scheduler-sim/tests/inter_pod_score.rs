//! InterPodAffinity Score, table tests written from the facts of
//! kube-scheduler's `interpodaffinity/scoring_test.go` (TestPreferredAffinity,
//! TestPreferredAffinityWithHardPodAffinitySymmetricWeight) and spec
//! C.18–C.20. Every row is also checked against the reference evaluator.

mod oracle;
mod support;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube_scheduler_sim::Options;
use serde_json::{Value, json};
use support::*;

fn weighted(weight: i32, selector: Value, key: &str) -> Value {
    json!({"weight": weight, "podAffinityTerm": {"labelSelector": selector, "topologyKey": key}})
}
fn preferred(aff: Value, anti: Value) -> Value {
    json!({"affinity": {
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": aff},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": anti}}})
}

const S1: &[(&str, &str)] = &[("security", "S1")];
const S2: &[(&str, &str)] = &[("security", "S2")];

fn stay_with_s1_in_region() -> Value {
    preferred(
        json!([weighted(5, sel_in("security", &["S1"]), "region")]),
        json!([]),
    )
}
fn away_from_s1_in_az() -> Value {
    preferred(
        json!([]),
        json!([weighted(5, sel_in("security", &["S1"]), "az")]),
    )
}

struct Case {
    name: &'static str,
    incoming: Pod,
    pods: Vec<Pod>,
    nodes: Vec<Node>,
    opts: Options,
    /// (node, raw, normalised)
    want: Vec<(&'static str, i64, i64)>,
}

fn run(cases: Vec<Case>) {
    for c in cases {
        let inventory = [namespace("team-a", &[("team", "a")]), namespace("ns", &[])];
        let r = eval(&c.nodes, &inventory, &c.pods, &c.incoming, &c.opts);
        let s = &r.scores.inter_pod_affinity;
        for (n, raw, norm) in &c.want {
            assert_eq!(
                s.raw.get(*n).copied().unwrap_or(0),
                *raw,
                "case {}: raw of {n}",
                c.name
            );
            assert_eq!(
                s.normalized.get(*n).copied().unwrap_or(0),
                *norm,
                "case {}: normalised of {n}",
                c.name
            );
        }
    }
}

fn china() -> Vec<(&'static str, &'static str)> {
    vec![("region", "China")]
}

#[test]
fn preferred_affinity_score_table() {
    let cases = vec![
        Case {
            name: "all nodes have the same score when there are no pods",
            incoming: pod("ns", "p", S1, None, json!({})),
            pods: vec![],
            nodes: vec![
                node("node1", &china()),
                node("node2", &[("region", "India")]),
                node("node3", &[("az", "az1")]),
            ],
            opts: Options::default(),
            want: vec![("node1", 0, 0), ("node2", 0, 0), ("node3", 0, 0)],
        },
        Case {
            name: "affinity: the node sharing the topology value of a matching pod scores highest",
            incoming: pod("ns", "p", S1, None, stay_with_s1_in_region()),
            pods: vec![
                pod("ns", "e1", S1, Some("node1"), json!({})),
                pod("ns", "e2", S2, Some("node2"), json!({})),
                pod("ns", "e3", &[], Some("node3"), json!({})),
            ],
            nodes: vec![
                node("node1", &china()),
                node("node2", &[("region", "India")]),
                node("node3", &[("az", "az1")]),
            ],
            opts: Options::default(),
            want: vec![("node1", 5, 100), ("node2", 0, 0), ("node3", 0, 0)],
        },
        Case {
            name: "affinity: every node in the matching pod's region scores, even without pods",
            incoming: pod("ns", "p", S1, None, stay_with_s1_in_region()),
            pods: vec![pod("ns", "e1", S1, Some("node1"), json!({}))],
            nodes: vec![
                node("node1", &china()),
                node("node2", &[("region", "China"), ("az", "az1")]),
                node("node3", &[("region", "India")]),
            ],
            opts: Options::default(),
            want: vec![("node1", 5, 100), ("node2", 5, 100), ("node3", 0, 0)],
        },
        Case {
            name: "affinity: the region with more matching pods scores higher",
            incoming: pod("ns", "p", S1, None, stay_with_s1_in_region()),
            pods: vec![
                pod("ns", "e1", S1, Some("node1"), json!({})),
                pod("ns", "e2", S1, Some("node1"), json!({})),
                pod("ns", "e3", S1, Some("node3"), json!({})),
                pod("ns", "e4", S2, Some("node2"), json!({})),
            ],
            nodes: vec![
                node("node1", &china()),
                node("node2", &[("region", "China"), ("az", "az1")]),
                node("node3", &[("region", "India")]),
            ],
            opts: Options::default(),
            want: vec![("node1", 10, 100), ("node2", 10, 100), ("node3", 5, 0)],
        },
        Case {
            name: "anti-affinity: nodes without matching pods score highest (negative raw, min-max)",
            incoming: pod("ns", "p", S2, None, away_from_s1_in_az()),
            pods: vec![
                pod("ns", "e1", S1, Some("node1"), json!({})),
                pod("ns", "e2", S2, Some("node2"), json!({})),
            ],
            nodes: vec![
                node("node1", &[("az", "az1")]),
                node("node2", &[("az", "az2")]),
            ],
            opts: Options::default(),
            want: vec![("node1", -5, 0), ("node2", 0, 100)],
        },
        Case {
            name: "affinity and anti-affinity both contribute",
            incoming: pod(
                "ns",
                "p",
                S1,
                None,
                preferred(
                    json!([weighted(5, sel_in("security", &["S1"]), "region")]),
                    json!([weighted(5, sel_in("security", &["S2"]), "az")]),
                ),
            ),
            pods: vec![
                pod("ns", "e1", S1, Some("node1"), json!({})),
                pod("ns", "e2", S2, Some("node2"), json!({})),
            ],
            nodes: vec![
                node("node1", &[("region", "China"), ("az", "az1")]),
                node("node2", &[("region", "China"), ("az", "az2")]),
                node("node3", &[("region", "India")]),
            ],
            opts: Options::default(),
            // node2: +5 (China, where e1 runs) − 5 (az2, where e2 runs) = 0.
            want: vec![("node1", 5, 100), ("node2", 0, 0), ("node3", 0, 0)],
        },
        Case {
            name: "symmetry: existing pods' preferred affinity and anti-affinity terms count",
            incoming: pod("ns", "p", S1, None, json!({})),
            pods: vec![
                pod(
                    "ns",
                    "e1",
                    &[],
                    Some("node1"),
                    preferred(
                        json!([weighted(5, sel_in("security", &["S1"]), "region")]),
                        json!([]),
                    ),
                ),
                pod(
                    "ns",
                    "e2",
                    &[],
                    Some("node2"),
                    preferred(
                        json!([]),
                        json!([weighted(3, sel_in("security", &["S1"]), "region")]),
                    ),
                ),
            ],
            nodes: vec![
                node("node1", &china()),
                node("node2", &[("region", "India")]),
                node("node3", &[("region", "Japan")]),
            ],
            opts: Options::default(),
            want: vec![("node1", 5, 100), ("node2", -3, 0), ("node3", 0, 37)],
        },
        Case {
            name: "symmetry: existing pods' required affinity counts with hardPodAffinityWeight",
            incoming: pod("ns", "p", S1, None, json!({})),
            pods: vec![pod(
                "ns",
                "e1",
                &[],
                Some("node1"),
                json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": sel_in("security", &["S1", "value2"]), "topologyKey": "region"}]}}}),
            )],
            nodes: vec![
                node("node1", &china()),
                node("node2", &[("region", "India")]),
            ],
            opts: Options {
                hard_pod_affinity_weight: 7,
                ..Options::default()
            },
            want: vec![("node1", 7, 100), ("node2", 0, 0)],
        },
        Case {
            name: "hardPodAffinityWeight 0 ignores existing pods' required affinity",
            incoming: pod("ns", "p", S1, None, json!({})),
            pods: vec![pod(
                "ns",
                "e1",
                &[],
                Some("node1"),
                json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": sel_in("security", &["S1"]), "topologyKey": "region"}]}}}),
            )],
            nodes: vec![
                node("node1", &china()),
                node("node2", &[("region", "India")]),
            ],
            opts: Options {
                hard_pod_affinity_weight: 0,
                ..Options::default()
            },
            want: vec![("node1", 0, 0), ("node2", 0, 0)],
        },
        Case {
            name: "existing pods' required anti-affinity plays no role in scoring",
            incoming: pod("ns", "p", S1, None, json!({})),
            pods: vec![pod(
                "ns",
                "e1",
                &[],
                Some("node1"),
                json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": sel_in("security", &["S2"]), "topologyKey": "region"}]}}}),
            )],
            nodes: vec![
                node("node1", &china()),
                node("node2", &[("region", "India")]),
            ],
            opts: Options::default(),
            want: vec![("node1", 0, 0), ("node2", 0, 0)],
        },
        Case {
            name: "ignorePreferredTermsOfExistingPods: a pod without preferred terms skips scoring",
            incoming: pod("ns", "p", S1, None, json!({})),
            pods: vec![pod(
                "ns",
                "e1",
                &[],
                Some("node1"),
                preferred(
                    json!([weighted(5, sel_in("security", &["S1"]), "region")]),
                    json!([]),
                ),
            )],
            nodes: vec![
                node("node1", &china()),
                node("node2", &[("region", "India")]),
            ],
            opts: Options {
                ignore_preferred_terms_of_existing_pods: true,
                ..Options::default()
            },
            want: vec![("node1", 0, 0), ("node2", 0, 0)],
        },
        Case {
            name: "ignorePreferredTermsOfExistingPods does not skip a pod with preferred terms",
            incoming: pod("ns", "p", S1, None, stay_with_s1_in_region()),
            pods: vec![pod(
                "ns",
                "e1",
                S1,
                Some("node1"),
                preferred(
                    json!([weighted(5, sel_in("security", &["S1"]), "region")]),
                    json!([]),
                ),
            )],
            nodes: vec![
                node("node1", &china()),
                node("node2", &[("region", "India")]),
            ],
            opts: Options {
                ignore_preferred_terms_of_existing_pods: true,
                ..Options::default()
            },
            want: vec![("node1", 10, 100), ("node2", 0, 0)],
        },
        Case {
            name: "scores add up over every topology key the node carries",
            incoming: pod(
                "ns",
                "p",
                S1,
                None,
                preferred(
                    json!([
                        weighted(2, sel_in("security", &["S1"]), "region"),
                        weighted(3, sel_in("security", &["S1"]), "az")
                    ]),
                    json!([]),
                ),
            ),
            pods: vec![pod("ns", "e1", S1, Some("node1"), json!({}))],
            nodes: vec![
                node("node1", &[("region", "China"), ("az", "az1")]),
                node("node2", &[("region", "China"), ("az", "az2")]),
                node("node3", &[("az", "az1")]),
            ],
            opts: Options::default(),
            // min–max over 2..5: (3 − 2) / 3 → 33.
            want: vec![("node1", 5, 100), ("node2", 2, 0), ("node3", 3, 33)],
        },
        Case {
            name: "symmetry: an existing pod's preferred namespaceSelector sees the incoming pod's namespace labels",
            incoming: pod("team-a", "p", S1, None, json!({})),
            pods: vec![pod(
                "ns",
                "e1",
                &[],
                Some("node1"),
                preferred(
                    json!([{"weight": 6, "podAffinityTerm": {"labelSelector": sel_in("security", &["S1"]), "namespaceSelector": {"matchLabels": {"team": "a"}}, "topologyKey": "region"}}]),
                    json!([]),
                ),
            )],
            nodes: vec![
                node("node1", &china()),
                node("node2", &[("region", "India")]),
            ],
            opts: Options::default(),
            want: vec![("node1", 6, 100), ("node2", 0, 0)],
        },
        Case {
            name: "preferred term namespaceSelector resolved against the inventory",
            incoming: pod(
                "ns",
                "p",
                S1,
                None,
                preferred(
                    json!([{"weight": 4, "podAffinityTerm": {"labelSelector": sel_in("security", &["S1"]), "namespaceSelector": {}, "topologyKey": "region"}}]),
                    json!([]),
                ),
            ),
            pods: vec![pod("elsewhere", "e1", S1, Some("node2"), json!({}))],
            nodes: vec![
                node("node1", &china()),
                node("node2", &[("region", "India")]),
            ],
            opts: Options::default(),
            want: vec![("node1", 0, 0), ("node2", 4, 100)],
        },
    ];
    run(cases);
}

#[test]
fn skipped_flag_when_nothing_contributes() {
    let nodes = vec![
        node("node1", &china()),
        node("node2", &[("region", "India")]),
    ];
    let r = eval(
        &nodes,
        &[],
        &[],
        &pod("ns", "p", S1, None, stay_with_s1_in_region()),
        &Options::default(),
    );
    assert!(r.scores.inter_pod_affinity.skipped);
    assert!(r.scores.inter_pod_affinity.raw.is_empty());
}

#[test]
fn score_all_nodes_scores_infeasible_nodes_too() {
    let nodes = vec![
        node("node1", &china()),
        node("node2", &[("region", "India")]),
    ];
    let pods = vec![pod("ns", "e1", S1, Some("node1"), json!({}))];
    let incoming = pod(
        "ns",
        "p",
        S1,
        None,
        json!({
            "nodeSelector": {"region": "India"},
            "affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(5, sel_in("security", &["S1"]), "region")]}}
        }),
    );
    let only_feasible = eval(&nodes, &[], &pods, &incoming, &Options::default());
    assert!(
        only_feasible.scores.inter_pod_affinity.raw.is_empty(),
        "one feasible node: scoring does not run"
    );
    assert_eq!(only_feasible.selected.as_deref(), Some("node2"));
    let all = eval(
        &nodes,
        &[],
        &pods,
        &incoming,
        &Options {
            score_all_nodes: true,
            ..Options::default()
        },
    );
    assert_eq!(all.scores.inter_pod_affinity.raw["node1"], 5);
    assert_eq!(all.scores.inter_pod_affinity.normalized["node2"], 0);
    assert_eq!(
        all.selected.as_deref(),
        Some("node2"),
        "only feasible nodes are selected"
    );
}

#[test]
fn hard_pod_affinity_weight_out_of_range_is_rejected() {
    let state = kube_scheduler_sim::ClusterState::new(&[], &[], &[], true);
    let err = state
        .evaluate(
            &pod("ns", "p", &[], None, json!({})),
            &Options {
                hard_pod_affinity_weight: 101,
                ..Options::default()
            },
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "hardPodAffinityWeight must be in the range 0-100, got 101"
    );
}
