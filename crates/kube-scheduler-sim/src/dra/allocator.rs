//! The structured-parameters allocator (DR.5–DR.9): for the claims of one
//! pod and one node, the first set of devices that satisfies every
//! request, found by the same exhaustive search in the same order as
//! kube-scheduler's (`k8s.io/dynamic-resource-allocation/structured`,
//! `Allocator.Allocate`): claim after claim, request after request, each
//! device picked from the node's pools in order, backtracking when a later
//! request or a constraint cannot be met.

use std::collections::{BTreeMap, HashMap, HashSet};

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::api::resource::v1::{
    Device, DeviceAttribute, DeviceClass, DeviceSelector, DeviceTaint, DeviceToleration,
    ResourceClaimSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

use super::capacity;
use super::cel::{CompiledSelector, DeviceInput};
use super::{DeviceId, Dra, DraFeatures, Pool, node_matches};

/// The most devices one claim's allocation may hold
/// (`AllocationResultsMaxSize`).
pub(crate) const MAX_RESULTS: usize = 32;

/// A claim's requests, checked once per pod: classes looked up, selectors
/// compiled, counts read.
#[derive(Debug)]
pub(crate) struct PreparedClaim<'a> {
    /// `namespace/name`, as upstream prints a claim.
    pub(crate) label: String,
    requests: Vec<PreparedRequest<'a>>,
    constraints: Vec<Constraint>,
}

/// One request: `exactly`, or the `firstAvailable` alternatives in order.
#[derive(Debug)]
struct PreparedRequest<'a> {
    name: &'a str,
    alternatives: Vec<Alternative<'a>>,
    /// `firstAvailable` (results are named `request/subrequest`).
    prioritized: bool,
}

/// What one request (or subrequest) asks for.
#[derive(Debug)]
struct Alternative<'a> {
    /// The request's own name (the subrequest's for an alternative).
    name: &'a str,
    class: &'a DeviceClass,
    selectors: &'a [DeviceSelector],
    /// `allocationMode: All`.
    all: bool,
    count: i64,
    admin_access: bool,
    tolerations: &'a [DeviceToleration],
    /// `capacity.requests`: what it asks of each capacity of a device
    /// (DR.12).
    capacity: Option<&'a BTreeMap<String, ApiQuantity>>,
}

/// A `matchAttribute` constraint, or (DR.12) a `distinctAttribute` one.
#[derive(Debug, Clone)]
struct Constraint {
    /// The requests it applies to; empty means all of them.
    requests: HashSet<String>,
    attribute: String,
    /// `distinctAttribute`: every device's value differs from the others'.
    distinct: bool,
}

/// One device picked for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Picked {
    /// `request`, or `request/subrequest` for an alternative.
    pub(crate) request: String,
    pub(crate) id: DeviceId,
    pub(crate) admin_access: bool,
    /// The slice it is published in (an index into the state's slices).
    pub(crate) slice: usize,
    /// Its index in that slice.
    pub(crate) device: usize,
    /// A share of a device that allows several allocations (DR.12): its
    /// `shareID` and the capacity it consumes.
    pub(crate) share: Option<(String, capacity::Amounts)>,
}

/// The devices picked for one claim and the nodes they tie it to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Allocation {
    pub(crate) devices: Vec<Picked>,
    /// `None` when every device is reachable from every node.
    pub(crate) node_selector: Option<NodeSelector>,
}

/// The CEL selectors of one evaluation, compiled once per expression, each
/// with its number in the state's verdict cache.
#[derive(Default)]
pub(crate) struct Selectors {
    compiled: HashMap<String, (u32, Result<CompiledSelector, String>)>,
}

impl std::fmt::Debug for Selectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selectors")
            .field("expressions", &self.compiled.len())
            .finish()
    }
}

impl Selectors {
    /// Compile the selectors of the class named `class`, if it exists.
    pub(crate) fn add_class(&mut self, dra: &Dra, class: &str) {
        if let Some(class) = dra.classes.get(class) {
            self.add(dra, class.spec.selectors.as_deref().unwrap_or_default());
        }
    }

    fn add(&mut self, dra: &Dra, selectors: &[DeviceSelector]) {
        for expression in selectors.iter().filter_map(|s| s.cel.as_ref()) {
            let text = &expression.expression;
            if !self.compiled.contains_key(text) {
                let id = dra
                    .verdicts
                    .lock()
                    .map_or(u32::MAX, |mut verdicts| verdicts.id(text));
                self.compiled
                    .insert(text.clone(), (id, CompiledSelector::compile(text)));
            }
        }
    }
}

/// Why a claim's requests cannot be prepared: kube-scheduler's error text.
pub(crate) type PrepareError = String;

