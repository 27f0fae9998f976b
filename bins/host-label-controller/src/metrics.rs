//! The controller's metrics (prefix `host_label_controller_`).
//!
//! | metric | type | meaning |
//! |---|---|---|
//! | `reconciles_total`, `reconcile_errors_total{kind}`, `reconcile_duration_seconds`, `queue_depth` | common set | one reconcile = one pass over all Nodes |
//! | `shared_host_violations` | gauge | groups of replicas sharing a physical host under a required rule |
//! | `preferred_shared_hosts` | gauge | hosts shared by replicas whose rules on the host keys are only preferred |
//! | `unlabelled_nodes` | gauge | Nodes lacking a value for a host key |
//! | `nodes_without_host_information` | gauge | Nodes the source says nothing about |
//! | `node_patches_total` | counter | Node label patches made (or planned, in dry-run) |
//! | `node_patch_conflicts_total` | counter | 409s on Node patches (each is retried from a fresh read) |
//! | `events_total` | counter | Events published (or logged, in dry-run) |
//! | `module_host_violations{group, forced}` | gauge | with `--audit-cluster-modules`: members of one CAPV cluster module beyond one per ESXi host, per group (`namespace/name` of the KubeadmControlPlane or MachineDeployment); `forced="true"` when no vMotion can remove one |

use controller_kit::metrics::ControllerMetrics;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Metric name prefix.
pub const PREFIX: &str = "host_label_controller";

/// The controller's metrics. Cheap to clone (shared handles).
#[derive(Debug, Clone)]
pub struct Metrics {
    /// The common controller set.
    pub controller: ControllerMetrics,
    /// Groups of replicas sharing a physical host under a required rule.
    pub shared_host_violations: Gauge,
    /// Hosts shared by replicas whose rules are only preferred.
    pub preferred_shared_hosts: Gauge,
    /// Nodes lacking a value for a host key.
    pub unlabelled_nodes: Gauge,
    /// Nodes without host information.
    pub nodes_without_host_information: Gauge,
    /// Node label patches.
    pub node_patches: Counter,
    /// 409s on Node patches.
    pub node_patch_conflicts: Counter,
    /// Events published.
    pub events: Counter,
    /// Members of one cluster module beyond one per host, by `group` and
    /// `forced`.
    pub module_host_violations: Family<Vec<(String, String)>, Gauge>,
}

impl Metrics {
    /// Creates and registers the metrics.
    pub fn register(registry: &mut Registry) -> Self {
        let controller = ControllerMetrics::register(registry, PREFIX);
        let m = Self {
            controller,
            shared_host_violations: Gauge::default(),
            preferred_shared_hosts: Gauge::default(),
            unlabelled_nodes: Gauge::default(),
            nodes_without_host_information: Gauge::default(),
            node_patches: Counter::default(),
            node_patch_conflicts: Counter::default(),
            events: Counter::default(),
            module_host_violations: Family::default(),
        };
        let sub = registry.sub_registry_with_prefix(PREFIX);
        sub.register(
            "shared_host_violations",
            "Groups of replicas of one workload sharing a physical host although their required anti-affinity or DoNotSchedule topology spread uses the host label",
            m.shared_host_violations.clone(),
        );
        sub.register(
            "preferred_shared_hosts",
            "Physical hosts shared by replicas of one workload whose anti-affinity or topology spread on the host label is only preferred (allowed once replicas outnumber hosts)",
            m.preferred_shared_hosts.clone(),
        );
        sub.register(
            "unlabelled_nodes",
            "Nodes lacking a value for a host label key",
            m.unlabelled_nodes.clone(),
        );
        sub.register(
            "nodes_without_host_information",
            "Nodes the host information source says nothing about",
            m.nodes_without_host_information.clone(),
        );
        sub.register(
            "node_patches",
            "Node label patches (planned only, in dry-run)",
            m.node_patches.clone(),
        );
        sub.register(
            "node_patch_conflicts",
            "Node patches refused with 409 Conflict and retried from a fresh read",
            m.node_patch_conflicts.clone(),
        );
        sub.register(
            "events",
            "Events published (logged only, in dry-run)",
            m.events.clone(),
        );
        sub.register(
            "module_host_violations",
            "Members of one CAPV cluster module beyond one per ESXi host, per group; forced=\"true\" when the group has more members than eligible hosts",
            m.module_host_violations.clone(),
        );
        m
    }
}

impl controller_kit::runner::RegisteredMetrics for Metrics {
    fn register_on(registry: &mut prometheus_client::registry::Registry) -> Self {
        Self::register(registry)
    }
}
