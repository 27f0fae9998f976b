//! The main loop: watch Backups and Namespaces, keep the planner's
//! [`QueueState`] fed, plan, and carry the plan out with conditional writes.
//!
//! State is only ever derived from watched objects: after a restart or a
//! re-list the state is rebuilt from the objects, so nothing is lost with
//! the process. Writes are made one by one in the plan's order (every
//! prefix of a plan is safe), each conditioned on the resourceVersion it
//! was planned from. After writing, the loop waits until the watch shows
//! each written Backup at a newer version before planning again ("settling"),
//! so it never plans from its own stale view; a `409` stops the plan and the
//! loop re-plans once the watch shows the fresher object.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::pin::pin;
use std::time::Duration;

use backup_queue::{Plan, QueueEvent, QueueInput, QueueState, StatusChange, WaitReason};
use controller_kit::Shutdown;
use controller_kit::events::EventPublisher;
use controller_kit::metrics::ErrorKind;
use controller_kit::server::Readiness;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use kube_adapters::velero::backup_input;
use tokio::time::Instant;
use velero_api::Backup;

use crate::cli::{CONTROLLER_NAME, Config};
use crate::convert::current_reason;
use crate::error::{Error, ErrorKindLabel};
use crate::foreign::foreign_queue_writers;
use crate::metrics::Metrics;
use crate::writes::{BackupWrite, ReasonUpdate};

/// One queue controller instance (the leader, or a dry run).
pub(crate) struct QueueLoop {
    backups_api: Api<Backup>,
    namespaces_api: Api<Namespace>,
    config: Config,
    status_subresource: bool,
    events: EventPublisher,
    metrics: Metrics,
    readiness: Readiness,

    backups: BTreeMap<String, Backup>,
    namespaces: BTreeSet<String>,
    state: QueueState,
    relist_backups: Option<BTreeMap<String, Backup>>,
    relist_namespaces: Option<BTreeSet<String>>,
    backups_synced: bool,
    namespaces_synced: bool,

    /// Written (or conflicted) Backups → the version planned from; cleared
    /// when the watch shows another version.
    settling: HashMap<String, (Option<String>, Instant)>,
    dirty: bool,
    retry_at: Option<Instant>,
    backoff: Duration,
    warned_foreign: HashSet<(String, String)>,
    warned_invalid: HashSet<(String, String)>,
    /// Events to publish after the current step.
    pending_events: Vec<(Backup, Event)>,
}

/// Result of carrying out one write.
enum Outcome {
    Done,
    /// Stop the plan; re-plan when the watch shows fresher state.
    Stale,
    /// Stop the plan; retry after a backoff.
    Failed,
}

impl QueueLoop {
    pub(crate) fn new(
        client: kube::Client,
        config: Config,
        status_subresource: bool,
        metrics: Metrics,
        readiness: Readiness,
    ) -> Self {
        let events = EventPublisher::new(
            client.clone(),
            CONTROLLER_NAME,
            config.instance.clone(),
            config.dry_run,
        );
        Self {
            backups_api: Api::namespaced(client.clone(), &config.namespace),
            namespaces_api: Api::all(client),
            state: QueueState::new(config.concurrent_backups),
            backoff: config.retry_backoff,
            config,
            status_subresource,
            events,
            metrics,
            readiness,
            backups: BTreeMap::new(),
            namespaces: BTreeSet::new(),
            relist_backups: None,
            relist_namespaces: None,
            backups_synced: false,
            namespaces_synced: false,
            settling: HashMap::new(),
            dirty: true,
            retry_at: None,
            warned_foreign: HashSet::new(),
            warned_invalid: HashSet::new(),
            pending_events: Vec::new(),
        }
    }

