//! OpenStack Tacker's inputs (E.1–E.7 of docs/behaviour/tacker.md): an ETSI
//! SOL001 VNFD's affinity rules as heat-translator translates them into
//! Nova server groups, and the plan of its VDUs over the compute hosts
//! with the `CIS-node` labels Tacker's Kubernetes management driver writes.
//!
//! Pure: the caller reads the files ([`vnfd::read_vnfd`] takes a loader for
//! imports) and gives the host list.

pub mod base_hot;
pub mod layers;
pub mod plan;
pub mod servers;
pub mod translate;
pub mod tree;
pub mod vnfd;
