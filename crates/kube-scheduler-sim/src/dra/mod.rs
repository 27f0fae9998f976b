//! Dynamic Resource Allocation: the `resource.k8s.io/v1` objects the
//! DynamicResources plugin reads (DeviceClasses, ResourceClaims,
//! ResourceClaimTemplates, ResourceSlices), indexed once per cluster
//! state, and what a pod's `spec.resourceClaims` refer to (DR.1–DR.4).
//!
//! The allocator that picks devices for a claim on one node is in
//! [`allocator`]; CEL device selectors are evaluated by [`cel`].

pub(crate) mod allocator;
pub(crate) mod capacity;
pub(crate) mod cel;
pub(crate) mod extended;

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{NodeSelector, Pod};
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use kube_validation::namespace_or_default;
use kube_validation::node_selector::NodeSelectorMatcher;

use crate::KubernetesVersion;

/// The DRA objects of a cluster snapshot, as read from the API.
#[derive(Debug, Clone, Default)]
pub struct DraObjects {
    /// DeviceClasses (cluster-scoped).
    pub device_classes: Vec<DeviceClass>,
    /// ResourceClaims.
    pub claims: Vec<ResourceClaim>,
    /// ResourceClaimTemplates.
    pub claim_templates: Vec<ResourceClaimTemplate>,
    /// ResourceSlices (cluster-scoped): the devices drivers publish.
    pub slices: Vec<ResourceSlice>,
}

impl DraObjects {
    /// Whether there is nothing to index.
    pub fn is_empty(&self) -> bool {
        self.device_classes.is_empty()
            && self.claims.is_empty()
            && self.claim_templates.is_empty()
            && self.slices.is_empty()
    }
}

/// One device: driver, pool and device name (`structured.DeviceID`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct DeviceId {
    pub(crate) driver: String,
    pub(crate) pool: String,
    pub(crate) device: String,
}

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.driver, self.pool, self.device)
    }
}

/// The DRA feature gates on by default in a Kubernetes release, as the
/// allocator reads them (`AllocatorFeatures`, DR.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DraFeatures {
    /// DRAPrioritizedList: `firstAvailable` requests (beta from 1.34).
    pub(crate) prioritized_list: bool,
    /// DRAAdminAccess (beta from 1.34).
    pub(crate) admin_access: bool,
    /// DRADeviceTaints (beta from 1.36).
    pub(crate) device_taints: bool,
    /// DRAPartitionableDevices: shared counters (beta from 1.36).
    pub(crate) partitionable_devices: bool,
    /// DRADeviceBindingConditions with DRAResourceClaimDeviceStatus (beta
    /// from 1.36): devices with binding conditions may be allocated.
    pub(crate) binding_conditions: bool,
    /// The plugin scores the chosen `firstAvailable` alternative (1.35+).
    pub(crate) scores_alternatives: bool,
    /// DRAExtendedResource (beta from 1.36): extended resources backed by
    /// DeviceClasses (DR.11).
    pub(crate) extended_resources: bool,
    /// DRAConsumableCapacity (beta from 1.36): devices shared by several
    /// allocations, capacity requests, `distinctAttribute` (DR.12).
    pub(crate) consumable_capacity: bool,
    /// 1.36 only: an `All` request leaves out the shared devices whose
    /// capacity allocated claims already use up (1.37 fails it instead).
    pub(crate) all_skips_used_up_shares: bool,
}

impl DraFeatures {
    /// The defaults of `version`.
    pub(crate) fn of(version: KubernetesVersion) -> Self {
        let from_1_36 = version >= KubernetesVersion::V1_36;
        Self {
            prioritized_list: true,
            admin_access: true,
            device_taints: from_1_36,
            partitionable_devices: from_1_36,
            binding_conditions: from_1_36,
            scores_alternatives: version >= KubernetesVersion::V1_35,
            extended_resources: from_1_36,
            consumable_capacity: from_1_36,
            all_skips_used_up_shares: version == KubernetesVersion::V1_36,
        }
    }
}

