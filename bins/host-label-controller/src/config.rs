//! The resolved configuration [`crate::run`] takes, and the names the
//! controller uses.

use std::net::SocketAddr;
use std::time::Duration;

use anti_affinity_placement::labels::{HostLabelConfig, MachineLabelSync};
use controller_kit::LeaderElectionConfig;

use crate::error::Error;

/// The controller's name: field manager, Event reporter, Lease name, RBAC
/// object names and metric prefix (with `_`).
pub const CONTROLLER_NAME: &str = "host-label-controller";

/// Namespace used when neither `--namespace` nor `POD_NAMESPACE` is set.
pub const DEFAULT_NAMESPACE: &str = "host-label-controller";

/// Name of the status ConfigMap when `--status-configmap` is not given
/// (in the controller's namespace).
pub const DEFAULT_STATUS_CONFIGMAP: &str = "host-label-controller-status";

/// Data key of the status ConfigMap holding the audit summary (JSON).
pub const STATUS_DATA_KEY: &str = "summary.json";

/// Data key of the status ConfigMap holding the cluster-module audit (JSON,
/// with `--audit-cluster-modules`): one `policyctl modules` document per
/// VSphereCluster `namespace/name`.
pub const MODULES_DATA_KEY: &str = "modules.json";

/// A namespaced object name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectName {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectName {
    /// Parses `NS/NAME` or `NAME` (then in `default_namespace`); `flag`
    /// names the origin for the error message.
    pub fn parse(flag: &str, value: &str, default_namespace: &str) -> Result<Self, Error> {
        let invalid = |why: &str| Error::InvalidArgument {
            flag: flag.to_owned(),
            value: value.to_owned(),
            problem: why.to_owned(),
        };
        let (namespace, name) = match value.split_once('/') {
            Some((ns, name)) => (ns, name),
            None => (default_namespace, value),
        };
        if namespace.is_empty() || name.is_empty() || name.contains('/') {
            return Err(invalid(
                "expected NAMESPACE/NAME or NAME with a non-empty namespace and name",
            ));
        }
        Ok(Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })
    }
}

impl std::fmt::Display for ObjectName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Where host information (Node name → physical host) comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostSource {
    /// Cluster API Machines: `status.nodeRef.name` → the Machine's
    /// `node.cluster.x-k8s.io/esxi-host` label.
    Machines,
    /// A HostInventory document in a ConfigMap.
    Inventory {
        /// The ConfigMap.
        configmap: ObjectName,
        /// Its data key.
        key: String,
    },
}

/// The label Cluster API puts on a Cluster's Machines.
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

/// Everything [`crate::run`] needs, resolved from the arguments (no
/// environment reads inside `run`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Keys and bookkeeping annotation.
    pub labels: HostLabelConfig,
    /// Host information source.
    pub source: HostSource,
    /// Copy every managed Machine label to its Node, as Cluster API does
    /// (`--sync-machine-labels`), with these additional expressions.
    pub machine_sync: Option<MachineLabelSync>,
    /// Audit CAPV's cluster modules (`--audit-cluster-modules`): watch the
    /// Cluster API and CAPV kinds and report members of one module sharing
    /// an ESXi host.
    pub audit_cluster_modules: bool,
    /// The status ConfigMap.
    pub status_configmap: ObjectName,
    /// Decide and log, write nothing (no Node patches, no Events, no status, no Lease).
    pub dry_run: bool,
    /// Leader election, when enabled.
    pub leader: Option<LeaderElectionConfig>,
    /// Where to serve `/metrics`, `/healthz`, `/readyz` (`None`: not at all).
    pub metrics_addr: Option<SocketAddr>,
    /// Safety-net resync interval.
    pub resync: Duration,
    /// How long to wait after a watch event for more before acting (coalesces bursts).
    pub debounce: Duration,
    /// How long to coalesce Pod-only changes (they only affect the audit).
    pub audit_debounce: Duration,
    /// This replica's name for Events (`reportingInstance`).
    pub instance: Option<String>,
    /// Only the Machines of this Cluster API Cluster (namespace and name;
    /// label `cluster.x-k8s.io/cluster-name`), as when the Machines live in
    /// a management cluster and the Nodes in this Cluster's workload
    /// cluster (`--cluster`); `None`: every Machine.
    pub cluster: Option<ObjectName>,
}

impl Config {
    /// Whether Machines are needed: as the host source, for the label sync
    /// or for the cluster-module audit.
    pub fn watches_machines(&self) -> bool {
        self.source == HostSource::Machines
            || self.machine_sync.is_some()
            || self.audit_cluster_modules
    }

    /// A configuration with defaults for everything but the keys and the source
    /// (handy for tests and embedding): status ConfigMap
    /// `host-label-controller/host-label-controller-status`, no leader
    /// election, no metrics server, resync 600 s, debounce 50 ms, audit
    /// debounce 1 s, no Machine label sync, no cluster-module audit.
    pub fn new(labels: HostLabelConfig, source: HostSource) -> Self {
        Self {
            labels,
            source,
            machine_sync: None,
            audit_cluster_modules: false,
            status_configmap: ObjectName {
                namespace: DEFAULT_NAMESPACE.to_owned(),
                name: DEFAULT_STATUS_CONFIGMAP.to_owned(),
            },
            dry_run: false,
            leader: None,
            metrics_addr: None,
            resync: Duration::from_secs(600),
            debounce: Duration::from_millis(50),
            audit_debounce: Duration::from_secs(1),
            instance: None,
            cluster: None,
        }
    }
}