    /// Runs until `shutdown` fires.
    pub(crate) async fn run(mut self, shutdown: Shutdown) -> Result<(), Error> {
        let mut backups = watcher(self.backups_api.clone(), watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut namespaces = watcher(self.namespaces_api.clone(), watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut stop = pin!(shutdown.signalled());
        loop {
            let wake = self.wake_at();
            tokio::select! {
                biased;
                () = &mut stop => return Ok(()),
                event = backups.next() => {
                    match event {
                        Some(Ok(e)) => self.on_backup(e),
                        Some(Err(e)) => self.watch_error("backups", &e),
                        None => return Err(Error::WatchEnded("backups")),
                    }
                }
                event = namespaces.next() => {
                    match event {
                        Some(Ok(e)) => self.on_namespace(e),
                        Some(Err(e)) => self.watch_error("namespaces", &e),
                        None => return Err(Error::WatchEnded("namespaces")),
                    }
                }
                () = sleep_until(wake) => {}
            }
            // Take in everything already delivered before planning.
            while let Some(Some(event)) = backups.next().now_or_never() {
                match event {
                    Ok(e) => self.on_backup(e),
                    Err(e) => self.watch_error("backups", &e),
                }
            }
            while let Some(Some(event)) = namespaces.next().now_or_never() {
                match event {
                    Ok(e) => self.on_namespace(e),
                    Err(e) => self.watch_error("namespaces", &e),
                }
            }
            self.act(&shutdown).await;
        }
    }

    fn watch_error(&self, what: &str, error: &watcher::Error) {
        tracing::warn!(watch = what, %error, "watch failed; retrying with backoff");
        self.metrics.controller.record_error(&ErrorKindLabel::Watch);
    }

    /// When the loop must wake up without an event.
    fn wake_at(&self) -> Option<Instant> {
        let settle = self
            .settling
            .values()
            .map(|(_, since)| *since + self.config.settle_timeout)
            .min();
        match (settle, self.retry_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_backup(&mut self, event: watcher::Event<Backup>) {
        match event {
            watcher::Event::Init => self.relist_backups = Some(BTreeMap::new()),
            watcher::Event::InitApply(b) => {
                self.check_foreign_writers(&b);
                if let Some(relist) = self.relist_backups.as_mut() {
                    relist.insert(b.name_any(), b);
                }
            }
            watcher::Event::InitDone => {
                if let Some(relist) = self.relist_backups.take() {
                    self.backups = relist;
                }
                self.backups_synced = true;
                self.settling.clear();
                self.rebuild();
            }
            watcher::Event::Apply(b) => {
                self.check_foreign_writers(&b);
                let name = b.name_any();
                self.settled(&name, b.resource_version().as_deref());
                self.state.apply(QueueEvent::UpsertBackup(backup_input(&b)));
                self.backups.insert(name, b);
                self.dirty = true;
            }
            watcher::Event::Delete(b) => {
                let name = b.name_any();
                self.settling.remove(&name);
                self.state.apply(QueueEvent::DeleteBackup(name.clone()));
                self.backups.remove(&name);
                self.dirty = true;
            }
        }
    }

    fn on_namespace(&mut self, event: watcher::Event<Namespace>) {
        match event {
            watcher::Event::Init => self.relist_namespaces = Some(BTreeSet::new()),
            watcher::Event::InitApply(ns) => {
                if let Some(relist) = self.relist_namespaces.as_mut() {
                    relist.insert(ns.name_any());
                }
            }
            watcher::Event::InitDone => {
                if let Some(relist) = self.relist_namespaces.take() {
                    self.namespaces = relist;
                }
                self.namespaces_synced = true;
                self.rebuild();
            }
            watcher::Event::Apply(ns) => {
                let name = ns.name_any();
                if self.namespaces.insert(name.clone()) {
                    self.state.apply(QueueEvent::AddNamespace(name));
                    self.dirty = true;
                }
            }
            watcher::Event::Delete(ns) => {
                let name = ns.name_any();
                if self.namespaces.remove(&name) {
                    self.state.apply(QueueEvent::DeleteNamespace(name));
                    self.dirty = true;
                }
            }
        }
    }

    /// Rebuilds the planner state from the watched objects (after a list).
    fn rebuild(&mut self) {
        self.state = QueueState::from_input(&QueueInput {
            backups: self.backups.values().map(backup_input).collect(),
            cluster_namespaces: self.namespaces.iter().cloned().collect(),
            concurrent_backups: self.config.concurrent_backups,
        });
        self.dirty = true;
        if self.backups_synced && self.namespaces_synced {
            self.readiness.set_ready(true);
        }
    }

    /// A watch event for `name` at `version`: the write made from another
    /// version is now visible (watch events arrive in order).
    fn settled(&mut self, name: &str, version: Option<&str>) {
        if let Some((planned, _)) = self.settling.get(name)
            && planned.as_deref() != version
        {
            self.settling.remove(name);
        }
    }

    fn check_foreign_writers(&mut self, backup: &Backup) {
        for manager in foreign_queue_writers(backup, CONTROLLER_NAME) {
            let key = (backup.name_any(), manager);
            if self.warned_foreign.contains(&key) {
                continue;
            }
            tracing::warn!(
                backup = %key.0,
                manager = %key.1,
                "another field manager writes status.queuePosition of this Backup: two queue controllers may be ordering the same queue; disable Velero's queue controller with --disable-controllers (see docs/operations.md)"
            );
            self.metrics.foreign_queue_writers.inc();
            let note = format!(
                "field manager {:?} also writes status.queuePosition; run only one backup queue controller (Velero: --disable-controllers=backup-queue)",
                key.1
            );
            self.pending_events.push((
                backup.clone(),
                Event {
                    type_: EventType::Warning,
                    reason: "ForeignQueueWriter".into(),
                    note: Some(note),
                    action: "Detect".into(),
                    secondary: None,
                },
            ));
            self.warned_foreign.insert(key);
        }
    }
}

impl QueueLoop {
    /// Plans and writes, if the state is complete, settled and changed.
    async fn act(&mut self, shutdown: &Shutdown) {
        self.flush_events().await;
        if !(self.backups_synced && self.namespaces_synced) {
            return;
        }
        let now = Instant::now();
        let timeout = self.config.settle_timeout;
        self.settling.retain(|name, (_, since)| {
            let waiting = now < *since + timeout;
            if !waiting {
                tracing::warn!(backup = %name, "the watch did not show the written Backup in time; planning again (writes stay conditional)");
            }
            waiting
        });
        if !self.settling.is_empty() {
            return;
        }
        if let Some(at) = self.retry_at {
            if now < at {
                return;
            }
            self.retry_at = None;
            self.dirty = true;
        }
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let _timer = self.metrics.controller.reconcile_started();
        let plan = self.state.plan();
        self.metrics
            .controller
            .queue_depth
            .set(i64::try_from(plan.waiting.len()).unwrap_or(i64::MAX));
        self.metrics.active_backups.set(i64::from(plan.active));
        self.warn_invalid(&plan);
        let writes = self.writes_for(&plan);
        if !writes.is_empty() {
            tracing::debug!(
                writes = writes.len(),
                active = plan.active,
                queued = plan.waiting.len(),
                "carrying out plan"
            );
        }
        let mut failed = false;
        for write in &writes {
            if shutdown.is_triggered() {
                return;
            }
            match self.execute(write).await {
                Outcome::Done => {}
                Outcome::Stale => {
                    self.dirty = true;
                    break;
                }
                Outcome::Failed => {
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            self.retry_at = Some(Instant::now() + self.backoff);
            self.backoff = (self.backoff * 2).min(self.config.max_retry_backoff);
        } else {
            self.backoff = self.config.retry_backoff;
        }
        self.flush_events().await;
    }

    async fn flush_events(&mut self) {
        for (backup, event) in std::mem::take(&mut self.pending_events) {
            if let Err(error) = self.events.publish(&event, &backup.object_ref(&())).await {
                tracing::warn!(backup = %backup.name_any(), reason = %event.reason, %error, "cannot publish Event");
                self.metrics.controller.record_error(&ErrorKindLabel::Event);
            }
        }
    }

    fn warn_invalid(&mut self, plan: &Plan) {
        for invalid in &plan.invalid {
            let key = (invalid.backup.to_string(), invalid.error.to_string());
            if !self.warned_invalid.insert(key.clone()) {
                continue;
            }
            tracing::warn!(backup = %key.0, error = %key.1, "invalid namespace filter; the backup is treated as covering every namespace");
            if let Some(backup) = self.backups.get(&key.0) {
                self.pending_events.push((
                    backup.clone(),
                    Event {
                        type_: EventType::Warning,
                        reason: "InvalidNamespaceFilter".into(),
                        note: Some(format!(
                            "{}; queued as if it covered every namespace, Velero will probably fail its validation",
                            key.1
                        )),
                        action: "Plan".into(),
                        secondary: None,
                    },
                ));
            }
        }
    }

    /// The plan's status writes (in order) with their annotation changes,
    /// then annotation-only writes for waiting backups whose reason changed.
    fn writes_for(&self, plan: &Plan) -> Vec<BackupWrite> {
        let reasons: HashMap<&str, String> = plan
            .waiting
            .iter()
            .map(|w| (&*w.backup, reason_text(&w.reason)))
            .collect();
        let desired = |name: &str| -> ReasonUpdate {
            let current = self.backups.get(name).and_then(current_reason);
            match (reasons.get(name), current) {
                (Some(want), Some(have)) if want == have => ReasonUpdate::Keep,
                (Some(want), _) => ReasonUpdate::Set(want.clone()),
                (None, Some(_)) => ReasonUpdate::Remove,
                (None, None) => ReasonUpdate::Keep,
            }
        };
        let mut out = Vec::with_capacity(plan.writes.len());
        let mut seen = HashSet::new();
        for w in &plan.writes {
            seen.insert(&*w.backup);
            out.push(BackupWrite {
                backup: w.backup.to_string(),
                resource_version: w.resource_version.as_deref().map(str::to_owned),
                change: Some(w.change),
                reason: desired(&w.backup),
            });
        }
        for w in &plan.waiting {
            if seen.contains(&*w.backup) {
                continue;
            }
            let reason = desired(&w.backup);
            if reason != ReasonUpdate::Keep {
                out.push(BackupWrite {
                    backup: w.backup.to_string(),
                    resource_version: self
                        .backups
                        .get(&*w.backup)
                        .and_then(ResourceExt::resource_version),
                    change: None,
                    reason,
                });
            }
        }
        out
    }

    /// Sends the write; returns the resourceVersion its last patch was
    /// conditioned on (the watch shows a newer one once it is visible).
    async fn patch(&self, write: &BackupWrite) -> Result<Option<String>, kube::Error> {
        let params = PatchParams {
            field_manager: Some(CONTROLLER_NAME.into()),
            ..PatchParams::default()
        };
        if !self.status_subresource {
            self.backups_api
                .patch(&write.backup, &params, &Patch::Merge(write.object_patch()))
                .await?;
            return Ok(write.resource_version.clone());
        }
        let (status, _) = write.subresource_patches(None);
        let mut after = write.resource_version.clone();
        if let Some(status) = status {
            let written = self
                .backups_api
                .patch_status(&write.backup, &params, &Patch::Merge(status))
                .await?;
            after = written.resource_version();
        }
        let mut conditioned_on = write.resource_version.clone();
        if let (_, Some(annotation)) = write.subresource_patches(after.as_deref()) {
            self.backups_api
                .patch(&write.backup, &params, &Patch::Merge(annotation))
                .await?;
            conditioned_on = after;
        }
        Ok(conditioned_on)
    }

    async fn execute(&mut self, write: &BackupWrite) -> Outcome {
        let change = write.change.map(|c| format!("{c:?}"));
        if self.config.dry_run {
            tracing::info!(dry_run = true, backup = %write.backup, change = change.as_deref().unwrap_or("none"), reason = ?write.reason, "would write");
            self.record_success(write);
            return Outcome::Done;
        }
        match self.patch(write).await {
            Ok(conditioned_on) => {
                tracing::info!(backup = %write.backup, change = change.as_deref().unwrap_or("none"), "wrote");
                self.settling
                    .insert(write.backup.clone(), (conditioned_on, Instant::now()));
                self.record_success(write);
                Outcome::Done
            }
            Err(error) => {
                let kind = ErrorKindLabel::of(&error);
                self.metrics.controller.record_error(&kind);
                tracing::info!(backup = %write.backup, %error, kind = kind.kind(), "write refused; stopping this plan");
                match kind {
                    ErrorKindLabel::Conflict => {
                        self.metrics.conflicts.inc();
                        self.after_conflict(write).await
                    }
                    ErrorKindLabel::NotFound => {
                        self.settling.insert(
                            write.backup.clone(),
                            (write.resource_version.clone(), Instant::now()),
                        );
                        Outcome::Stale
                    }
                    _ => Outcome::Failed,
                }
            }
        }
    }

    /// A 409: if the Backup really changed, wait for the watch to show it
    /// and re-plan; if not (a spurious conflict), retry after a backoff.
    async fn after_conflict(&mut self, write: &BackupWrite) -> Outcome {
        match self.backups_api.get_opt(&write.backup).await {
            Ok(Some(fresh)) if fresh.resource_version() == write.resource_version => {
                Outcome::Failed
            }
            Ok(_) => {
                self.settling.insert(
                    write.backup.clone(),
                    (write.resource_version.clone(), Instant::now()),
                );
                Outcome::Stale
            }
            Err(error) => {
                self.metrics
                    .controller
                    .record_error(&ErrorKindLabel::of(&error));
                Outcome::Failed
            }
        }
    }

    /// Metrics and Events for a write that succeeded (or would have).
    fn record_success(&mut self, write: &BackupWrite) {
        let Some(backup) = self.backups.get(&write.backup).cloned() else {
            return;
        };
        match write.change {
            Some(StatusChange::Start) => {
                self.metrics.dequeues.inc();
                let waited = backup
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map(|t| jiff::Timestamp::now().duration_since(t.0))
                    .and_then(|d| std::time::Duration::try_from(d).ok())
                    .unwrap_or_default();
                self.metrics.wait_time.observe(waited.as_secs_f64());
                self.pending_events.push((
                    backup.clone(),
                    Event {
                        type_: EventType::Normal,
                        reason: "Started".into(),
                        note: Some(format!(
                            "started after waiting {} (phase ReadyToStart)",
                            human_duration(waited)
                        )),
                        action: "Dequeue".into(),
                        secondary: None,
                    },
                ));
            }
            Some(StatusChange::Enqueue { position }) => {
                self.metrics.enqueues.inc();
                self.pending_events.push((
                    backup.clone(),
                    Event {
                        type_: EventType::Normal,
                        reason: "Queued".into(),
                        note: Some(format!("queued at position {position}")),
                        action: "Enqueue".into(),
                        secondary: None,
                    },
                ));
            }
            Some(StatusChange::Reposition { from, to }) => {
                tracing::debug!(backup = %write.backup, from, to, "moved in the queue");
            }
            None => {}
        }
        if let ReasonUpdate::Set(text) = &write.reason {
            self.pending_events.push((
                backup,
                Event {
                    type_: EventType::Normal,
                    reason: "Waiting".into(),
                    note: Some(text.clone()),
                    action: "Plan".into(),
                    secondary: None,
                },
            ));
        }
    }
}

/// The words of a wait reason, for the annotation and the `Waiting` Event.
pub fn reason_text(reason: &WaitReason) -> String {
    match reason {
        WaitReason::OverlapsActive {
            backup,
            phase,
            namespaces,
        } => format!(
            "waiting because it overlaps backup {backup} ({phase}) on namespaces {namespaces}"
        ),
        WaitReason::BehindEarlier {
            backup,
            position,
            namespaces,
        } => format!(
            "waiting because it overlaps backup {backup}, queued ahead of it at position {position}, on namespaces {namespaces}"
        ),
        WaitReason::CapacityFull { limit } => format!(
            "waiting for a free slot: {limit} of {limit} concurrent backups are running or ready to start"
        ),
        other => format!("waiting: {other}"),
    }
}

/// `1h2m3s`, `4m0s`, `12s`.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec}s"),
        (h, m, sec) => format!("{h}h{m}m{sec}s"),
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
