//! Patch application and the server-side-apply approximation.
//!
//! * `application/merge-patch+json`: RFC 7386 JSON merge patch.
//! * `application/strategic-merge-patch+json`: strategic merge as
//!   `k8s.io/apimachinery/pkg/util/strategicpatch` does it, with the list
//!   strategies of ObjectMeta, which every kind shares: `finalizers` merge
//!   as a set of strings, `ownerReferences` merge by `uid`, in the order the
//!   real merge gives (the patch's items, with the server's other items
//!   placed by their order on the server). The directives `$patch`
//!   (`replace`, `delete`, `merge` in maps; `replace`, `delete` in merged
//!   lists), `$retainKeys`, `$deleteFromPrimitiveList/<field>` and
//!   `$setElementOrder/<field>` are interpreted. Other lists (a Pod's
//!   `containers`, a Node's `taints`, ...) are replaced, as a merge patch
//!   replaces them; kube-apiserver merges those by their keys too.
//! * `application/json-patch+json`: RFC 6902 JSON patch.
//! * `application/apply-patch+yaml`: server-side apply approximated as a
//!   merge patch that creates the object when missing, plus per-leaf field
//!   ownership, as on a real API server: applying a different value to a
//!   leaf owned by another field manager without `force=true` is a
//!   `409 Conflict`; applying the value a leaf has shares its ownership;
//!   a leaf the manager applied earlier but omits now loses that manager,
//!   and is removed when no manager owns it any more. Lists are owned
//!   atomically (kube-apiserver merges `x-kubernetes-list-type: map` and
//!   `set` lists item by item). Updates and patches with a `fieldManager`
//!   take ownership of the leaves they change, and
//!   `metadata.managedFields[].fieldsV1` shows each manager's leaves. The
//!   body must be JSON (kube-rs sends apply patches as JSON, which is valid
//!   YAML).

use std::collections::{BTreeMap, BTreeSet};

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
        PatchKind::StrategicMerge => {
            let patch: Value = parse_json(body)?;
            let (Value::Object(original), Value::Object(patch)) = (&doc, &patch) else {
                return Err(ApiError::bad_request("a merge patch must be a JSON object"));
            };
            doc = Value::Object(
                strategic_merge_map(original, patch, &mut Vec::new())?.unwrap_or_default(),
            );
        }
        PatchKind::Merge | PatchKind::Apply => {
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

/// How a list merges in a strategic merge patch: `None` for lists that are
/// replaced; `Some(None)` for lists of strings merged as a set;
/// `Some(Some(key))` for lists of objects merged by `key`.
fn list_strategy(path: &[String]) -> Option<Option<&'static str>> {
    match path {
        [meta, field] if meta == "metadata" && field == "finalizers" => Some(None),
        [meta, field] if meta == "metadata" && field == "ownerReferences" => Some(Some("uid")),
        _ => None,
    }
}

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

fn bad_directive(value: &Value) -> ApiError {
    ApiError::bad_request(format!("Unknown patch type: {value}"))
}

/// Strategic merge of `patch` into the map `original` at `path`; `None`
/// when a `$patch: delete` directive removes the map.
fn strategic_merge_map(
    original: &serde_json::Map<String, Value>,
    patch: &serde_json::Map<String, Value>,
    path: &mut Vec<String>,
) -> Result<Option<serde_json::Map<String, Value>>, ApiError> {
    match patch.get(DIRECTIVE) {
        None => {}
        Some(Value::String(d)) if d == "merge" => {}
        Some(Value::String(d)) if d == "delete" => return Ok(None),
        Some(Value::String(d)) if d == "replace" => {
            let mut replaced = patch.clone();
            replaced.remove(DIRECTIVE);
            return Ok(Some(replaced));
        }
        Some(other) => return Err(bad_directive(other)),
    }
    let mut result = original.clone();
    if let Some(keep) = patch.get(RETAIN_KEYS).and_then(Value::as_array) {
        result.retain(|k, _| {
            keep.iter().any(|kept| kept.as_str() == Some(k)) || patch.contains_key(k)
        });
    }
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST)
            && let (Some(Value::Array(list)), Value::Array(remove)) = (result.get_mut(field), value)
        {
            list.retain(|item| !remove.contains(item));
        }
    }
    for (key, value) in patch {
        if key.starts_with('$') {
            continue;
        }
        path.push(key.clone());
        let merged = match (result.get(key), value) {
            (_, Value::Null) => None,
            (Some(Value::Object(o)), Value::Object(p)) => {
                strategic_merge_map(o, p, path)?.map(Value::Object)
            }
            (None | Some(_), Value::Object(p)) => {
                strategic_merge_map(&serde_json::Map::new(), p, path)?.map(Value::Object)
            }
            (current, Value::Array(p)) => match list_strategy(path) {
                Some(merge_key) => {
                    let empty = Vec::new();
                    let original = match current {
                        Some(Value::Array(o)) => o,
                        _ => &empty,
                    };
                    let order = patch
                        .get(&format!("{SET_ELEMENT_ORDER}{key}"))
                        .and_then(Value::as_array);
                    Some(Value::Array(strategic_merge_list(
                        original, p, merge_key, order, path,
                    )?))
                }
                None => Some(value.clone()),
            },
            (_, other) => Some(other.clone()),
        };
        path.pop();
        match merged {
            Some(v) => {
                result.insert(key.clone(), v);
            }
            None => {
                result.remove(key);
            }
        }
    }
    Ok(Some(result))
}

