//! The index: Nodes, the Pods that may spread over physical hosts, and the
//! host information source (Cluster API Machines, or the inventory
//! ConfigMap), kept up to date by the runtime's watches and by the
//! controller's own Node patches. Synchronous and free of I/O.
//!
//! An inventory ConfigMap that cannot be used (missing, missing key, not a
//! HostInventory) keeps the last good host information; the problem is kept
//! for the executor to log.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};

use controller_kit::snapshot::{IndexResource, Reconciler, Runtime, Watch};

use crate::config::{Config, HostSource};
use kube_adapters::capi::{Machine, host_map};

use crate::source;

/// Host information from the inventory ConfigMap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Inventory {
    /// The last good Node → host map.
    hosts: BTreeMap<String, String>,
    /// Why the current ConfigMap cannot be used, if it cannot.
    problem: Option<String>,
}

/// What the controller knows (see the module docs).
#[derive(Debug)]
pub struct HostIndex {
    source: HostSource,
    nodes: BTreeMap<String, Node>,
    pods: BTreeMap<(String, String), Pod>,
    machines: BTreeMap<(String, String), Machine>,
    inventory: Inventory,
}

/// Whether a pod's placement rules could care about physical hosts: only
/// those are audited (and kept in the index).
pub fn may_spread_over_hosts(pod: &Pod) -> bool {
    pod.spec.as_ref().is_some_and(|s| {
        s.affinity
            .as_ref()
            .is_some_and(|a| a.pod_anti_affinity.is_some())
            || s.topology_spread_constraints
                .as_ref()
                .is_some_and(|t| !t.is_empty())
    })
}

fn namespaced<K: ResourceExt>(object: &K) -> (String, String) {
    (object.namespace().unwrap_or_default(), object.name_any())
}

fn key_of<K: kube::Resource>(key: &ObjectRef<K>) -> (String, String) {
    (key.namespace.clone().unwrap_or_default(), key.name.clone())
}

impl HostIndex {
    /// An empty index for the configured host source.
    pub fn new(config: &Config) -> Self {
        let inventory = match &config.source {
            HostSource::Machines => Inventory::default(),
            HostSource::Inventory { .. } => Inventory {
                hosts: BTreeMap::new(),
                problem: Some("the inventory ConfigMap does not exist".to_owned()),
            },
        };
        Self {
            source: config.source.clone(),
            nodes: BTreeMap::new(),
            pods: BTreeMap::new(),
            machines: BTreeMap::new(),
            inventory,
        }
    }

    /// The Nodes, by name.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }

    /// The Pods whose placement may care about physical hosts, by
    /// namespace and name.
    pub fn pods(&self) -> impl Iterator<Item = &Pod> {
        self.pods.values()
    }

    /// Node name → physical host, from the configured source.
    pub fn hosts(&self) -> BTreeMap<String, String> {
        match &self.source {
            HostSource::Machines => host_map(self.machines.values()).hosts,
            HostSource::Inventory { .. } => self.inventory.hosts.clone(),
        }
    }

    /// Why the inventory ConfigMap cannot be used now (the last good host
    /// information stays in use).
    pub fn inventory_problem(&self) -> Option<&str> {
        self.inventory.problem.as_deref()
    }
}

impl IndexResource<Node> for HostIndex {
    fn apply(&mut self, node: Node) {
        self.nodes.insert(node.name_any(), node);
    }

    fn delete(&mut self, key: ObjectRef<Node>) {
        self.nodes.remove(&key.name);
    }
}

impl IndexResource<Pod> for HostIndex {
    fn apply(&mut self, pod: Pod) {
        let key = namespaced(&pod);
        if may_spread_over_hosts(&pod) {
            self.pods.insert(key, pod);
        } else {
            self.pods.remove(&key);
        }
    }

    fn delete(&mut self, key: ObjectRef<Pod>) {
        self.pods.remove(&key_of(&key));
    }
}

impl IndexResource<Machine> for HostIndex {
    fn apply(&mut self, machine: Machine) {
        self.machines.insert(namespaced(&machine), machine);
    }

    fn delete(&mut self, key: ObjectRef<Machine>) {
        self.machines.remove(&key_of(&key));
    }
}

impl IndexResource<ConfigMap> for HostIndex {
    fn apply(&mut self, cm: ConfigMap) {
        let HostSource::Inventory { configmap, key } = &self.source else {
            return;
        };
        if cm.metadata.name.as_deref() != Some(configmap.name.as_str()) {
            return;
        }
        match source::hosts_from_inventory(&cm, key) {
            Ok(hosts) => {
                self.inventory.hosts = hosts;
                self.inventory.problem = None;
            }
            Err(e) => self.inventory.problem = Some(e.to_string()),
        }
    }

    fn delete(&mut self, key: ObjectRef<ConfigMap>) {
        if let HostSource::Inventory { configmap, .. } = &self.source
            && key.name == configmap.name
        {
            self.inventory.problem = Some("the inventory ConfigMap does not exist".to_owned());
        }
    }
}

/// Adds the watches that feed the index: Nodes and the host source act
/// after `config.debounce`; Pods only matter to the audit and wait up to
/// `config.audit_debounce`.
pub fn watches<R>(runtime: Runtime<R>, client: &kube::Client, config: &Config) -> Runtime<R>
where
    R: Reconciler<Index = HostIndex>,
{
    let runtime = runtime
        .watch(
            Watch::new(Api::<Node>::all(client.clone()), watcher::Config::default())
                .debounce(config.debounce),
        )
        .watch(
            Watch::new(Api::<Pod>::all(client.clone()), watcher::Config::default())
                .debounce(config.audit_debounce),
        );
    match &config.source {
        HostSource::Machines => runtime.watch(
            Watch::new(
                Api::<Machine>::all(client.clone()),
                watcher::Config::default(),
            )
            .debounce(config.debounce),
        ),
        HostSource::Inventory { configmap, .. } => runtime.watch(
            Watch::new(
                Api::<ConfigMap>::namespaced(client.clone(), &configmap.namespace),
                watcher::Config::default().fields(&format!("metadata.name={}", configmap.name)),
            )
            .debounce(config.debounce),
        ),
    }
}
