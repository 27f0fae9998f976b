//! vSphere cluster modules as CAPV uses them (A.1–A.7): one soft
//! anti-affinity module per KubeadmControlPlane and per MachineDeployment,
//! gated on vCenter ≥ 7 — and what this crate adds: an audit of which member
//! VMs share a host, and the vMotions that would spread them.
//!
//! Each part is a pure function over plain inputs (the Cluster API objects
//! are translated by the `kube-adapters` crate):
//!
//! | part | function | CAPV |
//! |---|---|---|
//! | version gate (A.5) | [`cluster_modules_supported`] | `clustermodule.IsClusterCompatible` |
//! | module reconciliation (A.1, A.3, A.4) | [`reconcile_modules`], [`reconcile_modules_with`], [`ModulePlan::apply`] | `ClusterModuleReconciler.Reconcile` |
//! | membership (A.2) | [`membership`] | `vmReconciler.fetchClusterModuleInfo` |
//! | audit (A.7) | [`audit_groups`] | — (vSphere DRS does not report it) |
//! | vMotions (A.13) | [`plan_moves`] | — (CAPV never rebalances) |
//!
//! [`ClusterModulesInput::report`] runs them all for one VSphereCluster.

mod audit;
mod membership;
mod reconcile;
mod version;

use std::collections::BTreeMap;

use serde::Serialize;

pub use audit::{AuditMember, GroupAudit, GroupId, HostPool, MovePlan, audit_groups, plan_moves};
pub use membership::{
    CLUSTER_API_GROUP, CONTROL_PLANE_GROUP, CONTROL_PLANE_LABEL, MachineOwners, Membership,
    MembershipError, MissingOwner, OwnerIndex, OwnerReference, membership,
};
pub use reconcile::{
    CreateOutcome, DeleteReason, GroupKind, INCOMPATIBLE_OWNER_SUFFIX, InfrastructureTemplate,
    ModuleCreate, ModuleDelete, ModuleEntry, ModuleOwner, ModulePlan, ModuleState,
    ModulesCondition, ReconcileError, ReconcileInput, ReconcileResult, ReconcileStatus,
    SkippedOwner, reconcile_modules, reconcile_modules_with,
};
pub use version::{
    CLUSTER_MODULES_MIN_MAJOR, VCenterVersion, VersionError, cluster_modules_supported,
};

use crate::hosts::{HostInventory, Move};

/// A Machine of the cluster with its VM.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterMachine {
    /// The Machine's owners (namespace, name, label, owner references).
    pub owners: MachineOwners,
    /// The VM's name in vCenter (the VSphereVM's name; CAPV names it after
    /// the Machine unless a naming template says otherwise).
    pub vm: String,
    /// The ESXi host the VM runs on, when known.
    pub host: Option<String>,
    /// Whether the Machine is being deleted (it leaves the audit).
    pub deleting: bool,
}

/// Everything known about one VSphereCluster and its cluster.
#[derive(Debug, Clone, Default)]
pub struct ClusterModulesInput {
    /// `status.vCenterVersion`.
    pub vcenter_version: String,
    /// `spec.disableClusterModule`.
    pub disabled: bool,
    /// The `cluster.x-k8s.io/cluster-name` label of the VSphereCluster.
    pub cluster_name: Option<String>,
    /// `spec.server`.
    pub server: String,
    /// `spec.clusterModules`, in order.
    pub recorded: Vec<ModuleEntry>,
    /// The cluster's KubeadmControlPlanes and MachineDeployments.
    pub owners: Vec<ModuleOwner>,
    /// Owners that exist, for membership.
    pub owner_index: OwnerIndex,
    /// The cluster's Machines.
    pub machines: Vec<ClusterMachine>,
    /// Hosts with capacities (a HostInventory), if known; otherwise the
    /// hosts the VMs run on, counts only.
    pub inventory: Option<HostInventory>,
}

