//! Virtual machines over physical hosts (A.10–A.14): soft and hard
//! anti-affinity placement, anti-affinity sets, a rebalance planner and a
//! scale-down advisor, all pure functions of a [`HostInventory`].
//!
//! Start with [`CheckedInventory::new`] (validation with field paths), then
//! [`CheckedInventory::plan`], [`CheckedInventory::rebalance`] or
//! [`CheckedInventory::scale_down`].
//!
//! Vocabulary: a *unit* is what anti-affinity counts over — an
//! anti-affinity set (A.11) or a group outside any set. `c_U(h)` is the
//! number of the unit's VMs on host `h`; *eligible* hosts are those not in
//! maintenance.

mod error;
pub mod inventory;
mod model;
mod place;
mod quantity;
mod rebalance;
mod resources;
mod scale_down;
mod violations;

pub use error::{InvalidInventory, InventoryError, RequestError};
pub use inventory::{Amount, Group, Host, HostInventory, Policy, Vm};
pub use model::{CheckedInventory, Limit};
pub use place::{PlacementPlan, UnplacedReason};
pub use rebalance::{Move, RebalancePlan};
pub use scale_down::{DELETE_MACHINE_ANNOTATION, ScaleDownPlan, Victim};
