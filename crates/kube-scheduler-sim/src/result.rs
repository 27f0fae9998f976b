//! Options, per-node reasons and the serialisable evaluation result.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// kube-scheduler plugin options that change results (InterPodAffinityArgs)
/// plus the library's own choices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// NodeAffinityArgs `addedAffinity` (C.47): a node affinity every pod
    /// must also satisfy (required terms filter with `node(s) didn't match
    /// scheduler-enforced node affinity`) and whose preferred terms add to
    /// every pod's NodeAffinity score. `None` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_affinity: Option<k8s_openapi::api::core::v1::NodeAffinity>,
    /// The Kubernetes release whose kube-scheduler is followed (C.73);
    /// default the newest supported.
    #[serde(default)]
    pub kubernetes_version: crate::KubernetesVersion,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
            score_all_nodes: false,
            merge_match_label_keys: true,
            added_affinity: None,
            kubernetes_version: crate::KubernetesVersion::LATEST,
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
    /// `addedAffinity` does not parse (C.47).
    #[error("addedAffinity: {0}")]
    AddedAffinity(String),
}

/// kube-scheduler filter plugins modelled here, in the default profile's
/// filter order (`getDefaultPlugins`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Plugin {
    /// NodeUnschedulable (cordoned nodes).
    NodeUnschedulable,
    /// NodeName (`spec.nodeName` of the incoming pod).
    NodeName,
    /// TaintToleration (`NoSchedule`/`NoExecute` taints).
    TaintToleration,
    /// NodeAffinity (nodeSelector and node affinity).
    NodeAffinity,
    /// NodePorts (host ports).
    NodePorts,
    /// NodeResourcesFit (requests against allocatable, pod count).
    NodeResourcesFit,
    /// VolumeRestrictions (inline disk conflicts, ReadWriteOncePod claims).
    VolumeRestrictions,
    /// NodeVolumeLimits (CSI attach limits).
    NodeVolumeLimits,
    /// VolumeBinding (claims, PV node affinity, delayed binding).
    VolumeBinding,
    /// VolumeZone (zone and region labels of bound PVs).
    VolumeZone,
    /// PodTopologySpread (DoNotSchedule constraints).
    PodTopologySpread,
    /// InterPodAffinity.
    InterPodAffinity,
    /// DynamicResources (DRA claims: allocation on the node, DR.1–DR.9).
    DynamicResources,
    /// NodeDeclaredFeatures (the node features a pod needs, from 1.36;
    /// C.76).
    NodeDeclaredFeatures,
    /// NodeResourcesBalancedAllocation (score only).
    NodeResourcesBalancedAllocation,
    /// ImageLocality (score only).
    ImageLocality,
}

/// kube-scheduler status code of a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Code {
    /// Preemption might help.
    Unschedulable,
    /// Preemption cannot help.
    UnschedulableAndUnresolvable,
}

/// kube-scheduler's reasons of a [`Rejection`]: one fixed message (no
/// allocation, the common case) or several built from the node; or a
/// scheduling error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reasons {
    /// One fixed message.
    One(&'static str),
    /// Several, or built at run time (a taint, a resource).
    Many(Vec<String>),
    /// A Filter's `Error` status: the whole scheduling attempt fails with
    /// this message, whatever the other nodes say.
    Error(String),
}

/// Why a node was rejected: the `Status` of the first failing plugin, with
/// its status code and reasons (crate-internal; [`Failure`] is the public
/// form). Each plugin builds its own from its reason strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    /// The plugin reporting it.
    pub(crate) plugin: Plugin,
    /// kube-scheduler's status code.
    pub(crate) code: Code,
    /// kube-scheduler's reasons (`Status.Reasons()`).
    pub(crate) reasons: Reasons,
}

impl Rejection {
    /// A rejection with one fixed reason.
    pub(crate) const fn new(plugin: Plugin, code: Code, reason: &'static str) -> Self {
        Self {
            plugin,
            code,
            reasons: Reasons::One(reason),
        }
    }

    /// A rejection with reasons built at run time.
    pub(crate) fn many(plugin: Plugin, code: Code, reasons: Vec<String>) -> Self {
        Self {
            plugin,
            code,
            reasons: Reasons::Many(reasons),
        }
    }

    /// A Filter's `Error` status (`running "<plugin>" filter plugin:
    /// <error>`), which stops the scheduling attempt.
    pub(crate) fn error(plugin: Plugin, error: String) -> Self {
        Self {
            plugin,
            code: Code::UnschedulableAndUnresolvable,
            reasons: Reasons::Error(format!("running \"{plugin:?}\" filter plugin: {error}")),
        }
    }

    /// The scheduling error this stands for, if it is one.
    pub(crate) fn as_error(&self) -> Option<&str> {
        match &self.reasons {
            Reasons::Error(e) => Some(e),
            _ => None,
        }
    }

