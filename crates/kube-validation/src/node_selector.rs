//! Node selector terms as component-helpers' `nodeaffinity` package parses
//! and matches them (`k8s.io/component-helpers/scheduling/corev1/nodeaffinity`,
//! Kubernetes v1.35.4): a pod's `nodeSelector`, required and preferred node
//! affinity (C.1–C.5), with its lazy parse errors (C.3).
//!
//! kube-scheduler's NodeAffinity, PodTopologySpread and VolumeBinding
//! plugins (`kube-scheduler-sim`) and `affinity-translate`'s data-mover
//! diagnosis all decide with these types, so they never disagree.
//! Requirements are parsed by [`node_selector_requirement`] (apimachinery's
//! `labels.NewRequirement`, with its messages).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm,
};

use crate::label_matcher::set_selector_matches;
use crate::requirement::{
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

/// Whether one `matchFields` requirement holds for a node, as a term
/// evaluates it; `None` if it cannot be parsed. Only `metadata.name` exists
/// as a field (any other key reads as `""`), and a node without a name has
/// no fields at all, so a term does not check its `matchFields` there: for
/// such a node every parsable field requirement holds (C.2).
///
/// With [`requirement_holds`], a non-empty term matches a node exactly when
/// every one of its requirements holds (`Some(true)`).
pub fn field_requirement_holds(
    requirement: &NodeSelectorRequirement,
    node_name: &str,
) -> Option<bool> {
    node_selector_field_requirement("", requirement)
        .ok()
        .map(|r| node_name.is_empty() || r.matches_value(node_field(&r.key, node_name)))
}

/// component-helpers' `extractNodeFields`: a node's one field,
/// `metadata.name`, present when the node has a name.
#[inline]
fn node_field<'a>(key: &str, node_name: &'a str) -> Option<&'a str> {
    (key == "metadata.name" && !node_name.is_empty()).then_some(node_name)
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
    /// checked for a node without a name, which has no fields, C.2). An
    /// unparsable term never matches.
    #[inline]
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
            return fields
                .iter()
                .all(|f| f.matches_value(node_field(&f.key, node_name)));
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
    #[inline]
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

/// `nodeSelector` plus required node affinity (`GetRequiredNodeAffinity`);
/// the `nodeSelector` is matched as `labels.SelectorFromSet`
/// ([`set_selector_matches`], C.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequiredNodeAffinity {
    node_selector: Option<BTreeMap<String, String>>,
    /// `Some` when `requiredDuringScheduling...` is set; an empty list matches nothing.
    terms: Option<NodeSelectorMatcher>,
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
        }
    }

    /// True when neither nodeSelector nor required terms are set (PreFilter Skip).
    #[inline]
    pub fn is_unconstrained(&self) -> bool {
        self.node_selector.is_none() && self.terms.is_none()
    }

    /// `RequiredNodeAffinity.Match`, parse errors ignored (C.1, C.3).
    #[inline]
    pub fn matches(&self, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
        if let Some(sel) = &self.node_selector
            && !set_selector_matches(sel, labels)
        {
            return false;
        }
        match &self.terms {
            None => true,
            Some(terms) => terms.matches(node_name, labels),
        }
    }
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

    /// component-helpers reads a node's fields from its name
    /// (`extractNodeFields`): a node without a name has no fields, and
    /// `nodeSelectorTerm.match` skips a term's `matchFields` when there are
    /// none (`nodeaffinity.go`, Kubernetes v1.35.4). The per-requirement
    /// answer agrees with the term: on a nameless node a field requirement
    /// holds, whatever name it pins.
    #[test]
    fn a_node_without_a_name_passes_every_field_requirement() {
        let pinned = NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![req("metadata.name", "In", &["n1"])]),
        };
        assert!(term_matches(&pinned, "", &labels(&[])));
        assert!(!term_matches(&pinned, "n2", &labels(&[])));
        assert_eq!(
            field_requirement_holds(&req("metadata.name", "In", &["n1"]), ""),
            Some(true)
        );
        assert_eq!(
            field_requirement_holds(&req("metadata.name", "NotIn", &["n1"]), ""),
            Some(true)
        );
        // Unparsable stays unparsable, name or not.
        assert_eq!(
            field_requirement_holds(&req("metadata.name", "In", &["a", "b"]), ""),
            None
        );
        // Keys other than metadata.name read as "" on a named node.
        assert_eq!(
            field_requirement_holds(&req("spec.unschedulable", "In", &[""]), "n1"),
            Some(true)
        );
    }

    /// `labels.SelectorFromSet(pod.Spec.NodeSelector)`: every pair must be on
    /// the node with an equal value; an absent key never matches, not even an
    /// empty value (component-helpers `GetRequiredNodeAffinity`, Kubernetes
    /// v1.35.4).
    #[test]
    fn node_selector_pairs_need_the_key_with_the_value() {
        let selector = labels(&[("disk", "ssd"), ("empty", ""), ("zone", "a")]);
        let node = labels(&[("disk", "ssd"), ("zone", "b")]);
        let affinity = RequiredNodeAffinity::new(Some(&selector), None);
        assert!(!affinity.matches("n", &node));
        let node = labels(&[("disk", "ssd"), ("empty", ""), ("zone", "a"), ("x", "y")]);
        let affinity = RequiredNodeAffinity::new(Some(&selector), None);
        assert!(affinity.matches("n", &node));
        assert!(!affinity.matches("n", &labels(&[("disk", "ssd")])));
        assert!(RequiredNodeAffinity::new(Some(&BTreeMap::new()), None).is_unconstrained());
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        fn requirement() -> impl Strategy<Value = NodeSelectorRequirement> {
            let key = prop::sample::select(vec!["a", "b", "metadata.name"]);
            let op = prop::sample::select(vec![
                "In",
                "NotIn",
                "Exists",
                "DoesNotExist",
                "Gt",
                "Lt",
                "Near",
            ]);
            let values =
                prop::collection::vec(prop::sample::select(vec!["1", "5", "x", "n1", ""]), 0..3);
            (key, op, values).prop_map(|(k, o, v)| NodeSelectorRequirement {
                key: k.to_owned(),
                operator: o.to_owned(),
                values: Some(v.into_iter().map(str::to_owned).collect()),
            })
        }

        proptest! {
            /// A non-empty term matches a node exactly when every one of its
            /// requirements holds, requirement by requirement
            /// (`requirement_holds`, `field_requirement_holds`): the
            /// diagnosis that names failing requirements and the filter
            /// that decides never disagree, named or nameless node.
            #[test]
            fn a_term_matches_when_each_of_its_requirements_holds(
                expressions in prop::collection::vec(requirement(), 0..3),
                fields in prop::collection::vec(requirement(), 0..2),
                node_name in prop::sample::select(vec!["", "n1", "n2"]),
                node_labels in prop::collection::btree_map(
                    prop::sample::select(vec!["a".to_owned(), "b".to_owned()]),
                    prop::sample::select(vec!["1".to_owned(), "5".to_owned(), "x".to_owned(), "".to_owned()]),
                    0..3,
                ),
            ) {
                prop_assume!(!expressions.is_empty() || !fields.is_empty());
                let term = NodeSelectorTerm {
                    match_expressions: Some(expressions.clone()),
                    match_fields: Some(fields.clone()),
                };
                let each = expressions.iter().all(|r| requirement_holds(r, &node_labels) == Some(true))
                    && fields.iter().all(|r| field_requirement_holds(r, node_name) == Some(true));
                prop_assert_eq!(term_matches(&term, node_name, &node_labels), each);
            }
        }
    }
}
