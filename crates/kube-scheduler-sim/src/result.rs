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
}

impl Default for Options {
    fn default() -> Self {
        Self {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
            score_all_nodes: false,
            merge_match_label_keys: true,
            added_affinity: None,
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

impl Options {
    /// Check ranges as kube-scheduler's config validation does.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if !(0..=100).contains(&self.hard_pod_affinity_weight) {
            return Err(OptionsError::HardPodAffinityWeightOutOfRange(
                self.hard_pod_affinity_weight,
            ));
        }
        if let Some(added) = &self.added_affinity {
            crate::plugins::node_affinity::AddedAffinity::compile(added)
                .map_err(OptionsError::AddedAffinity)?;
        }
        Ok(())
    }
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

/// Why a node was rejected: the first failing plugin, kube-scheduler's
/// message and code (C.6, C.15, C.23, C.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// A cordoned node and no toleration of the unschedulable taint.
    NodeUnschedulable,
    /// The pod's `spec.nodeName` names another node.
    NodeNameMismatch,
    /// A requested host port is in use on the node.
    NodePortsConflict,
    /// C.6.
    NodeAffinityMismatch,
    /// C.47: the node does not match NodeAffinityArgs `addedAffinity`.
    NodeAffinityEnforced,
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
    /// C.50: an inline disk conflicts with one on the node.
    DiskConflict,
    /// C.50: a ReadWriteOncePod claim is in use.
    ReadWriteOncePodConflict,
    /// C.51: a CSI driver's attach limit would be exceeded.
    MaxVolumeCount,
    /// C.52: a bound PV's node affinity does not match.
    VolumeNodeAffinityConflict,
    /// C.52: a delayed claim finds no volume and cannot be provisioned.
    VolumeBindConflict,
    /// C.52: a bound claim's PV does not exist.
    VolumePvNotExist,
    /// C.53: a bound PV's zone or region does not match.
    VolumeZoneConflict,
}

impl Reason {
    /// kube-scheduler's message.
    pub fn message(self) -> &'static str {
        match self {
            Reason::NodeUnschedulable => crate::plugins::node_unschedulable::REASON,
            Reason::NodeNameMismatch => crate::plugins::node_name::REASON,
            Reason::NodePortsConflict => crate::plugins::node_ports::REASON,
            Reason::NodeAffinityMismatch => "node(s) didn't match Pod's node affinity/selector",
            Reason::NodeAffinityEnforced => crate::plugins::node_affinity::ENFORCED_REASON,
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
            Reason::DiskConflict => crate::plugins::volume_restrictions::DISK_CONFLICT,
            Reason::ReadWriteOncePodConflict => {
                crate::plugins::volume_restrictions::READ_WRITE_ONCE_POD_CONFLICT
            }
            Reason::MaxVolumeCount => crate::plugins::node_volume_limits::REASON,
            Reason::VolumeNodeAffinityConflict => crate::plugins::volume_binding::NODE_CONFLICT,
            Reason::VolumeBindConflict => crate::plugins::volume_binding::BIND_CONFLICT,
            Reason::VolumePvNotExist => crate::plugins::volume_binding::PV_NOT_EXIST,
            Reason::VolumeZoneConflict => crate::plugins::volume_zone::REASON,
        }
    }

    /// The plugin reporting it.
    pub fn plugin(self) -> Plugin {
        match self {
            Reason::NodeUnschedulable => Plugin::NodeUnschedulable,
            Reason::NodeNameMismatch => Plugin::NodeName,
            Reason::NodePortsConflict => Plugin::NodePorts,
            Reason::NodeAffinityMismatch
            | Reason::NodeAffinityEnforced
            | Reason::NodeAffinityTermsConflict => Plugin::NodeAffinity,
            Reason::SpreadMissingLabel | Reason::SpreadSkew => Plugin::PodTopologySpread,
            Reason::DiskConflict | Reason::ReadWriteOncePodConflict => Plugin::VolumeRestrictions,
            Reason::MaxVolumeCount => Plugin::NodeVolumeLimits,
            Reason::VolumeNodeAffinityConflict
            | Reason::VolumeBindConflict
            | Reason::VolumePvNotExist => Plugin::VolumeBinding,
            Reason::VolumeZoneConflict => Plugin::VolumeZone,
            _ => Plugin::InterPodAffinity,
        }
    }

