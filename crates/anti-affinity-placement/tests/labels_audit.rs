//! Snapshots of the host-labels output (plans + audit) and of sanitised values.

use std::collections::BTreeMap;

use anti_affinity_placement::labels::{HostLabelConfig, LabelKey, sanitize};
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;

const KEY: &str = "node.cluster.x-k8s.io/esxi-host";
const ANNOTATION: &str = "policyctl/managed-host-labels";

fn node(name: &str, labels: serde_json::Value, annotations: serde_json::Value) -> Node {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels, "annotations": annotations}}),
    )
    .unwrap()
}

fn pod(
    ns: &str,
    name: &str,
    node: &str,
    owner: Option<&str>,
    spec_extra: serde_json::Value,
) -> Pod {
    let mut spec = json!({"nodeName": node, "containers": [{"name": "c"}]});
    if let (Some(map), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        map.extend(extra.clone());
    }
    let owners = owner.map_or(json!([]), |o| json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": o, "uid": o, "controller": true}]));
    serde_json::from_value(json!({"metadata": {"namespace": ns, "name": name, "ownerReferences": owners}, "spec": spec})).unwrap()
}

fn anti_affinity(app: &str, key: &str) -> serde_json::Value {
    json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}})
}

fn spread(app: &str, key: &str) -> serde_json::Value {
    json!({"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": app}}}]})
}

fn cluster() -> (Vec<Node>, Vec<Pod>, BTreeMap<String, String>) {
    let nodes = vec![
        // Already labelled and recorded: nothing to do.
        node(
            "worker-1",
            json!({KEY: "esx1", "team": "a"}),
            json!({ANNOTATION: KEY}),
        ),
        // Stale after a vMotion (esx9 → esx1); foreign labels untouched.
        node(
            "worker-2",
            json!({KEY: "esx9", "kubernetes.io/hostname": "worker-2"}),
            json!({ANNOTATION: KEY}),
        ),
        // Never labelled; its host is an IPv6 literal CAPV cannot label (B.3).
        node(
            "worker-3",
            json!({"kubernetes.io/hostname": "worker-3"}),
            json!({}),
        ),
        // No host information and no label: reported, left alone.
        node("worker-4", json!({}), json!({})),
    ];
    let pods = vec![
        pod(
            "shop",
            "web-1",
            "worker-1",
            Some("web-7d9"),
            anti_affinity("web", KEY),
        ),
        pod(
            "shop",
            "web-2",
            "worker-2",
            Some("web-7d9"),
            anti_affinity("web", KEY),
        ),
        pod(
            "shop",
            "web-3",
            "worker-3",
            Some("web-7d9"),
            anti_affinity("web", KEY),
        ),
        pod(
            "shop",
            "cache-1",
            "worker-1",
            Some("cache-5c"),
            spread("cache", KEY),
        ),
        pod(
            "shop",
            "cache-2",
            "worker-2",
            Some("cache-5c"),
            spread("cache", KEY),
        ),
        // Spreads over hostnames only: not a host-level group, not reported.
        pod(
            "shop",
            "api-1",
            "worker-1",
            Some("api-1b"),
            anti_affinity("api", "kubernetes.io/hostname"),
        ),
        pod(
            "shop",
            "api-2",
            "worker-2",
            Some("api-1b"),
            anti_affinity("api", "kubernetes.io/hostname"),
        ),
        // Bare pods grouped by selector.
        pod(
            "ops",
            "probe-a",
            "worker-3",
            None,
            anti_affinity("probe", KEY),
        ),
        pod(
            "ops",
            "probe-b",
            "worker-3",
            None,
            anti_affinity("probe", KEY),
        ),
    ];
    let hosts = [
        ("worker-1", "esx1"),
        ("worker-2", "esx1"),
        ("worker-3", "::1"),
    ]
    .into_iter()
    .map(|(n, h)| (n.to_owned(), h.to_owned()))
    .collect();
    (nodes, pods, hosts)
}

#[test]
fn host_labels_report_default_key() {
    let (nodes, pods, hosts) = cluster();
    let report = HostLabelConfig::default().host_labels(&nodes, &pods, &hosts);
    insta::assert_json_snapshot!(report);
}

#[test]
fn host_labels_report_with_node_restriction_key_added() {
    let (nodes, pods, hosts) = cluster();
    let config = HostLabelConfig::default().with_additional_key(
        LabelKey::new(
            "--host-label-key",
            "node-restriction.kubernetes.io/esxi-host",
        )
        .unwrap(),
    );
    let report = config.host_labels(&nodes, &pods, &hosts);
    insta::assert_json_snapshot!(report);
}

#[test]
fn sanitize_outputs() {
    let long = format!(
        "esx-01.rack-12.{}.example.corp",
        "datacenter-west".repeat(4)
    );
    let values: BTreeMap<&str, _> = [
        "esx1.lab.local",
        "10.0.0.1",
        "fe80::1%vmk0",
        "::1",
        "::ffff:10.0.0.1",
        long.as_str(),
        "ESX_01 (spare)",
        "",
    ]
    .into_iter()
    .map(|raw| (raw, sanitize(raw)))
    .collect();
    insta::assert_json_snapshot!(values);
}

#[test]
fn audit_counts_preferred_terms_and_skips_finished_and_unbound_pods() {
    let nodes = vec![
        node("w1", json!({KEY: "esx1"}), json!({})),
        node("w2", json!({KEY: "esx1"}), json!({})),
    ];
    let preferred = json!({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "q"}}, "topologyKey": KEY}}]}}});
    let mut finished = pod("ns", "q-3", "w2", Some("q-rs"), preferred.clone());
    finished.status = Some(serde_json::from_value(json!({"phase": "Succeeded"})).unwrap());
    let mut unbound = pod("ns", "q-4", "w2", Some("q-rs"), preferred.clone());
    unbound.spec.as_mut().unwrap().node_name = None;
    let pods = vec![
        pod("ns", "q-1", "w1", Some("q-rs"), preferred.clone()),
        pod("ns", "q-2", "w2", Some("q-rs"), preferred.clone()),
        finished,
        unbound,
        // Another owner on the same host is another group.
        pod("ns", "r-1", "w1", Some("r-rs"), preferred),
    ];
    // No host information: the audit falls back to the Node labels.
    let report = HostLabelConfig::default().host_labels(&nodes, &pods, &BTreeMap::new());
    assert!(report.nodes.is_empty());
    assert!(report.audit.unlabelled_nodes.is_empty());
    assert_eq!(report.audit.shared_hosts.len(), 1);
    assert_eq!(report.audit.shared_hosts[0].host, "esx1");
    assert_eq!(
        report.audit.shared_hosts[0].pods,
        vec!["ns/q-1".to_owned(), "ns/q-2".to_owned()]
    );
}

#[test]
fn nodes_with_empty_host_names_are_left_alone() {
    let nodes = vec![node("w1", json!({}), json!({}))];
    let hosts: BTreeMap<String, String> = [("w1".to_owned(), String::new())].into_iter().collect();
    let report = HostLabelConfig::default().host_labels(&nodes, &[], &hosts);
    assert!(report.nodes.is_empty());
    assert_eq!(report.audit.unlabelled_nodes, vec!["w1".to_owned()]);
}
