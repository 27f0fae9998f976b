//! The index: the Backups of the Velero namespace and the cluster's
//! Namespaces, kept in a [`backup_queue::QueueState`] one event at a time
//! (re-lists rebuild it), plus what the pass needs besides the planner: the
//! current reason annotations, the creation times, and other writers of
//! queue positions. Synchronous and free of I/O.
//!
//! The index also tracks whether anything the explanations depend on
//! changed since the last explained plan was carried out (a Backup's phase,
//! position, namespace filter, creation time or reason annotation, a Backup
//! or Namespace appearing or going): only then does the pass explain every
//! waiting backup ([`backup_queue::QueueState::plan`]); otherwise it asks the
//! fast [`backup_queue::QueueState::plan_writes`].
//!
//! # Other writers of queue positions
//!
//! Velero's own queue controller (Velero versions that have it, unless
//! disabled with `--disable-controllers`) and this controller must never
//! both order the same queue. The API server records, per field manager,
//! which fields it last set; a manager other than ours owning
//! `status.queuePosition` means someone else writes positions (warned
//! about). Queue writes by Velero's own managers as the watch shows them
//! are collected for [`crate::velero_queue`], which stops this controller
//! while Velero's queue controller runs.

use std::collections::{BTreeMap, BTreeSet};

use backup_queue::{BackupInput, QueueEvent, QueueInput, QueueState};
use controller_kit::snapshot::{IndexResource, Reconciler, Runtime, Watch};
use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use kube_adapters::velero::backup_input;
use serde_json::Value;
use velero_api::Backup;

use crate::config::{CONTROLLER_NAME, REASON_ANNOTATION};

/// The queue as the controller sees it (see the module docs).
#[derive(Debug, Clone)]
pub struct QueueIndex {
    concurrent_backups: u32,
    backups: BTreeMap<String, Backup>,
    namespaces: BTreeSet<String>,
    state: QueueState,
    explain: bool,
    foreign: BTreeSet<(String, String)>,
    velero_writes: Vec<(String, String, crate::velero_queue::Seen)>,
}

/// The current value of [`REASON_ANNOTATION`].
pub fn current_reason(backup: &Backup) -> Option<&str> {
    backup
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REASON_ANNOTATION))
        .map(String::as_str)
}

/// What the planner reads of a Backup, without its resourceVersion.
fn planner_view(backup: &Backup) -> (BackupInput, Option<&str>) {
    let mut input = backup_input(backup);
    input.resource_version = None;
    (input, current_reason(backup))
}

impl QueueIndex {
    /// An empty queue with `--concurrent-backups`.
    pub fn new(concurrent_backups: u32) -> Self {
        Self {
            concurrent_backups,
            backups: BTreeMap::new(),
            namespaces: BTreeSet::new(),
            state: QueueState::new(concurrent_backups),
            explain: true,
            foreign: BTreeSet::new(),
            velero_writes: Vec::new(),
        }
    }

    /// The planner state.
    pub fn state(&self) -> &QueueState {
        &self.state
    }

    /// A Backup by name.
    pub fn backup(&self, name: &str) -> Option<&Backup> {
        self.backups.get(name)
    }

    /// Every Backup, by name.
    pub fn backups(&self) -> impl Iterator<Item = &Backup> {
        self.backups.values()
    }

    /// (Backup, field manager) pairs: another manager owns the Backup's
    /// `status.queuePosition`.
    pub fn foreign_writers(&self) -> &BTreeSet<(String, String)> {
        &self.foreign
    }

    /// Takes the writes by Velero's field managers that show its queue
    /// controller or a server older than 1.18, seen by the watches since the
    /// last call, as (Backup, manager, what it showed), oldest first (see
    /// [`crate::velero_queue`]).
    pub fn take_velero_writes(&mut self) -> Vec<(String, String, crate::velero_queue::Seen)> {
        std::mem::take(&mut self.velero_writes)
    }

    /// The creation time of the oldest Backup still `New` (or without a
    /// phase).
    pub fn oldest_new(&self) -> Option<jiff::Timestamp> {
        self.backups
            .values()
            .filter(|b| b.phase() == velero_api::BackupPhase::New)
            .filter_map(|b| b.metadata.creation_timestamp.as_ref().map(|t| t.0))
            .min()
    }

    /// `event`: `backup` came by a watch event, not a relist (which may
    /// skip versions, so it shows no phase moves beyond queue writes).
    fn note_velero_write(&mut self, backup: &Backup, event: bool) {
        let name = backup.name_any();
        let old = self.backups.get(&name);
        use crate::velero_queue::{Seen, pre_queue_start, velero_queue_write};
        if let Some(manager) = velero_queue_write(old, backup, CONTROLLER_NAME) {
            self.velero_writes.push((name, manager, Seen::QueueWrite));
        } else if let Some((manager, seen)) =
            pre_queue_start(old, backup, CONTROLLER_NAME).filter(|_| event)
        {
            self.velero_writes.push((name, manager, seen));
        }
    }

    fn note_foreign_writers(&mut self, backup: &Backup) {
        let name = backup.name_any();
        self.foreign.retain(|(b, _)| *b != name);
        for manager in foreign_queue_writers(backup, CONTROLLER_NAME) {
            self.foreign.insert((name.clone(), manager));
        }
    }

