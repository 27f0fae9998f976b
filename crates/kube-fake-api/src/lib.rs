//! An in-process Kubernetes API server stand-in for testing kube-rs code.
//!
//! [`FakeApi`] is a [`tower::Service`] that [`kube::Client::new`] accepts, so
//! unmodified kube 5 code (`Api`, `watcher`, `reflector`, `Controller`,
//! `events::Recorder`, kube-lease-manager) runs against it without a cluster
//! or network:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//! let api = kube_fake_api::FakeApi::new();
//! let client = api.client();
//! let cms: Api<ConfigMap> = Api::namespaced(client, "default");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("a".into());
//! cms.create(&PostParams::default(), &cm).await?;
//! // Read it back directly, without the client:
//! let stored: Option<ConfigMap> = api.get(Some("default"), "a")?;
//! assert!(stored.is_some());
//! # Ok(()) }
//! ```
//!
//! What it serves (all generic over group/version/kind, see [`Registry`]):
//! get, list (label and field selectors), watch (`ADDED`/`MODIFIED`/`DELETED`,
//! `BOOKMARK`s, `410 Gone` after [`FakeApi::compact`], `timeoutSeconds`,
//! `sendInitialEvents`), create (`409 AlreadyExists`, `generateName`), update
//! with a resourceVersion precondition (`409 Conflict`), merge/strategic/JSON
//! patches and an approximated server-side apply (see [`patch`]), the `/status`
//! subresource, delete with finalizers, deletecollection, `dryRun`, and
//! minimal discovery. Errors are Kubernetes `Status` bodies. Faults can be
//! injected ([`Fault`]) and every request is logged ([`RequestRecord`]).
//!
//! Strict where kube-apiserver is (each cited where it is implemented, in
//! [`handlers`], and tested in `tests/strictness.rs`): a write that changes
//! nothing keeps the resourceVersion and sends no event; the field manager
//! defaults to the `User-Agent`'s first segment; custom resources refuse
//! strategic-merge patches (415) and updates without a resourceVersion
//! (422); lists page with `limit`/`continue` over one snapshot, in storage
//! key order; names are checked; CustomResourceDefinitions installed from
//! YAML ([`FakeApi::install_crds`]) default, prune and validate every
//! write against their schema ([`schema`]; minimal CRDs in [`crds`]);
//! requests of [`FakeApi::client_as`] are authorized by the RBAC objects
//! given to [`FakeApi::enforce_rbac`] ([`rbac`]); with
//! [`FakeApi::require_namespaces`], objects are only created in existing
//! namespaces. `tests/differential.rs` checks these against the real
//! kube-apiserver of the test bed.
//!
//! Not modelled (docs/kube-fake-api.md lists how each differs): admission
//! but the namespace check, defaulting and validation of built-in types,
//! CEL rules of CRDs, garbage collection (ownerReferences), item-wise
//! server-side apply of keyed lists, authentication (identities are taken
//! as given).
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod crds;
pub mod error;
pub mod faults;
pub mod handlers;
pub mod log;
pub mod patch;
pub mod rbac;
pub mod resource;
pub mod router;
pub mod schema;
pub mod selectors;
pub mod server;
pub mod store;
pub mod watch;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

pub use error::{ApiError, FakeApiError};
pub use faults::{Fault, FaultId, Verb};
pub use log::RequestRecord;
pub use resource::{Registry, ResourceId, ResourceInfo};
pub use store::ObjectKey;

use faults::{FaultTarget, Faults};
use router::Route;
use store::Store;

/// The response body type of the service.
pub type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

/// Default interval between `BOOKMARK` events on watches that allow them.
pub const DEFAULT_BOOKMARK_INTERVAL: Duration = Duration::from_secs(1);

