//! InterPodAffinity on the indexed state: PreFilter counts (C.10–C.14),
//! Filter (C.11–C.15) and PreScore/Score (C.18–C.20).

use crate::fast_hash::IdMap;
use crate::pair_counts::PairCounts;
use crate::pod_info::{AffinityTerm, PodInfo};
use crate::profile::{Cycle, PreFilter, SchedulerPlugin, ScoreOutcome};
use crate::result::{Code, Options, Plugin, Rejection};
use crate::state::ClusterState;

/// Per-term key ids resolved once.
fn key_ids(state: &ClusterState, terms: &[AffinityTerm]) -> Vec<Option<u32>> {
    terms
        .iter()
        .map(|t| state.key_id(&t.topology_key))
        .collect()
}

/// InterPodAffinity PreFilter state (C.10–C.14).
pub(crate) struct InterPodPre {
    affinity: PairCounts,
    anti: PairCounts,
    existing: PairCounts,
    self_match: bool,
    affinity_keys: Vec<Option<u32>>,
    anti_keys: Vec<Option<u32>>,
}

/// Add `weight × count` for every domain of `key` where pods of `class` run.
fn add_class_domains(
    out: &mut PairCounts,
    state: &ClusterState,
    class_domains: &IdMap<u32, IdMap<u32, u32>>,
    key: Option<u32>,
    weight: i64,
) -> bool {
    let Some(k) = key else { return false };
    let Some(doms) = class_domains.get(&k) else {
        return false;
    };
    for (d, n) in doms {
        out.add(state, k, *d, weight * i64::from(*n));
    }
    !doms.is_empty()
}

pub(crate) fn interpod_prefilter(state: &ClusterState, pod: &PodInfo) -> InterPodPre {
    let empty = Default::default();
    let affinity_keys = key_ids(state, &pod.required_affinity);
    let anti_keys = key_ids(state, &pod.required_anti_affinity);
    let mut affinity = PairCounts::default();
    let mut anti = PairCounts::default();
    let mut existing = PairCounts::default();
    // C.10: a placed pod counts only if it matches every required affinity term.
    if let Some(first) = pod.required_affinity.first() {
        for class in state.classes_in_scope(&first.scope) {
            if class.pods > 0
                && pod
                    .required_affinity
                    .iter()
                    .all(|t| t.matches(&class.namespace, &class.labels, &empty))
            {
                for k in &affinity_keys {
                    add_class_domains(&mut affinity, state, &class.key_domains, *k, 1);
                }
            }
        }
    }
    // C.13: each anti-affinity term independently.
    for (t, k) in pod.required_anti_affinity.iter().zip(&anti_keys) {
        if k.is_none() {
            continue;
        }
        for class in state.classes_in_scope(&t.scope) {
            if class.pods > 0 && t.matches(&class.namespace, &class.labels, &empty) {
                add_class_domains(&mut anti, state, &class.key_domains, *k, 1);
            }
        }
    }
    // C.14: placed pods' required anti-affinity against this pod, with this
    // pod's namespace labels (C.8).
    let ns_labels = state.namespace_labels(&pod.namespace);
    for g in &state.groups[1] {
        if g.pods == 0
            || g.domains.is_empty()
            || !g.term.matches(&pod.namespace, &pod.labels, ns_labels)
        {
            continue;
        }
        if let Some(k) = state.key_id(&g.term.topology_key) {
            for (d, n) in &g.domains {
                existing.add(state, k, *d, i64::from(*n));
            }
        }
    }
    let self_match = !pod.required_affinity.is_empty()
        && pod
            .required_affinity
            .iter()
            .all(|t| t.matches(&pod.namespace, &pod.labels, &empty));
    InterPodPre {
        affinity,
        anti,
        existing,
        self_match,
        affinity_keys,
        anti_keys,
    }
}

/// InterPodAffinity Filter for one node (C.11–C.15).
#[inline]
pub(crate) fn interpod_filter(
    state: &ClusterState,
    pre: &InterPodPre,
    node: u32,
) -> Option<Rejection> {
    if !pre.affinity_keys.is_empty() {
        let mut pods_exist = true;
        for k in &pre.affinity_keys {
            match state.domain(*k, node) {
                None => return Some(AFFINITY_REJECTION),
                Some((k, d)) => {
                    if pre.affinity.get(k, d) <= 0 {
                        pods_exist = false;
                    }
                }
            }
        }
        // C.12: the first pod of a self-affine group.
        let first_pod = pre.affinity.is_empty() && pre.self_match;
        if !(pods_exist || first_pod) {
            return Some(AFFINITY_REJECTION);
        }
    }
    for k in &pre.anti_keys {
        if let Some((k, d)) = state.domain(*k, node)
            && pre.anti.get(k, d) > 0
        {
            return Some(ANTI_AFFINITY_REJECTION);
        }
    }
    if !pre.existing.is_empty()
        && state.nodes[node as usize]
            .pairs
            .iter()
            .any(|(k, d)| pre.existing.get(*k, *d) > 0)
    {
        return Some(EXISTING_ANTI_AFFINITY_REJECTION);
    }
    None
}

