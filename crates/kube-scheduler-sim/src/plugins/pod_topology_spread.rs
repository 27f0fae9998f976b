//! PodTopologySpread `DoNotSchedule` on the indexed state (C.23).

use crate::fast_hash::IdMap;
use crate::pod_info::{PodInfo, SpreadConstraint, has_untolerated_taint};
use crate::result::Reason;
use crate::state::ClusterState;

/// PodTopologySpread PreFilter state for DoNotSchedule constraints (C.23).
pub(crate) struct SpreadPre {
    constraints: Vec<SpreadState>,
}

struct SpreadState {
    key: Option<u32>,
    counts: IdMap<u32, i64>,
    min: i64,
    self_match: bool,
    max_skew: i64,
}

pub(crate) fn spread_prefilter(
    state: &ClusterState,
    pod: &PodInfo,
    constraints: &[SpreadConstraint],
) -> SpreadPre {
    let keys: Vec<Option<u32>> = constraints
        .iter()
        .map(|c| state.key_id(&c.topology_key))
        .collect();
    let mut out = Vec::with_capacity(constraints.len());
    // A node counts only if it carries every constraint's key.
    let has_all: Vec<bool> = (0..state.nodes.len() as u32)
        .map(|n| keys.iter().all(|k| state.domain(*k, n).is_some()))
        .collect();
    for (c, key) in constraints.iter().zip(&keys) {
        let eligible: Vec<bool> = (0..state.nodes.len())
            .map(|n| {
                let node = &state.nodes[n];
                has_all[n]
                    && (!c.honor_node_affinity
                        || pod.required_node.matches(&node.name, &node.labels))
                    && (!c.honor_node_taints
                        || !has_untolerated_taint(&node.taints, &pod.tolerations))
            })
            .collect();
        let mut counts: IdMap<u32, i64> = IdMap::default();
        for (n, ok) in eligible.iter().enumerate() {
            if *ok && let Some((_, d)) = state.domain(*key, n as u32) {
                counts.entry(d).or_insert(0);
            }
        }
        if !c.selector.is_everything()
            && let Some(classes) = state.classes_by_namespace.get(&pod.namespace)
        {
            for class in classes.iter().map(|i| &state.classes[*i as usize]) {
                if class.pods == 0 || class.terminating || !c.selector.matches(&class.labels) {
                    continue;
                }
                for (n, cnt) in &class.node_counts {
                    if eligible[*n as usize]
                        && let Some((_, d)) = state.domain(*key, *n)
                    {
                        *counts.entry(d).or_insert(0) += i64::from(*cnt);
                    }
                }
            }
        }
        let min = if (counts.len() as i64) < c.min_domains {
            0
        } else {
            counts
                .values()
                .copied()
                .min()
                .unwrap_or(i64::from(i32::MAX))
        };
        out.push(SpreadState {
            key: *key,
            counts,
            min,
            self_match: c.selector.matches(&pod.labels),
            max_skew: c.max_skew,
        });
    }
    SpreadPre { constraints: out }
}

impl SpreadPre {
    /// Plain-words reason for the first constraint failing on `node`.
    pub(crate) fn explain(&self, state: &ClusterState, node: u32, keys: &[&str]) -> Option<String> {
        for (i, (c, key)) in self.constraints.iter().zip(keys).enumerate() {
            let Some((k, d)) = state.domain(c.key, node) else {
                return Some(format!(
                    "the node has no label {key:?}, the topologyKey of DoNotSchedule topologySpreadConstraints[{i}]; nodes without it are rejected"
                ));
            };
            let count = c.counts.get(&d).copied().unwrap_or(0);
            let skew = count + i64::from(c.self_match) - c.min;
            if skew > c.max_skew {
                let value = &state.topo[k as usize].value_names[d as usize];
                return Some(format!(
                    "topologySpreadConstraints[{i}]: {count} matching pod(s) already in {key}={value}, + {} for this pod, − global minimum {} = skew {skew} > maxSkew {}",
                    i64::from(c.self_match),
                    c.min,
                    c.max_skew
                ));
            }
        }
        None
    }
}

#[inline]
pub(crate) fn spread_filter(state: &ClusterState, pre: &SpreadPre, node: u32) -> Option<Reason> {
    for c in &pre.constraints {
        let Some((_, d)) = state.domain(c.key, node) else {
            return Some(Reason::SpreadMissingLabel);
        };
        let skew = c.counts.get(&d).copied().unwrap_or(0) + i64::from(c.self_match) - c.min;
        if skew > c.max_skew {
            return Some(Reason::SpreadSkew);
        }
    }
    None
}
