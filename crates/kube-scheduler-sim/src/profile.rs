//! The scheduling framework's runner: the plugin interface
//! ([`SchedulerPlugin`]), a [`Profile`] (which plugins run, in which order,
//! with which score weights) and the evaluation of one pod over a
//! [`ClusterState`] with a profile: every PreFilter, then every Filter per
//! node (the first failure is the node's), then PreScore, Score and
//! NormalizeScore over the scored nodes, the weighted totals (C.21) and the
//! selection (C.22).
//!
//! The framework never names a plugin: the plugins implement
//! [`SchedulerPlugin`] in their own modules under `crate::plugins`, and the
//! profile lists are data built there (`plugins::default_profile`, C.31).

use crate::pod_info::PodInfo;
use crate::result::{Options, Plugin, Rejection};
use crate::state::{ClusterState, NodeEntry};

/// A Filter over the node indexes of the cluster state, holding what its
/// plugin's PreFilter computed (kube-scheduler's `CycleState` entry of the
/// plugin). `None` means the node passes.
pub(crate) type NodeFilter<'a> = Box<dyn Fn(u32) -> Option<Rejection> + 'a>;

/// What a plugin's PreFilter decided for a pod.
pub(crate) enum PreFilter<'a> {
    /// Nothing to check for this pod (PreFilter `Skip`): the Filter does
    /// not run.
    Skip,
    /// Run this Filter on every node.
    Filter(NodeFilter<'a>),
    /// Every node is rejected with this status (an
    /// `UnschedulableAndUnresolvable` PreFilter status).
    AllNodes(Rejection),
    /// The pod cannot be scheduled at all (a PreFilter error).
    Error(String),
}

/// Raw and normalised scores aligned with the scored nodes; `Ok(None)` when
/// the plugin's PreScore skips it, `Err` when PreScore fails (C.5).
pub(crate) type ScoreOutcome = Result<Option<(Vec<i64>, Vec<i64>)>, String>;

/// The inputs of one scheduling cycle, shared by every plugin.
pub(crate) struct Cycle<'a> {
    /// The cluster snapshot (`NodeInfo`s and the placed pods' indexes).
    pub(crate) state: &'a ClusterState,
    /// The incoming pod, compiled, its own terms' namespaces resolved (C.8).
    pub(crate) pod: &'a PodInfo,
    /// The profile's plugin arguments.
    pub(crate) opts: &'a Options,
}

/// One kube-scheduler plugin: its PreFilter and Filter, and its PreScore,
/// Score and NormalizeScore. A plugin that has no filter (or no score)
/// keeps the default method, which skips.
pub(crate) trait SchedulerPlugin: Sync {
    /// The plugin's name.
    fn name(&self) -> Plugin;

    /// PreFilter: compute the plugin's state for the pod and return the
    /// Filter that reads it.
    fn pre_filter<'a>(&self, _cycle: &Cycle<'a>) -> PreFilter<'a> {
        PreFilter::Skip
    }

    /// PreScore, Score and NormalizeScore over `scored` (node indexes).
    fn score(&self, _cycle: &Cycle<'_>, _scored: &[u32]) -> ScoreOutcome {
        Ok(None)
    }
}

/// A scheduling profile: the filter plugins in their order, and the score
/// plugins in their order with their weights (C.21, C.31).
pub(crate) struct Profile {
    /// PreFilter and Filter run in this order; the first failure wins.
    pub(crate) filters: &'static [&'static dyn SchedulerPlugin],
    /// PreScore, Score and NormalizeScore, with the score weight.
    pub(crate) scores: &'static [(&'static dyn SchedulerPlugin, i64)],
}

/// Everything the evaluation of one pod produces, by node index.
pub(crate) struct CoreEval {
    /// Pod-level error (no node lists).
    pub(crate) error: Option<String>,
    /// A PreFilter failure applying to every node.
    pub(crate) all_nodes: Option<Rejection>,
    /// First failing plugin's rejection per node (None = feasible).
    pub(crate) reasons: Vec<Option<Rejection>>,
    /// Scored node indexes (empty when scoring did not run).
    pub(crate) scored: Vec<u32>,
    /// Every score plugin of the profile, in its order, over `scored`
    /// (empty when scoring did not run).
    pub(crate) scores: Vec<PluginEval>,
    /// Error raised while scoring (C.5).
    pub(crate) score_error: Option<String>,
}

