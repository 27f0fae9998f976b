//! The executor, and the patches it sends as pure functions of a planned
//! write.
//!
//! Every write is a JSON merge patch conditioned (by the runtime's writer)
//! on the resourceVersion the plan was made from: the API server answers
//! `409 Conflict` if the Backup changed since, so a decision based on stale
//! data never lands; the writer then reads the Backup again and the pass is
//! made again from fresh state. Only the fields this controller owns are
//! touched (`status.phase`, `status.queuePosition`, the
//! [`REASON_ANNOTATION`](crate::REASON_ANNOTATION)); the object is never
//! replaced (unknown fields would be lost).
//! Writes are made one by one in the plan's order and the plan stops at the
//! first refused one (every prefix of a plan is safe).
//!
//! With a status subresource, the status goes to `/status` and the
//! annotation to the object, conditioned on the version the first patch
//! produced.

use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;

use backup_queue::StatusChange;
use controller_kit::snapshot::{Outcome, Reconciler, Refused, Target, Timestamp, Writer, Written};
use kube::api::Api;
use kube::runtime::events::{Event, EventType};
use kube::{Resource, ResourceExt};
use velero_api::Backup;

use crate::backup_write::{BackupWrite, ReasonUpdate};
use crate::config::Config;
use crate::index::QueueIndex;
use crate::metrics::Metrics;
use crate::pass::{self, QueuePlan, human_duration};
use crate::velero_queue::{self, Decision, DeploymentRead, Gate, Stop};
use controller_kit::server::Readiness;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ObjectReference;

/// The pass and the executor, with what the executor remembers.
pub struct Queue {
    client: kube::Client,
    config: Config,
    status_subresource: bool,
    metrics: Metrics,
    warned_foreign: HashSet<(String, String)>,
    warned_invalid: HashSet<(String, String)>,
    nudged: std::collections::BTreeMap<String, u32>,
    readiness: Readiness,
    gate: Gate,
    deployment_read_at: Option<std::time::Instant>,
    /// The Event reason the controller stopped writing for, while stopped.
    closed: Option<&'static str>,
}

impl Queue {
    /// A queue writing through `client`; `status_subresource` says whether
    /// the Backup CRD serves `/status`; `readiness` is held down while
    /// Velero's own queue controller runs.
    pub fn new(
        client: kube::Client,
        config: Config,
        status_subresource: bool,
        metrics: Metrics,
        readiness: Readiness,
    ) -> Self {
        Self {
            client,
            config,
            status_subresource,
            metrics,
            warned_foreign: HashSet::new(),
            warned_invalid: HashSet::new(),
            nudged: std::collections::BTreeMap::new(),
            readiness,
            gate: Gate::default(),
            deployment_read_at: None,
            closed: None,
        }
    }

