//! Label selectors of API objects (pod affinity terms, namespace selectors,
//! topology spread constraints, workloads' `spec.selector`) as controllers
//! and kube-scheduler hold them: parsed once with apimachinery's
//! `LabelSelectorAsSelector` ([`label_selector_as_selector`], which also
//! words the errors), then matched with kube-core. A **null** selector
//! matches nothing (`labels.Nothing()`), an **empty** one everything (M.3).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::{Expression, Selector, SelectorExt};

use crate::requirement::{ParseError, label_selector_as_selector};

/// A parsed label selector (`kube-scheduler-sim` calls it `PodSelector`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelSelectorMatcher {
    /// A null selector: matches nothing (`labels.Nothing()`).
    Nothing,
    /// A parsed selector; no expressions means "everything".
    Matching(Selector),
}

impl LabelSelectorMatcher {
    /// Parse `selector` (`None` = null = nothing) with apimachinery's rules
    /// and messages.
    pub fn compile(selector: Option<&LabelSelector>) -> Result<Self, ParseError> {
        match selector {
            None => Ok(Self::Nothing),
            Some(selector) => label_selector_as_selector(selector).map(Self::Matching),
        }
    }

    /// An "everything" selector (`{}`).
    pub fn everything() -> Self {
        Self::Matching(Selector::default())
    }

    /// Whether `labels` satisfy the selector.
    #[inline]
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

    /// Adds `key In [value]` (the `matchLabelKeys` merge of topology spread);
    /// a null selector stays null.
    pub fn and_equal(&mut self, key: &str, value: &str) {
        if let Self::Matching(s) = self {
            s.extend(Expression::In(
                key.to_owned(),
                std::iter::once(value.to_owned()).collect(),
            ));
        }
    }
}

/// The pairs of a label set that `labels` lack, in key order:
/// `labels.SelectorFromSet(set)` is one `key = value` requirement per pair
/// (`staging/src/k8s.io/apimachinery/pkg/labels/selector.go`, Kubernetes
/// v1.35.4), so a pair holds only when `labels` has the key with exactly
/// that value. How a pod's `nodeSelector` selects nodes
/// (component-helpers `GetRequiredNodeAffinity`, C.1) and a Service's
/// `spec.selector` selects pods (kube-scheduler's `DefaultSelector`).
#[inline]
pub fn set_selector_misses<'a>(
    set: &'a BTreeMap<String, String>,
    labels: &'a BTreeMap<String, String>,
) -> impl Iterator<Item = (&'a String, &'a String)> + 'a {
    set.iter()
        .filter(move |(key, value)| labels.get(*key) != Some(*value))
}

/// Whether `labels` satisfy `labels.SelectorFromSet(set)`: no pair is
/// missing ([`set_selector_misses`]); an empty set selects everything.
#[inline]
pub fn set_selector_matches(
    set: &BTreeMap<String, String>,
    labels: &BTreeMap<String, String>,
) -> bool {
    set_selector_misses(set, labels).next().is_none()
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
        assert!(
            !LabelSelectorMatcher::compile(None)
                .unwrap()
                .matches(&labels)
        );
        let empty = LabelSelectorMatcher::compile(Some(&LabelSelector::default())).unwrap();
        assert!(empty.matches(&labels));
        assert!(empty.is_everything());
    }

    #[test]
    fn not_in_matches_absent_key() {
        let s = LabelSelectorMatcher::compile(Some(&expr("a", "NotIn", &["x"]))).unwrap();
        assert!(s.matches(&BTreeMap::new()));
        assert!(!s.matches(&BTreeMap::from([("a".into(), "x".into())])));
    }

    #[test]
    fn unparsable_selectors_report_apimachinery_errors() {
        let err = LabelSelectorMatcher::compile(Some(&expr("a", "In", &[]))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
    }

    #[test]
    fn a_set_selector_needs_every_key_with_its_value() {
        let set = BTreeMap::from([
            ("disk".to_owned(), "ssd".to_owned()),
            ("empty".to_owned(), String::new()),
            ("zone".to_owned(), "a".to_owned()),
        ]);
        let labels = BTreeMap::from([
            ("disk".to_owned(), "ssd".to_owned()),
            ("zone".to_owned(), "b".to_owned()),
        ]);
        let misses: Vec<(&str, &str)> = set_selector_misses(&set, &labels)
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(misses, [("empty", ""), ("zone", "a")]);
        assert!(!set_selector_matches(&set, &labels));
        assert!(set_selector_matches(&BTreeMap::new(), &labels));
        let mut all = set.clone();
        all.insert("x".to_owned(), "y".to_owned());
        assert!(set_selector_matches(&set, &all));
    }
}
