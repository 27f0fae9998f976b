//! Incremental, indexed cluster state: nodes, namespaces and placed pods.
//!
//! Indexes (the incremental counts of C.17):
//! - every node label is a *topology pair*: key and value are interned, so a
//!   node's domain for a key is an array lookup;
//! - placed pods are grouped into *classes* of equal (namespace, labels,
//!   terminating); a class keeps its pod count per node and per topology
//!   domain, so a term is matched once per class, not once per pod;
//! - placed pods' (anti-)affinity terms are grouped by identical term; a
//!   group keeps its pod count per domain of its topology key (symmetry C.14
//!   and scoring C.18 then cost one match per distinct term).
//!
//! [`ClusterState::add_pod`] / [`ClusterState::remove_pod`] update every
//! index by ±1 and delete entries that reach zero (C.17).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Taint};

use crate::KubernetesVersion;
use crate::admission::apply_match_label_keys;
use crate::fast_hash::IdMap;
use crate::pod_info::{AffinityTerm, NamespaceScope, PodInfo};
use crate::ports::UsedPorts;
use crate::resources::{QuantityProblem, Resources, node_allocatable};
use crate::volumes::{NodeVolumes, Storage, StorageObjects};
use crate::workloads::{WorkloadIndex, Workloads};
use kube_validation::LabelSelectorMatcher as PodSelector;
use kube_validation::taints::is_cordoned;

/// Marker for "node lacks this key".
pub(crate) const NO_DOMAIN: u32 = u32::MAX;

/// Identifies a placed pod in a [`ClusterState`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodId(pub(crate) u32);

/// Why a pod cannot be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The pod has no `spec.nodeName`.
    #[error("pod {pod} has no spec.nodeName; only bound pods can be added")]
    NotBound {
        /// `namespace/name`.
        pod: String,
    },
    /// The pod is bound to a node the state does not know.
    #[error("pod {pod} is bound to node {node:?}, which is not in the cluster state")]
    UnknownNode {
        /// `namespace/name`.
        pod: String,
        /// The node name.
        node: String,
    },
    /// A pod with the same namespace and name is already placed.
    #[error("pod {pod} is already placed")]
    Duplicate {
        /// `namespace/name`.
        pod: String,
    },
    /// A node with the same name already exists.
    #[error("node {0:?} is already in the cluster state")]
    DuplicateNode(String),
    /// A node's allocatable or a pod's requests hold a quantity that does
    /// not parse.
    #[error("{object}: {problem}")]
    InvalidQuantity {
        /// `node NAME` or `pod NAMESPACE/NAME`.
        object: String,
        /// The field, its text and why it does not parse.
        problem: QuantityProblem,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct NodeEntry {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) taints: Vec<Taint>,
    /// `spec.unschedulable` (cordoned).
    pub(crate) unschedulable: bool,
    /// `status.allocatable`; `None` when the node has none (not checked).
    pub(crate) allocatable: Option<Resources>,
    /// Sum of the requests of the pods bound here (`NodeInfo.Requested`).
    pub(crate) requested: Resources,
    /// Sum of their CPU and memory with the scoring defaults
    /// (`NodeInfo.NonZeroRequested`, C.42).
    pub(crate) non_zero_requested: (i64, i64),
    /// Image names in `status.images` (C.45).
    pub(crate) images: BTreeSet<String>,
    /// Pods bound here.
    pub(crate) pod_count: i64,
    /// Host ports in use here.
    pub(crate) used_ports: UsedPorts,
    /// (key id, domain id) of every label.
    pub(crate) pairs: Vec<(u32, u32)>,
    /// Inline disks and attached CSI volumes of the pods here.
    pub(crate) volumes: NodeVolumes,
    /// `status.declaredFeatures` as written (C.76).
    pub(crate) declared_features: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct KeyIndex {
    pub(crate) values: HashMap<String, u32>,
    pub(crate) value_names: Vec<String>,
    /// Domain of every node (NO_DOMAIN when the node lacks the key).
    pub(crate) node_domain: Vec<u32>,
}

#[derive(Debug, Clone)]
pub(crate) struct PodClass {
    pub(crate) namespace: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) terminating: bool,
    pub(crate) pods: u32,
    pub(crate) node_counts: IdMap<u32, u32>,
    /// key id → domain id → pods.
    pub(crate) key_domains: IdMap<u32, IdMap<u32, u32>>,
}