/// Prepare the claims to allocate: every request's class must exist
/// (checked before by the plugin's PreFilter), alternatives need the
/// prioritized-list feature, constraints must be `matchAttribute`.
pub(crate) fn prepare<'a>(
    dra: &'a Dra,
    claims: &[(String, &'a ResourceClaimSpec)],
    features: DraFeatures,
    selectors: &mut Selectors,
) -> Result<Vec<PreparedClaim<'a>>, PrepareError> {
    let mut prepared = Vec::with_capacity(claims.len());
    for (label, spec) in claims {
        let devices = &spec.devices;
        let mut requests = Vec::new();
        for request in devices.iter().flat_map(|d| d.requests.iter().flatten()) {
            let subrequests = request.first_available.as_deref().unwrap_or_default();
            let prioritized = !subrequests.is_empty();
            if prioritized && !features.prioritized_list {
                return Err(format!(
                    "claim {label}, request {}: has subrequests, but the DRAPrioritizedList feature is disabled",
                    request.name
                ));
            }
            let mut alternatives = Vec::new();
            let asked: Vec<AlternativeSource<'_>> = if prioritized {
                subrequests
                    .iter()
                    .map(|s| AlternativeSource {
                        name: &s.name,
                        class: &s.device_class_name,
                        selectors: s.selectors.as_deref().unwrap_or_default(),
                        mode: s.allocation_mode.as_deref(),
                        count: s.count,
                        admin_access: false,
                        tolerations: s.tolerations.as_deref().unwrap_or_default(),
                        capacity: s.capacity.as_ref().and_then(|c| c.requests.as_ref()),
                    })
                    .collect()
            } else if let Some(exact) = &request.exactly {
                vec![AlternativeSource {
                    name: &request.name,
                    class: &exact.device_class_name,
                    selectors: exact.selectors.as_deref().unwrap_or_default(),
                    mode: exact.allocation_mode.as_deref(),
                    count: exact.count,
                    admin_access: exact.admin_access == Some(true),
                    tolerations: exact.tolerations.as_deref().unwrap_or_default(),
                    capacity: exact.capacity.as_ref().and_then(|c| c.requests.as_ref()),
                }]
            } else {
                Vec::new()
            };
            for source in asked {
                alternatives.push(source.prepare(label, features, dra, selectors)?);
            }
            requests.push(PreparedRequest {
                name: &request.name,
                alternatives,
                prioritized,
            });
        }
        let mut constraints = Vec::new();
        for (i, constraint) in devices
            .iter()
            .flat_map(|d| d.constraints.iter().flatten())
            .enumerate()
        {
            let (attribute, distinct) = match (
                &constraint.match_attribute,
                &constraint.distinct_attribute,
            ) {
                (Some(attribute), _) => (attribute, false),
                (None, Some(attribute)) if features.consumable_capacity => (attribute, true),
                _ => {
                    return Err(format!(
                        "claim {label}, constraint #{i}: empty constraint (unsupported constraint type?)"
                    ));
                }
            };
            constraints.push(Constraint {
                requests: constraint.requests.iter().flatten().cloned().collect(),
                attribute: attribute.clone(),
                distinct,
            });
        }
        prepared.push(PreparedClaim {
            label: label.clone(),
            requests,
            constraints,
        });
    }
    Ok(prepared)
}

/// The claim kube-scheduler builds for a pod's extended resources on a
/// node (DR.11): one `ExactCount` request per container and resource, of
/// the class serving the resource, without selectors, constraints or
/// admin access. The classes' selectors must already be in `selectors`
/// ([`Selectors::add_class`]).
pub(crate) fn extended_claim<'a>(
    dra: &'a Dra,
    label: String,
    requests: &'a [super::extended::ExtendedRequest],
) -> Result<PreparedClaim<'a>, PrepareError> {
    let mut prepared = Vec::with_capacity(requests.len());
    for request in requests {
        let Some(class) = dra.classes.get(&request.class) else {
            return Err(format!(
                "claim {label}, request {}: could not retrieve device class {}: deviceclass.resource.k8s.io \"{}\" not found",
                request.name, request.class, request.class
            ));
        };
        prepared.push(PreparedRequest {
            name: &request.name,
            alternatives: vec![Alternative {
                name: &request.name,
                class,
                selectors: &[],
                all: false,
                count: request.count,
                admin_access: false,
                tolerations: &[],
                capacity: None,
            }],
            prioritized: false,
        });
    }
    Ok(PreparedClaim {
        label,
        requests: prepared,
        constraints: Vec::new(),
    })
}

/// The fields of an `exactly` request or a subrequest.
struct AlternativeSource<'a> {
    name: &'a str,
    class: &'a str,
    selectors: &'a [DeviceSelector],
    mode: Option<&'a str>,
    count: Option<i64>,
    admin_access: bool,
    tolerations: &'a [DeviceToleration],
    capacity: Option<&'a BTreeMap<String, ApiQuantity>>,
}

