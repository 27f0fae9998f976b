//! Patch application and the server-side-apply approximation.
//!
//! * `application/merge-patch+json`: RFC 7386 JSON merge patch.
//! * `application/strategic-merge-patch+json`: approximated as a merge patch
//!   (lists are replaced, not merged by key; `$patch` directives are not
//!   interpreted).
//! * `application/json-patch+json`: RFC 6902 JSON patch.
//! * `application/apply-patch+yaml`: server-side apply approximated as a
//!   merge patch that creates the object when missing, plus per-leaf field
//!   ownership: applying a different value to a leaf owned by another field
//!   manager without `force=true` is a `409 Conflict`, as on a real API
//!   server. Fields the manager applied earlier but omits now are not removed,
//!   and lists are owned atomically. Updates and patches with a
//!   `fieldManager` take ownership of the leaves they change, and
//!   `metadata.managedFields[].fieldsV1` shows each manager's leaves. The body must be JSON (kube-rs sends
//!   apply patches as JSON, which is valid YAML).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::ApiError;

/// The patch flavours, chosen by the request's `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// RFC 7386 merge patch.
    Merge,
    /// Strategic merge patch (approximated as a merge patch).
    StrategicMerge,
    /// RFC 6902 JSON patch.
    Json,
    /// Server-side apply (approximated, see the module docs).
    Apply,
}

impl PatchKind {
    /// Maps a `Content-Type` header value to a patch kind (`415` otherwise).
    pub fn from_content_type(content_type: &str) -> Result<Self, ApiError> {
        let ct = content_type.split(';').next().unwrap_or_default().trim();
        match ct {
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/strategic-merge-patch+json" => Ok(Self::StrategicMerge),
            "application/json-patch+json" => Ok(Self::Json),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(Self::Apply),
            other => Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {other:?}"
                ),
            )),
        }
    }
}

/// Applies `body` (a patch of `kind`) to `current`, returning the new object.
pub fn apply_patch(kind: PatchKind, current: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let mut doc = current.clone();
    match kind {
        PatchKind::Merge | PatchKind::StrategicMerge | PatchKind::Apply => {
            let patch: Value = parse_json(body)?;
            if !patch.is_object() {
                return Err(ApiError::bad_request("a merge patch must be a JSON object"));
            }
            json_patch::merge(&mut doc, &patch);
        }
        PatchKind::Json => {
            let patch: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
            json_patch::patch(&mut doc, &patch).map_err(|e| {
                ApiError::invalid(format!("the JSON patch could not be applied: {e}"))
            })?;
        }
    }
    Ok(doc)
}

/// Parses a request body as JSON with a Kubernetes-style 400 on failure.
pub fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
}

/// Field ownership of one object: leaf JSON pointer (`/spec/holderIdentity`) → manager.
pub type Owners = BTreeMap<String, String>;

/// Paths never owned by a field manager: identity and server-set metadata.
const UNOWNED: &[&str] = &[
    "/apiVersion",
    "/kind",
    "/metadata/name",
    "/metadata/namespace",
    "/metadata/resourceVersion",
    "/metadata/managedFields",
    "/metadata/uid",
    "/metadata/creationTimestamp",
    "/metadata/generation",
    "/metadata/deletionTimestamp",
    "/metadata/deletionGracePeriodSeconds",
    "/metadata/selfLink",
];

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn unescape(seg: &str) -> String {
    seg.replace("~1", "/").replace("~0", "~")
}

