//! Node selector terms: nodeSelector, required and preferred node affinity
//! (spec C.1–C.5), with component-helpers' lazy parse errors (C.3).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm,
};

use super::selector::{SelectorError, validate_key, validate_value, wrong_count};

/// Node label operator (node selectors also have `Gt`/`Lt`, spec 0.4).
#[derive(Debug, Clone, PartialEq, Eq)]
enum NodeOp {
    In(BTreeSet<String>),
    NotIn(BTreeSet<String>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

/// One parsed `matchExpressions` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NodeRequirement {
    key: String,
    op: NodeOp,
}

impl NodeRequirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match &self.op {
            NodeOp::In(set) => value.is_some_and(|v| set.contains(v)),
            NodeOp::NotIn(set) => value.is_none_or(|v| !set.contains(v)),
            NodeOp::Exists => value.is_some(),
            NodeOp::DoesNotExist => value.is_none(),
            NodeOp::Gt(n) => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            NodeOp::Lt(n) => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        }
    }
}

/// One parsed `matchFields` entry: `metadata.name` In / NotIn one value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FieldRequirement {
    NameIs(String),
    NameIsNot(String),
}

/// A parsed node selector term; `error` set when a requirement is unparsable
/// (such a term never matches, C.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeTerm {
    labels: Option<Vec<NodeRequirement>>,
    fields: Option<Vec<FieldRequirement>>,
    pub(crate) error: Option<SelectorError>,
}

impl NodeTerm {
    /// `None` for an empty term (neither expressions nor fields: skipped, C.1).
    pub(crate) fn compile(term: &NodeSelectorTerm, path: &str) -> Option<Self> {
        let exprs = term.match_expressions.as_deref().unwrap_or_default();
        let fields = term.match_fields.as_deref().unwrap_or_default();
        if exprs.is_empty() && fields.is_empty() {
            return None;
        }
        let mut out = NodeTerm {
            labels: None,
            fields: None,
            error: None,
        };
        if !exprs.is_empty() {
            match exprs
                .iter()
                .enumerate()
                .map(|(i, r)| compile_requirement(r, &format!("{path}.matchExpressions[{i}]")))
                .collect::<Result<Vec<_>, _>>()
            {
                Ok(v) => out.labels = Some(v),
                Err(e) => out.error = Some(e),
            }
        }
        if !fields.is_empty() && out.error.is_none() {
            match fields
                .iter()
                .enumerate()
                .map(|(i, r)| compile_field(r, &format!("{path}.matchFields[{i}]")))
                .collect::<Result<Vec<_>, _>>()
            {
                Ok(v) => out.fields = Some(v),
                Err(e) => out.error = Some(e),
            }
        }
        Some(out)
    }

    /// component-helpers `nodeSelectorTerm.match`; matchFields are ignored
    /// for a node with an empty name (C.2). Unparsable terms never match.
    pub(crate) fn matches(&self, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
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
            return fields.iter().all(|f| match f {
                FieldRequirement::NameIs(n) => node_name == n,
                FieldRequirement::NameIsNot(n) => node_name != n,
            });
        }
        true
    }
}

fn compile_requirement(
    r: &NodeSelectorRequirement,
    path: &str,
) -> Result<NodeRequirement, SelectorError> {
    let values = r.values.as_deref().unwrap_or_default();
    let op = r.operator.as_str();
    let set = || values.iter().cloned().collect::<BTreeSet<_>>();
    let int = |values: &[String]| -> Result<i64, SelectorError> {
        if values.len() != 1 {
            return Err(wrong_count(path, op, "exactly one value", values.len()));
        }
        values[0]
            .parse::<i64>()
            .map_err(|_| SelectorError::NotAnInteger {
                path: format!("{path}.values[0]"),
                operator: op.to_owned(),
                value: values[0].clone(),
            })
    };
    let parsed = match op {
        "In" | "NotIn" if values.is_empty() => {
            return Err(wrong_count(path, op, "at least one value", 0));
        }
        "In" => NodeOp::In(set()),
        "NotIn" => NodeOp::NotIn(set()),
        "Exists" | "DoesNotExist" if !values.is_empty() => {
            return Err(wrong_count(path, op, "no values", values.len()));
        }
        "Exists" => NodeOp::Exists,
        "DoesNotExist" => NodeOp::DoesNotExist,
        "Gt" => NodeOp::Gt(int(values)?),
        "Lt" => NodeOp::Lt(int(values)?),
        other => {
            return Err(SelectorError::InvalidOperator {
                path: format!("{path}.operator"),
                operator: other.to_owned(),
                expected: "In, NotIn, Exists, DoesNotExist, Gt, Lt",
            });
        }
    };
    validate_key(&r.key, &format!("{path}.key"))?;
    for (j, v) in values.iter().enumerate() {
        validate_value(v, &format!("{path}.values[{j}]"))?;
    }
    Ok(NodeRequirement {
        key: r.key.clone(),
        op: parsed,
    })
}

