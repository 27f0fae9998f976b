//! Per-node data-path concurrency (documented on [`NodeConcurrency`]).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::Node;
use kube::core::{Selector, SelectorExt};
use kube_validation::label_selector_as_selector;

use crate::config::LoadConcurrency;
use crate::finding::Finding;
use crate::validate::validate;

/// Velero's default concurrency (`defaultDataPathConcurrentNum`).
pub const DEFAULT_CONCURRENCY: u64 = 1;

const NEVER_WINS: i64 = i32::MAX as i64;

#[derive(Clone, Debug)]
struct Rule {
    selector: Selector,
    number: u64,
}

/// The compiled `loadConcurrency` section.
///
/// Per-node data-path concurrency (L3.1–L3.3).
///
/// [`NodeConcurrency::compile`] converts every rule once (invalid selectors
/// and numbers `<= 0` are skipped with a finding, numbers `>= 2147483647`
/// can never win) and indexes the rules by one equality requirement each,
/// so that evaluating a node looks only at rules that can match it.
#[derive(Clone, Debug)]
pub struct NodeConcurrency {
    global: u64,
    rules: Vec<Rule>,
    /// Rules (indexes into `rules`) without an equality anchor, by number.
    unanchored: Vec<usize>,
    /// Anchor key -> anchor value -> rules.
    anchored: Vec<(String, HashMap<String, Vec<usize>>)>,
}

impl NodeConcurrency {
    /// Compiles the configuration (`None` = no `loadConcurrency`), returning
    /// the findings about skipped rules and replaced numbers.
    pub fn compile(config: Option<&LoadConcurrency>) -> (Self, Vec<Finding>) {
        let findings = config
            .map(|c| {
                validate(&crate::config::NodeAgentConfig {
                    load_concurrency: Some(c.clone()),
                    ..Default::default()
                })
            })
            .unwrap_or_default();
        let global = config
            .and_then(|c| c.global_config)
            .filter(|g| *g > 0)
            .map_or(DEFAULT_CONCURRENCY, |g| g.unsigned_abs());
        let mut rules = Vec::new();
        let mut unanchored = Vec::new();
        let mut anchored: BTreeMap<String, HashMap<String, Vec<usize>>> = BTreeMap::new();
        for rule in config
            .and_then(|c| c.per_node_config.as_ref())
            .into_iter()
            .flatten()
        {
            let selector_source = rule.node_selector.clone().unwrap_or_default();
            let Ok(selector) = label_selector_as_selector(&selector_source) else {
                continue;
            };
            let Some(number) = rule.number.filter(|n| *n > 0 && *n < NEVER_WINS) else {
                continue;
            };
            let index = rules.len();
            rules.push(Rule {
                selector,
                number: number.unsigned_abs(),
            });
            // One equality-like requirement every matching node must meet.
            let anchor = selector_source
                .match_labels
                .iter()
                .flatten()
                .next()
                .map(|(k, v)| (k.clone(), vec![v.clone()]))
                .or_else(|| {
                    selector_source
                        .match_expressions
                        .iter()
                        .flatten()
                        .find(|e| e.operator == "In")
                        .map(|e| (e.key.clone(), e.values.clone().unwrap_or_default()))
                });
            match anchor {
                Some((key, values)) => {
                    let by_value = anchored.entry(key).or_default();
                    for value in values {
                        let list = by_value.entry(value).or_default();
                        if list.last() != Some(&index) {
                            list.push(index);
                        }
                    }
                }
                None => unanchored.push(index),
            }
        }
        (
            Self {
                global,
                rules,
                unanchored,
                anchored: anchored.into_iter().collect(),
            },
            findings,
        )
    }

    /// The global number (after the `<= 0` → 1 replacement).
    pub fn global(&self) -> u64 {
        self.global
    }

    /// The concurrency of a node with these labels: the smallest number of
    /// the valid rules matching it, else the global number (L3.1, L3.2).
    pub fn for_labels(&self, labels: &BTreeMap<String, String>) -> u64 {
        let mut best: Option<u64> = None;
        let mut consider = |index: usize| {
            let rule = &self.rules[index];
            if best.is_none_or(|b| rule.number < b) && rule.selector.matches(labels) {
                best = Some(rule.number);
            }
        };
        for index in &self.unanchored {
            consider(*index);
        }
        for (key, by_value) in &self.anchored {
            if let Some(candidates) = labels.get(key).and_then(|v| by_value.get(v)) {
                for index in candidates {
                    consider(*index);
                }
            }
        }
        best.unwrap_or(self.global)
    }

    /// The concurrency of one Node (its labels; no labels = none).
    pub fn for_node(&self, node: &Node) -> u64 {
        match &node.metadata.labels {
            Some(labels) => self.for_labels(labels),
            None => self.for_labels(&BTreeMap::new()),
        }
    }

    /// The concurrency of every node, keyed by node name (sorted).
    pub fn for_nodes(&self, nodes: &[Node]) -> BTreeMap<String, u64> {
        nodes
            .iter()
            .map(|node| {
                (
                    node.metadata.name.clone().unwrap_or_default(),
                    self.for_node(node),
                )
            })
            .collect()
    }
}