struct Inner {
    store: Mutex<Store>,
    faults: Mutex<Faults>,
    log: Mutex<Vec<RequestRecord>>,
    dropped: tokio::sync::watch::Sender<u64>,
    bookmark_interval: Mutex<Duration>,
    rbac: Mutex<Option<rbac::Rbac>>,
    denied: Mutex<Vec<String>>,
}

/// The API stand-in. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct FakeApi {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for FakeApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeApi")
            .field("resource_version", &self.resource_version())
            .finish_non_exhaustive()
    }
}

impl Default for FakeApi {
    fn default() -> Self {
        Self::new()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock (in a test) must not cascade.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn json_response(status: u16, body: &Value) -> Response<ResponseBody> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut resp = Response::new(Full::new(Bytes::from(bytes)).boxed_unsync());
    *resp.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

impl FakeApi {
    /// A stand-in serving the default [`Registry`].
    pub fn new() -> Self {
        Self::with_registry(Registry::default())
    }

    /// A stand-in serving `registry`.
    pub fn with_registry(registry: Registry) -> Self {
        let (dropped, _) = tokio::sync::watch::channel(0);
        Self {
            inner: Arc::new(Inner {
                store: Mutex::new(Store::new(registry)),
                faults: Mutex::new(Faults::default()),
                log: Mutex::new(Vec::new()),
                dropped,
                bookmark_interval: Mutex::new(DEFAULT_BOOKMARK_INTERVAL),
                rbac: Mutex::new(None),
                denied: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A [`kube::Client`] talking to this stand-in, default namespace `default`.
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.clone(), kube_validation::DEFAULT_NAMESPACE)
    }

    /// A [`kube::Client`] whose requests carry the identity of the
    /// ServiceAccount `namespace`/`name` (a bearer token the stand-in
    /// understands), so that they are authorized by the RBAC objects given
    /// to [`FakeApi::enforce_rbac`].
    pub fn client_as(&self, namespace: &str, name: &str) -> kube::Client {
        let token = format!("Bearer {}{namespace}:{name}", rbac::TOKEN_PREFIX);
        let header = http::HeaderValue::from_str(&token)
            .unwrap_or_else(|_| http::HeaderValue::from_static("Bearer invalid"));
        kube::Client::new(
            AsUser {
                api: self.clone(),
                authorization: header,
            },
            namespace.to_owned(),
        )
    }

    /// Authorizes every request made with an identity
    /// ([`FakeApi::client_as`]) against the RBAC objects of `yaml` (a
    /// controller's generated manifests); a request they do not allow gets
    /// `403 Forbidden` and is listed by [`FakeApi::denied`]. See [`rbac`].
    pub fn enforce_rbac(&self, yaml: &str) -> Result<(), FakeApiError> {
        let parsed = rbac::Rbac::from_yaml(yaml).map_err(FakeApiError::Crd)?;
        *lock(&self.inner.rbac) = Some(parsed);
        Ok(())
    }

    /// The requests refused by RBAC so far, as the messages of their 403s.
    pub fn denied(&self) -> Vec<String> {
        lock(&self.inner.denied).clone()
    }

    /// Adds or replaces a resource type.
    pub fn register(&self, info: ResourceInfo) {
        lock(&self.inner.store).registry.register(info);
    }

    /// Installs every CustomResourceDefinition of a YAML stream: each
    /// served version becomes a resource type checked against its schema
    /// on every write ([`schema`]: pruning, type, enum, required), and the
    /// definition itself is served at `apiextensions.k8s.io/v1`
    /// `customresourcedefinitions`. Replaces types of the same group,
    /// version and plural. Returns the names of the CRDs installed.
    pub fn install_crds(&self, yaml: &str) -> Result<Vec<String>, FakeApiError> {
        let crds = schema::parse_crds(yaml).map_err(FakeApiError::Crd)?;
        let crd_info = schema::crd_resource();
        let mut names = Vec::new();
        let mut store = lock(&self.inner.store);
        store.registry.register(crd_info.clone());
        for crd in crds {
            for (info, schema) in &crd.versions {
                store.registry.register(info.clone());
                if let Some(schema) = schema {
                    store.registry.set_schema(&info.id, schema.clone());
                }
            }
            let name = crd.object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let key = ObjectKey {
                resource: crd_info.id.clone(),
                namespace: String::new(),
                name: name.clone(),
            };
            if store.get(&key).is_some() {
                store.remove(&key, None);
            }
            handlers::create_object(
                &mut store,
                &crd_info,
                None,
                crd.object.clone(),
                false,
                None,
                "Update",
                false,
            )
            .map_err(FakeApiError::Api)?;
            names.push(name);
        }
        Ok(names)
    }

    /// [`FakeApi::install_crds`] for every `*.yaml`/`*.yml` file in `dir`
    /// (sorted by name).
    pub fn install_crds_from_dir(
        &self,
        dir: &std::path::Path,
    ) -> Result<Vec<String>, FakeApiError> {
        let io = |e: std::io::Error| FakeApiError::Crd(format!("{}: {e}", dir.display()));
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        files.sort();
        let mut names = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| FakeApiError::Crd(format!("{}: {e}", file.display())))?;
            names.extend(
                self.install_crds(&text)
                    .map_err(|e| FakeApiError::Crd(format!("{}: {e}", file.display())))?,
            );
        }
        Ok(names)
    }

    /// Refuses, from now on, to create a namespaced object in a Namespace
    /// that does not exist (`404`, `namespaces "<ns>" not found`) or is
    /// being deleted (`403`), as kube-apiserver's NamespaceLifecycle
    /// admission plugin does. Off by default: most tests store objects in
    /// namespaces they never create. Objects stored directly
    /// ([`FakeApi::seed`]) are never checked.
    pub fn require_namespaces(&self) {
        lock(&self.inner.store).set_namespaces_required(true);
    }

    /// Sets the interval between `BOOKMARK` events (for watches started later).
    pub fn set_bookmark_interval(&self, interval: Duration) {
        *lock(&self.inner.bookmark_interval) = interval.max(Duration::from_millis(1));
    }

    /// Sets how many events are kept for watch replay (default
    /// [`store::DEFAULT_HISTORY_LIMIT`]); older ones are compacted.
    pub fn set_history_limit(&self, limit: usize) {
        lock(&self.inner.store).set_history_limit(limit);
    }

    /// Injects a fault; returns a handle for [`FakeApi::remove_fault`].
    pub fn inject(&self, fault: Fault) -> FaultId {
        lock(&self.inner.faults).inject(fault)
    }

    /// Removes one fault.
    pub fn remove_fault(&self, id: FaultId) -> bool {
        lock(&self.inner.faults).remove(id)
    }

    /// Removes every fault.
    pub fn clear_faults(&self) {
        lock(&self.inner.faults).clear();
    }

    /// Closes every open watch stream now (clients re-watch).
    pub fn drop_watches(&self) {
        self.inner.dropped.send_modify(|n| *n += 1);
    }

    /// Forgets the event history: later watches from any older resourceVersion
    /// get a `410 Gone` ERROR event. Returns the compaction point.
    pub fn compact(&self) -> u64 {
        lock(&self.inner.store).compact()
    }

    /// The latest resourceVersion.
    pub fn resource_version(&self) -> u64 {
        lock(&self.inner.store).resource_version()
    }

    /// A copy of the request log, oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.inner.log).clone()
    }

    /// Empties the request log.
    pub fn clear_requests(&self) {
        lock(&self.inner.log).clear();
    }

    fn info(&self, id: &ResourceId) -> Result<ResourceInfo, FakeApiError> {
        lock(&self.inner.store)
            .registry
            .get(id)
            .cloned()
            .ok_or_else(|| FakeApiError::UnknownResource {
                group: id.group.clone(),
                version: id.version.clone(),
                plural: id.plural.clone(),
            })
    }

    /// Stores `value` as a new object of resource `id` directly (no faults, no
    /// log; `.status` is kept even with a status subresource; a given
    /// `creationTimestamp` is kept). Watches see `ADDED`.
    pub fn seed_value(&self, id: &ResourceId, value: Value) -> Result<Value, FakeApiError> {
        let info = self.info(id)?;
        let mut store = lock(&self.inner.store);
        handlers::create_object(&mut store, &info, None, value, false, None, "Update", false)
            .map_err(FakeApiError::Api)
    }

    /// Stores a typed object directly (see [`FakeApi::seed_value`]) and returns it as stored.
    pub fn seed<K>(&self, object: &K) -> Result<K, FakeApiError>
    where
        K: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let stored = self.seed_value(&id_of::<K>(), serde_json::to_value(object)?)?;
        Ok(serde_json::from_value(stored)?)
    }