impl<'a> AlternativeSource<'a> {
    fn prepare(
        self,
        label: &str,
        features: DraFeatures,
        dra: &'a Dra,
        selectors: &mut Selectors,
    ) -> Result<Alternative<'a>, PrepareError> {
        if self.selectors.iter().any(|s| s.cel.is_none()) {
            let i = self
                .selectors
                .iter()
                .position(|s| s.cel.is_none())
                .unwrap_or(0);
            return Err(format!(
                "claim {label}, request {}, selector #{i}: CEL expression empty (unsupported selector type?)",
                self.name
            ));
        }
        if self.admin_access && !features.admin_access {
            return Err(format!(
                "claim {label}, request {}: admin access is requested, but the feature is disabled",
                self.name
            ));
        }
        if self.class.is_empty() {
            return Err(format!(
                "claim {label}, request {}: missing device class name (unsupported request type?)",
                self.name
            ));
        }
        let Some(class) = dra.classes.get(self.class) else {
            return Err(format!(
                "claim {label}, request {}: could not retrieve device class {}: deviceclass.resource.k8s.io \"{}\" not found",
                self.name, self.class, self.class
            ));
        };
        let all = match self.mode.unwrap_or("ExactCount") {
            "ExactCount" => false,
            "All" => true,
            other => {
                return Err(format!(
                    "claim {label}, request {}: unsupported count mode {other}",
                    self.name
                ));
            }
        };
        selectors.add(dra, class.spec.selectors.as_deref().unwrap_or_default());
        selectors.add(dra, self.selectors);
        Ok(Alternative {
            name: self.name,
            class,
            selectors: self.selectors,
            all,
            count: self.count.unwrap_or(1),
            admin_access: self.admin_access,
            tolerations: self.tolerations,
            capacity: self.capacity,
        })
    }
}

/// Whose selector is evaluated, as errors name it.
#[derive(Debug, Clone, Copy)]
enum Owner<'a> {
    /// A DeviceClass, by name.
    Class(&'a str),
    /// A claim, `namespace/name`.
    Claim(&'a str),
}

impl std::fmt::Display for Owner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::Class(name) => write!(f, "class {name}"),
            Owner::Claim(label) => write!(f, "claim {label}"),
        }
    }
}

/// Where a device is: pool, slice and index in the slice.
#[derive(Debug, Clone, Copy)]
struct DeviceRef {
    pool: usize,
    slice: usize,
    device: usize,
}

/// What [`allocate`] found on a node, short of an error.
#[derive(Debug)]
pub(crate) enum Attempt {
    /// One allocation per claim, in order.
    Allocated(Vec<Allocation>),
    /// No set of devices satisfies every claim.
    NoFit,
    /// No set fits, and a pool the node sees is invalid: upstream's
    /// `ErrFailedAllocationOnNode`, which rejects this node only.
    InvalidPools,
}

/// The text of [`Attempt::InvalidPools`].
pub(crate) const INVALID_POOLS: &str = "invalid resource pools were encountered";

/// Allocate `claims` on the node with index `node` (`Allocate`). `Err`
/// carries kube-scheduler's text when a claim or class cannot be evaluated
/// (a CEL runtime error, say): an error that fails the whole scheduling
/// attempt, not only this node.
pub(crate) fn allocate(
    dra: &Dra,
    claims: &[&PreparedClaim<'_>],
    selectors: &Selectors,
    features: DraFeatures,
    node: u32,
    node_name: &str,
    node_labels: &BTreeMap<String, String>,
) -> Result<Attempt, String> {
    let mut search = Search::new(
        dra,
        claims,
        selectors,
        features,
        node,
        node_name,
        node_labels,
    );
    // Count "all" devices first: an incomplete or invalid pool stops it.
    for (c, claim) in claims.iter().enumerate() {
        let mut total = 0usize;
        for (r, request) in claim.requests.iter().enumerate() {
            let mut least = usize::MAX;
            for (a, alternative) in request.alternatives.iter().enumerate() {
                let wanted = if alternative.all {
                    let devices = search.all_devices_for(c, r, a)?;
                    devices.len()
                } else {
                    usize::try_from(alternative.count).map_err(|_| {
                        format!(
                            "claim {}, request {}: exact count {} is too large",
                            claim.label, alternative.name, alternative.count
                        )
                    })?
                };
                least = least.min(wanted);
            }
            if least == usize::MAX {
                least = 0;
            }
            if least > MAX_RESULTS - total.min(MAX_RESULTS) {
                return Err(format!(
                    "claim {}, request {}: adding {least} devices exceeds the claim limit of {MAX_RESULTS}, with {total} already accounted for",
                    claim.label, request.name
                ));
            }
            total += least;
        }
    }
    if search.next(0, 0, None, 0)? {
        let allocations = search
            .results
            .iter()
            .map(|devices| Allocation {
                node_selector: node_selector_of(dra, devices),
                devices: devices.clone(),
            })
            .collect();
        return Ok(Attempt::Allocated(allocations));
    }
    if search.pools.iter().any(|p| p.invalid) {
        return Ok(Attempt::InvalidPools);
    }
    Ok(Attempt::NoFit)
}

/// The state of one search.
struct Search<'s, 'a> {
    dra: &'s Dra,
    claims: &'s [&'s PreparedClaim<'a>],
    selectors: &'s Selectors,
    features: DraFeatures,
    pools: &'s [Pool],
    node_name: &'s str,
    node_labels: &'s BTreeMap<String, String>,
    /// (claim, request, alternative) → the devices an `All` request takes.
    all_devices: HashMap<(usize, usize, usize), Vec<DeviceRef>>,
    /// (claim, request, alternative, slice, device) → selectable.
    matches: HashMap<(usize, usize, usize, usize, usize), bool>,
    /// Devices picked so far (by handle) → the claims picking them.
    allocating: HashMap<u32, Vec<usize>>,
    results: Vec<Vec<Picked>>,
    /// (claim, request) → the alternative in use.
    chosen: HashMap<(usize, usize), usize>,
    /// Per claim and constraint: the value every device must share, and
    /// how many devices share it.
    constraint_values: Vec<Vec<Vec<AttributeValue>>>,
    /// Per device handle: the capacity the shares picked so far consume
    /// (DR.12).
    allocating_capacity: HashMap<u32, capacity::Amounts>,
    /// Per pool and counter set and counter: the quantity the devices
    /// picked so far consume.
    consumed: HashMap<(usize, String, String), i128>,
}

/// A device attribute's value, as `matchAttribute` compares them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AttributeValue {
    Bool(bool),
    Int(i64),
    String(String),
    Version(String),
}

