//! The decision loop.
//!
//! One task owns the state: a `load_soothe::CountCache` fed by the watches
//! of the four load kinds, the gate configuration from the node-agent
//! ConfigMap, and (exact mode) the ledger snapshot. Watch events are applied
//! as they arrive; after each batch of events, and every
//! [`Config::requeue_after`] when nothing happens, a *pass* decides the
//! waiting loads of the configured data movers in first-in first-out order
//! (`load_soothe::FifoKey`):
//!
//! - admit: the accept patch (see [`crate::loads`]), conditioned on the
//!   load's resourceVersion; the patched object goes into the cache at once,
//!   so the next decision of the same pass counts it;
//! - exact mode: first the ledger write (merge patch carrying the ledger's
//!   resourceVersion, or create), then the accepts; on `409` the ledger is
//!   read again (GET) and the pass restarts;
//! - hold: nothing written; an Event when the load's hold reason changes.
//!   Once a load is held because the queue is full (or others are ahead),
//!   every later load is held for the same reason without deciding again.
//!
//! Nothing is decided before every watch has listed once.
//!
//! # Bounds
//!
//! - exact: at most `prepareQueueLength` loads in preparation, whatever the
//!   number of replicas (`load-soothe`'s ledger protocol);
//! - optimistic: each replica counts its own accepted loads at once (from
//!   the patch response) and ignores watch events older than what it has
//!   seen, so the loads *one* replica accepted and that are still in
//!   preparation never exceed the limit; with `R` replicas at most
//!   `R × prepareQueueLength` (each may admit up to the limit before seeing
//!   the others' admissions).
//!
//! Stale events are detected by comparing resourceVersions as integers
//! (what the API server's etcd revisions are); a non-numeric
//! resourceVersion is always taken as newer.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use controller_kit::Shutdown;
use controller_kit::events::EventPublisher;
use controller_kit::server::{HealthServer, Readiness};
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use kube_adapters::velero::{LoadObject, load, object_reference};
use load_soothe::CountCache;
use load_soothe::unconfirmed_entries;
use load_soothe::{
    Decision, ExactView, GateConfig, Hold, HoldReason, Ledger, LedgerSnapshot, LedgerWrite, Load,
    LoadId, LoadKind, NotGated, RecountPolicy, decide,
};
use prometheus_client::registry::Registry;
use tokio::sync::mpsc;
use tokio::time::Instant;
use velero_api::{DataDownload, DataUpload, PodVolumeBackup, PodVolumeRestore};

use crate::config::{Config, GateMode};
use crate::error::Error;
use crate::loads::accept_patch;
use crate::metrics::{KindLabel, Metrics, ReasonLabel};
use crate::watch::{Input, Watched, spawn_config_map_watch, spawn_load_watch};

/// Event reason on a held load.
pub const REASON_HELD: &str = "PrepareQueueHold";
/// Event reason on an accepted load.
pub const REASON_ADMITTED: &str = "PrepareQueueAdmitted";

