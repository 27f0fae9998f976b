//! The recognised objects, sorted by kind and then by `namespace/name`.

use std::collections::BTreeMap;

use anti_affinity_placement::hosts::HostInventory;
use capi_api::Machine;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod,
};
use k8s_openapi::api::core::v1::{ReplicationController, Service};
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass, VolumeAttachment};
use velero_api::{
    Backup, BackupRepository, DataDownload, DataUpload, PodVolumeBackup, PodVolumeRestore,
};

use super::capi::CapiInventory;
use super::error::Origin;

/// Identity of an object within its kind: namespace (empty for
/// cluster-scoped kinds) and name. Orders by namespace, then name.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// Namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// A namespaced key.
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// A cluster-scoped key.
    pub fn cluster(name: impl Into<String>) -> Self {
        Self {
            namespace: String::new(),
            name: name.into(),
        }
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// An object together with where it was read from.
#[derive(Clone, Debug)]
pub struct Located<T> {
    /// File and document.
    pub origin: Origin,
    /// The object.
    pub object: T,
}

/// Objects of one kind, keyed and sorted by `namespace/name`.
pub type Objects<T> = BTreeMap<ObjectKey, Located<T>>;

/// Every recognised object of the input, sorted by kind and `namespace/name`.
#[derive(Clone, Debug, Default)]
pub struct Inventory {
    /// `v1` ConfigMaps.
    pub config_maps: Objects<ConfigMap>,
    /// `v1` Nodes.
    pub nodes: Objects<Node>,
    /// `v1` Namespaces.
    pub namespaces: Objects<Namespace>,
    /// `v1` Pods.
    pub pods: Objects<Pod>,
    /// `v1` Services (selectors for kube-scheduler's default spreading).
    pub services: Objects<Service>,
    /// `v1` ReplicationControllers.
    pub replication_controllers: Objects<ReplicationController>,
    /// `apps/v1` ReplicaSets.
    pub replica_sets: Objects<ReplicaSet>,
    /// `apps/v1` StatefulSets (selectors for kube-scheduler's default
    /// spreading; their pod template for `capacity --workload`).
    pub stateful_sets: Objects<StatefulSet>,
    /// `v1` PersistentVolumeClaims.
    pub persistent_volume_claims: Objects<PersistentVolumeClaim>,
    /// `v1` PersistentVolumes.
    pub persistent_volumes: Objects<PersistentVolume>,
    /// `storage.k8s.io/v1` StorageClasses.
    pub storage_classes: Objects<StorageClass>,
    /// `storage.k8s.io/v1` VolumeAttachments.
    pub volume_attachments: Objects<VolumeAttachment>,
    /// `apps/v1` Deployments (their pod template: `capacity --workload`,
    /// the report's spare-replica section).
    pub deployments: Objects<Deployment>,
    /// `apps/v1` DaemonSets (the node-agent's: the tolerations Velero
    /// copies onto data-mover pods).
    pub daemon_sets: Objects<DaemonSet>,
    /// `storage.k8s.io/v1` CSINodes (per-node CSI attach limits).
    pub csi_nodes: Objects<CSINode>,
    /// `resource.k8s.io/v1` DeviceClasses (Dynamic Resource Allocation).
    pub device_classes: Objects<DeviceClass>,
    /// `resource.k8s.io/v1` ResourceClaims.
    pub resource_claims: Objects<ResourceClaim>,
    /// `resource.k8s.io/v1` ResourceClaimTemplates.
    pub resource_claim_templates: Objects<ResourceClaimTemplate>,
    /// `resource.k8s.io/v1` ResourceSlices: the devices drivers publish.
    pub resource_slices: Objects<ResourceSlice>,
    /// `velero.io/v1` Backups.
    pub backups: Objects<Backup>,
    /// `velero.io/v1` BackupRepositories (`maintenance`: the key of each
    /// repository's maintenance configuration).
    pub backup_repositories: Objects<BackupRepository>,
    /// `scheduling.k8s.io/v1` PriorityClasses (`maintenance`: whether the
    /// configured priority class exists).
    pub priority_classes: Objects<PriorityClass>,
    /// `velero.io/v1` PodVolumeBackups.
    pub pod_volume_backups: Objects<PodVolumeBackup>,
    /// `velero.io/v1` PodVolumeRestores.
    pub pod_volume_restores: Objects<PodVolumeRestore>,
    /// `velero.io/v2alpha1` DataUploads.
    pub data_uploads: Objects<DataUpload>,
    /// `velero.io/v2alpha1` DataDownloads.
    pub data_downloads: Objects<DataDownload>,
    /// Cluster API Machines (`cluster.x-k8s.io/v1beta1` or `v1beta2`).
    pub machines: Objects<Machine>,
    /// The other Cluster API and CAPV kinds (Cluster, KubeadmControlPlane,
    /// MachineDeployment, MachineSet, VSphereCluster, VSphereMachineTemplate,
    /// VSphereVM).
    pub cluster_api: CapiInventory,
    /// `policyctl/v1alpha1` HostInventories. They have no metadata, so each
    /// is keyed by where it was read (`file, document N`).
    pub host_inventories: Objects<HostInventory>,
    /// Objects of kinds policyctl does not use, counted per
    /// `apiVersion kind`, with the first place each was seen.
    pub ignored: BTreeMap<String, (usize, Origin)>,
    /// How the objects were read: from files, or listed from a cluster,
    /// with the kinds that could not be listed.
    pub reading: crate::reading::Reading,
    /// In live mode, the API server's `/version`, when a command that
    /// simulates kube-scheduler asked for it and the server answered.
    pub server_version: Option<crate::release::ServerVersion>,
    /// The Kubernetes release whose kube-scheduler the answers follow,
    /// resolved before a command runs ([`crate::release::resolve`]).
    pub kubernetes: crate::release::KubernetesRelease,
}

impl Inventory {
    /// Number of recognised objects per kind, in a fixed order, including
    /// kinds with none; CSINodes, and the Cluster API kinds other than
    /// Machine, follow when the input has any of them.
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        let mut counts = vec![
            ("ConfigMap", self.config_maps.len()),
            ("Node", self.nodes.len()),
            ("Namespace", self.namespaces.len()),
            ("Pod", self.pods.len()),
            ("PersistentVolumeClaim", self.persistent_volume_claims.len()),
            ("PersistentVolume", self.persistent_volumes.len()),
            ("StorageClass", self.storage_classes.len()),
            ("VolumeAttachment", self.volume_attachments.len()),
            ("Backup", self.backups.len()),
            ("PodVolumeBackup", self.pod_volume_backups.len()),
            ("PodVolumeRestore", self.pod_volume_restores.len()),
            ("DataUpload", self.data_uploads.len()),
            ("DataDownload", self.data_downloads.len()),
            ("Machine", self.machines.len()),
            ("HostInventory", self.host_inventories.len()),
            ("Deployment", self.deployments.len()),
            ("StatefulSet", self.stateful_sets.len()),
        ];
        if !self.csi_nodes.is_empty() {
            counts.push(("CSINode", self.csi_nodes.len()));
        }
        for (kind, count) in [
            ("DeviceClass", self.device_classes.len()),
            ("ResourceClaim", self.resource_claims.len()),
            ("ResourceClaimTemplate", self.resource_claim_templates.len()),
            ("ResourceSlice", self.resource_slices.len()),
        ] {
            if count > 0 {
                counts.push((kind, count));
            }
        }
        if !self.daemon_sets.is_empty() {
            counts.push(("DaemonSet", self.daemon_sets.len()));
        }
        if !self.backup_repositories.is_empty() {
            counts.push(("BackupRepository", self.backup_repositories.len()));
        }
        if !self.priority_classes.is_empty() {
            counts.push(("PriorityClass", self.priority_classes.len()));
        }
        if !self.cluster_api.is_empty() {
            counts.extend(self.cluster_api.counts());
        }
        counts
    }

    /// One line per ignored `apiVersion kind`, for standard error.
    pub fn ignored_notes(&self) -> Vec<String> {
        self.ignored
            .iter()
            .map(|(kind, (count, first))| {
                let objects = if *count == 1 { "object" } else { "objects" };
                format!(
                    "note: ignored {count} {objects} of kind {kind} (first in {first}): policyctl does not use this kind"
                )
            })
            .collect()
    }
}