/// A pool of one driver: the slices of its newest generation that
/// target a node (`structured.Pool`).
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    pub(crate) driver: String,
    pub(crate) name: String,
    /// Indexes into [`Dra::slices`] of the slices with devices.
    pub(crate) slices: Vec<usize>,
    /// Indexes of the slices with shared counters (partitionable devices).
    pub(crate) counter_slices: Vec<usize>,
    /// Not every slice of the generation is published yet.
    pub(crate) incomplete: bool,
    /// Duplicate device names (or broken counters): never allocated from.
    pub(crate) invalid: bool,
}

impl Pool {
    /// `driver/pool`, as upstream prints a pool ID.
    pub(crate) fn id(&self) -> String {
        format!("{}/{}", self.driver, self.name)
    }
}

/// The indexed DRA objects of a [`crate::ClusterState`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Dra {
    pub(crate) classes: HashMap<String, DeviceClass>,
    /// By (namespace, name); allocations the simulator makes are recorded
    /// here.
    pub(crate) claims: HashMap<(String, String), ResourceClaim>,
    pub(crate) templates: HashMap<(String, String), ResourceClaimTemplate>,
    /// Sorted by name: a deterministic device order.
    pub(crate) slices: Vec<ResourceSlice>,
    /// Devices allocated by some claim without admin access, with the
    /// number of claims holding each (`ListAllAllocatedDevices`).
    pub(crate) in_use: HashMap<DeviceId, u32>,
    /// Per node index: the pools whose slices target it.
    pub(crate) node_pools: Vec<Vec<Pool>>,
    /// The index of the first device of each slice in a numbering of
    /// every device of every slice (the allocator's device handles).
    pub(crate) slice_offsets: Vec<u32>,
    /// Per device handle: whether a claim holds it ([`Dra::in_use`]).
    pub(crate) busy: Vec<bool>,
    /// The handles of each device (several when slices repeat a name).
    handles: HashMap<DeviceId, Vec<u32>>,
    /// Selector verdicts per device, kept across evaluations: a
    /// selector's verdict on a device depends on nothing else.
    pub(crate) verdicts: std::sync::Arc<std::sync::Mutex<Verdicts>>,
    /// The DeviceClass serving each extended resource name (DR.11).
    pub(crate) extended: HashMap<String, String>,
    /// Devices allocated as shares (`shareID`) by claims without admin
    /// access, with the capacity those shares consume (DR.12).
    pub(crate) shares: HashMap<DeviceId, capacity::Amounts>,
}

/// CEL selector verdicts by expression and device handle.
#[derive(Debug, Default)]
pub(crate) struct Verdicts {
    /// Each expression's number.
    ids: HashMap<String, u32>,
    /// (expression, device handle) → the selector accepts the device.
    known: HashMap<(u32, u32), bool>,
}

impl Verdicts {
    /// The number of an expression.
    pub(crate) fn id(&mut self, expression: &str) -> u32 {
        if let Some(id) = self.ids.get(expression) {
            return *id;
        }
        let id = self.ids.len() as u32;
        self.ids.insert(expression.to_owned(), id);
        id
    }

    /// A verdict found before.
    pub(crate) fn get(&self, expression: u32, device: u32) -> Option<bool> {
        self.known.get(&(expression, device)).copied()
    }

    /// Remember a verdict.
    pub(crate) fn insert(&mut self, expression: u32, device: u32, verdict: bool) {
        self.known.insert((expression, device), verdict);
    }
}