/// Runs the controller until `shutdown` fires.
///
/// The client is injected (tests pass one talking to `kube-fake-api`).
/// Serves `/metrics`, `/healthz`, `/readyz` on [`Config::metrics_addr`] if
/// set; `/readyz` turns ready once every watch has listed.
pub async fn run(client: kube::Client, config: Config, shutdown: Shutdown) -> Result<(), Error> {
    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    let readiness = Readiness::new();
    let mut tasks = Vec::new();
    if let Some(addr) = config.metrics_addr {
        let server = HealthServer::bind(addr, Arc::new(registry), readiness.clone()).await?;
        tracing::info!(addr = %server.local_addr()?, "serving /metrics, /healthz, /readyz");
        let stop = shutdown.clone();
        tasks.push(tokio::spawn(async move {
            if let Err(e) = server.serve(stop).await {
                tracing::error!(error = %e, "metrics server failed");
            }
        }));
    }
    let (tx, rx) = mpsc::unbounded_channel();
    tasks.push(spawn_load_watch::<DataUpload>(
        client.clone(),
        config.clone(),
        tx.clone(),
    ));
    tasks.push(spawn_load_watch::<DataDownload>(
        client.clone(),
        config.clone(),
        tx.clone(),
    ));
    tasks.push(spawn_load_watch::<PodVolumeBackup>(
        client.clone(),
        config.clone(),
        tx.clone(),
    ));
    tasks.push(spawn_load_watch::<PodVolumeRestore>(
        client.clone(),
        config.clone(),
        tx.clone(),
    ));
    tasks.push(spawn_config_map_watch(
        client.clone(),
        &config.namespace,
        &config.node_agent_config_map,
        Watched::NodeAgentConfig,
        tx.clone(),
    ));
    if config.mode == GateMode::Exact {
        tasks.push(spawn_config_map_watch(
            client.clone(),
            &config.namespace,
            &config.ledger_config_map,
            Watched::Ledger,
            tx.clone(),
        ));
    }
    drop(tx);
    let publisher = EventPublisher::new(
        client.clone(),
        crate::CONTROLLER_NAME,
        Some(config.node.clone()),
        config.dry_run,
    );
    let (events_tx, mut events_rx) = mpsc::unbounded_channel::<(Event, ObjectReference)>();
    tasks.push(tokio::spawn(async move {
        while let Some((event, reference)) = events_rx.recv().await {
            if let Err(e) = publisher.publish(&event, &reference).await {
                tracing::warn!(error = %e, reason = %event.reason, "cannot publish event");
            }
        }
    }));
    tracing::info!(
        node = %config.node,
        mode = config.mode.as_str(),
        namespace = %config.namespace,
        datamovers = ?config.datamovers,
        dry_run = config.dry_run,
        "starting"
    );
    let mut state = State::new(client, config, metrics, events_tx);
    state.run_loop(rx, &shutdown, &readiness).await;
    for task in tasks {
        task.abort();
    }
    tracing::info!(reason = ?shutdown.reason(), "stopped");
    Ok(())
}

/// The ledger as this instance last read it.
#[derive(Debug)]
enum LedgerState {
    Unread,
    Valid(LedgerSnapshot),
    Invalid(String),
}

struct State {
    client: kube::Client,
    config: Config,
    metrics: Metrics,
    events: mpsc::UnboundedSender<(Event, ObjectReference)>,
    cache: CountCache,
    gate: GateConfig,
    known: BTreeMap<LoadKind, BTreeSet<LoadId>>,
    listed_kinds: BTreeSet<LoadKind>,
    config_loaded: bool,
    ledger: LedgerState,
    first_seen: BTreeMap<LoadId, Instant>,
    held: BTreeMap<LoadId, &'static str>,
    would_admit: BTreeSet<LoadId>,
    last_confirm: Option<Instant>,
    dirty: bool,
}

fn rv_number(rv: Option<&str>) -> Option<u64> {
    rv.and_then(|s| s.parse().ok())
}

/// Whether `incoming` is older than `current` (both numeric).
fn is_older(incoming: Option<&str>, current: Option<&str>) -> bool {
    matches!((rv_number(incoming), rv_number(current)), (Some(i), Some(c)) if i < c)
}

fn reason_name(reason: &HoldReason) -> &'static str {
    match reason {
        HoldReason::QueueFull { .. } => "QueueFull",
        HoldReason::WaitingBehind { .. } => "WaitingBehind",
        HoldReason::LedgerFull { .. } => "LedgerFull",
        HoldReason::AdmittedElsewhere { .. } => "AdmittedElsewhere",
        HoldReason::LedgerUnavailable { .. } => "LedgerUnavailable",
    }
}

/// The event note of a hold.
pub fn hold_note(reason: &HoldReason, ahead_in_queue: usize) -> String {
    format!("{reason}; {ahead_in_queue} earlier load(s) waiting ahead of this one")
}

