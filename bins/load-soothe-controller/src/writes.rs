//! The executor: carries out a pass's plan through the runtime's writer.
//!
//! 1. Exact mode, every [`Config::confirm_interval`]: ledger entries whose
//!    load this instance never saw (e.g. deleted before it started) are
//!    checked with a GET; gone ones free their slot, and the pass is made
//!    again.
//! 2. Hold Events (`PrepareQueueHold`), once per load and reason.
//! 3. Exact mode: the ledger write (merge patch conditioned on the ledger's
//!    resourceVersion, or create). On `409` the runtime's writer reads the
//!    ledger again and nothing is accepted: the pass is made again.
//! 4. The accepts (see [`crate::loads::accept_patch`]), each conditioned on
//!    the load's resourceVersion; the patched load goes into the index at
//!    once, so the next pass counts it. A `409` re-reads the load.
//!
//! # Bounds
//!
//! - exact: at most `prepareQueueLength` loads in preparation, whatever the
//!   number of replicas (`load-soothe`'s ledger protocol);
//! - optimistic: each replica counts its own accepted loads at once (from
//!   the patch response) and ignores watch events older than what it has
//!   seen, so the loads *one* replica accepted that are still in preparation
//!   never exceed the limit; with `R` replicas at most
//!   `R × prepareQueueLength` (each may admit up to the limit before seeing
//!   the others' admissions).

use std::collections::BTreeMap;
use std::future::Future;

use controller_kit::snapshot::{
    IndexResource, Outcome, Reconciler, Refused, Target, Writer, Written,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::events::{Event, EventType};
use kube::{Api, ResourceExt};
use load_soothe::{HoldReason, Load, LoadId, LoadKind, PassPlan};
use load_soothe::{LedgerWrite, unconfirmed_entries};
use tokio::time::Instant;
use velero_api::{DataDownload, DataUpload, PodVolumeBackup, PodVolumeRestore};

use crate::config::{CONTROLLER_NAME, Config, GateMode};
use crate::index::{GateIndex, LedgerState};
use crate::loads::accept_patch;
use crate::metrics::{KindLabel, Metrics, ReasonLabel};
use kube_adapters::velero::{LoadObject, object_reference};

/// Event reason on a held load.
pub const REASON_HELD: &str = "PrepareQueueHold";
/// Event reason on an accepted load.
pub const REASON_ADMITTED: &str = "PrepareQueueAdmitted";

/// The bounded name of a hold reason (metric label, Event de-duplication).
pub fn reason_name(reason: &HoldReason) -> &'static str {
    match reason {
        HoldReason::QueueFull { .. } => "QueueFull",
        HoldReason::WaitingBehind { .. } => "WaitingBehind",
        HoldReason::LedgerFull { .. } => "LedgerFull",
        HoldReason::AdmittedElsewhere { .. } => "AdmittedElsewhere",
        HoldReason::LedgerUnavailable { .. } => "LedgerUnavailable",
    }
}

/// The gate's pass and executor, with what the executor remembers between
/// passes.
pub struct Gate {
    client: kube::Client,
    config: Config,
    metrics: Metrics,
    /// The hold reason last announced per load.
    announced: BTreeMap<LoadId, &'static str>,
    last_confirm: Option<Instant>,
    config_errors_counted: u64,
}

impl Gate {
    /// A gate writing through `client`.
    pub fn new(client: kube::Client, config: Config, metrics: Metrics) -> Self {
        Self {
            client,
            config,
            metrics,
            announced: BTreeMap::new(),
            last_confirm: None,
            config_errors_counted: 0,
        }
    }

    fn api<K: LoadObject>(&self) -> Api<K> {
        Api::namespaced(self.client.clone(), &self.config.namespace)
    }

    async fn carry_out(&mut self, plan: PassPlan, writer: &mut Writer<'_, GateIndex>) -> Outcome {
        if self.config.mode == GateMode::Exact && self.confirm_due() {
            self.last_confirm = Some(Instant::now());
            if self.confirm_unseen_entries(writer).await {
                return Outcome::Replan;
            }
        }
        self.announce_holds(&plan, writer).await;
        let mut outcome = Outcome::Done;
        if let Some(write) = &plan.ledger_write {
            match self.write_ledger(write, writer).await {
                Ok(()) => {}
                Err(refused) => {
                    if matches!(refused, Refused::Conflict) {
                        self.metrics.ledger_conflicts.inc();
                    }
                    self.record_gauges(&plan, writer.index());
                    return refused.outcome();
                }
            }
        }
        for id in &plan.accepts {
            outcome = outcome.and(self.accept(id, writer).await);
        }
        self.record_gauges(&plan, writer.index());
        outcome
    }

