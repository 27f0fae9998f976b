//! The verbs other than watch: get, list, create, update, patch, delete,
//! deletecollection, and discovery. Each works on the locked [`Store`].

use kube_validation::namespace_or_default;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::faults::Verb;
use crate::patch::{self, PatchKind};
use crate::resource::{ResourceId, ResourceInfo};
use crate::router::{ApiRequest, Route};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::store::{self, ObjectKey, Store, finalizers_empty, is_deleting, set_meta};

/// Serves a non-watch route, returning the HTTP status and JSON body.
pub fn serve(
    store: &mut Store,
    route: &Route,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<(u16, Value), ApiError> {
    match route {
        Route::CoreVersions => Ok((
            200,
            json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}),
        )),
        Route::Groups => Ok((200, discovery_groups(store))),
        Route::GroupVersion { group, version } => {
            Ok((200, discovery_resources(store, group, version)))
        }
        Route::Resource(req) => serve_resource(store, req, content_type, body),
    }
}

/// Looks the request's resource up, checking the scope matches.
pub fn resolve(store: &Store, req: &ApiRequest) -> Result<ResourceInfo, ApiError> {
    let info = store.registry.get(&req.resource).cloned().ok_or_else(|| {
        ApiError::not_found(
            "the server could not find the requested resource",
            &req.resource.qualified_name(),
        )
    })?;
    if !info.namespaced && req.namespace.is_some() {
        return Err(ApiError::not_found(
            "the server could not find the requested resource (cluster-scoped resource addressed in a namespace)",
            &info.id.qualified_name(),
        ));
    }
    if let Some(sub) = &req.subresource
        && !(sub == "status" && info.status_subresource)
    {
        return Err(ApiError::not_found(
            &format!("{} subresource", info.id.qualified_name()),
            sub,
        ));
    }
    Ok(info)
}

fn key(info: &ResourceInfo, req: &ApiRequest, name: &str) -> ObjectKey {
    ObjectKey {
        resource: info.id.clone(),
        namespace: if info.namespaced {
            req.namespace.clone().unwrap_or_default()
        } else {
            String::new()
        },
        name: name.to_owned(),
    }
}