impl State {
    fn new(
        client: kube::Client,
        config: Config,
        metrics: Metrics,
        events: mpsc::UnboundedSender<(Event, ObjectReference)>,
    ) -> State {
        let mode = config.mode.mode();
        State {
            client,
            gate: GateConfig::new(None, mode),
            cache: CountCache::new(RecountPolicy::for_mode(mode)),
            config,
            metrics,
            events,
            known: BTreeMap::new(),
            listed_kinds: BTreeSet::new(),
            config_loaded: false,
            ledger: LedgerState::Unread,
            first_seen: BTreeMap::new(),
            held: BTreeMap::new(),
            would_admit: BTreeSet::new(),
            last_confirm: None,
            dirty: true,
        }
    }

    fn synced(&self) -> bool {
        self.listed_kinds.len() == LoadKind::COUNT
            && self.config_loaded
            && (self.config.mode == GateMode::Optimistic
                || !matches!(self.ledger, LedgerState::Unread))
    }

    async fn run_loop(
        &mut self,
        mut rx: mpsc::UnboundedReceiver<Input>,
        shutdown: &Shutdown,
        readiness: &Readiness,
    ) {
        let stop = shutdown.signalled();
        tokio::pin!(stop);
        let mut next_tick = Instant::now() + self.config.requeue_after;
        loop {
            tokio::select! {
                biased;
                () = &mut stop => break,
                input = rx.recv() => {
                    let Some(input) = input else { break };
                    self.handle(input);
                    while let Ok(input) = rx.try_recv() {
                        self.handle(input);
                    }
                }
                () = tokio::time::sleep_until(next_tick) => {
                    self.dirty = true;
                    next_tick = Instant::now() + self.config.requeue_after;
                }
            }
            if self.synced() {
                readiness.set_ready(true);
                if self.dirty {
                    self.dirty = false;
                    self.pass().await;
                    next_tick = Instant::now() + self.config.requeue_after;
                }
            }
        }
    }

    fn handle(&mut self, input: Input) {
        self.dirty = true;
        match input {
            Input::Apply(load) => self.apply_load(load),
            Input::Delete(id) => self.delete_load(&id),
            Input::Resync(kind, loads) => {
                let fresh: BTreeSet<LoadId> = loads.iter().map(|l| l.id.clone()).collect();
                let gone: Vec<LoadId> = self
                    .known
                    .get(&kind)
                    .map(|ids| ids.difference(&fresh).cloned().collect())
                    .unwrap_or_default();
                for id in gone {
                    self.delete_load(&id);
                }
                for load in loads {
                    self.apply_load(load);
                }
                self.listed_kinds.insert(kind);
            }
            Input::NodeAgentConfig(cm) => self.set_node_agent_config(cm.as_ref()),
            Input::Ledger(cm) => self.set_ledger(cm.as_ref()),
            Input::WatchError(message) => {
                tracing::warn!(%message, "watch failed; retrying");
                self.metrics
                    .controller
                    .errors
                    .get_or_create(&controller_kit::metrics::ErrorLabels { kind: "watch" })
                    .inc();
            }
        }
    }

    fn apply_load(&mut self, load: Load) {
        if let Some(current) = self.cache.get(&load.id)
            && is_older(
                load.resource_version.as_deref(),
                current.resource_version.as_deref(),
            )
        {
            return;
        }
        if load.is_queued_here() {
            self.first_seen
                .entry(load.id.clone())
                .or_insert_with(Instant::now);
        }
        self.known
            .entry(load.id.kind)
            .or_default()
            .insert(load.id.clone());
        self.cache.apply(load);
    }

    fn delete_load(&mut self, id: &LoadId) {
        if let Some(ids) = self.known.get_mut(&id.kind) {
            ids.remove(id);
        }
        self.first_seen.remove(id);
        self.held.remove(id);
        self.cache.delete(id);
    }

