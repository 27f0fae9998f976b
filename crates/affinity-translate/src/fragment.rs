//! The scheduling fragment of a data-mover pod (documented on [`PodFragment`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, NodeSelector, NodeSelectorRequirement, PersistentVolume, PersistentVolumeClaim,
    Toleration,
};
use k8s_openapi::api::storage::v1::{StorageClass, VolumeAttachment};
use serde::{Deserialize, Serialize};

use crate::config::NodeAgentConfig;
pub use crate::os::NodeOs;
use crate::tolerations::data_mover_tolerations;
use crate::translate::{select_load_affinity, selector_requirements, to_affinity};

/// Node label holding the node's OS.
pub const OS_LABEL: &str = "kubernetes.io/os";
/// Node label holding the node's name.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// Backup PVC annotation that enables the vSphere fast-provisioning rule (A2.16).
pub const FAST_PROVISIONING_ANNOTATION: &str = "csi.vsphere.volume/fast-provisioning";
/// PVC annotation naming the node a WaitForFirstConsumer volume goes to (A2.20).
pub const SELECTED_NODE_ANNOTATION: &str = "volume.kubernetes.io/selected-node";

/// Which data-mover pod the fragment is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExposeKind {
    /// A DataUpload backup pod.
    Backup,
    /// A DataDownload restore pod.
    Restore,
}

/// Where the requirements of the generated terms come from, so that a
/// diagnosis can name them (not serialised).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Whether the terms start with a volume topology's expressions, and how
    /// many each term has.
    pub(crate) topology: Option<Vec<usize>>,
    /// Requirements from the selected load-affinity entry.
    pub(crate) load_affinity: usize,
    /// The OS requirement (always 1 when a layout is known).
    pub(crate) os: usize,
    /// The fast-provisioning hostname requirement (0 or 1).
    pub(crate) fast_provisioning: usize,
}

/// The scheduling part of a data-mover pod spec, and how it was chosen.
///
/// The scheduling fragment of a data-mover pod: backups (A2.13–A2.17) and
/// restores (A2.20–A2.23). The configuration is only read, never changed
/// (Velero's A2.18 bug appends to its cached entry on every exposure).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodFragment {
    /// Backup or restore pod.
    pub kind: ExposeKind,
    /// OS of the target nodes.
    pub node_os: NodeOs,
    /// Storage class used to select the load-affinity entry (for backups the
    /// backupPVC class after the remap of A2.14).
    pub storage_class: String,
    /// Index of the selected `loadAffinity` entry, if any.
    pub load_affinity_index: Option<usize>,
    /// The pod's affinity (required node affinity only).
    pub affinity: Option<Affinity>,
    /// The pod's `nodeSelector` (restores pinned to the selected node).
    pub node_selector: Option<BTreeMap<String, String>>,
    /// The pod's tolerations: those Velero copies from the node-agent
    /// DaemonSet, then the OS tolerations (A2.16, A2.27). The fragment
    /// functions know no DaemonSet and give the OS tolerations only; see
    /// [`PodFragment::with_node_agent_tolerations`].
    pub tolerations: Vec<Toleration>,
    /// Whether the volume's StorageClass binds on first consumer and that
    /// matters here: for backups the topology of the source PV is used; for
    /// restores Velero waits for the PVC's selected node before creating the
    /// pod (no `nodeSelector` yet means it is still waiting).
    pub waiting_for_first_consumer: bool,
    #[serde(skip)]
    pub(crate) layout: Layout,
}

impl PodFragment {
    /// The fragment with the tolerations Velero gives the pod when the
    /// node-agent DaemonSet's pod template has `node_agent` tolerations:
    /// the allowlisted ones first, then the OS tolerations (A2.27,
    /// [`data_mover_tolerations`]). Replaces the tolerations, so calling it
    /// twice is the same as calling it once with the second list.
    #[must_use]
    pub fn with_node_agent_tolerations(mut self, node_agent: &[Toleration]) -> Self {
        self.tolerations = data_mover_tolerations(self.node_os, node_agent);
        self
    }
}

