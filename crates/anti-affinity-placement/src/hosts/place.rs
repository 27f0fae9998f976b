//! Placement of the VMs that have no host yet (A.10 soft, A.12 hard, A.11
//! sets), in document order, each VM greedily (SA2):
//!
//! 1. only hosts not in maintenance (SA7) whose free capacity fits every
//!    requested resource (SA7), and for hard units with `c_U(h) < k`;
//! 2. the lowest count `c_U(h)` of the VM's unit (group, or its set);
//! 3. tie → the most free capacity ([`FreeShare`]: the largest remaining share
//!    of the host's scarcest resource, compared exactly);
//! 4. tie → host name, ascending.
//!
//! Existing VMs are never moved (SA6); a VM is left unplaced only when no
//! eligible host fits it, or (hard) every eligible host that fits it is at `k`.
//!
//! The index keeps all eligible hosts ordered by (share desc, name) and, per
//! unit, the hosts it already occupies bucketed by count. Placing a VM costs
//! O(log H) per unit present on the chosen host, plus the scan for a fitting
//! host (usually the first candidate).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use serde::{Serialize, Serializer};

use super::inventory::HostInventory;
use super::model::{CheckedInventory, Limit};
use super::resources::{FreeCapacity, FreeShare};
use super::violations::violations;

/// Why a VM was left unplaced.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnplacedReason {
    /// Every host is in maintenance (or there are no hosts).
    NoEligibleHost {
        /// Hosts in maintenance.
        in_maintenance: usize,
    },
    /// No eligible host has room for the VM's requests (SA1).
    NoRoom {
        /// Hosts not in maintenance.
        eligible: usize,
    },
    /// Hard anti-affinity: every eligible host with room already holds
    /// `max_per_host` VMs of the unit (A.12).
    AtMaxPerHost {
        /// Group or set.
        unit: String,
        /// k.
        max_per_host: u32,
        /// Eligible hosts with room for the VM (all at k).
        hosts_with_room: usize,
    },
}

impl fmt::Display for UnplacedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnplacedReason::NoEligibleHost { in_maintenance } => {
                write!(
                    f,
                    "no eligible host: all {in_maintenance} hosts are in maintenance"
                )
            }
            UnplacedReason::NoRoom { eligible } => {
                write!(
                    f,
                    "no room: none of the {eligible} hosts not in maintenance has enough free capacity for the requests"
                )
            }
            UnplacedReason::AtMaxPerHost {
                unit,
                max_per_host,
                hosts_with_room,
            } => write!(
                f,
                "hard anti-affinity: all {hosts_with_room} eligible hosts with room already run {max_per_host} VM(s) of {unit:?} (maxPerHost {max_per_host})"
            ),
        }
    }
}

impl Serialize for UnplacedReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Result of [`CheckedInventory::plan`]; serialises as
/// `{assignments: {vm: host|null}, unplaced: {vm: reason}, violations: {group-or-set: N}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlacementPlan {
    /// Every VM the plan had to place (those without a host), with its new
    /// host or `null` when unplaced. VMs that already had a host are absent.
    pub assignments: BTreeMap<String, Option<String>>,
    /// Why each unplaced VM could not be placed.
    pub unplaced: BTreeMap<String, UnplacedReason>,
    /// Violations per anti-affinity unit after the plan (every unit listed).
    pub violations: BTreeMap<String, u64>,
}

impl PlacementPlan {
    /// The inventory with the plan's assignments written into `vms[].host`.
    pub fn apply(&self, inventory: &HostInventory) -> HostInventory {
        let mut out = inventory.clone();
        for vm in &mut out.vms {
            if vm.host.is_none()
                && let Some(Some(host)) = self.assignments.get(&vm.name)
            {
                vm.host = Some(host.clone());
            }
        }
        out
    }
}

type Key = (Reverse<FreeShare>, usize);

struct Index<'a> {
    inventory: &'a CheckedInventory,
    free: FreeCapacity,
    share: Vec<FreeShare>,
    /// Eligible hosts by (share desc, name).
    all: BTreeSet<Key>,
    /// Per unit: host → count (every host, maintenance included).
    counts: Vec<HashMap<usize, u32>>,
    /// Per unit: count ≥ 1 → eligible hosts with that count.
    levels: Vec<BTreeMap<u32, BTreeSet<Key>>>,
    /// Per unit: eligible hosts with count ≥ 1.
    occupied: Vec<usize>,
    /// Per host: units with count ≥ 1 there (eligible hosts only).
    units_on: Vec<Vec<usize>>,
    eligible: usize,
}