impl AttributeValue {
    fn of(attribute: &DeviceAttribute) -> Option<Self> {
        if let Some(s) = &attribute.string {
            Some(Self::String(s.clone()))
        } else if let Some(i) = attribute.int {
            Some(Self::Int(i))
        } else if let Some(b) = attribute.bool {
            Some(Self::Bool(b))
        } else {
            attribute.version.clone().map(Self::Version)
        }
    }
}

impl<'s, 'a> Search<'s, 'a> {
    /// A search over the pools the node with index `node` sees.
    fn new(
        dra: &'s Dra,
        claims: &'s [&'s PreparedClaim<'a>],
        selectors: &'s Selectors,
        features: DraFeatures,
        node: u32,
        node_name: &'s str,
        node_labels: &'s BTreeMap<String, String>,
    ) -> Self {
        Search {
            dra,
            claims,
            selectors,
            features,
            pools: dra.node_pools.get(node as usize).map_or(&[], Vec::as_slice),
            node_name,
            node_labels,
            all_devices: HashMap::new(),
            matches: HashMap::new(),
            allocating: HashMap::new(),
            results: vec![Vec::new(); claims.len()],
            chosen: HashMap::new(),
            constraint_values: claims
                .iter()
                .map(|c| vec![Vec::new(); c.constraints.len()])
                .collect(),
            allocating_capacity: HashMap::new(),
            consumed: HashMap::new(),
        }
    }

