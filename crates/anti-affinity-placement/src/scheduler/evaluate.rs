//! The indexed evaluator: NodeAffinity, PodTopologySpread and
//! InterPodAffinity filters and scores of one pod over a [`ClusterState`].

use super::fast_hash::IdMap;
use super::pod_info::{AffinityTerm, PodInfo, has_untolerated_taint};
use super::result::{Options, Reason};
use super::state::ClusterState;

/// Counts per topology pair `(key, value)`, dense per key; tracks how many
/// pairs are non-zero so "the count map is empty" (C.12) is O(1).
#[derive(Debug, Clone, Default)]
pub(crate) struct PairCounts {
    per_key: Vec<Option<Vec<i64>>>,
    nonzero: usize,
}

impl PairCounts {
    fn add(&mut self, state: &ClusterState, key: u32, dom: u32, delta: i64) {
        let k = key as usize;
        if self.per_key.len() <= k {
            self.per_key.resize(k + 1, None);
        }
        let v = self.per_key[k].get_or_insert_with(|| vec![0; state.domain_count(key)]);
        let d = dom as usize;
        if v.len() <= d {
            v.resize(d + 1, 0);
        }
        let before = v[d];
        v[d] += delta;
        match (before == 0, v[d] == 0) {
            (true, false) => self.nonzero += 1,
            (false, true) => self.nonzero -= 1,
            _ => {}
        }
    }

