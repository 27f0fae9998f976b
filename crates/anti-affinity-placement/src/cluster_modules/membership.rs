//! Membership (A.2): the group of each Machine and the module its VM joins,
//! or the error CAPV hits on the way — CAPV's `fetchClusterModuleInfo`.
//!
//! - A Machine with the `cluster.x-k8s.io/control-plane` label (any value)
//!   belongs to the KubeadmControlPlane named by its owner reference of kind
//!   `KubeadmControlPlane` in group `controlplane.cluster.x-k8s.io`; any
//!   other Machine to the MachineDeployment that owns (group
//!   `cluster.x-k8s.io`) the MachineSet that owns it.
//! - Owner references match on API group and kind; the version is ignored.
//!   They are read in order, and an `apiVersion` that is not a group
//!   version (more than one `/`) is an error when it is read before the
//!   match.
//! - A missing reference is an error (the VM's reconcile stops, unless the
//!   VM is being deleted): a worker Machine without a MachineSet, or a
//!   MachineSet without a MachineDeployment, is an error, not "no module".
//! - A referenced object that does not exist (in the Machine's namespace)
//!   means "no module" without an error: CAPV takes the owner for deleted.
//! - The module is the first `spec.clusterModules` entry whose
//!   `targetObjectName` is the group's name; `controlPlane` is not compared.

use std::collections::{BTreeMap, BTreeSet};

use kube_validation::parse_group_version;
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use super::reconcile::{GroupKind, ModuleEntry};

/// API group of KubeadmControlPlane.
pub const CONTROL_PLANE_GROUP: &str = "controlplane.cluster.x-k8s.io";
/// API group of Machine, MachineSet and MachineDeployment.
pub const CLUSTER_API_GROUP: &str = "cluster.x-k8s.io";
/// The label that marks control-plane Machines.
pub const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";
/// The version CAPV names in its "no owner reference" message.
const CAPV_API_VERSION: &str = "v1beta2";

/// One `metadata.ownerReferences[]` entry (the fields read).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OwnerReference {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `name`.
    pub name: String,
}

/// A Machine, as membership reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MachineOwners {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Whether it carries [`CONTROL_PLANE_LABEL`].
    pub control_plane: bool,
    /// Its owner references, in order.
    pub owner_references: Vec<OwnerReference>,
}

/// The owners that exist, keyed by `(namespace, name)`.
#[derive(Debug, Clone, Default)]
pub struct OwnerIndex {
    /// KubeadmControlPlanes.
    pub control_planes: BTreeSet<(String, String)>,
    /// MachineSets with their owner references.
    pub machine_sets: BTreeMap<(String, String), Vec<OwnerReference>>,
    /// MachineDeployments.
    pub machine_deployments: BTreeSet<(String, String)>,
}

/// The error CAPV hits while finding a Machine's group.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MembershipError {
    /// No owner reference of the expected group and kind.
    #[error(
        "{object}: unable to find owner reference with APIVersion {group}/{CAPV_API_VERSION} and Kind {kind} ({hint})"
    )]
    NoOwnerReference {
        /// `Machine ns/name` or `MachineSet ns/name`.
        object: String,
        /// The group looked for.
        group: &'static str,
        /// The kind looked for.
        kind: &'static str,
        /// What it means and what to fix.
        hint: &'static str,
    },
    /// An owner reference whose `apiVersion` has more than one `/`.
    #[error("{object}: owner reference {index}: unexpected GroupVersion string: {api_version}")]
    InvalidOwnerApiVersion {
        /// `Machine ns/name` or `MachineSet ns/name`.
        object: String,
        /// Position in `metadata.ownerReferences`.
        index: usize,
        /// The offending `apiVersion`.
        api_version: String,
    },
}

/// An owner that a reference names but that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingOwner {
    /// `KubeadmControlPlane`, `MachineSet` or `MachineDeployment`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
}

/// A Machine's group and module. Serialises as
/// `{groupKind, groupName, moduleUUID, error}` (null where unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Membership {
    /// The group exists; its module, if one is recorded.
    Member {
        /// The group's kind.
        kind: GroupKind,
        /// The group's name.
        group: String,
        /// The first recorded module of that name.
        module_uuid: Option<String>,
    },
    /// An owner in the chain does not exist: no module, no error.
    OwnerNotFound {
        /// The kind of group looked for.
        kind: GroupKind,
        /// The missing object.
        missing: MissingOwner,
    },
    /// CAPV's lookup fails.
    Failed {
        /// The kind of group looked for.
        kind: GroupKind,
        /// Why.
        error: MembershipError,
    },
    /// CAPV does not look the group up (`spec.disableClusterModule`), so
    /// the broken owner chain fails nothing; serialised without an error.
    NotLookedUp {
        /// The kind of group it would look for.
        kind: GroupKind,
        /// The error the lookup would hit.
        would_fail: MembershipError,
    },
}

impl Membership {
    /// The kind of group the Machine belongs to (by its label).
    pub fn kind(&self) -> GroupKind {
        match self {
            Self::Member { kind, .. }
            | Self::OwnerNotFound { kind, .. }
            | Self::Failed { kind, .. }
            | Self::NotLookedUp { kind, .. } => *kind,
        }
    }