fn serve_resource(
    store: &mut Store,
    req: &ApiRequest,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<(u16, Value), ApiError> {
    let info = resolve(store, req)?;
    if info.namespaced
        && req.namespace.is_none()
        && !matches!(req.verb, Verb::List | Verb::Watch | Verb::DeleteCollection)
    {
        return Err(ApiError::not_found(
            "namespace",
            "(none given for a namespaced resource)",
        ));
    }
    let name = req.name.clone().unwrap_or_default();
    match req.verb {
        Verb::Get => store
            .get(&key(&info, req, &name))
            .cloned()
            .map(|o| (200, o))
            .ok_or_else(|| ApiError::not_found(&info.id.qualified_name(), &name)),
        Verb::List => list(store, &info, req),
        Verb::Create => create(store, &info, req, body),
        Verb::Update => update(store, &info, req, body),
        Verb::Patch => patch(store, &info, req, content_type.unwrap_or_default(), body),
        Verb::Delete => delete(store, &info, req, &name, body),
        Verb::DeleteCollection => delete_collection(store, &info, req),
        Verb::Watch => Err(ApiError::internal("watch is served by the watch module")),
    }
}

/// Objects of the request's collection that pass its label and field selectors.
pub fn matching(
    store: &Store,
    info: &ResourceInfo,
    req: &ApiRequest,
) -> Result<Vec<Value>, ApiError> {
    let labels = LabelSelector::parse(req.param("labelSelector").unwrap_or_default())?;
    let fields = FieldSelector::parse(req.param("fieldSelector").unwrap_or_default())?;
    let ns = if info.namespaced {
        req.namespace.as_deref()
    } else {
        None
    };
    Ok(store
        .list(&info.id, ns)
        .map(|(_, v)| v)
        .filter(|v| labels.matches(v) && fields.matches(v))
        .cloned()
        .collect())
}

fn list(store: &Store, info: &ResourceInfo, req: &ApiRequest) -> Result<(u16, Value), ApiError> {
    let mut items = matching(store, info, req)?;
    let limit = match req.param("limit").filter(|l| !l.is_empty()) {
        Some(l) => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid value for limit: {l:?}")))?,
        None => 0,
    };
    let mut rv = store.resource_version();
    if let Some(token) = req.param("continue").filter(|c| !c.is_empty()) {
        let (token_rv, start) = decode_continue(token)?;
        if token_rv < store.compacted_rv() {
            return Err(ApiError::new(
                410,
                "Expired",
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
            ));
        }
        rv = token_rv;
        let start = start
            .split_once('/')
            .map(|(ns, name)| (ns.to_owned(), name.to_owned()))
            .unwrap_or_default();
        items.retain(|item| item_key(item) > start);
    }
    let mut body = list_body(info, rv, Vec::new());
    let total = items.len();
    if let Ok(limit) = usize::try_from(limit)
        && limit > 0
        && total > limit
    {
        items.truncate(limit);
        let (ns, name) = items.last().map(item_key).unwrap_or_default();
        body["metadata"]["continue"] = json!(encode_continue(rv, &format!("{ns}/{name}")));
        body["metadata"]["remainingItemCount"] = json!(total - limit);
    }
    body["items"] = Value::Array(items);
    Ok((200, body))
}

/// `(namespace, name)`: the order of list results and of continue tokens.
fn item_key(item: &Value) -> (String, String) {
    let field = |f: &str| {
        item.pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (field("namespace"), field("name"))
}

/// A continue token: the list's resourceVersion and the key of the last
/// object returned, as JSON in hexadecimal (opaque to clients, as
/// kube-apiserver's base64 tokens of `{"v","rv","start"}` are,
/// staging/src/k8s.io/apiserver/pkg/storage/continue.go).
fn encode_continue(rv: u64, last_key: &str) -> String {
    let text = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": last_key}).to_string();
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_continue(token: &str) -> Result<(u64, String), ApiError> {
    let invalid = || ApiError::bad_request(format!("continue key is not valid: {token:?}"));
    if !token.len().is_multiple_of(2) || !token.is_ascii() {
        return Err(invalid());
    }
    let bytes = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&token[i..i + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| invalid())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    match (value["rv"].as_u64(), value["start"].as_str()) {
        (Some(rv), Some(start)) if value["v"] == json!("meta.k8s.io/v1") => {
            Ok((rv, start.to_owned()))
        }
        _ => Err(invalid()),
    }
}

/// A `<Kind>List` body.
pub fn list_body(info: &ResourceInfo, rv: u64, items: Vec<Value>) -> Value {
    json!({
        "apiVersion": info.id.api_version(),
        "kind": format!("{}List", info.kind),
        "metadata": {"resourceVersion": rv.to_string()},
        "items": items,
    })
}

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    let v = patch::parse_json(body)?;
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(v)
}

fn random_suffix(store: &Store) -> String {
    // Deterministic per store state: 5 lower-case alphanumerics from the next resourceVersion.
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut n = store
        .resource_version()
        .wrapping_add(1)
        .wrapping_mul(2_654_435_761);
    (0..5)
        .map(|_| {
            let c = ALPHABET[(n % ALPHABET.len() as u64) as usize] as char;
            n /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

fn stamp_type(info: &ResourceInfo, obj: &mut Value) {
    obj["apiVersion"] = json!(info.id.api_version());
    obj["kind"] = json!(info.kind);
}

fn managed_fields_entry(
    obj: &mut Value,
    manager: Option<&str>,
    operation: &str,
    api_version: &str,
) {
    let Some(manager) = manager else { return };
    let entry = json!({
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": store::timestamp(),
        "fieldsType": "FieldsV1",
        "fieldsV1": {},
    });
    let list = obj
        .pointer_mut("/metadata/managedFields")
        .and_then(Value::as_array_mut);
    match list {
        Some(list) => {
            list.retain(|e| {
                !(e["manager"] == json!(manager) && e["operation"] == json!(operation))
            });
            list.push(entry);
        }
        None => set_meta(obj, "managedFields", json!([entry])),
    }
}

/// Fills each `managedFields` entry's `fieldsV1` from the ownership table
/// and drops entries whose manager owns nothing any more.
fn render_managed_fields(obj: &mut Value, owners: &patch::Owners) {
    if let Some(list) = obj
        .pointer_mut("/metadata/managedFields")
        .and_then(Value::as_array_mut)
    {
        for entry in list.iter_mut() {
            let manager = entry["manager"].as_str().unwrap_or_default().to_owned();
            entry["fieldsV1"] = patch::fields_v1(owners, &manager);
        }
        list.retain(|e| e["fieldsV1"].as_object().is_some_and(|m| !m.is_empty()));
    }
}

/// Prunes and validates `obj` against the schema of its type, if a
/// CustomResourceDefinition installed one ([`crate::schema::check`]).
fn check_schema(store: &Store, info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    match store.registry.schema(&info.id) {
        Some(schema) => crate::schema::check(info, schema, obj),
        None => Ok(()),
    }
}

/// Validates and stores a new object (shared by POST and the seeding helpers).
#[allow(clippy::too_many_arguments)]
pub fn create_object(
    store: &mut Store,
    info: &ResourceInfo,
    namespace: Option<&str>,
    mut obj: Value,
    apply_status_rules: bool,
    manager: Option<&str>,
    operation: &str,
    dry_run: bool,
) -> Result<Value, ApiError> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    // An empty namespace in the body is unset: the request's namespace
    // fills it, as kube-apiserver's `EnsureObjectNamespaceMatchesRequestNamespace`
    // does; an object seeded without any namespace is in `default`.
    let body_ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty())
        .map(str::to_owned);
    let ns = if info.namespaced {
        let ns = namespace_or_default(namespace.filter(|ns| !ns.is_empty()).or(body_ns.as_deref()))
            .to_owned();
        if body_ns.as_ref().is_some_and(|b| *b != ns) {
            return Err(ApiError::bad_request(format!(
                "the namespace of the provided object ({}) does not match the namespace sent on the request ({ns})",
                body_ns.unwrap_or_default()
            )));
        }
        set_meta(&mut obj, "namespace", json!(ns));
        ns
    } else {
        if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("namespace");
        }
        String::new()
    };
    let name = match obj.pointer("/metadata/name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => match obj
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
        {
            Some(prefix) if !prefix.is_empty() => {
                let n = format!("{prefix}{}", random_suffix(store));
                set_meta(&mut obj, "name", json!(n));
                n
            }
            _ => {
                return Err(ApiError::invalid(format!(
                    "{} is invalid: metadata.name: Required value: name or generateName is required",
                    info.kind
                )));
            }
        },
    };
    let key = ObjectKey {
        resource: info.id.clone(),
        namespace: ns,
        name: name.clone(),
    };
    if store.get(&key).is_some() {
        return Err(ApiError::already_exists(&info.id.qualified_name(), &name));
    }
    stamp_type(info, &mut obj);
    if apply_status_rules
        && info.status_subresource
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "resourceVersion",
            "uid",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
        ] {
            m.remove(f);
        }
        if apply_status_rules {
            m.remove("creationTimestamp");
        }
    }
    managed_fields_entry(&mut obj, manager, operation, &info.id.api_version());
    check_schema(store, info, &mut obj)?;
    if dry_run {
        set_meta(&mut obj, "uid", json!("dry-run"));
        return Ok(obj);
    }
    let owners = store.owners_mut(&key);
    owners.clear();
    patch::record_update(owners, &json!({}), &obj, manager);
    let owners = owners.clone();
    render_managed_fields(&mut obj, &owners);
    Ok(store.insert(key, obj))
}

