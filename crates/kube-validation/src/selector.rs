//! Label selectors and node selector requirements
//! (`labels.NewRequirement`, `metav1.LabelSelectorAsSelector`,
//! `nodeaffinity.NewNodeSelector`).

use std::fmt;

use k8s_openapi::api::core::v1::NodeSelectorRequirement;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use crate::names::{validate_label_value, validate_qualified_name};

/// One problem in a selector: where it is (relative to the selector, e.g.
/// `matchExpressions[1].values[0]`) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    /// Path of the offending field, relative to the selector.
    pub path: String,
    /// What is wrong, in apimachinery's wording, with the offending value.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// A selector that cannot be evaluated; it never means "match".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector: {}", .violations.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
#[non_exhaustive]
pub struct SelectorError {
    /// Every problem found, in field order.
    pub violations: Vec<Violation>,
}

/// Operators of `metav1.LabelSelectorRequirement`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LabelSelectorOperator {
    /// Key present and value in the set.
    In,
    /// Key absent or value not in the set.
    NotIn,
    /// Key present.
    Exists,
    /// Key absent.
    DoesNotExist,
}

impl LabelSelectorOperator {
    /// Parses the operator exactly as written in the API (case-sensitive).
    pub fn parse(operator: &str) -> Option<Self> {
        match operator {
            "In" => Some(Self::In),
            "NotIn" => Some(Self::NotIn),
            "Exists" => Some(Self::Exists),
            "DoesNotExist" => Some(Self::DoesNotExist),
            _ => None,
        }
    }
}

/// Operators of `corev1.NodeSelectorRequirement`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeSelectorOperator {
    /// Key present and value in the set.
    In,
    /// Key absent or value not in the set.
    NotIn,
    /// Key present.
    Exists,
    /// Key absent.
    DoesNotExist,
    /// Key present and its value, as an integer, greater than the one value.
    Gt,
    /// Key present and its value, as an integer, less than the one value.
    Lt,
}

impl NodeSelectorOperator {
    /// Parses the operator exactly as written in the API (case-sensitive).
    pub fn parse(operator: &str) -> Option<Self> {
        match operator {
            "In" => Some(Self::In),
            "NotIn" => Some(Self::NotIn),
            "Exists" => Some(Self::Exists),
            "DoesNotExist" => Some(Self::DoesNotExist),
            "Gt" => Some(Self::Gt),
            "Lt" => Some(Self::Lt),
            _ => None,
        }
    }
}

fn quoted_list(values: &[String]) -> String {
    let inner: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", inner.join(","))
}

fn check_key(path: &str, key: &str, out: &mut Vec<Violation>) {
    let errors = validate_qualified_name(key);
    if !errors.is_empty() {
        out.push(Violation {
            path: path.to_owned(),
            message: format!("Invalid value: {key:?}: {}", errors.join("; ")),
        });
    }
}

fn check_value(path: String, value: &str, out: &mut Vec<Violation>) {
    let errors = validate_label_value(value);
    if !errors.is_empty() {
        out.push(Violation {
            path,
            message: format!("Invalid value: {value:?}: {}", errors.join("; ")),
        });
    }
}

fn check_values(path: &str, values: &[String], out: &mut Vec<Violation>) {
    for (i, value) in values.iter().enumerate() {
        check_value(format!("{path}[{i}]"), value, out);
    }
}

/// Every problem with a label selector, as the API server and
/// `LabelSelectorAsSelector` see them: keys and values must be valid label
/// syntax, operators one of `In`, `NotIn`, `Exists`, `DoesNotExist`, `In` and
/// `NotIn` need at least one value, `Exists` and `DoesNotExist` none.
pub fn validate_label_selector(selector: &LabelSelector) -> Vec<Violation> {
    let mut out = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        check_key(&format!("matchLabels.{key}"), key, &mut out);
        check_value(format!("matchLabels.{key}"), value, &mut out);
    }
    for (i, requirement) in selector.match_expressions.iter().flatten().enumerate() {
        validate_requirement(&format!("matchExpressions[{i}]"), requirement, &mut out);
    }
    out
}

fn validate_requirement(
    path: &str,
    requirement: &LabelSelectorRequirement,
    out: &mut Vec<Violation>,
) {
    let values = requirement.values.as_deref().unwrap_or_default();
    check_key(&format!("{path}.key"), &requirement.key, out);
    match LabelSelectorOperator::parse(&requirement.operator) {
        Some(LabelSelectorOperator::In | LabelSelectorOperator::NotIn) if values.is_empty() => {
            out.push(Violation {
                path: format!("{path}.values"),
                message: "must be specified when `operator` is 'In' or 'NotIn'".to_owned(),
            });
        }
        Some(LabelSelectorOperator::Exists | LabelSelectorOperator::DoesNotExist)
            if !values.is_empty() =>
        {
            out.push(Violation {
                path: format!("{path}.values"),
                message: format!(
                    "Invalid value: {}: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    quoted_list(values)
                ),
            });
        }
        Some(_) => {}
        None => out.push(Violation {
            path: format!("{path}.operator"),
            message: format!(
                "Unsupported value: {:?}: supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"",
                requirement.operator
            ),
        }),
    }
    check_values(&format!("{path}.values"), values, out);
}