/// Leaf paths of `value` as RFC 6901 JSON pointers (objects are descended,
/// everything else, lists included, is a leaf; empty objects have no
/// leaves), skipping identity and server-set metadata.
pub fn leaves(value: &Value) -> Vec<(String, &Value)> {
    fn walk<'a>(v: &'a Value, prefix: &str, out: &mut Vec<(String, &'a Value)>) {
        match v {
            // Empty objects own nothing.
            Value::Object(map) => {
                for (k, child) in map {
                    let path = format!("{prefix}/{}", escape(k));
                    if UNOWNED.contains(&path.as_str()) {
                        continue;
                    }
                    walk(child, &path, out);
                }
            }
            _ => {
                if !prefix.is_empty() {
                    out.push((prefix.to_owned(), v));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(value, "", &mut out);
    out
}

/// Server-side-apply ownership check and update: the leaves in `applied`
/// owned by another manager whose value would change conflict unless
/// `force`. On success `manager` owns every applied leaf.
pub fn claim_applied_fields(
    owners: &mut Owners,
    current: &Value,
    applied: &Value,
    manager: &str,
    force: bool,
) -> Result<(), Vec<String>> {
    let applied_leaves: Vec<(String, &Value)> = leaves(applied)
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .collect();
    if !force {
        let conflicts: Vec<String> = applied_leaves
            .iter()
            .filter(|(path, v)| {
                owners.get(path).is_some_and(|owner| owner != manager)
                    && current.pointer(path) != Some(*v)
            })
            .map(|(path, _)| {
                format!(
                    "{path} (owned by {:?})",
                    owners.get(path).cloned().unwrap_or_default()
                )
            })
            .collect();
        if !conflicts.is_empty() {
            return Err(conflicts);
        }
    }
    for (path, _) in applied_leaves {
        owners.insert(path, manager.to_owned());
    }
    Ok(())
}

/// Ownership after a non-apply write, as an `Update` operation records it
/// on a real API server: every leaf the write added or changed is owned by
/// `manager`; leaves that were removed, or changed without a manager, lose
/// their owner.
pub fn record_update(owners: &mut Owners, old: &Value, new: &Value, manager: Option<&str>) {
    owners.retain(|path, owner| {
        let before = old.pointer(path);
        let after = new.pointer(path);
        if before == after {
            return true;
        }
        match (after, manager) {
            (Some(v), Some(m)) if !v.is_null() => {
                m.clone_into(owner);
                true
            }
            _ => false,
        }
    });
    if let Some(m) = manager {
        for (path, v) in leaves(new) {
            if !v.is_null() && old.pointer(&path) != Some(v) {
                owners.insert(path, m.to_owned());
            }
        }
    }
}

/// The `fieldsV1` document (`{"f:spec": {"f:holderIdentity": {}}}`) of the
/// leaves `manager` owns.
pub fn fields_v1(owners: &Owners, manager: &str) -> Value {
    let mut root = serde_json::Map::new();
    for (path, _) in owners.iter().filter(|(_, m)| *m == manager) {
        let mut node = &mut root;
        for seg in path.split('/').skip(1) {
            let entry = node
                .entry(format!("f:{}", unescape(seg)))
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            let Value::Object(next) = entry else { break };
            node = next;
        }
    }
    Value::Object(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_null_removes_fields() {
        let cur = json!({"spec": {"a": 1, "b": 2}});
        let out = apply_patch(PatchKind::Merge, &cur, br#"{"spec":{"a":null,"c":3}}"#).unwrap();
        assert_eq!(out, json!({"spec": {"b": 2, "c": 3}}));
    }

    #[test]
    fn json_patch_test_op_failure_is_invalid() {
        let cur = json!({"spec": {"a": 1}});
        let err = apply_patch(
            PatchKind::Json,
            &cur,
            br#"[{"op":"test","path":"/spec/a","value":2}]"#,
        )
        .unwrap_err();
        assert_eq!(err.code, 422);
        let ok = apply_patch(
            PatchKind::Json,
            &cur,
            br#"[{"op":"replace","path":"/spec/a","value":2}]"#,
        )
        .unwrap();
        assert_eq!(ok, json!({"spec": {"a": 2}}));
    }

    #[test]
    fn apply_by_another_manager_conflicts_unless_forced_or_equal() {
        let mut owners = Owners::new();
        let cur = json!({"spec": {"holder": "a"}});
        claim_applied_fields(
            &mut owners,
            &cur,
            &json!({"spec": {"holder": "a"}}),
            "ma",
            false,
        )
        .unwrap();
        // same value: no conflict (shared ownership approximated as takeover)
        assert!(
            claim_applied_fields(
                &mut owners.clone(),
                &cur,
                &json!({"spec": {"holder": "a"}}),
                "mb",
                false
            )
            .is_ok()
        );
        let err = claim_applied_fields(
            &mut owners,
            &cur,
            &json!({"spec": {"holder": "b"}}),
            "mb",
            false,
        )
        .unwrap_err();
        assert_eq!(err.len(), 1);
        claim_applied_fields(
            &mut owners,
            &cur,
            &json!({"spec": {"holder": "b"}}),
            "mb",
            true,
        )
        .unwrap();
        assert_eq!(owners["/spec/holder"], "mb");
    }

    #[test]
    fn update_that_removes_a_field_drops_its_owner() {
        let mut owners = Owners::from([("/spec/holder".to_owned(), "ma".to_owned())]);
        record_update(
            &mut owners,
            &json!({"spec": {"holder": "a"}}),
            &json!({"spec": {}}),
            Some("mb"),
        );
        assert!(owners.is_empty());
    }

    #[test]
    fn updates_own_what_they_change_and_render_as_fields_v1() {
        let mut owners = Owners::new();
        let old = json!({"metadata": {"labels": {"a": "1"}}, "status": {}});
        let new = json!({"metadata": {"labels": {"a": "1", "app.kubernetes.io/name": "x"}, "generation": 2}, "status": {"queuePosition": 3}});
        record_update(&mut owners, &old, &new, Some("queue"));
        assert_eq!(
            fields_v1(&owners, "queue"),
            json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/name": {}}}, "f:status": {"f:queuePosition": {}}})
        );
        // Keys with dots and slashes are addressed exactly.
        let applied = json!({"metadata": {"labels": {"app.kubernetes.io/name": "y"}}});
        let err = claim_applied_fields(&mut owners, &new, &applied, "other", false).unwrap_err();
        assert_eq!(
            err,
            vec!["/metadata/labels/app.kubernetes.io~1name (owned by \"queue\")".to_string()]
        );
    }

    #[test]
    fn unknown_content_type_is_415() {
        assert_eq!(
            PatchKind::from_content_type("text/plain").unwrap_err().code,
            415
        );
        assert_eq!(
            PatchKind::from_content_type("application/merge-patch+json").unwrap(),
            PatchKind::Merge
        );
    }
}
