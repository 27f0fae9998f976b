//! Properties of selection, translation, concurrency, diagnosis and loading.
//! Oracles are independent, straightforward implementations.

use std::collections::{BTreeMap, BTreeSet};

use affinity_translate::{
    BackupVolume, LoadAffinity, LoadConcurrency, NodeAgentConfig, NodeConcurrency, NodeOs,
    RuledConfig, backup_fragment, diagnose, load_json, load_json_bytes, select_load_affinity,
    selector_requirements, to_affinity,
};
use k8s_openapi::api::core::v1::{Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};
use kube::core::SelectorExt;
use kube_validation::label_selector_as_selector;
use proptest::prelude::*;

const KEYS: &[&str] = &["a", "b", "example.com/c", "zone"];
const VALUES: &[&str] = &["x", "y", "z"];

fn key() -> impl Strategy<Value = String> {
    proptest::sample::select(KEYS).prop_map(str::to_owned)
}

fn value() -> impl Strategy<Value = String> {
    proptest::sample::select(VALUES).prop_map(str::to_owned)
}

fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map(key(), value(), 0..=4)
}

fn valid_requirement() -> impl Strategy<Value = LabelSelectorRequirement> {
    (
        key(),
        prop_oneof![
            Just("In"),
            Just("NotIn"),
            Just("Exists"),
            Just("DoesNotExist")
        ],
        proptest::collection::vec(value(), 1..=2),
    )
        .prop_map(|(key, operator, values)| LabelSelectorRequirement {
            key,
            operator: operator.to_owned(),
            values: matches!(operator, "In" | "NotIn").then_some(values),
        })
}

fn valid_selector() -> impl Strategy<Value = LabelSelector> {
    (
        proptest::option::of(proptest::collection::btree_map(key(), value(), 0..=2)),
        proptest::option::of(proptest::collection::vec(valid_requirement(), 0..=3)),
    )
        .prop_map(|(match_labels, match_expressions)| LabelSelector {
            match_labels,
            match_expressions,
        })
}

/// Like `valid_selector`, but sometimes with an operator Velero rejects.
fn any_selector() -> impl Strategy<Value = LabelSelector> {
    prop_oneof![
        4 => valid_selector(),
        1 => (key(), prop_oneof![Just("in"), Just("Gt"), Just("In")]).prop_map(|(key, operator)| {
            LabelSelector {
                match_labels: None,
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key,
                    operator: operator.to_owned(),
                    values: None,
                }]),
            }
        }),
    ]
}

/// A topology term: one or more In/NotIn requirements.
/// `(key, is In (else NotIn), values)`.
type TopologyRequirement = (String, bool, Vec<String>);

fn topology() -> impl Strategy<Value = Option<Vec<Vec<TopologyRequirement>>>> {
    proptest::option::of(proptest::collection::vec(
        proptest::collection::vec(
            (
                key(),
                any::<bool>(),
                proptest::collection::vec(value(), 1..=2),
            ),
            1..=2,
        ),
        0..=3,
    ))
}

fn to_node_selector(terms: &[Vec<TopologyRequirement>]) -> NodeSelector {
    NodeSelector {
        node_selector_terms: terms
            .iter()
            .map(|term| NodeSelectorTerm {
                match_expressions: Some(
                    term.iter()
                        .map(|(key, in_, values)| NodeSelectorRequirement {
                            key: key.clone(),
                            operator: if *in_ { "In" } else { "NotIn" }.to_owned(),
                            values: Some(values.clone()),
                        })
                        .collect(),
                ),
                match_fields: None,
            })
            .collect(),
    }
}

/// Oracle for one topology term.
fn topology_term_holds(
    term: &[(String, bool, Vec<String>)],
    labels: &BTreeMap<String, String>,
) -> bool {
    term.iter().all(|(key, in_, values)| {
        let listed = labels.get(key).is_some_and(|v| values.contains(v));
        if *in_ { listed } else { !listed }
    })
}

