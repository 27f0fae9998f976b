//! Properties of the score plugins (C.41–C.47). Every case also runs the
//! brute-force reference ([`support::eval`]), which must agree with the
//! indexed evaluator on every raw and normalised score and total.

mod oracle;
mod support;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube_scheduler_sim::{KubernetesVersion, Options, SCORE_WEIGHTS};
use proptest::prelude::*;
use serde_json::{Value, json};
use support::*;

const HOST: &str = "kubernetes.io/hostname";

fn node_with(
    name: &str,
    cpu_m: u32,
    mem_mi: u32,
    prefer_taints: usize,
    images: &[(String, u32)],
) -> Node {
    let taints: Vec<Value> = (0..prefer_taints)
        .map(|i| json!({"key": format!("t{i}"), "effect": "PreferNoSchedule"}))
        .collect();
    let images: Vec<Value> = images
        .iter()
        .map(|(n, mib)| json!({"names": [n], "sizeBytes": i64::from(*mib) * 1024 * 1024}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {HOST: name}},
        "spec": {"taints": taints},
        "status": {"allocatable": {"cpu": format!("{cpu_m}m"), "memory": format!("{mem_mi}Mi"), "pods": "110"},
                   "images": images}
    }))
    .unwrap()
}

fn requesting(
    name: &str,
    node: Option<&str>,
    cpu_m: u32,
    mem_mi: u32,
    labels: &[(&str, &str)],
    spec: Value,
) -> Pod {
    let mut p = pod("default", name, labels, node, spec);
    if let Some(s) = p.spec.as_mut() {
        s.containers = vec![serde_json::from_value(json!({
            "name": "c", "image": "app:1",
            "resources": {"requests": {"cpu": format!("{cpu_m}m"), "memory": format!("{mem_mi}Mi")}}
        }))
        .unwrap()];
    }
    p
}

