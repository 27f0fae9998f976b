//! PodTopologySpread on the indexed state: `DoNotSchedule` constraints
//! filter (C.23), `ScheduleAnyway` constraints, or the system defaults for
//! a pod of a Service, ReplicationController, ReplicaSet or StatefulSet
//! without constraints of its own, score (C.44, C.46).

use std::collections::BTreeMap;

use kube_validation::LabelSelectorMatcher as PodSelector;

use crate::fast_hash::IdMap;
use crate::plugins::helper::MAX_NODE_SCORE;
use crate::pod_info::{PodInfo, SpreadConstraint, has_untolerated_taint};
use crate::profile::{Cycle, PreFilter, SchedulerPlugin, ScoreOutcome};
use crate::result::{Code, Plugin, Rejection};
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
pub(crate) fn spread_filter(state: &ClusterState, pre: &SpreadPre, node: u32) -> Option<Rejection> {
    for c in &pre.constraints {
        let Some((_, d)) = state.domain(c.key, node) else {
            return Some(MISSING_LABEL_REJECTION);
        };
        let skew = c.counts.get(&d).copied().unwrap_or(0) + i64::from(c.self_match) - c.min;
        if skew > c.max_skew {
            return Some(SKEW_REJECTION);
        }
    }
    None
}

/// `kubernetes.io/hostname`: counted per node at Score time.
pub(crate) const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// `topology.kubernetes.io/zone`.
pub(crate) const LABEL_ZONE: &str = "topology.kubernetes.io/zone";

/// The system-default constraints (`systemDefaultConstraints`, C.46):
/// hostname with maxSkew 3, zone with maxSkew 5, both `ScheduleAnyway`
/// with the default inclusion policies, over `selector`.
pub(crate) fn system_default_constraints(selector: PodSelector) -> Vec<SpreadConstraint> {
    [(LABEL_HOSTNAME, 3), (LABEL_ZONE, 5)]
        .into_iter()
        .map(|(key, max_skew)| SpreadConstraint {
            max_skew,
            topology_key: key.to_owned(),
            selector: selector.clone(),
            min_domains: 1,
            honor_node_affinity: true,
            honor_node_taints: false,
        })
        .collect()
}

/// Matching pods per node index: pods of the incoming pod's namespace, not
/// terminating, whose labels the selector matches (`countPodsMatchSelector`;
/// an empty selector counts nothing).
fn matching_per_node(
    state: &ClusterState,
    pod: &PodInfo,
    selector: &PodSelector,
) -> IdMap<u32, i64> {
    let mut out: IdMap<u32, i64> = IdMap::default();
    if selector.is_everything() {
        return out;
    }
    for class in state
        .classes_by_namespace
        .get(&pod.namespace)
        .into_iter()
        .flatten()
        .map(|i| &state.classes[*i as usize])
    {
        if class.pods == 0 || class.terminating || !selector.matches(&class.labels) {
            continue;
        }
        for (n, c) in &class.node_counts {
            *out.entry(*n).or_insert(0) += i64::from(*c);
        }
    }
    out
}

