//! CAPV's `infrastructure.cluster.x-k8s.io` kinds (govmomi mode):
//! `VSphereCluster`, `VSphereVM` and `VSphereMachineTemplate`. The fields
//! read have the same paths in `v1beta1` and `v1beta2`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::resource::partial_resource;

/// A VSphereCluster: its server, recorded cluster modules, opt-out and the
/// vCenter version CAPV found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VSphereCluster {
    /// Standard metadata (the `cluster.x-k8s.io/cluster-name` label names
    /// the Cluster API cluster).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The parts of the spec that are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<VSphereClusterSpec>,
    /// The parts of the status that are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<VSphereClusterStatus>,
}

/// `VSphereCluster.spec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VSphereClusterSpec {
    /// The vCenter address.
    #[serde(default)]
    pub server: String,
    /// The modules CAPV created, one per KubeadmControlPlane or
    /// MachineDeployment.
    #[serde(default)]
    pub cluster_modules: Vec<ClusterModule>,
    /// Turns cluster modules off for this cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_cluster_module: Option<bool>,
}

/// One `spec.clusterModules[]` entry (`controlPlane` is a `bool` in
/// `v1beta1` and an optional `bool` in `v1beta2`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterModule {
    /// Whether the owner is the KubeadmControlPlane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<bool>,
    /// The owner's name.
    #[serde(default)]
    pub target_object_name: String,
    /// The vCenter module.
    #[serde(default, rename = "moduleUUID")]
    pub module_uuid: String,
}

/// `VSphereCluster.status` (only `vCenterVersion`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VSphereClusterStatus {
    /// The vCenter version CAPV read (`About.Version`).
    #[serde(default, rename = "vCenterVersion")]
    pub vcenter_version: String,
}

impl VSphereCluster {
    /// `spec.server` (empty when absent).
    pub fn server(&self) -> &str {
        self.spec.as_ref().map_or("", |spec| spec.server.as_str())
    }

    /// `spec.clusterModules`.
    pub fn cluster_modules(&self) -> &[ClusterModule] {
        self.spec
            .as_ref()
            .map_or(&[], |spec| spec.cluster_modules.as_slice())
    }

    /// `spec.disableClusterModule` (absent = false).
    pub fn cluster_modules_disabled(&self) -> bool {
        self.spec
            .as_ref()
            .and_then(|spec| spec.disable_cluster_module)
            .unwrap_or(false)
    }

    /// `status.vCenterVersion` (empty when absent).
    pub fn vcenter_version(&self) -> &str {
        self.status
            .as_ref()
            .map_or("", |status| status.vcenter_version.as_str())
    }
}

/// A VSphereVM: its owner (the VSphereMachine), the host it runs on and
/// the module it joined.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VSphereVM {
    /// Standard metadata (owner references lead to the VSphereMachine).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The parts of the status that are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<VSphereVMStatus>,
}

/// `VSphereVM.status` (`host`, `moduleUUID`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VSphereVMStatus {
    /// Name or address of the ESXi host the VM runs on.
    #[serde(default)]
    pub host: String,
    /// The cluster module the VM was added to.
    #[serde(
        default,
        rename = "moduleUUID",
        skip_serializing_if = "Option::is_none"
    )]
    pub module_uuid: Option<String>,
}

impl VSphereVM {
    /// `status.host`, `None` when absent or empty.
    pub fn host(&self) -> Option<&str> {
        self.status
            .as_ref()
            .map(|status| status.host.as_str())
            .filter(|host| !host.is_empty())
    }

    /// `status.moduleUUID`, `None` when absent or empty.
    pub fn module_uuid(&self) -> Option<&str> {
        self.status
            .as_ref()?
            .module_uuid
            .as_deref()
            .filter(|uuid| !uuid.is_empty())
    }
}

/// A VSphereMachineTemplate: only `spec.template.spec.server`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VSphereMachineTemplate {
    /// Standard metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `spec.template.spec.server`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<VSphereMachineTemplateSpec>,
}

/// `VSphereMachineTemplate.spec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VSphereMachineTemplateSpec {
    /// `template`.
    #[serde(default)]
    pub template: VSphereMachineTemplateResource,
}

/// `spec.template`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VSphereMachineTemplateResource {
    /// `spec`.
    #[serde(default)]
    pub spec: VSphereMachineTemplateServer,
}

/// `spec.template.spec` (only `server`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VSphereMachineTemplateServer {
    /// The vCenter the VMs are cloned on. CAPV creates a module only when it
    /// equals the VSphereCluster's `spec.server` as written (an empty value
    /// does not).
    #[serde(default)]
    pub server: String,
}

impl VSphereMachineTemplate {
    /// `spec.template.spec.server` (empty when absent).
    pub fn server(&self) -> &str {
        self.spec
            .as_ref()
            .map_or("", |spec| spec.template.spec.server.as_str())
    }
}

partial_resource!(
    VSphereCluster,
    "VSphereCluster",
    "infrastructure.cluster.x-k8s.io",
    "v1beta1",
    "vsphereclusters"
);
partial_resource!(
    VSphereVM,
    "VSphereVM",
    "infrastructure.cluster.x-k8s.io",
    "v1beta1",
    "vspherevms"
);
partial_resource!(
    VSphereMachineTemplate,
    "VSphereMachineTemplate",
    "infrastructure.cluster.x-k8s.io",
    "v1beta1",
    "vspheremachinetemplates"
);
