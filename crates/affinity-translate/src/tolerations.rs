//! The tolerations of a data-mover pod (A2.27): the OS tolerations, and
//! the allowlisted ones Velero copies from the node-agent DaemonSet.

use k8s_openapi::api::core::v1::Toleration;
use kube_validation::taints;

use crate::os::NodeOs;

/// Toleration keys Velero copies from the node-agent DaemonSet onto its
/// data-mover, PodVolumeBackup and PodVolumeRestore pods, in Velero's order
/// (its third-party toleration allowlist, A2.27).
pub const INHERITED_TOLERATION_KEYS: [&str; 2] = [
    "kubernetes.azure.com/scalesetpriority",
    "CriticalAddonsOnly",
];

/// Name of the node-agent DaemonSet Velero reads for pods on nodes of
/// `os` (in Velero's namespace): `node-agent`, or `node-agent-windows`.
pub fn node_agent_daemon_set_name(os: NodeOs) -> &'static str {
    match os {
        NodeOs::Linux => "node-agent",
        NodeOs::Windows => "node-agent-windows",
    }
}

/// The tolerations Velero copies from the node-agent DaemonSet's pod
/// template (`node_agent`) onto a data-mover pod (A2.27).
///
/// For each key of [`INHERITED_TOLERATION_KEYS`], in that order, the first
/// toleration of `node_agent` whose key is exactly that key is copied
/// whole (operator, value, effect and `tolerationSeconds` as they are).
/// Keys are compared as they are written (case-sensitive); no other field
/// is looked at. Tolerations with other keys, and later ones with the same
/// key, are not copied.
pub fn inherited_tolerations(node_agent: &[Toleration]) -> Vec<Toleration> {
    INHERITED_TOLERATION_KEYS
        .iter()
        .filter_map(|key| {
            node_agent
                .iter()
                .find(|toleration| toleration.key.as_deref() == Some(*key))
                .cloned()
        })
        .collect()
}

/// The tolerations Velero adds for the node OS (A2.16): none on Linux,
/// `os=windows` for `NoSchedule` and `NoExecute` on Windows.
fn os_tolerations(os: NodeOs) -> Vec<Toleration> {
    match os {
        NodeOs::Linux => Vec::new(),
        NodeOs::Windows => [taints::NO_SCHEDULE, taints::NO_EXECUTE]
            .into_iter()
            .map(|effect| Toleration {
                key: Some("os".to_owned()),
                operator: Some("Equal".to_owned()),
                value: Some("windows".to_owned()),
                effect: Some(effect.to_owned()),
                toleration_seconds: None,
            })
            .collect(),
    }
}

/// A data-mover pod's tolerations, in Velero's order: those inherited from
/// the node-agent DaemonSet ([`inherited_tolerations`]), then the OS
/// tolerations (A2.16, A2.27). `node_agent` is the `spec.template.spec.tolerations`
/// of the DaemonSet named [`node_agent_daemon_set_name`] for `os`; pass
/// `&[]` when it is unknown (Velero then copies nothing).
pub fn data_mover_tolerations(os: NodeOs, node_agent: &[Toleration]) -> Vec<Toleration> {
    let mut tolerations = inherited_tolerations(node_agent);
    tolerations.extend(os_tolerations(os));
    tolerations
}
