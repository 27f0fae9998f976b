//! The audit of each module (A.7): which host each member VM runs on, how
//! many members are beyond one per host, and whether that is forced (more
//! members than eligible hosts) or fixable (a spread exists); fixable
//! groups go to the rebalance planner (A.13) for the fewest vMotions.
//!
//! Definitions, for a group `G` with `n` members on a known host and the
//! eligible hosts `E` (hosts not in maintenance):
//!
//! - `violations(G) = Σ_h max(0, c_G(h) − 1)`, over every host (members on
//!   a host in maintenance included).
//! - The best spread over the eligible hosts has `max(0, n − |E|)`
//!   violations (when `E` is empty nothing can move, so the current count
//!   is the best); [`GroupAudit::minimum`].
//! - The *fixable* violations are those above that:
//!   `max(0, violations(G) − minimum)`; [`plan_moves`] proposes the
//!   migrations that remove them.
//! - `forced(G)` ⇔ `violations(G) > 0` and none is fixable: no vMotion to
//!   an eligible host removes one (members waiting on a host in
//!   maintenance can even leave `G` with fewer violations than its best
//!   spread over the eligible hosts).
//!
//! `forced` is decided by counts alone; when host capacities are known the
//! planner may still be unable to reach the spread (its moves then stop
//! early and [`MovePlan::incomplete`] says by how much).
//!
//! Members being deleted and members whose host is unknown are not counted.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::reconcile::GroupKind;
use crate::hosts::{Amount, CheckedInventory, Group, Host, HostInventory, Move, Policy, Vm};

/// A group: kind and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupId {
    /// The group's kind.
    pub kind: GroupKind,
    /// The group's name.
    pub name: String,
}

impl std::fmt::Display for GroupId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.name)
    }
}

/// One member VM of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditMember {
    /// The group.
    pub group: GroupId,
    /// The Machine's name (what the audit lists).
    pub machine: String,
    /// The VM's name in vCenter (what a move names).
    pub vm: String,
    /// The host it runs on, when known.
    pub host: Option<String>,
}

/// The hosts VMs may run on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostPool {
    /// Hosts with capacity and maintenance flag.
    pub hosts: Vec<Host>,
    /// Requests per VM name (absent: the VM counts, but needs nothing).
    pub requests: BTreeMap<String, BTreeMap<String, Amount>>,
}

impl HostPool {
    /// Every host some member runs on, no capacities: the planner then works
    /// by counts only.
    pub fn observed<'a>(members: impl IntoIterator<Item = &'a AuditMember>) -> Self {
        let names: BTreeSet<&str> = members
            .into_iter()
            .filter_map(|member| member.host.as_deref())
            .collect();
        Self {
            hosts: names
                .into_iter()
                .map(|name| Host {
                    name: name.to_owned(),
                    capacity: BTreeMap::new(),
                    maintenance: false,
                })
                .collect(),
            requests: BTreeMap::new(),
        }
    }

    /// The hosts and VM requests of a HostInventory, plus (with no capacity)
    /// any host a member runs on that the inventory does not list.
    pub fn from_inventory<'a>(
        inventory: &HostInventory,
        members: impl IntoIterator<Item = &'a AuditMember>,
    ) -> Self {
        let mut hosts = inventory.hosts.clone();
        let mut known: BTreeSet<String> = hosts.iter().map(|h| h.name.clone()).collect();
        for host in members.into_iter().filter_map(|m| m.host.as_deref()) {
            if known.insert(host.to_owned()) {
                hosts.push(Host {
                    name: host.to_owned(),
                    capacity: BTreeMap::new(),
                    maintenance: false,
                });
            }
        }
        Self {
            hosts,
            requests: inventory
                .vms
                .iter()
                .map(|vm| (vm.name.clone(), vm.requests.clone()))
                .collect(),
        }
    }

    /// Names of the hosts not in maintenance.
    pub fn eligible(&self) -> BTreeSet<&str> {
        self.hosts
            .iter()
            .filter(|h| !h.maintenance)
            .map(|h| h.name.as_str())
            .collect()
    }
}

/// The audit of one group. Serialises as `{hosts, violations, forced}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupAudit {
    /// Host → the Machines on it (sorted).
    pub hosts: BTreeMap<String, Vec<String>>,
    /// Members beyond one per host.
    pub violations: u64,
    /// Whether every violation is forced (no vMotion removes one).
    pub forced: bool,
    /// The fewest violations any placement can have (not serialised).
    #[serde(skip)]
    pub minimum: u64,
    /// Members whose host is unknown (not serialised).
    #[serde(skip)]
    pub without_host: Vec<String>,
}

