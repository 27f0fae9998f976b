//! The executor's handle on the world: conditional writes whose responses
//! (and refusals) go into the index, Events, `--dry-run`, and nothing at all
//! once shutdown started.

use std::fmt::Debug;
use std::time::Duration;

use futures::{FutureExt, StreamExt};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::Event;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::state::{LoopState, Watches};
use super::watch::ObjectKey;
use super::{IndexResource, Outcome};
use crate::Shutdown;
use crate::api_error::ApiErrorKind;
use crate::events::EventPublisher;
use crate::metrics::ControllerMetrics;

/// Where a patch goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The object itself.
    Object,
    /// Its `/status` subresource.
    Status,
}

/// A write that was carried out.
#[derive(Clone, Debug, PartialEq)]
pub enum Written<K> {
    /// The object as the API server returned it (already in the index).
    Applied(K),
    /// `--dry-run`: logged, not sent.
    DryRun,
}

/// Why a write was not carried out.
#[derive(Debug)]
pub enum Refused {
    /// `409`: the object changed since the plan was made (or exists, for a
    /// create). Its fresh state is in the index now.
    Conflict,
    /// `404`: the object is gone; it was removed from the index.
    Gone,
    /// Any other failure (counted as an error by kind).
    Failed(kube::Error),
    /// Shutdown started: nothing is written any more.
    Stopping,
}

impl Refused {
    /// What the runtime should do next.
    pub fn outcome(&self) -> Outcome {
        match self {
            Refused::Conflict | Refused::Gone => Outcome::Replan,
            Refused::Failed(_) | Refused::Stopping => Outcome::Retry,
        }
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Conflict => f.write_str("409 Conflict: the object changed since it was read"),
            Refused::Gone => f.write_str("404 Not Found: the object is gone"),
            Refused::Failed(e) => write!(f, "{e}"),
            Refused::Stopping => f.write_str("shutting down"),
        }
    }
}

/// The executor's handle: see the [module docs](super).
pub struct Writer<'a, I> {
    pub(crate) index: &'a mut I,
    pub(crate) state: &'a mut LoopState,
    pub(crate) watches: &'a mut Watches<I>,
    pub(crate) debounces: &'a [Duration],
    pub(crate) metrics: &'a ControllerMetrics,
    pub(crate) events: &'a EventPublisher,
    pub(crate) shutdown: &'a Shutdown,
    pub(crate) field_manager: &'a str,
    pub(crate) dry_run: bool,
    pub(crate) readiness: &'a crate::server::Readiness,
}

/// The readiness key of [`Writer`]'s refused-write reason.
pub const WRITE_REFUSED: &str = "write-refused";