/// The identity of a list item: its merge key's value, or the item.
fn identity<'a>(item: &'a Value, merge_key: Option<&str>) -> Option<&'a Value> {
    match merge_key {
        Some(key) => item.get(key),
        None => Some(item),
    }
}

fn position(list: &[Value], item: &Value, merge_key: Option<&str>) -> Option<usize> {
    let id = identity(item, merge_key)?;
    list.iter().position(|x| identity(x, merge_key) == Some(id))
}

/// `mergeSlice` and `normalizeElementOrder` of the real strategic merge.
fn strategic_merge_list(
    original: &[Value],
    patch: &[Value],
    merge_key: Option<&str>,
    order: Option<&Vec<Value>>,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, ApiError> {
    let mut merged: Vec<Value> = original.to_vec();
    let mut patch_items: Vec<Value> = Vec::new();
    match merge_key {
        None => {
            for item in patch {
                if !merged.contains(item) {
                    merged.push(item.clone());
                }
                patch_items.push(item.clone());
            }
        }
        Some(key) => {
            for item in patch {
                let Value::Object(fields) = item else {
                    return Err(ApiError::bad_request(format!(
                        "the list at {} must hold objects",
                        path.join(".")
                    )));
                };
                match fields.get(DIRECTIVE) {
                    Some(Value::String(d)) if d == "replace" => {
                        let rest: Vec<Value> = patch
                            .iter()
                            .filter(|i| i.get(DIRECTIVE).is_none())
                            .cloned()
                            .collect();
                        return Ok(rest);
                    }
                    Some(Value::String(d)) if d == "delete" => {
                        let id = fields.get(key).ok_or_else(|| {
                            ApiError::bad_request(format!(
                                "map: {item} does not contain declared merge key: {key}"
                            ))
                        })?;
                        merged.retain(|x| x.get(key) != Some(id));
                        continue;
                    }
                    Some(other) => return Err(bad_directive(other)),
                    None => {}
                }
                if !fields.contains_key(key) {
                    return Err(ApiError::bad_request(format!(
                        "map: {item} does not contain declared merge key: {key}"
                    )));
                }
                match position(&merged, item, merge_key) {
                    Some(at) => {
                        if let Value::Object(existing) = &merged[at] {
                            let existing = existing.clone();
                            merged[at] = Value::Object(
                                strategic_merge_map(&existing, fields, path)?.unwrap_or_default(),
                            );
                        }
                    }
                    None => merged.push(item.clone()),
                }
                patch_items.push(item.clone());
            }
        }
    }
    let patch_order: &[Value] = order.map_or(&patch_items, |o| o.as_slice());
    let (mut from_patch, mut server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|item| position(patch_order, item, merge_key).is_some());
    from_patch.sort_by_key(|item| position(patch_order, item, merge_key));
    server_only.sort_by_key(|item| position(original, item, merge_key));
    // mergeSortedSlice: a server-only item goes before a patch item when
    // both are on the server and it comes first there.
    let mut out = Vec::with_capacity(from_patch.len() + server_only.len());
    let (mut left, mut right) = (
        server_only.into_iter().peekable(),
        from_patch.into_iter().peekable(),
    );
    loop {
        match (left.peek(), right.peek()) {
            (Some(l), Some(r)) => {
                let first = match (
                    position(original, l, merge_key),
                    position(original, r, merge_key),
                ) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                };
                let next = if first { left.next() } else { right.next() };
                out.extend(next);
            }
            (Some(_), None) => out.extend(left.next()),
            (None, Some(_)) => out.extend(right.next()),
            (None, None) => break,
        }
    }
    Ok(out)
}

/// Parses a request body as JSON with a Kubernetes-style 400 on failure.
pub fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
}

/// Field ownership of one object: leaf JSON pointer (`/spec/holderIdentity`)
/// → the managers owning it.
pub type Owners = BTreeMap<String, BTreeSet<String>>;

/// A leaf an apply would change that another manager owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The leaf, as a JSON pointer.
    pub path: String,
    /// The manager owning it.
    pub manager: String,
}

/// The leaf as structured-merge-diff prints a field path (`.data.owner`).
pub fn field_path(pointer: &str) -> String {
    pointer
        .split('/')
        .skip(1)
        .map(|segment| format!(".{}", unescape(segment)))
        .collect()
}

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