    fn set_node_agent_config(&mut self, cm: Option<&ConfigMap>) {
        let prepare_queue_length = match cm {
            None => None,
            Some(cm) => match affinity_translate::load_config_map(cm) {
                Ok(loaded) => loaded
                    .config
                    .load_concurrency
                    .and_then(|l| l.prepare_queue_length),
                Err(e) => {
                    self.metrics.config_errors.inc();
                    tracing::error!(
                        error = %e,
                        configmap = %self.config.node_agent_config_map,
                        kept = ?self.gate.enablement.limit().map(|l| l.get()),
                        "cannot load the node-agent ConfigMap; keeping the last good prepareQueueLength (nothing is decided until one was loaded)"
                    );
                    return;
                }
            },
        };
        let gate = GateConfig::new(prepare_queue_length, self.config.mode.mode());
        if gate != self.gate || !self.config_loaded {
            tracing::info!(
                prepare_queue_length = ?prepare_queue_length,
                limit = ?gate.enablement.limit().map(|l| l.get()),
                "prepare queue configuration in effect"
            );
        }
        self.gate = gate;
        self.metrics.limit.set(
            gate.enablement
                .limit()
                .map_or(0, |l| i64::try_from(l.get()).unwrap_or(i64::MAX)),
        );
        self.config_loaded = true;
    }

    /// Takes a ledger ConfigMap read from the watch, an own write or a GET,
    /// unless it is older than the snapshot held (`None`: the ledger does
    /// not exist; the next admission creates it).
    fn set_ledger(&mut self, cm: Option<&ConfigMap>) {
        let (rv, parsed) = match cm {
            None => (None, Ok(Ledger::empty())),
            Some(cm) => (
                cm.metadata.resource_version.clone(),
                Ledger::from_config_map_data(cm.data.as_ref()),
            ),
        };
        if let LedgerState::Valid(current) = &self.ledger
            && cm.is_some()
            && is_older(rv.as_deref(), current.resource_version.as_deref())
        {
            return;
        }
        match parsed {
            Ok(ledger) => {
                let snapshot = LedgerSnapshot {
                    resource_version: rv,
                    ledger,
                };
                let listed = snapshot.ledger.ids();
                self.cache.retain_tombstones(|id| listed.contains(id));
                self.ledger = LedgerState::Valid(snapshot);
            }
            Err(e) => {
                tracing::error!(
                    error = %e,
                    configmap = %self.config.ledger_config_map,
                    "cannot parse the ledger; holding every load until it is fixed or deleted"
                );
                self.ledger = LedgerState::Invalid(format!(
                    "ConfigMap {}/{}: {e}",
                    self.config.namespace, self.config.ledger_config_map
                ));
            }
        }
    }