fn create(
    store: &mut Store,
    info: &ResourceInfo,
    req: &ApiRequest,
    body: &[u8],
) -> Result<(u16, Value), ApiError> {
    let obj = parse_body(body)?;
    let created = create_object(
        store,
        info,
        req.namespace.as_deref(),
        obj,
        true,
        req.manager().as_deref(),
        "Update",
        req.dry_run(),
    )?;
    Ok((201, created))
}

fn strip_for_generation(info: &ResourceInfo, obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("metadata");
        if info.status_subresource {
            m.remove("status");
        }
    }
    o
}

/// Turns the desired object of a write into the object to store: applies
/// the status-subresource rules, keeps server-owned metadata, bumps
/// `generation` when the spec changed, and records the field manager.
fn finish_write(
    info: &ResourceInfo,
    old: &Value,
    mut new: Value,
    to_status: bool,
    manager: Option<&str>,
    operation: &str,
) -> Value {
    if info.status_subresource {
        if to_status {
            let mut merged = old.clone();
            match new.get("status").cloned() {
                Some(s) => merged["status"] = s,
                None => {
                    if let Some(m) = merged.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            new = merged;
        } else {
            match old.get("status").cloned() {
                Some(s) => new["status"] = s,
                None => {
                    if let Some(m) = new.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
        }
    }
    if !new.get("metadata").is_some_and(Value::is_object) {
        new["metadata"] = json!({});
    }
    for f in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "managedFields",
        "generateName",
    ] {
        match old.pointer(&format!("/metadata/{f}")) {
            Some(v) => new["metadata"][f] = v.clone(),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(f);
                }
            }
        }
    }
    stamp_type(info, &mut new);
    if strip_for_generation(info, old) != strip_for_generation(info, &new) {
        let g = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        new["metadata"]["generation"] = json!(g + 1);
    }
    managed_fields_entry(&mut new, manager, operation, &info.id.api_version());
    new
}

fn check_rv(
    info: &ResourceInfo,
    name: &str,
    current: &Value,
    desired: &Value,
) -> Result<(), ApiError> {
    let wanted = desired
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let have = current
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str);
    match wanted {
        Some(w) if Some(w) != have => Err(ApiError::conflict(
            &info.id.qualified_name(),
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )),
        _ => Ok(()),
    }
}

