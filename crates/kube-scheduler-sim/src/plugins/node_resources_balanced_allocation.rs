//! NodeResourcesBalancedAllocation (C.43,
//! `pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go`),
//! a score only: nodes whose CPU and memory would be used in similar
//! fractions after placing the pod score higher.
//!
//! Unlike NodeResourcesFit's score it counts the pods' *actual* requests
//! (`useRequested`: no 100m / 200 MiB defaults), and a pod requesting no
//! CPU and no memory (best effort) skips the plugin.

use crate::plugins::helper::MAX_NODE_SCORE;
use crate::resources::Resources;

use crate::profile::{Cycle, SchedulerPlugin, ScoreOutcome, per_node};
use crate::result::Plugin;

/// PreScore: a pod requesting neither CPU nor memory skips the plugin
/// (`isBestEffortPod` over the configured resources).
pub fn skips(pod: &Resources) -> bool {
    pod.milli_cpu == 0 && pod.memory == 0
}

/// The Score (`balancedResourceScorer` over `cpu` and `memory`): for each
/// resource with a non-zero allocatable, the fraction `(requested on the
/// node + the pod's request) / allocatable`, capped at 1; with two
/// fractions the deviation is `|f_cpu − f_mem| / 2`, with one (or none) it
/// is 0; the score is `int((1 − deviation) × 100)` in floating point.
pub fn score(pod: &Resources, node_requested: &Resources, allocatable: Option<&Resources>) -> i64 {
    let (alloc_cpu, alloc_mem) = allocatable.map_or((0, 0), |a| (a.milli_cpu, a.memory));
    let mut fractions: Vec<f64> = Vec::with_capacity(2);
    for (requested, capacity) in [
        (
            node_requested.milli_cpu.saturating_add(pod.milli_cpu),
            alloc_cpu,
        ),
        (node_requested.memory.saturating_add(pod.memory), alloc_mem),
    ] {
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
            score(requests, &e.requested, e.allocatable.as_ref())
        });
        Ok(Some((raw.clone(), raw)))
    }
}