    /// The first reason (the only one for most plugins).
    pub(crate) fn first(&self) -> &str {
        match &self.reasons {
            Reasons::One(r) => r,
            Reasons::Many(list) => list.first().map_or("", String::as_str),
            Reasons::Error(e) => e,
        }
    }

    /// kube-scheduler's reasons (`Status.Reasons()`), each counted in the
    /// FitError summary.
    pub(crate) fn reasons(&self) -> Vec<String> {
        match &self.reasons {
            Reasons::One(r) => vec![(*r).to_owned()],
            Reasons::Many(list) => list.clone(),
            Reasons::Error(e) => vec![e.clone()],
        }
    }

    /// As a serialisable failure.
    pub(crate) fn failure(&self) -> Failure {
        let reasons = self.reasons();
        Failure {
            plugin: self.plugin,
            code: self.code,
            message: reasons.join(", "),
            reasons,
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
    /// kube-scheduler's message (`Status.Message()`: the reasons joined
    /// with `, `).
    pub message: String,
    /// kube-scheduler's reasons (`Status.Reasons()`); NodeResourcesFit may
    /// give several (`Insufficient cpu`, `Insufficient memory`).
    pub reasons: Vec<String>,
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

/// Scores per plugin of the default profile (C.21), each raw and
/// normalised per scored node. The weighted sum is
/// [`ScheduleResult::totals`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scores {
    /// TaintToleration: intolerable `PreferNoSchedule` taints, reversed (C.41).
    pub taint_toleration: PluginScores,
    /// NodeAffinity (C.5).
    pub node_affinity: PluginScores,
    /// NodeResourcesFit, `LeastAllocated` (C.42).
    pub node_resources_fit: PluginScores,
    /// NodeResourcesBalancedAllocation (C.43).
    pub node_resources_balanced_allocation: PluginScores,
    /// PodTopologySpread (C.44).
    pub pod_topology_spread: PluginScores,
    /// InterPodAffinity (C.18–C.20).
    pub inter_pod_affinity: PluginScores,
    /// ImageLocality (C.45).
    pub image_locality: PluginScores,
    /// DynamicResources: the `firstAvailable` alternatives chosen (DR.8).
    #[serde(default)]
    pub dynamic_resources: PluginScores,
}

impl Scores {
    /// The plugin's scores, for the score plugins of [`crate::SCORE_WEIGHTS`].
    pub fn get(&self, plugin: Plugin) -> Option<&PluginScores> {
        Some(match plugin {
            Plugin::TaintToleration => &self.taint_toleration,
            Plugin::NodeAffinity => &self.node_affinity,
            Plugin::NodeResourcesFit => &self.node_resources_fit,
            Plugin::NodeResourcesBalancedAllocation => &self.node_resources_balanced_allocation,
            Plugin::PodTopologySpread => &self.pod_topology_spread,
            Plugin::InterPodAffinity => &self.inter_pod_affinity,
            Plugin::ImageLocality => &self.image_locality,
            Plugin::DynamicResources => &self.dynamic_resources,
            _ => return None,
        })
    }

    /// Mutable access, as [`Scores::get`].
    pub fn get_mut(&mut self, plugin: Plugin) -> Option<&mut PluginScores> {
        Some(match plugin {
            Plugin::TaintToleration => &mut self.taint_toleration,
            Plugin::NodeAffinity => &mut self.node_affinity,
            Plugin::NodeResourcesFit => &mut self.node_resources_fit,
            Plugin::NodeResourcesBalancedAllocation => &mut self.node_resources_balanced_allocation,
            Plugin::PodTopologySpread => &mut self.pod_topology_spread,
            Plugin::InterPodAffinity => &mut self.inter_pod_affinity,
            Plugin::ImageLocality => &mut self.image_locality,
            Plugin::DynamicResources => &mut self.dynamic_resources,
            _ => return None,
        })
    }
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
    /// Per scored node, the sum of every plugin's normalised score times
    /// its weight (C.21).
    pub totals: BTreeMap<String, i64>,
    /// The chosen node: highest total, ties to the first node in name
    /// order (C.22).
    pub selected: Option<String>,
    /// A pod-level error that stops scheduling although nodes may be
    /// feasible (an unparsable preferred node affinity term fails PreScore,
    /// C.5; an unparsable spread selector fails PreFilter).
    pub error: Option<String>,
    /// When no node is feasible, kube-scheduler's FitError text (C.31):
    /// `0/3 nodes are available: 1 Insufficient cpu, 1 node(s) were
    /// unschedulable.`
    pub summary: Option<String>,
    /// Why kube-scheduler would not try the pod at all (C.70); nothing
    /// else is filled in then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<crate::skip::SchedulingSkip>,
    /// The pod's `status.nominatedNodeName` when it passes every filter
    /// there: kube-scheduler takes that node without comparing scores
    /// (C.71), so it is `selected`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nominated_node: Option<String>,
}
