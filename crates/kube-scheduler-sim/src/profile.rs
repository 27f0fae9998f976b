//! The indexed evaluator: the default profile's filters (NodeUnschedulable,
//! NodeName, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit,
//! VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
//! PodTopologySpread, InterPodAffinity, in that order, C.31) and the NodeAffinity
//! and InterPodAffinity scores of one pod over a [`ClusterState`].

use crate::plugins::inter_pod_affinity::{
    interpod_filter, interpod_prefilter, interpod_raw, interpod_score_map,
};
use crate::plugins::node_volume_limits::NewVolumes;
use crate::plugins::pod_topology_spread::{spread_filter, spread_prefilter};
use crate::plugins::volume_zone::PvTopology;
use crate::plugins::{
    node_name, node_ports, node_resources_fit, node_unschedulable, node_volume_limits,
    taint_toleration, volume_binding, volume_restrictions, volume_zone,
};
use crate::pod_info::PodInfo;
use crate::result::{Options, Plugin, Reason, Rejection};
use crate::state::{ClusterState, NodeEntry};

/// Everything the evaluation of one pod produces, by node index.
pub(crate) struct CoreEval {
    /// Pod-level error (no node lists).
    pub(crate) error: Option<String>,
    /// A PreFilter failure applying to every node.
    pub(crate) all_nodes: Option<AllNodes>,
    /// First failing plugin's rejection per node (None = feasible).
    pub(crate) reasons: Vec<Option<Rejection>>,
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
    /// A volume plugin's PreFilter failure (UnschedulableAndUnresolvable).
    Plugin(Plugin, String),
}

/// What the volume plugins' PreFilters computed (`None` = skipped).
#[derive(Default)]
pub(crate) struct VolumePre {
    pub(crate) restrictions: Option<volume_restrictions::Pre>,
    pub(crate) limits: Option<NewVolumes>,
    pub(crate) binding: Option<volume_binding::Pre>,
    pub(crate) zone: Option<Vec<PvTopology>>,
}

/// The PreFilters of VolumeRestrictions, NodeVolumeLimits, VolumeBinding
/// and VolumeZone, in that order; the first failure applies to every node.
pub(crate) fn volume_prefilter(
    state: &ClusterState,
    pod: &PodInfo,
) -> Result<VolumePre, (Plugin, String)> {
    if !pod.volumes.any {
        return Ok(VolumePre::default());
    }
    let storage = &state.storage;
    let restrictions = volume_restrictions::prefilter(storage, pod)
        .map_err(|m| (Plugin::VolumeRestrictions, m))?;
    let limits = node_volume_limits::prefilter(storage, pod);
    let binding =
        volume_binding::prefilter(storage, pod).map_err(|m| (Plugin::VolumeBinding, m))?;
    let zone = volume_zone::prefilter(storage, pod).map_err(|m| (Plugin::VolumeZone, m))?;
    Ok(VolumePre {
        restrictions,
        limits,
        binding,
        zone,
    })
}

/// The volume filters on one node, in the default profile's order.
pub(crate) fn volume_filters(
    state: &ClusterState,
    pre: &VolumePre,
    pod: &PodInfo,
    node: u32,
) -> Option<Rejection> {
    let entry = &state.nodes[node as usize];
    if let Some(r) = &pre.restrictions
        && let Some(reason) = volume_restrictions::filter(r, pod, &entry.volumes)
    {
        return Some(Rejection::Fixed(reason));
    }
    if let Some(new) = &pre.limits
        && node_volume_limits::exceeded(
            new,
            &entry.volumes,
            state.storage.csi_limits.get(&entry.name),
        )
        .is_some()
    {
        return Some(Rejection::Fixed(Reason::MaxVolumeCount));
    }
    if let Some(b) = &pre.binding {
        let reasons = volume_binding::filter(&state.storage, pod, b, &entry.name, &entry.labels);
        if !reasons.is_empty() {
            return Some(Rejection::Volumes(reasons));
        }
    }
    if let Some(z) = &pre.zone
        && volume_zone::filter(z, &entry.labels).is_some()
    {
        return Some(Rejection::Fixed(Reason::VolumeZoneConflict));
    }
    None
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
    // PreFilter, in plugin order NodeAffinity, NodeResourcesFit,
    // PodTopologySpread, InterPodAffinity.
    if pod
        .required_node
        .name_shortcut
        .as_ref()
        .is_some_and(|s| s.is_empty())
    {
        out.all_nodes = Some(AllNodes::Reason(Reason::NodeAffinityTermsConflict));
        return out;
    }
    let requests = match &pod.requests {
        Ok(r) => r,
        Err(problem) => {
            out.error = Some(format!("pod {}: {problem}", pod.key()));
            return out;
        }
    };
    let volumes = match volume_prefilter(state, pod) {
        Ok(v) => v,
        Err((plugin, message)) => {
            out.all_nodes = Some(AllNodes::Plugin(plugin, message));
            return out;
        }
    };
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
    let tolerates_cordon = node_unschedulable::tolerates_cordon(&pod.tolerations);
    for (i, reason) in out.reasons.iter_mut().enumerate() {
        let node = i as u32;
        let entry = &state.nodes[i];
        *reason = node_filters(entry, pod, requests, tolerates_cordon, node_unconstrained)
            .or_else(|| volume_filters(state, &volumes, pod, node))
            .or_else(|| {
                spread
                    .as_ref()
                    .and_then(|s| spread_filter(state, s, node))
                    .or_else(|| interpod_filter(state, &pre, node))
                    .map(Rejection::Fixed)
            });
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
        Some(Err(e)) => {
            out.score_error = Some(format!("running PreScore plugin \"NodeAffinity\": {e}"));
            return out;
        }
        // No preferred list: PreScore skips the plugin (C.5).
        None => {}
        // A list, even of weight-0 terms only: every node is scored.
        Some(Ok(terms)) => {
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

/// The per-node filters before PodTopologySpread, in the default profile's
/// order: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity,
/// NodePorts, NodeResourcesFit. The first failure is returned.
fn node_filters(
    entry: &NodeEntry,
    pod: &PodInfo,
    requests: &crate::resources::Resources,
    tolerates_cordon: bool,
    node_unconstrained: bool,
) -> Option<Rejection> {
    if entry.unschedulable && !tolerates_cordon {
        return Some(Rejection::Fixed(Reason::NodeUnschedulable));
    }
    if !node_name::fits(pod.node_name.as_deref(), &entry.name) {
        return Some(Rejection::Fixed(Reason::NodeNameMismatch));
    }
    if let Some(taint) = taint_toleration::filter(&entry.taints, &pod.tolerations) {
        return Some(Rejection::Taint(taint.clone()));
    }
    if !node_unconstrained && !pod.required_node.matches(&entry.name, &entry.labels) {
        return Some(Rejection::Fixed(Reason::NodeAffinityMismatch));
    }
    if !pod.host_ports.is_empty() && !node_ports::fits(&pod.host_ports, &entry.used_ports) {
        return Some(Rejection::Fixed(Reason::NodePortsConflict));
    }
    if let Some(allocatable) = &entry.allocatable {
        let short = node_resources_fit::fits_request(
            requests,
            allocatable,
            &entry.requested,
            entry.pod_count,
        );
        if !short.is_empty() {
            return Some(Rejection::Resources(short));
        }
    }
    None
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