    #[inline]
    pub(crate) fn get(&self, key: u32, dom: u32) -> i64 {
        match self.per_key.get(key as usize) {
            Some(Some(v)) => v.get(dom as usize).copied().unwrap_or(0),
            _ => 0,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.nonzero == 0
    }
}

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
) -> Option<Reason> {
    if !pre.affinity_keys.is_empty() {
        let mut pods_exist = true;
        for k in &pre.affinity_keys {
            match state.domain(*k, node) {
                None => return Some(Reason::AffinityRules),
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
            return Some(Reason::AffinityRules);
        }
    }
    for k in &pre.anti_keys {
        if let Some((k, d)) = state.domain(*k, node)
            && pre.anti.get(k, d) > 0
        {
            return Some(Reason::AntiAffinityRules);
        }
    }
    if !pre.existing.is_empty()
        && state.nodes[node as usize]
            .pairs
            .iter()
            .any(|(k, d)| pre.existing.get(*k, *d) > 0)
    {
        return Some(Reason::ExistingAntiAffinityRules);
    }
    None
}

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
    constraints: &[super::pod_info::SpreadConstraint],
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

/// Everything the evaluation of one pod produces, by node index.
pub(crate) struct CoreEval {
    /// Pod-level error (no node lists).
    pub(crate) error: Option<String>,
    /// A PreFilter failure applying to every node.
    pub(crate) all_nodes: Option<AllNodes>,
    /// First failing reason per node (None = feasible).
    pub(crate) reasons: Vec<Option<Reason>>,
    /// Scored node indexes (empty when scoring did not run).
    pub(crate) scored: Vec<u32>,
    /// NodeAffinity raw scores for `scored`, None if skipped.
    pub(crate) node_affinity: Option<Vec<i64>>,
    /// InterPodAffinity raw scores for `scored`, None if skipped.
    pub(crate) inter_pod: Option<Vec<i64>>,
    /// Error raised while scoring (C.5).
    pub(crate) score_error: Option<String>,
}

/// A failure of PreFilter that applies to every node.
pub(crate) enum AllNodes {
    Reason(Reason),
    Message(String),
}

/// Filter and score `pod` (already compiled, not part of `state`).
pub(crate) fn evaluate(state: &ClusterState, pod: &PodInfo, opts: &Options) -> CoreEval {
    let n = state.nodes.len();
    let mut out = CoreEval {
        error: None,
        all_nodes: None,
        reasons: vec![None; n],
        scored: Vec::new(),
        node_affinity: None,
        inter_pod: None,
        score_error: None,
    };
    // PreFilter, in plugin order NodeAffinity, PodTopologySpread, InterPodAffinity.
    if pod
        .required_node
        .name_shortcut
        .as_ref()
        .is_some_and(|s| s.is_empty())
    {
        out.all_nodes = Some(AllNodes::Reason(Reason::NodeAffinityTermsConflict));
        return out;
    }
    let spread = match &pod.spread {
        Ok(c) if c.is_empty() => None,
        Ok(c) => Some(spread_prefilter(state, pod, c)),
        Err(e) => {
            out.error = Some(format!(
                "obtaining pod's hard topology spread constraints: {e}"
            ));
            return out;
        }
    };
    if let Some(msg) = &pod.affinity_error {
        out.all_nodes = Some(AllNodes::Message(msg.clone()));
        return out;
    }
    let mut resolved = pod.clone();
    resolved.resolve_namespaces(&state.namespaces);
    let pod = &resolved;
    let pre = interpod_prefilter(state, pod);
    let node_unconstrained = pod.required_node.is_unconstrained();
    for (i, reason) in out.reasons.iter_mut().enumerate() {
        let node = i as u32;
        let entry = &state.nodes[i];
        *reason = if !node_unconstrained && !pod.required_node.matches(&entry.name, &entry.labels) {
            Some(Reason::NodeAffinityMismatch)
        } else {
            spread
                .as_ref()
                .and_then(|s| spread_filter(state, s, node))
                .or_else(|| interpod_filter(state, &pre, node))
        };
    }
    let feasible = out.reasons.iter().filter(|r| r.is_none()).count();
    out.scored = if opts.score_all_nodes {
        (0..n as u32).collect()
    } else if feasible > 1 {
        (0..n as u32)
            .filter(|i| out.reasons[*i as usize].is_none())
            .collect()
    } else {
        // kube-scheduler skips scoring when at most one node is feasible.
        Vec::new()
    };
    if out.scored.is_empty() {
        return out;
    }
    match &pod.preferred_node {
        Err(e) => {
            out.score_error = Some(format!("running PreScore plugin \"NodeAffinity\": {e}"));
            return out;
        }
        Ok(terms) if terms.is_empty() => {}
        Ok(terms) => {
            out.node_affinity = Some(
                out.scored
                    .iter()
                    .map(|i| {
                        let e = &state.nodes[*i as usize];
                        terms
                            .iter()
                            .filter(|(_, t)| t.matches(&e.name, &e.labels))
                            .map(|(w, _)| *w)
                            .sum()
                    })
                    .collect(),
            );
        }
    }
    if let Some(scores) = interpod_score_map(state, pod, opts) {
        out.inter_pod = Some(
            out.scored
                .iter()
                .map(|i| interpod_raw(state, &scores, *i))
                .collect(),
        );
    }
    out
}

/// `DefaultNormalizeScore(100, false)`: `100 × s / max`, integer division (C.5).
pub(crate) fn normalize_max(raw: &[i64]) -> Vec<i64> {
    let max = raw.iter().copied().fold(0, i64::max);
    if max == 0 {
        return raw.to_vec();
    }
    raw.iter().map(|s| 100 * s / max).collect()
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

/// Pick the feasible node with the highest total (2 × NodeAffinity + 2 ×
/// InterPodAffinity normalised); ties go to the smallest node name.
pub(crate) fn select(state: &ClusterState, eval: &CoreEval) -> Option<u32> {
    if eval.error.is_some() || eval.all_nodes.is_some() || eval.score_error.is_some() {
        return None;
    }
    let na = eval.node_affinity.as_deref().map(normalize_max);
    let ip = eval.inter_pod.as_deref().map(normalize_min_max);
    let mut total: Vec<i64> = vec![0; eval.scored.len()];
    for (i, t) in total.iter_mut().enumerate() {
        *t = 2 * na.as_ref().map_or(0, |v| v[i]) + 2 * ip.as_ref().map_or(0, |v| v[i]);
    }
    let mut score_of = vec![0i64; eval.reasons.len()];
    for (i, t) in eval.scored.iter().zip(total) {
        score_of[*i as usize] = t;
    }
    let mut best: Option<(i64, &str, u32)> = None;
    for (i, r) in eval.reasons.iter().enumerate() {
        if r.is_some() {
            continue;
        }
        let s = score_of[i];
        let name = state.nodes[i].name.as_str();
        let better = match best {
            None => true,
            Some((bs, bn, _)) => s > bs || (s == bs && name < bn),
        };
        if better {
            best = Some((s, name, i as u32));
        }
    }
    best.map(|b| b.2)
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

    #[test]
    fn max_normalisation_uses_integer_division() {
        assert_eq!(normalize_max(&[2, 11, 4]), vec![18, 100, 36]);
        assert_eq!(normalize_max(&[0, 0]), vec![0, 0]);
    }
}