    /// Reads the Velero server Deployment, at most once per re-check
    /// interval; a transient error keeps the previous reading.
    async fn read_deployment(&mut self) {
        let name = self.config.velero_deployment.clone();
        if name.is_empty() {
            self.gate.deployment = Some(DeploymentRead::Unavailable(
                "--velero-deployment is empty".into(),
            ));
            return;
        }
        if self
            .deployment_read_at
            .is_some_and(|at| at.elapsed() < self.config.velero_queue_recheck)
        {
            return;
        }
        self.deployment_read_at = Some(std::time::Instant::now());
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), &self.config.namespace);
        let read = match api.get_opt(&name).await {
            Ok(Some(deployment)) => {
                DeploymentRead::Read(velero_queue::deployment_verdict(&deployment))
            }
            Ok(None) => DeploymentRead::Unavailable("not found".into()),
            Err(kube::Error::Api(status)) if status.code == 403 => {
                DeploymentRead::Unavailable(format!("forbidden: {}", status.message))
            }
            Err(error) => {
                tracing::info!(%error, deployment = %name, "cannot read the Velero server Deployment");
                if self.gate.deployment.is_some() {
                    return;
                }
                DeploymentRead::Unavailable(error.to_string())
            }
        };
        if self.gate.deployment.as_ref() != Some(&read) {
            tracing::info!(deployment = %name, reading = %read, "read the Velero server Deployment");
        }
        self.gate.deployment = Some(read);
    }

    /// Whether Velero's own queue controller is off, so this controller may
    /// write ([`crate::velero_queue`]); if not, says so once (log, Event)
    /// and keeps `/readyz` failing with the reason.
    async fn velero_queue_allows(&mut self, writer: &mut Writer<'_, QueueIndex>) -> bool {
        let now = Timestamp::now();
        for (backup, manager, seen) in writer.index_mut().take_velero_writes() {
            tracing::debug!(%backup, %manager, %seen, "a Velero write shows its queue controller or a server older than 1.18");
            self.gate.sighted(backup, manager, seen, now);
        }
        self.read_deployment().await;
        let decision = self.gate.decide(
            &self.config.namespace,
            &self.config.velero_deployment,
            writer.index().oldest_new(),
            now,
            self.config.velero_queue_recheck,
        );
        match decision {
            Decision::Open => {
                if self.closed.take().is_some() {
                    tracing::info!(
                        "neither Velero's own backup queue controller nor a Velero server older than 1.18 is running any more; writing again"
                    );
                }
                self.readiness.unblock(velero_queue::READINESS_KEY);
                self.metrics.velero_queue_running.set(0);
                self.metrics.velero_too_old.set(0);
                true
            }
            Decision::Closed(stop) => {
                self.metrics.velero_queue_running.set(1);
                self.metrics.velero_too_old.set(0);
                self.close("VeleroQueueEnabled", stop, writer).await;
                false
            }
            Decision::VeleroTooOld(stop) => {
                self.metrics.velero_queue_running.set(0);
                self.metrics.velero_too_old.set(1);
                self.close("VeleroTooOld", stop, writer).await;
                false
            }
        }
    }

    /// Keeps `/readyz` failing with the stop's message and, when the
    /// controller stops (or stops for another reason), logs it and
    /// publishes a `Warning` Event `reason`: on the Backup whose write
    /// decided, else on the Velero Deployment.
    async fn close(
        &mut self,
        reason: &'static str,
        stop: Stop,
        writer: &mut Writer<'_, QueueIndex>,
    ) {
        self.readiness
            .block(velero_queue::READINESS_KEY, stop.message.clone());
        if self.closed.replace(reason) == Some(reason) {
            return;
        }
        tracing::error!("{}", stop.message);
        let event = Event {
            type_: EventType::Warning,
            reason: reason.into(),
            note: Some(stop.message),
            action: "Detect".into(),
            secondary: None,
        };
        let reference = match stop
            .backup
            .as_deref()
            .and_then(|b| writer.index().backup(b))
        {
            Some(backup) => backup.object_ref(&()),
            None => ObjectReference {
                api_version: Some("apps/v1".into()),
                kind: Some("Deployment".into()),
                name: Some(self.config.velero_deployment.clone()),
                namespace: Some(self.config.namespace.clone()),
                ..ObjectReference::default()
            },
        };
        writer.publish(&event, &reference).await;
    }

    async fn carry_out(&mut self, plan: QueuePlan, writer: &mut Writer<'_, QueueIndex>) -> Outcome {
        self.warn_foreign_writers(writer).await;
        self.warn_invalid(&plan, writer).await;
        // Shadow mode (--dry-run) beside Velero's queue is supported.
        if !self.config.dry_run && !self.velero_queue_allows(writer).await {
            return Outcome::Done;
        }
        if plan.explained {
            self.metrics
                .controller
                .queue_depth
                .set(i64::try_from(plan.queued).unwrap_or(i64::MAX));
            self.metrics.active_backups.set(i64::from(plan.active));
        }
        if !plan.writes.is_empty() {
            tracing::debug!(
                writes = plan.writes.len(),
                active = plan.active,
                queued = plan.queued,
                "carrying out plan"
            );
        }
        let api: Api<Backup> = Api::namespaced(self.client.clone(), &self.config.namespace);
        for write in &plan.writes {
            let outcome = self.write_one(&api, write, writer).await;
            if outcome != Outcome::Done {
                return outcome;
            }
            if writer.news() {
                // Someone else changed a Backup or Namespace: the rest of
                // this plan (renumbering, reasons) may be stale, and the
                // change (a completion, say) must not wait for it. Every
                // prefix of a plan is safe; the next pass starts from here.
                tracing::debug!("news arrived; planning again before the rest of this plan");
                return Outcome::Superseded;
            }
        }
        if plan.explained {
            writer.index_mut().explained();
        }
        self.nudge(&api, &plan.nudges, writer).await
    }

    /// Sends the pickup nudges (see [`crate::pickup`]), forgetting the
    /// counts of Backups that moved on.
    async fn nudge(
        &mut self,
        api: &Api<Backup>,
        nudges: &[crate::pickup::Nudge],
        writer: &mut Writer<'_, QueueIndex>,
    ) -> Outcome {
        let index = writer.index();
        self.nudged.retain(|name, _| {
            index
                .backup(name)
                .is_some_and(|b| b.phase() == velero_api::BackupPhase::ReadyToStart)
        });
        for nudge in nudges {
            let patch = crate::pickup::patch(Timestamp::now());
            match writer
                .patch(
                    api,
                    &nudge.backup,
                    nudge.resource_version.as_deref(),
                    patch,
                    Target::Object,
                )
                .await
            {
                Ok(_) => {
                    self.nudged.insert(nudge.backup.clone(), nudge.attempt);
                    self.metrics.pickup_nudges.inc();
                    let note = format!(
                        "ReadyToStart for {} and not started by Velero; nudged it with a metadata-only update (attempt {}), as Velero starts backups only on Update events",
                        human_duration(nudge.waited),
                        nudge.attempt
                    );
                    tracing::warn!(backup = %nudge.backup, attempt = nudge.attempt, "{note}");
                    // One Event per wait: repeats while Velero is down are
                    // counted and logged, not published every timeout.
                    let first = nudge.attempt == 1;
                    if let Some(backup) = writer.index().backup(&nudge.backup).filter(|_| first) {
                        publish(
                            writer,
                            backup,
                            EventType::Warning,
                            "PickupNudged",
                            "Nudge",
                            note,
                        )
                        .await;
                    }
                }
                Err(refused) => {
                    tracing::info!(backup = %nudge.backup, %refused, "nudge refused");
                    return refused.outcome();
                }
            }
        }
        Outcome::Done
    }

    async fn warn_foreign_writers(&mut self, writer: &Writer<'_, QueueIndex>) {
        let sightings: Vec<(String, String)> = writer
            .index()
            .foreign_writers()
            .iter()
            .filter(|key| !self.warned_foreign.contains(*key))
            .cloned()
            .collect();
        for key in sightings {
            tracing::warn!(
                backup = %key.0,
                manager = %key.1,
                "another field manager writes status.queuePosition of this Backup: two queue controllers may be ordering the same queue; start the Velero server with --disable-controllers=backup-queue (see docs/operations.md)"
            );
            self.metrics.foreign_queue_writers.inc();
            let note = format!(
                "field manager {:?} also writes status.queuePosition; run only one backup queue controller (Velero: --disable-controllers=backup-queue)",
                key.1
            );
            if let Some(backup) = writer.index().backup(&key.0) {
                publish(
                    writer,
                    backup,
                    EventType::Warning,
                    "ForeignQueueWriter",
                    "Detect",
                    note,
                )
                .await;
            }
            self.warned_foreign.insert(key);
        }
    }

    async fn warn_invalid(&mut self, plan: &QueuePlan, writer: &Writer<'_, QueueIndex>) {
        for key in &plan.invalid {
            if !self.warned_invalid.insert(key.clone()) {
                continue;
            }
            tracing::warn!(backup = %key.0, error = %key.1, "invalid namespace filter; the backup is treated as covering every namespace");
            if let Some(backup) = writer.index().backup(&key.0) {
                let note = format!(
                    "{}; queued as if it covered every namespace, Velero will probably fail its validation",
                    key.1
                );
                publish(
                    writer,
                    backup,
                    EventType::Warning,
                    "InvalidNamespaceFilter",
                    "Plan",
                    note,
                )
                .await;
            }
        }
    }

    async fn write_one(
        &self,
        api: &Api<Backup>,
        write: &BackupWrite,
        writer: &mut Writer<'_, QueueIndex>,
    ) -> Outcome {
        // Flat JSON values for the log line: the change's name and the
        // queue positions it moves between.
        let (change, from, to) = match write.change {
            Some(StatusChange::Start) => ("start", None, None),
            Some(StatusChange::Enqueue { position }) => ("enqueue", None, Some(position)),
            Some(StatusChange::Reposition { from, to }) => ("reposition", Some(from), Some(to)),
            None => ("none", None, None),
        };
        match self.patch(api, write, writer).await {
            Ok(()) => {
                let dry_run = writer.dry_run();
                tracing::info!(
                    backup = %write.backup,
                    change,
                    from_position = from,
                    queue_position = to,
                    dry_run,
                    "{}",
                    if dry_run { "would write (--dry-run)" } else { "wrote" }
                );
                self.record_success(write, writer).await;
                Outcome::Done
            }
            Err(refused) => {
                if matches!(refused, Refused::Conflict) {
                    self.metrics.conflicts.inc();
                }
                tracing::info!(backup = %write.backup, %refused, "write refused; stopping this plan");
                refused.outcome()
            }
        }
    }

    async fn patch(
        &self,
        api: &Api<Backup>,
        write: &BackupWrite,
        writer: &mut Writer<'_, QueueIndex>,
    ) -> Result<(), Refused> {
        let name = &write.backup;
        let planned = write.resource_version.as_deref();
        if !self.status_subresource {
            writer
                .patch(api, name, planned, write.object_patch(), Target::Object)
                .await?;
            return Ok(());
        }
        let mut after = write.resource_version.clone();
        if let Some(status) = write.status_patch()
            && let Written::Applied(backup) = writer
                .patch(api, name, planned, status, Target::Status)
                .await?
        {
            after = backup.resource_version();
        }
        if let Some(annotation) = write.annotation_patch() {
            writer
                .patch(api, name, after.as_deref(), annotation, Target::Object)
                .await?;
        }
        Ok(())
    }

    /// Metrics and Events for a write that succeeded (or would have).
    async fn record_success(&self, write: &BackupWrite, writer: &Writer<'_, QueueIndex>) {
        let Some(backup) = writer.index().backup(&write.backup) else {
            return;
        };
        match write.change {
            Some(StatusChange::Start) => {
                self.metrics.dequeues.inc();
                let waited = backup
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map(|t| Timestamp::now().duration_since(t.0))
                    .and_then(|d| Duration::try_from(d).ok())
                    .unwrap_or_default();
                self.metrics.wait_time.observe(waited.as_secs_f64());
                let note = format!(
                    "started after waiting {} (phase ReadyToStart)",
                    human_duration(waited)
                );
                publish(
                    writer,
                    backup,
                    EventType::Normal,
                    "Started",
                    "Dequeue",
                    note,
                )
                .await;
            }
            Some(StatusChange::Enqueue { position }) => {
                self.metrics.enqueues.inc();
                let note = format!("queued at position {position}");
                publish(writer, backup, EventType::Normal, "Queued", "Enqueue", note).await;
            }
            Some(StatusChange::Reposition { from, to }) => {
                tracing::debug!(backup = %write.backup, from, to, "moved in the queue");
            }
            None => {}
        }
        if let ReasonUpdate::Set(text) = &write.reason {
            publish(
                writer,
                backup,
                EventType::Normal,
                "Waiting",
                "Plan",
                text.clone(),
            )
            .await;
        }
    }
}

