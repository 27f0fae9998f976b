//! NodeAffinity filter and score, table tests written from the facts of
//! kube-scheduler's `nodeaffinity/node_affinity_test.go` (TestNodeAffinity,
//! TestNodeAffinityPriority) and C.1–C.6. Every row is also checked
//! against the brute-force reference evaluator.

mod oracle;
mod support;

use kube_scheduler_sim::Options;
use serde_json::{Value, json};
use support::*;

fn required(terms: Value) -> Value {
    json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}})
}

fn expr(key: &str, op: &str, values: &[&str]) -> Value {
    json!({"key": key, "operator": op, "values": values})
}

#[test]
fn node_affinity_filter_table() {
    // (name, pod spec, node name, node labels, expected verdict)
    type Row<'a> = (&'a str, Value, &'a str, Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Row> = vec![
        (
            "missing labels",
            json!({"nodeSelector": {"foo": "bar"}}),
            "node1",
            vec![],
            NODE_AFFINITY,
        ),
        (
            "same labels",
            json!({"nodeSelector": {"foo": "bar"}}),
            "node1",
            vec![("foo", "bar")],
            OK,
        ),
        (
            "node labels are superset",
            json!({"nodeSelector": {"foo": "bar"}}),
            "node1",
            vec![("foo", "bar"), ("baz", "blah")],
            OK,
        ),
        (
            "node labels are subset",
            json!({"nodeSelector": {"foo": "bar", "baz": "blah"}}),
            "node1",
            vec![("foo", "bar")],
            NODE_AFFINITY,
        ),
        (
            "In operator that matches",
            required(json!([{"matchExpressions": [expr("foo", "In", &["bar", "value2"])]}])),
            "node1",
            vec![("foo", "bar")],
            OK,
        ),
        (
            "Gt operator that matches",
            required(json!([{"matchExpressions": [expr("kernel-version", "Gt", &["0204"])]}])),
            "node1",
            vec![("kernel-version", "0206")],
            OK,
        ),
        (
            "Gt on a non-integer label never matches",
            required(json!([{"matchExpressions": [expr("kernel-version", "Gt", &["0204"])]}])),
            "node1",
            vec![("kernel-version", "v206")],
            NODE_AFFINITY,
        ),
        (
            "Lt operator that matches",
            required(json!([{"matchExpressions": [expr("cores", "Lt", &["8"])]}])),
            "node1",
            vec![("cores", "4")],
            OK,
        ),
        (
            "NotIn operator that matches",
            required(json!([{"matchExpressions": [expr("mem-type", "NotIn", &["DDR", "DDR2"])]}])),
            "node1",
            vec![("mem-type", "DDR3")],
            OK,
        ),
        (
            "NotIn matches a node without the key",
            required(json!([{"matchExpressions": [expr("mem-type", "NotIn", &["DDR"])]}])),
            "node1",
            vec![],
            OK,
        ),
        (
            "Exists operator that matches",
            required(json!([{"matchExpressions": [{"key": "GPU", "operator": "Exists"}]}])),
            "node1",
            vec![("GPU", "NVIDIA-GRID-K1")],
            OK,
        ),
        (
            "DoesNotExist operator that fails",
            required(json!([{"matchExpressions": [{"key": "GPU", "operator": "DoesNotExist"}]}])),
            "node1",
            vec![("GPU", "NVIDIA-GRID-K1")],
            NODE_AFFINITY,
        ),
        (
            "In operator that does not match",
            required(json!([{"matchExpressions": [expr("foo", "In", &["value1", "value2"])]}])),
            "node1",
            vec![("foo", "bar")],
            NODE_AFFINITY,
        ),
        (
            "empty list of nodeSelectorTerms matches no node",
            required(json!([])),
            "node1",
            vec![("foo", "bar")],
            NODE_AFFINITY,
        ),
        (
            "term with empty matchExpressions matches no node",
            required(json!([{"matchExpressions": []}])),
            "node1",
            vec![("foo", "bar")],
            NODE_AFFINITY,
        ),
        (
            "no affinity schedules anywhere",
            json!({}),
            "node1",
            vec![("foo", "bar")],
            OK,
        ),
        (
            "affinity without nodeAffinity schedules anywhere",
            json!({"affinity": {"podAffinity": {}}}),
            "node1",
            vec![],
            OK,
        ),
        (
            "multiple matchExpressions ANDed that match",
            required(
                json!([{"matchExpressions": [{"key": "GPU", "operator": "Exists"}, expr("GPU", "NotIn", &["AMD", "INTER"])]}]),
            ),
            "node1",
            vec![("GPU", "NVIDIA-GRID-K1")],
            OK,
        ),
        (
            "multiple matchExpressions ANDed that do not match",
            required(
                json!([{"matchExpressions": [{"key": "GPU", "operator": "Exists"}, expr("GPU", "In", &["AMD", "INTER"])]}]),
            ),
            "node1",
            vec![("GPU", "NVIDIA-GRID-K1")],
            NODE_AFFINITY,
        ),
        (
            "multiple nodeSelectorTerms ORed",
            required(
                json!([{"matchExpressions": [expr("foo", "In", &["bar", "value2"])]}, {"matchExpressions": [expr("diffkey", "In", &["wrong", "value2"])]}]),
            ),
            "node1",
            vec![("foo", "bar")],
            OK,
        ),
        (
            "affinity and nodeSelector both satisfied",
            {
                let mut v =
                    required(json!([{"matchExpressions": [{"key": "foo", "operator": "Exists"}]}]));
                v["nodeSelector"] = json!({"foo": "bar"});
                v
            },
            "node1",
            vec![("foo", "bar")],
            OK,
        ),
        (
            "affinity matches but nodeSelector does not",
            {
                let mut v =
                    required(json!([{"matchExpressions": [{"key": "foo", "operator": "Exists"}]}]));
                v["nodeSelector"] = json!({"foo": "bar"});
                v
            },
            "node1",
            vec![("foo", "barrrrrr")],
            NODE_AFFINITY,
        ),
        (
            "matchFields In that matches",
            required(json!([{"matchFields": [expr("metadata.name", "In", &["node1"])]}])),
            "node1",
            vec![],
            OK,
        ),
        (
            "matchFields In that does not match",
            required(json!([{"matchFields": [expr("metadata.name", "In", &["node2"])]}])),
            "node1",
            vec![],
            NODE_AFFINITY,
        ),
        (
            "two terms: matchFields does not match but matchExpressions matches",
            required(
                json!([{"matchFields": [expr("metadata.name", "In", &["node2"])]}, {"matchExpressions": [expr("foo", "In", &["bar"])]}]),
            ),
            "node1",
            vec![("foo", "bar")],
            OK,
        ),
        (
            "one term: matchFields does not match but matchExpressions matches",
            required(
                json!([{"matchFields": [expr("metadata.name", "In", &["node2"])], "matchExpressions": [expr("foo", "In", &["bar"])]}]),
            ),
            "node1",
            vec![("foo", "bar")],
            NODE_AFFINITY,
        ),
        (
            "one term: both matchFields and matchExpressions match",
            required(
                json!([{"matchFields": [expr("metadata.name", "In", &["node1"])], "matchExpressions": [expr("foo", "In", &["bar"])]}]),
            ),
            "node1",
            vec![("foo", "bar")],
            OK,
        ),
        (
            "two terms: neither matches",
            required(
                json!([{"matchFields": [expr("metadata.name", "In", &["node2"])]}, {"matchExpressions": [expr("foo", "In", &["not-match-to-bar"])]}]),
            ),
            "node1",
            vec![("foo", "bar")],
            NODE_AFFINITY,
        ),
        (
            "unparsable term is skipped, a later term still matches (C.3)",
            required(
                json!([{"matchExpressions": [expr("foo", "Gt", &["x"])]}, {"matchExpressions": [expr("foo", "In", &["bar"])]}]),
            ),
            "node1",
            vec![("foo", "bar")],
            OK,
        ),
        (
            "unparsable term alone matches nothing (C.3)",
            required(json!([{"matchExpressions": [expr("foo", "BadOp", &["bar"])]}])),
            "node1",
            vec![("foo", "bar")],
            NODE_AFFINITY,
        ),
        (
            "matchFields on a key other than metadata.name is unparsable",
            required(json!([{"matchFields": [expr("metadata.uid", "In", &["node1"])]}])),
            "node1",
            vec![],
            NODE_AFFINITY,
        ),
        (
            "NotIn matchFields",
            required(json!([{"matchFields": [expr("metadata.name", "NotIn", &["node2"])]}])),
            "node1",
            vec![],
            OK,
        ),
    ];
    for (name, spec, node_name, labels, want) in cases {
        let nodes = vec![node(node_name, &labels)];
        let incoming = pod("default", "p", &[], None, spec);
        let r = eval(&nodes, &[], &[], &incoming, &Options::default());
        assert_eq!(verdicts(&r)[node_name], want, "case: {name}");
    }
}

