//! Selectors as controllers and the scheduler parse them at run time:
//! apimachinery's `labels.NewRequirement`, `metav1.LabelSelectorAsSelector`
//! and component-helpers' node selector requirement conversion, with their
//! `field.Error` messages (`values[0][zone]: Invalid value: "-a": …`).
//!
//! These differ from what the API server says about the same object when it
//! validates it (see [`validate_label_selector`](crate::validate_label_selector)):
//! other paths, other wording. A program that reports what kube-scheduler or
//! a controller would log uses this module.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::core::v1::NodeSelectorRequirement;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::{Expression, Selector};

use crate::names::{validate_label_value, validate_qualified_name};

/// One `field.Error`: the field path (empty for errors apimachinery creates
/// with `fmt.Errorf`) and the body (`Invalid value: "x": detail`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FieldError {
    /// Field path, e.g. `values[0][zone]` or `[0].matchExpressions[1].key`.
    pub field: String,
    /// What apimachinery prints after the path.
    pub body: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.body)
        } else {
            write!(f, "{}: {}", self.field, self.body)
        }
    }
}

impl FieldError {
    /// `field.Invalid(path, value, detail)` for a string value.
    fn invalid_string(field: String, value: &str, detail: &str) -> Self {
        Self {
            field,
            body: format!("Invalid value: {}: {detail}", go_quote(value)),
        }
    }

    /// `field.Invalid(path, values, detail)` for a `[]string` value.
    fn invalid_list(field: String, values: Option<&[String]>, detail: &str) -> Self {
        Self {
            field,
            body: format!("Invalid value: {}: {detail}", go_string_slice(values)),
        }
    }

    /// `field.NotSupported(path, value, valid)`.
    fn not_supported(field: String, value: &str, valid: &[&str]) -> Self {
        let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
        Self {
            field,
            body: format!(
                "Unsupported value: {}: supported values: {}",
                go_quote(value),
                quoted.join(", ")
            ),
        }
    }

    /// An error apimachinery builds with `fmt.Errorf` (no field path).
    pub(crate) fn plain(body: String) -> Self {
        Self {
            field: String::new(),
            body,
        }
    }
}

/// A selector that cannot be parsed, printed the way apimachinery's
/// `errors.NewAggregate` prints it: one message alone, several (duplicates
/// dropped) as `[first, second]`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", aggregate(.errors))]
#[non_exhaustive]
pub struct ParseError {
    /// Every problem, in the order apimachinery finds them.
    pub errors: Vec<FieldError>,
}

impl ParseError {
    /// An error of the given problems (at least one).
    pub fn new(errors: Vec<FieldError>) -> Self {
        Self { errors }
    }

    /// Several errors as one, flattened (`errors.NewAggregate` of aggregates).
    pub fn flatten(errors: impl IntoIterator<Item = ParseError>) -> Self {
        Self {
            errors: errors.into_iter().flat_map(|e| e.errors).collect(),
        }
    }
}

/// `errors.NewAggregate(...).Error()`.
fn aggregate(errors: &[FieldError]) -> String {
    let mut seen = BTreeSet::new();
    let mut messages = Vec::new();
    for e in errors {
        let message = e.to_string();
        if seen.insert(message.clone()) {
            messages.push(message);
        }
    }
    match messages.len() {
        1 => messages.swap_remove(0),
        _ => format!("[{}]", messages.join(", ")),
    }
}

/// Go's `%q` for the strings found in selectors: double quotes, with `"`,
/// `\` and control characters escaped.
pub fn go_quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%#v` of a `[]string`: `[]string(nil)` when absent,
/// `[]string{"a", "b"}` otherwise.
fn go_string_slice(values: Option<&[String]>) -> String {
    match values {
        None => "[]string(nil)".to_owned(),
        Some(values) => {
            let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
            format!("[]string{{{}}}", quoted.join(", "))
        }
    }
}

/// `selection.Operator` values a [`Requirement`] is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `in`: key present with one of the values.
    In,
    /// `notin`: key absent or with none of the values.
    NotIn,
    /// `=` or `==`: key present with the one value (a `matchLabels` entry).
    Equals,
    /// `!=`: key absent or with another value (only in a selector's text
    /// form, [`parse_label_selector`](crate::parse_label_selector)).
    NotEquals,
    /// `exists`.
    Exists,
    /// `!`: key absent.
    DoesNotExist,
    /// `gt`: key present and its value, as an integer, greater.
    GreaterThan,
    /// `lt`: key present and its value, as an integer, less.
    LessThan,
}