async fn publish(
    writer: &Writer<'_, QueueIndex>,
    backup: &Backup,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
) {
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(note),
        action: action.into(),
        secondary: None,
    };
    writer.publish(&event, &backup.object_ref(&())).await;
}

impl Reconciler for Queue {
    type Index = QueueIndex;
    type Plan = QueuePlan;

    fn plan(&self, index: &QueueIndex, now: Timestamp) -> QueuePlan {
        let mut plan = pass::plan(index);
        if !self.config.pickup_timeout.is_zero() {
            plan.nudges = crate::pickup::due(index, now, self.config.pickup_timeout, &self.nudged);
        }
        plan
    }

    fn execute(
        &mut self,
        plan: QueuePlan,
        writer: &mut Writer<'_, QueueIndex>,
    ) -> impl Future<Output = Outcome> + Send {
        self.carry_out(plan, writer)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn write(change: Option<StatusChange>, reason: ReasonUpdate) -> BackupWrite {
        BackupWrite {
            backup: "b1".into(),
            resource_version: Some("41".into()),
            change,
            reason,
        }
    }

    #[test]
    fn patches_touch_only_owned_fields() {
        let cases = [
            (
                "start",
                write(Some(StatusChange::Start), ReasonUpdate::Remove),
            ),
            (
                "enqueue",
                write(
                    Some(StatusChange::Enqueue { position: 3 }),
                    ReasonUpdate::Set("capacity full".into()),
                ),
            ),
            (
                "reposition",
                write(
                    Some(StatusChange::Reposition { from: 3, to: 2 }),
                    ReasonUpdate::Keep,
                ),
            ),
            (
                "reason only",
                write(None, ReasonUpdate::Set("overlaps".into())),
            ),
        ];
        let rendered: Vec<Value> = cases
            .iter()
            .map(|(name, w)| {
                json!({"case": name, "object": w.object_patch(),
                       "status_subresource": {"status": w.status_patch(), "annotation": w.annotation_patch()}})
            })
            .collect();
        insta::assert_json_snapshot!(rendered);
    }

    #[test]
    fn empty_write_is_detected() {
        assert!(write(None, ReasonUpdate::Keep).is_empty());
        assert!(!write(None, ReasonUpdate::Remove).is_empty());
    }
}
