//! The indexed evaluator: the default profile's filters (NodeUnschedulable,
//! NodeName, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit,
//! VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
//! PodTopologySpread, InterPodAffinity, in that order, C.31) and its scores
//! with their weights (C.21) of one pod over a [`ClusterState`].

use crate::plugins::helper::default_normalize;
use crate::plugins::inter_pod_affinity::{
    interpod_filter, interpod_prefilter, interpod_raw, interpod_score_map,
};
use crate::plugins::node_affinity::AddedAffinity;
use crate::plugins::node_volume_limits::NewVolumes;
use crate::plugins::pod_topology_spread::{
    spread_filter, spread_prefilter, spread_score, system_default_constraints,
};
use crate::plugins::volume_zone::PvTopology;
use crate::plugins::{
    image_locality, node_name, node_ports, node_resources_balanced_allocation, node_resources_fit,
    node_unschedulable, node_volume_limits, taint_toleration, volume_binding, volume_restrictions,
    volume_zone,
};
use crate::pod_info::PodInfo;
use crate::result::{Options, Plugin, Reason, Rejection, SCORE_WEIGHTS};
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
    /// Every score plugin of [`SCORE_WEIGHTS`], in that order, over
    /// `scored` (empty when scoring did not run).
    pub(crate) scores: Vec<PluginEval>,
    /// Error raised while scoring (C.5).
    pub(crate) score_error: Option<String>,
}