#[test]
fn metadata_name_terms_with_an_empty_union_conflict_on_every_node() {
    // C.4: a single term pinning two different names has an empty intersection.
    let spec = required(
        json!([{"matchFields": [expr("metadata.name", "In", &["node1"]), expr("metadata.name", "In", &["node2"])]}]),
    );
    let nodes = vec![node("node1", &[]), node("node2", &[])];
    let r = eval(
        &nodes,
        &[],
        &[],
        &pod("default", "p", &[], None, spec),
        &Options::default(),
    );
    assert!(r.feasible.is_empty());
    for f in r.unschedulable.values() {
        assert_eq!(f.message, "pod affinity terms conflict");
    }
}

#[test]
fn metadata_name_shortcut_keeps_only_named_nodes() {
    let spec = required(
        json!([{"matchFields": [expr("metadata.name", "In", &["node1"])]}, {"matchFields": [expr("metadata.name", "In", &["node3"])]}]),
    );
    let nodes = vec![node("node1", &[]), node("node2", &[]), node("node3", &[])];
    let r = eval(
        &nodes,
        &[],
        &[],
        &pod("default", "p", &[], None, spec),
        &Options::default(),
    );
    assert_eq!(r.feasible, vec!["node1", "node3"]);
    assert_eq!(r.unschedulable["node2"].message, NODE_AFFINITY);
}

