//! Label and field selectors as sent in `labelSelector=` / `fieldSelector=`.
//!
//! Label selector grammar (the one `kubectl` and kube-core's `Selector`
//! display produce): comma-separated requirements `key`, `!key`, `key=v`,
//! `key==v`, `key!=v`, `key in (a,b)`, `key notin (a,b)`. `!=` and `notin`
//! also match objects without the label, as on the real API server.
//!
//! Field selectors: comma-separated `path=v`, `path==v`, `path!=v` where path
//! is a dotted path into the object (`metadata.name`, `metadata.namespace`,
//! `spec.nodeName`, ...). This is more permissive than the real API server,
//! which only accepts a per-type list of fields; a missing field compares as
//! the empty string.

use serde_json::Value;

use crate::error::ApiError;

/// One label requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelRequirement {
    /// `key=value` / `key==value`.
    Equals(String, String),
    /// `key!=value` (also true when the label is absent).
    NotEquals(String, String),
    /// `key in (v1,v2)`.
    In(String, Vec<String>),
    /// `key notin (v1,v2)` (also true when the label is absent).
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

/// A parsed label selector: all requirements must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Vec<LabelRequirement>);

fn check_key(key: &str, whole: &str) -> Result<String, ApiError> {
    let key = key.trim();
    if key.is_empty()
        || key.contains(char::is_whitespace)
        || key.contains(['(', ')', ',', '=', '!'])
    {
        return Err(ApiError::bad_request(format!(
            "unable to parse requirement: invalid label key {key:?} in labelSelector {whole:?}"
        )));
    }
    Ok(key.to_owned())
}

fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

impl LabelSelector {
    /// Parses a `labelSelector` query value. Empty means "everything".
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(Self(reqs));
        }
        for part in split_top_level(s) {
            let p = part.trim();
            let req = if let Some(k) = p.strip_prefix('!') {
                LabelRequirement::DoesNotExist(check_key(k, s)?)
            } else if let Some(open) = p.find('(') {
                let Some(inner) = p[open + 1..].strip_suffix(')') else {
                    return Err(ApiError::bad_request(format!(
                        "unable to parse requirement {p:?}: missing ')' in labelSelector {s:?}"
                    )));
                };
                let head = p[..open].trim();
                let Some((key, op)) = head.rsplit_once(char::is_whitespace) else {
                    return Err(ApiError::bad_request(format!(
                        "unable to parse requirement {p:?}: expected 'key in (...)' or 'key notin (...)'"
                    )));
                };
                let values: Vec<String> = inner
                    .split(',')
                    .map(|v| v.trim().to_owned())
                    .filter(|v| !v.is_empty())
                    .collect();
                match op {
                    "in" => LabelRequirement::In(check_key(key, s)?, values),
                    "notin" => LabelRequirement::NotIn(check_key(key, s)?, values),
                    other => {
                        return Err(ApiError::bad_request(format!(
                            "unable to parse requirement {p:?}: unknown operator {other:?}"
                        )));
                    }
                }
            } else if let Some((k, v)) = p.split_once("!=") {
                LabelRequirement::NotEquals(check_key(k, s)?, v.trim().to_owned())
            } else if let Some((k, v)) = p.split_once("==") {
                LabelRequirement::Equals(check_key(k, s)?, v.trim().to_owned())
            } else if let Some((k, v)) = p.split_once('=') {
                LabelRequirement::Equals(check_key(k, s)?, v.trim().to_owned())
            } else {
                LabelRequirement::Exists(check_key(p, s)?)
            };
            reqs.push(req);
        }
        Ok(Self(reqs))
    }

    /// Whether `object`'s `metadata.labels` satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|req| match req {
            LabelRequirement::Equals(k, v) => get(k) == Some(v.as_str()),
            LabelRequirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            LabelRequirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelRequirement::NotIn(k, vs) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelRequirement::Exists(k) => get(k).is_some(),
            LabelRequirement::DoesNotExist(k) => get(k).is_none(),
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