/// The whole picture for one VSphereCluster. Serialises as
/// `{clusterModulesSupported, vCenterVersion, modules, membership, audit, moves}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterModulesReport {
    /// The version gate (A.5).
    pub cluster_modules_supported: bool,
    /// `status.vCenterVersion` as read.
    #[serde(rename = "vCenterVersion")]
    pub vcenter_version: String,
    /// Module reconciliation.
    pub modules: ModulePlan,
    /// `namespace/machine` → group and module.
    pub membership: BTreeMap<String, Membership>,
    /// Group name → its audit (see [`audit_key`]).
    pub audit: BTreeMap<String, GroupAudit>,
    /// vMotions that remove every fixable violation.
    pub moves: Vec<Move>,
    /// `spec.disableClusterModule` (not serialised).
    #[serde(skip)]
    pub disabled: bool,
    /// The planner's leftovers and errors (not serialised).
    #[serde(skip)]
    pub move_plan: MovePlan,
}

/// The key of a group in [`ClusterModulesReport::audit`]: its name; when a
/// KubeadmControlPlane and a MachineDeployment share a name, the control
/// plane's key is `<name> (KubeadmControlPlane)`.
pub fn audit_key(group: &GroupId, all: &BTreeMap<GroupId, GroupAudit>) -> String {
    let shared = group.kind == GroupKind::KubeadmControlPlane
        && all.contains_key(&GroupId {
            kind: GroupKind::MachineDeployment,
            name: group.name.clone(),
        });
    if shared {
        format!("{} ({})", group.name, group.kind)
    } else {
        group.name.clone()
    }
}

impl ClusterModulesInput {
    /// Reconcile, resolve every Machine's membership, audit every group and
    /// plan the vMotions.
    ///
    /// - The gate closed (A.5) or `disableClusterModule` leaves every
    ///   recorded entry as it is.
    /// - Membership is resolved against the recorded entries (what CAPV's
    ///   VM controller sees now); with `disableClusterModule` CAPV does not
    ///   look it up: no VM joins a module and a broken owner chain is no
    ///   error ([`Membership::not_looked_up`]).
    /// - The audit covers the live KubeadmControlPlane and
    ///   MachineDeployments and every group a Machine resolves to, whether
    ///   or not it has a module.
    pub fn report(&self) -> ClusterModulesReport {
        let supported = cluster_modules_supported(&self.vcenter_version);
        let modules = if self.disabled {
            ModulePlan::unchanged(&self.recorded, ReconcileStatus::Disabled)
        } else if !supported {
            ModulePlan::unchanged(&self.recorded, ReconcileStatus::VersionUnsupported)
        } else {
            reconcile_modules(ReconcileInput {
                cluster_name: self.cluster_name.as_deref(),
                server: &self.server,
                recorded: &self.recorded,
                owners: &self.owners,
            })
        };
        let mut members = Vec::new();
        let membership: BTreeMap<String, Membership> = self
            .machines
            .iter()
            .map(|machine| {
                let mut resolved =
                    membership::membership(&machine.owners, &self.owner_index, &self.recorded);
                if self.disabled {
                    resolved = resolved.not_looked_up();
                }
                if let (Some(group), false) = (resolved.group(), machine.deleting) {
                    members.push(AuditMember {
                        group: GroupId {
                            kind: resolved.kind(),
                            name: group.to_owned(),
                        },
                        machine: machine.owners.name.clone(),
                        vm: machine.vm.clone(),
                        host: machine.host.clone(),
                    });
                }
                (
                    format!("{}/{}", machine.owners.namespace, machine.owners.name),
                    resolved,
                )
            })
            .collect();
        let pool = match &self.inventory {
            Some(inventory) => HostPool::from_inventory(inventory, &members),
            None => HostPool::observed(&members),
        };
        let live = self
            .owners
            .iter()
            .filter(|owner| !owner.deleting)
            .map(|owner| GroupId {
                kind: owner.kind,
                name: owner.name.clone(),
            });
        let audits = audit_groups(&members, live, &pool);
        let move_plan = plan_moves(&members, &audits, &pool);
        ClusterModulesReport {
            cluster_modules_supported: supported,
            vcenter_version: self.vcenter_version.clone(),
            modules,
            membership,
            audit: audits
                .iter()
                .map(|(group, audit)| (audit_key(group, &audits), audit.clone()))
                .collect(),
            moves: move_plan.moves.clone(),
            disabled: self.disabled,
            move_plan,
        }
    }
}
