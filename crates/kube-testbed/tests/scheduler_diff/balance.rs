//! The one known scoring difference between the simulator (kube-scheduler
//! 1.35) and the bed's kube-scheduler (1.37): since 1.36,
//! NodeResourcesBalancedAllocation scores the change of a node's balance
//! (`balancedResourceScorer` in
//! `pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go`).
//! This module recomputes the totals with that score, so that a placement
//! it explains is reported as that known deviation, not as a mismatch.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube_scheduler_sim::ScheduleResult;
use kube_scheduler_sim::resources::{node_allocatable, pod_requests};

/// CPU (millicores) and memory (bytes).
pub type CpuMemory = (i64, i64);

/// The actual requests of `pod` (no defaults for missing ones).
pub fn requests(pod: &Pod) -> CpuMemory {
    pod_requests(pod).map_or((0, 0), |r| (r.milli_cpu, r.memory))
}

/// A node's allocatable cpu and memory.
pub fn allocatable(node: &Node) -> CpuMemory {
    match node_allocatable(node) {
        Ok(Some(r)) => (r.milli_cpu, r.memory),
        _ => (0, 0),
    }
}

/// `balancedResourceScore` over cpu and memory: `int((1 − |f_cpu − f_mem| / 2)
/// × 100)`, each fraction capped at 1, a resource without allocatable left
/// out.
fn balance(requested: CpuMemory, allocatable: CpuMemory) -> i64 {
    let mut fractions = Vec::with_capacity(2);
    for (used, total) in [(requested.0, allocatable.0), (requested.1, allocatable.1)] {
        if total != 0 {
            fractions.push((used as f64 / total as f64).min(1.0));
        }
    }
    let std = match fractions.as_slice() {
        [a, b] => ((a - b) / 2.0).abs(),
        _ => 0.0,
    };
    ((1.0 - std) * 100.0) as i64
}

/// The 1.36 score: `50 + (50 + s − s0) / 2`, `s` the balance with the pod
/// and `s0` without it.
pub fn score_since_1_36(pod: CpuMemory, on_node: CpuMemory, allocatable: CpuMemory) -> i64 {
    let with = balance((on_node.0 + pod.0, on_node.1 + pod.1), allocatable);
    let without = balance(on_node, allocatable);
    50 + (50 + with - without) / 2
}

/// The feasible nodes with the highest total once the simulator's
/// NodeResourcesBalancedAllocation score is replaced by the 1.36 one;
/// `None` when the plugin did not score (nothing to replace).
pub fn top_nodes_since_1_36(
    result: &ScheduleResult,
    pod: CpuMemory,
    on_node: &BTreeMap<String, CpuMemory>,
    allocatable: &BTreeMap<String, CpuMemory>,
) -> Option<Vec<String>> {
    let balanced = &result.scores.node_resources_balanced_allocation;
    if balanced.skipped || balanced.normalized.is_empty() {
        return None;
    }
    let totals: BTreeMap<&String, i64> = result
        .totals
        .iter()
        .map(|(node, total)| {
            let old = balanced.normalized.get(node).copied().unwrap_or_default();
            let new = score_since_1_36(
                pod,
                on_node.get(node).copied().unwrap_or_default(),
                allocatable.get(node).copied().unwrap_or_default(),
            );
            (node, total - old + new)
        })
        .collect();
    let best = totals.values().max().copied()?;
    Some(
        totals
            .into_iter()
            .filter(|(_, total)| *total == best)
            .map(|(node, _)| node.clone())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_balance_scores_75_and_the_extremes_50_and_100() {
        // Equal fractions with and without the pod.
        assert_eq!(score_since_1_36((1000, 2), (1000, 2), (4000, 8)), 75);
        // From perfectly balanced (empty) to cpu full, memory empty.
        assert_eq!(score_since_1_36((4000, 0), (0, 0), (4000, 8)), 50);
        // From cpu full, memory empty to both full.
        assert_eq!(score_since_1_36((0, 8), (4000, 0), (4000, 8)), 100);
    }
}
