//! Label and field selectors as sent in `labelSelector=` / `fieldSelector=`.
//!
//! Label selectors are parsed as kube-apiserver parses them, by
//! apimachinery's `labels.Parse` ([`kube_validation::parse_label_selector`],
//! the workspace's one label-selector parser): `key`, `!key`, `key=v`,
//! `key==v`, `key!=v`, `key in (a,b)`, `key notin (a,b)`, `key>n`, `key<n`,
//! comma-separated; keys must be qualified names, values label values, and
//! an unparsable selector is `400 BadRequest` with apimachinery's message.
//! `!=` and `notin` also match objects without the label, as on the real
//! API server.
//!
//! Field selectors: comma-separated `path=v`, `path==v`, `path!=v` where path
//! is a dotted path into the object (`metadata.name`, `metadata.namespace`,
//! `spec.nodeName`, ...). This is more permissive than the real API server,
//! which only accepts a per-type list of fields; a missing field compares as
//! the empty string.

use kube_validation::{Requirement, parse_label_selector};
use serde_json::Value;

use crate::error::ApiError;

/// A parsed label selector: all requirements must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Vec<Requirement>);

impl LabelSelector {
    /// Parses a `labelSelector` query value (`labels.Parse`). Empty means
    /// "everything"; an error is the API server's `400 BadRequest` with
    /// apimachinery's message.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        parse_label_selector(s)
            .map(Self)
            .map_err(|e| ApiError::bad_request(e.to_string()))
    }

    /// Whether `object`'s `metadata.labels` satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        self.0.iter().all(|requirement| {
            requirement.matches_value(
                labels
                    .and_then(|l| l.get(requirement.key()))
                    .and_then(Value::as_str),
            )
        })
    }
}

/// One field requirement: `path` equals (or not) `value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// Dotted path, e.g. `metadata.name`.
    pub path: String,
    /// Expected value.
    pub value: String,
    /// `true` for `!=`.
    pub negated: bool,
}

/// A parsed field selector: all requirements must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(pub Vec<FieldRequirement>);