    fn confirm_due(&self) -> bool {
        self.last_confirm
            .is_none_or(|t| t.elapsed() >= self.config.confirm_interval)
    }

    /// GETs the loads of ledger entries this view never saw; returns
    /// whether any slot was freed.
    async fn confirm_unseen_entries(&self, writer: &mut Writer<'_, GateIndex>) -> bool {
        let LedgerState::Valid(snapshot) = writer.index().ledger() else {
            return false;
        };
        let unseen = unconfirmed_entries(&snapshot.ledger, writer.index().cache());
        let mut freed = false;
        for id in unseen {
            let found = match id.kind {
                LoadKind::DataUpload => self.read::<DataUpload>(&id, writer).await,
                LoadKind::DataDownload => self.read::<DataDownload>(&id, writer).await,
                LoadKind::PodVolumeBackup => self.read::<PodVolumeBackup>(&id, writer).await,
                LoadKind::PodVolumeRestore => self.read::<PodVolumeRestore>(&id, writer).await,
            };
            if found == Some(false) {
                tracing::info!(load = %id, "ledger entry of a deleted load; freeing its slot");
                writer.index_mut().confirm_deleted(&id);
                freed = true;
            }
        }
        freed
    }

    /// Whether the load of `id` exists (`None`: the read failed).
    async fn read<K: LoadObject>(
        &self,
        id: &LoadId,
        writer: &mut Writer<'_, GateIndex>,
    ) -> Option<bool>
    where
        GateIndex: IndexResource<K>,
    {
        match writer.refresh(&self.api::<K>(), &id.name).await {
            Ok(Some(object)) => Some(object.uid().as_deref() == Some(id.uid.as_str())),
            Ok(None) => Some(false),
            Err(_) => None,
        }
    }

    async fn announce_holds(&mut self, plan: &PassPlan, writer: &Writer<'_, GateIndex>) {
        let held: BTreeMap<&LoadId, &'static str> = plan
            .holds
            .iter()
            .map(|h| (&h.load, reason_name(&h.reason)))
            .collect();
        self.announced.retain(|id, _| held.contains_key(id));
        for hold in &plan.holds {
            let name = reason_name(&hold.reason);
            if self.announced.get(&hold.load) == Some(&name) {
                continue;
            }
            self.metrics
                .holds
                .get_or_create(&ReasonLabel { reason: name })
                .inc();
            let note = hold.note();
            tracing::info!(load = %hold.load, %note, "holding");
            if publish(writer, &hold.load, REASON_HELD, "Hold", note).await {
                self.announced.insert(hold.load.clone(), name);
            }
        }
    }