/// The four kinds of placed pods' terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(clippy::enum_variant_names)]
pub(crate) enum TermKind {
    RequiredAffinity = 0,
    RequiredAntiAffinity = 1,
    PreferredAffinity = 2,
    PreferredAntiAffinity = 3,
}

#[derive(Debug, Clone)]
pub(crate) struct TermGroup {
    pub(crate) weight: i64,
    pub(crate) term: AffinityTerm,
    /// Pods carrying the term, per domain of `term.topology_key`.
    pub(crate) domains: IdMap<u32, u32>,
    pub(crate) pods: u32,
}

#[derive(Debug, Clone)]
struct PlacedPod {
    info: Arc<PodInfo>,
    node: u32,
    class: u32,
    groups: Vec<u32>,
    /// CSI volumes (unique name, driver) counted on the node.
    attachments: Vec<(String, String)>,
}

/// Nodes, namespaces and placed pods, with the indexes that make placement
/// fast. Cloning is cheap enough for what-if evaluations.
#[derive(Debug, Clone, Default)]
pub struct ClusterState {
    pub(crate) nodes: Vec<NodeEntry>,
    node_by_name: HashMap<String, u32>,
    pub(crate) keys: HashMap<String, u32>,
    pub(crate) topo: Vec<KeyIndex>,
    pub(crate) namespaces: BTreeMap<String, BTreeMap<String, String>>,
    pods: Vec<Option<PlacedPod>>,
    free: Vec<u32>,
    pod_by_name: HashMap<(String, String), u32>,
    pub(crate) classes: Vec<PodClass>,
    class_by_key: HashMap<(String, BTreeMap<String, String>, bool), u32>,
    pub(crate) classes_by_namespace: HashMap<String, Vec<u32>>,
    pub(crate) groups: [Vec<TermGroup>; 4],
    group_by_key: HashMap<(TermKind, i64, String), u32>,
    merge_match_label_keys: bool,
    /// The release whose rules count pods' requests (C.75) and the node
    /// features they need.
    version: KubernetesVersion,
    /// Claims, volumes, classes and CSINodes (C.50–C.53).
    pub(crate) storage: Storage,
    /// DeviceClasses, ResourceClaims, templates and ResourceSlices (DR.1–DR.4).
    pub(crate) dra: crate::dra::Dra,
    /// Per image name: the size reported by the first node listing it and
    /// the number of nodes listing it (`ImageStateSummary`, C.45).
    pub(crate) image_states: HashMap<String, (i64, u32)>,
    /// Services, ReplicationControllers, ReplicaSets, StatefulSets (C.46).
    pub(crate) workloads: WorkloadIndex,
    /// Pending pods nominated to a node (`status.nominatedNodeName`, C.71),
    /// each with `spec.nodeName` set to that node, in the order added.
    pub(crate) nominated: Vec<Pod>,
}

static EMPTY_LABELS: BTreeMap<String, String> = BTreeMap::new();

impl ClusterState {
    /// Build from a snapshot. Pods without `spec.nodeName` or bound to an
    /// unknown node are ignored (spec 0.1); duplicate nodes keep the first.
    /// `merge_match_label_keys` applies the C.9 merge to every pod added.
    ///
    /// Nodes and pods whose quantities do not parse are left out too; use
    /// [`ClusterState::from_snapshot`] to refuse them instead.
    pub fn new(
        nodes: &[Node],
        namespaces: &[Namespace],
        pods: &[Pod],
        merge_match_label_keys: bool,
    ) -> Self {
        // Non-strict: no error is returned.
        Self::build(
            nodes,
            namespaces,
            pods,
            merge_match_label_keys,
            KubernetesVersion::LATEST,
            false,
        )
        .unwrap_or_default()
    }

    /// [`ClusterState::new`], except that a quantity that does not parse (a
    /// node's `status.allocatable`, a bound pod's requests or overhead) is
    /// an error naming the object, the field and the text.
    ///
    /// Pods count their requests as the newest supported release does;
    /// [`ClusterState::for_options`] follows the release of the options.
    pub fn from_snapshot(
        nodes: &[Node],
        namespaces: &[Namespace],
        pods: &[Pod],
        merge_match_label_keys: bool,
    ) -> Result<Self, StateError> {
        let opts = crate::Options {
            merge_match_label_keys,
            ..Default::default()
        };
        Self::for_options(nodes, namespaces, pods, &opts)
    }