/// InterPodAffinity PreScore (C.18, C.20): `None` when scoring is skipped.
pub(crate) fn interpod_score_map(
    state: &ClusterState,
    pod: &PodInfo,
    opts: &Options,
) -> Option<PairCounts> {
    if opts.ignore_preferred_terms_of_existing_pods && !pod.has_preferred_pod_terms {
        return None;
    }
    let empty = Default::default();
    let mut scores = PairCounts::default();
    let mut produced = false;
    for (terms, sign) in [
        (&pod.preferred_affinity, 1),
        (&pod.preferred_anti_affinity, -1),
    ] {
        for t in terms {
            let k = state.key_id(&t.term.topology_key);
            if k.is_none() {
                continue;
            }
            for class in state.classes_in_scope(&t.term.scope) {
                if class.pods > 0 && t.term.matches(&class.namespace, &class.labels, &empty) {
                    produced |= add_class_domains(
                        &mut scores,
                        state,
                        &class.key_domains,
                        k,
                        sign * t.weight,
                    );
                }
            }
        }
    }
    let ns_labels = state.namespace_labels(&pod.namespace);
    let kinds: [(usize, i64, bool); 3] = [
        (0, 1, opts.hard_pod_affinity_weight > 0),
        (2, 1, true),
        (3, -1, true),
    ];
    for (kind, sign, enabled) in kinds {
        if !enabled {
            continue;
        }
        for g in &state.groups[kind] {
            if g.pods == 0
                || g.domains.is_empty()
                || !g.term.matches(&pod.namespace, &pod.labels, ns_labels)
            {
                continue;
            }
            let weight = if kind == 0 {
                opts.hard_pod_affinity_weight
            } else {
                g.weight
            };
            if let Some(k) = state.key_id(&g.term.topology_key) {
                for (d, n) in &g.domains {
                    scores.add(state, k, *d, sign * weight * i64::from(*n));
                }
                produced = true;
            }
        }
    }
    produced.then_some(scores)
}

/// Raw InterPodAffinity score of a node: sum over its labels (C.19).
#[inline]
pub(crate) fn interpod_raw(state: &ClusterState, scores: &PairCounts, node: u32) -> i64 {
    state.nodes[node as usize]
        .pairs
        .iter()
        .map(|(k, d)| scores.get(*k, *d))
        .sum()
}

/// InterPodAffinity NormalizeScore: min–max in floating point, truncated (C.19).
pub(crate) fn normalize_min_max(raw: &[i64]) -> Vec<i64> {
    let min = raw.iter().copied().min().unwrap_or(0);
    let max = raw.iter().copied().max().unwrap_or(0);
    let diff = max - min;
    raw.iter()
        .map(|s| {
            if diff > 0 {
                (100.0 * ((s - min) as f64 / diff as f64)) as i64
            } else {
                0
            }
        })
        .collect()
}

/// kube-scheduler's reason for a node outside the domains of the pod's
/// required affinity (`ErrReasonAffinityRulesNotMatch`, C.11, C.12).
pub const AFFINITY_REASON: &str = "node(s) didn't match pod affinity rules";

/// kube-scheduler's reason for a node in a domain of the pod's required
/// anti-affinity (`ErrReasonAntiAffinityRulesNotMatch`, C.13).
pub const ANTI_AFFINITY_REASON: &str = "node(s) didn't match pod anti-affinity rules";

/// kube-scheduler's reason for a node in a domain of a placed pod's
/// required anti-affinity matching the pod (`ErrReasonExistingAntiAffinityRulesNotMatch`, C.14).
pub const EXISTING_ANTI_AFFINITY_REASON: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// The Filter's status for required affinity.
const AFFINITY_REJECTION: Rejection = Rejection::new(
    Plugin::InterPodAffinity,
    Code::UnschedulableAndUnresolvable,
    AFFINITY_REASON,
);

/// The Filter's status for required anti-affinity.
const ANTI_AFFINITY_REJECTION: Rejection = Rejection::new(
    Plugin::InterPodAffinity,
    Code::Unschedulable,
    ANTI_AFFINITY_REASON,
);

/// The Filter's status for placed pods' anti-affinity (symmetry).
const EXISTING_ANTI_AFFINITY_REJECTION: Rejection = Rejection::new(
    Plugin::InterPodAffinity,
    Code::Unschedulable,
    EXISTING_ANTI_AFFINITY_REASON,
);

/// The plugin in a profile: PreFilter and Filter (C.7–C.17), PreScore,
/// Score and NormalizeScore (C.18–C.20).
pub(crate) struct InterPodAffinity;

impl SchedulerPlugin for InterPodAffinity {
    fn name(&self) -> Plugin {
        Plugin::InterPodAffinity
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        let (state, pod) = (cycle.state, cycle.pod);
        // C.16: the pod's own unparsable term rejects every node.
        if let Some(msg) = &pod.affinity_error {
            return PreFilter::AllNodes(Rejection::many(
                Plugin::InterPodAffinity,
                Code::UnschedulableAndUnresolvable,
                vec![msg.clone()],
            ));
        }
        let pre = interpod_prefilter(state, pod);
        if pre.affinity_keys.is_empty() && pre.anti_keys.is_empty() && pre.existing.is_empty() {
            return PreFilter::Skip;
        }
        PreFilter::Filter(Box::new(move |node| interpod_filter(state, &pre, node)))
    }

    fn score(&self, cycle: &Cycle<'_>, scored: &[u32]) -> ScoreOutcome {
        let state = cycle.state;
        Ok(interpod_score_map(state, cycle.pod, cycle.opts).map(|map| {
            let raw: Vec<i64> = scored
                .iter()
                .map(|i| interpod_raw(state, &map, *i))
                .collect();
            let normalized = normalize_min_max(&raw);
            (raw, normalized)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_max_normalisation_truncates_a_float_like_kube_scheduler() {
        // 100 × (29 / 100) is 28.999999999999996 in float64: kube-scheduler
        // yields 28 where integer arithmetic would give 29 (C.19).
        assert_eq!(normalize_min_max(&[0, 29, 100]), vec![0, 28, 100]);
        assert_eq!(normalize_min_max(&[-5, 0]), vec![0, 100]);
        assert_eq!(normalize_min_max(&[3, 3]), vec![0, 0]);
    }
}
