//! InterPodAffinity Filter, table tests written from the facts of
//! kube-scheduler's `interpodaffinity/filtering_test.go`
//! (TestRequiredAffinitySingleNode, TestRequiredAffinityMultipleNodes) and
//! C.7–C.17. Every row is also checked against the reference evaluator.

mod oracle;
mod support;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube_scheduler_sim::Options;
use serde_json::{Value, json};
use support::*;

fn term(selector: Value, key: &str) -> Value {
    json!({"labelSelector": selector, "topologyKey": key})
}
fn affinity(terms: Value) -> Value {
    json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}})
}
fn anti(terms: Value) -> Value {
    json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}})
}
fn both(aff: Value, anti: Value) -> Value {
    json!({"affinity": {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": aff},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti}}})
}
fn exprs(list: &[(&str, &str, &[&str])]) -> Value {
    json!({"matchExpressions": list.iter().map(|(k, op, v)| {
        if v.is_empty() { json!({"key": k, "operator": op}) } else { json!({"key": k, "operator": op, "values": v}) }
    }).collect::<Vec<_>>()})
}

struct Case {
    name: &'static str,
    incoming: Pod,
    pods: Vec<Pod>,
    nodes: Vec<Node>,
    namespaces: Vec<Namespace>,
    want: Vec<(&'static str, &'static str)>,
}

fn run(cases: Vec<Case>) {
    for c in cases {
        let r = eval(
            &c.nodes,
            &c.namespaces,
            &c.pods,
            &c.incoming,
            &Options::default(),
        );
        let v = verdicts(&r);
        for (n, want) in &c.want {
            assert_eq!(v[*n], *want, "case: {} (node {n})", c.name);
        }
    }
}

const REGION1: &[(&str, &str)] = &[
    ("region", "r1"),
    ("zone", "z11"),
    ("kubernetes.io/hostname", "node1"),
];

#[test]
fn required_affinity_single_node_table() {
    let s1 = &[("service", "securityscan")][..];
    let node1 = || vec![node("node1", REGION1)];
    let cases = vec![
        Case {
            name: "a pod without required pod affinity schedules onto a node with no existing pods",
            incoming: pod("ns", "p", &[], None, json!({})),
            pods: vec![],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", OK)],
        },
        Case {
            name: "affinity In operator matching the existing pod",
            incoming: pod(
                "ns",
                "p",
                s1,
                None,
                affinity(json!([term(
                    sel_in("service", &["securityscan", "value2"]),
                    "region"
                )])),
            ),
            pods: vec![pod("ns", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", OK)],
        },
        Case {
            name: "affinity NotIn operator matching the existing pod",
            incoming: pod(
                "ns",
                "p",
                s1,
                None,
                affinity(json!([term(
                    exprs(&[("service", "NotIn", &["securityscan3", "value3"])]),
                    "region"
                )])),
            ),
            pods: vec![pod("ns", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", OK)],
        },
        Case {
            name: "affinity does not match because of a different namespace",
            incoming: pod(
                "ns",
                "p",
                s1,
                None,
                affinity(
                    json!([{"labelSelector": sel_in("service", &["securityscan", "value2"]), "namespaces": ["DiffNameSpace"], "topologyKey": "region"}]),
                ),
            ),
            pods: vec![pod("ns", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", AFFINITY)],
        },
        Case {
            name: "affinity label selector does not match the existing pod",
            incoming: pod(
                "ns",
                "p",
                s1,
                None,
                affinity(json!([term(
                    sel_in("service", &["antivirusscan", "value2"]),
                    "region"
                )])),
            ),
            pods: vec![pod("ns", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", AFFINITY)],
        },
        Case {
            name: "different operators in multiple required terms all satisfied",
            incoming: pod(
                "ns",
                "p",
                s1,
                None,
                affinity(json!([
                    term(
                        exprs(&[
                            ("service", "Exists", &[]),
                            ("wrongkey", "DoesNotExist", &[])
                        ]),
                        "region"
                    ),
                    term(
                        exprs(&[
                            ("service", "In", &["securityscan"]),
                            ("service", "NotIn", &["WrongValue"])
                        ]),
                        "node"
                    ),
                ])),
            ),
            pods: vec![pod("ns", "e", s1, Some("node1"), json!({}))],
            nodes: vec![node("node1", &[("region", "r1"), ("node", "n1")])],
            namespaces: vec![],
            want: vec![("node1", OK)],
        },
        Case {
            name: "matchExpressions are ANDed: one item not matching fails",
            incoming: pod(
                "ns",
                "p",
                s1,
                None,
                affinity(json!([
                    term(
                        exprs(&[
                            ("service", "Exists", &[]),
                            ("wrongkey", "DoesNotExist", &[])
                        ]),
                        "region"
                    ),
                    term(
                        exprs(&[
                            ("service", "In", &["securityscan2"]),
                            ("service", "NotIn", &["WrongValue"])
                        ]),
                        "region"
                    ),
                ])),
            ),
            pods: vec![pod("ns", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", AFFINITY)],
        },
        Case {
            name: "satisfies both pod affinity and pod anti-affinity",
            incoming: pod(
                "ns",
                "p",
                s1,
                None,
                both(
                    json!([term(
                        sel_in("service", &["securityscan", "value2"]),
                        "region"
                    )]),
                    json!([term(
                        sel_in("service", &["antivirusscan", "value2"]),
                        "node"
                    )]),
                ),
            ),
            pods: vec![pod("ns", "e", s1, Some("node1"), json!({}))],
            nodes: vec![node("node1", &[("region", "r1"), ("node", "n1")])],
            namespaces: vec![],
            want: vec![("node1", OK)],
        },
        Case {
            name: "satisfies affinity, anti-affinity and existing pod's anti-affinity symmetry",
            incoming: pod(
                "ns",
                "p",
                s1,
                None,
                both(
                    json!([term(
                        sel_in("service", &["securityscan", "value2"]),
                        "region"
                    )]),
                    json!([term(
                        sel_in("service", &["antivirusscan", "value2"]),
                        "node"
                    )]),
                ),
            ),
            pods: vec![pod(
                "ns",
                "e",
                s1,
                Some("node1"),
                anti(json!([term(
                    sel_in("service", &["antivirusscan", "value2"]),
                    "node"
                )])),
            )],
            nodes: vec![node("node1", &[("region", "r1"), ("node", "n1")])],
            namespaces: vec![],
            want: vec![("node1", OK)],
        },
        Case {
            name: "satisfies affinity but not anti-affinity",
            incoming: pod(
                "ns",
                "p",
                s1,
                None,
                both(
                    json!([term(
                        sel_in("service", &["securityscan", "value2"]),
                        "region"
                    )]),
                    json!([term(sel_in("service", &["securityscan", "value2"]), "zone")]),
                ),
            ),
            pods: vec![pod("ns", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", ANTI)],
        },
        Case {
            name: "satisfies affinity and anti-affinity but not the existing pod's anti-affinity",
            incoming: pod(
                "ns",
                "p",
                s1,
                None,
                both(
                    json!([term(
                        sel_in("service", &["securityscan", "value2"]),
                        "region"
                    )]),
                    json!([term(
                        sel_in("service", &["antivirusscan", "value2"]),
                        "zone"
                    )]),
                ),
            ),
            pods: vec![pod(
                "ns",
                "e",
                s1,
                Some("node1"),
                anti(json!([term(
                    sel_in("service", &["securityscan", "value2"]),
                    "zone"
                )])),
            )],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", EXISTING_ANTI)],
        },
        Case {
            name: "affinity is checked first: failing affinity hides anti-affinity failures (C.15)",
            incoming: pod(
                "ns",
                "p",
                s1,
                None,
                both(
                    json!([term(sel_in("service", &["nothing"]), "region")]),
                    json!([term(sel_in("service", &["securityscan"]), "zone")]),
                ),
            ),
            pods: vec![pod("ns", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", AFFINITY)],
        },
        Case {
            name: "existing pod's anti-affinity blocks a pod that declares nothing",
            incoming: pod("ns", "p", s1, None, json!({})),
            pods: vec![pod(
                "ns",
                "e",
                &[],
                Some("node1"),
                anti(json!([term(
                    sel_in("service", &["securityscan", "value2"]),
                    "zone"
                )])),
            )],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", EXISTING_ANTI)],
        },
        Case {
            name: "existing pod's anti-affinity not matching the incoming pod lets it schedule",
            incoming: pod("ns", "p", s1, None, json!({})),
            pods: vec![pod(
                "ns",
                "e",
                &[],
                Some("node1"),
                anti(json!([term(sel_in("service", &["antivirusscan"]), "zone")])),
            )],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", OK)],
        },
        Case {
            name: "any single term of an existing pod's anti-affinity blocks",
            incoming: pod("ns", "p", s1, None, json!({})),
            pods: vec![pod(
                "ns",
                "e",
                &[],
                Some("node1"),
                anti(json!([
                    term(sel_in("service", &["antivirusscan"]), "zone"),
                    term(sel_in("service", &["securityscan"]), "region"),
                ])),
            )],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", EXISTING_ANTI)],
        },
        Case {
            name: "incoming and existing pod partially match each other's anti-affinity terms",
            incoming: pod(
                "ns",
                "p",
                &[("foo", "bar")],
                None,
                anti(json!([term(sel_in("service", &["securityscan"]), "zone")])),
            ),
            pods: vec![pod(
                "ns",
                "e",
                &[("service", "antivirus")],
                Some("node1"),
                anti(json!([term(sel_in("foo", &["bar"]), "zone")])),
            )],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", EXISTING_ANTI)],
        },
        Case {
            name: "existing pod's anti-affinity in another namespace does not match (implicit own namespace, C.7)",
            incoming: pod("other", "p", s1, None, json!({})),
            pods: vec![pod(
                "ns",
                "e",
                &[],
                Some("node1"),
                anti(json!([term(sel_in("service", &["securityscan"]), "zone")])),
            )],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", OK)],
        },
        Case {
            name: "existing pod's anti-affinity namespaceSelector uses the incoming pod's namespace labels (C.8)",
            incoming: pod("subteam", "p", s1, None, json!({})),
            pods: vec![pod(
                "ns",
                "e",
                &[],
                Some("node1"),
                anti(
                    json!([{"labelSelector": sel_in("service", &["securityscan"]), "namespaceSelector": {"matchLabels": {"team": "team1"}}, "topologyKey": "zone"}]),
                ),
            )],
            nodes: node1(),
            namespaces: vec![namespace("subteam", &[("team", "team1")])],
            want: vec![("node1", EXISTING_ANTI)],
        },
        Case {
            name: "existing pod's namespaceSelector against an unknown incoming namespace sees empty labels",
            incoming: pod("subteam", "p", s1, None, json!({})),
            pods: vec![pod(
                "ns",
                "e",
                &[],
                Some("node1"),
                anti(
                    json!([{"labelSelector": sel_in("service", &["securityscan"]), "namespaceSelector": {"matchLabels": {"team": "team1"}}, "topologyKey": "zone"}]),
                ),
            )],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", OK)],
        },
        Case {
            name: "affinity with namespaceSelector matching the existing pod's namespace",
            incoming: pod(
                "ns",
                "p",
                s1,
                None,
                affinity(
                    json!([{"labelSelector": sel_in("service", &["securityscan"]), "namespaceSelector": {"matchLabels": {"team": "team1"}}, "topologyKey": "region"}]),
                ),
            ),
            pods: vec![pod("subteam", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![
                namespace("subteam", &[("team", "team1")]),
                namespace("ns", &[]),
            ],
            want: vec![("node1", OK)],
        },
        Case {
            name: "a set namespaceSelector removes the implicit own namespace (C.7)",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                affinity(
                    json!([{"labelSelector": sel_in("service", &["securityscan"]), "namespaceSelector": {"matchLabels": {"team": "team1"}}, "topologyKey": "region"}]),
                ),
            ),
            pods: vec![pod("ns", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![
                namespace("subteam", &[("team", "team1")]),
                namespace("ns", &[]),
            ],
            want: vec![("node1", AFFINITY)],
        },
        Case {
            name: "empty namespaceSelector selects all namespaces",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                anti(
                    json!([{"labelSelector": sel_in("service", &["securityscan"]), "namespaceSelector": {}, "topologyKey": "region"}]),
                ),
            ),
            pods: vec![pod("elsewhere", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", ANTI)],
        },
        Case {
            name: "namespaces list and namespaceSelector are ORed",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                anti(
                    json!([{"labelSelector": sel_in("service", &["securityscan"]), "namespaces": ["listed"], "namespaceSelector": {"matchLabels": {"team": "nobody"}}, "topologyKey": "region"}]),
                ),
            ),
            pods: vec![pod("listed", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![namespace("listed", &[])],
            want: vec![("node1", ANTI)],
        },
        Case {
            name: "null label selector matches no pod",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                anti(json!([{"topologyKey": "region"}])),
            ),
            pods: vec![pod("ns", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", OK)],
        },
        Case {
            name: "empty label selector matches every pod in scope",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                anti(json!([{"labelSelector": {}, "topologyKey": "region"}])),
            ),
            pods: vec![pod("ns", "e", s1, Some("node1"), json!({}))],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", ANTI)],
        },
        Case {
            name: "unparsable incoming selector fails every node (C.16)",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                anti(json!([term(exprs(&[("service", "In", &[])]), "region")])),
            ),
            pods: vec![],
            nodes: node1(),
            namespaces: vec![],
            want: vec![(
                "node1",
                "parsing pod: requiredAntiAffinityTerms: values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
            )],
        },
        Case {
            name: "an existing pod's unparsable anti-affinity list is ignored",
            incoming: pod("ns", "p", s1, None, json!({})),
            pods: vec![pod(
                "ns",
                "e",
                &[],
                Some("node1"),
                anti(json!([
                    term(sel_in("service", &["securityscan"]), "region"),
                    term(exprs(&[("service", "Gt", &["1"])]), "region"),
                ])),
            )],
            nodes: node1(),
            namespaces: vec![],
            want: vec![("node1", OK)],
        },
    ];
    run(cases);
}

#[test]
fn required_affinity_multiple_nodes_table() {
    let foo = &[("foo", "bar")][..];
    let three = || {
        vec![
            node(
                "machine1",
                &[("region", "r1"), ("zone", "z11"), ("hostname", "h1")],
            ),
            node(
                "machine2",
                &[("region", "r1"), ("zone", "z12"), ("hostname", "h2")],
            ),
            node(
                "machine3",
                &[("region", "r2"), ("zone", "z21"), ("hostname", "h3")],
            ),
        ]
    };
    let cases = vec![
        Case {
            name: "all nodes sharing the region of a matching pod pass affinity",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                affinity(json!([term(sel_in("foo", &["bar"]), "region")])),
            ),
            pods: vec![pod("ns", "e", foo, Some("machine1"), json!({}))],
            nodes: three(),
            namespaces: vec![],
            want: vec![("machine1", OK), ("machine2", OK), ("machine3", AFFINITY)],
        },
        Case {
            name: "node A fails node affinity but its matching pod still makes node B (same zone) feasible",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                json!({
                    "nodeSelector": {"hostname": "h2"},
                    "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_in("foo", &["bar"]), "region")]}}
                }),
            ),
            pods: vec![pod("ns", "e", foo, Some("machine1"), json!({}))],
            nodes: three(),
            namespaces: vec![],
            want: vec![
                ("machine1", NODE_AFFINITY),
                ("machine2", OK),
                ("machine3", NODE_AFFINITY),
            ],
        },
        Case {
            name: "first pod of a self-affine collection is not blocked (C.12)",
            incoming: pod(
                "ns",
                "p",
                foo,
                None,
                affinity(json!([term(sel_in("foo", &["bar"]), "zone")])),
            ),
            pods: vec![],
            nodes: three(),
            namespaces: vec![],
            want: vec![("machine1", OK), ("machine2", OK), ("machine3", OK)],
        },
        Case {
            name: "first-pod exception needs the pod to match its own terms",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                affinity(json!([term(sel_in("foo", &["bar"]), "zone")])),
            ),
            pods: vec![],
            nodes: three(),
            namespaces: vec![],
            want: vec![
                ("machine1", AFFINITY),
                ("machine2", AFFINITY),
                ("machine3", AFFINITY),
            ],
        },
        Case {
            name: "first-pod exception still needs every topologyKey on the node",
            incoming: pod(
                "ns",
                "p",
                foo,
                None,
                affinity(json!([term(sel_in("foo", &["bar"]), "rack")])),
            ),
            pods: vec![],
            nodes: vec![node("machine1", &[("rack", "a")]), node("machine2", &[])],
            namespaces: vec![],
            want: vec![("machine1", OK), ("machine2", AFFINITY)],
        },
        Case {
            name: "matching pods on nodes without the key do not count, so the exception applies (C.12)",
            incoming: pod(
                "ns",
                "p",
                foo,
                None,
                affinity(json!([term(sel_in("foo", &["bar"]), "rack")])),
            ),
            pods: vec![pod("ns", "e", foo, Some("machine2"), json!({}))],
            nodes: vec![node("machine1", &[("rack", "a")]), node("machine2", &[])],
            namespaces: vec![],
            want: vec![("machine1", OK), ("machine2", AFFINITY)],
        },
        Case {
            name: "a matching pod elsewhere disables the first-pod exception",
            incoming: pod(
                "ns",
                "p",
                foo,
                None,
                affinity(json!([term(sel_in("foo", &["bar"]), "zone")])),
            ),
            pods: vec![pod("ns", "e", foo, Some("machine3"), json!({}))],
            nodes: three(),
            namespaces: vec![],
            want: vec![
                ("machine1", AFFINITY),
                ("machine2", AFFINITY),
                ("machine3", OK),
            ],
        },
        Case {
            name: "a pod counts only if it matches all affinity terms (C.10)",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                affinity(json!([
                    term(sel_in("foo", &["bar"]), "region"),
                    term(sel_in("tier", &["db"]), "region"),
                ])),
            ),
            pods: vec![
                pod("ns", "e1", foo, Some("machine1"), json!({})),
                pod("ns", "e2", &[("tier", "db")], Some("machine2"), json!({})),
            ],
            nodes: three(),
            namespaces: vec![],
            want: vec![
                ("machine1", AFFINITY),
                ("machine2", AFFINITY),
                ("machine3", AFFINITY),
            ],
        },
        Case {
            name: "anti-affinity rejects every node of the domain holding a matching pod",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                anti(json!([term(sel_in("foo", &["bar"]), "region")])),
            ),
            pods: vec![pod("ns", "e", foo, Some("machine1"), json!({}))],
            nodes: three(),
            namespaces: vec![],
            want: vec![("machine1", ANTI), ("machine2", ANTI), ("machine3", OK)],
        },
        Case {
            name: "anti-affinity matches a pod when any term matches",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                anti(json!([
                    term(sel_in("foo", &["nope"]), "zone"),
                    term(sel_in("foo", &["bar"]), "zone"),
                ])),
            ),
            pods: vec![pod("ns", "e", foo, Some("machine1"), json!({}))],
            nodes: three(),
            namespaces: vec![],
            want: vec![("machine1", ANTI), ("machine2", OK), ("machine3", OK)],
        },
        Case {
            name: "incoming anti-affinity: a node without the topologyKey is never rejected (C.13)",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                anti(json!([term(sel_in("foo", &["bar"]), "rack")])),
            ),
            pods: vec![pod("ns", "e", foo, Some("a"), json!({}))],
            nodes: vec![
                node("a", &[("rack", "r1")]),
                node("b", &[("rack", "r1")]),
                node("c", &[]),
            ],
            namespaces: vec![],
            want: vec![("a", ANTI), ("b", ANTI), ("c", OK)],
        },
        Case {
            name: "existing anti-affinity: topologyKey missing on the existing pod's node never blocks",
            incoming: pod("ns", "p", foo, None, json!({})),
            pods: vec![pod(
                "ns",
                "e",
                &[],
                Some("c"),
                anti(json!([term(sel_in("foo", &["bar"]), "rack")])),
            )],
            nodes: vec![node("a", &[("rack", "r1")]), node("c", &[])],
            namespaces: vec![],
            want: vec![("a", OK), ("c", OK)],
        },
        Case {
            name: "existing anti-affinity blocks every node sharing the domain",
            incoming: pod("ns", "p", foo, None, json!({})),
            pods: vec![pod(
                "ns",
                "e",
                &[],
                Some("machine1"),
                anti(json!([term(sel_in("foo", &["bar"]), "region")])),
            )],
            nodes: three(),
            namespaces: vec![],
            want: vec![
                ("machine1", EXISTING_ANTI),
                ("machine2", EXISTING_ANTI),
                ("machine3", OK),
            ],
        },
        Case {
            name: "pods bound to unknown nodes are ignored (spec 0.1)",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                anti(json!([term(sel_in("foo", &["bar"]), "region")])),
            ),
            pods: vec![pod("ns", "e", foo, Some("ghost"), json!({}))],
            nodes: three(),
            namespaces: vec![],
            want: vec![("machine1", OK), ("machine2", OK), ("machine3", OK)],
        },
        Case {
            name: "affinity: every term's domain must hold a counted pod (region shared, zone not)",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                affinity(json!([
                    term(sel_in("foo", &["bar"]), "region"),
                    term(sel_in("foo", &["bar"]), "zone"),
                ])),
            ),
            pods: vec![pod("ns", "e", foo, Some("machine1"), json!({}))],
            nodes: three(),
            namespaces: vec![],
            want: vec![
                ("machine1", OK),
                ("machine2", AFFINITY),
                ("machine3", AFFINITY),
            ],
        },
        Case {
            name: "affinity: a node lacking one term's key fails even if the other term is satisfied",
            incoming: pod(
                "ns",
                "p",
                &[],
                None,
                affinity(json!([
                    term(sel_in("foo", &["bar"]), "region"),
                    term(sel_in("foo", &["bar"]), "rack"),
                ])),
            ),
            pods: vec![pod("ns", "e", foo, Some("machine1"), json!({}))],
            nodes: three(),
            namespaces: vec![],
            want: vec![
                ("machine1", AFFINITY),
                ("machine2", AFFINITY),
                ("machine3", AFFINITY),
            ],
        },
        Case {
            name: "existing pods on two nodes each violate the incoming pod: only the third node fits",
            incoming: pod("ns", "p", foo, None, json!({})),
            pods: vec![
                pod(
                    "ns",
                    "e1",
                    &[],
                    Some("machine1"),
                    anti(json!([term(sel_in("foo", &["bar"]), "zone")])),
                ),
                pod(
                    "ns",
                    "e2",
                    &[],
                    Some("machine2"),
                    anti(json!([term(sel_in("foo", &["bar"]), "hostname")])),
                ),
            ],
            nodes: three(),
            namespaces: vec![],
            want: vec![
                ("machine1", EXISTING_ANTI),
                ("machine2", EXISTING_ANTI),
                ("machine3", OK),
            ],
        },
        Case {
            name: "matchLabelKeys merge: replicas of another revision do not count (C.9)",
            incoming: pod(
                "ns",
                "p",
                &[("app", "db"), ("pod-template-hash", "v2")],
                None,
                anti(json!([
                    {"labelSelector": sel_in("app", &["db"]), "matchLabelKeys": ["pod-template-hash"], "topologyKey": "hostname"}
                ])),
            ),
            pods: vec![
                pod(
                    "ns",
                    "old",
                    &[("app", "db"), ("pod-template-hash", "v1")],
                    Some("machine1"),
                    json!({}),
                ),
                pod(
                    "ns",
                    "new",
                    &[("app", "db"), ("pod-template-hash", "v2")],
                    Some("machine2"),
                    json!({}),
                ),
            ],
            nodes: three(),
            namespaces: vec![],
            want: vec![("machine1", OK), ("machine2", ANTI), ("machine3", OK)],
        },
        Case {
            name: "mismatchLabelKeys merge: only other tenants repel (C.9)",
            incoming: pod(
                "ns",
                "p",
                &[("tenant", "a")],
                None,
                anti(json!([
                    {"labelSelector": {"matchExpressions": [{"key": "tenant", "operator": "Exists"}]}, "mismatchLabelKeys": ["tenant"], "topologyKey": "hostname"}
                ])),
            ),
            pods: vec![
                pod(
                    "ns",
                    "same",
                    &[("tenant", "a")],
                    Some("machine1"),
                    json!({}),
                ),
                pod(
                    "ns",
                    "other",
                    &[("tenant", "b")],
                    Some("machine2"),
                    json!({}),
                ),
            ],
            nodes: three(),
            namespaces: vec![],
            want: vec![("machine1", OK), ("machine2", ANTI), ("machine3", OK)],
        },
    ];
    run(cases);
}

#[test]
fn topology_spread_do_not_schedule_table() {
    let spread = |max_skew: i32, key: &str, extra: Value| {
        let mut c = json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}});
        if let Value::Object(m) = extra {
            for (k, v) in m {
                c[k] = v;
            }
        }
        json!({"topologySpreadConstraints": [c]})
    };
    let web = &[("app", "web")][..];
    let zones = || {
        vec![
            node("a1", &[("zone", "a")]),
            node("a2", &[("zone", "a")]),
            node("b1", &[("zone", "b")]),
            node("x", &[]),
        ]
    };
    let tainted_zones = || {
        let mut a1 = node("a1", &[("zone", "a")]);
        a1.spec = Some(
            serde_json::from_value(
                json!({"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}),
            )
            .unwrap(),
        );
        vec![a1, node("b1", &[("zone", "b")])]
    };
    let cases = vec![
        Case {
            name: "node without the key is rejected; skew 1 allows the emptier zone only",
            incoming: pod("ns", "p", web, None, spread(1, "zone", json!({}))),
            pods: vec![pod("ns", "e", web, Some("a1"), json!({}))],
            nodes: zones(),
            namespaces: vec![],
            want: vec![
                ("a1", SPREAD),
                ("a2", SPREAD),
                ("b1", OK),
                ("x", SPREAD_LABEL),
            ],
        },
        Case {
            name: "minDomains above the number of domains makes the global minimum 0",
            incoming: pod(
                "ns",
                "p",
                web,
                None,
                spread(1, "zone", json!({"minDomains": 3})),
            ),
            pods: vec![pod("ns", "e", web, Some("b1"), json!({}))],
            nodes: zones(),
            namespaces: vec![],
            want: vec![("a1", OK), ("a2", OK), ("b1", SPREAD)],
        },
        Case {
            name: "pods of other namespaces and non-matching pods do not count",
            incoming: pod("ns", "p", web, None, spread(1, "zone", json!({}))),
            pods: vec![
                pod("other", "e", web, Some("a1"), json!({})),
                pod("ns", "f", &[("app", "db")], Some("a1"), json!({})),
            ],
            nodes: zones(),
            namespaces: vec![],
            want: vec![("a1", OK), ("b1", OK)],
        },
        Case {
            name: "a pod not matching its own selector adds no self count",
            incoming: pod("ns", "p", &[], None, spread(0, "zone", json!({}))),
            pods: vec![],
            nodes: zones(),
            namespaces: vec![],
            want: vec![("a1", OK), ("b1", OK), ("x", SPREAD_LABEL)],
        },
        Case {
            name: "nodeAffinityPolicy Honor: domains outside the pod's node affinity are not eligible",
            incoming: pod("ns", "p", web, None, {
                let mut v = spread(1, "zone", json!({}));
                v["nodeSelector"] = json!({"zone": "a"});
                v
            }),
            pods: vec![pod("ns", "e", web, Some("a1"), json!({}))],
            nodes: zones(),
            namespaces: vec![],
            want: vec![("a1", OK), ("a2", OK), ("b1", NODE_AFFINITY)],
        },
        Case {
            name: "nodeAffinityPolicy Ignore: every domain counts for the minimum",
            incoming: pod("ns", "p", web, None, {
                let mut v = spread(1, "zone", json!({"nodeAffinityPolicy": "Ignore"}));
                v["nodeSelector"] = json!({"zone": "a"});
                v
            }),
            pods: vec![pod("ns", "e", web, Some("a1"), json!({}))],
            nodes: zones(),
            namespaces: vec![],
            want: vec![("a1", SPREAD), ("a2", SPREAD)],
        },
        Case {
            name: "nodeTaintsPolicy Ignore (default): a tainted node's domain counts for the minimum",
            incoming: pod("ns", "p", web, None, spread(1, "zone", json!({}))),
            pods: vec![pod("ns", "e", web, Some("b1"), json!({}))],
            nodes: tainted_zones(),
            namespaces: vec![],
            // TaintToleration rejects a1 before PodTopologySpread runs.
            want: vec![("a1", TAINT), ("b1", SPREAD)],
        },
        Case {
            name: "nodeTaintsPolicy Honor: an untolerated tainted node's domain is not eligible",
            incoming: pod(
                "ns",
                "p",
                web,
                None,
                spread(1, "zone", json!({"nodeTaintsPolicy": "Honor"})),
            ),
            pods: vec![pod("ns", "e", web, Some("b1"), json!({}))],
            nodes: tainted_zones(),
            namespaces: vec![],
            want: vec![("a1", TAINT), ("b1", OK)],
        },
        Case {
            name: "nodeTaintsPolicy Honor with a matching toleration keeps the domain",
            incoming: pod("ns", "p", web, None, {
                let mut v = spread(1, "zone", json!({"nodeTaintsPolicy": "Honor"}));
                v["tolerations"] = json!([{"key": "dedicated", "operator": "Exists"}]);
                v
            }),
            pods: vec![pod("ns", "e", web, Some("b1"), json!({}))],
            nodes: tainted_zones(),
            namespaces: vec![],
            want: vec![("a1", OK), ("b1", SPREAD)],
        },
        Case {
            name: "ScheduleAnyway constraints do not filter",
            incoming: pod(
                "ns",
                "p",
                web,
                None,
                json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}]}),
            ),
            pods: vec![
                pod("ns", "e", web, Some("a1"), json!({})),
                pod("ns", "f", web, Some("a2"), json!({})),
            ],
            nodes: zones(),
            namespaces: vec![],
            want: vec![("a1", OK), ("x", OK)],
        },
        Case {
            name: "spread is checked before inter-pod affinity",
            incoming: pod("ns", "p", web, None, {
                let mut v = spread(1, "zone", json!({}));
                v["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_in("app", &["web"]), "zone")]}});
                v
            }),
            pods: vec![pod("ns", "e", web, Some("a1"), json!({}))],
            nodes: zones(),
            namespaces: vec![],
            want: vec![("a1", SPREAD), ("b1", OK), ("x", SPREAD_LABEL)],
        },
    ];
    run(cases);
}
