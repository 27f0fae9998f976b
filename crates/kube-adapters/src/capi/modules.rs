//! Cluster API and CAPV objects → the inputs of cluster-module
//! reconciliation, membership and audit
//! ([`anti_affinity_placement::cluster_modules`]).
//!
//! Readings, each as CAPV makes it:
//!
//! - **The cluster** of a VSphereCluster is its `cluster.x-k8s.io/cluster-name`
//!   label (what CAPV lists owners by). When the label is missing, CAPV's
//!   reconciliation fails; membership and audit then fall back to the
//!   Cluster whose `spec.infrastructureRef` names the VSphereCluster.
//! - **Owners** are the KubeadmControlPlanes and MachineDeployments in the
//!   VSphereCluster's namespace carrying that label. Their infrastructure
//!   template is `VSphereMachineTemplate` by kind alone (as CAPV compares),
//!   with the template's server when the template is among the objects.
//! - **Machines** are those in the namespace carrying the label. A Machine's
//!   VM is the VSphereVM owned by the VSphereMachine its
//!   `spec.infrastructureRef` names, else the VSphereVM with the Machine's
//!   name (CAPV's default naming).
//! - **The host** of a VM is its VSphereVM's `status.host`; without one, the
//!   Machine's `node.cluster.x-k8s.io/esxi-host` label (CAPV's sanitised
//!   copy of it, mapped back to the host name when another VSphereVM names
//!   a host that sanitises to the same value, so both readings agree).
//! - Every KubeadmControlPlane, MachineSet and MachineDeployment among the
//!   objects can be an owner (CAPV looks them up by name in the Machine's
//!   namespace, whatever their labels).

use std::collections::BTreeMap;

use anti_affinity_placement::cluster_modules::{
    CONTROL_PLANE_LABEL, ClusterMachine, ClusterModulesInput, GroupKind, InfrastructureTemplate,
    MachineOwners, ModuleEntry, ModuleOwner, OwnerIndex, OwnerReference,
};
use anti_affinity_placement::hosts::HostInventory;
use anti_affinity_placement::labels::sanitize_label_value;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use capi_api::{
    Cluster, KubeadmControlPlane, Machine, MachineDeployment, MachineSet, ObjectRef,
    VSphereCluster, VSphereMachineTemplate, VSphereVM,
};

use super::hosts::esxi_host;
use crate::meta::namespace_or_default;

/// The label naming an object's Cluster API cluster.
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
/// The infrastructure template kind CAPV creates modules for.
pub const VSPHERE_MACHINE_TEMPLATE_KIND: &str = "VSphereMachineTemplate";
/// The infrastructure machine kind of CAPV's govmomi mode.
pub const VSPHERE_MACHINE_KIND: &str = "VSphereMachine";

/// The Cluster API and CAPV objects of a management cluster, borrowed
/// (any number of clusters, any order).
#[derive(Clone, Debug, Default)]
pub struct ClusterApiObjects<'a> {
    /// Clusters.
    pub clusters: Vec<&'a Cluster>,
    /// VSphereClusters.
    pub vsphere_clusters: Vec<&'a VSphereCluster>,
    /// KubeadmControlPlanes.
    pub kubeadm_control_planes: Vec<&'a KubeadmControlPlane>,
    /// MachineDeployments.
    pub machine_deployments: Vec<&'a MachineDeployment>,
    /// MachineSets.
    pub machine_sets: Vec<&'a MachineSet>,
    /// Machines.
    pub machines: Vec<&'a Machine>,
    /// VSphereVMs.
    pub vsphere_vms: Vec<&'a VSphereVM>,
    /// VSphereMachineTemplates.
    pub vsphere_machine_templates: Vec<&'a VSphereMachineTemplate>,
}

fn namespace(meta: &ObjectMeta) -> &str {
    namespace_or_default(meta.namespace.as_deref())
}