    async fn pass(&mut self) {
        let _timer = self.metrics.controller.reconcile_started();
        let now = jiff::Timestamp::now();
        if self.config.mode == GateMode::Exact
            && self
                .last_confirm
                .is_none_or(|t| t.elapsed() >= self.config.confirm_interval)
        {
            self.last_confirm = Some(Instant::now());
            self.confirm_unseen_entries().await;
        }
        let queue: Vec<LoadId> = self.cache.waiting().map(|k| k.id()).collect();
        let mut blocked: Option<HoldReason> = None;
        let mut held_now = 0i64;
        // Loads of this pass that are still waiting: "behind how many".
        let mut ahead = 0usize;
        for id in &queue {
            let Some(load) = self.cache.get(id).cloned() else {
                continue;
            };
            if !load.is_queued_here() {
                continue;
            }
            if let Some(reason) = &blocked {
                let reason = reason.clone();
                self.note_hold(&load, &reason, ahead);
                held_now += 1;
                ahead += 1;
                continue;
            }
            let decision = match (&self.ledger, self.config.mode) {
                (LedgerState::Valid(snapshot), GateMode::Exact) => decide(
                    &self.gate,
                    &mut self.cache,
                    Some(ExactView {
                        ledger: snapshot,
                        node: &self.config.node,
                    }),
                    &load,
                    now,
                ),
                (LedgerState::Invalid(detail), GateMode::Exact)
                    if self.gate.enablement.limit().is_some() =>
                {
                    Decision::Hold(Hold {
                        requeue_after: self.config.requeue_after,
                        reason: HoldReason::LedgerUnavailable {
                            detail: detail.clone(),
                        },
                    })
                }
                _ => decide(&self.gate, &mut self.cache, None, &load, now),
            };
            match decision {
                Decision::NotGated(NotGated::Disabled(_)) | Decision::Admit(_) => {
                    self.accept(&load, now).await;
                }
                Decision::NotGated(_) => {}
                Decision::Hold(hold) => {
                    self.note_hold(&load, &hold.reason, ahead);
                    held_now += 1;
                    if !matches!(hold.reason, HoldReason::AdmittedElsewhere { .. }) {
                        blocked = Some(hold.reason);
                    }
                }
                Decision::WriteLedger(write) => {
                    if self.config.dry_run {
                        if self.would_admit.insert(load.id.clone()) {
                            tracing::info!(
                                dry_run = true,
                                load = %load.id,
                                admits = write.admitted.len(),
                                removes = write.removed.len(),
                                "would write the ledger and accept"
                            );
                        }
                        continue;
                    }
                    match self.write_ledger(&write).await {
                        Ok(()) => {
                            for admitted in &write.admitted {
                                if let Some(l) = self.cache.get(admitted).cloned()
                                    && l.is_queued_here()
                                {
                                    self.accept(&l, now).await;
                                }
                            }
                        }
                        Err(e) if e.is_conflict() => {
                            self.metrics.ledger_conflicts.inc();
                            tracing::debug!(load = %load.id, "ledger conflict; re-reading");
                            self.refresh_ledger().await;
                            self.dirty = true;
                            break;
                        }
                        Err(e) => {
                            self.metrics.controller.record_error(&e);
                            tracing::warn!(error = %e, "ledger write failed");
                            break;
                        }
                    }
                }
            }
            if self.cache.get(id).is_some_and(Load::is_queued_here) {
                ahead += 1;
            }
        }
        // Tombstones only matter for ledger entries (exact mode); without
        // this they would grow with every deleted load.
        match &self.ledger {
            LedgerState::Valid(snapshot) if self.config.mode == GateMode::Exact => {
                let listed = snapshot.ledger.ids();
                self.cache.retain_tombstones(|id| listed.contains(id));
            }
            LedgerState::Invalid(_) | LedgerState::Unread
                if self.config.mode == GateMode::Exact => {}
            _ => self.cache.retain_tombstones(|_| false),
        }
        self.held
            .retain(|id, _| self.cache.get(id).is_some_and(Load::is_queued_here));
        self.would_admit
            .retain(|id| self.cache.get(id).is_some_and(Load::is_queued_here));
        self.metrics.held.set(held_now);
        self.metrics
            .in_preparation
            .set(i64::try_from(self.cache.live_counts().total()).unwrap_or(i64::MAX));
        self.metrics
            .controller
            .queue_depth
            .set(i64::try_from(self.cache.waiting_len()).unwrap_or(i64::MAX));
    }

    fn note_hold(&mut self, load: &Load, reason: &HoldReason, ahead: usize) {
        let name = reason_name(reason);
        if self.held.get(&load.id) == Some(&name) {
            return;
        }
        self.held.insert(load.id.clone(), name);
        self.metrics
            .holds
            .get_or_create(&ReasonLabel { reason: name })
            .inc();
        let note = hold_note(reason, ahead);
        tracing::info!(load = %load.id, %note, "holding");
        self.publish(&load.id, REASON_HELD, "Hold", note);
    }

    fn publish(&self, id: &LoadId, reason: &str, action: &str, note: String) {
        let event = Event {
            type_: EventType::Normal,
            reason: reason.to_owned(),
            note: Some(note),
            action: action.to_owned(),
            secondary: None,
        };
        let _ = self.events.send((event, object_reference(id)));
    }

