//! Cluster API and CAPV objects (the partial types of `capi-api`) to policy
//! inputs: Machines → node name → host name ([`host_map`], reading the
//! ESXi host CAPV records on a Machine with [`esxi_host`]); the objects of
//! a VSphereCluster → cluster-module reconciliation, membership and audit
//! ([`ClusterApiObjects::cluster_modules_input`]); Machines and Nodes →
//! Machine → Node label sync plans ([`machine_label_plans`]).

mod hosts;
mod label_sync;
mod modules;

pub use hosts::{HostMap, ShadowedMachine, esxi_host, host_map};
pub use label_sync::{MachineLabelPlans, machine_label_plans};
pub use modules::{
    CLUSTER_NAME_LABEL, ClusterApiObjects, VSPHERE_MACHINE_KIND, VSPHERE_MACHINE_TEMPLATE_KIND,
};
