//! The controller's metrics, registered under the `backup_queue_controller`
//! prefix next to controller-kit's common set.
//!
//! | metric | type | meaning |
//! |---|---|---|
//! | `backup_queue_controller_reconciles_total` | counter | passes (plan and write) |
//! | `backup_queue_controller_reconcile_errors_total{kind}` | counter | failed API calls (`kube_api`, `forbidden`), `watch` and `event` failures |
//! | `backup_queue_controller_writes_total{outcome}` | counter | writes: `written`, `dry_run`, `conflict`, `not_found`, `failed` |
//! | `backup_queue_controller_reconcile_duration_seconds` | histogram | planning + writing time |
//! | `backup_queue_controller_queue_depth` | gauge | backups `Queued` after the last plan |
//! | `backup_queue_controller_active_backups` | gauge | backups `ReadyToStart`/`InProgress` after the last plan |
//! | `backup_queue_controller_dequeues_total` | counter | backups moved to `ReadyToStart` |
//! | `backup_queue_controller_enqueues_total` | counter | `New` backups moved to `Queued` |
//! | `backup_queue_controller_conflicts_total` | counter | writes refused with `409 Conflict` |
//! | `backup_queue_controller_wait_time_seconds` | histogram | creation → dequeue |
//! | `backup_queue_controller_foreign_queue_writers_total` | counter | sightings of another manager owning `status.queuePosition` |
//! | `backup_queue_controller_pickup_nudges_total` | counter | pickup nudges of `ReadyToStart` Backups Velero had not started |
//! | `backup_queue_controller_velero_queue_running` | gauge | 1 while Velero's own queue controller runs and this controller writes nothing, else 0 |
//! | `backup_queue_controller_velero_too_old` | gauge | 1 while a Velero server older than 1.18 runs and this controller writes nothing, else 0 |

use controller_kit::metrics::ControllerMetrics;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The metric prefix.
pub const PREFIX: &str = "backup_queue_controller";

/// All metrics. Cheap to clone (shared handles).
#[derive(Debug, Clone)]
pub struct Metrics {
    /// controller-kit's common set (reconciles, errors by kind, durations,
    /// queue depth).
    pub controller: ControllerMetrics,
    /// Backups active after the last plan.
    pub active_backups: Gauge,
    /// Dequeues written.
    pub dequeues: Counter,
    /// Enqueues written.
    pub enqueues: Counter,
    /// Writes refused with 409.
    pub conflicts: Counter,
    /// Time from creation to dequeue, seconds (1 s .. ~9 h).
    pub wait_time: Histogram,
    /// Sightings of another writer of queue positions.
    pub foreign_queue_writers: Counter,
    /// Pickup nudges written (`ReadyToStart` Backups Velero had not started).
    pub pickup_nudges: Counter,
    /// 1 while Velero's own queue controller runs (nothing is written).
    pub velero_queue_running: Gauge,
    /// 1 while a Velero server older than 1.18 runs (nothing is written).
    pub velero_too_old: Gauge,
}

impl Metrics {
    /// Creates the metrics and registers them on `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let controller = ControllerMetrics::register(registry, PREFIX);
        let m = Self {
            controller,
            active_backups: Gauge::default(),
            dequeues: Counter::default(),
            enqueues: Counter::default(),
            conflicts: Counter::default(),
            wait_time: Histogram::new(exponential_buckets(1.0, 2.0, 16)),
            foreign_queue_writers: Counter::default(),
            pickup_nudges: Counter::default(),
            velero_queue_running: Gauge::default(),
            velero_too_old: Gauge::default(),
        };
        let sub = registry.sub_registry_with_prefix(PREFIX);
        sub.register(
            "active_backups",
            "Backups ReadyToStart or InProgress after the last plan",
            m.active_backups.clone(),
        );
        sub.register(
            "dequeues",
            "Backups moved to ReadyToStart",
            m.dequeues.clone(),
        );
        sub.register(
            "enqueues",
            "New backups moved to Queued",
            m.enqueues.clone(),
        );
        sub.register(
            "conflicts",
            "Status writes refused with 409 Conflict (re-planned from fresh state)",
            m.conflicts.clone(),
        );
        sub.register(
            "wait_time_seconds",
            "Time from a backup's creation to its dequeue",
            m.wait_time.clone(),
        );
        sub.register(
            "foreign_queue_writers",
            "Sightings of a field manager other than this controller owning status.queuePosition",
            m.foreign_queue_writers.clone(),
        );
        sub.register(
            "pickup_nudges",
            "Metadata-only updates of ReadyToStart backups Velero had not started within --pickup-timeout",
            m.pickup_nudges.clone(),
        );
        sub.register(
            "velero_queue_running",
            "1 while Velero's own backup queue controller runs and this controller writes nothing (--disable-controllers=backup-queue missing on the Velero server)",
            m.velero_queue_running.clone(),
        );
        sub.register(
            "velero_too_old",
            "1 while a Velero server older than 1.18 (no backup queue; it starts every New Backup itself) runs and this controller writes nothing",
            m.velero_too_old.clone(),
        );
        m
    }
}

impl controller_kit::runner::RegisteredMetrics for Metrics {
    fn register_on(registry: &mut prometheus_client::registry::Registry) -> Self {
        Self::register(registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_are_stable() {
        let mut registry = Registry::default();
        let m = Metrics::register(&mut registry);
        m.controller.record_write("conflict");
        struct Failed;
        impl controller_kit::metrics::ErrorKind for Failed {
            fn kind(&self) -> &'static str {
                "kube_api"
            }
        }
        m.controller.record_error(&Failed);
        let text = controller_kit::metrics::encode(&registry).unwrap();
        let mut names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .collect();
        names.sort_unstable();
        insta::assert_snapshot!(names.join("\n"));
        assert!(text.contains("backup_queue_controller_writes_total{outcome=\"conflict\"} 1"));
    }
}