/// Server-side-apply ownership check and update. The leaves in `applied`
/// whose value would change and that another manager owns conflict
/// unless `force` (which takes them from their owners). On success
/// `manager` owns every applied leaf (sharing those whose value stays with
/// their other owners) and no longer owns the leaves it omits; the
/// returned leaves are owned by nobody now and are to be removed from the
/// object.
pub fn claim_applied_fields(
    owners: &mut Owners,
    current: &Value,
    applied: &Value,
    manager: &str,
    force: bool,
) -> Result<Vec<String>, Vec<Conflict>> {
    let applied_leaves: BTreeMap<String, &Value> = leaves(applied)
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .collect();
    if !force {
        let conflicts: Vec<Conflict> = applied_leaves
            .iter()
            .filter(|(path, v)| current.pointer(path) != Some(**v))
            .flat_map(|(path, _)| {
                owners
                    .get(path)
                    .into_iter()
                    .flatten()
                    .filter(|owner| *owner != manager)
                    .map(|owner| Conflict {
                        path: path.clone(),
                        manager: owner.clone(),
                    })
            })
            .collect();
        if !conflicts.is_empty() {
            return Err(conflicts);
        }
    }
    for (path, value) in &applied_leaves {
        let set = owners.entry(path.clone()).or_default();
        if current.pointer(path) != Some(*value) {
            set.clear();
        }
        set.insert(manager.to_owned());
    }
    let mut removed = Vec::new();
    for (path, set) in owners.iter_mut() {
        if !applied_leaves.contains_key(path) && set.remove(manager) && set.is_empty() {
            removed.push(path.clone());
        }
    }
    owners.retain(|_, set| !set.is_empty());
    Ok(removed)
}

/// Removes the leaf at `pointer` from `object`, and the objects it leaves
/// empty (but the root and `metadata`).
pub fn remove_leaf(object: &mut Value, pointer: &str) {
    let segments: Vec<String> = pointer.split('/').skip(1).map(unescape).collect();
    fn walk(node: &mut Value, segments: &[String], depth: usize) {
        let Some((first, rest)) = segments.split_first() else {
            return;
        };
        let Some(map) = node.as_object_mut() else {
            return;
        };
        if rest.is_empty() {
            map.remove(first);
            return;
        }
        if let Some(child) = map.get_mut(first) {
            walk(child, rest, depth + 1);
            let empty = child.as_object().is_some_and(serde_json::Map::is_empty);
            if empty && !(depth == 0 && first == "metadata") {
                map.remove(first);
            }
        }
    }
    walk(object, &segments, 0);
}

/// Ownership after a non-apply write, as an `Update` operation records it
/// on a real API server: every leaf the write added or changed is owned by
/// `manager` alone; leaves that were removed, or changed without a
/// manager, lose their owners.
pub fn record_update(owners: &mut Owners, old: &Value, new: &Value, manager: Option<&str>) {
    owners.retain(|path, set| {
        let before = old.pointer(path);
        let after = new.pointer(path);
        if before == after {
            return true;
        }
        match (after, manager) {
            (Some(v), Some(m)) if !v.is_null() => {
                *set = BTreeSet::from([m.to_owned()]);
                true
            }
            _ => false,
        }
    });
    if let Some(m) = manager {
        for (path, v) in leaves(new) {
            if !v.is_null() && old.pointer(&path) != Some(v) {
                owners.insert(path, BTreeSet::from([m.to_owned()]));
            }
        }
    }
}

/// The `fieldsV1` document (`{"f:spec": {"f:holderIdentity": {}}}`) of the
/// leaves `manager` owns.
pub fn fields_v1(owners: &Owners, manager: &str) -> Value {
    let mut root = serde_json::Map::new();
    for (path, _) in owners.iter().filter(|(_, m)| m.contains(manager)) {
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
        // The same value: no conflict, the ownership is shared.
        let mut shared = owners.clone();
        claim_applied_fields(
            &mut shared,
            &cur,
            &json!({"spec": {"holder": "a"}}),
            "mb",
            false,
        )
        .unwrap();
        assert_eq!(shared["/spec/holder"].len(), 2);
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
        assert_eq!(owners["/spec/holder"], BTreeSet::from(["mb".to_owned()]));
        // What mb omits now, nobody owns: it is to be removed.
        let removed = claim_applied_fields(
            &mut owners,
            &json!({"spec": {"holder": "b"}}),
            &json!({"spec": {"other": 1}}),
            "mb",
            false,
        )
        .unwrap();
        assert_eq!(removed, ["/spec/holder"]);
        let mut object = json!({"metadata": {}, "spec": {"holder": "b"}});
        remove_leaf(&mut object, "/spec/holder");
        assert_eq!(object, json!({"metadata": {}}));
    }

    #[test]
    fn update_that_removes_a_field_drops_its_owner() {
        let mut owners =
            Owners::from([("/spec/holder".to_owned(), BTreeSet::from(["ma".to_owned()]))]);
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
            vec![Conflict {
                path: "/metadata/labels/app.kubernetes.io~1name".to_owned(),
                manager: "queue".to_owned()
            }]
        );
        assert_eq!(
            field_path(&err[0].path),
            ".metadata.labels.app.kubernetes.io/name"
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
