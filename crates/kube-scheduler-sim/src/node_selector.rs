//! Node selector terms as component-helpers' `nodeaffinity` package parses
//! and matches them: `nodeSelector`, required and preferred node affinity
//! (C.1–C.5), with its lazy parse errors (C.3).
//!
//! This is the one implementation of node selector matching in the
//! workspace: the NodeAffinity and PodTopologySpread plugins use it, and so
//! does `affinity-translate`'s data-mover diagnosis. Requirements are parsed
//! by [`kube_validation::node_selector_requirement`] (apimachinery's
//! `labels.NewRequirement`, with its messages).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm,
};
use kube_validation::{
    FieldRequirement, ParseError, Requirement, node_selector_field_requirement,
    node_selector_requirement,
};

/// Whether one `matchExpressions` requirement holds for a node's labels;
/// `None` if kube-scheduler cannot parse it (the term holding it then
/// matches no node).
pub fn requirement_holds(
    requirement: &NodeSelectorRequirement,
    labels: &BTreeMap<String, String>,
) -> Option<bool> {
    node_selector_requirement("", requirement)
        .ok()
        .map(|r| r.matches(labels))
}

/// Whether one `matchFields` requirement holds for a node name; `None` if it
/// cannot be parsed. Only `metadata.name` exists as a field; any other key
/// reads as `""`.
pub fn field_requirement_holds(
    requirement: &NodeSelectorRequirement,
    node_name: &str,
) -> Option<bool> {
    node_selector_field_requirement("", requirement)
        .ok()
        .map(|r| r.matches(&node_fields(node_name)))
}

/// component-helpers' `extractNodeFields`: `metadata.name` when the node has
/// a name.
fn node_fields(node_name: &str) -> BTreeMap<&str, &str> {
    let mut fields = BTreeMap::new();
    if !node_name.is_empty() {
        fields.insert("metadata.name", node_name);
    }
    fields
}

/// A parsed node selector term. A term whose requirements do not parse
/// keeps the error and matches no node (C.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeTerm {
    labels: Option<Vec<Requirement>>,
    fields: Option<Vec<FieldRequirement>>,
    error: Option<ParseError>,
}

impl NodeTerm {
    /// Parse a term; `path` prefixes error paths (e.g. `[0]`). `None` for an
    /// empty term (neither expressions nor fields), which component-helpers
    /// skips: it matches nothing (C.1).
    pub fn parse(term: &NodeSelectorTerm, path: &str) -> Option<Self> {
        let exprs = term.match_expressions.as_deref().unwrap_or_default();
        let fields = term.match_fields.as_deref().unwrap_or_default();
        if exprs.is_empty() && fields.is_empty() {
            return None;
        }
        let mut errors = Vec::new();
        let mut out = NodeTerm {
            labels: None,
            fields: None,
            error: None,
        };
        let prefix = |what: &str| {
            if path.is_empty() {
                what.to_owned()
            } else {
                format!("{path}.{what}")
            }
        };
        if !exprs.is_empty() {
            let base = prefix("matchExpressions");
            let mut parsed = Vec::with_capacity(exprs.len());
            for (i, r) in exprs.iter().enumerate() {
                match node_selector_requirement(&format!("{base}[{i}]"), r) {
                    Ok(r) => parsed.push(r),
                    Err(e) => errors.push(e),
                }
            }
            out.labels = Some(parsed);
        }
        if !fields.is_empty() {
            let base = prefix("matchFields");
            let mut parsed = Vec::with_capacity(fields.len());
            for (i, r) in fields.iter().enumerate() {
                match node_selector_field_requirement(&format!("{base}[{i}]"), r) {
                    Ok(r) => parsed.push(r),
                    Err(e) => errors.push(e),
                }
            }
            out.fields = Some(parsed);
        }
        if !errors.is_empty() {
            out.error = Some(ParseError::flatten(errors));
        }
        Some(out)
    }

    /// The parse error, if any.
    pub fn error(&self) -> Option<&ParseError> {
        self.error.as_ref()
    }

