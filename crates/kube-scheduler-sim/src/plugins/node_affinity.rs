//! NodeAffinity (`pkg/scheduler/framework/plugins/nodeaffinity`): the
//! PreFilter's node-name shortcut (C.4) and the profile argument
//! `addedAffinity` (C.47), a node affinity the scheduler adds to every pod.
//! The pod's own nodeSelector and node affinity are matched by
//! [`kube_validation::node_selector`] (C.1–C.6), the workspace's one
//! implementation.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{NodeAffinity, NodeSelectorTerm};
use kube_validation::node_selector::{NodeSelectorMatcher, NodeTerm, parse_preferred};

/// PreFilter (C.4, `PreFilter` in `node_affinity.go`): the node names a pod
/// may go to when every required term pins `metadata.name In` (names
/// intersected within a term, united over the terms); `None` when a term
/// pins none (or there are no terms), `Some(empty)` when the pins conflict.
pub(crate) fn name_shortcut(terms: &[NodeSelectorTerm]) -> Option<BTreeSet<String>> {
    if terms.is_empty() {
        return None;
    }
    let mut union = BTreeSet::new();
    for t in terms {
        let mut term_names: Option<BTreeSet<String>> = None;
        for r in t.match_fields.iter().flatten() {
            if r.key == "metadata.name" && r.operator == "In" {
                let s: BTreeSet<String> = r.values.iter().flatten().cloned().collect();
                term_names = Some(match term_names {
                    None => s,
                    Some(prev) => prev.intersection(&s).cloned().collect(),
                });
            }
        }
        union.extend(term_names?);
    }
    Some(union)
}

/// kube-scheduler's reason for a node outside `addedAffinity`'s required
/// terms (`ErrReasonEnforced`).
pub const ENFORCED_REASON: &str = "node(s) didn't match scheduler-enforced node affinity";

/// `addedAffinity`, parsed strictly (`NewNodeSelector`,
/// `NewPreferredSchedulingTerms`): any unparsable term is an error.
#[derive(Debug, Clone, Default)]
pub struct AddedAffinity {
    /// Required terms; `None` when not set.
    pub required: Option<NodeSelectorMatcher>,
    /// Preferred terms with their weights (weight-0 and empty terms left out).
    pub preferred: Option<Vec<(i64, NodeTerm)>>,
}

impl AddedAffinity {
    /// Parse; the error names the field and every term that does not parse.
    pub fn compile(affinity: &NodeAffinity) -> Result<Self, String> {
        let mut out = Self::default();
        if let Some(required) = &affinity.required_during_scheduling_ignored_during_execution {
            let field = "requiredDuringSchedulingIgnoredDuringExecution";
            if required.node_selector_terms.is_empty() {
                return Err(format!(
                    "{field}.nodeSelectorTerms: Required value: must have at least one node selector term"
                ));
            }
            let matcher = NodeSelectorMatcher::parse(required);
            if let Some(e) = matcher.error() {
                return Err(format!("{field}: {e}"));
            }
            out.required = Some(matcher);
        }
        if let Some(preferred) = &affinity.preferred_during_scheduling_ignored_during_execution
            && !preferred.is_empty()
        {
            let terms = parse_preferred(preferred)
                .map_err(|e| format!("preferredDuringSchedulingIgnoredDuringExecution: {e}"))?;
            out.preferred = Some(terms);
        }
        Ok(out)
    }

    /// The Filter's first check: false when required terms are set and no
    /// term matches the node.
    pub fn fits(&self, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.required
            .as_ref()
            .is_none_or(|m| m.matches(node_name, labels))
    }

    /// The preferred terms' contribution to a node's raw score.
    pub fn score(&self, node_name: &str, labels: &BTreeMap<String, String>) -> i64 {
        self.preferred
            .iter()
            .flatten()
            .filter(|(_, t)| t.matches(node_name, labels))
            .map(|(w, _)| *w)
            .sum()
    }
}