    /// [`ClusterState::from_snapshot`] as `opts` ask: their matchLabelKeys
    /// merge, and their release's rules for what pods request (C.75) and
    /// which node features they need. Evaluate the state with options of
    /// the same release.
    pub fn for_options(
        nodes: &[Node],
        namespaces: &[Namespace],
        pods: &[Pod],
        opts: &crate::Options,
    ) -> Result<Self, StateError> {
        Self::build(
            nodes,
            namespaces,
            pods,
            opts.merge_match_label_keys,
            opts.kubernetes_version,
            true,
        )
    }

    /// The release whose rules the state counts pods with.
    pub fn kubernetes_version(&self) -> KubernetesVersion {
        self.version
    }

    fn build(
        nodes: &[Node],
        namespaces: &[Namespace],
        pods: &[Pod],
        merge_match_label_keys: bool,
        version: KubernetesVersion,
        strict: bool,
    ) -> Result<Self, StateError> {
        let mut state = ClusterState {
            merge_match_label_keys,
            version,
            ..Default::default()
        };
        for n in nodes {
            match state.add_node(n) {
                Err(e @ StateError::InvalidQuantity { .. }) if strict => return Err(e),
                // A duplicate node name is ignored (first wins), like a map keyed by name.
                _ => {}
            }
        }
        for ns in namespaces {
            state.upsert_namespace(ns);
        }
        for p in pods {
            state.add_nominated_pod(p);
            match state.add_pod(p) {
                Err(e @ StateError::InvalidQuantity { .. }) if strict => return Err(e),
                // Pending pods and pods on unknown nodes are not part of the snapshot (0.1).
                _ => {}
            }
        }
        Ok(state)
    }

    /// Record `pod` as nominated to its `status.nominatedNodeName` (C.71)
    /// when it is pending, kube-scheduler would try it, and the node is in
    /// the state; returns whether it was recorded. A pod of the same
    /// namespace and name recorded before is replaced.
    pub fn add_nominated_pod(&mut self, pod: &Pod) -> bool {
        let Some(node) = crate::skip::nominated_node(pod) else {
            return false;
        };
        if self.node_index(node).is_none() {
            return false;
        }
        let mut copy = pod.clone();
        if let Some(spec) = copy.spec.as_mut() {
            spec.node_name = Some(node.to_owned());
        }
        let key = nominated_key(&copy);
        self.nominated.retain(|p| nominated_key(p) != key);
        self.nominated.push(copy);
        true
    }

    /// Forget the nomination of the pod `namespace/name` (it was placed).
    pub fn remove_nominated_pod(&mut self, namespace: &str, name: &str) {
        self.nominated
            .retain(|p| nominated_key(p) != (namespace, name));
    }

    /// The pods nominated to a node, with `spec.nodeName` set to it (C.71).
    pub fn nominated_pods(&self) -> &[Pod] {
        &self.nominated
    }

    /// Add a node. Its labels become topology pairs.
    pub fn add_node(&mut self, node: &Node) -> Result<(), StateError> {
        let name = node.metadata.name.clone().unwrap_or_default();
        if self.node_by_name.contains_key(&name) {
            return Err(StateError::DuplicateNode(name));
        }
        let allocatable =
            node_allocatable(node).map_err(|problem| StateError::InvalidQuantity {
                object: format!("node {name}"),
                problem,
            })?;
        let idx = self.nodes.len() as u32;
        let labels = node.metadata.labels.clone().unwrap_or_default();
        for k in &mut self.topo {
            k.node_domain.push(NO_DOMAIN);
        }
        let mut pairs = Vec::with_capacity(labels.len());
        for (k, v) in &labels {
            let key_id = match self.keys.get(k) {
                Some(id) => *id,
                None => {
                    let id = self.topo.len() as u32;
                    self.keys.insert(k.clone(), id);
                    self.topo.push(KeyIndex {
                        node_domain: vec![NO_DOMAIN; idx as usize + 1],
                        ..Default::default()
                    });
                    id
                }
            };
            let ki = &mut self.topo[key_id as usize];
            let dom = match ki.values.get(v) {
                Some(d) => *d,
                None => {
                    let d = ki.value_names.len() as u32;
                    ki.values.insert(v.clone(), d);
                    ki.value_names.push(v.clone());
                    d
                }
            };
            ki.node_domain[idx as usize] = dom;
            pairs.push((key_id, dom));
        }
        self.node_by_name.insert(name.clone(), idx);
        let mut images = BTreeSet::new();
        let listed = node.status.as_ref().and_then(|s| s.images.as_ref());
        for image in listed.into_iter().flatten() {
            for n in image.names.iter().flatten() {
                if images.insert(n.clone()) {
                    let e = self
                        .image_states
                        .entry(n.clone())
                        .or_insert((image.size_bytes.unwrap_or(0), 0));
                    e.1 += 1;
                }
            }
        }
        self.nodes.push(NodeEntry {
            name,
            labels,
            taints: node
                .spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default(),
            unschedulable: is_cordoned(node),
            allocatable,
            requested: Resources::default(),
            non_zero_requested: (0, 0),
            images,
            pod_count: 0,
            used_ports: UsedPorts::default(),
            pairs,
            volumes: NodeVolumes::default(),
            declared_features: node
                .status
                .as_ref()
                .and_then(|s| s.declared_features.clone())
                .unwrap_or_default(),
        });
        let added = &self.nodes[idx as usize];
        self.dra.add_node(&added.name, &added.labels);
        Ok(())
    }

