//! The Cluster API and CAPV kinds of a management cluster, beside the
//! Machines every command reads: what `policyctl modules` (and `report`)
//! work on.

use capi_api::{
    Cluster, KubeadmControlPlane, Machine, MachineDeployment, MachineSet, VSphereCluster,
    VSphereMachineTemplate, VSphereVM,
};
use kube_adapters::capi::ClusterApiObjects;

use super::{Item, ManifestError, Objects, Origin, insert};

/// Cluster API and CAPV objects other than Machines (which live in
/// [`super::Inventory::machines`]), each kind read at `v1beta1` and
/// `v1beta2`.
#[derive(Clone, Debug, Default)]
pub struct CapiInventory {
    /// `cluster.x-k8s.io` Clusters.
    pub clusters: Objects<Cluster>,
    /// `controlplane.cluster.x-k8s.io` KubeadmControlPlanes.
    pub kubeadm_control_planes: Objects<KubeadmControlPlane>,
    /// `cluster.x-k8s.io` MachineDeployments.
    pub machine_deployments: Objects<MachineDeployment>,
    /// `cluster.x-k8s.io` MachineSets.
    pub machine_sets: Objects<MachineSet>,
    /// `infrastructure.cluster.x-k8s.io` VSphereClusters.
    pub vsphere_clusters: Objects<VSphereCluster>,
    /// `infrastructure.cluster.x-k8s.io` VSphereMachineTemplates.
    pub vsphere_machine_templates: Objects<VSphereMachineTemplate>,
    /// `infrastructure.cluster.x-k8s.io` VSphereVMs.
    pub vsphere_vms: Objects<VSphereVM>,
}

/// The `apiVersion kind` pairs read here, for live mode and messages.
pub const CAPI_KINDS: &[(&str, &str)] = &[
    ("cluster.x-k8s.io", "Cluster"),
    ("controlplane.cluster.x-k8s.io", "KubeadmControlPlane"),
    ("cluster.x-k8s.io", "MachineDeployment"),
    ("cluster.x-k8s.io", "MachineSet"),
    ("infrastructure.cluster.x-k8s.io", "VSphereCluster"),
    ("infrastructure.cluster.x-k8s.io", "VSphereMachineTemplate"),
    ("infrastructure.cluster.x-k8s.io", "VSphereVM"),
];

impl CapiInventory {
    /// Number of objects per kind, in [`CAPI_KINDS`] order.
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("Cluster", self.clusters.len()),
            ("KubeadmControlPlane", self.kubeadm_control_planes.len()),
            ("MachineDeployment", self.machine_deployments.len()),
            ("MachineSet", self.machine_sets.len()),
            ("VSphereCluster", self.vsphere_clusters.len()),
            (
                "VSphereMachineTemplate",
                self.vsphere_machine_templates.len(),
            ),
            ("VSphereVM", self.vsphere_vms.len()),
        ]
    }

    /// Whether no object of these kinds was read.
    pub fn is_empty(&self) -> bool {
        self.counts().iter().all(|(_, count)| *count == 0)
    }

    /// The objects as `kube-adapters` reads them, with the Machines.
    pub fn view<'a>(&'a self, machines: &'a Objects<Machine>) -> ClusterApiObjects<'a> {
        ClusterApiObjects {
            clusters: self.clusters.values().map(|l| &l.object).collect(),
            vsphere_clusters: self.vsphere_clusters.values().map(|l| &l.object).collect(),
            kubeadm_control_planes: self
                .kubeadm_control_planes
                .values()
                .map(|l| &l.object)
                .collect(),
            machine_deployments: self
                .machine_deployments
                .values()
                .map(|l| &l.object)
                .collect(),
            machine_sets: self.machine_sets.values().map(|l| &l.object).collect(),
            machines: machines.values().map(|l| &l.object).collect(),
            vsphere_vms: self.vsphere_vms.values().map(|l| &l.object).collect(),
            vsphere_machine_templates: self
                .vsphere_machine_templates
                .values()
                .map(|l| &l.object)
                .collect(),
        }
    }
}

/// Adds an object of one of [`CAPI_KINDS`] (at `v1beta1` or `v1beta2`);
/// `None` when `api_version kind` is not one of them.
pub(super) fn add(
    inventory: &mut CapiInventory,
    origin: Origin,
    api_version: &str,
    kind: &str,
    value: Item<'_>,
) -> Option<Result<(), ManifestError>> {
    let (group, version) = api_version.split_once('/')?;
    if !matches!(version, "v1beta1" | "v1beta2") {
        return None;
    }
    Some(match (group, kind) {
        ("cluster.x-k8s.io", "Cluster") => {
            insert(&mut inventory.clusters, origin, kind, true, value)
        }
        ("controlplane.cluster.x-k8s.io", "KubeadmControlPlane") => insert(
            &mut inventory.kubeadm_control_planes,
            origin,
            kind,
            true,
            value,
        ),
        ("cluster.x-k8s.io", "MachineDeployment") => insert(
            &mut inventory.machine_deployments,
            origin,
            kind,
            true,
            value,
        ),
        ("cluster.x-k8s.io", "MachineSet") => {
            insert(&mut inventory.machine_sets, origin, kind, true, value)
        }
        ("infrastructure.cluster.x-k8s.io", "VSphereCluster") => {
            insert(&mut inventory.vsphere_clusters, origin, kind, true, value)
        }
        ("infrastructure.cluster.x-k8s.io", "VSphereMachineTemplate") => insert(
            &mut inventory.vsphere_machine_templates,
            origin,
            kind,
            true,
            value,
        ),
        ("infrastructure.cluster.x-k8s.io", "VSphereVM") => {
            insert(&mut inventory.vsphere_vms, origin, kind, true, value)
        }
        _ => return None,
    })
}
