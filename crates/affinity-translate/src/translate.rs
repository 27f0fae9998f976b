//! Load-affinity selection and translation (documented on [`to_affinity`]).

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::config::LoadAffinity;

/// Selects the load-affinity entry for a storage class (A2.1–A2.5): the
/// first entry whose `storageClass` equals `storage_class` exactly, else the
/// first global entry (`storageClass` absent or `""`), else none. Entries
/// are never OR-ed. Returns the entry's index in the list with it.
///
/// `null` entries are skipped (Velero panics on them, A2.6; reported by
/// `validate`).
pub fn select_load_affinity<'a>(
    entries: &'a [Option<LoadAffinity>],
    storage_class: &str,
) -> Option<(usize, &'a LoadAffinity)> {
    let present = || {
        entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|e| (i, e)))
    };
    present()
        .find(|(_, e)| e.storage_class() == storage_class)
        .or_else(|| present().find(|(_, e)| e.storage_class().is_empty()))
}

/// The node selector requirements a label selector stands for (A2.7,
/// A2.8): one `In [value]` per `matchLabels` entry in key order (Velero:
/// random order, W2.3), then every `matchExpressions` entry verbatim
/// (operator and values copied unchecked, `validate` reports bad ones).
pub fn selector_requirements(selector: &LabelSelector) -> Vec<NodeSelectorRequirement> {
    let labels =
        selector
            .match_labels
            .iter()
            .flatten()
            .map(|(key, value)| NodeSelectorRequirement {
                key: key.clone(),
                operator: "In".to_owned(),
                values: Some(vec![value.clone()]),
            });
    let expressions =
        selector
            .match_expressions
            .iter()
            .flatten()
            .map(|e| NodeSelectorRequirement {
                key: e.key.clone(),
                operator: e.operator.clone(),
                values: e.values.clone(),
            });
    labels.chain(expressions).collect()
}

/// Builds the data-mover pod affinity from the requirement list and the
/// volume topology (`ToSystemAffinity`, A2.9–A2.12):
/// - with a topology, every topology term (including its `matchFields`) gets
///   all requirements appended after its own expressions; zero terms give
///   an affinity with no terms;
/// - without a topology, one term with the requirements, or `None` if there
///   are none.
///
/// Only required node affinity is produced.
///
/// Load-affinity selection (A2.1–A2.5) and translation of a label selector
/// to node affinity (A2.7–A2.12). Matching node affinity against nodes is
/// `kube_validation::node_selector`'s.
pub fn to_affinity(
    requirements: &[NodeSelectorRequirement],
    volume_topology: Option<&NodeSelector>,
) -> Option<Affinity> {
    let terms = match volume_topology {
        Some(topology) => topology
            .node_selector_terms
            .iter()
            .map(|term| {
                let mut expressions = term.match_expressions.clone().unwrap_or_default();
                expressions.extend_from_slice(requirements);
                NodeSelectorTerm {
                    match_expressions: (!expressions.is_empty()).then_some(expressions),
                    match_fields: term.match_fields.clone(),
                }
            })
            .collect(),
        None if requirements.is_empty() => return None,
        None => vec![NodeSelectorTerm {
            match_expressions: Some(requirements.to_vec()),
            match_fields: None,
        }],
    };
    Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: terms,
            }),
            preferred_during_scheduling_ignored_during_execution: None,
        }),
        pod_affinity: None,
        pod_anti_affinity: None,
    })
}

/// Renders a requirement for humans: `key Op [v1, v2]`.
pub fn render_requirement(requirement: &NodeSelectorRequirement) -> String {
    let values = requirement.values.as_deref().unwrap_or_default();
    if values.is_empty() {
        format!("{} {}", requirement.key, requirement.operator)
    } else {
        format!(
            "{} {} [{}]",
            requirement.key,
            requirement.operator,
            values.join(", ")
        )
    }
}
