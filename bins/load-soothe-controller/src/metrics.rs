//! Metrics, prefix `load_soothe_controller_`.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `reconciles_total`, `reconcile_errors_total{kind}`, `reconcile_duration_seconds`, `queue_depth`, `writes_total{outcome}` | common set (controller-kit's snapshot runtime); one reconcile = one pass over the queue; queue depth = waiting loads of the configured data movers |
//! | `loads_in_preparation` | gauge | – (all four kinds, this instance's view) |
//! | `prepare_queue_limit` | gauge | – (0 = gate disabled) |
//! | `admitted_total` | counter | `kind` (the four load kinds) |
//! | `held_loads` | gauge | – (waiting loads held at the last pass) |
//! | `holds_total` | counter | `reason` (`QueueFull`, `WaitingBehind`, `LedgerFull`, `AdmittedElsewhere`, `LedgerUnavailable`) counted when a load's reason changes |
//! | `wait_seconds` | histogram | – (creation → accepted by this instance) |
//! | `ledger_writes_total` | counter | – |
//! | `ledger_conflicts_total` | counter | – (409 on a ledger write) |
//! | `accept_conflicts_total` | counter | – (409 on an accept: another replica or the data mover changed the load) |
//! | `config_errors_total` | counter | – (node-agent ConfigMap could not be loaded; the last good limit is kept) |

use controller_kit::metrics::ControllerMetrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// `kind` label.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct KindLabel {
    /// Load kind.
    pub kind: &'static str,
}

/// `reason` label.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ReasonLabel {
    /// Hold reason variant name.
    pub reason: &'static str,
}

/// The controller's metrics (cheap to clone: shared handles).
#[derive(Clone, Debug)]
pub struct Metrics {
    /// Common set.
    pub controller: ControllerMetrics,
    /// Loads in preparation.
    pub in_preparation: Gauge,
    /// The limit.
    pub limit: Gauge,
    /// Admissions by kind.
    pub admitted: Family<KindLabel, Counter>,
    /// Loads held at the last pass.
    pub held: Gauge,
    /// Holds by reason.
    pub holds: Family<ReasonLabel, Counter>,
    /// Waiting time.
    pub wait: Histogram,
    /// Ledger writes.
    pub ledger_writes: Counter,
    /// Ledger conflicts.
    pub ledger_conflicts: Counter,
    /// Accept conflicts.
    pub accept_conflicts: Counter,
    /// Configuration errors.
    pub config_errors: Counter,
}

impl Metrics {
    /// Creates and registers the metrics.
    pub fn register(registry: &mut Registry) -> Metrics {
        let prefix = crate::config::CONTROLLER_NAME.replace('-', "_");
        let controller = ControllerMetrics::register(registry, &prefix);
        let m = Metrics {
            controller,
            in_preparation: Gauge::default(),
            limit: Gauge::default(),
            admitted: Family::default(),
            held: Gauge::default(),
            holds: Family::default(),
            // 10 ms .. ~3 h.
            wait: Histogram::new(exponential_buckets(0.01, 3.0, 14)),
            ledger_writes: Counter::default(),
            ledger_conflicts: Counter::default(),
            accept_conflicts: Counter::default(),
            config_errors: Counter::default(),
        };
        let sub = registry.sub_registry_with_prefix(&prefix);
        sub.register(
            "loads_in_preparation",
            "Loads in preparation (Accepted, Prepared or labelled velero.io/expose-on-going=true), all four kinds",
            m.in_preparation.clone(),
        );
        sub.register(
            "prepare_queue_limit",
            "loadConcurrency.prepareQueueLength in effect (0: gate disabled)",
            m.limit.clone(),
        );
        sub.register("admitted", "Loads accepted, by kind", m.admitted.clone());
        sub.register(
            "held_loads",
            "Waiting loads held at the last decision pass",
            m.held.clone(),
        );
        sub.register(
            "holds",
            "Holds by reason (counted when a load's reason changes)",
            m.holds.clone(),
        );
        sub.register(
            "wait_seconds",
            "Time from a load's creation to its acceptance by this instance",
            m.wait.clone(),
        );
        sub.register(
            "ledger_writes",
            "Ledger ConfigMap writes",
            m.ledger_writes.clone(),
        );
        sub.register(
            "ledger_conflicts",
            "Ledger writes rejected with 409 (another replica wrote first)",
            m.ledger_conflicts.clone(),
        );
        sub.register(
            "accept_conflicts",
            "Accept patches rejected with 409 (the load changed)",
            m.accept_conflicts.clone(),
        );
        sub.register(
            "config_errors",
            "Node-agent ConfigMap load failures (last good limit kept)",
            m.config_errors.clone(),
        );
        m
    }
}

impl controller_kit::runner::RegisteredMetrics for Metrics {
    fn register_on(registry: &mut Registry) -> Self {
        Self::register(registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_render_with_the_controller_prefix() {
        let mut registry = Registry::default();
        let m = Metrics::register(&mut registry);
        m.admitted
            .get_or_create(&KindLabel { kind: "DataUpload" })
            .inc();
        m.holds
            .get_or_create(&ReasonLabel {
                reason: "QueueFull",
            })
            .inc();
        m.wait.observe(0.5);
        m.in_preparation.set(3);
        m.ledger_conflicts.inc();
        let text = controller_kit::metrics::encode(&registry).unwrap();
        for needle in [
            "load_soothe_controller_admitted_total{kind=\"DataUpload\"} 1",
            "load_soothe_controller_holds_total{reason=\"QueueFull\"} 1",
            "load_soothe_controller_wait_seconds_count 1",
            "load_soothe_controller_loads_in_preparation 3",
            "load_soothe_controller_ledger_conflicts_total 1",
            "load_soothe_controller_reconciles_total 0",
        ] {
            assert!(text.contains(needle), "{needle} missing in\n{text}");
        }
    }
}