    async fn accept(&mut self, load: &Load, now: jiff::Timestamp) {
        let id = &load.id;
        if self.config.dry_run {
            if self.would_admit.insert(id.clone()) {
                tracing::info!(dry_run = true, load = %id, "would accept");
            }
            self.cache.release(id);
            return;
        }
        let Some(rv) = load.resource_version.as_deref() else {
            self.cache.release(id);
            return;
        };
        let body = accept_patch(rv, &self.config.node, now);
        match self.patch_load(id, &body).await {
            Ok(accepted) => {
                self.apply_load(accepted);
                self.metrics
                    .admitted
                    .get_or_create(&KindLabel {
                        kind: id.kind.as_str(),
                    })
                    .inc();
                let waited = self
                    .first_seen
                    .remove(id)
                    .map(|t| t.elapsed().as_secs_f64())
                    .unwrap_or(0.0);
                self.metrics.wait.observe(waited);
                self.held.remove(id);
                tracing::info!(load = %id, waited_seconds = waited, "accepted");
                self.publish(
                    id,
                    REASON_ADMITTED,
                    "Accept",
                    format!(
                        "accepted for data mover preparation after waiting {waited:.1}s in the prepare queue"
                    ),
                );
            }
            Err(e) => {
                self.cache.release(id);
                if e.is_conflict() {
                    self.metrics.accept_conflicts.inc();
                    tracing::debug!(load = %id, "accept conflict; re-reading the load");
                } else {
                    self.metrics.controller.record_error(&e);
                    tracing::warn!(load = %id, error = %e, "accept failed");
                }
                self.reread(id).await;
                self.dirty = true;
            }
        }
    }

    async fn patch_load(&self, id: &LoadId, body: &serde_json::Value) -> Result<Load, Error> {
        match id.kind {
            LoadKind::DataUpload => self.patch_typed::<DataUpload>(&id.name, body).await,
            LoadKind::DataDownload => self.patch_typed::<DataDownload>(&id.name, body).await,
            LoadKind::PodVolumeBackup => self.patch_typed::<PodVolumeBackup>(&id.name, body).await,
            LoadKind::PodVolumeRestore => {
                self.patch_typed::<PodVolumeRestore>(&id.name, body).await
            }
        }
    }

    async fn patch_typed<K: LoadObject>(
        &self,
        name: &str,
        body: &serde_json::Value,
    ) -> Result<Load, Error> {
        let api: Api<K> = Api::namespaced(self.client.clone(), &self.config.namespace);
        let obj = api
            .patch(name, &self.patch_params(), &Patch::Merge(body))
            .await?;
        Ok(load(&obj, self.config.gate_scope()))
    }

    async fn get_load(&self, id: &LoadId) -> Result<Option<Load>, Error> {
        match id.kind {
            LoadKind::DataUpload => self.get_typed::<DataUpload>(&id.name).await,
            LoadKind::DataDownload => self.get_typed::<DataDownload>(&id.name).await,
            LoadKind::PodVolumeBackup => self.get_typed::<PodVolumeBackup>(&id.name).await,
            LoadKind::PodVolumeRestore => self.get_typed::<PodVolumeRestore>(&id.name).await,
        }
    }

    async fn get_typed<K: LoadObject>(&self, name: &str) -> Result<Option<Load>, Error> {
        let api: Api<K> = Api::namespaced(self.client.clone(), &self.config.namespace);
        Ok(api
            .get_opt(name)
            .await?
            .map(|o| load(&o, self.config.gate_scope())))
    }

    /// GETs a load after a failed accept and applies what is there.
    async fn reread(&mut self, id: &LoadId) {
        match self.get_load(id).await {
            Ok(Some(load)) if load.id.uid == id.uid => self.apply_load(load),
            Ok(_) => self.delete_load(id),
            Err(e) => {
                self.metrics.controller.record_error(&e);
                tracing::warn!(load = %id, error = %e, "cannot re-read the load");
            }
        }
    }

