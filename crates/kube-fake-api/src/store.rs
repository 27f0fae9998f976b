//! The object store: objects as JSON keyed by resource/namespace/name, the
//! resourceVersion counter, the event history that watches replay, and the
//! broadcast channel live watches follow.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::patch::Owners;
use crate::resource::{Registry, ResourceId};

/// Where an object lives: resource type, namespace (`""` for cluster-scoped) and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// The resource collection.
    pub resource: ResourceId,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: String,
    /// Object name.
    pub name: String,
}

/// The kind of change a watch event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl EventType {
    /// The wire name (`ADDED`, `MODIFIED`, `DELETED`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change, as kept in the history and sent to live watches.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    /// The resourceVersion the change produced.
    pub rv: u64,
    /// Which object changed.
    pub key: ObjectKey,
    /// What happened.
    pub kind: EventType,
    /// The object after the change (the last state for deletions).
    pub object: Value,
    /// The object before the change, if it existed.
    pub previous: Option<Value>,
}

/// Default number of events kept for watch replay before the oldest are compacted.
pub const DEFAULT_HISTORY_LIMIT: usize = 10_000;

/// The state behind the API: guarded by one mutex, never held across an await.
#[derive(Debug)]
pub struct Store {
    /// Known resource types.
    pub registry: Registry,
    objects: BTreeMap<ObjectKey, Value>,
    owners: BTreeMap<ObjectKey, Owners>,
    rv: u64,
    uid_counter: u64,
    history: VecDeque<Arc<StoredEvent>>,
    compacted_rv: u64,
    history_limit: usize,
    events: broadcast::Sender<Arc<StoredEvent>>,
    namespaces_required: bool,
}

fn now_string() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}

/// The current time as Kubernetes writes timestamps (RFC 3339, seconds).
pub fn timestamp() -> String {
    now_string()
}

impl Store {
    /// An empty store serving `registry`.
    pub fn new(registry: Registry) -> Self {
        let (events, _) = broadcast::channel(4096);
        Self {
            registry,
            objects: BTreeMap::new(),
            owners: BTreeMap::new(),
            rv: 0,
            uid_counter: 0,
            history: VecDeque::new(),
            compacted_rv: 0,
            history_limit: DEFAULT_HISTORY_LIMIT,
            events,
            namespaces_required: false,
        }
    }

    /// The latest resourceVersion handed out.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// Watches from resourceVersions below this answer `410 Gone`.
    pub fn compacted_rv(&self) -> u64 {
        self.compacted_rv
    }

    /// Forgets the whole event history: watches from any older
    /// resourceVersion now get `410 Gone`. Returns the compaction point.
    pub fn compact(&mut self) -> u64 {
        self.history.clear();
        self.compacted_rv = self.rv;
        self.rv
    }

    /// Whether a namespaced object may only be created in a Namespace that
    /// exists (see [`crate::FakeApi::require_namespaces`]).
    pub fn namespaces_required(&self) -> bool {
        self.namespaces_required
    }

    /// Sets [`Store::namespaces_required`].
    pub fn set_namespaces_required(&mut self, required: bool) {
        self.namespaces_required = required;
    }

    /// Sets how many events are kept for watch replay.
    pub fn set_history_limit(&mut self, limit: usize) {
        self.history_limit = limit.max(1);
    }