/// One score plugin over the scored nodes.
pub(crate) struct PluginEval {
    /// The plugin.
    pub(crate) plugin: Plugin,
    /// Its weight in the profile.
    pub(crate) weight: i64,
    /// Raw and normalised scores aligned with `CoreEval::scored`; `None`
    /// when the plugin skipped (PreScore returned Skip).
    pub(crate) result: Option<(Vec<i64>, Vec<i64>)>,
}

/// A score computed node by node over `scored` with `f`.
pub(crate) fn per_node(
    state: &ClusterState,
    scored: &[u32],
    f: impl Fn(&NodeEntry) -> i64,
) -> Vec<i64> {
    scored
        .iter()
        .map(|i| f(&state.nodes[*i as usize]))
        .collect()
}

/// Filter and score `pod` (already compiled, not part of `state`) with
/// `profile`.
pub(crate) fn evaluate(
    state: &ClusterState,
    profile: &Profile,
    pod: &PodInfo,
    opts: &Options,
) -> CoreEval {
    evaluate_masked(state, profile, pod, opts, None)
}

/// [`evaluate`], except that a node with a rejection in `pre_rejected`
/// (aligned with the state's nodes) keeps that rejection without running
/// the filters: the nodes that a run with the nominated pods added
/// rejected (C.71).
pub(crate) fn evaluate_masked(
    state: &ClusterState,
    profile: &Profile,
    pod: &PodInfo,
    opts: &Options,
    pre_rejected: Option<&[Option<Rejection>]>,
) -> CoreEval {
    let n = state.nodes.len();
    let mut out = CoreEval {
        error: None,
        all_nodes: None,
        reasons: vec![None; n],
        scored: Vec::new(),
        scores: Vec::new(),
        score_error: None,
    };
    let mut resolved = pod.clone();
    resolved.resolve_namespaces(&state.namespaces);
    let cycle = Cycle {
        state,
        pod: &resolved,
        opts,
    };
    // PreFilter, in the profile's order; the first failure stops.
    let mut filters: Vec<NodeFilter<'_>> = Vec::with_capacity(profile.filters.len());
    for plugin in profile.filters {
        match plugin.pre_filter(&cycle) {
            PreFilter::Skip => {}
            PreFilter::Filter(f) => filters.push(f),
            PreFilter::AllNodes(r) => {
                out.all_nodes = Some(r);
                return out;
            }
            PreFilter::Error(e) => {
                out.error = Some(e);
                return out;
            }
        }
    }
    for (i, reason) in out.reasons.iter_mut().enumerate() {
        let node = i as u32;
        *reason = pre_rejected
            .and_then(|rejected| rejected.get(i).cloned().flatten())
            .or_else(|| filters.iter().find_map(|f| f(node)));
    }
    drop(filters);
    // A Filter error on any node fails the whole attempt; the first node's
    // in node order stands for kube-scheduler's first to report.
    if let Some(error) = out.reasons.iter().flatten().find_map(Rejection::as_error) {
        out.error = Some(error.to_owned());
        out.reasons = vec![None; n];
        return out;
    }
    let feasible = out.reasons.iter().filter(|r| r.is_none()).count();
    let scored: Vec<u32> = if opts.score_all_nodes {
        (0..n as u32).collect()
    } else if feasible > 1 {
        (0..n as u32)
            .filter(|i| out.reasons[*i as usize].is_none())
            .collect()
    } else {
        // kube-scheduler skips scoring when at most one node is feasible.
        Vec::new()
    };
    if scored.is_empty() {
        return out;
    }
    for (plugin, weight) in profile.scores {
        match plugin.score(&cycle, &scored) {
            Ok(result) => out.scores.push(PluginEval {
                plugin: plugin.name(),
                weight: *weight,
                result,
            }),
            // PreScore failures stop scheduling (C.5).
            Err(e) => {
                out.scores.clear();
                out.score_error = Some(e);
                break;
            }
        }
    }
    out.scored = scored;
    out
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
