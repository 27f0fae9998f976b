//! The objects that own Machines: `controlplane.cluster.x-k8s.io`
//! `KubeadmControlPlane`, `cluster.x-k8s.io` `MachineDeployment` and
//! `MachineSet` — their metadata and infrastructure template reference.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::resource::{ObjectRef, partial_resource};

/// A KubeadmControlPlane: `metadata` and its infrastructure template,
/// `spec.machineTemplate.infrastructureRef` in `v1beta1`,
/// `spec.machineTemplate.spec.infrastructureRef` in `v1beta2`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KubeadmControlPlane {
    /// Standard metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The parts of the spec that are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<KubeadmControlPlaneSpec>,
}

/// `KubeadmControlPlane.spec` (only `machineTemplate`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeadmControlPlaneSpec {
    /// The Machine template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_template: Option<KubeadmControlPlaneMachineTemplate>,
}

/// `spec.machineTemplate`: the reference directly (`v1beta1`) or under
/// `spec` (`v1beta2`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeadmControlPlaneMachineTemplate {
    /// `v1beta1`: the infrastructure template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ObjectRef>,
    /// `v1beta2`: `{infrastructureRef}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<InfrastructureRefHolder>,
}

/// A `{infrastructureRef}` object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InfrastructureRefHolder {
    /// The infrastructure template or machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ObjectRef>,
}

impl KubeadmControlPlane {
    /// The infrastructure template reference of either version.
    pub fn infrastructure_ref(&self) -> Option<&ObjectRef> {
        let template = self.spec.as_ref()?.machine_template.as_ref()?;
        template
            .spec
            .as_ref()
            .and_then(|spec| spec.infrastructure_ref.as_ref())
            .or(template.infrastructure_ref.as_ref())
    }
}

/// A MachineDeployment: `metadata` and
/// `spec.template.spec.infrastructureRef` (both versions).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineDeployment {
    /// Standard metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The parts of the spec that are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<MachineDeploymentSpec>,
}

/// `MachineDeployment.spec` (only `template.spec.infrastructureRef`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineDeploymentSpec {
    /// The Machine template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<MachineTemplate>,
}

/// `spec.template` of a MachineDeployment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineTemplate {
    /// `{infrastructureRef}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<InfrastructureRefHolder>,
}

impl MachineDeployment {
    /// The infrastructure template reference.
    pub fn infrastructure_ref(&self) -> Option<&ObjectRef> {
        self.spec
            .as_ref()?
            .template
            .as_ref()?
            .spec
            .as_ref()?
            .infrastructure_ref
            .as_ref()
    }
}

/// A MachineSet: only `metadata` (its owner references lead to the
/// MachineDeployment).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineSet {
    /// Standard metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
}

partial_resource!(
    KubeadmControlPlane,
    "KubeadmControlPlane",
    "controlplane.cluster.x-k8s.io",
    "v1beta1",
    "kubeadmcontrolplanes"
);
partial_resource!(
    MachineDeployment,
    "MachineDeployment",
    "cluster.x-k8s.io",
    "v1beta1",
    "machinedeployments"
);
partial_resource!(
    MachineSet,
    "MachineSet",
    "cluster.x-k8s.io",
    "v1beta1",
    "machinesets"
);