    fn device(&self, at: DeviceRef) -> &'s Device {
        let devices = self.dra.slices[at.slice]
            .spec
            .devices
            .as_deref()
            .unwrap_or_default();
        &devices[at.device]
    }

    fn id(&self, at: DeviceRef) -> DeviceId {
        let pool = &self.pools[at.pool];
        DeviceId {
            driver: pool.driver.clone(),
            pool: pool.name.clone(),
            device: self.device(at).name.clone(),
        }
    }

    /// Every device of the node's pools, in order.
    fn candidates(&self) -> Vec<DeviceRef> {
        let mut out = Vec::new();
        for (p, pool) in self.pools.iter().enumerate() {
            if pool.incomplete || pool.invalid {
                continue;
            }
            for slice in &pool.slices {
                let count = self.dra.slices[*slice]
                    .spec
                    .devices
                    .as_ref()
                    .map_or(0, Vec::len);
                out.extend((0..count).map(|device| DeviceRef {
                    pool: p,
                    slice: *slice,
                    device,
                }));
            }
        }
        out
    }

    fn all_devices_for(&mut self, c: usize, r: usize, a: usize) -> Result<Vec<DeviceRef>, String> {
        if let Some(found) = self.all_devices.get(&(c, r, a)) {
            return Ok(found.clone());
        }
        let claim = &self.claims[c];
        let name = claim.requests[r].alternatives[a].name;
        let mut devices = Vec::new();
        for (p, pool) in self.pools.iter().enumerate() {
            if pool.incomplete {
                return Err(format!(
                    "claim {}, request {name}: asks for all devices, but resource pool {} is currently being updated",
                    claim.label,
                    pool.id()
                ));
            }
            if pool.invalid {
                return Err(format!(
                    "claim {}, request {name}: asks for all devices, but resource pool {} is currently invalid",
                    claim.label,
                    pool.id()
                ));
            }
            for slice in &pool.slices {
                let count = self.dra.slices[*slice]
                    .spec
                    .devices
                    .as_ref()
                    .map_or(0, Vec::len);
                for device in 0..count {
                    let at = DeviceRef {
                        pool: p,
                        slice: *slice,
                        device,
                    };
                    let alternative = &self.claims[c].requests[r].alternatives[a];
                    // 1.37 checks the device's whole capacity here and its
                    // room when taking it; 1.36 left out used-up shares.
                    let room = self.capacity_room(
                        alternative,
                        at,
                        self.features.all_skips_used_up_shares,
                        false,
                    );
                    if self.selectable(c, r, a, at)? && room.is_some() {
                        devices.push(at);
                    }
                }
            }
        }
        self.all_devices.insert((c, r, a), devices.clone());
        Ok(devices)
    }

    /// The class's and the request's selectors, and per-device node
    /// selection (`isSelectable`).
    fn selectable(&mut self, c: usize, r: usize, a: usize, at: DeviceRef) -> Result<bool, String> {
        let key = (c, r, a, at.slice, at.device);
        if let Some(known) = self.matches.get(&key) {
            return Ok(*known);
        }
        let device = self.device(at);
        let alternative = &self.claims[c].requests[r].alternatives[a];
        let verdict = if !self.features.binding_conditions
            && device
                .binding_conditions
                .as_ref()
                .is_some_and(|b| !b.is_empty())
        {
            false
        } else {
            let class_selectors = alternative
                .class
                .spec
                .selectors
                .as_deref()
                .unwrap_or_default();
            let class_name = alternative
                .class
                .metadata
                .name
                .as_deref()
                .unwrap_or_default();
            self.selectors_match(at, class_selectors, Owner::Class(class_name))?
                && self.selectors_match(
                    at,
                    alternative.selectors,
                    Owner::Claim(&self.claims[c].label),
                )?
                && (self.dra.slices[at.slice].spec.per_device_node_selection != Some(true)
                    || node_matches(
                        self.node_name,
                        self.node_labels,
                        device.node_name.as_deref(),
                        device.all_nodes == Some(true),
                        device.node_selector.as_ref(),
                    ))
        };
        self.matches.insert(key, verdict);
        Ok(verdict)
    }

    /// Whether every selector accepts the device, from the state's
    /// verdicts when a pod before asked (`selectorsMatch`).
    fn selectors_match(
        &self,
        at: DeviceRef,
        selectors: &[DeviceSelector],
        owner: Owner<'_>,
    ) -> Result<bool, String> {
        let handle = self.dra.handle(at.slice, at.device);
        for (i, selector) in selectors.iter().enumerate() {
            let Some(cel) = &selector.cel else {
                continue;
            };
            let (expression, compiled) = match self.selectors.compiled.get(&cel.expression) {
                Some((expression, Ok(compiled))) => (*expression, compiled),
                Some((_, Err(error))) => {
                    return Err(format!(
                        "{owner}: selector #{i}: CEL compile error: {error}"
                    ));
                }
                None => {
                    return Err(format!(
                        "{owner}: selector #{i}: CEL compile error: expression not prepared"
                    ));
                }
            };
            let known = self
                .dra
                .verdicts
                .lock()
                .ok()
                .and_then(|v| v.get(expression, handle));
            let verdict = match known {
                Some(verdict) => verdict,
                None => {
                    let device = self.device(at);
                    let id = self.id(at);
                    let input = DeviceInput {
                        driver: &id.driver,
                        attributes: device.attributes.as_ref(),
                        capacity: device.capacity.as_ref(),
                        allow_multiple_allocations: device.allow_multiple_allocations == Some(true),
                    };
                    let verdict = compiled.matches(&input).map_err(|error| {
                        format!("{owner}: selector #{i} on device {id}: CEL runtime error: {error}")
                    })?;
                    if let Ok(mut verdicts) = self.dra.verdicts.lock() {
                        verdicts.insert(expression, handle, verdict);
                    }
                    verdict
                }
            };
            if !verdict {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `allocateOne`: pick device `d` of request `r` (alternative `a`
    /// once chosen) of claim `c`, then everything after it.
    fn next(&mut self, c: usize, r: usize, a: Option<usize>, d: usize) -> Result<bool, String> {
        let Some(claim) = self.claims.get(c) else {
            return Ok(true);
        };
        let Some(request) = claim.requests.get(r) else {
            return self.next(c + 1, 0, None, 0);
        };
        let Some(a) = a else {
            // Try the alternatives in order; the first that leads to a
            // full solution wins.
            for a in 0..request.alternatives.len() {
                if self.next(c, r, Some(a), 0)? {
                    self.chosen.insert((c, r), a);
                    return Ok(true);
                }
            }
            return Ok(false);
        };
        let alternative = &request.alternatives[a];
        let wanted = if alternative.all {
            let devices = self.all_devices_for(c, r, a)?;
            if devices.is_empty() {
                return Ok(false);
            }
            devices.len()
        } else {
            usize::try_from(alternative.count).unwrap_or(usize::MAX)
        };
        if d >= wanted {
            return self.next(c, r + 1, None, 0);
        }
        if wanted - d > MAX_RESULTS.saturating_sub(self.results[c].len()) {
            return Ok(false);
        }
        if alternative.all {
            let at = self.all_devices_for(c, r, a)?[d];
            let Some(undo) = self.take(c, r, a, at, true)? else {
                return Ok(false);
            };
            if self.next(c, r, Some(a), d + 1)? {
                return Ok(true);
            }
            self.give_back(c, at, undo);
            return Ok(false);
        }
        for at in self.candidates() {
            if !self.available(c, alternative.admin_access, at) {
                continue;
            }
            if !self.selectable(c, r, a, at)? {
                continue;
            }
            let Some(undo) = self.take(c, r, a, at, false)? else {
                continue;
            };
            if self.next(c, r, Some(a), d + 1)? {
                return Ok(true);
            }
            self.give_back(c, at, undo);
        }
        Ok(false)
    }

    /// Whether a device is free for claim `c`: with admin access only the
    /// claim itself must not hold it yet.
    fn available(&self, c: usize, admin_access: bool, at: DeviceRef) -> bool {
        let handle = self.dra.handle(at.slice, at.device);
        let picking = self.allocating.get(&handle);
        if admin_access {
            return !picking.is_some_and(|claims| claims.contains(&c));
        }
        // Without consumable capacity a share holds its device whole.
        let shared = !self.features.consumable_capacity
            && !self.dra.shares.is_empty()
            && self.dra.shares.contains_key(&self.id(at));
        !self.dra.busy[handle as usize] && picking.is_none_or(Vec::is_empty) && !shared
    }

    /// `CmpRequestOverCapacity` (DR.12): what taking `at` for `alternative`
    /// consumes of its capacities, when it has room beside the shares of
    /// allocated claims (`in_use`) and those picked so far (`allocating`);
    /// `None` when it has not. Without the feature, or for a device that
    /// allows one allocation when nothing asks for capacity, every device
    /// has room and consumes nothing.
    fn capacity_room(
        &self,
        alternative: &Alternative<'_>,
        at: DeviceRef,
        in_use: bool,
        allocating: bool,
    ) -> Option<capacity::Amounts> {
        let device = self.device(at);
        if !self.features.consumable_capacity
            || (alternative.capacity.is_none() && device.allow_multiple_allocations != Some(true))
        {
            return Some(capacity::Amounts::new());
        }
        let held = if in_use && !self.dra.shares.is_empty() {
            self.dra.shares.get(&self.id(at))
        } else {
            None
        };
        let picked = if allocating {
            self.allocating_capacity
                .get(&self.dra.handle(at.slice, at.device))
        } else {
            None
        };
        capacity::fits(alternative.capacity, device.capacity.as_ref(), held, picked)
    }

    /// `allocateDevice`: take a selectable device if it is free, its
    /// counters suffice, no taint forbids it and every constraint still
    /// holds. `Ok(None)` when it cannot be taken.
    fn take(
        &mut self,
        c: usize,
        r: usize,
        a: usize,
        at: DeviceRef,
        must: bool,
    ) -> Result<Option<Undo>, String> {
        let claim = self.claims[c];
        let request = &claim.requests[r];
        let alternative = &request.alternatives[a];
        if !self.available(c, alternative.admin_access, at) {
            return Ok(None);
        }
        let device = self.device(at);
        let handle = self.dra.handle(at.slice, at.device);
        let (base, sub) = if request.prioritized {
            (request.name, Some(alternative.name))
        } else {
            (request.name, None)
        };
        let name = match sub {
            Some(sub) => format!("{base}/{sub}"),
            None => base.to_owned(),
        };
        let multiple =
            self.features.consumable_capacity && device.allow_multiple_allocations == Some(true);
        // A request never takes the same device twice.
        if multiple
            && self.results[c]
                .iter()
                .any(|p| p.slice == at.slice && p.device == at.device && p.request == name)
        {
            return Ok(None);
        }
        let Some(consumed) = self.capacity_room(alternative, at, true, true) else {
            return Ok(None);
        };
        // A shared device's counters are charged by its first share only.
        let already_shared = multiple
            && (self.allocating_capacity.contains_key(&handle)
                || (!self.dra.shares.is_empty() && self.dra.shares.contains_key(&self.id(at))));
        let consumes = device.consumes_counters.as_deref().unwrap_or_default();
        if !already_shared
            && !consumes.is_empty()
            && (!self.features.partitionable_devices || !self.counters_suffice(at, consumes))
        {
            return Ok(None);
        }
        if self.features.device_taints
            && device.taints.iter().flatten().any(|taint| {
                blocks(taint) && !alternative.tolerations.iter().any(|t| tolerates(t, taint))
            })
        {
            return Ok(None);
        }
        let id = self.id(at);
        let mut added = Vec::new();
        for (k, constraint) in claim.constraints.iter().enumerate() {
            let applies = constraint.requests.is_empty()
                || constraint.requests.contains(base)
                || sub.is_some_and(|s| constraint.requests.contains(&format!("{base}/{s}")));
            if !applies {
                continue;
            }
            let value = lookup_attribute(device, &id.driver, &constraint.attribute)
                .and_then(AttributeValue::of);
            let held = &mut self.constraint_values[c][k];
            let fits = match &value {
                None => false,
                Some(v) if constraint.distinct => !held.contains(v),
                Some(v) => held.first().is_none_or(|first| first == v),
            };
            if !fits {
                for k in added {
                    self.release_constraint(c, k);
                }
                if must {
                    return Err(format!(
                        "claim {}, request {}: cannot add device {id} because a claim constraint would not be satisfied",
                        claim.label, alternative.name
                    ));
                }
                return Ok(None);
            }
            if let Some(v) = value {
                held.push(v);
            }
            added.push(k);
        }
        if !already_shared {
            for consumption in consumes {
                for (counter, amount) in &consumption.counters {
                    let nanos = capacity::nanos(&amount.value);
                    *self
                        .consumed
                        .entry((at.pool, consumption.counter_set.clone(), counter.clone()))
                        .or_default() += nanos;
                }
            }
        }
        let share = if multiple {
            let had_entry = self.allocating_capacity.contains_key(&handle);
            capacity::add(
                self.allocating_capacity.entry(handle).or_default(),
                &consumed,
                1,
            );
            let share_id = share_id(&claim.label, &name, &id);
            Some((had_entry, (share_id, consumed)))
        } else {
            self.allocating.entry(handle).or_default().push(c);
            None
        };
        let (had_entry, share) = match share {
            Some((had, share)) => (had, Some(share)),
            None => (false, None),
        };
        self.results[c].push(Picked {
            request: name,
            id,
            admin_access: alternative.admin_access,
            slice: at.slice,
            device: at.device,
            share,
        });
        Ok(Some(Undo {
            constraints: added,
            charged_counters: !already_shared,
            had_capacity_entry: had_entry,
        }))
    }

    fn release_constraint(&mut self, c: usize, k: usize) {
        self.constraint_values[c][k].pop();
    }

    /// Undo a [`Search::take`].
    fn give_back(&mut self, c: usize, at: DeviceRef, undo: Undo) {
        let picked = self.results[c].pop();
        let handle = self.dra.handle(at.slice, at.device);
        match picked.and_then(|p| p.share) {
            Some((_, consumed)) => {
                if let Some(entry) = self.allocating_capacity.get_mut(&handle) {
                    capacity::add(entry, &consumed, -1);
                }
                if !undo.had_capacity_entry {
                    self.allocating_capacity.remove(&handle);
                }
            }
            None => {
                if let Some(claims) = self.allocating.get_mut(&handle)
                    && let Some(i) = claims.iter().rposition(|x| *x == c)
                {
                    claims.remove(i);
                }
            }
        }
        for k in undo.constraints.into_iter().rev() {
            self.release_constraint(c, k);
        }
        if !undo.charged_counters {
            return;
        }
        let device = self.device(at);
        for consumption in device.consumes_counters.iter().flatten() {
            for (counter, amount) in &consumption.counters {
                let nanos = capacity::nanos(&amount.value);
                if let Some(used) = self.consumed.get_mut(&(
                    at.pool,
                    consumption.counter_set.clone(),
                    counter.clone(),
                )) {
                    *used -= nanos;
                }
            }
        }
    }

    /// Whether the pool's counter sets still hold what the device consumes,
    /// after the devices allocated before and those picked so far
    /// (`checkAvailableCounters`).
    fn counters_suffice(
        &self,
        at: DeviceRef,
        consumes: &[k8s_openapi::api::resource::v1::DeviceCounterConsumption],
    ) -> bool {
        let pool = &self.pools[at.pool];
        for consumption in consumes {
            for (counter, amount) in &consumption.counters {
                let Some(available) =
                    self.counter_capacity(pool, &consumption.counter_set, counter)
                else {
                    continue;
                };
                let allocated = self.allocated_consumption(pool, &consumption.counter_set, counter);
                let picked = self
                    .consumed
                    .get(&(at.pool, consumption.counter_set.clone(), counter.clone()))
                    .copied()
                    .unwrap_or(0);
                let wanted = capacity::nanos(&amount.value);
                if available - allocated < picked + wanted {
                    return false;
                }
            }
        }
        true
    }

    fn counter_capacity(&self, pool: &Pool, set: &str, counter: &str) -> Option<i128> {
        pool.counter_slices
            .iter()
            .flat_map(|s| self.dra.slices[*s].spec.shared_counters.iter().flatten())
            .find(|c| c.name == set)
            .and_then(|c| c.counters.get(counter))
            .map(|c| capacity::nanos(&c.value))
    }

    /// What devices of the pool already allocated consume of a counter.
    fn allocated_consumption(&self, pool: &Pool, set: &str, counter: &str) -> i128 {
        let mut total = 0;
        for slice in self
            .dra
            .slices
            .iter()
            .filter(|s| s.spec.driver == pool.driver && s.spec.pool.name == pool.name)
        {
            for device in slice.spec.devices.iter().flatten() {
                let id = DeviceId {
                    driver: pool.driver.clone(),
                    pool: pool.name.clone(),
                    device: device.name.clone(),
                };
                if !self.dra.in_use.contains_key(&id) {
                    continue;
                }
                for consumption in device.consumes_counters.iter().flatten() {
                    if consumption.counter_set == set
                        && let Some(c) = consumption.counters.get(counter)
                    {
                        total += capacity::nanos(&c.value);
                    }
                }
            }
        }
        total
    }
}

/// What a [`Search::take`] did, to undo it.
struct Undo {
    /// The constraints it added a value to.
    constraints: Vec<usize>,
    /// Whether it charged the device's counters.
    charged_counters: bool,
    /// For a share: whether the device had shares picked before it.
    had_capacity_entry: bool,
}

/// A `shareID` for a share: a UUID made from the claim, the request and
/// the device, so that the same allocation gets the same one (upstream's
/// is random; only its uniqueness matters).
fn share_id(claim: &str, request: &str, device: &DeviceId) -> String {
    let mut hash: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for byte in [claim, request, &device.driver, &device.pool, &device.device]
        .join("/")
        .bytes()
    {
        hash ^= u128::from(byte);
        hash = hash.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    let hex = format!("{hash:032x}");
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// A device attribute by fully qualified name, or by the driver's domain
/// plus the short name (`lookupAttribute`).
fn lookup_attribute<'d>(
    device: &'d Device,
    driver: &str,
    name: &str,
) -> Option<&'d DeviceAttribute> {
    let attributes = device.attributes.as_ref()?;
    if let Some(found) = attributes.get(name) {
        return Some(found);
    }
    let (domain, short) = name.split_once('/')?;
    (domain == driver).then(|| attributes.get(short)).flatten()
}

/// Taints with these effects keep untolerating requests off a device.
fn blocks(taint: &DeviceTaint) -> bool {
    matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
}

/// `ToleratesTaint` for device taints.
fn tolerates(toleration: &DeviceToleration, taint: &DeviceTaint) -> bool {
    if toleration
        .effect
        .as_deref()
        .is_some_and(|e| !e.is_empty() && e != taint.effect)
    {
        return false;
    }
    if toleration
        .key
        .as_deref()
        .is_some_and(|k| !k.is_empty() && k != taint.key)
    {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("Equal") {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        "Exists" => true,
        _ => false,
    }
}

/// The nodes an allocation ties its claim to (`createNodeSelector`): a
/// node-local device pins that node; slice node selectors are combined.
fn node_selector_of(dra: &Dra, devices: &[Picked]) -> Option<NodeSelector> {
    let mut fields: Vec<NodeSelectorRequirement> = Vec::new();
    let mut expressions: Vec<NodeSelectorRequirement> = Vec::new();
    for picked in devices {
        let slice = &dra.slices[picked.slice].spec;
        let (name, selector) = if slice.per_device_node_selection == Some(true) {
            let device = slice.devices.as_ref().and_then(|d| d.get(picked.device));
            (
                device.and_then(|d| d.node_name.clone()),
                device.and_then(|d| d.node_selector.clone()),
            )
        } else {
            (slice.node_name.clone(), slice.node_selector.clone())
        };
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            return Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_fields: Some(vec![NodeSelectorRequirement {
                        key: "metadata.name".to_owned(),
                        operator: "In".to_owned(),
                        values: Some(vec![name]),
                    }]),
                    ..Default::default()
                }],
            });
        }
        if let Some(term) = selector.and_then(|s| s.node_selector_terms.into_iter().next()) {
            for r in term.match_fields.into_iter().flatten() {
                if !fields.contains(&r) {
                    fields.push(r);
                }
            }
            for r in term.match_expressions.into_iter().flatten() {
                if !expressions.contains(&r) {
                    expressions.push(r);
                }
            }
        }
    }
    (!fields.is_empty() || !expressions.is_empty()).then(|| NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: (!fields.is_empty()).then_some(fields),
            match_expressions: (!expressions.is_empty()).then_some(expressions),
        }],
    })
}

