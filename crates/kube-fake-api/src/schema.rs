//! CustomResourceDefinitions: installing them from YAML (each served
//! version becomes a [`ResourceInfo`] with its OpenAPI v3 schema) and
//! checking objects against the schema the way the apiextensions server
//! does before it stores them:
//!
//! - **defaulting**: a missing field (or a `null` one that is not
//!   `nullable`) with a `default` gets it, before pruning and validation
//!   (`staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting/algorithm.go`);
//! - **pruning**: fields the schema does not specify are dropped, unless
//!   `x-kubernetes-preserve-unknown-fields: true` keeps them
//!   (`staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning/algorithm.go`);
//!   `metadata` keeps ObjectMeta's fields only, on every type
//!   ([`prune_metadata`]);
//! - **validation** (`k8s.io/kube-openapi/pkg/validation/validate`, called
//!   from `apiextensions-apiserver/pkg/apiserver/validation/validation.go`):
//!   `type` (`object`, `array`, `string`, `integer`, `number`, `boolean`;
//!   `x-kubernetes-int-or-string`), `enum`, `required`, `nullable`,
//!   `minLength`/`maxLength`, `pattern`, `minimum`/`maximum` (and
//!   exclusive), `multipleOf`, `minItems`/`maxItems`,
//!   `minProperties`/`maxProperties`, the string formats `date-time`,
//!   `date`, `byte` and `uuid`, and unique items or keys of
//!   `x-kubernetes-list-type: set` and `map` lists, with the apiserver's
//!   messages: `status.phase: Unsupported value: "Queued": supported
//!   values: "New", …`, `spec.x: Invalid value: "string": spec.x in body
//!   must be of type integer: "string"`, `spec.x: Required value`,
//!   `spec.x: Too long: may not be more than 63 bytes`, `spec.l[1]:
//!   Duplicate value: {"k":"a"}`. CEL rules (`x-kubernetes-validations`)
//!   are not evaluated.
//!
//! A refused write is `422 Invalid` with the message
//! `Backup.velero.io "b1" is invalid: <error>` (several errors in
//! brackets, comma-separated), as `apierrors.NewInvalid` words it.

use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::resource::{ResourceId, ResourceInfo};

/// A CustomResourceDefinition read from YAML: the definition itself (served
/// at `apiextensions.k8s.io/v1` `customresourcedefinitions`) and, per
/// served version, the resource type and its schema.
#[derive(Debug, Clone)]
pub struct Crd {
    /// The CRD object as JSON.
    pub object: Value,
    /// Each served version: its resource type and its `openAPIV3Schema`.
    pub versions: Vec<(ResourceInfo, Option<Value>)>,
}

/// The resource type of CustomResourceDefinitions themselves.
pub fn crd_resource() -> ResourceInfo {
    ResourceInfo::cluster(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    )
    .with_status_subresource(true)
    .with_custom(false)
}

/// Parses every `CustomResourceDefinition` document of a YAML stream (other
/// kinds are skipped). Fails naming the problem when a CRD lacks its group,
/// names or versions.
pub fn parse_crds(yaml: &str) -> Result<Vec<Crd>, String> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(yaml).map_err(|e| format!("invalid YAML: {e}"))?;
    docs.into_iter()
        .filter(|d| d["kind"] == json!("CustomResourceDefinition"))
        .map(crd_from_value)
        .collect()
}

fn crd_from_value(object: Value) -> Result<Crd, String> {
    let spec = &object["spec"];
    let text = |v: &Value, what: &str| {
        v.as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| {
                format!(
                    "CustomResourceDefinition {}: {what} is missing",
                    object["metadata"]["name"]
                )
            })
    };
    let group = text(&spec["group"], "spec.group")?;
    let kind = text(&spec["names"]["kind"], "spec.names.kind")?;
    let plural = text(&spec["names"]["plural"], "spec.names.plural")?;
    let namespaced = spec["scope"] != json!("Cluster");
    let versions = spec["versions"].as_array().ok_or_else(|| {
        format!("CustomResourceDefinition {plural}.{group}: spec.versions is missing")
    })?;
    let mut out = Vec::new();
    for v in versions {
        if v["served"] == json!(false) {
            continue;
        }
        let version = text(&v["name"], "spec.versions[].name")?;
        let info = if namespaced {
            ResourceInfo::namespaced(&group, &version, &kind, &plural)
        } else {
            ResourceInfo::cluster(&group, &version, &kind, &plural)
        }
        .with_status_subresource(v["subresources"]["status"].is_object())
        .with_custom(true);
        let schema = v["schema"]["openAPIV3Schema"].clone();
        out.push((info, (!schema.is_null()).then_some(schema)));
    }
    Ok(Crd {
        object,
        versions: out,
    })
}