    /// component-helpers `nodeSelectorTerm.match`: every expression holds on
    /// the labels and every field requirement on the name (fields are not
    /// checked for a node without a name, C.2). An unparsable term never
    /// matches.
    pub fn matches(&self, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
        if self.error.is_some() {
            return false;
        }
        if let Some(reqs) = &self.labels
            && !reqs.iter().all(|r| r.matches(labels))
        {
            return false;
        }
        if let Some(fields) = &self.fields
            && !node_name.is_empty()
        {
            let node_fields = node_fields(node_name);
            return fields.iter().all(|f| f.matches(&node_fields));
        }
        true
    }
}

/// Whether a node selector term matches a node (an empty or unparsable
/// term matches nothing).
pub fn term_matches(
    term: &NodeSelectorTerm,
    node_name: &str,
    labels: &BTreeMap<String, String>,
) -> bool {
    NodeTerm::parse(term, "").is_some_and(|t| t.matches(node_name, labels))
}

/// A parsed required node selector (`LazyErrorNodeSelector`): terms are
/// ORed; an empty term list matches no node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeSelectorMatcher {
    terms: Vec<NodeTerm>,
}

impl NodeSelectorMatcher {
    /// Parse every non-empty term.
    pub fn parse(selector: &NodeSelector) -> Self {
        Self {
            terms: selector
                .node_selector_terms
                .iter()
                .enumerate()
                .filter_map(|(i, t)| NodeTerm::parse(t, &format!("[{i}]")))
                .collect(),
        }
    }

    /// Whether any term matches.
    pub fn matches(&self, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.terms.iter().any(|t| t.matches(node_name, labels))
    }

    /// `NewNodeSelector`'s strict check: every term's parse error, if any.
    pub fn error(&self) -> Option<ParseError> {
        let errors: Vec<ParseError> = self.terms.iter().filter_map(|t| t.error.clone()).collect();
        (!errors.is_empty()).then(|| ParseError::flatten(errors))
    }
}

/// Whether a required node selector matches a node.
pub fn selector_matches(
    selector: &NodeSelector,
    node_name: &str,
    labels: &BTreeMap<String, String>,
) -> bool {
    NodeSelectorMatcher::parse(selector).matches(node_name, labels)
}

/// `nodeSelector` plus required node affinity (`GetRequiredNodeAffinity`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequiredNodeAffinity {
    node_selector: Option<BTreeMap<String, String>>,
    /// `Some` when `requiredDuringScheduling...` is set; an empty list matches nothing.
    terms: Option<NodeSelectorMatcher>,
    /// C.4: union of `metadata.name In` names when every term has one.
    /// `Some(empty)` = conflict.
    pub(crate) name_shortcut: Option<BTreeSet<String>>,
}

impl RequiredNodeAffinity {
    /// From a pod's `nodeSelector` and required node affinity.
    pub fn new(
        node_selector: Option<&BTreeMap<String, String>>,
        required: Option<&NodeSelector>,
    ) -> Self {
        Self {
            node_selector: node_selector.filter(|m| !m.is_empty()).cloned(),
            terms: required.map(NodeSelectorMatcher::parse),
            name_shortcut: required.and_then(|ns| name_shortcut(&ns.node_selector_terms)),
        }
    }

    /// True when neither nodeSelector nor required terms are set (PreFilter Skip).
    pub fn is_unconstrained(&self) -> bool {
        self.node_selector.is_none() && self.terms.is_none()
    }

    /// `RequiredNodeAffinity.Match`, parse errors ignored (C.1, C.3).
    pub fn matches(&self, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
        if let Some(sel) = &self.node_selector
            && !sel.iter().all(|(k, v)| labels.get(k) == Some(v))
        {
            return false;
        }
        match &self.terms {
            None => true,
            Some(terms) => terms.matches(node_name, labels),
        }
    }
}