    /// Whether the explanations may have changed since the last explained
    /// plan was carried out.
    pub fn needs_explaining(&self) -> bool {
        self.explain
    }

    /// The explained plan made from this state was carried out completely:
    /// until the planner's inputs change, the fast path suffices.
    pub fn explained(&mut self) {
        self.explain = false;
    }

    fn rebuild(&mut self) {
        self.state = QueueState::from_input(&QueueInput {
            backups: self.backups.values().map(backup_input).collect(),
            cluster_namespaces: self.namespaces.iter().cloned().collect(),
            concurrent_backups: self.concurrent_backups,
        });
        self.explain = true;
    }
}

impl IndexResource<Backup> for QueueIndex {
    fn apply(&mut self, backup: Backup) {
        let name = backup.name_any();
        let changed = self
            .backups
            .get(&name)
            .is_none_or(|old| planner_view(old) != planner_view(&backup));
        self.explain |= changed;
        self.note_foreign_writers(&backup);
        self.note_velero_write(&backup, true);
        self.state
            .apply(QueueEvent::UpsertBackup(backup_input(&backup)));
        self.backups.insert(name, backup);
    }

    fn delete(&mut self, key: ObjectRef<Backup>) {
        if self.backups.remove(&key.name).is_some() {
            self.foreign.retain(|(b, _)| *b != key.name);
            self.state.apply(QueueEvent::DeleteBackup(key.name));
            self.explain = true;
        }
    }

    fn reset(&mut self, backups: Vec<Backup>, _removed: Vec<ObjectRef<Backup>>) {
        self.foreign.clear();
        for backup in &backups {
            self.note_foreign_writers(backup);
            self.note_velero_write(backup, false);
        }
        self.backups = backups.into_iter().map(|b| (b.name_any(), b)).collect();
        self.rebuild();
    }
}

impl IndexResource<Namespace> for QueueIndex {
    fn apply(&mut self, namespace: Namespace) {
        let name = namespace.name_any();
        if self.namespaces.insert(name.clone()) {
            self.state.apply(QueueEvent::AddNamespace(name));
            self.explain = true;
        }
    }

    fn delete(&mut self, key: ObjectRef<Namespace>) {
        if self.namespaces.remove(&key.name) {
            self.state.apply(QueueEvent::DeleteNamespace(key.name));
            self.explain = true;
        }
    }

    fn reset(&mut self, namespaces: Vec<Namespace>, _removed: Vec<ObjectRef<Namespace>>) {
        self.namespaces = namespaces.iter().map(ResourceExt::name_any).collect();
        self.rebuild();
    }
}

/// Adds the watches that feed the index: Backups in the Velero namespace,
/// and all Namespaces.
pub fn watches<R>(runtime: Runtime<R>, client: &kube::Client, namespace: &str) -> Runtime<R>
where
    R: Reconciler<Index = QueueIndex>,
{
    runtime
        .watch(Watch::new(
            Api::<Backup>::namespaced(client.clone(), namespace),
            watcher::Config::default(),
        ))
        .watch(Watch::new(
            Api::<Namespace>::all(client.clone()),
            watcher::Config::default(),
        ))
}

/// The field managers other than `ours` that own `status.queuePosition`
/// (`fieldsV1` contains `f:status` → `f:queuePosition`), sorted, without
/// duplicates.
pub fn foreign_queue_writers(backup: &Backup, ours: &str) -> Vec<String> {
    let mut out: Vec<String> = backup
        .managed_fields()
        .iter()
        .filter(|entry| entry.manager.as_deref().is_some_and(|m| m != ours))
        .filter(|entry| {
            entry
                .fields_v1
                .as_ref()
                .and_then(|f| f.0.get("f:status"))
                .and_then(|s| s.get("f:queuePosition"))
                .is_some_and(|v| !v.is_null())
        })
        .filter_map(|entry| entry.manager.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A `managedFields` entry claiming `status.queuePosition` for `manager`
/// (what the API server records after `manager` writes a position); used by
/// tests and docs.
pub fn queue_position_entry(manager: &str) -> Value {
    serde_json::json!({
        "manager": manager,
        "operation": "Update",
        "apiVersion": "velero.io/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {".": {}, "f:phase": {}, "f:queuePosition": {}}}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_other_managers_owning_the_position_count() {
        let b: Backup = serde_json::from_value(json!({
            "metadata": {"name": "b", "managedFields": [
                queue_position_entry("velero-server"),
                queue_position_entry("backup-queue-controller"),
                {"manager": "kubectl", "operation": "Update",
                 "fieldsV1": {"f:spec": {"f:includedNamespaces": {}}}},
                {"manager": "velero-backup", "operation": "Update",
                 "fieldsV1": {"f:status": {"f:phase": {}}}},
                queue_position_entry("velero-server"),
            ]},
            "spec": {}
        }))
        .unwrap();
        assert_eq!(
            foreign_queue_writers(&b, "backup-queue-controller"),
            ["velero-server"]
        );
        assert!(foreign_queue_writers(&b, "velero-server").len() == 1);
    }
}
