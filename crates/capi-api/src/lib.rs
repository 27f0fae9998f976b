//! Partial, hand-written types of the Cluster API (`cluster.x-k8s.io`,
//! `controlplane.cluster.x-k8s.io`) and CAPV
//! (`infrastructure.cluster.x-k8s.io`) kinds the policies read: the
//! Cluster API counterpart of `velero-api`. Their translations to policy
//! inputs live in `kube_adapters::capi`.
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

pub mod cluster;
pub mod machine;
pub mod owners;
mod resource;
pub mod vsphere;

pub use cluster::Cluster;
pub use machine::Machine;
pub use owners::{KubeadmControlPlane, MachineDeployment, MachineSet};
pub use resource::ObjectRef;
pub use vsphere::{VSphereCluster, VSphereMachineTemplate, VSphereVM};