/// One score plugin over the scored nodes.
pub(crate) struct PluginEval {
    /// The plugin.
    pub(crate) plugin: Plugin,
    /// Its weight in the default profile.
    pub(crate) weight: i64,
    /// Raw and normalised scores aligned with `CoreEval::scored`; `None`
    /// when the plugin skipped (PreScore returned Skip).
    pub(crate) result: Option<(Vec<i64>, Vec<i64>)>,
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
        scores: Vec::new(),
        score_error: None,
    };
    // PreFilter, in plugin order NodeAffinity, NodeResourcesFit,
    // PodTopologySpread, InterPodAffinity.
    if pod
        .node_name_shortcut
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
    // NodeAffinityArgs.addedAffinity (C.47); `Options::validate` has parsed it.
    let added = opts
        .added_affinity
        .as_ref()
        .and_then(|a| AddedAffinity::compile(a).ok())
        .unwrap_or_default();
    let tolerates_cordon = node_unschedulable::tolerates_cordon(&pod.tolerations);
    for (i, reason) in out.reasons.iter_mut().enumerate() {
        let node = i as u32;
        let entry = &state.nodes[i];
        *reason = node_filters(
            entry,
            pod,
            requests,
            tolerates_cordon,
            node_unconstrained,
            &added,
        )
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
    // PreScore failures stop scheduling (C.5).
    let node_affinity_terms = match &pod.preferred_node {
        Some(Err(e)) => {
            out.score_error = Some(format!("running PreScore plugin \"NodeAffinity\": {e}"));
            return out;
        }
        Some(Ok(terms)) => Some(terms.as_slice()),
        // No preferred list and no added preferred terms: PreScore skips
        // the plugin (C.5, C.47).
        None if added.preferred.is_some() => Some(&[][..]),
        None => None,
    };
    // PodTopologySpread PreScore: the pod's ScheduleAnyway constraints, or
    // the system defaults when it declares none (C.44, C.46).
    let soft_spread = if pod.has_spread_constraints {
        match &pod.soft_spread {
            Err(e) => {
                out.score_error = Some(format!(
                    "running PreScore plugin \"PodTopologySpread\": calculating preScoreState: obtaining pod's soft topology spread constraints: {e}"
                ));
                return out;
            }
            Ok(c) if c.is_empty() => None,
            Ok(c) => Some(c.clone()),
        }
    } else {
        state
            .workloads
            .default_selector(pod)
            .map(system_default_constraints)
    };
    let scored = std::mem::take(&mut out.scored);
    let per_node = |f: &dyn Fn(&NodeEntry) -> i64| -> Vec<i64> {
        scored
            .iter()
            .map(|i| f(&state.nodes[*i as usize]))
            .collect()
    };
    for (plugin, weight) in SCORE_WEIGHTS {
        let result = match plugin {
            Plugin::TaintToleration => {
                let raw = per_node(&|e| taint_toleration::score(&e.taints, &pod.tolerations));
                let normalized = default_normalize(&raw, true);
                Some((raw, normalized))
            }
            // A list, even of weight-0 terms only: every node is scored.
            Plugin::NodeAffinity => node_affinity_terms.map(|terms| {
                let raw = per_node(&|e| {
                    added.score(&e.name, &e.labels)
                        + terms
                            .iter()
                            .filter(|(_, t)| t.matches(&e.name, &e.labels))
                            .map(|(w, _)| *w)
                            .sum::<i64>()
                });
                let normalized = default_normalize(&raw, false);
                (raw, normalized)
            }),
            Plugin::NodeResourcesFit => {
                let raw = per_node(&|e| {
                    node_resources_fit::least_allocated_score(
                        pod.non_zero_requests,
                        e.non_zero_requested,
                        e.allocatable.as_ref(),
                    )
                });
                Some((raw.clone(), raw))
            }
            Plugin::NodeResourcesBalancedAllocation => {
                (!node_resources_balanced_allocation::skips(requests)).then(|| {
                    let raw = per_node(&|e| {
                        node_resources_balanced_allocation::score(
                            requests,
                            &e.requested,
                            e.allocatable.as_ref(),
                        )
                    });
                    (raw.clone(), raw)
                })
            }
            Plugin::PodTopologySpread => soft_spread.as_deref().map(|constraints| {
                spread_score(state, pod, &scored, constraints, pod.has_spread_constraints)
            }),
            Plugin::InterPodAffinity => interpod_score_map(state, pod, opts).map(|map| {
                let raw: Vec<i64> = scored
                    .iter()
                    .map(|i| interpod_raw(state, &map, *i))
                    .collect();
                let normalized = normalize_min_max(&raw);
                (raw, normalized)
            }),
            Plugin::ImageLocality => {
                let total_nodes = state.nodes.len();
                let raw = per_node(&|e| {
                    let sum = pod
                        .images
                        .iter()
                        .filter(|name| e.images.contains(*name))
                        .filter_map(|name| state.image_states.get(name))
                        .map(|(size, nodes)| {
                            image_locality::scaled_image_score(*size, *nodes as usize, total_nodes)
                        })
                        .sum();
                    image_locality::calculate_priority(sum, pod.container_count)
                });
                Some((raw.clone(), raw))
            }
            _ => None,
        };
        out.scores.push(PluginEval {
            plugin,
            weight,
            result,
        });
    }
    out.scored = scored;
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
    added: &AddedAffinity,
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
    if !added.fits(&entry.name, &entry.labels) {
        return Some(Rejection::Fixed(Reason::NodeAffinityEnforced));
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
#[cfg(test)]
pub(crate) fn normalize_max(raw: &[i64]) -> Vec<i64> {
    default_normalize(raw, false)
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

/// The weighted sum of the normalised scores of every plugin that ran,
/// aligned with `eval.scored` (C.21).
pub(crate) fn totals(eval: &CoreEval) -> Vec<i64> {
    let mut total = vec![0i64; eval.scored.len()];
    for p in &eval.scores {
        if let Some((_, normalized)) = &p.result {
            for (t, n) in total.iter_mut().zip(normalized) {
                *t += p.weight * n;
            }
        }
    }
    total
}

/// Pick the feasible node with the highest total; ties go to the first
/// node in name order (C.22).
pub(crate) fn select(state: &ClusterState, eval: &CoreEval) -> Option<u32> {
    if eval.error.is_some() || eval.all_nodes.is_some() || eval.score_error.is_some() {
        return None;
    }
    let mut score_of = vec![0i64; eval.reasons.len()];
    for (i, t) in eval.scored.iter().zip(totals(eval)) {
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