/// The fields of ObjectMeta: what kube-apiserver keeps of `metadata`.
const OBJECT_META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Keeps ObjectMeta's fields of `metadata` and drops its empty or `null`
/// ones (`omitempty`), as decoding into ObjectMeta and encoding it again
/// does on kube-apiserver, for built-in types and custom resources alike.
pub fn prune_metadata(object: &mut Value) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    meta.retain(|key, value| {
        OBJECT_META.contains(&key.as_str())
            && match value {
                Value::Null => false,
                Value::Array(a) => !a.is_empty(),
                Value::Object(m) => !m.is_empty(),
                Value::String(s) => !s.is_empty(),
                _ => true,
            }
    });
}

/// Prunes `object` and validates it against `schema` (see the module
/// docs); `422 Invalid` naming every offending field otherwise.
pub fn check(info: &ResourceInfo, schema: &Value, object: &mut Value) -> Result<(), ApiError> {
    let errors = problems(schema, object);
    if errors.is_empty() {
        return Ok(());
    }
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    Err(invalid(info, name, errors))
}

/// The `422 Invalid` of `errors` (one as is, several in brackets), as
/// `apierrors.NewInvalid` words it: `Backup.velero.io "b1" is invalid: ...`.
pub fn invalid(info: &ResourceInfo, name: &str, mut errors: Vec<String>) -> ApiError {
    let kind = if info.id.group.is_empty() {
        info.kind.clone()
    } else {
        format!("{}.{}", info.kind, info.id.group)
    };
    let detail = if errors.len() == 1 {
        errors.remove(0)
    } else {
        format!("[{}]", errors.join(", "))
    };
    ApiError::invalid(format!("{kind} \"{name}\" is invalid: {detail}"))
}

/// Defaults, prunes and validates `object` against `schema`: the
/// validation errors, in the apiserver's words.
pub fn problems(schema: &Value, object: &mut Value) -> Vec<String> {
    let mut errors = Vec::new();
    if let Some(root) = object.as_object_mut() {
        let mut rest = Map::new();
        for keep in ["apiVersion", "kind", "metadata"] {
            if let Some(v) = root.remove(keep) {
                rest.insert(keep.to_owned(), v);
            }
        }
        let mut body = Value::Object(std::mem::take(root));
        let mut root_schema = schema.clone();
        if let Some(props) = root_schema
            .get_mut("properties")
            .and_then(Value::as_object_mut)
        {
            for keep in ["apiVersion", "kind", "metadata"] {
                props.remove(keep);
            }
        }
        // Required at the root, these are checked where they are kept.
        if let Some(required) = root_schema
            .get_mut("required")
            .and_then(Value::as_array_mut)
        {
            required.retain(|field| !field.as_str().is_some_and(|f| rest.contains_key(f)));
        }
        walk(&root_schema, &mut body, "", &mut errors);
        if let Value::Object(m) = body {
            *root = m;
        }
        root.extend(rest);
    }
    errors
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_owned()
    } else {
        format!("{path}.{field}")
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(expected: &str, v: &Value) -> bool {
    match expected {
        "number" => v.is_number(),
        other => type_name(v) == other,
    }
}

/// Go's `%q`-like quoting of a JSON value for messages.
fn quoted(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// How Go's `%v` prints a JSON number or other value in messages.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn as_f64(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// Whether `text` is valid in `format` (the string formats kube-openapi's
/// validator checks for CRDs; others pass).
fn format_ok(format: &str, text: &str) -> bool {
    match format {
        "date-time" | "datetime" => text.parse::<jiff::Timestamp>().is_ok(),
        "date" => text.parse::<jiff::civil::Date>().is_ok() && text.len() == 10,
        "byte" => {
            let clean: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
            clean.len().is_multiple_of(4)
                && clean.iter().enumerate().all(|(i, b)| {
                    b.is_ascii_alphanumeric()
                        || *b == b'+'
                        || *b == b'/'
                        || (*b == b'=' && i + 2 >= clean.len())
                })
        }
        "uuid" => {
            let parts: Vec<&str> = text.split('-').collect();
            parts.len() == 5
                && parts
                    .iter()
                    .zip([8, 4, 4, 4, 12])
                    .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
        }
        _ => true,
    }
}

/// Whether `text` matches the ECMA/RE2 `pattern` (`None`: a pattern the
/// regex crate cannot read, not checked). Compiled patterns are kept.
fn matches_pattern(pattern: &str, text: &str) -> Option<bool> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock, PoisonError};
    static COMPILED: OnceLock<Mutex<HashMap<String, Option<regex::Regex>>>> = OnceLock::new();
    let mut compiled = COMPILED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    compiled
        .entry(pattern.to_owned())
        .or_insert_with(|| regex::Regex::new(pattern).ok())
        .as_ref()
        .map(|re| re.is_match(text))
}