/// PreScore, Score and NormalizeScore of PodTopologySpread (C.44) over the
/// scored node indexes: raw and normalised scores.
///
/// `require_all` is false only for the system defaults: then a node without
/// a constraint's key still counts (its value is the empty string) and
/// gets only the parts of the score whose key it has.
pub(crate) fn spread_score(
    state: &ClusterState,
    pod: &PodInfo,
    scored: &[u32],
    constraints: &[SpreadConstraint],
    require_all: bool,
) -> (Vec<i64>, Vec<i64>) {
    let keys: Vec<Option<u32>> = constraints
        .iter()
        .map(|c| state.key_id(&c.topology_key))
        .collect();
    let value = |k: Option<u32>, node: u32| -> Option<&str> {
        state
            .domain(k, node)
            .map(|(k, d)| state.topo[k as usize].value_names[d as usize].as_str())
    };
    let has_all = |node: u32| keys.iter().all(|k| state.domain(*k, node).is_some());
    let ignored: Vec<bool> = scored.iter().map(|n| require_all && !has_all(*n)).collect();
    let hostname = |c: &SpreadConstraint| c.topology_key == LABEL_HOSTNAME;
    // Domains of the scored nodes, per constraint (a missing label is "").
    let mut counts: Vec<BTreeMap<&str, i64>> = vec![BTreeMap::new(); constraints.len()];
    for (n, skip) in scored.iter().zip(&ignored) {
        if *skip {
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            if !hostname(c) {
                counts[i]
                    .entry(value(keys[i], *n).unwrap_or(""))
                    .or_insert(0);
            }
        }
    }
    let kept = ignored.iter().filter(|i| !**i).count();
    let weights: Vec<f64> = constraints
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let size = if hostname(c) { kept } else { counts[i].len() };
            ((size + 2) as f64).ln()
        })
        .collect();
    let matching: Vec<IdMap<u32, i64>> = constraints
        .iter()
        .map(|c| matching_per_node(state, pod, &c.selector))
        .collect();
    // Matching pods per domain over every node of the cluster that passes
    // the constraint's inclusion policies.
    for node in 0..state.nodes.len() as u32 {
        if require_all && !has_all(node) {
            continue;
        }
        let entry = &state.nodes[node as usize];
        for (i, c) in constraints.iter().enumerate() {
            if hostname(c) {
                continue;
            }
            if c.honor_node_affinity && !pod.required_node.matches(&entry.name, &entry.labels) {
                continue;
            }
            if c.honor_node_taints && has_untolerated_taint(&entry.taints, &pod.tolerations) {
                continue;
            }
            if let Some(count) = counts[i].get_mut(value(keys[i], node).unwrap_or("")) {
                *count += matching[i].get(&node).copied().unwrap_or(0);
            }
        }
    }
    let raw: Vec<i64> = scored
        .iter()
        .zip(&ignored)
        .map(|(n, skip)| {
            if *skip {
                return 0;
            }
            let mut score = 0.0;
            for (i, c) in constraints.iter().enumerate() {
                let Some(v) = value(keys[i], *n) else {
                    continue;
                };
                let count = if hostname(c) {
                    matching[i].get(n).copied().unwrap_or(0)
                } else {
                    counts[i].get(v).copied().unwrap_or(0)
                };
                score += count as f64 * weights[i] + (c.max_skew - 1) as f64;
            }
            score.round() as i64
        })
        .collect();
    let kept_scores = raw
        .iter()
        .zip(&ignored)
        .filter(|(_, i)| !**i)
        .map(|(s, _)| *s);
    let min = kept_scores.clone().min().unwrap_or(0);
    let max = kept_scores.max().unwrap_or(0).max(0);
    let normalized = raw
        .iter()
        .zip(&ignored)
        .map(|(s, skip)| {
            if *skip {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - s) / max
            }
        })
        .collect();
    (raw, normalized)
}

/// kube-scheduler's reason for a node without a constraint's topology key
/// (`ErrReasonNodeLabelNotMatch`, C.23).
pub const MISSING_LABEL_REASON: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// kube-scheduler's reason for a node where the skew would exceed
/// `maxSkew` (`ErrReasonConstraintsNotMatch`, C.23).
pub const SKEW_REASON: &str = "node(s) didn't match pod topology spread constraints";

/// The Filter's status for a node without a constraint's key.
const MISSING_LABEL_REJECTION: Rejection = Rejection::new(
    Plugin::PodTopologySpread,
    Code::UnschedulableAndUnresolvable,
    MISSING_LABEL_REASON,
);

/// The Filter's status for a node over `maxSkew`.
const SKEW_REJECTION: Rejection =
    Rejection::new(Plugin::PodTopologySpread, Code::Unschedulable, SKEW_REASON);

/// The plugin in a profile: PreFilter and Filter (`DoNotSchedule`, C.23),
/// PreScore and Score (`ScheduleAnyway` or the system defaults, C.44, C.46).
pub(crate) struct PodTopologySpread;

impl SchedulerPlugin for PodTopologySpread {
    fn name(&self) -> Plugin {
        Plugin::PodTopologySpread
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        let (state, pod) = (cycle.state, cycle.pod);
        match &pod.spread {
            Ok(c) if c.is_empty() => PreFilter::Skip,
            Ok(c) => {
                let pre = spread_prefilter(state, pod, c);
                PreFilter::Filter(Box::new(move |node| spread_filter(state, &pre, node)))
            }
            Err(e) => PreFilter::Error(format!(
                "obtaining pod's hard topology spread constraints: {e}"
            )),
        }
    }

    fn score(&self, cycle: &Cycle<'_>, scored: &[u32]) -> ScoreOutcome {
        let (state, pod) = (cycle.state, cycle.pod);
        // PreScore: the pod's ScheduleAnyway constraints, or the system
        // defaults when it declares none (C.44, C.46).
        let defaults;
        let constraints: &[SpreadConstraint] = if pod.has_spread_constraints {
            match &pod.soft_spread {
                Err(e) => {
                    return Err(format!(
                        "running PreScore plugin \"PodTopologySpread\": calculating preScoreState: obtaining pod's soft topology spread constraints: {e}"
                    ));
                }
                Ok(c) => c,
            }
        } else {
            match state.workloads.default_selector(pod) {
                Some(selector) => {
                    defaults = system_default_constraints(selector);
                    &defaults
                }
                None => return Ok(None),
            }
        };
        if constraints.is_empty() {
            return Ok(None);
        }
        Ok(Some(spread_score(
            state,
            pod,
            scored,
            constraints,
            pod.has_spread_constraints,
        )))
    }
}