fn all_nodes() -> Options {
    Options {
        score_all_nodes: true,
        ..Options::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// TaintToleration: the raw score is the number of intolerable
    /// PreferNoSchedule taints, and a node with none scores 100.
    #[test]
    fn taint_raw_score_counts_intolerable_prefer_no_schedule_taints(counts in prop::collection::vec(0usize..4, 2..5)) {
        let nodes: Vec<Node> = counts.iter().enumerate().map(|(i, c)| node_with(&format!("n{i}"), 1000, 1024, *c, &[])).collect();
        let r = eval(&nodes, &[], &[], &pod("default", "p", &[], None, Value::Null), &all_nodes());
        for (i, c) in counts.iter().enumerate() {
            let n = format!("n{i}");
            prop_assert_eq!(r.scores.taint_toleration.raw[&n], *c as i64);
            if *c == 0 {
                prop_assert_eq!(r.scores.taint_toleration.normalized[&n], 100);
            }
        }
    }

    /// NodeResourcesFit LeastAllocated: binding one more pod to a node
    /// never raises its score.
    #[test]
    fn least_allocated_never_rises_when_a_pod_is_added(cpu in 100u32..4000, mem in 100u32..4000, used in 0u32..2000, extra in 0u32..2000) {
        let nodes = vec![node_with("a", cpu, mem, 0, &[]), node_with("b", cpu, mem, 0, &[])];
        let p = requesting("p", None, 50, 64, &[], Value::Null);
        let before = vec![requesting("e1", Some("a"), used, used, &[], Value::Null)];
        let mut after = before.clone();
        after.push(requesting("e2", Some("a"), extra, extra, &[], Value::Null));
        let r1 = eval(&nodes, &[], &before, &p, &all_nodes());
        let r2 = eval(&nodes, &[], &after, &p, &all_nodes());
        prop_assert!(r2.scores.node_resources_fit.raw["a"] <= r1.scores.node_resources_fit.raw["a"]);
        prop_assert!((0..=100).contains(&r1.scores.node_resources_fit.raw["a"]));
    }

    /// NodeResourcesBalancedAllocation on an empty node: a pod that uses
    /// cpu and memory in the node's proportion scores the best balance
    /// (100) up to 1.35 and "no change" (75) from 1.36, when the score is
    /// the change of the balance; any pod scores within 0–100 up to 1.35
    /// and within 50–100 from 1.36.
    #[test]
    fn balanced_allocation_rewards_equal_fractions_in_every_release(
        units in 1u32..8,
        scale in 1u32..4,
        version in 0..KubernetesVersion::ALL.len(),
    ) {
        let version = KubernetesVersion::ALL[version];
        let nodes = vec![node_with("a", 1000 * scale, 1000 * scale, 0, &[]), node_with("b", 1000, 4000, 0, &[])];
        let p = requesting("p", None, 100 * units, 100 * units, &[], Value::Null);
        let options = Options { kubernetes_version: version, ..all_nodes() };
        let r = eval(&nodes, &[], &[], &p, &options);
        let (balanced, range) = if version >= KubernetesVersion::V1_36 { (75, 50..=100) } else { (100, 0..=100) };
        prop_assert_eq!(r.scores.node_resources_balanced_allocation.raw["a"], balanced);
        prop_assert!(range.contains(&r.scores.node_resources_balanced_allocation.raw["b"]));
        prop_assert!(r.scores.node_resources_balanced_allocation.raw["b"] <= balanced);
    }

    /// ImageLocality: within 0–100, and a node holding the pod's image never
    /// scores less than one that does not.
    #[test]
    fn image_locality_favours_nodes_holding_the_image(size in 1u32..3000, holders in 1usize..4) {
        let nodes: Vec<Node> = (0..4).map(|i| {
            let images = if i < holders { vec![("app:1".to_owned(), size)] } else { vec![] };
            node_with(&format!("n{i}"), 1000, 1024, 0, &images)
        }).collect();
        let p = requesting("p", None, 10, 10, &[], Value::Null);
        let r = eval(&nodes, &[], &[], &p, &all_nodes());
        let s = &r.scores.image_locality.raw;
        prop_assert!(s.values().all(|v| (0..=100).contains(v)));
        prop_assert!(s["n0"] >= s["n3"]);
    }

    /// PodTopologySpread: with one hostname ScheduleAnyway constraint, a
    /// node with fewer matching pods never scores lower.
    #[test]
    fn spread_score_never_prefers_the_fuller_node(counts in prop::collection::vec(0usize..4, 2..5), skew in 1i32..4) {
        let nodes: Vec<Node> = (0..counts.len()).map(|i| node_with(&format!("n{i}"), 4000, 4096, 0, &[])).collect();
        let mut pods = Vec::new();
        for (i, c) in counts.iter().enumerate() {
            for j in 0..*c {
                pods.push(pod("default", &format!("e{i}-{j}"), &[("app", "web")], Some(&format!("n{i}")), Value::Null));
            }
        }
        let spec = json!({"topologySpreadConstraints": [{"maxSkew": skew, "topologyKey": HOST,
            "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}]});
        let p = pod("default", "p", &[("app", "web")], None, spec);
        let r = eval(&nodes, &[], &pods, &p, &Options::default());
        let s = &r.scores.pod_topology_spread.normalized;
        for (i, ci) in counts.iter().enumerate() {
            for (j, cj) in counts.iter().enumerate() {
                if ci < cj {
                    let (a, b) = (format!("n{i}"), format!("n{j}"));
                    prop_assert!(s[&a] >= s[&b], "{} {}", a, b);
                }
            }
        }
    }

    /// Selection: the total is the weighted sum of the normalised scores,
    /// and the selected node has the highest total, ties to the first name.
    #[test]
    fn selected_node_has_the_highest_weighted_total(counts in prop::collection::vec(0usize..3, 2..5), taints in prop::collection::vec(0usize..2, 4)) {
        let nodes: Vec<Node> = (0..counts.len()).map(|i| node_with(&format!("n{i}"), 2000, 2048, taints[i], &[])).collect();
        let mut pods = Vec::new();
        for (i, c) in counts.iter().enumerate() {
            for j in 0..*c {
                pods.push(requesting(&format!("e{i}-{j}"), Some(&format!("n{i}")), 100, 100, &[], Value::Null));
            }
        }
        let r = eval(&nodes, &[], &pods, &requesting("p", None, 100, 100, &[], Value::Null), &Options::default());
        for (node, total) in &r.totals {
            let want: i64 = SCORE_WEIGHTS.iter().map(|(pl, w)| w * r.scores.get(*pl).unwrap().normalized.get(node).copied().unwrap_or(0)).sum();
            prop_assert_eq!(*total, want);
        }
        let best = r.totals.values().copied().max().unwrap();
        let first = r.totals.iter().find(|(_, t)| **t == best).map(|(n, _)| n.clone());
        prop_assert_eq!(r.selected, first);
    }
}