impl Dra {
    /// Index `objects`; `nodes` are (name, labels) by node index.
    pub(crate) fn new<'a>(
        objects: &DraObjects,
        nodes: impl Iterator<Item = (&'a str, &'a BTreeMap<String, String>)>,
    ) -> Self {
        let mut dra = Dra::default();
        for class in &objects.device_classes {
            let name = class.metadata.name.clone().unwrap_or_default();
            dra.classes.entry(name).or_insert_with(|| class.clone());
        }
        dra.extended = extended::class_mapping(&dra.classes.values().collect::<Vec<_>>());
        for claim in &objects.claims {
            let key = object_key(&claim.metadata);
            dra.claims.entry(key).or_insert_with(|| claim.clone());
        }
        for template in &objects.claim_templates {
            let key = object_key(&template.metadata);
            dra.templates.entry(key).or_insert_with(|| template.clone());
        }
        dra.slices = objects.slices.clone();
        dra.slices
            .sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut next = 0u32;
        for slice in &dra.slices {
            dra.slice_offsets.push(next);
            for device in slice.spec.devices.iter().flatten() {
                let id = DeviceId {
                    driver: slice.spec.driver.clone(),
                    pool: slice.spec.pool.name.clone(),
                    device: device.name.clone(),
                };
                dra.handles.entry(id).or_default().push(next);
                next += 1;
            }
        }
        dra.busy = vec![false; next as usize];
        dra.recount_in_use();
        for (name, labels) in nodes {
            dra.add_node(name, labels);
        }
        dra
    }

    /// Count the devices every allocated claim holds.
    fn recount_in_use(&mut self) {
        self.in_use.clear();
        self.shares.clear();
        let held: Vec<DeviceId> = self.claims.values().flat_map(held_devices).collect();
        for id in held {
            self.hold(id, 1);
        }
        let shares: Vec<(DeviceId, capacity::Amounts)> =
            self.claims.values().flat_map(held_shares).collect();
        for (id, amounts) in shares {
            self.share(id, &amounts, 1);
        }
    }

    /// Count one more (`1`) or one less (`-1`) share of a device.
    fn share(&mut self, id: DeviceId, amounts: &capacity::Amounts, sign: i128) {
        let entry = self.shares.entry(id.clone()).or_default();
        capacity::add(entry, amounts, sign);
        if sign < 0 && entry.values().all(|v| *v == 0) {
            self.shares.remove(&id);
        }
    }

    /// Count one more (`1`) or one less (`-1`) claim holding a device.
    fn hold(&mut self, id: DeviceId, change: i32) {
        let count = self.in_use.entry(id.clone()).or_default();
        *count = count.saturating_add_signed(change);
        let busy = *count > 0;
        if !busy {
            self.in_use.remove(&id);
        }
        for handle in self.handles.get(&id).into_iter().flatten() {
            self.busy[*handle as usize] = busy;
        }
    }

    /// The handle of the device at `index` of the slice at `slice`.
    pub(crate) fn handle(&self, slice: usize, index: usize) -> u32 {
        self.slice_offsets[slice] + index as u32
    }

    /// Gather the pools of a node added to the state (`GatherPools`, DR.3).
    pub(crate) fn add_node(&mut self, name: &str, labels: &BTreeMap<String, String>) {
        let pools = gather_pools(&self.slices, name, labels);
        self.node_pools.push(pools);
    }

    /// Record an allocation made for `claim` (the simulator's Reserve and
    /// PreBind): its status, the pod it is reserved for, and its devices.
    pub(crate) fn record(&mut self, key: (String, String), claim: ResourceClaim) {
        let before: Vec<DeviceId> = self.claims.get(&key).map(held_devices).unwrap_or_default();
        for id in before {
            self.hold(id, -1);
        }
        let shared_before = self.claims.get(&key).map(held_shares).unwrap_or_default();
        for (id, amounts) in shared_before {
            self.share(id, &amounts, -1);
        }
        for (id, amounts) in held_shares(&claim) {
            self.share(id, &amounts, 1);
        }
        for id in held_devices(&claim) {
            self.hold(id, 1);
        }
        self.claims.insert(key, claim);
    }
}

