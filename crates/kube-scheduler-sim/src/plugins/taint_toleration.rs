//! TaintToleration (C.27, `pkg/scheduler/framework/plugins/tainttoleration`),
//! Filter part: a node is rejected by the first of its `NoSchedule` /
//! `NoExecute` taints that no toleration of the pod tolerates
//! (`FindMatchingUntoleratedTaint` with `DoNotScheduleTaintsFilterFunc`).
//! `PreferNoSchedule` taints only score. Toleration matching is
//! [`kube_validation::taints`].

use k8s_openapi::api::core::v1::{Taint, Toleration};

use kube_validation::taints::{PREFER_NO_SCHEDULE, first_untolerated, tolerated};

use crate::plugins::helper::default_normalize;
use crate::profile::{Cycle, PreFilter, SchedulerPlugin, ScoreOutcome, per_node};
use crate::result::{Code, Plugin, Rejection};

/// The Filter: the first untolerated `NoSchedule`/`NoExecute` taint, `None`
/// when the pod tolerates them all.
pub fn filter<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    first_untolerated(taints, tolerations)
}

/// kube-scheduler's reason for an untolerated taint (C.27). It names no
/// taint: taint keys and values may be sensitive, so kube-scheduler only
/// logs which taint it was (`diagnose` names it).
pub const REASON: &str = "node(s) had untolerated taint(s)";

/// The Score (C.41, `countIntolerableTaintsPreferNoSchedule`): the node's
/// `PreferNoSchedule` taints that no toleration of the pod with an empty or
/// `PreferNoSchedule` effect tolerates. Normalised reversed
/// ([`crate::plugins::helper::default_normalize`] with `reverse`): fewer
/// intolerable taints score higher.
pub fn score(taints: &[Taint], tolerations: &[Toleration]) -> i64 {
    let prefer: Vec<Toleration> = tolerations
        .iter()
        .filter(|t| {
            t.effect
                .as_deref()
                .is_none_or(|e| e.is_empty() || e == PREFER_NO_SCHEDULE)
        })
        .cloned()
        .collect();
    taints
        .iter()
        .filter(|t| t.effect == PREFER_NO_SCHEDULE && !tolerated(&prefer, t))
        .count() as i64
}

/// The plugin in a profile: Filter and Score (reversed, C.41).
pub(crate) struct TaintToleration;

impl SchedulerPlugin for TaintToleration {
    fn name(&self) -> Plugin {
        Plugin::TaintToleration
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        let (state, pod) = (cycle.state, cycle.pod);
        PreFilter::Filter(Box::new(move |node| {
            filter(&state.nodes[node as usize].taints, &pod.tolerations).map(|_| {
                Rejection::new(
                    Plugin::TaintToleration,
                    Code::UnschedulableAndUnresolvable,
                    REASON,
                )
            })
        }))
    }

    fn score(&self, cycle: &Cycle<'_>, scored: &[u32]) -> ScoreOutcome {
        let pod = cycle.pod;
        let raw = per_node(cycle.state, scored, |e| score(&e.taints, &pod.tolerations));
        let normalized = default_normalize(&raw, true);
        Ok(Some((raw, normalized)))
    }
}
