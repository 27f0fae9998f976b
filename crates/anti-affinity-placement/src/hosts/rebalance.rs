//! Rebalance planner (A.13): migrations that bring one anti-affinity unit to
//! its floor/ceil per-host target with the fewest moves.
//!
//! Target: with `n` placed VMs of the unit and `E` the hosts not in
//! maintenance, every eligible host gets `floor(n/|E|)`, and the `n mod |E|`
//! currently fullest eligible hosts (ties: host name) get one more; hosts in
//! maintenance get 0 (they are evacuated). Every move takes a VM from a host
//! above its target to a host below it, so a complete plan has exactly
//! `Σ_h max(0, c(h) − target(h))` moves, the minimum.
//!
//! Move order (deterministic): sources in maintenance first, then the
//! fullest source, then host name; destination the emptiest deficit host,
//! then most free capacity, then name; the VM is the first by name on the
//! source that fits the destination. Capacity is tracked move after move
//! (migrations are carried out in order); hard units never receive a VM on a
//! host already at `k`. The plan stops at the move budget or when no
//! remaining surplus VM fits any deficit host.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use serde::Serialize;

use super::error::RequestError;
use super::model::CheckedInventory;
use super::resources::FreeCapacity;

/// One live migration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Move {
    /// VM name.
    pub vm: String,
    /// Current host.
    pub from: String,
    /// New host.
    pub to: String,
}

/// Result of [`CheckedInventory::rebalance`]; serialises as
/// `{moves: [{vm, from, to}], countsBefore: {host: N}, countsAfter: {host: N}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RebalancePlan {
    /// Migrations, in the order they must be carried out.
    pub moves: Vec<Move>,
    /// The unit's VMs per host before (every host listed).
    pub counts_before: BTreeMap<String, u32>,
    /// The unit's VMs per host after the moves.
    pub counts_after: BTreeMap<String, u32>,
    /// The floor/ceil target per host (not serialised).
    #[serde(skip)]
    pub target: BTreeMap<String, u32>,
    /// Moves still needed to reach the target after this plan, because of
    /// the budget or capacity (0 = target reached; not serialised).
    #[serde(skip)]
    pub remaining: u64,
}

/// Floor/ceil targets (A.13): ceilings to the fullest eligible hosts.
pub(crate) fn targets(counts: &[u32], eligible: &[bool]) -> Vec<u32> {
    let mut target = vec![0; counts.len()];
    let hosts: Vec<usize> = (0..counts.len()).filter(|&h| eligible[h]).collect();
    if hosts.is_empty() {
        return target;
    }
    let n: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    let e = hosts.len() as u64;
    let floor = u32::try_from(n / e).unwrap_or(u32::MAX);
    let extra = usize::try_from(n % e).unwrap_or(usize::MAX);
    let mut by_fullness = hosts.clone();
    by_fullness.sort_by_key(|&h| (Reverse(counts[h]), h));
    for (rank, &h) in by_fullness.iter().enumerate() {
        target[h] = floor + u32::from(rank < extra);
    }
    target
}

impl CheckedInventory {
    /// Plan migrations for the group or anti-affinity set `unit` (a group
    /// that belongs to a set must be rebalanced through its set). `budget`
    /// limits the number of moves (`None` = unlimited).
    pub fn rebalance(
        &self,
        unit: &str,
        budget: Option<usize>,
    ) -> Result<RebalancePlan, RequestError> {
        let u = self.unit_named(unit).ok_or_else(|| {
            match self.groups.iter().find(|g| g.name == unit) {
                Some(g) => RequestError::GroupInSet {
                    group: unit.to_owned(),
                    set: self.units[g.unit].name.clone(),
                },
                None => RequestError::UnknownUnit {
                    name: unit.to_owned(),
                },
            }
        })?;
        let mut host_of = self.current_hosts();
        let mut free = FreeCapacity::new(self, &host_of);
        let before = self.unit_counts(u, &host_of);
        let eligible: Vec<bool> = self.hosts.iter().map(|h| !h.maintenance).collect();
        let target = targets(&before, &eligible);
        let below = self.units[u].limit.accepts_below();
        let mut counts = before.clone();
        let mut moves = Vec::new();
        let budget = budget.unwrap_or(usize::MAX);

        while moves.len() < budget {
            let mut sources: Vec<usize> = (0..counts.len())
                .filter(|&h| counts[h] > target[h])
                .collect();
            sources.sort_by_key(|&h| (eligible[h], Reverse(counts[h]), h));
            let mut sinks: Vec<usize> = (0..counts.len())
                .filter(|&h| counts[h] < target[h] && counts[h] < below)
                .collect();
            sinks.sort_by_key(|&h| {
                (
                    counts[h],
                    Reverse(free.share(h, &self.hosts[h].capacity)),
                    h,
                )
            });
            let found = sources.iter().find_map(|&from| {
                sinks.iter().find_map(|&to| {
                    let mut on_source: Vec<usize> = (0..self.vms.len())
                        .filter(|&v| self.vms[v].unit == u && host_of[v] == Some(from))
                        .collect();
                    on_source.sort_by(|&a, &b| self.vms[a].name.cmp(&self.vms[b].name));
                    on_source
                        .into_iter()
                        .find(|&v| free.fits(to, &self.vms[v].requests))
                        .map(|v| (v, from, to))
                })
            });
            let Some((v, from, to)) = found else { break };
            free.give(from, &self.vms[v].requests);
            free.take(to, &self.vms[v].requests);
            host_of[v] = Some(to);
            counts[from] -= 1;
            counts[to] += 1;
            moves.push(Move {
                vm: self.vms[v].name.clone(),
                from: self.hosts[from].name.clone(),
                to: self.hosts[to].name.clone(),
            });
        }
        let remaining = counts
            .iter()
            .zip(&target)
            .map(|(&c, &t)| u64::from(c.saturating_sub(t)))
            .sum();
        Ok(RebalancePlan {
            moves,
            counts_before: self.named_counts(&before),
            counts_after: self.named_counts(&counts),
            target: self.named_counts(&target),
            remaining,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::targets;

    #[test]
    fn ceilings_go_to_the_fullest_hosts_and_maintenance_gets_zero() {
        // 7 VMs over 3 eligible hosts: floor 2, one ceiling of 3 to the fullest.
        let counts = [1, 4, 0, 2];
        let eligible = [true, true, false, true];
        assert_eq!(targets(&counts, &eligible), vec![2, 3, 0, 2]);
    }

    #[test]
    fn no_eligible_host_means_no_target() {
        assert_eq!(targets(&[3, 1], &[false, false]), vec![0, 0]);
    }
}
