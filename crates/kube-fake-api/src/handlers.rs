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
        Route::Version => Ok((200, server_version())),
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
        // The custom resource handler takes an unknown subresource as part
        // of an object's path (`backups.velero.io "b1" not found`); built-in
        // types have no route for it.
        return Err(if info.custom {
            ApiError::not_found(
                &info.id.qualified_name(),
                req.name.as_deref().unwrap_or_default(),
            )
        } else {
            ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        });
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
    check_dry_run(req)?;
    if matches!(req.verb, Verb::Get | Verb::List)
        && let Some(rv) = req.param("resourceVersion").filter(|rv| !rv.is_empty())
        && rv.parse::<u64>().is_err()
    {
        // kube-apiserver fails to parse it deep in storage: a 500 without a
        // reason.
        return Err(ApiError::new(
            500,
            "",
            format!(
                "resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: invalid syntax"
            ),
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

/// `dryRun` takes `All` only (`ValidateDryRun`,
/// staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/validation).
fn check_dry_run(req: &ApiRequest) -> Result<(), ApiError> {
    let Some(value) = req.param("dryRun").filter(|v| !v.is_empty() && *v != "All") else {
        return Ok(());
    };
    let options = match req.verb {
        Verb::Create => "CreateOptions",
        Verb::Update => "UpdateOptions",
        Verb::Patch => "PatchOptions",
        Verb::Delete | Verb::DeleteCollection => "DeleteOptions",
        _ => return Ok(()),
    };
    Err(ApiError::invalid(format!(
        "{options}.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{{{value:?}}}: supported values: \"All\""
    )))
}

/// The request's label and field selectors; a field the type cannot be
/// selected by is `400`, as kube-apiserver's field label conversion
/// refuses it ([`ResourceInfo::field_selector_check`]).
pub fn selectors(
    info: &ResourceInfo,
    req: &ApiRequest,
) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels = LabelSelector::parse(req.param("labelSelector").unwrap_or_default())?;
    let fields = FieldSelector::parse(req.param("fieldSelector").unwrap_or_default())?;
    for requirement in &fields.0 {
        if let Some(Err(message)) = info.field_selector_check(&requirement.path) {
            return Err(ApiError::bad_request(message));
        }
    }
    Ok((labels, fields))
}

/// Objects of the request's collection that pass its label and field
/// selectors, in kube-apiserver's order: by storage key, `<namespace>/<name>`
/// compared as text (so `a-b/x` comes before `a/x`).
pub fn matching(
    store: &Store,
    info: &ResourceInfo,
    req: &ApiRequest,
) -> Result<Vec<Value>, ApiError> {
    let ns = if info.namespaced {
        req.namespace.as_deref()
    } else {
        None
    };
    select(store.list(&info.id, ns).map(|(_, v)| v), info, req)
}

fn select<'a>(
    objects: impl Iterator<Item = &'a Value>,
    info: &ResourceInfo,
    req: &ApiRequest,
) -> Result<Vec<Value>, ApiError> {
    let (labels, fields) = selectors(info, req)?;
    let mut items: Vec<(String, Value)> = objects
        .filter(|v| labels.matches(v) && fields.matches(v))
        .map(|v| (item_key(v), v.clone()))
        .collect();
    items.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(items.into_iter().map(|(_, v)| v).collect())
}

/// Refuses list options kube-apiserver refuses (`ValidateListOptions`,
/// staging/src/k8s.io/apimachinery/pkg/apis/meta/internalversion/validation).
fn check_list_options(req: &ApiRequest) -> Result<(), ApiError> {
    let Some(matching) = req.param("resourceVersionMatch").filter(|m| !m.is_empty()) else {
        return Ok(());
    };
    let rv = req.param("resourceVersion").unwrap_or_default();
    let mut errors = Vec::new();
    if rv.is_empty() {
        errors.push("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".to_owned());
    }
    if req.param("continue").is_some_and(|c| !c.is_empty()) {
        errors.push("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided".to_owned());
    }
    if matching != "Exact" && matching != "NotOlderThan" {
        errors.push(format!(
            "resourceVersionMatch: Unsupported value: {matching:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""
        ));
    }
    if matching == "Exact" && rv == "0" {
        errors.push("resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"".to_owned());
    }
    if errors.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(format!(
        "ListOptions.meta.k8s.io \"\" is invalid: {}",
        bracketed(&errors)
    )))
}

/// One error as is, several in brackets, as `field.ErrorList` prints them.
fn bracketed(errors: &[String]) -> String {
    if errors.len() == 1 {
        errors[0].clone()
    } else {
        format!("[{}]", errors.join(", "))
    }
}

/// A list, as kube-apiserver serves it:
///
/// - `continue` reads the list's snapshot (the resourceVersion of its first
///   page), so objects created, changed or removed since do not show;
///   `410 Expired` once that history is compacted;
/// - `resourceVersionMatch=Exact` reads the snapshot at `resourceVersion`;
/// - `resourceVersion=0` is served from the watch cache, which ignores
///   `limit` (everything in one page, no continue token);
/// - `remainingItemCount` only when no selector filters the list
///   (staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go, GetList).
fn list(store: &Store, info: &ResourceInfo, req: &ApiRequest) -> Result<(u16, Value), ApiError> {
    check_list_options(req)?;
    let limit = match req.param("limit").filter(|l| !l.is_empty()) {
        Some(l) => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid value for limit: {l:?}")))?,
        None => 0,
    };
    let rv_param = req.param("resourceVersion").unwrap_or_default();
    let continue_token = req.param("continue").filter(|c| !c.is_empty());
    let ns = if info.namespaced {
        req.namespace.as_deref()
    } else {
        None
    };
    let in_namespace = |key: &ObjectKey| ns.is_none_or(|ns| key.namespace == ns);
    let mut rv = store.resource_version();
    let mut start = None;
    let mut items = if let Some(token) = continue_token {
        let (token_rv, last) = decode_continue(token)?;
        let snapshot = store.snapshot(&info.id, token_rv).ok_or_else(|| {
            ApiError::new(
                410,
                "Expired",
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
            )
        })?;
        rv = token_rv;
        start = Some(last);
        select(
            snapshot
                .iter()
                .filter(|(k, _)| in_namespace(k))
                .map(|(_, v)| v),
            info,
            req,
        )?
    } else if req.param("resourceVersionMatch") == Some("Exact") {
        let exact: u64 = rv_param.parse().map_err(|_| {
            ApiError::bad_request(format!("invalid resource version: {rv_param:?}"))
        })?;
        let snapshot = store.snapshot(&info.id, exact).ok_or_else(|| {
            ApiError::new(410, "Expired", format!("too old resource version: {exact}"))
        })?;
        rv = exact;
        select(
            snapshot
                .iter()
                .filter(|(k, _)| in_namespace(k))
                .map(|(_, v)| v),
            info,
            req,
        )?
    } else {
        matching(store, info, req)?
    };
    if let Some(start) = &start {
        items.retain(|item| item_key(item) > *start);
    }
    let filtered = req
        .param("labelSelector")
        .is_some_and(|s| !s.trim().is_empty())
        || req
            .param("fieldSelector")
            .is_some_and(|s| !s.trim().is_empty());
    let from_cache = rv_param == "0" && continue_token.is_none();
    let mut body = list_body(info, rv, Vec::new());
    let total = items.len();
    if let Ok(limit) = usize::try_from(limit)
        && limit > 0
        && total > limit
        && !from_cache
    {
        items.truncate(limit);
        let last = items.last().map(item_key).unwrap_or_default();
        body["metadata"]["continue"] = json!(encode_continue(rv, &last));
        if !filtered {
            body["metadata"]["remainingItemCount"] = json!(total - limit);
        }
    }
    body["items"] = Value::Array(items);
    Ok((200, body))
}

/// `<namespace>/<name>` (`<name>` for cluster-scoped objects): the key
/// lists are sorted by, and continue tokens resume after.
fn item_key(item: &Value) -> String {
    let field = |f: &str| {
        item.pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match field("namespace") {
        ns if ns.is_empty() => field("name"),
        ns => format!("{ns}/{}", field("name")),
    }
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

/// `Kind.group` (`Kind` in the core group), as `schema.GroupKind` prints
/// in validation errors.
pub fn qualified_kind(info: &ResourceInfo) -> String {
    if info.id.group.is_empty() {
        info.kind.clone()
    } else {
        format!("{}.{}", info.kind, info.id.group)
    }
}

/// The rule kube-apiserver checks a new object's name with, for the types
/// the stand-in knows it for: an RFC 1123 label for Namespaces, an RFC 1123
/// subdomain for custom resources and most built-in kinds
/// (`ValidateObjectMeta` with `NameIsDNSSubdomain`).
fn name_problems(info: &ResourceInfo, name: &str) -> Vec<String> {
    match (info.id.group.as_str(), info.id.plural.as_str()) {
        ("", "namespaces") => kube_validation::validate_dns1123_label(name),
        (
            "",
            "configmaps"
            | "secrets"
            | "pods"
            | "nodes"
            | "events"
            | "serviceaccounts"
            | "persistentvolumeclaims"
            | "persistentvolumes",
        )
        | ("coordination.k8s.io", "leases")
        | ("events.k8s.io", "events")
        | ("apps", _)
        | ("batch", _) => kube_validation::validate_dns1123_subdomain(name),
        _ if info.custom => kube_validation::validate_dns1123_subdomain(name),
        _ => Vec::new(),
    }
}

/// [`name_problems`] as validation errors of `metadata.name`.
fn name_errors(info: &ResourceInfo, name: &str) -> Vec<String> {
    name_problems(info, name)
        .into_iter()
        .map(|problem| format!("metadata.name: Invalid value: {name:?}: {problem}"))
        .collect()
}

/// With [`Store::namespaces_required`], a namespaced object is only created
/// in a Namespace that exists (`404`) and is not being deleted (`403`), as
/// the NamespaceLifecycle admission plugin allows it
/// (plugin/pkg/admission/namespace/lifecycle/admission.go).
fn check_namespace(
    store: &Store,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    if !store.namespaces_required() || !info.namespaced {
        return Ok(());
    }
    let key = ObjectKey {
        resource: ResourceId::new("", "v1", "namespaces"),
        namespace: String::new(),
        name: namespace.to_owned(),
    };
    match store.get(&key) {
        None => Err(ApiError::not_found("namespaces", namespace)),
        Some(ns) if is_deleting(ns) => Err(ApiError::new(
            403,
            "Forbidden",
            format!(
                "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                info.id.qualified_name()
            ),
        )),
        Some(_) => Ok(()),
    }
}

fn stamp_type(info: &ResourceInfo, obj: &mut Value) {
    obj["apiVersion"] = json!(info.id.api_version());
    obj["kind"] = json!(info.kind);
}

/// Adds or refreshes `manager`'s entry for `operation`. `stamp`: the
/// write changed the object, so the entry gets the current time; else an
/// existing entry keeps its time and a new one has none, as kube-apiserver's
/// `managedFieldsUpdater` records them
/// (staging/src/k8s.io/apimachinery/pkg/util/managedfields/internal/managedfieldsupdater.go).
fn managed_fields_entry(
    obj: &mut Value,
    manager: Option<&str>,
    operation: &str,
    api_version: &str,
    stamp: bool,
) {
    let Some(manager) = manager else { return };
    let mut entry = json!({
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "fieldsType": "FieldsV1",
        "fieldsV1": {},
    });
    let list = obj
        .pointer_mut("/metadata/managedFields")
        .and_then(Value::as_array_mut);
    let previous_time = list.as_ref().and_then(|list| {
        list.iter()
            .find(|e| e["manager"] == json!(manager) && e["operation"] == json!(operation))
            .and_then(|e| e.get("time").cloned())
    });
    match (stamp, previous_time) {
        (true, _) => entry["time"] = json!(store::timestamp()),
        (false, Some(time)) => entry["time"] = time,
        (false, None) => {}
    }
    match list {
        Some(list) => {
            list.retain(|e| {
                !(e["manager"] == json!(manager) && e["operation"] == json!(operation))
            });
            list.push(entry);
            sort_managed_fields(list);
        }
        None => set_meta(obj, "managedFields", json!([entry])),
    }
}

/// Whether a write changes more than `managedFields` and the
/// resourceVersion.
fn changes_content(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = comparable(v);
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
        v
    };
    strip(old) != strip(new)
}

/// kube-apiserver's order of `managedFields`: by operation (`Apply`
/// before `Update`), then time (to the second), manager, apiVersion and
/// subresource (`sortEncodedManagedFields`,
/// staging/src/k8s.io/apimachinery/pkg/util/managedfields/internal/managedfields.go).
fn sort_managed_fields(list: &mut [Value]) {
    let text = |e: &Value, f: &str| e[f].as_str().unwrap_or_default().to_owned();
    list.sort_by_key(|e| {
        (
            text(e, "operation"),
            text(e, "time"),
            text(e, "manager"),
            text(e, "apiVersion"),
            text(e, "subresource"),
        )
    });
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
        if list.is_empty()
            && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("managedFields");
        }
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

/// Validates and stores a new object (shared by POST, an apply that
/// creates, and the helpers that store objects directly). `from_request`:
/// a client's write, to which the API's rules apply (the status
/// subresource drops `.status`, the name and the namespace are checked,
/// server-set timestamps are replaced); the helpers' objects are kept as
/// given.
#[allow(clippy::too_many_arguments)]
pub fn create_object(
    store: &mut Store,
    info: &ResourceInfo,
    namespace: Option<&str>,
    mut obj: Value,
    from_request: bool,
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
                    "{} \"\" is invalid: metadata.name: Required value: name or generateName is required",
                    qualified_kind(info)
                )));
            }
        },
    };
    if from_request {
        check_namespace(store, info, &ns, &name)?;
    }
    let key = ObjectKey {
        resource: info.id.clone(),
        namespace: ns,
        name: name.clone(),
    };
    if store.get(&key).is_some() {
        return Err(ApiError::already_exists(&info.id.qualified_name(), &name));
    }
    // kube-apiserver's storage refuses to create an object that carries a
    // resourceVersion (a `kubectl get -o yaml` dump applied as it is), as
    // an internal error; a dry run never reaches the storage.
    if from_request
        && !dry_run
        && obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|version| !version.is_empty() && version != "0")
    {
        // Not an API status error: kube-apiserver answers 500 with no
        // reason (`ErrorToAPIStatus`).
        return Err(ApiError::new(
            500,
            "",
            "resourceVersion should not be set on objects to be created",
        ));
    }
    stamp_type(info, &mut obj);
    crate::schema::prune_metadata(&mut obj);
    if from_request
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
        if from_request {
            m.remove("creationTimestamp");
        }
        if info.has_generation() {
            m.insert("generation".to_owned(), json!(1));
        } else {
            m.remove("generation");
        }
    }
    managed_fields_entry(&mut obj, manager, operation, &info.id.api_version(), true);
    // The name's errors come first, then the schema's, in one answer.
    let mut errors = if from_request {
        name_errors(info, &name)
    } else {
        Vec::new()
    };
    if let Some(schema) = store.registry.schema(&info.id) {
        errors.extend(crate::schema::problems(schema, &mut obj));
    }
    if !errors.is_empty() {
        return Err(crate::schema::invalid(info, &name, errors));
    }
    if dry_run {
        // Filled as a real create fills them, but not stored: no
        // resourceVersion.
        set_meta(&mut obj, "uid", json!("dry-run"));
        if obj
            .pointer("/metadata/creationTimestamp")
            .is_none_or(Value::is_null)
        {
            set_meta(&mut obj, "creationTimestamp", json!(store::timestamp()));
        }
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
/// the status-subresource rules, keeps server-owned metadata, and bumps
/// `generation` when the spec changed.
fn finish_write(info: &ResourceInfo, old: &Value, mut new: Value, to_status: bool) -> Value {
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
    crate::schema::prune_metadata(&mut new);
    if info.has_generation() && strip_for_generation(info, old) != strip_for_generation(info, &new)
    {
        let g = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        new["metadata"]["generation"] = json!(g + 1);
    }
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
    let mut added: Vec<String> = fins(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if !added.is_empty() {
        added.sort();
        added.dedup();
        let listed: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
        return Err(ApiError::invalid(format!(
            "{} \"{name}\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            qualified_kind(info),
            listed.join(", ")
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
    // An update that changes nothing takes no fields: its manager gets no
    // entry (and the write stays a no-op).
    if changes_content(old, &new) {
        managed_fields_entry(&mut new, manager, "Update", &info.id.api_version(), true);
    }
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
///
/// A write that empties the finalizers of an object being deleted removes
/// it; the answer is the written object at the resourceVersion it had, as
/// the generic registry's Update answers then (its DELETED watch event has
/// a new one).
fn store_unless_no_op(store: &mut Store, key: ObjectKey, old: &Value, new: Value) -> Value {
    if comparable(old) == comparable(&new) {
        return old.clone();
    }
    if is_deleting(&new) && finalizers_empty(&new) {
        let mut answer = new.clone();
        store.replace(key, new);
        if let Some(rv) = old.pointer("/metadata/resourceVersion") {
            set_meta(&mut answer, "resourceVersion", rv.clone());
        }
        return answer;
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
            "{} \"{name}\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update",
            info.id.qualified_name()
        )));
    }
    check_rv(info, &name, &old, &desired)?;
    let manager = req.manager();
    let manager = manager.as_deref();
    let new = finish_write(info, &old, desired, req.subresource.is_some());
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
    if kind == PatchKind::Apply {
        if req.param("fieldManager").is_none_or(str::is_empty) {
            return Err(ApiError::invalid(
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            ));
        }
        check_applied_identity(info, &name, &patch::parse_json(body)?)?;
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
        let removed = patch::claim_applied_fields(
            &mut owners,
            &old,
            &applied,
            manager.unwrap_or_default(),
            force,
        )
        .map_err(|conflicts| apply_conflict(&old, &conflicts))?;
        let mut desired = desired;
        for leaf in &removed {
            patch::remove_leaf(&mut desired, leaf);
        }
        let new = finish_write(info, &old, desired, req.subresource.is_some());
        check_no_new_finalizers_while_deleting(info, &name, &old, &new)?;
        let mut new = new;
        check_schema(store, info, &mut new)?;
        let changed = changes_content(&old, &new);
        managed_fields_entry(&mut new, manager, "Apply", &info.id.api_version(), changed);
        if req.dry_run() {
            return Ok((200, new));
        }
        render_managed_fields(&mut new, &owners);
        *store.owners_mut(&key) = owners;
        return Ok((200, store_unless_no_op(store, key, &old, new)));
    }
    let new = finish_write(info, &old, desired, req.subresource.is_some());
    let stored = commit(store, info, key, &old, new, manager, req.dry_run())?;
    Ok((200, stored))
}

/// An applied configuration names the object and type of the URL
/// (`400` otherwise, as kube-apiserver's apply patcher answers).
fn check_applied_identity(
    info: &ResourceInfo,
    name: &str,
    applied: &Value,
) -> Result<(), ApiError> {
    if let Some(body_name) = applied.pointer("/metadata/name").and_then(Value::as_str)
        && body_name != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let api_version = applied["apiVersion"].as_str().unwrap_or_default();
    let kind = applied["kind"].as_str().unwrap_or_default();
    if api_version != info.id.api_version() || kind != info.kind {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Err(ApiError::bad_request(format!(
            "invalid object type: {group}/{version}, Kind={kind}"
        )));
    }
    Ok(())
}

/// The `409` of an apply that conflicts, worded as kube-apiserver's
/// field manager words it (`getConflictMessage`,
/// staging/src/k8s.io/apimachinery/pkg/util/managedfields/internal/conflict.go):
/// a manager that only updated is shown with its apiVersion.
fn apply_conflict(current: &Value, conflicts: &[patch::Conflict]) -> ApiError {
    let entries = current
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let shown = |manager: &str| {
        let mine = entries.iter().filter(|e| e["manager"] == json!(manager));
        let applied = mine.clone().any(|e| e["operation"] == json!("Apply"));
        match mine.clone().find(|e| e["operation"] == json!("Update")) {
            Some(update) if !applied => format!(
                "{manager:?} using {}",
                update["apiVersion"].as_str().unwrap_or_default()
            ),
            _ => format!("{manager:?}"),
        }
    };
    let message = if let [only] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            shown(&only.manager),
            patch::field_path(&only.path)
        )
    } else {
        let mut by_manager: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        for conflict in conflicts {
            by_manager
                .entry(conflict.manager.as_str())
                .or_default()
                .push(patch::field_path(&conflict.path));
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {}:", shown(manager)));
            lines.extend(paths.into_iter().map(|p| format!("- {p}")));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    ApiError::new(409, "Conflict", message)
}

/// Deletes one object: the object (its last state), and whether it is gone
/// now (`false` while finalizers hold it).
fn delete_one(
    store: &mut Store,
    info: &ResourceInfo,
    key: ObjectKey,
    dry_run: bool,
) -> Result<(Value, bool), ApiError> {
    let old = store
        .get(&key)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&info.id.qualified_name(), &key.name))?;
    if finalizers_empty(&old) {
        if dry_run {
            return Ok((old, true));
        }
        return store
            .remove(&key, None)
            .map(|gone| (gone, true))
            .ok_or_else(|| ApiError::not_found(&info.id.qualified_name(), &key.name));
    }
    if is_deleting(&old) {
        return Ok((old, false));
    }
    let mut new = old.clone();
    set_meta(&mut new, "deletionTimestamp", json!(store::timestamp()));
    set_meta(&mut new, "deletionGracePeriodSeconds", json!(0));
    if dry_run {
        return Ok((new, false));
    }
    Ok((store.replace(key, new), false))
}

/// What a DELETE that removed the object answers: the object for the
/// types whose registry returns it
/// ([`ResourceInfo::returns_deleted_object`]), else a `Status` of
/// `Success` naming it (the generic registry's `finalizeDelete`).
fn deleted_answer(info: &ResourceInfo, object: Value) -> Value {
    if info.returns_deleted_object() {
        return object;
    }
    let mut details = serde_json::Map::new();
    details.insert("name".to_owned(), object["metadata"]["name"].clone());
    if !info.id.group.is_empty() {
        details.insert("group".to_owned(), json!(info.id.group));
    }
    details.insert("kind".to_owned(), json!(info.id.plural));
    details.insert("uid".to_owned(), object["metadata"]["uid"].clone());
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
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
        // The UID first, then the resourceVersion; the resource is named by
        // its kind (staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go).
        for (field, path, word, why) in [
            (
                "uid",
                "/metadata/uid",
                "UID",
                "The object might have been deleted and then recreated",
            ),
            (
                "resourceVersion",
                "/metadata/resourceVersion",
                "ResourceVersion",
                "The object might have been modified",
            ),
        ] {
            if let Some(want) = opts
                .pointer(&format!("/preconditions/{field}"))
                .and_then(Value::as_str)
                && current.pointer(path).and_then(Value::as_str) != Some(want)
            {
                return Err(ApiError::conflict(
                    &qualified_kind(info),
                    name,
                    &format!(
                        "the {word} in the precondition ({want}) does not match the {word} in record ({}). {why}",
                        current
                            .pointer(path)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                    ),
                ));
            }
        }
    }
    let (deleted, gone) = delete_one(store, info, key, req.dry_run())?;
    Ok((
        200,
        if gone {
            deleted_answer(info, deleted)
        } else {
            deleted
        },
    ))
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
        out.push(delete_one(store, info, key, req.dry_run())?.0);
    }
    Ok((200, list_body(info, store.resource_version(), out)))
}

/// The `/version` answer: the release whose API this stand-in follows,
/// as kube-apiserver writes it (`major`, `minor`, `gitVersion`, …).
fn server_version() -> Value {
    json!({
        "major": "1",
        "minor": "37",
        "emulationMajor": "1",
        "emulationMinor": "37",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "36",
        "gitVersion": "v1.37.2-kube-fake-api",
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": "",
        "compiler": "",
        "platform": "linux/amd64",
    })
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