    /// The group's name, when it exists.
    pub fn group(&self) -> Option<&str> {
        match self {
            Self::Member { group, .. } => Some(group),
            _ => None,
        }
    }

    /// The module the VM joins.
    pub fn module_uuid(&self) -> Option<&str> {
        match self {
            Self::Member { module_uuid, .. } => module_uuid.as_deref(),
            _ => None,
        }
    }

    /// The error, if CAPV's lookup fails.
    pub fn error(&self) -> Option<&MembershipError> {
        match self {
            Self::Failed { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The membership when CAPV does not look it up
    /// (`spec.disableClusterModule`): no module, and a lookup error becomes
    /// [`Membership::NotLookedUp`].
    pub fn not_looked_up(self) -> Self {
        match self {
            Self::Member { kind, group, .. } => Self::Member {
                kind,
                group,
                module_uuid: None,
            },
            Self::Failed { kind, error } => Self::NotLookedUp {
                kind,
                would_fail: error,
            },
            other => other,
        }
    }
}

impl Serialize for Membership {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("Membership", 4)?;
        state.serialize_field("groupKind", &self.kind())?;
        state.serialize_field("groupName", &self.group())?;
        state.serialize_field("moduleUUID", &self.module_uuid())?;
        state.serialize_field("error", &self.error().map(ToString::to_string))?;
        state.end()
    }
}

/// The first owner reference of `group`/`kind`, in CAPV's order: every
/// reference's `apiVersion` is parsed until the match.
fn owner_of_kind<'a>(
    object: impl Fn() -> String,
    references: &'a [OwnerReference],
    group: &'static str,
    kind: &'static str,
    hint: &'static str,
) -> Result<&'a OwnerReference, MembershipError> {
    for (index, reference) in references.iter().enumerate() {
        let parsed = parse_group_version(&reference.api_version).map_err(|_| {
            MembershipError::InvalidOwnerApiVersion {
                object: object(),
                index,
                api_version: reference.api_version.clone(),
            }
        })?;
        if parsed.group == group && reference.kind == kind {
            return Ok(reference);
        }
    }
    Err(MembershipError::NoOwnerReference {
        object: object(),
        group,
        kind,
        hint,
    })
}

/// The first recorded module whose `targetObjectName` is `group`.
fn module_of<'a>(modules: &'a [ModuleEntry], group: &str) -> Option<&'a str> {
    modules
        .iter()
        .find(|entry| entry.target_object_name == group)
        .map(|entry| entry.module_uuid.as_str())
}

/// A Machine's membership (see the module documentation for the rules),
/// given the owners that exist and the recorded `spec.clusterModules`.
pub fn membership(
    machine: &MachineOwners,
    owners: &OwnerIndex,
    modules: &[ModuleEntry],
) -> Membership {
    let key = |name: &str| (machine.namespace.clone(), name.to_owned());
    let machine_id = || format!("Machine {}/{}", machine.namespace, machine.name);
    if machine.control_plane {
        let kind = GroupKind::KubeadmControlPlane;
        let reference = match owner_of_kind(
            machine_id,
            &machine.owner_references,
            CONTROL_PLANE_GROUP,
            "KubeadmControlPlane",
            "a Machine labelled cluster.x-k8s.io/control-plane must be owned by its KubeadmControlPlane",
        ) {
            Ok(reference) => reference,
            Err(error) => return Membership::Failed { kind, error },
        };
        if !owners.control_planes.contains(&key(&reference.name)) {
            return Membership::OwnerNotFound {
                kind,
                missing: MissingOwner {
                    kind: "KubeadmControlPlane",
                    name: reference.name.clone(),
                },
            };
        }
        return Membership::Member {
            kind,
            group: reference.name.clone(),
            module_uuid: module_of(modules, &reference.name).map(str::to_owned),
        };
    }
    let kind = GroupKind::MachineDeployment;
    let machine_set = match owner_of_kind(
        machine_id,
        &machine.owner_references,
        CLUSTER_API_GROUP,
        "MachineSet",
        "CAPV gives only Machines of a MachineDeployment or a KubeadmControlPlane a module and does not reconcile the VSphereVM of any other Machine",
    ) {
        Ok(reference) => reference,
        Err(error) => return Membership::Failed { kind, error },
    };
    let Some(set_owners) = owners.machine_sets.get(&key(&machine_set.name)) else {
        return Membership::OwnerNotFound {
            kind,
            missing: MissingOwner {
                kind: "MachineSet",
                name: machine_set.name.clone(),
            },
        };
    };
    let set_id = || format!("MachineSet {}/{}", machine.namespace, machine_set.name);
    let deployment = match owner_of_kind(
        set_id,
        set_owners,
        CLUSTER_API_GROUP,
        "MachineDeployment",
        "a MachineSet outside a MachineDeployment gives its Machines no module, and CAPV does not reconcile their VSphereVMs",
    ) {
        Ok(reference) => reference,
        Err(error) => return Membership::Failed { kind, error },
    };
    if !owners.machine_deployments.contains(&key(&deployment.name)) {
        return Membership::OwnerNotFound {
            kind,
            missing: MissingOwner {
                kind: "MachineDeployment",
                name: deployment.name.clone(),
            },
        };
    }
    Membership::Member {
        kind,
        group: deployment.name.clone(),
        module_uuid: module_of(modules, &deployment.name).map(str::to_owned),
    }
}