/// What a parsed [`Requirement`] tests.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Test {
    In(BTreeSet<String>),
    NotIn(BTreeSet<String>),
    Exists,
    DoesNotExist,
    GreaterThan(i64),
    LessThan(i64),
}

/// A parsed label requirement (`labels.Requirement`): a key, an operator
/// and its values, checked by [`Requirement::new`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    test: Test,
}

impl Requirement {
    /// `labels.NewRequirement(key, op, values, field.WithPath(path))`:
    /// every problem with the key, the number of values, `Gt`/`Lt` integers
    /// and each value's label syntax, in apimachinery's order and words.
    /// `path` prefixes the field paths (empty: none); `values` is `None`
    /// when the list is absent (Go's nil slice).
    pub fn new(
        path: &str,
        key: &str,
        operator: Operator,
        values: Option<&[String]>,
    ) -> Result<Self, ParseError> {
        let mut errors = Vec::new();
        let key_errors = validate_qualified_name(key);
        if !key_errors.is_empty() {
            errors.push(FieldError::invalid_string(
                child(path, "key"),
                key,
                &key_errors.join("; "),
            ));
        }
        let list = values.unwrap_or_default();
        let values_path = child(path, "values");
        let count_problem = match operator {
            Operator::In | Operator::NotIn if list.is_empty() => {
                Some("for 'in', 'notin' operators, values set can't be empty")
            }
            Operator::Equals | Operator::NotEquals if list.len() != 1 => {
                Some("exact-match compatibility requires one single value")
            }
            Operator::Exists | Operator::DoesNotExist if !list.is_empty() => {
                Some("values set must be empty for exists and does not exist")
            }
            Operator::GreaterThan | Operator::LessThan if list.len() != 1 => {
                Some("for 'Gt', 'Lt' operators, exactly one value is required")
            }
            _ => None,
        };
        if let Some(detail) = count_problem {
            errors.push(FieldError::invalid_list(
                values_path.clone(),
                values,
                detail,
            ));
        }
        let mut bound = None;
        if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
            for (i, value) in list.iter().enumerate() {
                match value.parse::<i64>() {
                    Ok(n) => bound = bound.or(Some(n)),
                    Err(_) => errors.push(FieldError::invalid_string(
                        format!("{values_path}[{i}]"),
                        value,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )),
                }
            }
        }
        for (i, value) in list.iter().enumerate() {
            let value_errors = validate_label_value(value);
            if !value_errors.is_empty() {
                errors.push(FieldError::invalid_string(
                    format!("{values_path}[{i}][{key}]"),
                    value,
                    &value_errors.join("; "),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(ParseError::new(errors));
        }
        let set = || list.iter().cloned().collect::<BTreeSet<_>>();
        let test = match (operator, bound) {
            (Operator::In | Operator::Equals, _) => Test::In(set()),
            (Operator::NotIn | Operator::NotEquals, _) => Test::NotIn(set()),
            (Operator::Exists, _) => Test::Exists,
            (Operator::DoesNotExist, _) => Test::DoesNotExist,
            (Operator::GreaterThan, Some(n)) => Test::GreaterThan(n),
            (Operator::LessThan, Some(n)) => Test::LessThan(n),
            // A comparison always has exactly one integer here.
            (Operator::GreaterThan | Operator::LessThan, None) => Test::In(BTreeSet::new()),
        };
        Ok(Self {
            key: key.to_owned(),
            test,
        })
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// `Requirement.Matches`: `In` needs the key with a listed value,
    /// `NotIn` the key absent or unlisted, `Gt`/`Lt` the key present with a
    /// base-10 integer value on the right side of the bound.
    #[inline]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_value(labels.get(&self.key).map(String::as_str))
    }

    /// [`Requirement::matches`] given the value of [`Requirement::key`]
    /// (`None`: the key is absent), for labels held in another map (e.g.
    /// the `metadata.labels` of a JSON object).
    #[inline]
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        match &self.test {
            Test::In(set) => value.is_some_and(|v| set.contains(v)),
            Test::NotIn(set) => value.is_none_or(|v| !set.contains(v)),
            Test::Exists => value.is_some(),
            Test::DoesNotExist => value.is_none(),
            Test::GreaterThan(n) => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Test::LessThan(n) => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        }
    }

    /// As a kube-core expression (not for `Gt`/`Lt`, which kube-core lacks).
    fn to_expression(&self) -> Option<Expression> {
        let key = self.key.clone();
        Some(match &self.test {
            Test::In(set) => Expression::In(key, set.clone()),
            Test::NotIn(set) => Expression::NotIn(key, set.clone()),
            Test::Exists => Expression::Exists(key),
            Test::DoesNotExist => Expression::DoesNotExist(key),
            Test::GreaterThan(_) | Test::LessThan(_) => return None,
        })
    }
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// `metav1.LabelSelectorAsSelector` for a present selector: `{}` selects
/// everything; each `matchLabels` entry (in key order; Go's map order is
/// random) and then each `matchExpressions` entry becomes a requirement, and
/// the first one that does not parse is the error. A `null` selector selects
/// nothing; that is the caller's business.
pub fn label_selector_as_selector(selector: &LabelSelector) -> Result<Selector, ParseError> {
    let mut expressions = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        let values = [value.clone()];
        let requirement = Requirement::new("", key, Operator::Equals, Some(&values))?;
        expressions.extend(requirement.to_expression());
    }
    for requirement in selector.match_expressions.iter().flatten() {
        let operator = match requirement.operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => {
                return Err(ParseError::new(vec![FieldError::plain(format!(
                    "{} is not a valid label selector operator",
                    go_quote(other)
                ))]));
            }
        };
        // `append([]string(nil), values...)`: an empty list is nil.
        let values = requirement.values.as_deref().filter(|v| !v.is_empty());
        let parsed = Requirement::new("", &requirement.key, operator, values)?;
        expressions.extend(parsed.to_expression());
    }
    Ok(expressions.into_iter().collect())
}

