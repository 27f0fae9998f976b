//! The fixed reasons of the default profile's plugins, named: a catalogue
//! over the plugins' own reason strings and statuses (each plugin module
//! owns its strings; this module only names them for callers that match on
//! a reason, such as `diagnose` and tests).

use crate::result::{Code, Failure, Plugin, Rejection};

use super::{
    inter_pod_affinity, node_affinity, node_declared_features, node_name, node_ports,
    node_unschedulable, node_volume_limits, pod_topology_spread, volume_binding,
    volume_restrictions, volume_zone,
};

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
    /// C.76: the node does not declare a feature the pod needs.
    NodeDeclaredFeaturesUnmatched,
}

impl Reason {
    /// Every reason, in the default profile's filter order.
    pub const ALL: [Reason; 19] = [
        Reason::NodeUnschedulable,
        Reason::NodeNameMismatch,
        Reason::NodeAffinityEnforced,
        Reason::NodeAffinityMismatch,
        Reason::NodeAffinityTermsConflict,
        Reason::NodePortsConflict,
        Reason::DiskConflict,
        Reason::ReadWriteOncePodConflict,
        Reason::MaxVolumeCount,
        Reason::VolumeNodeAffinityConflict,
        Reason::VolumeBindConflict,
        Reason::VolumePvNotExist,
        Reason::VolumeZoneConflict,
        Reason::SpreadMissingLabel,
        Reason::SpreadSkew,
        Reason::AffinityRules,
        Reason::AntiAffinityRules,
        Reason::ExistingAntiAffinityRules,
        Reason::NodeDeclaredFeaturesUnmatched,
    ];

    /// kube-scheduler's message, the reporting plugin's own string.
    pub fn message(self) -> &'static str {
        match self {
            Reason::NodeUnschedulable => node_unschedulable::REASON,
            Reason::NodeNameMismatch => node_name::REASON,
            Reason::NodePortsConflict => node_ports::REASON,
            Reason::NodeAffinityMismatch => node_affinity::POD_REASON,
            Reason::NodeAffinityEnforced => node_affinity::ENFORCED_REASON,
            Reason::NodeAffinityTermsConflict => node_affinity::CONFLICT_REASON,
            Reason::SpreadMissingLabel => pod_topology_spread::MISSING_LABEL_REASON,
            Reason::SpreadSkew => pod_topology_spread::SKEW_REASON,
            Reason::AffinityRules => inter_pod_affinity::AFFINITY_REASON,
            Reason::AntiAffinityRules => inter_pod_affinity::ANTI_AFFINITY_REASON,
            Reason::ExistingAntiAffinityRules => inter_pod_affinity::EXISTING_ANTI_AFFINITY_REASON,
            Reason::DiskConflict => volume_restrictions::DISK_CONFLICT,
            Reason::ReadWriteOncePodConflict => volume_restrictions::READ_WRITE_ONCE_POD_CONFLICT,
            Reason::MaxVolumeCount => node_volume_limits::REASON,
            Reason::VolumeNodeAffinityConflict => volume_binding::NODE_CONFLICT,
            Reason::VolumeBindConflict => volume_binding::BIND_CONFLICT,
            Reason::VolumePvNotExist => volume_binding::PV_NOT_EXIST,
            Reason::VolumeZoneConflict => volume_zone::REASON,
            Reason::NodeDeclaredFeaturesUnmatched => node_declared_features::REASON,
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
            Reason::NodeDeclaredFeaturesUnmatched => Plugin::NodeDeclaredFeatures,
            Reason::AffinityRules
            | Reason::AntiAffinityRules
            | Reason::ExistingAntiAffinityRules => Plugin::InterPodAffinity,
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

    /// The named reason of a rejection's first reason, if it has one (a
    /// taint or a resource shortfall has none).
    pub(crate) fn of(rejection: &Rejection) -> Option<Reason> {
        let first = rejection.first();
        Reason::ALL
            .into_iter()
            .find(|r| r.plugin() == rejection.plugin && r.message() == first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_found_from_its_failure() {
        for r in Reason::ALL {
            let rejection = Rejection::new(r.plugin(), r.code(), r.message());
            assert_eq!(Reason::of(&rejection), Some(r));
            assert_eq!(rejection.failure(), r.failure());
        }
    }
}