/// Scalar checks of one value: lengths, pattern, format, bounds.
fn check_scalar(schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    if let Value::String(text) = value {
        let chars = text.chars().count();
        if let Some(min) = schema["minLength"].as_u64()
            && (chars as u64) < min
        {
            errors.push(format!(
                "{path}: Invalid value: {text:?}: {path} in body should be at least {min} chars long"
            ));
        }
        if let Some(max) = schema["maxLength"].as_u64()
            && (chars as u64) > max
        {
            let unit = if max == 1 { "byte" } else { "bytes" };
            errors.push(format!(
                "{path}: Too long: may not be more than {max} {unit}"
            ));
        }
        if let Some(pattern) = schema["pattern"].as_str()
            && matches_pattern(pattern, text) == Some(false)
        {
            errors.push(format!(
                "{path}: Invalid value: {text:?}: {path} in body should match '{pattern}'"
            ));
        }
        if let Some(format) = schema["format"].as_str()
            && !format_ok(format, text)
        {
            errors.push(format!(
                "{path}: Invalid value: {text:?}: {path} in body must be of type {format}: {text:?}"
            ));
        }
    }
    if let Some(number) = as_f64(value) {
        let exclusive = |key: &str| schema[key] == json!(true);
        if let Some(min) = schema.get("minimum").filter(|m| m.is_number()) {
            let bound = as_f64(min).unwrap_or(f64::MIN);
            let (bad, words) = if exclusive("exclusiveMinimum") {
                (number <= bound, "greater than")
            } else {
                (number < bound, "greater than or equal to")
            };
            if bad {
                errors.push(format!(
                    "{path}: Invalid value: {}: {path} in body should be {words} {}",
                    plain(value),
                    plain(min)
                ));
            }
        }
        if let Some(max) = schema.get("maximum").filter(|m| m.is_number()) {
            let bound = as_f64(max).unwrap_or(f64::MAX);
            let (bad, words) = if exclusive("exclusiveMaximum") {
                (number >= bound, "less than")
            } else {
                (number > bound, "less than or equal to")
            };
            if bad {
                errors.push(format!(
                    "{path}: Invalid value: {}: {path} in body should be {words} {}",
                    plain(value),
                    plain(max)
                ));
            }
        }
        if let Some(factor) = schema.get("multipleOf").and_then(as_f64)
            && factor != 0.0
            && (number / factor).fract() != 0.0
        {
            errors.push(format!(
                "{path}: Invalid value: {}: {path} in body should be a multiple of {}",
                plain(value),
                plain(&schema["multipleOf"])
            ));
        }
    }
}

