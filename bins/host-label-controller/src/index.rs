//! The index: Nodes, the Pods that may spread over physical hosts, the host
//! information source (Cluster API Machines, or the inventory ConfigMap),
//! the Machines of the label sync and the Cluster API and CAPV objects of
//! the cluster-module audit, kept up to date by the runtime's watches and by
//! the controller's own Node patches. Synchronous and free of I/O.
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
use capi_api::{
    Cluster, KubeadmControlPlane, Machine, MachineDeployment, MachineSet, VSphereCluster,
    VSphereMachineTemplate, VSphereVM,
};
use kube_adapters::capi::{ClusterApiObjects, host_map};

use crate::source;
use anti_affinity_placement::tacker::servers::{hosts_of_nodes, node_addresses};

/// Host information from the inventory ConfigMap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Inventory {
    /// The last good host information.
    hosts: source::HostInfo,
    /// Why the current ConfigMap cannot be used, if it cannot.
    problem: Option<String>,
}

/// The Cluster API and CAPV objects of the cluster-module audit, by
/// namespace and name.
#[derive(Debug, Default)]
struct CapiObjects {
    clusters: BTreeMap<(String, String), Cluster>,
    vsphere_clusters: BTreeMap<(String, String), VSphereCluster>,
    kubeadm_control_planes: BTreeMap<(String, String), KubeadmControlPlane>,
    machine_deployments: BTreeMap<(String, String), MachineDeployment>,
    machine_sets: BTreeMap<(String, String), MachineSet>,
    vsphere_vms: BTreeMap<(String, String), VSphereVM>,
    vsphere_machine_templates: BTreeMap<(String, String), VSphereMachineTemplate>,
}

/// What the controller knows (see the module docs).
#[derive(Debug)]
pub struct HostIndex {
    source: HostSource,
    nodes: BTreeMap<String, Node>,
    pods: BTreeMap<(String, String), Pod>,
    machines: BTreeMap<(String, String), Machine>,
    inventory: Inventory,
    capi: CapiObjects,
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
                hosts: source::HostInfo::ByNode(BTreeMap::new()),
                problem: Some("the inventory ConfigMap does not exist".to_owned()),
            },
        };
        Self {
            source: config.source.clone(),
            nodes: BTreeMap::new(),
            pods: BTreeMap::new(),
            machines: BTreeMap::new(),
            inventory,
            capi: CapiObjects::default(),
        }
    }

    /// The Machines, by namespace and name.
    pub fn machines(&self) -> impl Iterator<Item = &Machine> {
        self.machines.values()
    }

    /// The Cluster API and CAPV objects, as `kube-adapters` reads them.
    pub fn cluster_api(&self) -> ClusterApiObjects<'_> {
        let capi = &self.capi;
        ClusterApiObjects {
            clusters: capi.clusters.values().collect(),
            vsphere_clusters: capi.vsphere_clusters.values().collect(),
            kubeadm_control_planes: capi.kubeadm_control_planes.values().collect(),
            machine_deployments: capi.machine_deployments.values().collect(),
            machine_sets: capi.machine_sets.values().collect(),
            machines: self.machines.values().collect(),
            vsphere_vms: capi.vsphere_vms.values().collect(),
            vsphere_machine_templates: capi.vsphere_machine_templates.values().collect(),
        }
    }

    /// The Nodes, by name.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }

    /// The Node of that name.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.get(name)
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
            HostSource::Inventory { .. } => match &self.inventory.hosts {
                source::HostInfo::ByNode(hosts) => hosts.clone(),
                source::HostInfo::Servers(servers) => hosts_of_nodes(
                    servers,
                    self.nodes.values().map(|node| {
                        (
                            node.metadata.name.as_deref().unwrap_or_default(),
                            node_addresses(node),
                        )
                    }),
                ),
            },
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

/// Indexes a Cluster API or CAPV kind into its map of [`CapiObjects`].
macro_rules! index_capi {
    ($kind:ty, $field:ident) => {
        impl IndexResource<$kind> for HostIndex {
            fn apply(&mut self, object: $kind) {
                self.capi.$field.insert(namespaced(&object), object);
            }

            fn delete(&mut self, key: ObjectRef<$kind>) {
                self.capi.$field.remove(&key_of(&key));
            }
        }
    };
}

index_capi!(Cluster, clusters);
index_capi!(VSphereCluster, vsphere_clusters);
index_capi!(KubeadmControlPlane, kubeadm_control_planes);
index_capi!(MachineDeployment, machine_deployments);
index_capi!(MachineSet, machine_sets);
index_capi!(VSphereVM, vsphere_vms);
index_capi!(VSphereMachineTemplate, vsphere_machine_templates);

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
/// `config.audit_debounce`. Machines are watched when they are the host
/// source or the label sync or the cluster-module audit needs them; the
/// other Cluster API and CAPV kinds only for the cluster-module audit (they
/// change the audit, not the labels, so they wait like Pods).
pub fn watches<R>(
    runtime: Runtime<R>,
    client: &kube::Client,
    machines: &kube::Client,
    config: &Config,
) -> Runtime<R>
where
    R: Reconciler<Index = HostIndex>,
{
    let mut runtime = runtime
        .watch(
            Watch::new(Api::<Node>::all(client.clone()), watcher::Config::default())
                .debounce(config.debounce),
        )
        .watch(
            Watch::new(Api::<Pod>::all(client.clone()), watcher::Config::default())
                .debounce(config.audit_debounce),
        );
    if config.watches_machines() {
        let watch = match &config.cluster {
            Some(cluster) => Watch::new(
                Api::<Machine>::namespaced(machines.clone(), &cluster.namespace),
                watcher::Config::default().labels(&format!(
                    "{}={}",
                    crate::config::CLUSTER_NAME_LABEL,
                    cluster.name
                )),
            ),
            None => Watch::new(
                Api::<Machine>::all(machines.clone()),
                watcher::Config::default(),
            ),
        };
        runtime = runtime.watch(watch.debounce(config.debounce));
    }
    if let HostSource::Inventory { configmap, .. } = &config.source {
        runtime = runtime.watch(
            Watch::new(
                Api::<ConfigMap>::namespaced(client.clone(), &configmap.namespace),
                watcher::Config::default().fields(&format!("metadata.name={}", configmap.name)),
            )
            .debounce(config.debounce),
        );
    }
    if config.audit_cluster_modules {
        runtime = runtime
            .watch(capi_watch::<Cluster>(machines, config))
            .watch(capi_watch::<VSphereCluster>(machines, config))
            .watch(capi_watch::<KubeadmControlPlane>(machines, config))
            .watch(capi_watch::<MachineDeployment>(machines, config))
            .watch(capi_watch::<MachineSet>(machines, config))
            .watch(capi_watch::<VSphereVM>(machines, config))
            .watch(capi_watch::<VSphereMachineTemplate>(machines, config));
    }
    runtime
}

/// A cluster-wide watch of one Cluster API or CAPV kind for the audit.
fn capi_watch<K>(client: &kube::Client, config: &Config) -> Watch<K>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    Watch::new(Api::<K>::all(client.clone()), watcher::Config::default())
        .debounce(config.audit_debounce)
}