fn node(name: &str, labels: BTreeMap<String, String>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(labels),
            ..Default::default()
        },
        ..Default::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn translated_affinity_matches_a_node_iff_the_selector_and_some_topology_term_match(
        selector in valid_selector(),
        topology in topology(),
        labels in labels(),
    ) {
        let requirements = selector_requirements(&selector);
        let node_selector = topology.as_deref().map(to_node_selector);
        let affinity = to_affinity(&requirements, node_selector.as_ref());
        let generated = matches_required_node_affinity(affinity.as_ref(), "node", &labels);

        let oracle_selector = label_selector_as_selector(&selector).unwrap().matches(&labels);
        let oracle_topology = topology
            .as_ref()
            .is_none_or(|terms| terms.iter().any(|t| topology_term_holds(t, &labels)));
        prop_assert_eq!(generated, oracle_selector && oracle_topology);
    }

    #[test]
    fn selection_returns_the_first_exact_storage_class_match_else_the_first_global_entry(
        entries in proptest::collection::vec(
            proptest::option::weighted(0.9, proptest::option::of(proptest::sample::select(vec!["", "a", "b"]))),
            0..6,
        ),
        wanted in proptest::sample::select(vec!["", "a", "b", "c"]),
    ) {
        let entries: Vec<Option<LoadAffinity>> = entries
            .into_iter()
            .map(|e| e.map(|class| LoadAffinity {
                node_selector: None,
                storage_class: class.map(str::to_owned),
            }))
            .collect();
        let mut expected = None;
        for (i, entry) in entries.iter().enumerate() {
            if let Some(entry) = entry
                && entry.storage_class.clone().unwrap_or_default() == wanted
            {
                expected = Some(i);
                break;
            }
        }
        if expected.is_none() {
            for (i, entry) in entries.iter().enumerate() {
                if let Some(entry) = entry
                    && entry.storage_class.clone().unwrap_or_default().is_empty()
                {
                    expected = Some(i);
                    break;
                }
            }
        }
        prop_assert_eq!(select_load_affinity(&entries, wanted).map(|(i, _)| i), expected);
    }

    #[test]
    fn per_node_concurrency_is_the_minimum_over_matching_valid_rules_else_the_global_number(
        global in proptest::option::of(-2i64..5),
        rules in proptest::collection::vec(
            (proptest::option::of(any_selector()), proptest::option::of(prop_oneof![-2i64..6, Just(2147483647i64), Just(i64::MAX)])),
            0..6,
        ),
        nodes in proptest::collection::vec(labels(), 1..5),
    ) {
        let config = LoadConcurrency {
            global_config: global,
            per_node_config: Some(rules.iter().map(|(s, n)| RuledConfig { node_selector: s.clone(), number: *n }).collect()),
            prepare_queue_length: None,
        };
        let (compiled, _) = NodeConcurrency::compile(Some(&config));
        for labels in &nodes {
            let global = global.filter(|g| *g > 0).unwrap_or(1);
            let mut best: Option<i64> = None;
            for (selector, number) in &rules {
                let Ok(selector) = label_selector_as_selector(&selector.clone().unwrap_or_default()) else { continue };
                let Some(number) = number.filter(|n| *n > 0) else { continue };
                if number >= 2147483647 { continue; }
                if selector.matches(labels) {
                    best = Some(best.map_or(number, |b| b.min(number)));
                }
            }
            prop_assert_eq!(compiled.for_labels(labels), best.unwrap_or(global) as u64);
        }
    }

    #[test]
    fn a_node_has_no_diagnosed_problem_iff_the_fragment_admits_it(
        selector in valid_selector(),
        topology in topology(),
        labels in labels(),
        windows in any::<bool>(),
        attached in proptest::collection::vec(proptest::sample::select(vec!["n1", "n2"]).prop_map(str::to_owned), 0..2),
        with_os_label in any::<bool>(),
    ) {
        let mut labels = labels;
        labels.insert("kubernetes.io/hostname".to_owned(), "n1".to_owned());
        if with_os_label {
            labels.insert("kubernetes.io/os".to_owned(), if windows { "windows" } else { "linux" }.to_owned());
        }
        let config = NodeAgentConfig {
            load_affinity: Some(vec![Some(LoadAffinity { node_selector: Some(selector), storage_class: None })]),
            backup_pvc: Some(BTreeMap::from([("sc".to_owned(), affinity_translate::BackupPvcConfig {
                annotations: Some(BTreeMap::from([("csi.vsphere.volume/fast-provisioning".to_owned(), "true".to_owned())])),
                ..Default::default()
            })])),
            ..Default::default()
        };
        let node_selector = topology.as_deref().map(to_node_selector);
        let fragment = backup_fragment(
            &config,
            &BackupVolume {
                source_storage_class: "sc",
                wait_for_first_consumer: true,
                pv_node_affinity: node_selector.as_ref(),
                attached_nodes: &attached,
            },
            if windows { NodeOs::Windows } else { NodeOs::Linux },
        );
        let n = node("n1", labels.clone());
        let diagnosis = diagnose(&fragment, &[n], &BTreeSet::from(["n1".to_owned()]));
        prop_assert_eq!(
            diagnosis.nodes[0].problems.is_empty(),
            matches_required_node_affinity(fragment.affinity.as_ref(), "n1", &labels),
            "{}", diagnosis
        );
    }

    #[test]
    fn serialised_configs_load_back_unchanged_without_key_warnings(
        global in proptest::option::of(-3i64..10),
        rules in proptest::option::of(proptest::collection::vec(
            (proptest::option::of(valid_selector()), proptest::option::of(-1i64..5)), 0..3)),
        affinity in proptest::option::of(proptest::collection::vec(
            proptest::option::weighted(0.9, (proptest::option::of(valid_selector()),
                proptest::option::of(proptest::sample::select(vec!["", "gp3", "other"])))), 0..4)),
        backup in proptest::option::of(proptest::collection::btree_map(
            proptest::sample::select(vec!["gp3", "standard"]).prop_map(str::to_owned),
            (proptest::option::of(proptest::sample::select(vec!["", "gp3-backup"])),
             proptest::option::of(any::<bool>()), proptest::option::of(any::<bool>()),
             proptest::option::of(proptest::collection::btree_map(key(), value(), 0..2))),
            0..3)),
        ignore_delay_binding in proptest::option::of(any::<bool>()),
        threshold in proptest::option::of(any::<i64>()),
        labels in proptest::option::of(labels()),
    ) {
        let config = NodeAgentConfig {
            load_concurrency: Some(LoadConcurrency {
                global_config: global,
                per_node_config: rules.map(|rules| rules.into_iter()
                    .map(|(node_selector, number)| RuledConfig { node_selector, number }).collect()),
                prepare_queue_length: global.map(|g| g * 2),
            }),
            load_affinity: affinity.map(|entries| entries.into_iter().map(|e| e.map(|(node_selector, class)| {
                LoadAffinity { node_selector, storage_class: class.map(str::to_owned) }
            })).collect()),
            backup_pvc: backup.map(|m| m.into_iter().map(|(k, (storage_class, read_only, spc_no_relabeling, annotations))| {
                (k, affinity_translate::BackupPvcConfig {
                    storage_class: storage_class.map(str::to_owned), read_only, spc_no_relabeling, annotations,
                    ..Default::default()
                })
            }).collect()),
            restore_pvc: ignore_delay_binding.map(|i| affinity_translate::RestorePvcConfig { ignore_delay_binding: Some(i), ..Default::default() }),
            cache_pvc: threshold.map(|t| affinity_translate::CachePvcConfig {
                storage_class: Some("gp3".to_owned()), resident_threshold_in_mb: Some(t),
            }),
            pod_labels: labels.clone(),
            pod_annotations: labels,
            ..Default::default()
        };
        let text = serde_json::to_string_pretty(&config).unwrap();
        let loaded = load_json(&text).unwrap();
        prop_assert_eq!(&loaded.config, &config);
        prop_assert!(loaded.findings.iter().all(|f| !matches!(
            f.kind,
            affinity_translate::FindingKind::UnknownKey | affinity_translate::FindingKind::KeyCase
        )), "{:#?}", loaded.findings);
    }

    #[test]
    fn loading_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = load_json_bytes(&bytes);
    }

    #[test]
    fn loading_never_panics_on_json_like_text(
        tokens in proptest::collection::vec(proptest::sample::select(vec![
            "{", "}", "[", "]", ",", ":", "null", "true", "1", "-1", "1.5", "1e3", "99999999999999999999",
            "\"loadAffinity\"", "\"loadConcurrency\"", "\"perNodeConfig\"", "\"nodeSelector\"", "\"matchLabels\"",
            "\"matchExpressions\"", "\"key\"", "\"operator\"", "\"values\"", "\"number\"", "\"globalConfig\"",
            "\"backupPVC\"", "\"annotations\"", "\"podResources\"", "\"cpuRequest\"", "\"LOADAFFINITY\"", "\"x\"",
        ]), 0..40),
    ) {
        let text = tokens.concat();
        if let Ok(loaded) = load_json(&text) {
            // What loads also serialises and loads back to the same value.
            let again = load_json(&serde_json::to_string(&loaded.config).unwrap()).unwrap();
            prop_assert_eq!(again.config, loaded.config);
        }
    }
}

/// Whether an affinity's required node affinity admits a node (none: every
/// node), by the workspace's node selector matching (`kube-validation`).
fn matches_required_node_affinity(
    affinity: Option<&k8s_openapi::api::core::v1::Affinity>,
    node_name: &str,
    labels: &std::collections::BTreeMap<String, String>,
) -> bool {
    affinity
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .is_none_or(|s| kube_validation::node_selector::selector_matches(s, node_name, labels))
}