/// What a backup exposure needs to know about the source volume.
#[derive(Clone, Copy, Debug, Default)]
pub struct BackupVolume<'a> {
    /// The source PVC's storage class (A2.13: must not be empty).
    pub source_storage_class: &'a str,
    /// Whether that class's `volumeBindingMode` is `WaitForFirstConsumer`.
    pub wait_for_first_consumer: bool,
    /// The source PV's `spec.nodeAffinity.required`.
    pub pv_node_affinity: Option<&'a NodeSelector>,
    /// Nodes with a VolumeAttachment of the source PV.
    pub attached_nodes: &'a [String],
}

/// What a restore exposure needs to know about the target volume.
#[derive(Clone, Copy, Debug, Default)]
pub struct RestoreVolume<'a> {
    /// The target PVC's `storageClassName` (`""` when unset).
    pub storage_class: &'a str,
    /// Whether that class's `volumeBindingMode` is `WaitForFirstConsumer`.
    pub wait_for_first_consumer: bool,
    /// The PVC's `volume.kubernetes.io/selected-node` annotation.
    pub selected_node: Option<&'a str>,
}

fn os_requirement(os: NodeOs) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: OS_LABEL.to_owned(),
        operator: match os {
            NodeOs::Linux => "NotIn",
            NodeOs::Windows => "In",
        }
        .to_owned(),
        values: Some(vec!["windows".to_owned()]),
    }
}

/// The fragment of a data-mover backup pod (A2.13–A2.17).
///
/// The backupPVC entry of the source class may remap the class used to
/// select the load-affinity entry (A2.14, A2.15); the entry's requirements
/// are followed by the OS requirement and, if the backupPVC carries the
/// fast-provisioning annotation and the source PV is attached somewhere,
/// `kubernetes.io/hostname NotIn [attached nodes, sorted]` (A2.16). The
/// volume topology is the source PV's node affinity when the source class
/// binds on first consumer (A2.13).
pub fn backup_fragment(
    config: &NodeAgentConfig,
    volume: &BackupVolume<'_>,
    os: NodeOs,
) -> PodFragment {
    let backup_pvc = config
        .backup_pvc
        .as_ref()
        .and_then(|b| b.get(volume.source_storage_class));
    let storage_class = backup_pvc
        .and_then(|b| b.storage_class.as_deref())
        .filter(|c| !c.is_empty())
        .unwrap_or(volume.source_storage_class);
    let selected = select_load_affinity(
        config.load_affinity.as_deref().unwrap_or_default(),
        storage_class,
    );
    let mut requirements = selected
        .and_then(|(_, entry)| entry.node_selector.as_ref())
        .map(selector_requirements)
        .unwrap_or_default();
    let user = requirements.len();
    requirements.push(os_requirement(os));
    let fast_provisioning = backup_pvc
        .and_then(|b| b.annotations.as_ref())
        .is_some_and(|a| a.contains_key(FAST_PROVISIONING_ANNOTATION));
    let mut attached: Vec<String> = volume.attached_nodes.to_vec();
    attached.sort();
    attached.dedup();
    let hostname = fast_provisioning && !attached.is_empty();
    if hostname {
        requirements.push(NodeSelectorRequirement {
            key: HOSTNAME_LABEL.to_owned(),
            operator: "NotIn".to_owned(),
            values: Some(attached),
        });
    }
    let topology = volume
        .pv_node_affinity
        .filter(|_| volume.wait_for_first_consumer);
    PodFragment {
        kind: ExposeKind::Backup,
        node_os: os,
        storage_class: storage_class.to_owned(),
        load_affinity_index: selected.map(|(i, _)| i),
        affinity: to_affinity(&requirements, topology),
        node_selector: None,
        tolerations: data_mover_tolerations(os, &[]),
        waiting_for_first_consumer: volume.wait_for_first_consumer,
        layout: Layout {
            topology: topology.map(|t| {
                t.node_selector_terms
                    .iter()
                    .map(|term| term.match_expressions.as_ref().map_or(0, Vec::len))
                    .collect()
            }),
            load_affinity: user,
            os: 1,
            fast_provisioning: usize::from(hostname),
        },
    }
}

