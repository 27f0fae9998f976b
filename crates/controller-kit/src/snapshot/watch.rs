//! One watch, turned into updates of the index: kube-runtime's `watcher`
//! (with its backoff), re-lists buffered into one `reset` with the keys
//! that disappeared, as kubert's index does.

use std::any::TypeId;
use std::collections::HashSet;
use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::IndexResource;

/// Turns a watch failure into the message logged.
type DescribeError = Box<dyn Fn(&watcher::Error) -> String + Send + Sync>;

/// What the runtime watches for the index: an API, its watcher settings, how
/// long a change may wait for more changes, and how to describe failures.
pub struct Watch<K> {
    api: Api<K>,
    config: watcher::Config,
    debounce: Duration,
    describe_error: Option<DescribeError>,
}

impl<K> Watch<K> {
    /// Watches `api` with `config`; changes cause a pass at once.
    pub fn new(api: Api<K>, config: watcher::Config) -> Self {
        Self {
            api,
            config,
            debounce: Duration::ZERO,
            describe_error: None,
        }
    }

    /// Lets a change of this watch wait up to `debounce` before the pass, so
    /// that a burst of changes becomes one pass (a change of another watch
    /// with a shorter debounce runs the pass earlier).
    #[must_use]
    pub fn debounce(mut self, debounce: Duration) -> Self {
        self.debounce = debounce;
        self
    }

    /// How to log a failure of this watch (e.g. to name the RBAC fix of a
    /// 403); the default is `<kind> watch: <error>`.
    #[must_use]
    pub fn describe_errors(
        mut self,
        describe: impl Fn(&watcher::Error) -> String + Send + Sync + 'static,
    ) -> Self {
        self.describe_error = Some(Box::new(describe));
        self
    }

    pub(crate) fn debounce_time(&self) -> Duration {
        self.debounce
    }
}

/// Identifies an object across kinds, for the written-versions table.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ObjectKey {
    pub(crate) kind: TypeId,
    pub(crate) namespace: Option<String>,
    pub(crate) name: String,
}

impl ObjectKey {
    pub(crate) fn of<K: Resource + 'static>(object: &K) -> Self {
        Self::named::<K>(object.namespace(), object.name_any())
    }

    pub(crate) fn named<K: 'static>(namespace: Option<String>, name: String) -> Self {
        Self {
            kind: TypeId::of::<K>(),
            namespace,
            name,
        }
    }
}

/// A change to the index: applied by the runtime unless it is older than
/// what the index holds.
pub(crate) type IndexChange<I> = Box<dyn FnOnce(&mut I) + Send>;

/// What a watch delivers to the runtime.
pub(crate) enum Update<I> {
    /// An object changed; `version` is its resourceVersion.
    Apply {
        key: ObjectKey,
        version: Option<String>,
        change: IndexChange<I>,
    },
    /// An object was deleted.
    Delete {
        key: ObjectKey,
        change: IndexChange<I>,
    },
    /// The watch listed everything again.
    Reset {
        listed: Vec<(ObjectKey, Option<String>)>,
        removed: Vec<ObjectKey>,
        change: IndexChange<I>,
    },
    /// The watch failed (it retries with backoff).
    Failed { message: String },
}

/// The stream of updates of one watch.
pub(crate) fn updates<K, I>(watch: Watch<K>) -> BoxStream<'static, Update<I>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    I: IndexResource<K> + 'static,
{
    let Watch {
        api,
        config,
        describe_error,
        ..
    } = watch;
    let mut keys: HashSet<ObjectRef<K>> = HashSet::new();
    let mut listed: Vec<K> = Vec::new();
    let mut gone: HashSet<ObjectRef<K>> = HashSet::new();
    watcher(api, config)
        .default_backoff()
        .filter_map(move |event| {
            let update = match event {
                Ok(watcher::Event::Apply(object)) => {
                    keys.insert(ObjectRef::from_obj(&object));
                    Some(Update::Apply {
                        key: ObjectKey::of(&object),
                        version: object.resource_version(),
                        change: Box::new(move |index: &mut I| index.apply(object)),
                    })
                }
                Ok(watcher::Event::Delete(object)) => {
                    let key = ObjectRef::from_obj(&object);
                    keys.remove(&key);
                    Some(Update::Delete {
                        key: ObjectKey::of(&object),
                        change: Box::new(move |index: &mut I| index.delete(key)),
                    })
                }
                Ok(watcher::Event::Init) => {
                    gone = std::mem::take(&mut keys);
                    listed.clear();
                    None
                }
                Ok(watcher::Event::InitApply(object)) => {
                    let key = ObjectRef::from_obj(&object);
                    gone.remove(&key);
                    keys.insert(key);
                    listed.push(object);
                    None
                }
                Ok(watcher::Event::InitDone) => {
                    let objects = std::mem::take(&mut listed);
                    let removed: Vec<ObjectRef<K>> =
                        std::mem::take(&mut gone).into_iter().collect();
                    Some(Update::Reset {
                        listed: objects
                            .iter()
                            .map(|o| (ObjectKey::of(o), o.resource_version()))
                            .collect(),
                        removed: removed
                            .iter()
                            .map(|r| ObjectKey::named::<K>(r.namespace.clone(), r.name.clone()))
                            .collect(),
                        change: Box::new(move |index: &mut I| index.reset(objects, removed)),
                    })
                }
                Err(error) => {
                    let message = match &describe_error {
                        Some(describe) => describe(&error),
                        None => format!("{} watch: {error}", K::kind(&())),
                    };
                    Some(Update::Failed { message })
                }
            };
            std::future::ready(update)
        })
        .boxed()
}