    /// The ResourceClaims the state holds, in no particular order: those
    /// given with [`ClusterState::set_dra`], and those placements made from
    /// templates, each with the allocation and the consumers placements
    /// recorded (DR.4).
    pub fn resource_claims(
        &self,
    ) -> impl Iterator<Item = &k8s_openapi::api::resource::v1::ResourceClaim> {
        self.dra.claims.values()
    }

    /// The devices of the ResourceSlices and how many allocated claims
    /// hold, per node and per DeviceClass (DR.3, DR.4).
    pub fn device_usage(&self) -> crate::DeviceUsage {
        self.dra.usage(self.nodes.iter().map(|n| n.name.as_str()))
    }

    /// Replace the DRA objects the DynamicResources plugin reads (DR.1–DR.4):
    /// device classes, claims (with the allocations they hold), claim
    /// templates and the ResourceSlices drivers publish.
    pub fn set_dra(&mut self, objects: &crate::DraObjects) {
        self.dra = crate::dra::Dra::new(
            objects,
            self.nodes.iter().map(|n| (n.name.as_str(), &n.labels)),
        );
    }

    /// Add or replace a namespace (its labels feed namespaceSelectors).
    pub fn upsert_namespace(&mut self, ns: &Namespace) {
        self.namespaces.insert(
            ns.metadata.name.clone().unwrap_or_default(),
            ns.metadata.labels.clone().unwrap_or_default(),
        );
    }

    /// Add the Services, ReplicationControllers, ReplicaSets and
    /// StatefulSets whose selectors the system-default topology spreading
    /// uses (C.46); an object with the namespace and name of an earlier one
    /// replaces it.
    pub fn add_workloads(&mut self, workloads: &Workloads) {
        self.workloads.add(workloads);
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of placed pods.
    pub fn pod_count(&self) -> usize {
        self.pod_by_name.len()
    }

    /// Node names in insertion order.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|n| n.name.as_str())
    }

    pub(crate) fn node_index(&self, name: &str) -> Option<u32> {
        self.node_by_name.get(name).copied()
    }

    pub(crate) fn key_id(&self, key: &str) -> Option<u32> {
        self.keys.get(key).copied()
    }

    pub(crate) fn domain_count(&self, key: u32) -> usize {
        self.topo[key as usize].value_names.len()
    }

    /// Domain of node `node` for key `key` (None if it lacks the key).
    #[inline]
    pub(crate) fn domain(&self, key: Option<u32>, node: u32) -> Option<(u32, u32)> {
        let k = key?;
        let d = self.topo[k as usize].node_domain[node as usize];
        (d != NO_DOMAIN).then_some((k, d))
    }

    pub(crate) fn namespace_labels(&self, ns: &str) -> &BTreeMap<String, String> {
        self.namespaces.get(ns).unwrap_or(&EMPTY_LABELS)
    }

    /// Compile a pod the way this state does (merge C.9 if configured).
    pub fn compile_pod(&self, pod: &Pod) -> PodInfo {
        if self.merge_match_label_keys {
            let mut p = pod.clone();
            apply_match_label_keys(&mut p);
            PodInfo::new(&p, self.version)
        } else {
            PodInfo::new(pod, self.version)
        }
    }