impl<I> Writer<'_, I> {
    /// The index.
    pub fn index(&self) -> &I {
        self.index
    }

    /// The index, for executor-side updates (e.g. after a GET).
    pub fn index_mut(&mut self) -> &mut I {
        self.index
    }

    /// Takes into the index the watch updates already delivered (without
    /// waiting for any), and says whether one of them wants a pass: a
    /// change someone else made, not the echo of this controller's own
    /// writes. An executor with a long plan asks between writes; when the
    /// answer is yes, what remains of its plan may be stale, so it may stop
    /// and return [`Outcome::Superseded`](super::Outcome::Superseded): the
    /// next pass, already due, plans from the news. Without this, news
    /// waits for the whole plan to be written.
    pub fn news(&mut self) -> bool {
        while let Some(Some((id, update))) = self.watches.get_mut().next().now_or_never() {
            self.state
                .take(id, update, self.index, self.debounces, self.metrics);
        }
        self.state.pass_wanted()
    }

    /// Whether `--dry-run` is on (writes are logged, not sent).
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// Whether shutdown started (writes are refused from then on).
    pub fn stopping(&self) -> bool {
        self.shutdown.is_triggered()
    }

    /// The common metric set (to count controller-specific errors).
    pub fn metrics(&self) -> &ControllerMetrics {
        self.metrics
    }

    fn params(&self) -> PatchParams {
        PatchParams {
            field_manager: Some(self.field_manager.to_owned()),
            ..PatchParams::default()
        }
    }

    fn failed(&self, what: &str, name: &str, error: kube::Error) -> Refused {
        if let kube::Error::Api(status) = &error
            && status.code == 422
        {
            // The API server's schema refuses what this controller writes
            // (an older CRD, say): retrying cannot help, so say so on
            // /readyz, with the server's message, which names the field.
            self.readiness.block(
                WRITE_REFUSED,
                format!(
                    "{what} of {name} refused as invalid (422): {}",
                    status.message
                ),
            );
        }
        self.metrics.record_write("failed");
        self.metrics
            .record_error(&FailedCall(ApiErrorKind::of(&error)));
        tracing::warn!(%error, object = name, "{what} failed");
        Refused::Failed(error)
    }

    /// Publishes an Event (logged only under `--dry-run`); `false` if it
    /// failed (counted as an `event` error) or shutdown started.
    pub async fn publish(&self, event: &Event, reference: &ObjectReference) -> bool {
        if self.stopping() {
            return false;
        }
        match self.events.publish(event, reference).await {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(%error, reason = %event.reason, object = reference.name.as_deref().unwrap_or_default(), "cannot publish Event");
                self.metrics.record_error(&EventError);
                false
            }
        }
    }
}

/// A failed API call, counted as `kube_api` (or `forbidden`: an RBAC
/// problem retrying does not fix).
struct FailedCall(ApiErrorKind);
impl crate::metrics::ErrorKind for FailedCall {
    fn kind(&self) -> &'static str {
        match self.0 {
            ApiErrorKind::Forbidden => "forbidden",
            _ => "kube_api",
        }
    }
}

struct EventError;
impl crate::metrics::ErrorKind for EventError {
    fn kind(&self) -> &'static str {
        "event"
    }
}

