//! Options, per-node reasons and the serialisable evaluation result.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// kube-scheduler plugin options that change results (InterPodAffinityArgs)
/// plus the library's own choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Options {
    /// `hardPodAffinityWeight` (0–100, default 1): score added for each
    /// existing pod's *required* affinity term the incoming pod matches (C.18).
    pub hard_pod_affinity_weight: i64,
    /// `ignorePreferredTermsOfExistingPods` (default false, C.20).
    pub ignore_preferred_terms_of_existing_pods: bool,
    /// Score every node, not only feasible ones (kube-scheduler scores only
    /// feasible nodes; normalisation runs over the scored set).
    pub score_all_nodes: bool,
    /// Apply the API server's matchLabelKeys merge (C.9) to every pod given
    /// (idempotent; default true). Used by [`crate::schedule`],
    /// [`crate::schedule_all`]; a
    /// [`crate::ClusterState`] uses the flag it was built with.
    pub merge_match_label_keys: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
            score_all_nodes: false,
            merge_match_label_keys: true,
        }
    }
}

/// Why [`Options`] are rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// `hardPodAffinityWeight` outside 0–100.
    #[error("hardPodAffinityWeight must be in the range 0-100, got {0}")]
    HardPodAffinityWeightOutOfRange(i64),
}

impl Options {
    /// Check ranges as kube-scheduler's config validation does.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if !(0..=100).contains(&self.hard_pod_affinity_weight) {
            return Err(OptionsError::HardPodAffinityWeightOutOfRange(
                self.hard_pod_affinity_weight,
            ));
        }
        Ok(())
    }
}

/// kube-scheduler filter plugins modelled here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Plugin {
    /// NodeAffinity (nodeSelector and node affinity).
    NodeAffinity,
    /// PodTopologySpread (DoNotSchedule constraints).
    PodTopologySpread,
    /// InterPodAffinity.
    InterPodAffinity,
}

/// kube-scheduler status code of a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Code {
    /// Preemption might help.
    Unschedulable,
    /// Preemption cannot help.
    UnschedulableAndUnresolvable,
}

/// Why a node was rejected: the first failing plugin, kube-scheduler's
/// message and code (C.6, C.15, C.23, C.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// C.6.
    NodeAffinityMismatch,
    /// C.4: every term pins `metadata.name In` and the union is empty.
    NodeAffinityTermsConflict,
    /// C.23: node lacks a constraint's topologyKey.
    SpreadMissingLabel,
    /// C.23: skew would exceed maxSkew.
    SpreadSkew,
    /// C.11/C.12.
    AffinityRules,
    /// C.13.
    AntiAffinityRules,
    /// C.14.
    ExistingAntiAffinityRules,
}

impl Reason {
    /// kube-scheduler's message.
    pub fn message(self) -> &'static str {
        match self {
            Reason::NodeAffinityMismatch => "node(s) didn't match Pod's node affinity/selector",
            Reason::NodeAffinityTermsConflict => "pod affinity terms conflict",
            Reason::SpreadMissingLabel => {
                "node(s) didn't match pod topology spread constraints (missing required label)"
            }
            Reason::SpreadSkew => "node(s) didn't match pod topology spread constraints",
            Reason::AffinityRules => "node(s) didn't match pod affinity rules",
            Reason::AntiAffinityRules => "node(s) didn't match pod anti-affinity rules",
            Reason::ExistingAntiAffinityRules => {
                "node(s) didn't satisfy existing pods anti-affinity rules"
            }
        }
    }

    /// The plugin reporting it.
    pub fn plugin(self) -> Plugin {
        match self {
            Reason::NodeAffinityMismatch | Reason::NodeAffinityTermsConflict => {
                Plugin::NodeAffinity
            }
            Reason::SpreadMissingLabel | Reason::SpreadSkew => Plugin::PodTopologySpread,
            _ => Plugin::InterPodAffinity,
        }
    }

    /// kube-scheduler's status code.
    pub fn code(self) -> Code {
        match self {
            Reason::AntiAffinityRules | Reason::ExistingAntiAffinityRules | Reason::SpreadSkew => {
                Code::Unschedulable
            }
            _ => Code::UnschedulableAndUnresolvable,
        }
    }

    /// As a serialisable failure.
    pub fn failure(self) -> Failure {
        Failure {
            plugin: self.plugin(),
            code: self.code(),
            message: self.message().to_owned(),
        }
    }
}

/// A rejected node in a [`ScheduleResult`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    /// First failing plugin.
    pub plugin: Plugin,
    /// Status code.
    pub code: Code,
    /// kube-scheduler's message.
    pub message: String,
}

/// Scores of one plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginScores {
    /// Raw score per scored node.
    pub raw: BTreeMap<String, i64>,
    /// Normalised score (0–100) per scored node.
    pub normalized: BTreeMap<String, i64>,
    /// The plugin skipped scoring (all zero).
    pub skipped: bool,
}

/// Scores per plugin, and the weighted total used for selection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scores {
    /// NodeAffinity (C.5).
    pub node_affinity: PluginScores,
    /// InterPodAffinity (C.18–C.20).
    pub inter_pod_affinity: PluginScores,
    /// `2 × nodeAffinity + 2 × interPodAffinity` normalised (default plugin
    /// weights, C.21).
    pub total: BTreeMap<String, i64>,
}

/// Filter and score of one pod over the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleResult {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// Nodes passing every filter, by name.
    pub feasible: Vec<String>,
    /// Rejected nodes with the first failing plugin's reason.
    pub unschedulable: BTreeMap<String, Failure>,
    /// Scores of the scored nodes (feasible, or all with `scoreAllNodes`).
    pub scores: Scores,
    /// The chosen node: highest total, ties to the smallest node name.
    pub selected: Option<String>,
    /// A pod-level error that stops scheduling although nodes may be
    /// feasible (an unparsable preferred node affinity term fails PreScore,
    /// C.5; an unparsable spread selector fails PreFilter).
    pub error: Option<String>,
}
