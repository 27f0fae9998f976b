//! What each controller is measured with: the objects, the events, and
//! when the objects are as the controller should leave them.

pub(crate) mod backup_queue;
pub(crate) mod host_label;
pub(crate) mod load_soothe;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::runtime::{WatchStreamExt, watcher};
use kube_testbed::Testbed;
use serde_json::Value;

use crate::Controller;

/// The object whose write by the controller answers an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// Its resource as the audit log names it (`backups`, `nodes`).
    pub resource: &'static str,
    /// Its name.
    pub name: String,
    /// The kind of event ([`Workload::event_kinds`]) that made it.
    pub kind: usize,
}

/// A kind of event a workload makes.
#[derive(Debug, Clone)]
pub(crate) struct EventKind {
    /// What it is, for the report.
    pub name: &'static str,
    /// Made at the event rate (`true`) or one at a time, each waiting
    /// for the previous one to settle (`false`).
    pub paced: bool,
}

/// A controller's workload. Sizes grow: `populate(from, to)` adds the
/// objects `from..to`.
pub(crate) trait Workload {
    /// The controller.
    fn controller(&self) -> Controller;
    /// Arguments of `<binary> manifests`.
    fn manifest_args(&self) -> Vec<String>;
    /// What exists at `size`, in words.
    fn describe(&self, size: usize) -> String;
    /// Installs CRDs, namespaces and configuration, and starts watching.
    async fn setup(&mut self, bed: &Testbed) -> anyhow::Result<()>;
    /// Creates the objects `from..to`; returns how many the controller
    /// will have to act on.
    async fn populate(
        &mut self,
        from: usize,
        to: usize,
        concurrency: usize,
    ) -> anyhow::Result<usize>;
    /// Whether this program's watch has seen every object it created.
    fn mirrored(&self) -> bool;
    /// The kinds of events; kind 0 is also the change made while the
    /// controller is down.
    fn event_kinds(&self) -> Vec<EventKind>;
    /// Makes event `i` of kind `kind`; `None` when there is nothing to
    /// make it on.
    async fn event(&mut self, kind: usize, i: usize) -> anyhow::Result<Option<Target>>;
    /// Whether the controller has acted on `target`.
    fn handled(&self, target: &Target) -> bool;
    /// `Ok` when every object is as the controller should leave it, else
    /// what is not.
    fn converged(&self) -> Result<(), String>;
}

/// A dynamic API for `group/version` `kind` (`plural`).
pub(crate) fn dynamic_api(
    client: &kube::Client,
    (group, version, kind, plural): (&str, &str, &str, &str),
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// Creates the JSON `object`, retrying briefly on throttling and server
/// errors; an object that already exists (a retried create) is fine.
pub(crate) async fn create(api: &Api<DynamicObject>, object: Value) -> anyhow::Result<()> {
    let object: DynamicObject = serde_json::from_value(object).context("an object to create")?;
    let mut delay = Duration::from_millis(100);
    for attempt in 0.. {
        match api.create(&PostParams::default(), &object).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => return Ok(()),
            Err(e) if attempt < 5 && retryable(&e) => {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "cannot create {}",
                        object.metadata.name.as_deref().unwrap_or("?")
                    )
                });
            }
        }
    }
    Ok(())
}

/// Merge-patches `name` (its `/status` when `status`), retrying briefly
/// on throttling and server errors.
pub(crate) async fn patch(
    api: &Api<DynamicObject>,
    name: &str,
    patch: &Value,
    status: bool,
) -> anyhow::Result<()> {
    let params = PatchParams::default();
    let mut delay = Duration::from_millis(100);
    for attempt in 0.. {
        let result = if status {
            api.patch_status(name, &params, &Patch::Merge(patch)).await
        } else {
            api.patch(name, &params, &Patch::Merge(patch)).await
        };
        match result {
            Ok(_) => return Ok(()),
            Err(e) if attempt < 5 && retryable(&e) => {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            Err(e) => return Err(e).with_context(|| format!("cannot patch {name}")),
        }
    }
    Ok(())
}

fn retryable(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 429 || status.code >= 500,
        _ => true,
    }
}

/// Creates `objects` with `concurrency` requests in flight.
pub(crate) async fn create_all(
    api: &Api<DynamicObject>,
    objects: impl Iterator<Item = Value>,
    concurrency: usize,
) -> anyhow::Result<()> {
    futures::stream::iter(objects)
        .map(|object| create(api, object))
        .buffer_unordered(concurrency.max(1))
        .try_collect::<()>()
        .await
}

/// Creates `namespace` unless it exists.
pub(crate) async fn ensure_namespace(client: &kube::Client, namespace: &str) -> anyhow::Result<()> {
    let api = dynamic_api(client, ("", "v1", "Namespace", "namespaces"), None);
    create(
        &api,
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
    )
    .await
}

/// A reaction to an object this program's watch sees: the merge patch to
/// make on it (playing Velero or a data mover), if any.
pub(crate) type Reaction = Box<dyn Fn(&DynamicObject) -> Option<Value> + Send + Sync>;

/// This program's own view of one resource: a summary of each object by
/// name, kept by a watch, and optionally a reaction to each new version.
pub(crate) struct Mirror<S> {
    state: Arc<Mutex<HashMap<String, S>>>,
    task: tokio::task::JoinHandle<()>,
}

impl<S: Clone + Send + 'static> Mirror<S> {
    /// Starts watching `api`.
    pub(crate) fn start(
        api: Api<DynamicObject>,
        summarize: impl Fn(&DynamicObject) -> S + Send + 'static,
        react: Option<Reaction>,
    ) -> Mirror<S> {
        let state: Arc<Mutex<HashMap<String, S>>> = Arc::default();
        let shared = state.clone();
        let task = tokio::spawn(async move {
            let mut reacted: HashSet<(String, String)> = HashSet::new();
            let mut events =
                std::pin::pin!(watcher(api.clone(), watcher::Config::default()).default_backoff());
            while let Some(event) = events.next().await {
                let Ok(event) = event else { continue };
                let (object, deleted) = match event {
                    watcher::Event::Apply(object) | watcher::Event::InitApply(object) => {
                        (object, false)
                    }
                    watcher::Event::Delete(object) => (object, true),
                    watcher::Event::Init | watcher::Event::InitDone => continue,
                };
                let name = object.metadata.name.clone().unwrap_or_default();
                {
                    let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    if deleted {
                        state.remove(&name);
                    } else {
                        state.insert(name.clone(), summarize(&object));
                    }
                }
                if deleted {
                    continue;
                }
                let Some(react) = react.as_ref() else {
                    continue;
                };
                let version = object.metadata.resource_version.clone().unwrap_or_default();
                if let Some(change) = react(&object)
                    && reacted.insert((name.clone(), version))
                {
                    let api = api.clone();
                    tokio::spawn(async move {
                        if let Err(e) = patch(&api, &name, &change, false).await {
                            eprintln!("controller-scale: reaction to {name} failed: {e:#}");
                        }
                    });
                }
            }
        });
        Mirror { state, task }
    }

    /// Reads the summaries.
    pub(crate) fn with<R>(&self, read: impl FnOnce(&HashMap<String, S>) -> R) -> R {
        read(&self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl<S> Drop for Mirror<S> {
    fn drop(&mut self) {
        self.task.abort();
    }
}
