//! NodeResourcesBalancedAllocation (C.43,
//! `pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go`),
//! a score only: nodes whose CPU and memory would be used in similar
//! fractions after placing the pod score higher.
//!
//! From 1.36 the score is the change the pod makes to the node's balance,
//! not the balance it leaves (C.74); the release is
//! [`crate::Options::kubernetes_version`].
//!
//! Unlike NodeResourcesFit's score it counts the pods' *actual* requests
//! (`useRequested`: no 100m / 200 MiB defaults), and a pod requesting no
//! CPU and no memory (best effort) skips the plugin.

use crate::KubernetesVersion;
use crate::plugins::helper::MAX_NODE_SCORE;
use crate::resources::Resources;

use crate::profile::{Cycle, SchedulerPlugin, ScoreOutcome, per_node};
use crate::result::Plugin;

/// PreScore: a pod requesting neither CPU nor memory skips the plugin
/// (`isBestEffortPod` over the configured resources).
pub fn skips(pod: &Resources) -> bool {
    pod.milli_cpu == 0 && pod.memory == 0
}

/// The Score (`balancedResourceScorer` over `cpu` and `memory`) of the
/// release `version`:
/// - up to 1.35, the balance after placing the pod (C.43);
/// - from 1.36, the change the pod makes to the node's balance (C.74):
///   `50 + (50 + after − before) / 2` in integer arithmetic, so a pod that
///   leaves the balance as it was scores 75, one that evens it out up to
///   100, one that skews it down to 50.
pub fn score(
    pod: &Resources,
    node_requested: &Resources,
    allocatable: Option<&Resources>,
    version: KubernetesVersion,
) -> i64 {
    let after = balance(
        (
            node_requested.milli_cpu.saturating_add(pod.milli_cpu),
            node_requested.memory.saturating_add(pod.memory),
        ),
        allocatable,
    );
    if !version.balanced_allocation_scores_the_change() {
        return after;
    }
    let before = balance(
        (node_requested.milli_cpu, node_requested.memory),
        allocatable,
    );
    let half = MAX_NODE_SCORE / 2;
    half + (half + after - before) / 2
}

/// `balancedResourceScore`: for each resource with a non-zero
/// allocatable, the fraction `requested / allocatable`, capped at 1; with
/// two fractions the deviation is `|f_cpu − f_mem| / 2`, with one (or
/// none) it is 0; the result is `int((1 − deviation) × 100)` in floating
/// point.
fn balance(requested: (i64, i64), allocatable: Option<&Resources>) -> i64 {
    let (alloc_cpu, alloc_mem) = allocatable.map_or((0, 0), |a| (a.milli_cpu, a.memory));
    let mut fractions: Vec<f64> = Vec::with_capacity(2);
    for (requested, capacity) in [(requested.0, alloc_cpu), (requested.1, alloc_mem)] {
        if capacity == 0 {
            continue;
        }
        fractions.push((requested as f64 / capacity as f64).min(1.0));
    }
    let std = match fractions.as_slice() {
        [a, b] => ((a - b) / 2.0).abs(),
        _ => 0.0,
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

/// The plugin in a profile: Score only (C.43).
pub(crate) struct NodeResourcesBalancedAllocation;

impl SchedulerPlugin for NodeResourcesBalancedAllocation {
    fn name(&self) -> Plugin {
        Plugin::NodeResourcesBalancedAllocation
    }

    fn score(&self, cycle: &Cycle<'_>, scored: &[u32]) -> ScoreOutcome {
        let Ok(requests) = &cycle.pod.requests else {
            return Ok(None);
        };
        if skips(requests) {
            return Ok(None);
        }
        let raw = per_node(cycle.state, scored, |e| {
            score(
                requests,
                &e.requested,
                e.allocatable.as_ref(),
                cycle.opts.kubernetes_version,
            )
        });
        Ok(Some((raw.clone(), raw)))
    }
}
