//! Cluster API (`cluster.x-k8s.io`) and CAPV
//! (`infrastructure.cluster.x-k8s.io`) objects: hand-written partial types
//! of the kinds the policies read, and their translation to policy inputs.
//!
//! Like the Velero types, these model only the fields that are read, every
//! field optional, unknown fields ignored, so any version a Cluster API
//! server writes deserialises; never write one back with `replace()`. As
//! [`kube::Resource`]s they are served at `v1beta1`, which every release
//! that has the kind still serves.
//!
//! | kind | group | versions read | module |
//! |---|---|---|---|
//! | `Cluster` | `cluster.x-k8s.io` | `v1beta1`, `v1beta2` | [`cluster`] |
//! | `Machine` | `cluster.x-k8s.io` | `v1beta1`, `v1beta2` | [`machine`] |
//! | `MachineSet`, `MachineDeployment` | `cluster.x-k8s.io` | `v1beta1`, `v1beta2` | [`owners`] |
//! | `KubeadmControlPlane` | `controlplane.cluster.x-k8s.io` | `v1beta1`, `v1beta2` | [`owners`] |
//! | `VSphereCluster`, `VSphereVM`, `VSphereMachineTemplate` | `infrastructure.cluster.x-k8s.io` | `v1beta1`, `v1beta2` | [`vsphere`] |
//!
//! Translations: Machines → node name → host name ([`host_map`]); the
//! objects of a VSphereCluster → cluster-module reconciliation, membership
//! and audit ([`ClusterApiObjects::cluster_modules_input`]); Machines and
//! Nodes → Machine → Node label sync plans ([`machine_label_plans`]).

pub mod cluster;
mod hosts;
mod label_sync;
pub mod machine;
mod modules;
pub mod owners;
mod resource;
pub mod vsphere;

pub use cluster::Cluster;
pub use hosts::{HostMap, ShadowedMachine, host_map};
pub use label_sync::{MachineLabelPlans, machine_label_plans};
pub use machine::Machine;
pub use modules::{
    CLUSTER_NAME_LABEL, ClusterApiObjects, VSPHERE_MACHINE_KIND, VSPHERE_MACHINE_TEMPLATE_KIND,
};
pub use owners::{KubeadmControlPlane, MachineDeployment, MachineSet};
pub use resource::ObjectRef;
pub use vsphere::{VSphereCluster, VSphereMachineTemplate, VSphereVM};