    /// Classes whose namespace a scope may select.
    pub(crate) fn classes_in_scope<'a>(
        &'a self,
        scope: &'a NamespaceScope,
    ) -> Box<dyn Iterator<Item = &'a PodClass> + 'a> {
        if let PodSelector::Nothing = scope.selector {
            Box::new(
                scope
                    .names
                    .iter()
                    .filter_map(|ns| self.classes_by_namespace.get(ns))
                    .flatten()
                    .map(|c| &self.classes[*c as usize]),
            )
        } else {
            Box::new(self.classes.iter())
        }
    }

    /// Add a bound pod (AddPod, C.17).
    pub fn add_pod(&mut self, pod: &Pod) -> Result<PodId, StateError> {
        let info = self.compile_pod(pod);
        self.add_pod_info(Arc::new(info))
    }

    /// Add an already compiled bound pod.
    pub fn add_pod_info(&mut self, info: Arc<PodInfo>) -> Result<PodId, StateError> {
        let Some(node_name) = info.node_name.clone() else {
            return Err(StateError::NotBound { pod: info.key() });
        };
        let Some(node) = self.node_index(&node_name) else {
            return Err(StateError::UnknownNode {
                pod: info.key(),
                node: node_name,
            });
        };
        let name_key = (info.namespace.clone(), info.name.clone());
        if self.pod_by_name.contains_key(&name_key) {
            return Err(StateError::Duplicate { pod: info.key() });
        }
        let requests = info
            .requests
            .as_ref()
            .map_err(|problem| StateError::InvalidQuantity {
                object: format!("pod {}", info.key()),
                problem: problem.clone(),
            })?;
        let entry = &mut self.nodes[node as usize];
        entry.requested.add_signed(requests, 1);
        entry.non_zero_requested.0 += info.non_zero_requests.0;
        entry.non_zero_requested.1 += info.non_zero_requests.1;
        entry.pod_count += 1;
        entry.used_ports.update(&info.host_ports, true);
        let attachments = self.attachments_of(&info);
        self.count_volumes(&info, node, &attachments, true);
        let class = self.class_for(&info);
        self.bump_class(class, node, 1);
        let mut groups = Vec::new();
        let kinds: [(TermKind, Vec<(i64, &AffinityTerm)>); 4] = [
            (
                TermKind::RequiredAffinity,
                info.required_affinity.iter().map(|t| (0, t)).collect(),
            ),
            (
                TermKind::RequiredAntiAffinity,
                info.required_anti_affinity.iter().map(|t| (0, t)).collect(),
            ),
            (
                TermKind::PreferredAffinity,
                info.preferred_affinity
                    .iter()
                    .map(|t| (t.weight, &t.term))
                    .collect(),
            ),
            (
                TermKind::PreferredAntiAffinity,
                info.preferred_anti_affinity
                    .iter()
                    .map(|t| (t.weight, &t.term))
                    .collect(),
            ),
        ];
        for (kind, terms) in kinds {
            for (weight, term) in terms {
                let g = self.group_for(kind, weight, term);
                self.bump_group(kind, g, node, 1);
                groups.push((kind as u32) << 28 | g);
            }
        }
        let placed = PlacedPod {
            info,
            node,
            class,
            groups,
            attachments,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.pods[id as usize] = Some(placed);
                id
            }
            None => {
                self.pods.push(Some(placed));
                (self.pods.len() - 1) as u32
            }
        };
        self.pod_by_name.insert(name_key, id);
        Ok(PodId(id))
    }

    /// Remove a placed pod (RemovePod, C.17); returns it.
    pub fn remove_pod(&mut self, id: PodId) -> Option<Arc<PodInfo>> {
        let placed = self.pods.get_mut(id.0 as usize)?.take()?;
        self.free.push(id.0);
        self.pod_by_name
            .remove(&(placed.info.namespace.clone(), placed.info.name.clone()));
        self.bump_class(placed.class, placed.node, -1);
        let entry = &mut self.nodes[placed.node as usize];
        if let Ok(requests) = &placed.info.requests {
            entry.requested.add_signed(requests, -1);
        }
        entry.non_zero_requested.0 -= placed.info.non_zero_requests.0;
        entry.non_zero_requested.1 -= placed.info.non_zero_requests.1;
        entry.pod_count -= 1;
        entry.used_ports.update(&placed.info.host_ports, false);
        self.count_volumes(&placed.info, placed.node, &placed.attachments, false);
        for g in &placed.groups {
            let kind = match g >> 28 {
                0 => TermKind::RequiredAffinity,
                1 => TermKind::RequiredAntiAffinity,
                2 => TermKind::PreferredAffinity,
                _ => TermKind::PreferredAntiAffinity,
            };
            self.bump_group(kind, g & 0x0fff_ffff, placed.node, -1);
        }
        Some(placed.info)
    }

    /// Replace the storage objects the volume filters read (C.50–C.53).
    /// The volumes of pods already placed are counted again against them.
    pub fn set_storage(&mut self, objects: &StorageObjects) {
        type Placed = (u32, Arc<PodInfo>, u32, Vec<(String, String)>);
        let placed: Vec<Placed> = self
            .pods
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let p = p.as_ref()?;
                Some((i as u32, p.info.clone(), p.node, p.attachments.clone()))
            })
            .collect();
        for (_, info, node, attachments) in &placed {
            self.count_volumes(info, *node, attachments, false);
        }
        self.storage = Storage::new(objects);
        for (id, info, node, _) in placed {
            let attachments = self.attachments_of(&info);
            self.count_volumes(&info, node, &attachments, true);
            if let Some(Some(p)) = self.pods.get_mut(id as usize) {
                p.attachments = attachments;
            }
        }
    }

    /// The unique CSI volumes a pod attaches (NodeVolumeLimits, C.51).
    fn attachments_of(&self, info: &PodInfo) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = info
            .volumes
            .claims
            .iter()
            .filter_map(|c| self.storage.claim(&info.namespace, &c.claim))
            .filter_map(|claim| self.storage.attachment(claim))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Count (or uncount) a pod's claims, inline disks and attachments.
    fn count_volumes(
        &mut self,
        info: &PodInfo,
        node: u32,
        attachments: &[(String, String)],
        add: bool,
    ) {
        for c in &info.volumes.claims {
            let key = (info.namespace.clone(), c.claim.clone());
            if add {
                *self.storage.claim_users.entry(key).or_default() += 1;
            } else if let Some(n) = self.storage.claim_users.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.storage.claim_users.remove(&key);
                }
            }
        }
        let entry = &mut self.nodes[node as usize].volumes;
        entry.add_disks(&info.volumes.disks, add);
        for (unique, driver) in attachments {
            entry.attach(unique, driver, add);
        }
    }

    /// Find a placed pod by namespace and name.
    pub fn find_pod(&self, namespace: &str, name: &str) -> Option<PodId> {
        self.pod_by_name
            .get(&(namespace.to_owned(), name.to_owned()))
            .map(|i| PodId(*i))
    }

    /// Name of the node a placed pod runs on.
    pub fn pod_node(&self, id: PodId) -> Option<&str> {
        let p = self.pods.get(id.0 as usize)?.as_ref()?;
        Some(self.nodes[p.node as usize].name.as_str())
    }

    fn class_for(&mut self, info: &PodInfo) -> u32 {
        let key = (
            info.namespace.clone(),
            info.labels.clone(),
            info.terminating,
        );
        if let Some(c) = self.class_by_key.get(&key) {
            return *c;
        }
        let id = self.classes.len() as u32;
        self.classes.push(PodClass {
            namespace: info.namespace.clone(),
            labels: info.labels.clone(),
            terminating: info.terminating,
            pods: 0,
            node_counts: IdMap::default(),
            key_domains: IdMap::default(),
        });
        self.classes_by_namespace
            .entry(info.namespace.clone())
            .or_default()
            .push(id);
        self.class_by_key.insert(key, id);
        id
    }

    fn bump_class(&mut self, class: u32, node: u32, delta: i32) {
        let pairs = &self.nodes[node as usize].pairs;
        let c = &mut self.classes[class as usize];
        c.pods = c.pods.wrapping_add_signed(delta);
        bump(&mut c.node_counts, node, delta);
        for (k, d) in pairs {
            let m = c.key_domains.entry(*k).or_default();
            bump(m, *d, delta);
            if m.is_empty() {
                c.key_domains.remove(k);
            }
        }
    }

    fn group_for(&mut self, kind: TermKind, weight: i64, term: &AffinityTerm) -> u32 {
        let key = (kind, weight, format!("{term:?}"));
        if let Some(g) = self.group_by_key.get(&key) {
            return *g;
        }
        let list = &mut self.groups[kind as usize];
        let id = list.len() as u32;
        list.push(TermGroup {
            weight,
            term: term.clone(),
            domains: IdMap::default(),
            pods: 0,
        });
        self.group_by_key.insert(key, id);
        id
    }

    fn bump_group(&mut self, kind: TermKind, group: u32, node: u32, delta: i32) {
        let key = self.key_id(&self.groups[kind as usize][group as usize].term.topology_key);
        let dom = self.domain(key, node);
        let g = &mut self.groups[kind as usize][group as usize];
        g.pods = g.pods.wrapping_add_signed(delta);
        if let Some((_, d)) = dom {
            bump(&mut g.domains, d, delta);
        }
    }

    /// Canonical view of every index (non-zero entries only), for checking
    /// that AddPod followed by RemovePod restores the state.
    pub fn index_fingerprint(&self) -> String {
        let mut out = BTreeMap::new();
        for c in self.classes.iter().filter(|c| c.pods > 0) {
            let nodes: BTreeMap<&str, u32> = c
                .node_counts
                .iter()
                .map(|(n, v)| (self.nodes[*n as usize].name.as_str(), *v))
                .collect();
            let doms: BTreeMap<(&str, &str), u32> = c
                .key_domains
                .iter()
                .flat_map(|(k, m)| m.iter().map(move |(d, v)| (*k, *d, *v)))
                .map(|(k, d, v)| (self.pair_names(k, d), v))
                .collect();
            out.insert(
                format!("class {}/{:?} t={}", c.namespace, c.labels, c.terminating),
                format!("{} {nodes:?} {doms:?}", c.pods),
            );
        }
        for (kind, list) in self.groups.iter().enumerate() {
            for g in list.iter().filter(|g| g.pods > 0) {
                let doms: BTreeMap<&str, u32> = match self.key_id(&g.term.topology_key) {
                    Some(k) => g
                        .domains
                        .iter()
                        .map(|(d, v)| (self.topo[k as usize].value_names[*d as usize].as_str(), *v))
                        .collect(),
                    None => BTreeMap::new(),
                };
                out.insert(
                    format!("group {kind} w={} {:?}", g.weight, g.term),
                    format!("{} {doms:?}", g.pods),
                );
            }
        }
        for n in &self.nodes {
            if n.pod_count != 0
                || !n.used_ports.is_empty()
                || n.requested != Resources::default()
                || !n.volumes.is_empty()
                || n.non_zero_requested != (0, 0)
            {
                out.insert(
                    format!("node {}", n.name),
                    format!(
                        "{} {:?} {:?} {:?} {}",
                        n.pod_count,
                        n.requested,
                        n.non_zero_requested,
                        n.used_ports,
                        n.volumes.fingerprint()
                    ),
                );
            }
        }
        let claim_users: BTreeMap<_, _> = self.storage.claim_users.iter().collect();
        if !claim_users.is_empty() {
            out.insert("claim users".to_owned(), format!("{claim_users:?}"));
        }
        let pods: BTreeMap<&(String, String), &str> = self
            .pod_by_name
            .iter()
            .filter_map(|(k, id)| Some((k, self.pod_node(PodId(*id))?)))
            .collect();
        format!("{out:#?}\n{pods:?}")
    }

    fn pair_names(&self, k: u32, d: u32) -> (&str, &str) {
        let ki = &self.topo[k as usize];
        let key = self
            .keys
            .iter()
            .find(|(_, id)| **id == k)
            .map(|(s, _)| s.as_str())
            .unwrap_or("");
        (key, ki.value_names[d as usize].as_str())
    }

    /// All placed pods (unordered).
    pub(crate) fn placed(&self) -> impl Iterator<Item = (&PodInfo, u32)> {
        self.pods
            .iter()
            .flatten()
            .map(|p| (p.info.as_ref(), p.node))
    }
}

fn bump(m: &mut IdMap<u32, u32>, k: u32, delta: i32) {
    let e = m.entry(k).or_insert(0);
    *e = e.wrapping_add_signed(delta);
    if *e == 0 {
        m.remove(&k);
    }
}

/// `(namespace, name)` of a pod, the namespace defaulted.
fn nominated_key(pod: &Pod) -> (&str, &str) {
    (
        kube_validation::namespace_or_default(pod.metadata.namespace.as_deref()),
        pod.metadata.name.as_deref().unwrap_or_default(),
    )
}