    /// Exact mode: ledger entries whose load this instance never saw (e.g.
    /// deleted before it started) are checked with a GET; gone ones free
    /// their slot.
    async fn confirm_unseen_entries(&mut self) {
        let LedgerState::Valid(snapshot) = &self.ledger else {
            return;
        };
        let unseen = unconfirmed_entries(&snapshot.ledger, &self.cache);
        for id in unseen {
            match self.get_load(&id).await {
                Ok(Some(load)) if load.id.uid == id.uid => self.apply_load(load),
                Ok(_) => {
                    tracing::info!(load = %id, "ledger entry of a deleted load; freeing its slot");
                    self.cache.confirm_deleted(&id);
                }
                Err(e) => {
                    self.metrics.controller.record_error(&e);
                    tracing::warn!(load = %id, error = %e, "cannot check a ledger entry");
                }
            }
        }
    }

    fn patch_params(&self) -> PatchParams {
        PatchParams {
            field_manager: Some(crate::CONTROLLER_NAME.to_owned()),
            ..PatchParams::default()
        }
    }

    fn ledger_api(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.config.namespace)
    }

    async fn write_ledger(&mut self, write: &LedgerWrite) -> Result<(), Error> {
        self.metrics.ledger_writes.inc();
        let api = self.ledger_api();
        let written = match &write.expected_resource_version {
            None => {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(self.config.ledger_config_map.clone()),
                        namespace: Some(self.config.namespace.clone()),
                        labels: Some(
                            [(
                                "app.kubernetes.io/managed-by".to_owned(),
                                crate::CONTROLLER_NAME.to_owned(),
                            )]
                            .into(),
                        ),
                        ..ObjectMeta::default()
                    },
                    data: Some(write.data()),
                    ..ConfigMap::default()
                };
                api.create(&PostParams::default(), &cm).await?
            }
            Some(_) => {
                api.patch(
                    &self.config.ledger_config_map,
                    &self.patch_params(),
                    &Patch::Merge(write.merge_patch()),
                )
                .await?
            }
        };
        tracing::debug!(
            admitted = write.admitted.len(),
            removed = write.removed.len(),
            rv = ?written.metadata.resource_version,
            "ledger written"
        );
        self.set_ledger(Some(&written));
        Ok(())
    }

    async fn refresh_ledger(&mut self) {
        match self
            .ledger_api()
            .get_opt(&self.config.ledger_config_map)
            .await
        {
            Ok(cm) => self.set_ledger(cm.as_ref()),
            Err(e) => {
                let e = Error::from(e);
                self.metrics.controller.record_error(&e);
                tracing::warn!(error = %e, "cannot read the ledger");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use load_soothe::KindCounts;

    #[test]
    fn stale_resource_versions_are_detected_numerically_only() {
        assert!(is_older(Some("5"), Some("7")));
        assert!(!is_older(Some("7"), Some("7")));
        assert!(!is_older(Some("8"), Some("7")));
        assert!(!is_older(Some("abc"), Some("7")));
        assert!(!is_older(None, Some("7")));
    }

    #[test]
    fn hold_notes_say_why_and_behind_how_many() {
        let full = HoldReason::QueueFull {
            counts: KindCounts {
                data_upload: 3,
                pod_volume_backup: 1,
                ..KindCounts::default()
            },
            reserved: 0,
            limit: 4,
        };
        let ledger = HoldReason::LedgerFull {
            ledger_entries: 10,
            unledgered: 0,
            limit: 10,
        };
        insta::assert_snapshot!(
            format!("{}\n{}", hold_note(&full, 7), hold_note(&ledger, 0)),
            @r"
        prepare queue full: 4 of 4 loads in preparation (DataUpload 3, DataDownload 0, PodVolumeBackup 1, PodVolumeRestore 0); 7 earlier load(s) waiting ahead of this one
        prepare queue full: ledger lists 10 of 10 admitted loads; 0 earlier load(s) waiting ahead of this one
        "
        );
    }
}
