//! Per-node concurrency for 10,000 nodes × 100 rules (target < 20 ms),
//! against a naive baseline that converts every selector for every node as
//! Velero does; and fragment translation throughput.

use std::collections::BTreeMap;
use std::hint::black_box;

use affinity_translate::{
    BackupVolume, LoadConcurrency, NodeAgentConfig, NodeConcurrency, NodeOs, RuledConfig,
    backup_fragment, load_json,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::{Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};
use kube::core::SelectorExt;
use kube_validation::label_selector_as_selector;

const NODES: usize = 10_000;
const RULES: usize = 100;

fn nodes() -> Vec<Node> {
    (0..NODES)
        .map(|i| Node {
            metadata: ObjectMeta {
                name: Some(format!("node-{i}")),
                labels: Some(BTreeMap::from([
                    ("kubernetes.io/hostname".to_owned(), format!("node-{i}")),
                    ("kubernetes.io/os".to_owned(), "linux".to_owned()),
                    (
                        "topology.kubernetes.io/zone".to_owned(),
                        format!("zone-{}", i % 10),
                    ),
                    (
                        "node.example.com/pool".to_owned(),
                        format!("pool-{}", i % 20),
                    ),
                    (
                        "node.kubernetes.io/instance-type".to_owned(),
                        format!("type-{}", i % 5),
                    ),
                ])),
                ..Default::default()
            },
            ..Default::default()
        })
        .collect()
}

fn expression(key: &str, operator: &str, values: &[String]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.to_owned(),
        operator: operator.to_owned(),
        values: (!values.is_empty()).then(|| values.to_vec()),
    }
}

/// 40 hostname rules, 30 zone+pool rules, 20 `In` rules on the pool, 10
/// rules without an equality (NotIn / Exists / DoesNotExist).
fn rules() -> LoadConcurrency {
    let per_node_config = (0..RULES)
        .map(|k| {
            let selector = match k {
                0..40 => LabelSelector {
                    match_labels: Some(BTreeMap::from([(
                        "kubernetes.io/hostname".to_owned(),
                        format!("node-{}", k * 97),
                    )])),
                    match_expressions: None,
                },
                40..70 => LabelSelector {
                    match_labels: Some(BTreeMap::from([
                        (
                            "topology.kubernetes.io/zone".to_owned(),
                            format!("zone-{}", k % 10),
                        ),
                        (
                            "node.example.com/pool".to_owned(),
                            format!("pool-{}", k % 20),
                        ),
                    ])),
                    match_expressions: None,
                },
                70..90 => LabelSelector {
                    match_labels: None,
                    match_expressions: Some(vec![
                        expression(
                            "node.example.com/pool",
                            "In",
                            &[format!("pool-{}", k % 20), format!("pool-{}", (k + 7) % 20)],
                        ),
                        expression(
                            "node.kubernetes.io/instance-type",
                            "NotIn",
                            &["type-0".to_owned()],
                        ),
                    ]),
                },
                _ => LabelSelector {
                    match_labels: None,
                    match_expressions: Some(vec![
                        expression(
                            "node.kubernetes.io/instance-type",
                            "NotIn",
                            &[format!("type-{}", k % 5)],
                        ),
                        expression("topology.kubernetes.io/zone", "Exists", &[]),
                        expression("node.example.com/gpu", "DoesNotExist", &[]),
                    ]),
                },
            };
            RuledConfig {
                node_selector: Some(selector),
                number: Some(2 + (k as i64 % 7)),
            }
        })
        .collect();
    LoadConcurrency {
        global_config: Some(8),
        per_node_config: Some(per_node_config),
        prepare_queue_length: None,
    }
}

/// Velero's algorithm (L3.1 step 5) run for every node: convert every rule
/// with `LabelSelectorAsSelector`, skip invalid ones, keep the minimum.
fn naive(config: &LoadConcurrency, nodes: &[Node]) -> BTreeMap<String, u64> {
    let global = config.global_config.filter(|g| *g > 0).unwrap_or(1);
    let empty = BTreeMap::new();
    nodes
        .iter()
        .map(|node| {
            let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
            let mut best = i64::from(i32::MAX);
            for rule in config.per_node_config.iter().flatten() {
                let Ok(selector) =
                    label_selector_as_selector(&rule.node_selector.clone().unwrap_or_default())
                else {
                    continue;
                };
                let number = rule.number.unwrap_or(0);
                if number <= 0 {
                    continue;
                }
                if selector.matches(labels) && number < best {
                    best = number;
                }
            }
            let n = if best == i64::from(i32::MAX) {
                global
            } else {
                best
            };
            (
                node.metadata.name.clone().unwrap_or_default(),
                n.unsigned_abs(),
            )
        })
        .collect()
}

fn concurrency(c: &mut Criterion) {
    let nodes = nodes();
    let config = rules();
    let (compiled, _) = NodeConcurrency::compile(Some(&config));
    assert_eq!(
        compiled.for_nodes(&nodes),
        naive(&config, &nodes),
        "the two must agree"
    );
    let mut group = c.benchmark_group("concurrency_10000_nodes_x_100_rules");
    group.sample_size(10);
    group.bench_function("compiled_and_indexed", |b| {
        b.iter(|| {
            let (compiled, _) = NodeConcurrency::compile(Some(black_box(&config)));
            compiled.for_nodes(black_box(&nodes))
        });
    });
    group.bench_function("naive_velero_per_node_conversion", |b| {
        b.iter(|| naive(black_box(&config), black_box(&nodes)));
    });
    group.finish();
}

fn translation(c: &mut Criterion) {
    let config: NodeAgentConfig = load_json(
        r#"{"loadAffinity": [
            {"nodeSelector": {"matchLabels": {"pool": "backup", "disk": "ssd"},
                              "matchExpressions": [{"key": "critical", "operator": "DoesNotExist"}]}},
            {"storageClass": "gp3-backup", "nodeSelector": {"matchLabels": {"pool": "fast"}}}
        ],
        "backupPVC": {"gp3": {"storageClass": "gp3-backup",
                              "annotations": {"csi.vsphere.volume/fast-provisioning": "true"}}}}"#,
    )
    .map(|l| l.config)
    .unwrap_or_default();
    let topology = NodeSelector {
        node_selector_terms: (0..3)
            .map(|z| NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: "topology.kubernetes.io/zone".to_owned(),
                    operator: "In".to_owned(),
                    values: Some(vec![format!("zone-{z}")]),
                }]),
                match_fields: None,
            })
            .collect(),
    };
    let attached = vec!["node-1".to_owned(), "node-2".to_owned()];
    let mut group = c.benchmark_group("translation");
    group.throughput(Throughput::Elements(1));
    group.bench_function("backup_fragment_with_topology_and_fast_provisioning", |b| {
        b.iter(|| {
            backup_fragment(
                black_box(&config),
                &BackupVolume {
                    source_storage_class: "gp3",
                    wait_for_first_consumer: true,
                    pv_node_affinity: Some(&topology),
                    attached_nodes: &attached,
                },
                NodeOs::Linux,
            )
        });
    });
    group.bench_function("load_and_validate_full_config", |b| {
        let text = include_str!("../tests/data/full.json");
        b.iter(|| load_json(black_box(text)));
    });
    group.finish();
}

criterion_group!(benches, concurrency, translation);
criterion_main!(benches);