fn check_no_new_finalizers_while_deleting(
    info: &ResourceInfo,
    name: &str,
    old: &Value,
    new: &Value,
) -> Result<(), ApiError> {
    if !is_deleting(old) {
        return Ok(());
    }
    let fins = |v: &Value| -> Vec<String> {
        v.pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = fins(old);
    if let Some(added) = fins(new).into_iter().find(|f| !before.contains(f)) {
        return Err(ApiError::invalid(format!(
            "{} \"{name}\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers [{added}]",
            info.kind
        )));
    }
    Ok(())
}

fn commit(
    store: &mut Store,
    info: &ResourceInfo,
    key: ObjectKey,
    old: &Value,
    new: Value,
    manager: Option<&str>,
    dry_run: bool,
) -> Result<Value, ApiError> {
    check_no_new_finalizers_while_deleting(info, &key.name, old, &new)?;
    let mut new = new;
    check_schema(store, info, &mut new)?;
    if dry_run {
        return Ok(new);
    }
    let owners = store.owners_mut(&key);
    patch::record_update(owners, old, &new, manager);
    let owners = owners.clone();
    render_managed_fields(&mut new, &owners);
    Ok(store_unless_no_op(store, key, old, new))
}

/// The object with its resourceVersion removed and its managedFields
/// timestamps blanked: what decides whether a write changed anything.
fn comparable(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
        if let Some(list) = m.get_mut("managedFields").and_then(Value::as_array_mut) {
            for entry in list {
                if let Some(e) = entry.as_object_mut() {
                    e.remove("time");
                }
            }
        }
    }
    o
}

/// Stores `new` unless it equals `old` but for managedFields timestamps.
/// Such a write is a no-op on kube-apiserver: the field manager restores the
/// old timestamps when nothing else changed
/// (`IgnoreManagedFieldsTimestampsTransformer`,
/// staging/src/k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager/equality.go),
/// and the storage layer then skips writing identical bytes and returns
/// the existing object (staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go,
/// GuaranteedUpdate). So the resourceVersion stays and no watch event is sent.
fn store_unless_no_op(store: &mut Store, key: ObjectKey, old: &Value, new: Value) -> Value {
    if comparable(old) == comparable(&new) {
        return old.clone();
    }
    store.replace(key, new)
}