/// (namespace, name) of a namespaced object.
fn object_key(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> (String, String) {
    (
        namespace_or_default(meta.namespace.as_deref()).to_owned(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// A claim's allocation results that hold devices: those without admin
/// access.
fn holding_results(
    claim: &ResourceClaim,
) -> impl Iterator<Item = &k8s_openapi::api::resource::v1::DeviceRequestAllocationResult> {
    claim
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .and_then(|a| a.devices.as_ref())
        .and_then(|d| d.results.as_ref())
        .into_iter()
        .flatten()
        .filter(|r| r.admin_access != Some(true))
}

/// The devices a claim's allocation holds as shares (`shareID`), with the
/// capacity each share consumes (DR.12).
fn held_shares(claim: &ResourceClaim) -> Vec<(DeviceId, capacity::Amounts)> {
    holding_results(claim)
        .filter(|r| r.share_id.is_some())
        .map(|r| {
            let amounts = r
                .consumed_capacity
                .iter()
                .flatten()
                .map(|(name, q)| (name.clone(), capacity::nanos(q)))
                .collect();
            let id = DeviceId {
                driver: r.driver.clone(),
                pool: r.pool.clone(),
                device: r.device.clone(),
            };
            (id, amounts)
        })
        .collect()
}

/// The devices a claim's allocation holds exclusively: every result
/// without admin access and without a `shareID`.
fn held_devices(claim: &ResourceClaim) -> Vec<DeviceId> {
    holding_results(claim)
        .filter(|r| r.share_id.is_none())
        .map(|r| DeviceId {
            driver: r.driver.clone(),
            pool: r.pool.clone(),
            device: r.device.clone(),
        })
        .collect()
}

/// Whether a slice or device placement (`nodeName`, `allNodes`,
/// `nodeSelector`) admits the node (`NodeMatches`).
pub(crate) fn node_matches(
    node_name: &str,
    labels: &BTreeMap<String, String>,
    wanted_name: Option<&str>,
    all_nodes: bool,
    selector: Option<&NodeSelector>,
) -> bool {
    match (wanted_name.filter(|n| !n.is_empty()), all_nodes, selector) {
        (Some(wanted), _, _) => wanted == node_name,
        (None, true, _) => true,
        (None, false, Some(selector)) => {
            NodeSelectorMatcher::parse(selector).matches(node_name, labels)
        }
        (None, false, None) => false,
    }
}

/// The pools whose slices target a node, each at its newest generation,
/// complete or not (`GatherPools`, DR.3). Sorted by driver and pool name
/// (upstream's order is a map's, so unspecified).
fn gather_pools(
    slices: &[ResourceSlice],
    node: &str,
    labels: &BTreeMap<String, String>,
) -> Vec<Pool> {
    let mut by_pool: BTreeMap<(String, String), (i64, Vec<usize>)> = BTreeMap::new();
    for (index, slice) in slices.iter().enumerate() {
        let spec = &slice.spec;
        let has_counters = spec.shared_counters.as_ref().is_some_and(|c| !c.is_empty());
        let targets = if has_counters {
            true
        } else if spec.node_name.as_deref().is_some_and(|n| !n.is_empty())
            || spec.all_nodes == Some(true)
            || spec.node_selector.is_some()
        {
            node_matches(
                node,
                labels,
                spec.node_name.as_deref(),
                spec.all_nodes == Some(true),
                spec.node_selector.as_ref(),
            )
        } else if spec.per_device_node_selection == Some(true) {
            spec.devices.iter().flatten().any(|d| {
                node_matches(
                    node,
                    labels,
                    d.node_name.as_deref(),
                    d.all_nodes == Some(true),
                    d.node_selector.as_ref(),
                )
            })
        } else {
            false
        };
        if !targets {
            continue;
        }
        let key = (spec.driver.clone(), spec.pool.name.clone());
        let generation = spec.pool.generation;
        let entry = by_pool.entry(key).or_insert((generation, Vec::new()));
        if generation > entry.0 {
            *entry = (generation, Vec::new());
        }
        if generation == entry.0 {
            entry.1.push(index);
        }
    }
    let mut pools = Vec::with_capacity(by_pool.len());
    for ((driver, name), (generation, targeting)) in by_pool {
        let Some(first) = targeting.first().map(|i| &slices[*i]) else {
            continue;
        };
        let wanted = first.spec.pool.resource_slice_count;
        let mut incomplete = false;
        if targeting.len() as i64 != wanted {
            let of_pool = || {
                slices
                    .iter()
                    .filter(|s| s.spec.driver == driver && s.spec.pool.name == name)
            };
            if of_pool().any(|s| s.spec.pool.generation > generation) {
                continue; // obsolete: a newer generation is being published
            }
            let published = of_pool()
                .filter(|s| s.spec.pool.generation == generation)
                .count();
            incomplete = published as i64 != wanted;
        }
        let (counter_slices, device_slices): (Vec<usize>, Vec<usize>) =
            targeting.into_iter().partition(|i| {
                slices[*i]
                    .spec
                    .shared_counters
                    .as_ref()
                    .is_some_and(|c| !c.is_empty())
            });
        let mut names = std::collections::HashSet::new();
        let invalid = !device_slices
            .iter()
            .flat_map(|i| slices[*i].spec.devices.iter().flatten())
            .all(|d| names.insert(d.name.as_str()));
        pools.push(Pool {
            driver,
            name,
            slices: device_slices,
            counter_slices,
            incomplete,
            invalid,
        });
    }
    pools
}

/// How a pod refers to one claim (`resourceclaim.Name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PodClaim {
    /// The entry's name in `spec.resourceClaims`.
    pub(crate) name: String,
    /// The claim to use.
    pub(crate) source: ClaimSource,
}

/// Where a pod's claim comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClaimSource {
    /// `resourceClaimName`, or a template's claim already named in
    /// `status.resourceClaimStatuses`.
    Named(String),
    /// A template whose claim the resource-claim controller has not
    /// created yet: the simulator makes it from the template.
    Template(String),
    /// The status says no claim is needed (`resourceClaimName` unset).
    NotNeeded,
    /// Neither source is set (`ErrAPIUnsupported`).
    Unsupported,
}

/// The claims a pod refers to, in `spec.resourceClaims` order.
pub(crate) fn pod_claims(pod: &Pod) -> Vec<PodClaim> {
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.as_ref());
    let entries = pod.spec.as_ref().and_then(|s| s.resource_claims.as_ref());
    entries
        .into_iter()
        .flatten()
        .map(|entry| {
            let source = match (
                &entry.resource_claim_name,
                &entry.resource_claim_template_name,
            ) {
                (Some(name), _) => ClaimSource::Named(name.clone()),
                (None, Some(template)) => {
                    match statuses
                        .into_iter()
                        .flatten()
                        .find(|s| s.name == entry.name)
                    {
                        Some(status) => match &status.resource_claim_name {
                            Some(name) => ClaimSource::Named(name.clone()),
                            None => ClaimSource::NotNeeded,
                        },
                        None => ClaimSource::Template(template.clone()),
                    }
                }
                (None, None) => ClaimSource::Unsupported,
            };
            PodClaim {
                name: entry.name.clone(),
                source,
            }
        })
        .collect()
}

/// The devices of a cluster's ResourceSlices and how many claims hold,
/// per node and per DeviceClass: what `policyctl report` shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceUsage {
    /// Per node and driver, in node order then driver name.
    pub nodes: Vec<NodeDevices>,
    /// Per DeviceClass, by name.
    pub classes: Vec<ClassDevices>,
}

