//! Errors: an invalid inventory (every problem, each naming its field and
//! value) and requests that do not fit the inventory.

use std::fmt;

/// One problem in a [`super::HostInventory`]. `field` is a path such as
/// `vms[3].group`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InventoryError {
    /// `apiVersion` is not `policyctl/v1alpha1`.
    #[error("apiVersion: {value:?} is not supported; use \"policyctl/v1alpha1\"")]
    ApiVersion {
        /// The value found.
        value: String,
    },
    /// `kind` is not `HostInventory`.
    #[error("kind: {value:?} is not supported; use \"HostInventory\"")]
    Kind {
        /// The value found.
        value: String,
    },
    /// A name is empty.
    #[error("{field}: name must not be empty")]
    EmptyName {
        /// Path of the name.
        field: String,
    },
    /// Two hosts, groups or VMs share a name.
    #[error("{field}: duplicate name {value:?} (first used at {first})")]
    Duplicate {
        /// Path of the second occurrence.
        field: String,
        /// The repeated name.
        value: String,
        /// Path of the first occurrence.
        first: String,
    },
    /// A VM names a group that is not in `groups`.
    #[error("{field}: unknown group {value:?}; add it under groups or fix the name")]
    UnknownGroup {
        /// Path of the reference.
        field: String,
        /// The group name.
        value: String,
    },
    /// A VM names a host that is not in `hosts`.
    #[error("{field}: unknown host {value:?}; add it under hosts or fix the name")]
    UnknownHost {
        /// Path of the reference.
        field: String,
        /// The host name.
        value: String,
    },
    /// A capacity or request amount is not a non-negative integer.
    #[error("{field}: {value} {reason}")]
    Amount {
        /// Path of the amount, e.g. `hosts[0].capacity.cpu`.
        field: String,
        /// The amount as written.
        value: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// `maxPerHost` on a soft group, or `maxPerHost: 0`.
    #[error("{field}: {value} {reason}")]
    MaxPerHost {
        /// Path of `maxPerHost`.
        field: String,
        /// The value.
        value: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// Groups of one anti-affinity set disagree on policy or `maxPerHost`.
    #[error(
        "{field}: group {group:?} has policy {found} but group {other:?} of the same antiAffinitySet {set:?} has {expected}; all groups of a set must share policy and maxPerHost"
    )]
    SetPolicyMismatch {
        /// Path of the disagreeing group.
        field: String,
        /// The disagreeing group.
        group: String,
        /// The set.
        set: String,
        /// The first group of the set.
        other: String,
        /// Policy of this group.
        found: String,
        /// Policy of the first group.
        expected: String,
    },
    /// A set has the same name as a group, so violations would be ambiguous.
    #[error(
        "{field}: antiAffinitySet {value:?} has the same name as a group; set and group names share one namespace"
    )]
    SetNameIsGroupName {
        /// Path of the `antiAffinitySet` field.
        field: String,
        /// The name.
        value: String,
    },
}

/// Every problem found in an inventory (names first, then amounts, groups
/// and VMs, each section in document order).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct InvalidInventory {
    /// The problems (never empty).
    pub errors: Vec<InventoryError>,
}

impl fmt::Display for InvalidInventory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid HostInventory:")?;
        for error in &self.errors {
            write!(f, "\n  - {error}")?;
        }
        Ok(())
    }
}

/// A rebalance or scale-down request that does not fit the inventory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// No group or anti-affinity set has this name.
    #[error("no group or antiAffinitySet named {name:?}")]
    UnknownUnit {
        /// The name asked for.
        name: String,
    },
    /// The group is counted as part of a set; rebalance the set instead.
    #[error(
        "group {group:?} belongs to antiAffinitySet {set:?}; rebalance the set {set:?} instead"
    )]
    GroupInSet {
        /// The group asked for.
        group: String,
        /// Its set.
        set: String,
    },
    /// No group has this name (scale-down works on one group).
    #[error("no group named {name:?}")]
    UnknownGroup {
        /// The name asked for.
        name: String,
    },
    /// Asked to remove more VMs than the group has.
    #[error("cannot remove {requested} VMs from group {group:?}: it has only {available}")]
    TooManyVictims {
        /// The group.
        group: String,
        /// VMs asked to remove.
        requested: usize,
        /// VMs in the group.
        available: usize,
    },
}