/// The fragment of a data-mover restore pod (A2.20–A2.23).
///
/// Unless `restorePVC.ignoreDelayBinding` is set, a WaitForFirstConsumer
/// class makes Velero wait for the PVC's selected node; once known, the
/// load-affinity entry is discarded and the pod is pinned with
/// `nodeSelector: {kubernetes.io/hostname: <node>}`. Otherwise the entry for
/// the PVC's class (no remap) is used. The OS requirement is appended; no
/// volume topology for restores.
pub fn restore_fragment(
    config: &NodeAgentConfig,
    volume: &RestoreVolume<'_>,
    os: NodeOs,
) -> PodFragment {
    let ignore_delay_binding = config
        .restore_pvc
        .as_ref()
        .and_then(|r| r.ignore_delay_binding)
        .unwrap_or(false);
    let waiting =
        !ignore_delay_binding && !volume.storage_class.is_empty() && volume.wait_for_first_consumer;
    let selected_node = volume.selected_node.filter(|n| waiting && !n.is_empty());
    let selected = if waiting {
        None
    } else {
        select_load_affinity(
            config.load_affinity.as_deref().unwrap_or_default(),
            volume.storage_class,
        )
    };
    let mut requirements = selected
        .and_then(|(_, entry)| entry.node_selector.as_ref())
        .map(selector_requirements)
        .unwrap_or_default();
    let user = requirements.len();
    requirements.push(os_requirement(os));
    PodFragment {
        kind: ExposeKind::Restore,
        node_os: os,
        storage_class: volume.storage_class.to_owned(),
        load_affinity_index: selected.map(|(i, _)| i),
        affinity: to_affinity(&requirements, None),
        node_selector: selected_node
            .map(|n| BTreeMap::from([(HOSTNAME_LABEL.to_owned(), n.to_owned())])),
        tolerations: data_mover_tolerations(os, &[]),
        waiting_for_first_consumer: waiting,
        layout: Layout {
            topology: None,
            load_affinity: user,
            os: 1,
            fast_provisioning: 0,
        },
    }
}

/// Why a fragment cannot be computed from the cluster objects: the cases
/// where Velero fails the exposure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FragmentError {
    /// A2.13: the source PVC has no storage class.
    #[error(
        "PVC {pvc} has no storageClassName; Velero cannot expose it for a data-mover backup (\"invalid parameter\", A2.13)"
    )]
    NoStorageClass {
        /// `namespace/name` of the PVC.
        pvc: String,
    },
    /// A2.13: the source PVC is not bound to a PV.
    #[error("PVC {pvc} is not bound to a PersistentVolume; there is nothing to back up")]
    NotBound {
        /// `namespace/name` of the PVC.
        pvc: String,
    },
    /// A2.13 / A2.20: the StorageClass does not exist.
    #[error("StorageClass {name} (of PVC {pvc}) was not found; Velero fails the exposure")]
    StorageClassNotFound {
        /// `namespace/name` of the PVC.
        pvc: String,
        /// StorageClass name.
        name: String,
    },
    /// A2.13: the source PV does not exist (needed for its topology).
    #[error("PersistentVolume {name} (of PVC {pvc}) was not found; Velero fails the exposure")]
    PersistentVolumeNotFound {
        /// `namespace/name` of the PVC.
        pvc: String,
        /// PV name.
        name: String,
    },
    /// A2.21: the restore target PVC is already bound.
    #[error("restore target PVC {pvc} is already bound; Velero fails the exposure (A2.21)")]
    AlreadyBound {
        /// `namespace/name` of the PVC.
        pvc: String,
    },
}

