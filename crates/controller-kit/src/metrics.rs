//! The common controller metric set on a prometheus-client [`Registry`].
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `<prefix>_reconciles_total` | counter | – |
//! | `<prefix>_reconcile_errors_total` | counter | `kind` (bounded: `&'static str` from [`ErrorKind`]) |
//! | `<prefix>_reconcile_duration_seconds` | histogram | – |
//! | `<prefix>_queue_depth` | gauge | – |
//! | `<prefix>_writes_total` | counter | `outcome`: `written`, `dry_run`, `conflict` (409), `not_found` (404), `failed` |
//!
//! Controllers register their own extra metrics on the same registry.

use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// An error that can be counted: `kind` must come from a small fixed set
/// (enum variant names), which keeps the label's cardinality bounded.
pub trait ErrorKind {
    /// The label value, e.g. `"kube_api"`, `"conflict"`, `"invalid_spec"`.
    fn kind(&self) -> &'static str;
}

/// The `kind` label of the error counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ErrorLabels {
    /// Bounded error kind.
    pub kind: &'static str,
}

/// The `outcome` label of the write counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct WriteLabels {
    /// `written`, `dry_run`, `conflict`, `not_found` or `failed`.
    pub outcome: &'static str,
}

/// Histogram buckets for reconcile durations, in seconds (1 ms .. ~16 s).
pub fn duration_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.001, 2.0, 15)
}

/// The common controller metrics. Cheap to clone (metrics are shared handles).
#[derive(Debug, Clone)]
pub struct ControllerMetrics {
    /// Reconciliations started.
    pub reconciles: Counter,
    /// Failed reconciliations by error kind.
    pub errors: Family<ErrorLabels, Counter>,
    /// Reconciliation durations.
    pub duration: Histogram,
    /// Objects waiting in the controller's queue (set by the controller).
    pub queue_depth: Gauge,
    /// API writes by outcome.
    pub writes: Family<WriteLabels, Counter>,
}

impl ControllerMetrics {
    /// Creates the metrics and registers them under `prefix` (e.g. the
    /// controller name with `_` instead of `-`).
    pub fn register(registry: &mut Registry, prefix: &str) -> Self {
        let metrics = Self {
            reconciles: Counter::default(),
            errors: Family::default(),
            duration: Histogram::new(duration_buckets()),
            queue_depth: Gauge::default(),
            writes: Family::default(),
        };
        let sub = registry.sub_registry_with_prefix(prefix);
        sub.register(
            "reconciles",
            "Reconciliations started",
            metrics.reconciles.clone(),
        );
        sub.register(
            "reconcile_errors",
            "Failed reconciliations by error kind",
            metrics.errors.clone(),
        );
        sub.register(
            "reconcile_duration_seconds",
            "Reconciliation duration in seconds",
            metrics.duration.clone(),
        );
        sub.register(
            "queue_depth",
            "Objects waiting to be processed",
            metrics.queue_depth.clone(),
        );
        sub.register("writes", "API writes by outcome", metrics.writes.clone());
        metrics
    }

    /// Counts a reconciliation and returns a timer that records its
    /// duration when dropped.
    pub fn reconcile_started(&self) -> ReconcileTimer {
        self.reconciles.inc();
        ReconcileTimer {
            histogram: self.duration.clone(),
            start: Instant::now(),
        }
    }

    /// Counts a write by its outcome.
    pub fn record_write(&self, outcome: &'static str) {
        self.writes.get_or_create(&WriteLabels { outcome }).inc();
    }

    /// Counts a failed reconciliation by the error's kind.
    pub fn record_error(&self, error: &dyn ErrorKind) {
        self.errors
            .get_or_create(&ErrorLabels { kind: error.kind() })
            .inc();
    }
}

/// Records a reconciliation's duration when dropped.
#[derive(Debug)]
pub struct ReconcileTimer {
    histogram: Histogram,
    start: Instant,
}

impl Drop for ReconcileTimer {
    fn drop(&mut self) {
        self.histogram.observe(self.start.elapsed().as_secs_f64());
    }
}

/// Renders `registry` in the OpenMetrics text format.
pub fn encode(registry: &Registry) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Boom;
    impl ErrorKind for Boom {
        fn kind(&self) -> &'static str {
            "boom"
        }
    }

    #[test]
    fn metric_set_renders_with_prefix_and_bounded_error_kinds() {
        let mut registry = Registry::default();
        let m = ControllerMetrics::register(&mut registry, "demo");
        {
            let _t = m.reconcile_started();
        }
        m.record_error(&Boom);
        m.record_error(&Boom);
        m.queue_depth.set(3);
        let text = encode(&registry).unwrap();
        assert!(text.contains("demo_reconciles_total 1"), "{text}");
        assert!(
            text.contains("demo_reconcile_errors_total{kind=\"boom\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("demo_reconcile_duration_seconds_count 1"),
            "{text}"
        );
        assert!(text.contains("demo_queue_depth 3"), "{text}");
    }
}