    async fn write_ledger(
        &self,
        write: &LedgerWrite,
        writer: &mut Writer<'_, GateIndex>,
    ) -> Result<(), Refused> {
        self.metrics.ledger_writes.inc();
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.config.namespace);
        let written = match &write.expected_resource_version {
            None => {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(self.config.ledger_config_map.clone()),
                        namespace: Some(self.config.namespace.clone()),
                        labels: Some(
                            [(
                                "app.kubernetes.io/managed-by".to_owned(),
                                CONTROLLER_NAME.to_owned(),
                            )]
                            .into(),
                        ),
                        ..ObjectMeta::default()
                    },
                    data: Some(write.data()),
                    ..ConfigMap::default()
                };
                writer.create(&api, &cm).await?
            }
            Some(rv) => {
                let body = serde_json::json!({ "data": write.data() });
                writer
                    .patch(
                        &api,
                        &self.config.ledger_config_map,
                        Some(rv),
                        body,
                        Target::Object,
                    )
                    .await?
            }
        };
        if let Written::Applied(cm) = written {
            tracing::debug!(
                admitted = write.admitted.len(),
                removed = write.removed.len(),
                rv = cm.metadata.resource_version.as_deref(),
                "ledger written"
            );
        }
        Ok(())
    }

    async fn accept(&self, id: &LoadId, writer: &mut Writer<'_, GateIndex>) -> Outcome {
        let Some(load) = writer.index().cache().get(id).cloned() else {
            return Outcome::Done;
        };
        if !load.is_queued_here() {
            return Outcome::Done;
        }
        let Some(rv) = load.resource_version.clone() else {
            tracing::warn!(load = %id, "no resourceVersion known; not accepting it unconditionally");
            return Outcome::Done;
        };
        let body = accept_patch(&self.config.node, jiff::Timestamp::now());
        let result = match id.kind {
            LoadKind::DataUpload => self.patch::<DataUpload>(id, &rv, body, writer).await,
            LoadKind::DataDownload => self.patch::<DataDownload>(id, &rv, body, writer).await,
            LoadKind::PodVolumeBackup => self.patch::<PodVolumeBackup>(id, &rv, body, writer).await,
            LoadKind::PodVolumeRestore => {
                self.patch::<PodVolumeRestore>(id, &rv, body, writer).await
            }
        };
        match result {
            Ok(dry_run) => {
                self.accepted(&load, dry_run, writer).await;
                Outcome::Done
            }
            Err(refused) => {
                if matches!(refused, Refused::Conflict) {
                    self.metrics.accept_conflicts.inc();
                }
                tracing::debug!(load = %id, %refused, "accept refused");
                refused.outcome()
            }
        }
    }

    /// Patches the load; `Ok(true)` under `--dry-run`.
    async fn patch<K: LoadObject>(
        &self,
        id: &LoadId,
        rv: &str,
        body: serde_json::Value,
        writer: &mut Writer<'_, GateIndex>,
    ) -> Result<bool, Refused>
    where
        GateIndex: IndexResource<K>,
    {
        let written = writer
            .patch(&self.api::<K>(), &id.name, Some(rv), body, Target::Object)
            .await?;
        Ok(matches!(written, Written::DryRun))
    }

    async fn accepted(&self, load: &Load, dry_run: bool, writer: &Writer<'_, GateIndex>) {
        if dry_run {
            return;
        }
        let id = &load.id;
        self.metrics
            .admitted
            .get_or_create(&KindLabel {
                kind: id.kind.as_str(),
            })
            .inc();
        let waited = jiff::Timestamp::now()
            .duration_since(load.created)
            .as_secs_f64()
            .max(0.0);
        self.metrics.wait.observe(waited);
        tracing::info!(load = %id, waited_seconds = waited, "accepted");
        publish(
            writer,
            id,
            REASON_ADMITTED,
            "Accept",
            format!(
                "accepted for data mover preparation after waiting {waited:.1}s in the prepare queue"
            ),
        )
        .await;
    }

    fn record_gauges(&mut self, plan: &PassPlan, index: &GateIndex) {
        let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.metrics.held.set(gauge(plan.holds.len() as u64));
        self.metrics
            .in_preparation
            .set(gauge(index.cache().live_counts().total()));
        self.metrics
            .controller
            .queue_depth
            .set(gauge(index.cache().waiting_len() as u64));
        self.metrics.limit.set(gauge(
            index
                .gate()
                .and_then(|g| g.enablement.limit())
                .map_or(0, |l| l.get()),
        ));
        let errors = index.config_errors();
        if errors > self.config_errors_counted {
            self.metrics
                .config_errors
                .inc_by(errors - self.config_errors_counted);
            self.config_errors_counted = errors;
        }
    }
}

async fn publish(
    writer: &Writer<'_, GateIndex>,
    id: &LoadId,
    reason: &str,
    action: &str,
    note: String,
) -> bool {
    let event = Event {
        type_: EventType::Normal,
        reason: reason.to_owned(),
        note: Some(note),
        action: action.to_owned(),
        secondary: None,
    };
    writer.publish(&event, &object_reference(id)).await
}

impl Reconciler for Gate {
    type Index = GateIndex;
    type Plan = PassPlan;

    fn plan(&self, index: &GateIndex, now: jiff::Timestamp) -> PassPlan {
        crate::pass::plan(index, now)
    }

    fn execute(
        &mut self,
        plan: PassPlan,
        writer: &mut Writer<'_, GateIndex>,
    ) -> impl Future<Output = Outcome> + Send {
        self.carry_out(plan, writer)
    }
}
