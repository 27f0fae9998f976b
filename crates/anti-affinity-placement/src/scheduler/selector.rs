//! Label selectors with apimachinery's parse rules (spec 0.4).
//!
//! Matching is delegated to [`kube::core::Selector`]; what kube-core does not
//! do — rejecting unknown operators, wrong value counts, invalid keys and
//! values — is done here, with errors that name the field path and the
//! offending value. A **null** selector matches nothing, an **empty** one
//! everything (0.4).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::{Expression, Selector, SelectorExt};

/// Why a selector cannot be parsed. Never treated as "match" (spec 0.4).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorError {
    /// A label key is not a valid qualified name.
    #[error("{path}: invalid label key {key:?}: {reason}")]
    InvalidKey {
        /// Field path of the key.
        path: String,
        /// The offending key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A label value is not a valid label value.
    #[error("{path}: invalid label value {value:?}: {reason}")]
    InvalidValue {
        /// Field path of the value.
        path: String,
        /// The offending value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The operator is not one the selector kind supports.
    #[error("{path}: unsupported operator {operator:?}, expected one of {expected}")]
    InvalidOperator {
        /// Field path of the operator.
        path: String,
        /// The offending operator.
        operator: String,
        /// The operators allowed here.
        expected: &'static str,
    },
    /// The operator got the wrong number of values.
    #[error("{path}: operator {operator} needs {expected}, got {got} value(s)")]
    WrongValueCount {
        /// Field path of the values.
        path: String,
        /// The operator.
        operator: String,
        /// What the operator needs ("at least one value", ...).
        expected: &'static str,
        /// How many values were given.
        got: usize,
    },
    /// `Gt`/`Lt` value is not a base-10 64-bit integer.
    #[error("{path}: value {value:?} for operator {operator} must be a base-10 integer")]
    NotAnInteger {
        /// Field path of the value.
        path: String,
        /// The operator.
        operator: String,
        /// The offending value.
        value: String,
    },
    /// A node `matchFields` key other than `metadata.name`.
    #[error("{path}: unsupported field key {key:?}, only \"metadata.name\" is supported")]
    UnsupportedField {
        /// Field path of the key.
        path: String,
        /// The offending key.
        key: String,
    },
}

/// A validated pod/namespace label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodSelector {
    /// A null selector: matches nothing.
    Nothing,
    /// A parsed selector; no expressions means "everything".
    Matching(Selector),
}

impl PodSelector {
    /// Validate and convert `selector` (`None` = null = nothing). `path` is
    /// the field path used in error messages.
    pub fn compile(selector: Option<&LabelSelector>, path: &str) -> Result<Self, SelectorError> {
        let Some(selector) = selector else {
            return Ok(Self::Nothing);
        };
        validate_label_selector(selector, path)?;
        let converted =
            Selector::try_from(selector.clone()).map_err(|e| SelectorError::InvalidOperator {
                path: format!("{path}.matchExpressions"),
                operator: e.0,
                expected: "In, NotIn, Exists, DoesNotExist",
            })?;
        Ok(Self::Matching(converted))
    }

    /// An "everything" selector (`{}`).
    pub fn everything() -> Self {
        Self::Matching(Selector::default())
    }

    /// Whether `labels` satisfy the selector.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Self::Nothing => false,
            Self::Matching(s) => s.matches(labels),
        }
    }

    /// apimachinery's `Selector.Empty()`: true only for the empty selector
    /// `{}` (which matches everything), false for null.
    pub fn is_everything(&self) -> bool {
        matches!(self, Self::Matching(s) if s.selects_all())
    }

    /// Add `key In [value]` (used by the matchLabelKeys merge of topology spread).
    pub(crate) fn and_equal(&mut self, key: &str, value: &str) {
        if let Self::Matching(s) = self {
            s.extend(Expression::In(
                key.to_owned(),
                std::iter::once(value.to_owned()).collect(),
            ));
        }
    }
}

/// Check a [`LabelSelector`] against apimachinery's `LabelSelectorAsSelector`
/// / `NewRequirement` rules (spec 0.4).
pub fn validate_label_selector(selector: &LabelSelector, path: &str) -> Result<(), SelectorError> {
    for (key, value) in selector.match_labels.iter().flatten() {
        let p = format!("{path}.matchLabels[{key}]");
        validate_key(key, &p)?;
        validate_value(value, &p)?;
    }
    for (i, expr) in selector.match_expressions.iter().flatten().enumerate() {
        let p = format!("{path}.matchExpressions[{i}]");
        let values = expr.values.as_deref().unwrap_or_default();
        match expr.operator.as_str() {
            "In" | "NotIn" => {
                if values.is_empty() {
                    return Err(wrong_count(&p, &expr.operator, "at least one value", 0));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    return Err(wrong_count(&p, &expr.operator, "no values", values.len()));
                }
            }
            other => {
                return Err(SelectorError::InvalidOperator {
                    path: format!("{p}.operator"),
                    operator: other.to_owned(),
                    expected: "In, NotIn, Exists, DoesNotExist",
                });
            }
        }
        validate_key(&expr.key, &format!("{p}.key"))?;
        for (j, v) in values.iter().enumerate() {
            validate_value(v, &format!("{p}.values[{j}]"))?;
        }
    }
    Ok(())
}