fn compile_field(
    r: &NodeSelectorRequirement,
    path: &str,
) -> Result<FieldRequirement, SelectorError> {
    if r.key != "metadata.name" {
        return Err(SelectorError::UnsupportedField {
            path: format!("{path}.key"),
            key: r.key.clone(),
        });
    }
    let values = r.values.as_deref().unwrap_or_default();
    if values.len() != 1 {
        return Err(wrong_count(
            path,
            &r.operator,
            "exactly one value",
            values.len(),
        ));
    }
    match r.operator.as_str() {
        "In" => Ok(FieldRequirement::NameIs(values[0].clone())),
        "NotIn" => Ok(FieldRequirement::NameIsNot(values[0].clone())),
        other => Err(SelectorError::InvalidOperator {
            path: format!("{path}.operator"),
            operator: other.to_owned(),
            expected: "In, NotIn",
        }),
    }
}

/// `nodeSelector` plus required node affinity (`GetRequiredNodeAffinity`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RequiredNodeAffinity {
    node_selector: Option<BTreeMap<String, String>>,
    /// `Some` when `requiredDuringScheduling...` is set; an empty list matches nothing.
    terms: Option<Vec<NodeTerm>>,
    /// C.4: union of `metadata.name In` names when every term has one.
    /// `Some(empty)` = conflict.
    pub(crate) name_shortcut: Option<BTreeSet<String>>,
}

impl RequiredNodeAffinity {
    pub(crate) fn compile(
        node_selector: Option<&BTreeMap<String, String>>,
        required: Option<&NodeSelector>,
    ) -> Self {
        let node_selector = node_selector.filter(|m| !m.is_empty()).cloned();
        let terms = required.map(|ns| {
            ns.node_selector_terms
                .iter()
                .enumerate()
                .filter_map(|(i, t)| {
                    NodeTerm::compile(
                        t,
                        &format!("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"),
                    )
                })
                .collect()
        });
        let name_shortcut = required.and_then(|ns| name_shortcut(&ns.node_selector_terms));
        Self {
            node_selector,
            terms,
            name_shortcut,
        }
    }

    /// True when neither nodeSelector nor required terms are set (PreFilter Skip).
    pub(crate) fn is_unconstrained(&self) -> bool {
        self.node_selector.is_none() && self.terms.is_none()
    }

    /// `RequiredNodeAffinity.Match`, parse errors ignored (C.1, C.3).
    pub(crate) fn matches(&self, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
        if let Some(sel) = &self.node_selector
            && !sel.iter().all(|(k, v)| labels.get(k) == Some(v))
        {
            return false;
        }
        match &self.terms {
            None => true,
            Some(terms) => terms.iter().any(|t| t.matches(node_name, labels)),
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

/// Preferred node affinity terms (C.5): weight-0 and empty terms skipped.
pub(crate) fn compile_preferred(
    terms: &[PreferredSchedulingTerm],
) -> Result<Vec<(i64, NodeTerm)>, SelectorError> {
    let mut out = Vec::new();
    for (i, t) in terms.iter().enumerate() {
        if t.weight == 0 {
            continue;
        }
        let path = format!(
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference"
        );
        if let Some(term) = NodeTerm::compile(&t.preference, &path) {
            if let Some(e) = term.error {
                return Err(e);
            }
            out.push((i64::from(t.weight), term));
        }
    }
    Ok(out)
}