fn name(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

fn label<'m>(meta: &'m ObjectMeta, key: &str) -> Option<&'m str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

fn owner_references(meta: &ObjectMeta) -> Vec<OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .map(|reference| OwnerReference {
            api_version: reference.api_version.clone(),
            kind: reference.kind.clone(),
            name: reference.name.clone(),
        })
        .collect()
}

fn key(meta: &ObjectMeta) -> (String, String) {
    (namespace(meta).to_owned(), name(meta).to_owned())
}

impl ClusterApiObjects<'_> {
    /// Whether there is any VSphereCluster (the only thing that makes the
    /// cluster-module view meaningful).
    pub fn has_vsphere_clusters(&self) -> bool {
        !self.vsphere_clusters.is_empty()
    }

    /// The Cluster API cluster of a VSphereCluster: its
    /// `cluster.x-k8s.io/cluster-name` label, else the Cluster in its
    /// namespace whose `spec.infrastructureRef` names it (first by name).
    pub fn cluster_name_of(&self, vsphere_cluster: &VSphereCluster) -> Option<String> {
        if let Some(label) = label(&vsphere_cluster.metadata, CLUSTER_NAME_LABEL) {
            return Some(label.to_owned());
        }
        let ns = namespace(&vsphere_cluster.metadata);
        let mut referring: Vec<&str> = self
            .clusters
            .iter()
            .filter(|cluster| namespace(&cluster.metadata) == ns)
            .filter(|cluster| {
                cluster.infrastructure_ref().is_some_and(|r| {
                    r.kind == "VSphereCluster" && r.name == name(&vsphere_cluster.metadata)
                })
            })
            .map(|cluster| name(&cluster.metadata))
            .collect();
        referring.sort_unstable();
        referring.first().map(|n| (*n).to_owned())
    }

    fn in_cluster(&self, meta: &ObjectMeta, ns: &str, cluster: &str) -> bool {
        namespace(meta) == ns && label(meta, CLUSTER_NAME_LABEL) == Some(cluster)
    }

    fn template(&self, ns: &str, reference: Option<&ObjectRef>) -> InfrastructureTemplate {
        match reference {
            Some(reference) if reference.kind == VSPHERE_MACHINE_TEMPLATE_KIND => {
                let server = self
                    .vsphere_machine_templates
                    .iter()
                    .find(|t| namespace(&t.metadata) == ns && name(&t.metadata) == reference.name)
                    .map(|t| t.server().to_owned());
                InfrastructureTemplate::VSphere {
                    name: reference.name.clone(),
                    server,
                }
            }
            Some(reference) => InfrastructureTemplate::Other {
                kind: reference.kind.clone(),
            },
            None => InfrastructureTemplate::Other {
                kind: String::new(),
            },
        }
    }

    /// The VSphereVM of a Machine.
    fn vm_of(&self, machine: &Machine) -> Option<&VSphereVM> {
        let ns = namespace(&machine.metadata);
        let in_namespace = || {
            self.vsphere_vms
                .iter()
                .copied()
                .filter(move |vm| namespace(&vm.metadata) == ns)
        };
        if let Some(reference) = machine
            .infrastructure_ref()
            .filter(|r| r.kind == VSPHERE_MACHINE_KIND && !r.name.is_empty())
        {
            let owned =
                in_namespace().find(|vm| {
                    vm.metadata.owner_references.iter().flatten().any(|owner| {
                        owner.kind == VSPHERE_MACHINE_KIND && owner.name == reference.name
                    })
                });
            if owned.is_some() {
                return owned;
            }
        }
        in_namespace().find(|vm| name(&vm.metadata) == name(&machine.metadata))
    }

    /// Everything [`ClusterModulesInput::report`] needs about one
    /// VSphereCluster (see the module documentation for the readings).
    /// `inventory` supplies host capacities and maintenance flags, if known.
    pub fn cluster_modules_input(
        &self,
        vsphere_cluster: &VSphereCluster,
        inventory: Option<HostInventory>,
    ) -> ClusterModulesInput {
        let ns = namespace(&vsphere_cluster.metadata);
        let labelled = label(&vsphere_cluster.metadata, CLUSTER_NAME_LABEL).map(str::to_owned);
        let cluster = self.cluster_name_of(vsphere_cluster).unwrap_or_default();

        let mut owners: Vec<ModuleOwner> = self
            .kubeadm_control_planes
            .iter()
            .filter(|kcp| self.in_cluster(&kcp.metadata, ns, &cluster))
            .map(|kcp| ModuleOwner {
                kind: GroupKind::KubeadmControlPlane,
                name: name(&kcp.metadata).to_owned(),
                deleting: kcp.metadata.deletion_timestamp.is_some(),
                template: self.template(ns, kcp.infrastructure_ref()),
            })
            .collect();
        owners.extend(
            self.machine_deployments
                .iter()
                .filter(|md| self.in_cluster(&md.metadata, ns, &cluster))
                .map(|md| ModuleOwner {
                    kind: GroupKind::MachineDeployment,
                    name: name(&md.metadata).to_owned(),
                    deleting: md.metadata.deletion_timestamp.is_some(),
                    template: self.template(ns, md.infrastructure_ref()),
                }),
        );
        owners.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));

        let owner_index = OwnerIndex {
            control_planes: self
                .kubeadm_control_planes
                .iter()
                .map(|kcp| key(&kcp.metadata))
                .collect(),
            machine_sets: self
                .machine_sets
                .iter()
                .map(|ms| (key(&ms.metadata), owner_references(&ms.metadata)))
                .collect(),
            machine_deployments: self
                .machine_deployments
                .iter()
                .map(|md| key(&md.metadata))
                .collect(),
        };

        // A host name as CAPV's label writes it → the host name itself.
        let raw_host: BTreeMap<String, &str> = self
            .vsphere_vms
            .iter()
            .filter_map(|vm| vm.host())
            .map(|host| (sanitize_label_value(host), host))
            .collect();
        let mut machines: Vec<&Machine> = self
            .machines
            .iter()
            .copied()
            .filter(|machine| self.in_cluster(&machine.metadata, ns, &cluster))
            .collect();
        machines.sort_by_key(|machine| key(&machine.metadata));
        let machines = machines
            .into_iter()
            .map(|machine| {
                let vm = self.vm_of(machine);
                let host = vm.and_then(VSphereVM::host).map(str::to_owned).or_else(|| {
                    esxi_host(machine)
                        .map(|value| raw_host.get(value).copied().unwrap_or(value).to_owned())
                });
                ClusterMachine {
                    owners: MachineOwners {
                        namespace: namespace(&machine.metadata).to_owned(),
                        name: name(&machine.metadata).to_owned(),
                        control_plane: label(&machine.metadata, CONTROL_PLANE_LABEL).is_some(),
                        owner_references: owner_references(&machine.metadata),
                    },
                    vm: vm.map_or_else(
                        || name(&machine.metadata).to_owned(),
                        |vm| name(&vm.metadata).to_owned(),
                    ),
                    host,
                    deleting: machine.metadata.deletion_timestamp.is_some(),
                }
            })
            .collect();

        ClusterModulesInput {
            vcenter_version: vsphere_cluster.vcenter_version().to_owned(),
            disabled: vsphere_cluster.cluster_modules_disabled(),
            cluster_name: labelled,
            server: vsphere_cluster.server().to_owned(),
            recorded: vsphere_cluster
                .cluster_modules()
                .iter()
                .map(|module| ModuleEntry {
                    control_plane: module.control_plane.unwrap_or(false),
                    target_object_name: module.target_object_name.clone(),
                    module_uuid: module.module_uuid.clone(),
                })
                .collect(),
            owners,
            owner_index,
            machines,
            inventory,
        }
    }
}