impl<'a> Index<'a> {
    fn new(inventory: &'a CheckedInventory, host_of: &[Option<usize>]) -> Self {
        let free = FreeCapacity::new(inventory, host_of);
        let share: Vec<FreeShare> = inventory
            .hosts
            .iter()
            .enumerate()
            .map(|(h, host)| free.share(h, &host.capacity))
            .collect();
        let mut index = Self {
            inventory,
            all: BTreeSet::new(),
            counts: vec![HashMap::new(); inventory.units.len()],
            levels: vec![BTreeMap::new(); inventory.units.len()],
            occupied: vec![0; inventory.units.len()],
            units_on: vec![Vec::new(); inventory.hosts.len()],
            eligible: 0,
            free,
            share,
        };
        for (h, host) in inventory.hosts.iter().enumerate() {
            if !host.maintenance {
                index.all.insert((Reverse(index.share[h]), h));
                index.eligible += 1;
            }
        }
        for (vm, host) in inventory.vms.iter().zip(host_of) {
            if let Some(h) = host {
                *index.counts[vm.unit].entry(*h).or_default() += 1;
            }
        }
        for (unit, counts) in index.counts.iter().enumerate() {
            for (&h, &c) in counts {
                if !inventory.hosts[h].maintenance {
                    index.levels[unit]
                        .entry(c)
                        .or_default()
                        .insert((Reverse(index.share[h]), h));
                    index.units_on[h].push(unit);
                    index.occupied[unit] += 1;
                }
            }
        }
        for units in &mut index.units_on {
            units.sort_unstable();
        }
        index
    }

    fn count(&self, unit: usize, host: usize) -> u32 {
        self.counts[unit].get(&host).copied().unwrap_or(0)
    }

    fn choose(&self, unit: usize, requests: &[u64]) -> Option<usize> {
        let below = self.inventory.units[unit].limit.accepts_below();
        if self.occupied[unit] < self.eligible {
            let empty = self
                .all
                .iter()
                .map(|&(_, h)| h)
                .find(|&h| !self.counts[unit].contains_key(&h) && self.free.fits(h, requests));
            if empty.is_some() {
                return empty;
            }
        }
        self.levels[unit]
            .range(1..below)
            .flat_map(|(_, hosts)| hosts.iter().map(|&(_, h)| h))
            .find(|&h| self.free.fits(h, requests))
    }

    fn place(&mut self, unit: usize, host: usize, requests: &[u64]) {
        let old = (Reverse(self.share[host]), host);
        self.all.remove(&old);
        for &u in &self.units_on[host] {
            let c = self.count(u, host);
            remove_from_level(&mut self.levels[u], c, &old);
        }
        self.free.take(host, requests);
        self.share[host] = self.free.share(host, &self.inventory.hosts[host].capacity);
        let count = self.counts[unit].entry(host).or_default();
        *count += 1;
        if *count == 1 {
            self.units_on[host].push(unit);
            self.occupied[unit] += 1;
        }
        let new = (Reverse(self.share[host]), host);
        self.all.insert(new);
        for &u in &self.units_on[host] {
            let c = self.count(u, host);
            self.levels[u].entry(c).or_default().insert(new);
        }
    }

    fn reason(&self, unit: usize, requests: &[u64]) -> UnplacedReason {
        if self.eligible == 0 {
            return UnplacedReason::NoEligibleHost {
                in_maintenance: self.inventory.hosts.len(),
            };
        }
        let with_room = self
            .all
            .iter()
            .filter(|&&(_, h)| self.free.fits(h, requests))
            .count();
        match self.inventory.units[unit].limit {
            Limit::Hard(k) if with_room > 0 => UnplacedReason::AtMaxPerHost {
                unit: self.inventory.units[unit].name.clone(),
                max_per_host: k,
                hosts_with_room: with_room,
            },
            _ => UnplacedReason::NoRoom {
                eligible: self.eligible,
            },
        }
    }
}

fn remove_from_level(levels: &mut BTreeMap<u32, BTreeSet<Key>>, level: u32, key: &Key) {
    if let Some(set) = levels.get_mut(&level) {
        set.remove(key);
        if set.is_empty() {
            levels.remove(&level);
        }
    }
}

impl CheckedInventory {
    /// Place every VM without a host, in document order (A.10–A.12).
    /// Existing VMs stay where they are; see the module docs for the order.
    pub fn plan(&self) -> PlacementPlan {
        let mut host_of = self.current_hosts();
        let mut index = Index::new(self, &host_of);
        let mut assignments = BTreeMap::new();
        let mut unplaced = BTreeMap::new();
        for (i, vm) in self.vms.iter().enumerate() {
            if vm.host.is_some() {
                continue;
            }
            match index.choose(vm.unit, &vm.requests) {
                Some(h) => {
                    index.place(vm.unit, h, &vm.requests);
                    host_of[i] = Some(h);
                    assignments.insert(vm.name.clone(), Some(self.hosts[h].name.clone()));
                }
                None => {
                    unplaced.insert(vm.name.clone(), index.reason(vm.unit, &vm.requests));
                    assignments.insert(vm.name.clone(), None);
                }
            }
        }
        PlacementPlan {
            assignments,
            unplaced,
            violations: violations(self, &host_of),
        }
    }
}