impl FieldSelector {
    /// Parses a `fieldSelector` query value. Empty means "everything".
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(Self(reqs));
        }
        for part in s.split(',') {
            let p = part.trim();
            let (path, value, negated) = if let Some((k, v)) = p.split_once("!=") {
                (k, v, true)
            } else if let Some((k, v)) = p.split_once("==") {
                (k, v, false)
            } else if let Some((k, v)) = p.split_once('=') {
                (k, v, false)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: {p:?} in fieldSelector {s:?}; expected 'field=value' or 'field!=value'"
                )));
            };
            let path = path.trim();
            if path.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: empty field name in fieldSelector {s:?}"
                )));
            }
            reqs.push(FieldRequirement {
                path: path.to_owned(),
                value: value.trim().to_owned(),
                negated,
            });
        }
        Ok(Self(reqs))
    }

    /// Whether every requirement holds for `object`.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|req| {
            let mut cur = Some(object);
            for seg in req.path.split('.') {
                cur = cur.and_then(|v| v.get(seg));
            }
            let actual = match cur {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == req.value) != req.negated
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn label_operators_match_like_the_api_server() {
        let o = obj(json!({"app": "web", "tier": "front"}));
        let none = obj(json!({}));
        let cases = [
            ("app=web", true, false),
            ("app==web", true, false),
            ("app!=web", false, true),
            ("app in (web, db)", true, false),
            ("app notin (web,db)", false, true),
            ("app", true, false),
            ("!app", false, true),
            ("app=web,tier in (front)", true, false),
            ("app=web,tier notin (front)", false, false),
            ("", true, true),
        ];
        for (sel, on_o, on_none) in cases {
            let s = LabelSelector::parse(sel).unwrap();
            assert_eq!(s.matches(&o), on_o, "{sel} on labelled object");
            assert_eq!(s.matches(&none), on_none, "{sel} on unlabelled object");
        }
    }

    #[test]
    fn kube_core_selector_display_round_trips() {
        use kube::core::{Expression, Selector};
        let sel: Selector = [
            Expression::In("a".into(), ["x".to_string(), "y".to_string()].into()),
            Expression::NotIn("b".into(), ["z".to_string()].into()),
            Expression::Exists("c".into()),
            Expression::DoesNotExist("d".into()),
            Expression::Equal("e".into(), "1".into()),
            Expression::NotEqual("f".into(), "2".into()),
        ]
        .into_iter()
        .collect();
        let parsed = LabelSelector::parse(&sel.to_string()).unwrap();
        assert_eq!(parsed.0.len(), 6, "{sel}");
        assert!(parsed.matches(&obj(json!({"a": "y", "c": "", "e": "1"}))));
        assert!(!parsed.matches(&obj(json!({"a": "y", "c": "", "e": "1", "d": ""}))));
    }

    #[test]
    fn malformed_label_selectors_are_rejected_with_the_offending_text() {
        for bad in ["a in (b", "a foo (b)", "=x", "a b"] {
            let err = LabelSelector::parse(bad).unwrap_err();
            assert_eq!(err.code, 400, "{bad}");
        }
    }

    /// The stand-in used to have its own parser, with its own key check and
    /// messages; it now answers as kube-apiserver, which parses with
    /// apimachinery's `labels.Parse` (`staging/src/k8s.io/apimachinery/pkg/labels/selector.go`,
    /// Kubernetes v1.35.4) and returns its error as a `400 BadRequest`
    /// message. Each case is one the two parsers answered differently.
    #[test]
    fn label_selectors_are_parsed_as_kube_apiserver_parses_them() {
        let refused = |text: &str| {
            let err = LabelSelector::parse(text).unwrap_err();
            assert_eq!(err.code, 400, "{text}");
            err.message
        };
        // Keys are qualified names (was: anything without spaces or
        // operator characters).
        assert!(
            refused("-app=web").starts_with("unable to parse requirement: <nil>: Invalid value: \"-app\": name part must consist of"),
            "{}",
            refused("-app=web")
        );
        assert!(
            refused(&format!("{}=x", "k".repeat(64)))
                .contains("must be no more than 63 characters")
        );
        // Values are label values (was: anything).
        assert!(
            refused("app=-web").starts_with(
                "unable to parse requirement: values[0][app]: Invalid value: \"-web\""
            )
        );
        // The syntax errors are apimachinery's.
        assert_eq!(
            refused("app=web,"),
            "found '', expected: identifier after ','"
        );
        assert_eq!(
            refused("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        // `>` and `<` compare integers (was: part of a key, `cores>4` exists).
        let o = obj(json!({"cores": "8"}));
        assert!(LabelSelector::parse("cores>4").unwrap().matches(&o));
        assert!(!LabelSelector::parse("cores<4").unwrap().matches(&o));
        // `()` and a trailing comma list the empty value (was: no value, so
        // `in ()` matched nothing).
        let empty = obj(json!({"tier": ""}));
        assert!(LabelSelector::parse("tier in ()").unwrap().matches(&empty));
        assert!(
            LabelSelector::parse("tier in (a,)")
                .unwrap()
                .matches(&empty)
        );
        assert!(
            !LabelSelector::parse("tier in ()")
                .unwrap()
                .matches(&obj(json!({})))
        );
    }

    #[test]
    fn field_selectors_match_paths() {
        let o = obj(json!({}));
        assert!(FieldSelector::parse("metadata.name=a").unwrap().matches(&o));
        assert!(
            FieldSelector::parse("metadata.name=a,metadata.namespace==ns")
                .unwrap()
                .matches(&o)
        );
        assert!(
            !FieldSelector::parse("metadata.name!=a")
                .unwrap()
                .matches(&o)
        );
        assert!(FieldSelector::parse("spec.nodeName=").unwrap().matches(&o));
        assert!(FieldSelector::parse("nonsense").is_err());
    }
}
