//! [`CheckedInventory`]: a validated, indexed inventory. Constructing one is
//! the only way to get at placement, rebalance and scale-down, so those never
//! see a dangling reference, a duplicate name or a negative amount.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use super::error::{InvalidInventory, InventoryError};
use super::inventory::{API_VERSION, Amount, HostInventory, KIND, Policy};
use super::quantity::amount_value;

/// How many VMs of one anti-affinity unit a host may hold before each further
/// VM counts as a violation (and, for hard units, before the host is refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Soft anti-affinity: one per host is ideal, more are allowed (A.10).
    Soft,
    /// Hard anti-affinity: at most this many per host (A.12), at least 1.
    Hard(u32),
}

impl Limit {
    /// VMs per host beyond which each VM is a violation.
    pub fn threshold(self) -> u32 {
        match self {
            Limit::Soft => 1,
            Limit::Hard(k) => k,
        }
    }

    /// Largest count a host may have before it stops accepting VMs.
    pub(crate) fn accepts_below(self) -> u32 {
        match self {
            Limit::Soft => u32::MAX,
            Limit::Hard(k) => k,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct HostEntry {
    pub(crate) name: String,
    pub(crate) capacity: Vec<u64>,
    pub(crate) maintenance: bool,
}

/// The anti-affinity unit: a group on its own, or an anti-affinity set.
#[derive(Debug, Clone)]
pub(crate) struct UnitEntry {
    pub(crate) name: String,
    pub(crate) limit: Limit,
}

#[derive(Debug, Clone)]
pub(crate) struct GroupEntry {
    pub(crate) name: String,
    pub(crate) unit: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct VmEntry {
    pub(crate) name: String,
    pub(crate) group: usize,
    pub(crate) unit: usize,
    pub(crate) requests: Vec<u64>,
    pub(crate) host: Option<usize>,
}

/// A validated inventory: names unique, references resolved, amounts
/// non-negative integers, sets consistent. Hosts are kept sorted by name
/// (the last tie-break everywhere); groups and VMs keep document order.
#[derive(Debug, Clone)]
pub struct CheckedInventory {
    pub(crate) resources: Vec<String>,
    pub(crate) hosts: Vec<HostEntry>,
    pub(crate) units: Vec<UnitEntry>,
    pub(crate) groups: Vec<GroupEntry>,
    pub(crate) vms: Vec<VmEntry>,
}

fn policy_label(policy: Policy, max_per_host: Option<u32>) -> String {
    match policy {
        Policy::SoftAntiAffinity => "soft-anti-affinity".to_owned(),
        Policy::AntiAffinity => format!("anti-affinity (maxPerHost {})", max_per_host.unwrap_or(1)),
    }
}

fn check_names<'a>(
    errors: &mut Vec<InventoryError>,
    list: &str,
    names: impl Iterator<Item = &'a str>,
) -> BTreeMap<&'a str, usize> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, name) in names.enumerate() {
        let field = || format!("{list}[{index}].name");
        if name.is_empty() {
            errors.push(InventoryError::EmptyName { field: field() });
            continue;
        }
        match seen.entry(name) {
            Entry::Occupied(first) => errors.push(InventoryError::Duplicate {
                field: field(),
                value: name.to_owned(),
                first: format!("{list}[{}].name", first.get()),
            }),
            Entry::Vacant(slot) => {
                slot.insert(index);
            }
        }
    }
    seen
}

fn dense(
    errors: &mut Vec<InventoryError>,
    field: impl Fn() -> String,
    resources: &[String],
    amounts: &BTreeMap<String, Amount>,
) -> Vec<u64> {
    let mut out = vec![0; resources.len()];
    for (name, amount) in amounts {
        match amount_value(amount) {
            Ok(value) => {
                if let Ok(i) = resources.binary_search(name) {
                    out[i] = value;
                }
            }
            Err(problem) => errors.push(InventoryError::Amount {
                field: format!("{}.{name}", field()),
                value: amount.to_string(),
                reason: problem.explain(),
            }),
        }
    }
    out
}

impl CheckedInventory {
    /// Validate an inventory, reporting every problem with its field path
    /// and offending value.
    pub fn new(inventory: &HostInventory) -> Result<Self, InvalidInventory> {
        let mut errors = Vec::new();
        if inventory.api_version != API_VERSION {
            errors.push(InventoryError::ApiVersion {
                value: inventory.api_version.clone(),
            });
        }
        if inventory.kind != KIND {
            errors.push(InventoryError::Kind {
                value: inventory.kind.clone(),
            });
        }

        let mut resources: Vec<String> = inventory
            .hosts
            .iter()
            .flat_map(|h| h.capacity.keys())
            .chain(inventory.vms.iter().flat_map(|v| v.requests.keys()))
            .cloned()
            .collect();
        resources.sort();
        resources.dedup();

        // Hosts, sorted by name.
        let host_names = check_names(
            &mut errors,
            "hosts",
            inventory.hosts.iter().map(|h| h.name.as_str()),
        );
        let mut hosts: Vec<HostEntry> = Vec::with_capacity(inventory.hosts.len());
        for (index, host) in inventory.hosts.iter().enumerate() {
            let capacity = dense(
                &mut errors,
                || format!("hosts[{index}].capacity"),
                &resources,
                &host.capacity,
            );
            if host_names.get(host.name.as_str()) == Some(&index) {
                hosts.push(HostEntry {
                    name: host.name.clone(),
                    capacity,
                    maintenance: host.maintenance,
                });
            }
        }
        hosts.sort_by(|a, b| a.name.cmp(&b.name));
        let host_index: BTreeMap<&str, usize> = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| (h.name.as_str(), i))
            .collect();