fn preferred(terms: Value) -> Value {
    json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}})
}

#[test]
fn node_affinity_score_table() {
    let affinity1 = preferred(
        json!([{"weight": 2, "preference": {"matchExpressions": [expr("foo", "In", &["bar"])]}}]),
    );
    let affinity2 = preferred(json!([
        {"weight": 2, "preference": {"matchExpressions": [expr("foo", "In", &["bar"])]}},
        {"weight": 4, "preference": {"matchExpressions": [expr("key", "In", &["value"])]}},
        {"weight": 5, "preference": {"matchExpressions": [expr("foo", "In", &["bar"]), expr("key", "In", &["value"]), expr("az", "In", &["az1"])]}},
    ]));
    let label1 = vec![("foo", "bar")];
    let label2 = vec![("key", "value")];
    let label3 = vec![("az", "az1")];
    let label4 = vec![("abc", "az11"), ("def", "az22")];
    let label5 = vec![("foo", "bar"), ("key", "value"), ("az", "az1")];
    // (name, pod spec, nodes, expected (node, raw, normalised))
    type Row<'a> = (
        &'a str,
        Value,
        Vec<(&'a str, Vec<(&'a str, &'a str)>)>,
        Vec<(&'a str, i64, i64)>,
    );
    let cases: Vec<Row> = vec![
        (
            "no node matches preferred affinity",
            affinity1.clone(),
            vec![
                ("node1", label4.clone()),
                ("node2", label4.clone()),
                ("node3", label4.clone()),
            ],
            vec![("node1", 0, 0), ("node2", 0, 0), ("node3", 0, 0)],
        ),
        (
            "only node1 matches the preferred affinity",
            affinity1.clone(),
            vec![
                ("node1", label1.clone()),
                ("node2", label2.clone()),
                ("node3", label3.clone()),
            ],
            vec![("node1", 2, 100), ("node2", 0, 0), ("node3", 0, 0)],
        ),
        (
            "all nodes match with different priorities (integer division)",
            affinity2.clone(),
            vec![
                ("node1", label1.clone()),
                ("node5", label5.clone()),
                ("node2", label2.clone()),
            ],
            vec![("node1", 2, 18), ("node5", 11, 100), ("node2", 4, 36)],
        ),
    ];
    for (name, spec, nodes, want) in cases {
        let nodes: Vec<_> = nodes.iter().map(|(n, l)| node(n, l)).collect();
        let r = eval(
            &nodes,
            &[],
            &[],
            &pod("default", "p", &[], None, spec),
            &Options::default(),
        );
        for (n, raw, norm) in want {
            assert_eq!(
                r.scores.node_affinity.raw[n], raw,
                "case {name}: raw of {n}"
            );
            assert_eq!(
                r.scores.node_affinity.normalized[n], norm,
                "case {name}: normalised of {n}"
            );
        }
    }
}

#[test]
fn no_preferred_terms_skips_node_affinity_scoring() {
    let nodes = vec![node("node1", &[("foo", "bar")]), node("node2", &[])];
    let r = eval(
        &nodes,
        &[],
        &[],
        &pod("default", "p", &[], None, json!({})),
        &Options::default(),
    );
    assert!(r.scores.node_affinity.skipped);
    assert_eq!(
        r.selected.as_deref(),
        Some("node1"),
        "ties go to the smallest name"
    );
}

#[test]
fn a_preferred_list_of_weight_zero_terms_scores_every_node_zero() {
    // kube-scheduler skips NodeAffinity scoring only when the pod has no
    // preferred list; a list whose terms all have weight 0 scores 0.
    let spec = preferred(json!([
        {"weight": 0, "preference": {"matchExpressions": [expr("foo", "In", &["bar"])]}},
    ]));
    let nodes = vec![node("node1", &[("foo", "bar")]), node("node2", &[])];
    let r = eval(
        &nodes,
        &[],
        &[],
        &pod("default", "p", &[], None, spec),
        &Options::default(),
    );
    let na = &r.scores.node_affinity;
    assert!(!na.skipped);
    assert_eq!(na.raw.values().copied().collect::<Vec<_>>(), [0, 0]);
    assert_eq!(na.normalized.values().copied().collect::<Vec<_>>(), [0, 0]);
}

#[test]
fn weight_zero_and_empty_preferred_terms_are_skipped_and_never_parsed() {
    let spec = preferred(json!([
        {"weight": 0, "preference": {"matchExpressions": [expr("foo", "BadOp", &["bar"])]}},
        {"weight": 3, "preference": {}},
        {"weight": 7, "preference": {"matchExpressions": [expr("foo", "In", &["bar"])]}},
    ]));
    let nodes = vec![node("node1", &[("foo", "bar")]), node("node2", &[])];
    let r = eval(
        &nodes,
        &[],
        &[],
        &pod("default", "p", &[], None, spec),
        &Options::default(),
    );
    assert_eq!(r.error, None);
    assert_eq!(r.scores.node_affinity.raw["node1"], 7);
    assert_eq!(r.selected.as_deref(), Some("node1"));
}

#[test]
fn unparsable_preferred_term_fails_prescore() {
    let spec = preferred(
        json!([{"weight": 1, "preference": {"matchExpressions": [expr("foo", "Gt", &["1", "2"])]}}]),
    );
    let nodes = vec![node("node1", &[("foo", "3")]), node("node2", &[])];
    let r = eval(
        &nodes,
        &[],
        &[],
        &pod("default", "p", &[], None, spec),
        &Options::default(),
    );
    assert_eq!(r.feasible.len(), 2);
    assert_eq!(r.selected, None);
    insta::assert_snapshot!(r.error.unwrap(), @r#"running PreScore plugin "NodeAffinity": [0].matchExpressions[0].values: Invalid value: []string{"1", "2"}: for 'Gt', 'Lt' operators, exactly one value is required"#);
}

/// NodeAffinityArgs `addedAffinity` (node_affinity_test.go TestNodeAffinity
/// "Pod with no affinity, but added affinity", TestNodeAffinityPriority
/// "Added affinity" rows): required terms filter every pod with kube-
/// scheduler's enforced-affinity reason before the pod's own terms; preferred
/// terms add to every pod's score.
mod added_affinity {
    use super::*;
    use k8s_openapi::api::core::v1::NodeAffinity;
    use kube_scheduler_sim::ClusterState;

    fn added(value: serde_json::Value) -> Options {
        let added: NodeAffinity = serde_json::from_value(value).unwrap();
        Options {
            added_affinity: Some(added),
            ..Options::default()
        }
    }

    fn zone_in(values: &[&str]) -> serde_json::Value {
        json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": values}]})
    }

    #[test]
    fn required_added_affinity_filters_before_the_pods_own_terms() {
        let nodes = vec![
            node("n1", &[("zone", "foo"), ("foo", "bar")]),
            node("n2", &[("zone", "bar"), ("foo", "bar")]),
            node("n3", &[("zone", "foo")]),
        ];
        let opts = added(json!({"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [zone_in(&["foo"])]}}));
        // Pod with no affinity, but added affinity.
        let bare = pod("default", "p", &[], None, Value::Null);
        let r = eval(&nodes, &[], &[], &bare, &opts);
        assert_eq!(r.feasible, ["n1", "n3"]);
        let enforced = "node(s) didn't match scheduler-enforced node affinity";
        assert_eq!(r.unschedulable["n2"].message, enforced);
        assert_eq!(
            r.unschedulable["n2"].plugin,
            kube_scheduler_sim::Plugin::NodeAffinity
        );
        // Pod with affinity and added affinity: both must hold, the added
        // one is reported first.
        let own = pod(
            "default",
            "p",
            &[],
            None,
            json!({"nodeSelector": {"foo": "bar"}}),
        );
        let r = eval(&nodes, &[], &[], &own, &opts);
        assert_eq!(r.feasible, ["n1"]);
        assert_eq!(r.unschedulable["n2"].message, enforced);
        assert_eq!(r.unschedulable["n3"].message, NODE_AFFINITY);
    }

    #[test]
    fn preferred_added_affinity_scores_every_pod() {
        // TestNodeAffinityPriority "Added affinity": weight 3 zone=foo.
        let nodes = vec![
            node("n1", &[("zone", "foo")]),
            node("n2", &[("zone", "bar")]),
            node("n3", &[("zone", "foo"), ("disk", "ssd")]),
        ];
        let opts = added(json!({"preferredDuringSchedulingIgnoredDuringExecution":
            [{"weight": 3, "preference": zone_in(&["foo"])}]}));
        let bare = pod("default", "p", &[], None, Value::Null);
        let r = eval(&nodes, &[], &[], &bare, &opts);
        let na = &r.scores.node_affinity;
        assert!(!na.skipped);
        assert_eq!(
            na.raw,
            [
                ("n1".to_owned(), 3),
                ("n2".to_owned(), 0),
                ("n3".to_owned(), 3)
            ]
            .into()
        );
        assert_eq!(
            na.normalized,
            [
                ("n1".to_owned(), 100),
                ("n2".to_owned(), 0),
                ("n3".to_owned(), 100)
            ]
            .into()
        );
        // "Added affinity and pod has default affinity": weight 2 disk=ssd
        // from the pod adds to the added weight 3.
        let own = pod(
            "default",
            "p",
            &[],
            None,
            json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 2, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}
            ]}}}),
        );
        let r = eval(&nodes, &[], &[], &own, &opts);
        let na = &r.scores.node_affinity;
        assert_eq!(
            na.raw,
            [
                ("n1".to_owned(), 3),
                ("n2".to_owned(), 0),
                ("n3".to_owned(), 5)
            ]
            .into()
        );
        assert_eq!(
            na.normalized,
            [
                ("n1".to_owned(), 60),
                ("n2".to_owned(), 0),
                ("n3".to_owned(), 100)
            ]
            .into()
        );
        assert_eq!(r.selected.as_deref(), Some("n3"));
    }

    #[test]
    fn an_unparsable_added_affinity_is_refused() {
        let opts = added(json!({"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": []}]}]}}));
        let state = ClusterState::new(&[node("n1", &[])], &[], &[], true);
        let err = state
            .evaluate(&pod("default", "p", &[], None, Value::Null), &opts)
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("addedAffinity: requiredDuringSchedulingIgnoredDuringExecution: "),
            "{err}"
        );
        let empty = added(
            json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}),
        );
        assert!(empty.validate().is_err());
    }
}