/// `metav1.FormatLabelSelector` (apimachinery `pkg/apis/meta/v1/helpers.go`):
/// a selector as people read it, `app=web,tier in (a,b),!legacy`, the
/// requirements sorted by key, each `matchLabels` entry as `key=value`, the
/// values of `in` and `notin` sorted; `<none>` for a null or empty selector
/// and `<error>` for one that does not parse.
pub fn format_label_selector(selector: Option<&LabelSelector>) -> String {
    let Some(selector) = selector else {
        return "<none>".to_owned();
    };
    if label_selector_as_selector(selector).is_err() {
        return "<error>".to_owned();
    }
    let mut requirements: Vec<(&str, String)> = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        requirements.push((key, format!("{key}={value}")));
    }
    for requirement in selector.match_expressions.iter().flatten() {
        let key = requirement.key.as_str();
        let mut values: Vec<&str> = requirement
            .values
            .iter()
            .flatten()
            .map(String::as_str)
            .collect();
        values.sort_unstable();
        let text = match requirement.operator.as_str() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            _ => format!("!{key}"),
        };
        requirements.push((key, text));
    }
    requirements.sort_by(|a, b| a.0.cmp(b.0));
    let text: Vec<String> = requirements.into_iter().map(|(_, text)| text).collect();
    if text.is_empty() {
        "<none>".to_owned()
    } else {
        text.join(",")
    }
}

/// Node selector operators, as component-helpers lists them.
const NODE_SELECTOR_OPERATORS: [&str; 6] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];

/// component-helpers' `nodeSelectorRequirementsAsSelector` for one
/// `matchExpressions` entry at `path` (e.g. `[0].matchExpressions[1]`): an
/// unknown operator is `Unsupported value`, anything else is
/// [`Requirement::new`]'s verdict.
pub fn node_selector_requirement(
    path: &str,
    requirement: &NodeSelectorRequirement,
) -> Result<Requirement, ParseError> {
    let operator = match requirement.operator.as_str() {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        "Gt" => Operator::GreaterThan,
        "Lt" => Operator::LessThan,
        other => {
            return Err(ParseError::new(vec![FieldError::not_supported(
                child(path, "operator"),
                other,
                &NODE_SELECTOR_OPERATORS,
            )]));
        }
    };
    Requirement::new(
        path,
        &requirement.key,
        operator,
        requirement.values.as_deref(),
    )
}