impl GroupAudit {
    /// Violations a rebalance can remove.
    pub fn fixable(&self) -> u64 {
        self.violations.saturating_sub(self.minimum)
    }
}

/// Audit every group that has a member, plus `groups` (listed even when
/// empty), against the eligible hosts of `pool`.
pub fn audit_groups(
    members: &[AuditMember],
    groups: impl IntoIterator<Item = GroupId>,
    pool: &HostPool,
) -> BTreeMap<GroupId, GroupAudit> {
    let eligible = pool.eligible().len() as u64;
    let mut out: BTreeMap<GroupId, GroupAudit> = groups
        .into_iter()
        .map(|group| (group, empty_audit()))
        .collect();
    for member in members {
        let audit = out.entry(member.group.clone()).or_insert_with(empty_audit);
        match &member.host {
            Some(host) => audit
                .hosts
                .entry(host.clone())
                .or_default()
                .push(member.machine.clone()),
            None => audit.without_host.push(member.machine.clone()),
        }
    }
    for audit in out.values_mut() {
        for machines in audit.hosts.values_mut() {
            machines.sort();
        }
        audit.without_host.sort();
        let placed: u64 = audit.hosts.values().map(|m| m.len() as u64).sum();
        audit.violations = audit
            .hosts
            .values()
            .map(|m| (m.len() as u64).saturating_sub(1))
            .sum();
        audit.minimum = if eligible == 0 {
            audit.violations
        } else {
            placed.saturating_sub(eligible)
        };
        audit.forced = audit.violations > 0 && audit.fixable() == 0;
    }
    out
}

fn empty_audit() -> GroupAudit {
    GroupAudit {
        hosts: BTreeMap::new(),
        violations: 0,
        forced: false,
        minimum: 0,
        without_host: Vec::new(),
    }
}

/// Migrations for every group with fixable violations.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MovePlan {
    /// The migrations, group after group (KubeadmControlPlane first, then
    /// by name), each group's in the planner's order.
    pub moves: Vec<Move>,
    /// Groups whose target spread the planner could not reach (capacity),
    /// with the moves still missing.
    pub incomplete: BTreeMap<GroupId, u64>,
    /// Why no plan could be made (an invalid HostInventory), if so.
    pub error: Option<String>,
}

/// The name of a group inside the planner's inventory (kinds may share
/// names).
fn unit_name(group: &GroupId) -> String {
    format!("{}/{}", group.kind, group.name)
}

/// Plan vMotions that remove every fixable violation, group after group,
/// each group planned over the hosts as the earlier groups' moves leave
/// them. Only members with a known host take part. Each group is evened
/// out over its eligible hosts (the rebalance planner's target), which can
/// take more moves than the group has fixable violations.
pub fn plan_moves(
    members: &[AuditMember],
    audits: &BTreeMap<GroupId, GroupAudit>,
    pool: &HostPool,
) -> MovePlan {
    let fixable: Vec<&GroupId> = audits
        .iter()
        .filter(|(_, audit)| audit.fixable() > 0)
        .map(|(group, _)| group)
        .collect();
    let mut plan = MovePlan::default();
    if fixable.is_empty() {
        return plan;
    }
    let mut inventory = HostInventory::new();
    inventory.hosts = pool.hosts.clone();
    let groups: BTreeSet<&GroupId> = members.iter().map(|m| &m.group).collect();
    inventory.groups = groups
        .iter()
        .map(|group| Group {
            name: unit_name(group),
            policy: Policy::SoftAntiAffinity,
            max_per_host: None,
            anti_affinity_set: None,
        })
        .collect();
    inventory.vms = members
        .iter()
        .filter_map(|member| {
            Some(Vm {
                name: member.vm.clone(),
                group: unit_name(&member.group),
                requests: pool.requests.get(&member.vm).cloned().unwrap_or_default(),
                host: Some(member.host.clone()?),
            })
        })
        .collect();
    for group in fixable {
        let checked = match CheckedInventory::new(&inventory) {
            Ok(checked) => checked,
            Err(error) => {
                plan.error = Some(error.to_string());
                return plan;
            }
        };
        let rebalance = match checked.rebalance(&unit_name(group), None) {
            Ok(rebalance) => rebalance,
            Err(error) => {
                plan.error = Some(error.to_string());
                return plan;
            }
        };
        if rebalance.remaining > 0 {
            plan.incomplete.insert(group.clone(), rebalance.remaining);
        }
        for step in &rebalance.moves {
            if let Some(vm) = inventory.vms.iter_mut().find(|vm| vm.name == step.vm) {
                vm.host = Some(step.to.clone());
            }
        }
        plan.moves.extend(rebalance.moves);
    }
    plan
}