/// What one request finds on a node, for a diagnosis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestSupply {
    /// `request` or `request/subrequest`.
    pub(crate) request: String,
    /// The device class asked for.
    pub(crate) class: String,
    /// The number of devices asked for; `None` for `allocationMode: All`.
    pub(crate) wanted: Option<i64>,
    /// Devices on the node that the class's and the request's selectors
    /// accept.
    pub(crate) matching: usize,
    /// Of those, the devices no other claim holds.
    pub(crate) free: usize,
}

/// Per request of `claim` (one claim, alone), the devices of the node that
/// match and are free: what a diagnosis names when allocation fails.
pub(crate) fn supply(
    dra: &Dra,
    claim: &PreparedClaim<'_>,
    selectors: &Selectors,
    features: DraFeatures,
    node: u32,
    node_name: &str,
    node_labels: &BTreeMap<String, String>,
) -> Result<Vec<RequestSupply>, String> {
    let claims = [claim];
    let mut search = Search::new(
        dra,
        &claims,
        selectors,
        features,
        node,
        node_name,
        node_labels,
    );
    let mut out = Vec::new();
    for (r, request) in claim.requests.iter().enumerate() {
        for (a, alternative) in request.alternatives.iter().enumerate() {
            let (mut matching, mut free) = (0, 0);
            for at in search.candidates() {
                if search.selectable(0, r, a, at)? {
                    matching += 1;
                    if search.available(0, alternative.admin_access, at) {
                        free += 1;
                    }
                }
            }
            out.push(RequestSupply {
                request: if request.prioritized {
                    format!("{}/{}", request.name, alternative.name)
                } else {
                    request.name.to_owned()
                },
                class: alternative.class.metadata.name.clone().unwrap_or_default(),
                wanted: (!alternative.all).then_some(alternative.count),
                matching,
                free,
            });
        }
    }
    Ok(out)
}
