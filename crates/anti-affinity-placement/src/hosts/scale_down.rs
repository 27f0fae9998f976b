//! Scale-down advisor (A.14): which Machines of a group to delete so the
//! spread stays as even as possible without any migration.
//!
//! VMs without a host are taken first (by name). Then each victim comes from
//! the host with the highest count of the group's unit `c_U(h)` (for a group
//! in an anti-affinity set, the set's count — the quantity the spread is
//! about; otherwise `c_G`), among hosts still holding a VM of the group; ties:
//! host in maintenance first, then the higher count of the group itself,
//! then host name ascending. On that host the VM whose name sorts last is
//! taken. This minimises the resulting maximum count (A.14). Annotate the
//! victims' Machines with [`DELETE_MACHINE_ANNOTATION`] before scaling the
//! MachineDeployment down (A.8: CAPI deletes annotated Machines first).

use std::cmp::Reverse;
use std::collections::BTreeMap;

use serde::Serialize;

use super::error::RequestError;
use super::model::CheckedInventory;

/// Cluster API annotation that makes a MachineSet delete a Machine first.
pub const DELETE_MACHINE_ANNOTATION: &str = "cluster.x-k8s.io/delete-machine";

/// One VM to remove.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Victim {
    /// VM (Machine) name.
    pub vm: String,
    /// Its host (`null` for a VM not placed yet).
    pub host: Option<String>,
}

/// Result of [`CheckedInventory::scale_down`]; serialises as
/// `{victims: [{vm, host}], countsAfter: {host: N}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleDownPlan {
    /// Victims in the order chosen.
    pub victims: Vec<Victim>,
    /// The unit's VMs per host once the victims are gone (every host).
    pub counts_after: BTreeMap<String, u32>,
}

impl ScaleDownPlan {
    /// Names of the Machines to annotate with [`DELETE_MACHINE_ANNOTATION`].
    pub fn machines_to_annotate(&self) -> impl Iterator<Item = &str> {
        self.victims.iter().map(|v| v.vm.as_str())
    }
}

impl CheckedInventory {
    /// Choose `count` VMs of `group` to delete (A.14).
    pub fn scale_down(&self, group: &str, count: usize) -> Result<ScaleDownPlan, RequestError> {
        let g = self
            .groups
            .iter()
            .position(|x| x.name == group)
            .ok_or_else(|| RequestError::UnknownGroup {
                name: group.to_owned(),
            })?;
        let unit = self.groups[g].unit;
        let members: Vec<usize> = (0..self.vms.len())
            .filter(|&v| self.vms[v].group == g)
            .collect();
        if count > members.len() {
            return Err(RequestError::TooManyVictims {
                group: group.to_owned(),
                requested: count,
                available: members.len(),
            });
        }
        let host_of = self.current_hosts();
        let mut unit_counts = self.unit_counts(unit, &host_of);
        let mut group_counts = vec![0u32; self.hosts.len()];
        // Per host: the group's VMs, sorted by name (victims popped from the end).
        let mut on_host: Vec<Vec<usize>> = vec![Vec::new(); self.hosts.len()];
        let mut unplaced: Vec<usize> = Vec::new();
        for &v in &members {
            match host_of[v] {
                Some(h) => {
                    group_counts[h] += 1;
                    on_host[h].push(v);
                }
                None => unplaced.push(v),
            }
        }
        for list in &mut on_host {
            list.sort_by(|&a, &b| self.vms[a].name.cmp(&self.vms[b].name));
        }
        unplaced.sort_by(|&a, &b| self.vms[a].name.cmp(&self.vms[b].name));

        let mut victims = Vec::with_capacity(count);
        for &v in unplaced.iter().take(count) {
            victims.push(Victim {
                vm: self.vms[v].name.clone(),
                host: None,
            });
        }
        while victims.len() < count {
            let Some(h) = (0..self.hosts.len())
                .filter(|&h| group_counts[h] > 0)
                .min_by_key(|&h| {
                    (
                        Reverse(unit_counts[h]),
                        !self.hosts[h].maintenance,
                        Reverse(group_counts[h]),
                        h,
                    )
                })
            else {
                break;
            };
            let Some(v) = on_host[h].pop() else { break };
            group_counts[h] -= 1;
            unit_counts[h] -= 1;
            victims.push(Victim {
                vm: self.vms[v].name.clone(),
                host: Some(self.hosts[h].name.clone()),
            });
        }
        Ok(ScaleDownPlan {
            victims,
            counts_after: self.named_counts(&unit_counts),
        })
    }
}