    /// The stored object, if any (`namespace` `None` for cluster-scoped).
    pub fn get_value(&self, id: &ResourceId, namespace: Option<&str>, name: &str) -> Option<Value> {
        let key = ObjectKey {
            resource: id.clone(),
            namespace: namespace.unwrap_or_default().to_owned(),
            name: name.to_owned(),
        };
        lock(&self.inner.store).get(&key).cloned()
    }

    /// The stored object, typed.
    pub fn get<K>(&self, namespace: Option<&str>, name: &str) -> Result<Option<K>, FakeApiError>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.get_value(&id_of::<K>(), namespace, name)
            .map(serde_json::from_value)
            .transpose()
            .map_err(Into::into)
    }

    /// Stored objects of `id` (in `namespace` if given), sorted by namespace then name.
    pub fn list_values(&self, id: &ResourceId, namespace: Option<&str>) -> Vec<Value> {
        lock(&self.inner.store)
            .list(id, namespace)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Stored objects, typed.
    pub fn list<K>(&self, namespace: Option<&str>) -> Result<Vec<K>, FakeApiError>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.list_values(&id_of::<K>(), namespace)
            .into_iter()
            .map(serde_json::from_value)
            .collect::<Result<_, _>>()
            .map_err(Into::into)
    }

    /// Changes a stored object directly with `change` (no preconditions, no
    /// status rules); watches see `MODIFIED` (or `DELETED` when the change
    /// empties the finalizers of an object being deleted). `None` if absent.
    pub fn modify_value(
        &self,
        id: &ResourceId,
        namespace: Option<&str>,
        name: &str,
        change: impl FnOnce(&mut Value),
    ) -> Option<Value> {
        let key = ObjectKey {
            resource: id.clone(),
            namespace: namespace.unwrap_or_default().to_owned(),
            name: name.to_owned(),
        };
        let mut store = lock(&self.inner.store);
        let mut v = store.get(&key)?.clone();
        change(&mut v);
        Some(store.replace(key, v))
    }

    /// Removes a stored object right away, ignoring finalizers; watches see `DELETED`.
    pub fn remove_value(
        &self,
        id: &ResourceId,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let key = ObjectKey {
            resource: id.clone(),
            namespace: namespace.unwrap_or_default().to_owned(),
            name: name.to_owned(),
        };
        lock(&self.inner.store).remove(&key, None)
    }

    /// Serves one request without headers but its content type (see
    /// [`FakeApi::handle_request`]).
    pub async fn handle(
        &self,
        method: http::Method,
        uri: &http::Uri,
        content_type: Option<String>,
        body: Bytes,
    ) -> Response<ResponseBody> {
        let mut headers = http::HeaderMap::new();
        if let Some(value) = content_type.and_then(|c| http::HeaderValue::from_str(&c).ok()) {
            headers.insert(http::header::CONTENT_TYPE, value);
        }
        self.handle_request(method, uri, &headers, body).await
    }

    /// Serves one request (what the [`tower::Service`] impl calls). Reads
    /// `Content-Type` and `User-Agent` (the default field manager) from
    /// `headers`.
    pub async fn handle_request(
        &self,
        method: http::Method,
        uri: &http::Uri,
        headers: &http::HeaderMap,
        body: Bytes,
    ) -> Response<ResponseBody> {
        let header = |name: http::header::HeaderName| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header(http::header::CONTENT_TYPE);
        let user_agent = header(http::header::USER_AGENT);
        let user = header(http::header::AUTHORIZATION)
            .and_then(|a| a.strip_prefix("Bearer ").and_then(rbac::user_of_token));
        let path = uri.path().to_owned();
        let query = uri.query().unwrap_or_default().to_owned();
        let mut record = RequestRecord {
            method: method.to_string(),
            path: path.clone(),
            query: query.clone(),
            verb: None,
            resource: None,
            namespace: None,
            name: None,
            subresource: None,
            content_type: content_type.clone(),
            field_manager: None,
            dry_run: false,
            status: 0,
            injected: false,
        };
        let mut route = match router::route(&method, &path, &query) {
            Ok(r) => r,
            Err(e) => return self.finish(record, json_response(e.code, &e.to_status())),
        };
        if let Route::Resource(req) = &mut route {
            req.user_agent = user_agent;
        }
        if let Route::Resource(req) = &route {
            record.verb = Some(req.verb);
            record.resource = Some(req.resource.clone());
            record.namespace.clone_from(&req.namespace);
            record.name.clone_from(&req.name);
            record.subresource.clone_from(&req.subresource);
            record.field_manager = req.manager();
            record.dry_run = req.dry_run();
            let denied = self.authorize(user.as_deref(), req).or_else(|| {
                // An apply that creates the object needs `create` too
                // (withAuthorization on the patch handler's create path,
                // staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go).
                let applies = content_type
                    .as_deref()
                    .is_some_and(|ct| ct.starts_with("application/apply-patch"));
                (req.verb == Verb::Patch && applies && !self.exists(req))
                    .then(|| {
                        let mut create = req.clone();
                        create.verb = Verb::Create;
                        self.authorize(user.as_deref(), &create)
                    })
                    .flatten()
            });
            if let Some(error) = denied {
                lock(&self.inner.denied).push(error.message.clone());
                return self.finish(record, json_response(error.code, &error.to_status()));
            }
            let outcome = lock(&self.inner.faults).evaluate(&FaultTarget {
                verb: req.verb,
                resource: &req.resource.plural,
                namespace: req.namespace.as_deref(),
                name: req.name.as_deref(),
            });
            if !outcome.delay.is_zero() {
                tokio::time::sleep(outcome.delay).await;
            }
            if let Some(err) = outcome.error {
                record.injected = true;
                return self.finish(record, json_response(err.code, &err.to_status()));
            }
            let drop_after = outcome.drop_watch_after;
            if req.verb == Verb::Watch {
                let started = watch::start(&lock(&self.inner.store), req, drop_after);
                return match started {
                    Ok(start) => {
                        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(256);
                        let interval = *lock(&self.inner.bookmark_interval);
                        tokio::spawn(watch::run(
                            start,
                            tx,
                            self.inner.dropped.subscribe(),
                            interval,
                        ));
                        let stream = futures::stream::unfold(rx, |mut rx| async move {
                            rx.recv()
                                .await
                                .map(|b| (Ok::<_, Infallible>(http_body::Frame::data(b)), rx))
                        });
                        let mut resp = Response::new(StreamBody::new(stream).boxed_unsync());
                        resp.headers_mut().insert(
                            http::header::CONTENT_TYPE,
                            http::HeaderValue::from_static("application/json"),
                        );
                        self.finish(record, resp)
                    }
                    Err(e) => self.finish(record, json_response(e.code, &e.to_status())),
                };
            }
        }
        let result = handlers::serve(
            &mut lock(&self.inner.store),
            &route,
            content_type.as_deref(),
            &body,
        );
        match result {
            Ok((status, value)) => self.finish(record, json_response(status, &value)),
            Err(e) => self.finish(record, json_response(e.code, &e.to_status())),
        }
    }

    /// Whether the object a request names exists.
    fn exists(&self, req: &router::ApiRequest) -> bool {
        let store = lock(&self.inner.store);
        let Some(info) = store.registry.get(&req.resource) else {
            return false;
        };
        let key = ObjectKey {
            resource: info.id.clone(),
            namespace: if info.namespaced {
                req.namespace.clone().unwrap_or_default()
            } else {
                String::new()
            },
            name: req.name.clone().unwrap_or_default(),
        };
        store.get(&key).is_some()
    }

    /// `Some(403)` when RBAC is enforced, the request has an identity and
    /// the rules do not allow it (kube-apiserver's Forbidden wording).
    fn authorize(&self, user: Option<&str>, req: &router::ApiRequest) -> Option<ApiError> {
        let user = user?;
        let rbac = lock(&self.inner.rbac);
        let rbac = rbac.as_ref()?;
        let info = lock(&self.inner.store)
            .registry
            .get(&req.resource)
            .cloned()?;
        if rbac.allows(user, req, &info) {
            return None;
        }
        let group = &info.id.group;
        let what = match &req.subresource {
            Some(sub) => format!("{}/{sub}", info.id.plural),
            None => info.id.plural.clone(),
        };
        let object = match &req.name {
            Some(name) => format!("{} \"{name}\"", info.id.qualified_name()),
            None => info.id.qualified_name(),
        };
        let scope = match rbac::request_namespace(req, &info) {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_owned(),
        };
        Some(ApiError::new(
            403,
            "Forbidden",
            format!(
                "{object} is forbidden: User \"{user}\" cannot {} resource \"{what}\" in API group \"{group}\" {scope}",
                req.verb.as_str()
            ),
        ))
    }

    fn finish(
        &self,
        mut record: RequestRecord,
        resp: Response<ResponseBody>,
    ) -> Response<ResponseBody> {
        record.status = resp.status().as_u16();
        tracing::trace!(method = %record.method, path = %record.path, status = record.status, "kube-fake-api request");
        lock(&self.inner.log).push(record);
        resp
    }
}