        // Groups and their units.
        let group_names = check_names(
            &mut errors,
            "groups",
            inventory.groups.iter().map(|g| g.name.as_str()),
        );
        let mut units: Vec<UnitEntry> = Vec::new();
        let mut set_units: BTreeMap<&str, (usize, usize)> = BTreeMap::new(); // set -> (unit, first group index)
        let mut groups: Vec<GroupEntry> = Vec::with_capacity(inventory.groups.len());
        let mut group_index: BTreeMap<&str, usize> = BTreeMap::new();
        for (index, group) in inventory.groups.iter().enumerate() {
            let limit = match (group.policy, group.max_per_host) {
                (Policy::SoftAntiAffinity, None) => Limit::Soft,
                (Policy::SoftAntiAffinity, Some(k)) => {
                    errors.push(InventoryError::MaxPerHost {
                        field: format!("groups[{index}].maxPerHost"),
                        value: k,
                        reason: "applies only to policy anti-affinity (hard); remove it or change the policy",
                    });
                    Limit::Soft
                }
                (Policy::AntiAffinity, Some(0)) => {
                    errors.push(InventoryError::MaxPerHost {
                        field: format!("groups[{index}].maxPerHost"),
                        value: 0,
                        reason: "must be at least 1",
                    });
                    Limit::Hard(1)
                }
                (Policy::AntiAffinity, k) => Limit::Hard(k.unwrap_or(1)),
            };
            let unit = match group.anti_affinity_set.as_deref() {
                None => {
                    units.push(UnitEntry {
                        name: group.name.clone(),
                        limit,
                    });
                    units.len() - 1
                }
                Some(set) => {
                    let field = format!("groups[{index}].antiAffinitySet");
                    if set.is_empty() {
                        errors.push(InventoryError::EmptyName {
                            field: field.clone(),
                        });
                    }
                    match set_units.get(set) {
                        Some(&(unit, first)) => {
                            if units[unit].limit != limit {
                                let other = &inventory.groups[first];
                                errors.push(InventoryError::SetPolicyMismatch {
                                    field,
                                    group: group.name.clone(),
                                    set: set.to_owned(),
                                    other: other.name.clone(),
                                    found: policy_label(group.policy, group.max_per_host),
                                    expected: policy_label(other.policy, other.max_per_host),
                                });
                            }
                            unit
                        }
                        None => {
                            if group_names.contains_key(set) {
                                errors.push(InventoryError::SetNameIsGroupName {
                                    field,
                                    value: set.to_owned(),
                                });
                            }
                            units.push(UnitEntry {
                                name: set.to_owned(),
                                limit,
                            });
                            set_units.insert(set, (units.len() - 1, index));
                            units.len() - 1
                        }
                    }
                }
            };
            if group_names.get(group.name.as_str()) == Some(&index) {
                group_index.insert(group.name.as_str(), groups.len());
                groups.push(GroupEntry {
                    name: group.name.clone(),
                    unit,
                });
            }
        }

        // VMs.
        check_names(
            &mut errors,
            "vms",
            inventory.vms.iter().map(|v| v.name.as_str()),
        );
        let mut vms = Vec::with_capacity(inventory.vms.len());
        for (index, vm) in inventory.vms.iter().enumerate() {
            let requests = dense(
                &mut errors,
                || format!("vms[{index}].requests"),
                &resources,
                &vm.requests,
            );
            let group = group_index.get(vm.group.as_str()).copied();
            if group.is_none() {
                errors.push(InventoryError::UnknownGroup {
                    field: format!("vms[{index}].group"),
                    value: vm.group.clone(),
                });
            }
            let host = match vm.host.as_deref() {
                None => None,
                Some(name) => {
                    let found = host_index.get(name).copied();
                    if found.is_none() {
                        errors.push(InventoryError::UnknownHost {
                            field: format!("vms[{index}].host"),
                            value: name.to_owned(),
                        });
                    }
                    found
                }
            };
            if let Some(group) = group {
                vms.push(VmEntry {
                    name: vm.name.clone(),
                    group,
                    unit: groups[group].unit,
                    requests,
                    host,
                });
            }
        }

        if errors.is_empty() {
            Ok(Self {
                resources,
                hosts,
                units,
                groups,
                vms,
            })
        } else {
            Err(InvalidInventory { errors })
        }
    }

    /// Index of the unit named `name` (a set, or a group not in a set).
    pub(crate) fn unit_named(&self, name: &str) -> Option<usize> {
        self.units.iter().position(|u| u.name == name)
    }

    /// Names of the anti-affinity units (sets, and groups outside sets).
    pub fn unit_names(&self) -> impl Iterator<Item = &str> {
        self.units.iter().map(|u| u.name.as_str())
    }

    /// Per-host count of `unit`'s VMs given each VM's host.
    pub(crate) fn unit_counts(&self, unit: usize, host_of: &[Option<usize>]) -> Vec<u32> {
        let mut counts = vec![0; self.hosts.len()];
        for (vm, host) in self.vms.iter().zip(host_of) {
            if let (true, Some(h)) = (vm.unit == unit, host) {
                counts[*h] += 1;
            }
        }
        counts
    }

    /// Current hosts of the VMs (index-aligned with `self.vms`).
    pub(crate) fn current_hosts(&self) -> Vec<Option<usize>> {
        self.vms.iter().map(|v| v.host).collect()
    }

    /// Host name → count, for every host.
    pub(crate) fn named_counts(&self, counts: &[u32]) -> BTreeMap<String, u32> {
        self.hosts
            .iter()
            .zip(counts)
            .map(|(h, c)| (h.name.clone(), *c))
            .collect()
    }
}