/// Every problem the API server finds in one node selector requirement of a
/// new pod's required node affinity (`nodeSelectorTerms[].matchExpressions[]`,
/// `ValidateNodeSelectorRequirement` without `AllowInvalidLabelValueInRequiredNodeAffinity`):
/// key syntax, operator one of `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`,
/// `Lt`, the value counts each operator needs, and every value a valid label
/// value (whatever the operator). A pod with any of these is rejected.
///
/// The API server does not check that a `Gt`/`Lt` value is an integer; see
/// [`unparsable_node_selector_requirement`].
pub fn validate_node_selector_requirement(
    path: &str,
    requirement: &NodeSelectorRequirement,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let values = requirement.values.as_deref().unwrap_or_default();
    check_key(&format!("{path}.key"), &requirement.key, &mut out);
    let values_path = format!("{path}.values");
    match NodeSelectorOperator::parse(&requirement.operator) {
        Some(NodeSelectorOperator::In | NodeSelectorOperator::NotIn) => {
            if values.is_empty() {
                out.push(Violation {
                    path: values_path.clone(),
                    message: "must be specified when `operator` is 'In' or 'NotIn'".to_owned(),
                });
            }
        }
        Some(NodeSelectorOperator::Exists | NodeSelectorOperator::DoesNotExist) => {
            if !values.is_empty() {
                out.push(Violation {
                    path: values_path.clone(),
                    message: format!(
                        "Invalid value: {}: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                        quoted_list(values)
                    ),
                });
            }
        }
        Some(NodeSelectorOperator::Gt | NodeSelectorOperator::Lt) => {
            if values.len() != 1 {
                out.push(Violation {
                    path: values_path.clone(),
                    message: format!(
                        "Required value: must be specified single value when `operator` is 'Lt' or 'Gt', got {}",
                        quoted_list(values)
                    ),
                });
            }
        }
        None => out.push(Violation {
            path: format!("{path}.operator"),
            message: format!(
                "Unsupported value: {:?}: supported values: \"DoesNotExist\", \"Exists\", \"Gt\", \"In\", \"Lt\", \"NotIn\"",
                requirement.operator
            ),
        }),
    }
    check_values(&values_path, values, &mut out);
    out
}

/// What kube-scheduler cannot parse in a node selector requirement the API
/// server accepts (`nodeaffinity.NewNodeSelector` through
/// `labels.NewRequirement`): a single `Gt`/`Lt` value that is not a base-10
/// integer. The term holding it never matches a node, so a pod that
/// requires it stays `Pending`. Meant for requirements without
/// [`validate_node_selector_requirement`] violations (the API server rejects
/// those before the scheduler sees them).
pub fn unparsable_node_selector_requirement(
    path: &str,
    requirement: &NodeSelectorRequirement,
) -> Vec<Violation> {
    let values = requirement.values.as_deref().unwrap_or_default();
    let comparison = matches!(
        NodeSelectorOperator::parse(&requirement.operator),
        Some(NodeSelectorOperator::Gt | NodeSelectorOperator::Lt)
    );
    match values {
        [value] if comparison && value.parse::<i64>().is_err() => vec![Violation {
            path: format!("{path}.values[0]"),
            message: format!("Invalid value: {value:?}: must be an integer for 'Gt' and 'Lt'"),
        }],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn requirement(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.to_owned(),
            operator: operator.to_owned(),
            values: Some(values.iter().map(|v| (*v).to_owned()).collect()),
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_violation_has_a_path_and_the_offending_value() {
        let violations = validate_label_selector(&LabelSelector {
            match_labels: Some(labels(&[("bad key", "ok"), ("k", "-bad")])),
            match_expressions: Some(vec![
                requirement("a", "in", &["x"]),
                requirement("b", "In", &[]),
                requirement("c", "Exists", &["x"]),
            ]),
        });
        let paths: Vec<&str> = violations.iter().map(|v| v.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "matchLabels.bad key",
                "matchLabels.k",
                "matchExpressions[0].operator",
                "matchExpressions[1].values",
                "matchExpressions[2].values",
            ]
        );
        assert!(violations[0].message.contains("\"bad key\""));
        assert!(violations[1].message.contains("\"-bad\""));
        assert!(violations[2].message.contains("\"in\""));
    }

    #[test]
    fn node_requirements_follow_the_api_server_then_the_scheduler_parser() {
        let nsr = |op: &str, values: &[&str]| NodeSelectorRequirement {
            key: "cores".to_owned(),
            operator: op.to_owned(),
            values: Some(values.iter().map(|v| (*v).to_owned()).collect()),
        };
        assert!(validate_node_selector_requirement("r", &nsr("Gt", &["4"])).is_empty());
        assert!(unparsable_node_selector_requirement("r", &nsr("Gt", &["4"])).is_empty());
        // The API server accepts a non-integer label value; the scheduler
        // cannot parse it.
        assert!(validate_node_selector_requirement("r", &nsr("Lt", &["x"])).is_empty());
        assert_eq!(
            unparsable_node_selector_requirement("r", &nsr("Lt", &["x"]))[0].path,
            "r.values[0]"
        );
        // An integer that is not a label value: the API server rejects it.
        assert_eq!(
            validate_node_selector_requirement("r", &nsr("Gt", &["-1"]))[0].path,
            "r.values[0]"
        );
        assert!(unparsable_node_selector_requirement("r", &nsr("Gt", &["-1"])).is_empty());
        assert!(unparsable_node_selector_requirement("r", &nsr("In", &["x"])).is_empty());
        assert_eq!(
            validate_node_selector_requirement("r", &nsr("Gt", &["1", "2"]))[0].path,
            "r.values"
        );
        assert_eq!(
            validate_node_selector_requirement("r", &nsr("Near", &[]))[0].path,
            "r.operator"
        );
        assert!(validate_node_selector_requirement("r", &nsr("Exists", &[])).is_empty());
    }
}