    /// The object at `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<&Value> {
        self.objects.get(key)
    }

    /// Objects of `resource`, in `namespace` if given, sorted by namespace then name.
    pub fn list<'a>(
        &'a self,
        resource: &'a ResourceId,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Value)> + 'a {
        self.objects.iter().filter(move |(k, _)| {
            &k.resource == resource && namespace.is_none_or(|ns| k.namespace == ns)
        })
    }

    /// The objects of `resource` as they were at resourceVersion `rv`,
    /// rebuilt by undoing the newer events of the history; `None` when the
    /// history no longer reaches back to `rv` (compacted). This is what a
    /// list at an older resourceVersion (a continue token,
    /// `resourceVersionMatch=Exact`) reads, as etcd serves it at that
    /// revision.
    pub fn snapshot(&self, resource: &ResourceId, rv: u64) -> Option<BTreeMap<ObjectKey, Value>> {
        if rv < self.compacted_rv {
            return None;
        }
        let mut objects: BTreeMap<ObjectKey, Value> = self
            .list(resource, None)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for event in self.history.iter().rev().take_while(|e| e.rv > rv) {
            if event.key.resource != *resource {
                continue;
            }
            match (&event.kind, &event.previous) {
                (EventType::Added, _) | (_, None) => {
                    objects.remove(&event.key);
                }
                (EventType::Modified | EventType::Deleted, Some(previous)) => {
                    objects.insert(event.key.clone(), previous.clone());
                }
            }
        }
        Some(objects)
    }

    /// Mutable access to the field ownership of `key`.
    pub fn owners_mut(&mut self, key: &ObjectKey) -> &mut Owners {
        self.owners.entry(key.clone()).or_default()
    }

    /// Field ownership of `key` (a copy).
    pub fn owners(&self, key: &ObjectKey) -> Owners {
        self.owners.get(key).cloned().unwrap_or_default()
    }

    /// Events newer than `rv`, oldest first, and a receiver for later ones,
    /// taken atomically so no event is missed or duplicated. `None` when the
    /// history no longer reaches back to `rv` (the caller answers `410`).
    #[allow(clippy::type_complexity)]
    pub fn subscribe_since(
        &self,
        rv: u64,
    ) -> Option<(Vec<Arc<StoredEvent>>, broadcast::Receiver<Arc<StoredEvent>>)> {
        if rv < self.compacted_rv {
            return None;
        }
        let replay = self.history.iter().filter(|e| e.rv > rv).cloned().collect();
        Some((replay, self.events.subscribe()))
    }

    /// A receiver for future events only.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<StoredEvent>> {
        self.events.subscribe()
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn record(&mut self, event: StoredEvent) {
        let event = Arc::new(event);
        self.history.push_back(Arc::clone(&event));
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.compacted_rv = old.rv;
            }
        }
        // No receivers is fine.
        let _ = self.events.send(event);
    }

    /// Stores a new object, filling uid, creationTimestamp and
    /// resourceVersion (the caller sets `generation` where the type has
    /// one). The caller has checked that `key` is free.
    pub fn insert(&mut self, key: ObjectKey, mut object: Value) -> Value {
        let rv = self.next_rv();
        self.uid_counter += 1;
        let uid = format!("00000000-0000-4000-8000-{:012x}", self.uid_counter);
        set_meta(&mut object, "uid", json!(uid));
        if object
            .pointer("/metadata/creationTimestamp")
            .is_none_or(Value::is_null)
        {
            set_meta(&mut object, "creationTimestamp", json!(now_string()));
        }
        set_meta(&mut object, "resourceVersion", json!(rv.to_string()));
        self.objects.insert(key.clone(), object.clone());
        self.record(StoredEvent {
            rv,
            key,
            kind: EventType::Added,
            object: object.clone(),
            previous: None,
        });
        object
    }

    /// Replaces an existing object with a new resourceVersion. An object
    /// being deleted (deletionTimestamp set) whose finalizers are now empty
    /// is removed instead.
    pub fn replace(&mut self, key: ObjectKey, mut object: Value) -> Value {
        if is_deleting(&object) && finalizers_empty(&object) {
            return self.remove(&key, Some(object)).unwrap_or_default();
        }
        let rv = self.next_rv();
        set_meta(&mut object, "resourceVersion", json!(rv.to_string()));
        let previous = self.objects.insert(key.clone(), object.clone());
        self.record(StoredEvent {
            rv,
            key,
            kind: EventType::Modified,
            object: object.clone(),
            previous,
        });
        object
    }

    /// Removes the object at `key` right away (no finalizer check), emitting
    /// `DELETED` with `last_state` (or the stored object) at a new resourceVersion.
    pub fn remove(&mut self, key: &ObjectKey, last_state: Option<Value>) -> Option<Value> {
        let previous = self.objects.remove(key)?;
        self.owners.remove(key);
        let rv = self.next_rv();
        let mut object = last_state.unwrap_or_else(|| previous.clone());
        set_meta(&mut object, "resourceVersion", json!(rv.to_string()));
        self.record(StoredEvent {
            rv,
            key: key.clone(),
            kind: EventType::Deleted,
            object: object.clone(),
            previous: Some(previous),
        });
        Some(object)
    }
}

/// Sets `metadata.<field>`, creating `metadata` when needed.
pub fn set_meta(object: &mut Value, field: &str, value: Value) {
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    object["metadata"][field] = value;
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// Whether `metadata.finalizers` is absent or empty.
pub fn finalizers_empty(object: &Value) -> bool {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}