impl<I> Writer<'_, I> {
    /// A JSON merge patch of `name` conditioned on `resource_version` (the
    /// version the plan was made from; it is put into
    /// `metadata.resourceVersion`, which the API server treats as a
    /// precondition). `None` sends the patch unconditionally.
    ///
    /// On success the returned object goes into the index. On `409` the
    /// object is read again and the fresh state goes into the index; on
    /// `404` it is deleted from the index.
    pub async fn patch<K>(
        &mut self,
        api: &Api<K>,
        name: &str,
        resource_version: Option<&str>,
        mut body: Value,
        target: Target,
    ) -> Result<Written<K>, Refused>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + 'static,
        I: IndexResource<K>,
    {
        if self.stopping() {
            return Err(Refused::Stopping);
        }
        if let Some(version) = resource_version
            && let Some(object) = body.as_object_mut()
        {
            let metadata = object
                .entry("metadata")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Some(metadata) = metadata.as_object_mut() {
                metadata.insert("resourceVersion".into(), Value::String(version.to_owned()));
            }
        }
        if self.dry_run {
            let subresource = (target == Target::Status).then_some("status");
            tracing::info!(dry_run = true, kind = %K::kind(&()), object = name, subresource, patch = %body, "would patch");
            self.metrics.record_write("dry_run");
            return Ok(Written::DryRun);
        }
        let params = self.params();
        let result = match target {
            Target::Object => api.patch(name, &params, &Patch::Merge(&body)).await,
            Target::Status => api.patch_status(name, &params, &Patch::Merge(&body)).await,
        };
        self.settle(api, name, result, "patch").await
    }

    /// Creates `object`. A `409` (it exists) reads it and puts it into the
    /// index.
    pub async fn create<K>(&mut self, api: &Api<K>, object: &K) -> Result<Written<K>, Refused>
    where
        K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug + 'static,
        I: IndexResource<K>,
    {
        if self.stopping() {
            return Err(Refused::Stopping);
        }
        let name = object.name_any();
        if self.dry_run {
            tracing::info!(dry_run = true, kind = %K::kind(&()), object = %name, "would create");
            self.metrics.record_write("dry_run");
            return Ok(Written::DryRun);
        }
        let result = api.create(&PostParams::default(), object).await;
        self.settle(api, &name, result, "create").await
    }

    /// Server-side apply (forced, with this controller's field manager) of
    /// an object the controller does not watch, e.g. a status summary.
    pub async fn apply_unwatched<K>(
        &mut self,
        api: &Api<K>,
        name: &str,
        body: &Value,
    ) -> Result<Written<K>, Refused>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    {
        if self.stopping() {
            return Err(Refused::Stopping);
        }
        if self.dry_run {
            tracing::info!(dry_run = true, kind = %K::kind(&()), object = name, "would apply");
            self.metrics.record_write("dry_run");
            return Ok(Written::DryRun);
        }
        let params = PatchParams::apply(self.field_manager).force();
        match api.patch(name, &params, &Patch::Apply(body)).await {
            Ok(object) => {
                self.readiness.unblock(WRITE_REFUSED);
                self.metrics.record_write("written");
                Ok(Written::Applied(object))
            }
            Err(error) => Err(self.failed("apply", name, error)),
        }
    }

    /// Reads `name` (a live GET) and puts what it finds into the index
    /// (deleting it there when it is gone).
    pub async fn refresh<K>(&mut self, api: &Api<K>, name: &str) -> Result<Option<K>, kube::Error>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + 'static,
        I: IndexResource<K>,
    {
        match api.get_opt(name).await {
            Ok(Some(object)) => {
                self.state
                    .versions
                    .record(ObjectKey::of(&object), object.resource_version().as_deref());
                self.index.apply(object.clone());
                Ok(Some(object))
            }
            Ok(None) => {
                self.forget_gone(api, name);
                Ok(None)
            }
            Err(error) => {
                self.metrics
                    .record_error(&FailedCall(ApiErrorKind::of(&error)));
                tracing::warn!(%error, kind = %K::kind(&()), object = name, "cannot read");
                Err(error)
            }
        }
    }

    fn forget_gone<K>(&mut self, api: &Api<K>, name: &str)
    where
        K: Resource<DynamicType = ()> + 'static,
        I: IndexResource<K>,
    {
        let namespace = api.namespace().map(str::to_owned);
        self.state
            .versions
            .forget(&ObjectKey::named::<K>(namespace.clone(), name.to_owned()));
        let mut key = ObjectRef::<K>::new(name);
        key.namespace = namespace;
        self.index.delete(key);
    }

    /// Puts a write's result into the index and classifies a refusal.
    async fn settle<K>(
        &mut self,
        api: &Api<K>,
        name: &str,
        result: Result<K, kube::Error>,
        what: &str,
    ) -> Result<Written<K>, Refused>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + 'static,
        I: IndexResource<K>,
    {
        let error = match result {
            Ok(object) => {
                self.readiness.unblock(WRITE_REFUSED);
                self.metrics.record_write("written");
                self.state
                    .versions
                    .record(ObjectKey::of(&object), object.resource_version().as_deref());
                self.index.apply(object.clone());
                return Ok(Written::Applied(object));
            }
            Err(error) => error,
        };
        match ApiErrorKind::of(&error) {
            kind if kind.is_lost_race() => {
                self.metrics.record_write("conflict");
                tracing::debug!(kind = %K::kind(&()), object = name, "{what} refused with 409; reading the object again");
                // A failed read leaves the index as it was; the next pass
                // writes from the same (stale) version and gets 409 again.
                let _ = self.refresh(api, name).await;
                Err(Refused::Conflict)
            }
            ApiErrorKind::NotFound => {
                self.metrics.record_write("not_found");
                tracing::debug!(kind = %K::kind(&()), object = name, "{what} refused with 404: the object is gone");
                self.forget_gone(api, name);
                Err(Refused::Gone)
            }
            _ => Err(self.failed(what, name, error)),
        }
    }
}