/// C.4: the node names a pod may go to when every term pins `metadata.name In`.
fn name_shortcut(terms: &[NodeSelectorTerm]) -> Option<BTreeSet<String>> {
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

/// Parsed preferred node affinity terms (`NewPreferredSchedulingTerms`):
/// weight-0 and empty terms are skipped without being parsed; any other
/// unparsable term is an error for the whole list (C.5).
pub fn parse_preferred(
    terms: &[PreferredSchedulingTerm],
) -> Result<Vec<(i64, NodeTerm)>, ParseError> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, t) in terms.iter().enumerate() {
        if t.weight == 0 {
            continue;
        }
        if let Some(term) = NodeTerm::parse(&t.preference, &format!("[{i}]")) {
            match term.error.clone() {
                Some(e) => errors.push(e),
                None => out.push((i64::from(t.weight), term)),
            }
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(ParseError::flatten(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn requirements_follow_apimachinery() {
        assert_eq!(
            requirement_holds(&req("a", "In", &["x"]), &labels(&[("a", "x")])),
            Some(true)
        );
        assert_eq!(
            requirement_holds(&req("a", "NotIn", &["x"]), &labels(&[])),
            Some(true)
        );
        assert_eq!(
            requirement_holds(&req("a", "Gt", &["1"]), &labels(&[("a", "v2")])),
            Some(false)
        );
        assert_eq!(
            requirement_holds(&req("a", "Gt", &["x"]), &labels(&[("a", "2")])),
            None
        );
        assert_eq!(
            requirement_holds(&req("a", "In", &[]), &labels(&[("a", "2")])),
            None
        );
        assert_eq!(
            field_requirement_holds(&req("metadata.name", "In", &["n"]), "n"),
            Some(true)
        );
        assert_eq!(
            field_requirement_holds(&req("metadata.name", "NotIn", &["n"]), "m"),
            Some(true)
        );
        assert_eq!(
            field_requirement_holds(&req("metadata.name", "In", &["a", "b"]), "a"),
            None
        );
    }

    #[test]
    fn terms_are_lazy_and_fields_ignore_nameless_nodes() {
        let term = NodeSelectorTerm {
            match_expressions: Some(vec![req("a", "Exists", &[])]),
            match_fields: Some(vec![req("metadata.name", "In", &["n1"])]),
        };
        assert!(term_matches(&term, "n1", &labels(&[("a", "1")])));
        assert!(!term_matches(&term, "n2", &labels(&[("a", "1")])));
        assert!(term_matches(&term, "", &labels(&[("a", "1")])));
        assert!(!term_matches(
            &NodeSelectorTerm::default(),
            "n1",
            &labels(&[])
        ));
        let broken = NodeSelector {
            node_selector_terms: vec![
                NodeSelectorTerm {
                    match_expressions: Some(vec![req("a", "Gt", &["x"])]),
                    match_fields: None,
                },
                NodeSelectorTerm {
                    match_expressions: Some(vec![req("a", "Exists", &[])]),
                    match_fields: None,
                },
            ],
        };
        let matcher = NodeSelectorMatcher::parse(&broken);
        assert!(matcher.matches("n1", &labels(&[("a", "1")])));
        assert_eq!(
            matcher.error().unwrap().to_string(),
            "[0].matchExpressions[0].values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    #[test]
    fn preferred_terms_skip_weight_zero_and_report_paths() {
        let term = |w: i32, r: NodeSelectorRequirement| PreferredSchedulingTerm {
            weight: w,
            preference: NodeSelectorTerm {
                match_expressions: Some(vec![r]),
                match_fields: None,
            },
        };
        assert_eq!(
            parse_preferred(&[term(0, req("a", "In", &[]))])
                .unwrap()
                .len(),
            0
        );
        let err = parse_preferred(&[
            term(1, req("a", "In", &["x"])),
            term(2, req("a", "In", &["-x"])),
        ])
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("[1].matchExpressions[0].values[0][a]: Invalid value: \"-x\""),
            "{err}"
        );
    }
}