fn pvc_name(pvc: &PersistentVolumeClaim) -> String {
    format!(
        "{}/{}",
        pvc.metadata.namespace.as_deref().unwrap_or_default(),
        pvc.metadata.name.as_deref().unwrap_or_default()
    )
}

fn is_wait_for_first_consumer(class: &StorageClass) -> bool {
    class.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer")
}

/// [`backup_fragment`] from the cluster objects: the source PVC, its
/// StorageClass (`None` if not found), its PV (`None` if not found), and the
/// VolumeAttachments (all of them; those of other PVs are ignored).
pub fn backup_fragment_for(
    config: &NodeAgentConfig,
    pvc: &PersistentVolumeClaim,
    storage_class: Option<&StorageClass>,
    pv: Option<&PersistentVolume>,
    attachments: &[VolumeAttachment],
    os: NodeOs,
) -> Result<PodFragment, FragmentError> {
    let spec = pvc.spec.as_ref();
    let class_name = spec
        .and_then(|s| s.storage_class_name.as_deref())
        .filter(|c| !c.is_empty())
        .ok_or_else(|| FragmentError::NoStorageClass { pvc: pvc_name(pvc) })?;
    let pv_name = spec
        .and_then(|s| s.volume_name.as_deref())
        .filter(|c| !c.is_empty())
        .ok_or_else(|| FragmentError::NotBound { pvc: pvc_name(pvc) })?;
    let class = storage_class.ok_or_else(|| FragmentError::StorageClassNotFound {
        pvc: pvc_name(pvc),
        name: class_name.to_owned(),
    })?;
    let wait = is_wait_for_first_consumer(class);
    let pv_node_affinity = if wait {
        let pv = pv.ok_or_else(|| FragmentError::PersistentVolumeNotFound {
            pvc: pvc_name(pvc),
            name: pv_name.to_owned(),
        })?;
        pv.spec
            .as_ref()
            .and_then(|s| s.node_affinity.as_ref())
            .and_then(|a| a.required.as_ref())
    } else {
        None
    };
    let attached_nodes: Vec<String> = attachments
        .iter()
        .filter(|a| a.spec.source.persistent_volume_name.as_deref() == Some(pv_name))
        .map(|a| a.spec.node_name.clone())
        .collect();
    Ok(backup_fragment(
        config,
        &BackupVolume {
            source_storage_class: class_name,
            wait_for_first_consumer: wait,
            pv_node_affinity,
            attached_nodes: &attached_nodes,
        },
        os,
    ))
}

/// [`restore_fragment`] from the cluster objects: the target PVC and its
/// StorageClass (`None` if not found; only needed when
/// `ignoreDelayBinding` is off and the PVC names a class).
pub fn restore_fragment_for(
    config: &NodeAgentConfig,
    pvc: &PersistentVolumeClaim,
    storage_class: Option<&StorageClass>,
    os: NodeOs,
) -> Result<PodFragment, FragmentError> {
    let spec = pvc.spec.as_ref();
    let bound = spec
        .and_then(|s| s.volume_name.as_deref())
        .is_some_and(|v| !v.is_empty())
        || pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
    if bound {
        return Err(FragmentError::AlreadyBound { pvc: pvc_name(pvc) });
    }
    let class_name = spec
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or_default();
    let ignore_delay_binding = config
        .restore_pvc
        .as_ref()
        .and_then(|r| r.ignore_delay_binding)
        .unwrap_or(false);
    let wait = if ignore_delay_binding || class_name.is_empty() {
        false
    } else {
        let class = storage_class.ok_or_else(|| FragmentError::StorageClassNotFound {
            pvc: pvc_name(pvc),
            name: class_name.to_owned(),
        })?;
        is_wait_for_first_consumer(class)
    };
    let selected_node = pvc
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SELECTED_NODE_ANNOTATION))
        .map(String::as_str);
    Ok(restore_fragment(
        config,
        &RestoreVolume {
            storage_class: class_name,
            wait_for_first_consumer: wait,
            selected_node,
        },
        os,
    ))
}
