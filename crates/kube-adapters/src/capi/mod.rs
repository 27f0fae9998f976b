//! Cluster API (`cluster.x-k8s.io`) objects: hand-written partial types of
//! the kinds the policies read, and their translation to policy inputs.
//!
//! Like the Velero types, these model only the fields that are read, every
//! field optional, unknown fields ignored, so any version a Cluster API
//! server writes deserialises; never write one back with `replace()`.
//!
//! | kind | versions read | type |
//! |---|---|---|
//! | `Machine` | `v1beta1`, `v1beta2` | [`Machine`] |
//!
//! Translations: Machines → node name → host name ([`host_map`]).

mod hosts;
mod machine;

pub use hosts::{HostMap, ShadowedMachine, host_map};
pub use machine::{Machine, MachineNodeRef, MachineStatus};