/// A parsed `matchFields` entry: a field (only `metadata.name` exists for
/// Nodes) equal or not equal to one value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    /// The field key.
    pub key: String,
    /// The one value.
    pub value: String,
    /// `In` (equal) or `NotIn` (not equal).
    pub equal: bool,
}

impl FieldRequirement {
    /// Whether the fields satisfy it (`fields.OneTermEqualSelector` /
    /// `OneTermNotEqualSelector`: a missing field reads as `""`).
    pub fn matches(&self, fields: &BTreeMap<&str, &str>) -> bool {
        self.matches_value(fields.get(self.key.as_str()).copied())
    }

    /// [`FieldRequirement::matches`] given the value of the field (`None`:
    /// missing, read as `""`).
    #[inline]
    pub fn matches_value(&self, actual: Option<&str>) -> bool {
        (actual.unwrap_or("") == self.value) == self.equal
    }
}

/// component-helpers' `nodeSelectorRequirementsAsFieldSelector` for one
/// `matchFields` entry at `path`: `In` or `NotIn` with exactly one value.
pub fn node_selector_field_requirement(
    path: &str,
    requirement: &NodeSelectorRequirement,
) -> Result<FieldRequirement, ParseError> {
    let equal = match requirement.operator.as_str() {
        "In" => true,
        "NotIn" => false,
        other => {
            return Err(ParseError::new(vec![FieldError::not_supported(
                child(path, "operator"),
                other,
                &["In", "NotIn"],
            )]));
        }
    };
    match requirement.values.as_deref() {
        Some([value]) => Ok(FieldRequirement {
            key: requirement.key.clone(),
            value: value.clone(),
            equal,
        }),
        values => Err(ParseError::new(vec![FieldError::invalid_list(
            child(path, "values"),
            values,
            "must have one element",
        )])),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    use kube::core::SelectorExt;

    use super::*;

    fn expression(key: &str, operator: &str, values: Option<&[&str]>) -> LabelSelector {
        LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.to_owned(),
                operator: operator.to_owned(),
                values: values.map(|v| v.iter().map(|s| (*s).to_owned()).collect()),
            }]),
            ..LabelSelector::default()
        }
    }

    fn error(selector: &LabelSelector) -> String {
        label_selector_as_selector(selector)
            .unwrap_err()
            .to_string()
    }

    const VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn label_selector_errors_are_apimachinery_texts() {
        assert_eq!(
            error(&expression("foo", "In", Some(&["{{.bad.value.}}"]))),
            format!("values[0][foo]: Invalid value: \"{{{{.bad.value.}}}}\": {VALUE_RULE}")
        );
        assert_eq!(
            error(&expression("foo", "In", None)),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            error(&expression("foo", "In", Some(&[]))),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            error(&expression("foo", "Exists", Some(&["x"]))),
            "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist"
        );
        assert_eq!(
            error(&expression("foo", "Gt", Some(&["1"]))),
            "\"Gt\" is not a valid label selector operator"
        );
        assert_eq!(
            error(&expression("a b", "In", Some(&["-x"]))),
            format!(
                "[key: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), values[0][a b]: Invalid value: \"-x\": {VALUE_RULE}]"
            )
        );
        let labels = LabelSelector {
            match_labels: Some(BTreeMap::from([("zone".to_owned(), "-a".to_owned())])),
            ..LabelSelector::default()
        };
        assert_eq!(
            error(&labels),
            format!("values[0][zone]: Invalid value: \"-a\": {VALUE_RULE}")
        );
    }

    #[test]
    fn converted_selectors_match_like_apimachinery() {
        let everything = label_selector_as_selector(&LabelSelector::default()).unwrap();
        assert!(everything.matches(&BTreeMap::new()));
        let not_in = label_selector_as_selector(&expression("a", "NotIn", Some(&["x"]))).unwrap();
        assert!(not_in.matches(&BTreeMap::new()));
        assert!(!not_in.matches(&BTreeMap::from([("a".to_owned(), "x".to_owned())])));
    }

    fn node_requirement(operator: &str, values: Option<&[&str]>) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: "cores".to_owned(),
            operator: operator.to_owned(),
            values: values.map(|v| v.iter().map(|s| (*s).to_owned()).collect()),
        }
    }

    #[test]
    fn node_requirements_parse_with_paths_and_compare_integers() {
        let gt = node_selector_requirement(
            "[0].matchExpressions[0]",
            &node_requirement("Gt", Some(&["4"])),
        )
        .unwrap();
        let labels = |v: &str| BTreeMap::from([("cores".to_owned(), v.to_owned())]);
        assert!(gt.matches(&labels("8")));
        assert!(gt.matches(&labels("+8")));
        assert!(!gt.matches(&labels("4")));
        assert!(!gt.matches(&labels("eight")));
        assert!(!gt.matches(&BTreeMap::new()));
        assert_eq!(
            node_selector_requirement(
                "[0].matchExpressions[0]",
                &node_requirement("Lt", Some(&["x"]))
            )
            .unwrap_err()
            .to_string(),
            "[0].matchExpressions[0].values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            node_selector_requirement(
                "[0].matchExpressions[0]",
                &node_requirement("Gt", Some(&["1", "2"]))
            )
            .unwrap_err()
            .to_string(),
            "[0].matchExpressions[0].values: Invalid value: []string{\"1\", \"2\"}: for 'Gt', 'Lt' operators, exactly one value is required"
        );
        assert_eq!(
            node_selector_requirement("[1].matchExpressions[2]", &node_requirement("Near", None))
                .unwrap_err()
                .to_string(),
            "[1].matchExpressions[2].operator: Unsupported value: \"Near\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\""
        );
    }

    #[test]
    fn field_requirements_need_one_value_and_in_or_not_in() {
        let name = |operator: &str, values: Option<&[&str]>| NodeSelectorRequirement {
            key: "metadata.name".to_owned(),
            operator: operator.to_owned(),
            values: values.map(|v| v.iter().map(|s| (*s).to_owned()).collect()),
        };
        let fields = BTreeMap::from([("metadata.name", "n1")]);
        assert!(
            node_selector_field_requirement("p", &name("In", Some(&["n1"])))
                .unwrap()
                .matches(&fields)
        );
        assert!(
            !node_selector_field_requirement("p", &name("NotIn", Some(&["n1"])))
                .unwrap()
                .matches(&fields)
        );
        assert_eq!(
            node_selector_field_requirement("p", &name("In", Some(&["a", "b"])))
                .unwrap_err()
                .to_string(),
            "p.values: Invalid value: []string{\"a\", \"b\"}: must have one element"
        );
        assert_eq!(
            node_selector_field_requirement("p", &name("Exists", None))
                .unwrap_err()
                .to_string(),
            "p.operator: Unsupported value: \"Exists\": supported values: \"In\", \"NotIn\""
        );
    }

    #[test]
    fn a_selector_is_formatted_as_apimachinery_formats_it() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
        let expression = |key: &str, operator: &str, values: &[&str]| LabelSelectorRequirement {
            key: key.to_owned(),
            operator: operator.to_owned(),
            values: Some(values.iter().map(|v| (*v).to_owned()).collect()),
        };
        let selector = LabelSelector {
            match_labels: Some([("app".to_owned(), "web".to_owned())].into()),
            match_expressions: Some(vec![
                expression("zone", "NotIn", &["b", "a"]),
                expression("legacy", "DoesNotExist", &[]),
                expression("tier", "In", &["front", "back"]),
                expression("canary", "Exists", &[]),
            ]),
        };
        assert_eq!(
            format_label_selector(Some(&selector)),
            "app=web,canary,!legacy,tier in (back,front),zone notin (a,b)"
        );
        assert_eq!(format_label_selector(None), "<none>");
        assert_eq!(
            format_label_selector(Some(&LabelSelector::default())),
            "<none>"
        );
        let bad = LabelSelector {
            match_expressions: Some(vec![expression("k", "Near", &["x"])]),
            ..LabelSelector::default()
        };
        assert_eq!(format_label_selector(Some(&bad)), "<error>");
    }
}
