//! The controller's metrics (prefix `host_label_controller_`).
//!
//! | metric | type | meaning |
//! |---|---|---|
//! | `reconciles_total`, `reconcile_errors_total{kind}`, `reconcile_duration_seconds`, `queue_depth` | common set | one reconcile = one pass over all Nodes |
//! | `shared_host_violations{cluster}` | gauge | groups of replicas sharing a physical host under a required rule |
//! | `preferred_shared_hosts{cluster}` | gauge | hosts shared by replicas whose rules on the host keys are only preferred |
//! | `unlabelled_nodes{cluster}` | gauge | Nodes lacking a value for a host key |
//! | `nodes_without_host_information{cluster}` | gauge | Nodes the source says nothing about |
//! | `node_patches_total` | counter | Node label patches made (or planned, in dry-run) |
//! | `node_patch_conflicts_total` | counter | 409s on Node patches (each is retried from a fresh read) |
//! | `events_total` | counter | Events published (or logged, in dry-run) |
//! | `module_host_violations{cluster, group, forced}` | gauge | with `--audit-cluster-modules`: members of one CAPV cluster module beyond one per ESXi host, per group (`namespace/name` of the KubeadmControlPlane or MachineDeployment); `forced="true"` when no vMotion can remove one |
//!
//! Every gauge carries the label `cluster`: the workload cluster its Nodes
//! belong to (`namespace/name` of its Cluster API Cluster with
//! `--all-clusters` or `--cluster`, empty otherwise), so one value per
//! workload cluster and no loop overwrites another's. A loop's series are
//! removed when it stops ([`Metrics::forget_cluster`]).

use controller_kit::metrics::ControllerMetrics;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The label set of a per-cluster gauge: `[("cluster", …)]`, then any
/// further labels.
pub type Labels = Vec<(String, String)>;

/// A gauge with one series per workload cluster.
pub type ClusterGauge = Family<Labels, Gauge>;

/// The label set `cluster="<cluster>"`.
pub fn cluster_labels(cluster: &str) -> Labels {
    vec![("cluster".to_owned(), cluster.to_owned())]
}

/// One workload cluster's audit gauges (handles on its series).
#[derive(Debug, Clone)]
pub struct ClusterGauges {
    /// Groups of replicas sharing a physical host under a required rule.
    pub shared_host_violations: Gauge,
    /// Hosts shared by replicas whose rules are only preferred.
    pub preferred_shared_hosts: Gauge,
    /// Nodes lacking a value for a host key.
    pub unlabelled_nodes: Gauge,
    /// Nodes without host information.
    pub nodes_without_host_information: Gauge,
}

/// Metric name prefix.
pub const PREFIX: &str = "host_label_controller";

/// The controller's metrics. Cheap to clone (shared handles).
#[derive(Debug, Clone)]
pub struct Metrics {
    /// The common controller set.
    pub controller: ControllerMetrics,
    /// Groups of replicas sharing a physical host under a required rule,
    /// by `cluster`.
    pub shared_host_violations: ClusterGauge,
    /// Hosts shared by replicas whose rules are only preferred, by
    /// `cluster`.
    pub preferred_shared_hosts: ClusterGauge,
    /// Nodes lacking a value for a host key, by `cluster`.
    pub unlabelled_nodes: ClusterGauge,
    /// Nodes without host information, by `cluster`.
    pub nodes_without_host_information: ClusterGauge,
    /// Node label patches.
    pub node_patches: Counter,
    /// 409s on Node patches.
    pub node_patch_conflicts: Counter,
    /// Events published.
    pub events: Counter,
    /// Members of one cluster module beyond one per host, by `cluster`,
    /// `group` and `forced`.
    pub module_host_violations: ClusterGauge,
}

impl Metrics {
    /// Creates and registers the metrics.
    pub fn register(registry: &mut Registry) -> Self {
        let controller = ControllerMetrics::register(registry, PREFIX);
        let m = Self {
            controller,
            shared_host_violations: Family::default(),
            preferred_shared_hosts: Family::default(),
            unlabelled_nodes: Family::default(),
            nodes_without_host_information: Family::default(),
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

    /// The audit gauges of `cluster` (created at 0 if new).
    pub fn gauges(&self, cluster: &str) -> ClusterGauges {
        let labels = cluster_labels(cluster);
        let of = |family: &ClusterGauge| family.get_or_create(&labels).clone();
        ClusterGauges {
            shared_host_violations: of(&self.shared_host_violations),
            preferred_shared_hosts: of(&self.preferred_shared_hosts),
            unlabelled_nodes: of(&self.unlabelled_nodes),
            nodes_without_host_information: of(&self.nodes_without_host_information),
        }
    }

    /// Removes every series of `cluster` (its loop stopped), given the
    /// `module_host_violations` label sets it created, leaving the other
    /// clusters' alone.
    pub fn forget_cluster<'a>(&self, cluster: &str, modules: impl IntoIterator<Item = &'a Labels>) {
        let labels = cluster_labels(cluster);
        for family in [
            &self.shared_host_violations,
            &self.preferred_shared_hosts,
            &self.unlabelled_nodes,
            &self.nodes_without_host_information,
        ] {
            family.remove(&labels);
        }
        for labels in modules {
            self.module_host_violations.remove(labels);
        }
    }
}

impl controller_kit::runner::RegisteredMetrics for Metrics {
    fn register_on(registry: &mut prometheus_client::registry::Registry) -> Self {
        Self::register(registry)
    }
}