/// `x-kubernetes-list-type: set` and `map`: later items equal to (or with
/// the keys of) an earlier one are duplicates
/// (`apiextensions-apiserver/pkg/apiserver/schema/listtype/validation.go`).
fn check_list_type(schema: &Value, items: &[Value], path: &str, errors: &mut Vec<String>) {
    let identities: Vec<Value> = match schema["x-kubernetes-list-type"].as_str() {
        Some("set") => items.to_vec(),
        Some("map") => {
            let keys: Vec<&str> = schema["x-kubernetes-list-map-keys"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            items
                .iter()
                .map(|item| {
                    let mut key = Map::new();
                    for field in &keys {
                        if let Some(v) = item.get(*field) {
                            key.insert((*field).to_owned(), v.clone());
                        }
                    }
                    Value::Object(key)
                })
                .collect()
        }
        _ => return,
    };
    for (i, identity) in identities.iter().enumerate() {
        if identities[..i].contains(identity) {
            errors.push(format!("{path}[{i}]: Duplicate value: {identity}"));
        }
    }
}

fn walk(schema: &Value, value: &mut Value, path: &str, errors: &mut Vec<String>) {
    let preserve = schema["x-kubernetes-preserve-unknown-fields"] == json!(true);
    let int_or_string = schema["x-kubernetes-int-or-string"] == json!(true);
    if value.is_null() {
        if schema["nullable"] != json!(true) && !preserve && schema.get("type").is_some() {
            errors.push(format!(
                "{path}: Invalid value: \"null\": {path} in body must be of type {}: \"null\"",
                schema["type"].as_str().unwrap_or_default()
            ));
        }
        return;
    }
    if int_or_string {
        if !(value.is_string() || type_name(value) == "integer") {
            errors.push(format!(
                "{path}: Invalid value: \"{}\": {path} in body must be of type integer or string: \"{}\"",
                type_name(value),
                type_name(value)
            ));
            return;
        }
    } else if let Some(expected) = schema["type"].as_str()
        && !type_matches(expected, value)
    {
        errors.push(format!(
            "{path}: Invalid value: \"{}\": {path} in body must be of type {expected}: \"{}\"",
            type_name(value),
            type_name(value)
        ));
        return;
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(quoted).collect();
        errors.push(format!(
            "{path}: Unsupported value: {}: supported values: {}",
            quoted(value),
            list.join(", ")
        ));
    }
    check_scalar(schema, value, path, errors);
    match value {
        Value::Object(map) => {
            let properties = schema["properties"].as_object();
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            // Defaults first: absent fields, and null ones that may not be null.
            for (key, property) in properties.into_iter().flatten() {
                let Some(default) = property.get("default") else {
                    continue;
                };
                let missing = match map.get(key) {
                    None => true,
                    Some(Value::Null) => property["nullable"] != json!(true),
                    Some(_) => false,
                };
                if missing {
                    map.insert(key.clone(), default.clone());
                }
            }
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                let child_path = join(path, &key);
                match (properties.and_then(|p| p.get(&key)), additional) {
                    (Some(child), _) | (None, Some(child)) => {
                        if let Some(v) = map.get_mut(&key) {
                            walk(child, v, &child_path, errors);
                        }
                    }
                    (None, None) => {
                        if !preserve {
                            map.remove(&key);
                        }
                    }
                }
            }
            if let Some(required) = schema["required"].as_array() {
                for field in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(field) {
                        errors.push(format!("{}: Required value", join(path, field)));
                    }
                }
            }
            let count = map.len() as u64;
            if let Some(min) = schema["minProperties"].as_u64()
                && count < min
            {
                errors.push(format!(
                    "{path}: Invalid value: {count}: {path} in body should have at least {min} properties"
                ));
            }
            if let Some(max) = schema["maxProperties"].as_u64()
                && count > max
            {
                let unit = if max == 1 { "item" } else { "items" };
                errors.push(format!(
                    "{path}: Too many: {count}: must have at most {max} {unit}"
                ));
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item_schema, item, &format!("{path}[{i}]"), errors);
                }
            }
            let count = items.len() as u64;
            if let Some(min) = schema["minItems"].as_u64()
                && count < min
            {
                errors.push(format!(
                    "{path}: Invalid value: {count}: {path} in body should have at least {min} items"
                ));
            }
            if let Some(max) = schema["maxItems"].as_u64()
                && count > max
            {
                let unit = if max == 1 { "item" } else { "items" };
                errors.push(format!(
                    "{path}: Too many: {count}: must have at most {max} {unit}"
                ));
            }
            check_list_type(schema, items, path, errors);
        }
        _ => {}
    }
}

/// The [`ResourceId`] of a CRD's object: `customresourcedefinitions`.
pub fn crd_id() -> ResourceId {
    crd_resource().id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_patterns_of_cluster_api_compile() {
        let key = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$";
        assert_eq!(
            matches_pattern(key, "node-role.kubernetes.io/worker"),
            Some(true)
        );
        assert_eq!(matches_pattern(key, "-bad"), Some(false));
    }

    #[test]
    fn formats_follow_kube_openapi() {
        assert!(format_ok("date-time", "2025-01-02T03:04:05Z"));
        assert!(!format_ok("date-time", "yesterday"));
        assert!(format_ok("byte", "aGVsbG8="));
        assert!(!format_ok("byte", "not base64!"));
        assert!(format_ok("uuid", "7b425a75-21ad-492a-a31d-55b367f3f25a"));
    }
}