fn update(
    store: &mut Store,
    info: &ResourceInfo,
    req: &ApiRequest,
    body: &[u8],
) -> Result<(u16, Value), ApiError> {
    let name = req.name.clone().unwrap_or_default();
    let desired = parse_body(body)?;
    if let Some(body_name) = desired.pointer("/metadata/name").and_then(Value::as_str)
        && body_name != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let key = key(info, req, &name);
    let old = store
        .get(&key)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&info.id.qualified_name(), &name))?;
    if info.custom
        && desired
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        // Custom resources do not allow unconditional updates: the
        // apiextensions strategy's AllowUnconditionalUpdate is false, so the
        // generic registry's Update answers 422
        // (staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/strategy.go,
        // staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go, Store.Update).
        return Err(ApiError::invalid(format!(
            "{}.{} \"{name}\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
            info.kind, info.id.group
        )));
    }
    check_rv(info, &name, &old, &desired)?;
    let manager = req.manager();
    let manager = manager.as_deref();
    let new = finish_write(
        info,
        &old,
        desired,
        req.subresource.is_some(),
        manager,
        "Update",
    );
    let stored = commit(store, info, key, &old, new, manager, req.dry_run())?;
    Ok((200, stored))
}

fn patch(
    store: &mut Store,
    info: &ResourceInfo,
    req: &ApiRequest,
    content_type: &str,
    body: &[u8],
) -> Result<(u16, Value), ApiError> {
    let name = req.name.clone().unwrap_or_default();
    let kind = PatchKind::from_content_type(content_type)?;
    if kind == PatchKind::StrategicMerge && info.custom {
        // The custom resource handler lists no strategic merge patch among
        // its supported patch types
        // (staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go,
        // supportedTypes), so the patch handler answers 415.
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        ));
    }
    let key = key(info, req, &name);
    let manager = req.manager();
    let manager = manager.as_deref();
    let force = req.flag("force");
    if kind == PatchKind::Apply && req.param("fieldManager").is_none_or(str::is_empty) {
        return Err(ApiError::bad_request(
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        ));
    }
    let Some(old) = store.get(&key).cloned() else {
        if kind != PatchKind::Apply {
            return Err(ApiError::not_found(&info.id.qualified_name(), &name));
        }
        let mut obj = patch::parse_json(body)?;
        set_meta(&mut obj, "name", json!(name));
        let created = create_object(
            store,
            info,
            req.namespace.as_deref(),
            obj.clone(),
            req.subresource.is_none(),
            manager,
            "Apply",
            req.dry_run(),
        )?;
        if !req.dry_run() {
            let owners = store.owners_mut(&key);
            let _ = patch::claim_applied_fields(
                owners,
                &created,
                &obj,
                manager.unwrap_or_default(),
                true,
            );
        }
        return Ok((201, created));
    };
    let desired = patch::apply_patch(kind, &old, body)?;
    // A resourceVersion in the patch is a precondition, as on the real API server.
    if kind != PatchKind::Json {
        let patch_body = patch::parse_json(body)?;
        check_rv(info, &name, &old, &patch_body)?;
    }
    if kind == PatchKind::Apply {
        let applied = patch::parse_json(body)?;
        let mut owners = store.owners(&key);
        if let Err(conflicts) = patch::claim_applied_fields(
            &mut owners,
            &old,
            &applied,
            manager.unwrap_or_default(),
            force,
        ) {
            return Err(ApiError::conflict(
                &info.id.qualified_name(),
                &name,
                &format!(
                    "Apply failed with {} conflict(s): conflicts with other field managers: {}",
                    conflicts.len(),
                    conflicts.join(", ")
                ),
            ));
        }
        let new = finish_write(
            info,
            &old,
            desired,
            req.subresource.is_some(),
            manager,
            "Apply",
        );
        check_no_new_finalizers_while_deleting(info, &name, &old, &new)?;
        let mut new = new;
        check_schema(store, info, &mut new)?;
        if req.dry_run() {
            return Ok((200, new));
        }
        render_managed_fields(&mut new, &owners);
        *store.owners_mut(&key) = owners;
        return Ok((200, store_unless_no_op(store, key, &old, new)));
    }
    let new = finish_write(
        info,
        &old,
        desired,
        req.subresource.is_some(),
        manager,
        "Update",
    );
    let stored = commit(store, info, key, &old, new, manager, req.dry_run())?;
    Ok((200, stored))
}