/// The devices one node can be allocated from one driver.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeDevices {
    /// The node.
    pub node: String,
    /// The driver.
    pub driver: String,
    /// Devices of the driver's complete pools that the node reaches
    /// (node-local, or shared with other nodes by `allNodes` or a node
    /// selector).
    pub devices: usize,
    /// Of those, the devices an allocated claim holds.
    pub allocated: usize,
    /// Of `devices`, those the node shares with other nodes.
    pub shared: usize,
}

/// The devices a DeviceClass selects.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassDevices {
    /// The DeviceClass.
    pub class: String,
    /// Devices its selectors accept, over every slice.
    pub devices: usize,
    /// Of those, the devices an allocated claim holds.
    pub allocated: usize,
    /// A selector that could not be evaluated, with upstream's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Dra {
    /// Device use per node (`node_names` by node index) and per class.
    pub(crate) fn usage<'a>(&self, node_names: impl Iterator<Item = &'a str>) -> DeviceUsage {
        let mut usage = DeviceUsage::default();
        for (name, pools) in node_names.zip(&self.node_pools) {
            let mut by_driver: BTreeMap<&str, NodeDevices> = BTreeMap::new();
            for pool in pools.iter().filter(|p| !p.incomplete && !p.invalid) {
                let entry = by_driver
                    .entry(&pool.driver)
                    .or_insert_with(|| NodeDevices {
                        node: name.to_owned(),
                        driver: pool.driver.clone(),
                        devices: 0,
                        allocated: 0,
                        shared: 0,
                    });
                for slice in &pool.slices {
                    let spec = &self.slices[*slice].spec;
                    let shared = spec.node_name.as_deref().is_none_or(str::is_empty);
                    let count = spec.devices.as_ref().map_or(0, Vec::len);
                    for index in 0..count {
                        entry.devices += 1;
                        entry.shared += usize::from(shared);
                        entry.allocated +=
                            usize::from(self.busy[self.handle(*slice, index) as usize]);
                    }
                }
            }
            usage.nodes.extend(by_driver.into_values());
        }
        let mut classes: Vec<&DeviceClass> = self.classes.values().collect();
        classes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for class in classes {
            usage.classes.push(self.class_devices(class));
        }
        usage
    }

    /// The devices of every slice (each device once, the newest generation
    /// of its pool) that `class`'s selectors accept.
    fn class_devices(&self, class: &DeviceClass) -> ClassDevices {
        let name = class.metadata.name.clone().unwrap_or_default();
        let mut out = ClassDevices {
            class: name.clone(),
            devices: 0,
            allocated: 0,
            error: None,
        };
        let mut compiled = Vec::new();
        for (i, selector) in class.spec.selectors.iter().flatten().enumerate() {
            let Some(cel) = &selector.cel else { continue };
            match cel::CompiledSelector::compile(&cel.expression) {
                Ok(selector) => compiled.push(selector),
                Err(error) => {
                    out.error = Some(format!(
                        "class {name}: selector #{i}: CEL compile error: {error}"
                    ));
                    return out;
                }
            }
        }
        let mut newest: HashMap<(&str, &str), i64> = HashMap::new();
        for slice in &self.slices {
            let key = (slice.spec.driver.as_str(), slice.spec.pool.name.as_str());
            let generation = newest.entry(key).or_insert(slice.spec.pool.generation);
            *generation = (*generation).max(slice.spec.pool.generation);
        }
        for (s, slice) in self.slices.iter().enumerate() {
            let key = (slice.spec.driver.as_str(), slice.spec.pool.name.as_str());
            if newest.get(&key) != Some(&slice.spec.pool.generation) {
                continue;
            }
            for (index, device) in slice.spec.devices.iter().flatten().enumerate() {
                let input = cel::DeviceInput {
                    driver: &slice.spec.driver,
                    attributes: device.attributes.as_ref(),
                    capacity: device.capacity.as_ref(),
                    allow_multiple_allocations: device.allow_multiple_allocations == Some(true),
                };
                let mut accepted = true;
                for (i, selector) in compiled.iter().enumerate() {
                    match selector.matches(&input) {
                        Ok(true) => {}
                        Ok(false) => {
                            accepted = false;
                            break;
                        }
                        Err(error) => {
                            out.error.get_or_insert_with(|| {
                                format!(
                                    "class {name}: selector #{i} on device {}/{}/{}: CEL runtime error: {error}",
                                    slice.spec.driver, slice.spec.pool.name, device.name
                                )
                            });
                            accepted = false;
                            break;
                        }
                    }
                }
                if accepted {
                    out.devices += 1;
                    out.allocated += usize::from(self.busy[self.handle(s, index) as usize]);
                }
            }
        }
        out
    }
}