/// [`FakeApi`] with an identity: adds the bearer token of a ServiceAccount
/// to every request (see [`FakeApi::client_as`]).
#[derive(Clone)]
struct AsUser {
    api: FakeApi,
    authorization: http::HeaderValue,
}

impl<B> tower::Service<Request<B>> for AsUser
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: std::fmt::Display,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        req.headers_mut()
            .insert(http::header::AUTHORIZATION, self.authorization.clone());
        tower::Service::call(&mut self.api, req)
    }
}

/// Polls `condition` every 10 ms until it holds; panics naming `what` after
/// `timeout`. Controllers are asynchronous: assert outcomes with this
/// instead of fixed sleeps.
///
/// # Panics
/// When `condition` does not hold within `timeout` (this is a test helper).
#[allow(clippy::panic)]
pub async fn eventually(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + timeout;
    while !condition() {
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for: {what}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The [`ResourceId`] of a kube resource type with a static dynamic type.
pub fn id_of<K: kube::Resource<DynamicType = ()>>() -> ResourceId {
    ResourceId::new(&K::group(&()), &K::version(&()), &K::plural(&()))
}

impl<B> tower::Service<Request<B>> for FakeApi
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: std::fmt::Display,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let bytes = match body.collect().await {
                Ok(c) => c.to_bytes(),
                Err(e) => {
                    let err =
                        ApiError::bad_request(format!("could not read the request body: {e}"));
                    return Ok(json_response(400, &err.to_status()));
                }
            };
            Ok(this
                .handle_request(parts.method, &parts.uri, &parts.headers, bytes)
                .await)
        })
    }
}
