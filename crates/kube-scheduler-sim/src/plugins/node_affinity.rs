//! NodeAffinity (`pkg/scheduler/framework/plugins/nodeaffinity`): the
//! PreFilter's node-name shortcut (C.4) and the profile argument
//! `addedAffinity` (C.47), a node affinity the scheduler adds to every pod.
//! The pod's own nodeSelector and node affinity are matched by
//! [`kube_validation::node_selector`] (C.1–C.6), the workspace's one
//! implementation.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::NodeAffinity;
use kube_validation::node_selector::{NodeSelectorMatcher, NodeTerm, parse_preferred};

use crate::plugins::helper::default_normalize;
use crate::profile::{Cycle, PreFilter, SchedulerPlugin, ScoreOutcome, per_node};
use crate::result::{Code, Options, Plugin, Rejection};

/// kube-scheduler's reason for a node outside `addedAffinity`'s required
/// terms (`ErrReasonEnforced`).
pub const ENFORCED_REASON: &str = "node(s) didn't match scheduler-enforced node affinity";

/// `addedAffinity`, parsed strictly (`NewNodeSelector`,
/// `NewPreferredSchedulingTerms`): any unparsable term is an error.
#[derive(Debug, Clone, Default)]
pub struct AddedAffinity {
    /// Required terms; `None` when not set.
    pub required: Option<NodeSelectorMatcher>,
    /// Preferred terms with their weights (weight-0 and empty terms left out).
    pub preferred: Option<Vec<(i64, NodeTerm)>>,
}

impl AddedAffinity {
    /// Parse; the error names the field and every term that does not parse.
    pub fn compile(affinity: &NodeAffinity) -> Result<Self, String> {
        let mut out = Self::default();
        if let Some(required) = &affinity.required_during_scheduling_ignored_during_execution {
            let field = "requiredDuringSchedulingIgnoredDuringExecution";
            if required.node_selector_terms.is_empty() {
                return Err(format!(
                    "{field}.nodeSelectorTerms: Required value: must have at least one node selector term"
                ));
            }
            let matcher = NodeSelectorMatcher::parse(required);
            if let Some(e) = matcher.error() {
                return Err(format!("{field}: {e}"));
            }
            out.required = Some(matcher);
        }
        if let Some(preferred) = &affinity.preferred_during_scheduling_ignored_during_execution
            && !preferred.is_empty()
        {
            let terms = parse_preferred(preferred)
                .map_err(|e| format!("preferredDuringSchedulingIgnoredDuringExecution: {e}"))?;
            out.preferred = Some(terms);
        }
        Ok(out)
    }

    /// The Filter's first check: false when required terms are set and no
    /// term matches the node.
    pub fn fits(&self, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.required
            .as_ref()
            .is_none_or(|m| m.matches(node_name, labels))
    }

    /// The preferred terms' contribution to a node's raw score.
    pub fn score(&self, node_name: &str, labels: &BTreeMap<String, String>) -> i64 {
        self.preferred
            .iter()
            .flatten()
            .filter(|(_, t)| t.matches(node_name, labels))
            .map(|(w, _)| *w)
            .sum()
    }
}

/// kube-scheduler's reason for a node the pod's nodeSelector or required
/// node affinity excludes (`ErrReasonPod`, C.6).
pub const POD_REASON: &str = "node(s) didn't match Pod's node affinity/selector";

/// kube-scheduler's reason when every required term pins `metadata.name`
/// and no name satisfies all pins of a term (`errReasonConflict`, C.4).
pub const CONFLICT_REASON: &str = "pod affinity terms conflict";

/// The Filter's status for a node the pod's own affinity excludes.
const POD_REJECTION: Rejection = Rejection::new(
    Plugin::NodeAffinity,
    Code::UnschedulableAndUnresolvable,
    POD_REASON,
);

/// The Filter's status for a node `addedAffinity` excludes (C.47).
const ENFORCED_REJECTION: Rejection = Rejection::new(
    Plugin::NodeAffinity,
    Code::UnschedulableAndUnresolvable,
    ENFORCED_REASON,
);

/// PreFilter's status when the name pins conflict (C.4).
const CONFLICT_REJECTION: Rejection = Rejection::new(
    Plugin::NodeAffinity,
    Code::UnschedulableAndUnresolvable,
    CONFLICT_REASON,
);

/// `addedAffinity` of the options; `Options::validate` has parsed it.
fn added(opts: &Options) -> AddedAffinity {
    opts.added_affinity
        .as_ref()
        .and_then(|a| AddedAffinity::compile(a).ok())
        .unwrap_or_default()
}

/// The plugin in a profile: PreFilter (C.4), Filter (C.1–C.3, C.6, C.47)
/// and Score (C.5).
pub(crate) struct NodeAffinityPlugin;

impl SchedulerPlugin for NodeAffinityPlugin {
    fn name(&self) -> Plugin {
        Plugin::NodeAffinity
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        let (state, pod) = (cycle.state, cycle.pod);
        if pod
            .node_name_shortcut
            .as_ref()
            .is_some_and(|s| s.is_empty())
        {
            return PreFilter::AllNodes(CONFLICT_REJECTION);
        }
        let unconstrained = pod.required_node.is_unconstrained();
        if unconstrained && cycle.opts.added_affinity.is_none() {
            return PreFilter::Skip;
        }
        let added = added(cycle.opts);
        PreFilter::Filter(Box::new(move |node| {
            let e = &state.nodes[node as usize];
            if !added.fits(&e.name, &e.labels) {
                return Some(ENFORCED_REJECTION);
            }
            (!unconstrained && !pod.required_node.matches(&e.name, &e.labels))
                .then_some(POD_REJECTION)
        }))
    }

    fn score(&self, cycle: &Cycle<'_>, scored: &[u32]) -> ScoreOutcome {
        let pod = cycle.pod;
        let added = added(cycle.opts);
        let terms = match &pod.preferred_node {
            Some(Err(e)) => return Err(format!("running PreScore plugin \"NodeAffinity\": {e}")),
            Some(Ok(terms)) => terms.as_slice(),
            // No preferred list and no added preferred terms: PreScore
            // skips the plugin (C.5, C.47).
            None if added.preferred.is_some() => &[][..],
            None => return Ok(None),
        };
        // A list, even of weight-0 terms only: every node is scored.
        let raw = per_node(cycle.state, scored, |e| {
            added.score(&e.name, &e.labels)
                + terms
                    .iter()
                    .filter(|(_, t)| t.matches(&e.name, &e.labels))
                    .map(|(w, _)| *w)
                    .sum::<i64>()
        });
        let normalized = default_normalize(&raw, false);
        Ok(Some((raw, normalized)))
    }
}