pub(crate) fn wrong_count(
    path: &str,
    op: &str,
    expected: &'static str,
    got: usize,
) -> SelectorError {
    SelectorError::WrongValueCount {
        path: format!("{path}.values"),
        operator: op.to_owned(),
        expected,
        got,
    }
}

/// Validate a label key: an optional DNS-subdomain prefix (≤ 253 chars) and
/// `/`, then a name of 1–63 chars, alphanumeric at both ends, `-_.` inside
/// (apimachinery's rules and wording, from `kube-validation`).
pub fn validate_key(key: &str, path: &str) -> Result<(), SelectorError> {
    let problems = kube_validation::validate_qualified_name(key);
    if problems.is_empty() {
        return Ok(());
    }
    Err(SelectorError::InvalidKey {
        path: path.to_owned(),
        key: key.to_owned(),
        reason: problems.join("; "),
    })
}

/// Validate a label value: empty, or ≤ 63 chars, alphanumeric at both ends,
/// `-_.` inside (apimachinery's rules and wording, from `kube-validation`).
pub fn validate_value(value: &str, path: &str) -> Result<(), SelectorError> {
    let problems = kube_validation::validate_label_value(value);
    if problems.is_empty() {
        return Ok(());
    }
    Err(SelectorError::InvalidValue {
        path: path.to_owned(),
        value: value.to_owned(),
        reason: problems.join("; "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelector {
        LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.into(),
                operator: op.into(),
                values: Some(values.iter().map(|v| v.to_string()).collect()),
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn null_matches_nothing_and_empty_matches_everything() {
        let labels = BTreeMap::from([("a".to_owned(), "b".to_owned())]);
        assert!(!PodSelector::compile(None, "s").unwrap().matches(&labels));
        let empty = PodSelector::compile(Some(&LabelSelector::default()), "s").unwrap();
        assert!(empty.matches(&labels));
        assert!(empty.is_everything());
    }

    #[test]
    fn not_in_matches_absent_key() {
        let s = PodSelector::compile(Some(&expr("a", "NotIn", &["x"])), "s").unwrap();
        assert!(s.matches(&BTreeMap::new()));
        assert!(!s.matches(&BTreeMap::from([("a".into(), "x".into())])));
    }

    #[test]
    fn unparsable_selectors_are_errors_with_paths() {
        let cases = [
            (
                expr("a", "In", &[]),
                "s.matchExpressions[0].values: operator In needs at least one value, got 0 value(s)",
            ),
            (
                expr("a", "Exists", &["x"]),
                "s.matchExpressions[0].values: operator Exists needs no values, got 1 value(s)",
            ),
            (
                expr("a", "Gt", &["1"]),
                "s.matchExpressions[0].operator: unsupported operator \"Gt\", expected one of In, NotIn, Exists, DoesNotExist",
            ),
            (
                expr("a b", "Exists", &[]),
                "s.matchExpressions[0].key: invalid label key \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ),
            (
                expr("a", "In", &["-x"]),
                "s.matchExpressions[0].values[0]: invalid label value \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ),
            (
                expr("Example.com/a", "Exists", &[]),
                "s.matchExpressions[0].key: invalid label key \"Example.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ),
        ];
        for (sel, msg) in cases {
            let err = PodSelector::compile(Some(&sel), "s").unwrap_err();
            assert_eq!(err.to_string(), msg);
        }
    }

    #[test]
    fn valid_keys_and_values() {
        for k in [
            "a",
            "kubernetes.io/hostname",
            "topology.kubernetes.io/zone",
            "A_b.c-9",
        ] {
            validate_key(k, "k").unwrap();
        }
        for v in ["", "a", "Compute01", "a-b_c.d"] {
            validate_value(v, "v").unwrap();
        }
        assert!(validate_value(&"a".repeat(64), "v").is_err());
        assert!(validate_key(&"a".repeat(64), "k").is_err());
        assert!(validate_key("/a", "k").is_err());
        assert!(validate_key("a/", "k").is_err());
    }
}