fn delete_one(
    store: &mut Store,
    info: &ResourceInfo,
    key: ObjectKey,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let old = store
        .get(&key)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&info.id.qualified_name(), &key.name))?;
    if finalizers_empty(&old) {
        if dry_run {
            return Ok(old);
        }
        return store
            .remove(&key, None)
            .ok_or_else(|| ApiError::not_found(&info.id.qualified_name(), &key.name));
    }
    if is_deleting(&old) {
        return Ok(old);
    }
    let mut new = old.clone();
    set_meta(&mut new, "deletionTimestamp", json!(store::timestamp()));
    set_meta(&mut new, "deletionGracePeriodSeconds", json!(0));
    if dry_run {
        return Ok(new);
    }
    Ok(store.replace(key, new))
}

fn delete(
    store: &mut Store,
    info: &ResourceInfo,
    req: &ApiRequest,
    name: &str,
    body: &[u8],
) -> Result<(u16, Value), ApiError> {
    let key = key(info, req, name);
    // DeleteOptions preconditions.
    if !body.is_empty()
        && let Ok(opts) = serde_json::from_slice::<Value>(body)
    {
        let current = store
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&info.id.qualified_name(), name))?;
        for (field, path) in [
            ("resourceVersion", "/metadata/resourceVersion"),
            ("uid", "/metadata/uid"),
        ] {
            if let Some(want) = opts
                .pointer(&format!("/preconditions/{field}"))
                .and_then(Value::as_str)
                && current.pointer(path).and_then(Value::as_str) != Some(want)
            {
                return Err(ApiError::conflict(
                    &info.id.qualified_name(),
                    name,
                    &format!(
                        "Precondition failed: {field} in precondition: {want}, {field} in object meta: {}",
                        current
                            .pointer(path)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                    ),
                ));
            }
        }
    }
    let deleted = delete_one(store, info, key, req.dry_run())?;
    Ok((200, deleted))
}

fn delete_collection(
    store: &mut Store,
    info: &ResourceInfo,
    req: &ApiRequest,
) -> Result<(u16, Value), ApiError> {
    let victims = matching(store, info, req)?;
    let mut out = Vec::new();
    for v in victims {
        let key = ObjectKey {
            resource: info.id.clone(),
            namespace: v
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            name: v
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        };
        out.push(delete_one(store, info, key, req.dry_run())?);
    }
    Ok((200, list_body(info, store.resource_version(), out)))
}

fn discovery_groups(store: &Store) -> Value {
    let mut groups: std::collections::BTreeMap<String, Vec<String>> =
        std::collections::BTreeMap::new();
    for info in store.registry.iter().filter(|i| !i.id.group.is_empty()) {
        let versions = groups.entry(info.id.group.clone()).or_default();
        if !versions.contains(&info.id.version) {
            versions.push(info.id.version.clone());
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(name, versions)| {
            let vs: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
                .collect();
            json!({"name": name, "versions": vs, "preferredVersion": vs[0].clone()})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn discovery_resources(store: &Store, group: &str, version: &str) -> Value {
    let mut resources = Vec::new();
    for info in store
        .registry
        .iter()
        .filter(|i| i.id.group == group && i.id.version == version)
    {
        let verbs = [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ];
        resources.push(json!({"name": info.id.plural, "singularName": info.kind.to_lowercase(), "namespaced": info.namespaced, "kind": info.kind, "verbs": verbs}));
        if info.status_subresource {
            resources.push(json!({"name": format!("{}/status", info.id.plural), "singularName": "", "namespaced": info.namespaced, "kind": info.kind, "verbs": ["get", "patch", "update"]}));
        }
    }
    let gv = ResourceId::new(group, version, "").api_version();
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
}
