//! CustomResourceDefinitions: installing them from YAML (each served
//! version becomes a [`ResourceInfo`] with its OpenAPI v3 schema) and
//! checking objects against the schema the way the apiextensions server
//! does before it stores them:
//!
//! - **pruning**: fields the schema does not specify are dropped, unless
//!   `x-kubernetes-preserve-unknown-fields: true` keeps them
//!   (`staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning/algorithm.go`);
//!   `apiVersion`, `kind` and `metadata` at the root are never pruned
//!   here (the real server prunes `metadata` to ObjectMeta's fields);
//! - **validation** (`k8s.io/kube-openapi/pkg/validation/validate`, called
//!   from `apiextensions-apiserver/pkg/apiserver/validation/validation.go`):
//!   `type` (`object`, `array`, `string`, `integer`, `number`, `boolean`;
//!   `x-kubernetes-int-or-string`), `enum`, `required`, `nullable`, with
//!   the apiserver's messages: `status.phase: Unsupported value: "Queued":
//!   supported values: "New", …`, `spec.x: Invalid value: "string":
//!   spec.x in body must be of type integer: "string"`,
//!   `spec.x: Required value`. Formats, patterns, bounds and CEL rules
//!   are not checked.
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

/// Prunes `object` and validates it against `schema` (see the module
/// docs); `422 Invalid` naming every offending field otherwise.
pub fn check(info: &ResourceInfo, schema: &Value, object: &mut Value) -> Result<(), ApiError> {
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
        walk(&root_schema, &mut body, "", &mut errors);
        if let Value::Object(m) = body {
            *root = m;
        }
        root.extend(rest);
    }
    if errors.is_empty() {
        return Ok(());
    }
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let detail = if errors.len() == 1 {
        errors.remove(0)
    } else {
        format!("[{}]", errors.join(", "))
    };
    Err(ApiError::invalid(format!(
        "{}.{} \"{name}\" is invalid: {detail}",
        info.kind, info.id.group
    )))
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
    match value {
        Value::Object(map) => {
            let properties = schema["properties"].as_object();
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
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
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item_schema, item, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

/// The [`ResourceId`] of a CRD's object: `customresourcedefinitions`.
pub fn crd_id() -> ResourceId {
    crd_resource().id
}