    /// kube-scheduler's status code.
    pub fn code(self) -> Code {
        match self {
            Reason::AntiAffinityRules
            | Reason::ExistingAntiAffinityRules
            | Reason::SpreadSkew
            | Reason::NodePortsConflict
            | Reason::DiskConflict
            | Reason::ReadWriteOncePodConflict
            | Reason::MaxVolumeCount => Code::Unschedulable,
            _ => Code::UnschedulableAndUnresolvable,
        }
    }

    /// As a serialisable failure.
    pub fn failure(self) -> Failure {
        Failure {
            plugin: self.plugin(),
            code: self.code(),
            message: self.message().to_owned(),
            reasons: vec![self.message().to_owned()],
        }
    }
}

/// Why a node was rejected, with the details kube-scheduler puts into its
/// reasons (crate-internal; [`Failure`] is the public form).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Rejection {
    /// A fixed reason.
    Fixed(Reason),
    /// TaintToleration: the first untolerated `NoSchedule`/`NoExecute` taint.
    Taint(k8s_openapi::api::core::v1::Taint),
    /// NodeResourcesFit: every insufficient resource, in upstream's order.
    Resources(Vec<crate::plugins::node_resources_fit::Insufficient>),
    /// VolumeBinding: every reason, in upstream's order (C.52).
    Volumes(Vec<Reason>),
}

impl Rejection {
    /// The plugin reporting it.
    pub(crate) fn plugin(&self) -> Plugin {
        match self {
            Rejection::Fixed(r) => r.plugin(),
            Rejection::Taint(_) => Plugin::TaintToleration,
            Rejection::Resources(_) => Plugin::NodeResourcesFit,
            Rejection::Volumes(_) => Plugin::VolumeBinding,
        }
    }

    /// kube-scheduler's status code.
    pub(crate) fn code(&self) -> Code {
        match self {
            Rejection::Fixed(r) => r.code(),
            Rejection::Taint(_) => Code::UnschedulableAndUnresolvable,
            Rejection::Resources(list) => crate::plugins::node_resources_fit::code(list),
            Rejection::Volumes(_) => Code::UnschedulableAndUnresolvable,
        }
    }

    /// kube-scheduler's reasons (`Status.Reasons()`), each counted in the
    /// FitError summary.
    pub(crate) fn reasons(&self) -> Vec<String> {
        match self {
            Rejection::Fixed(r) => vec![r.message().to_owned()],
            Rejection::Taint(t) => vec![crate::plugins::taint_toleration::reason(t)],
            Rejection::Resources(list) => list.iter().map(|i| i.reason()).collect(),
            Rejection::Volumes(list) => list.iter().map(|r| r.message().to_owned()).collect(),
        }
    }

    /// As a serialisable failure.
    pub(crate) fn failure(&self) -> Failure {
        let reasons = self.reasons();
        Failure {
            plugin: self.plugin(),
            code: self.code(),
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
}

impl Scores {
    /// The plugin's scores, for the score plugins of [`SCORE_WEIGHTS`].
    pub fn get(&self, plugin: Plugin) -> Option<&PluginScores> {
        Some(match plugin {
            Plugin::TaintToleration => &self.taint_toleration,
            Plugin::NodeAffinity => &self.node_affinity,
            Plugin::NodeResourcesFit => &self.node_resources_fit,
            Plugin::NodeResourcesBalancedAllocation => &self.node_resources_balanced_allocation,
            Plugin::PodTopologySpread => &self.pod_topology_spread,
            Plugin::InterPodAffinity => &self.inter_pod_affinity,
            Plugin::ImageLocality => &self.image_locality,
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
            _ => return None,
        })
    }
}

/// The default profile's score plugins and their weights (C.21), in the
/// profile's order.
pub const SCORE_WEIGHTS: [(Plugin, i64); 7] = [
    (Plugin::TaintToleration, 3),
    (Plugin::NodeAffinity, 2),
    (Plugin::NodeResourcesFit, 1),
    (Plugin::PodTopologySpread, 2),
    (Plugin::InterPodAffinity, 2),
    (Plugin::NodeResourcesBalancedAllocation, 1),
    (Plugin::ImageLocality, 1),
];

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
}
