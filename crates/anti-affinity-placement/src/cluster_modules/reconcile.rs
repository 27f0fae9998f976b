//! Module reconciliation (A.1, A.3, A.4): from a VSphereCluster's recorded
//! `spec.clusterModules`, the cluster's KubeadmControlPlanes and
//! MachineDeployments, which modules CAPV creates, which entries it deletes
//! and which it keeps.
//!
//! CAPV's `ClusterModuleReconciler.Reconcile`, rule by rule:
//!
//! 1. The owners are the KubeadmControlPlanes and MachineDeployments
//!    labelled with the cluster's name in the VSphereCluster's namespace;
//!    the VSphereCluster must carry that label
//!    ([`ReconcileError::MissingClusterName`]). More than one
//!    KubeadmControlPlane (deleting ones count) is an error
//!    ([`ReconcileError::MultipleControlPlanes`]). Owners being deleted have
//!    no module.
//! 2. Recorded entries, in order: an entry whose owner is not a live owner
//!    (matched by kind — `controlPlane` selects KubeadmControlPlane — and
//!    name) is **deleted**. An entry whose owner is live is **kept** if the
//!    module exists in vCenter, kept with an error if that check fails, and
//!    **replaced** by a new module if it is gone. Once an owner's entry is
//!    kept, a later entry for the same owner is deleted.
//! 3. Every live owner without a kept entry gets a new module
//!    (**create**), unless its infrastructure template is not a
//!    `VSphereMachineTemplate` or uses another vCenter server than the
//!    VSphereCluster: such owners are **skipped** without an error (A.4).
//!
//! What vCenter says about a recorded module is an input
//! ([`ModuleState`]); offline it is unknown and every recorded module is
//! taken to exist. The result lists creates (KubeadmControlPlane first,
//! then by name), deletes and keeps (in recorded order); the new
//! `spec.clusterModules` is the keeps followed by the creates.

use serde::Serialize;

/// The kinds of object that get a cluster module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum GroupKind {
    /// `controlplane.cluster.x-k8s.io` KubeadmControlPlane: the control-plane
    /// Machines (`controlPlane: true`).
    KubeadmControlPlane,
    /// `cluster.x-k8s.io` MachineDeployment: one pool of worker Machines.
    MachineDeployment,
}

impl GroupKind {
    /// The kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::KubeadmControlPlane => "KubeadmControlPlane",
            Self::MachineDeployment => "MachineDeployment",
        }
    }

    /// The kind a recorded entry refers to: `controlPlane` means the
    /// KubeadmControlPlane (CAPV only ever sets it for one).
    pub fn of_entry(control_plane: bool) -> Self {
        if control_plane {
            Self::KubeadmControlPlane
        } else {
            Self::MachineDeployment
        }
    }

    /// Whether entries of this kind carry `controlPlane: true`.
    pub fn is_control_plane(self) -> bool {
        self == Self::KubeadmControlPlane
    }
}

impl std::fmt::Display for GroupKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `VSphereCluster.spec.clusterModules[]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleEntry {
    /// Whether the owner is the KubeadmControlPlane (absent reads as false).
    pub control_plane: bool,
    /// The owner's name.
    pub target_object_name: String,
    /// The vCenter cluster module.
    #[serde(rename = "moduleUUID")]
    pub module_uuid: String,
}

impl ModuleEntry {
    /// The kind of owner the entry refers to.
    pub fn kind(&self) -> GroupKind {
        GroupKind::of_entry(self.control_plane)
    }
}

/// Where an owner's Machines get their VMs from: its infrastructure
/// template reference (KubeadmControlPlane
/// `spec.machineTemplate[.spec].infrastructureRef`, MachineDeployment
/// `spec.template.spec.infrastructureRef`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InfrastructureTemplate {
    /// A `VSphereMachineTemplate`; `server` is its
    /// `spec.template.spec.server` when the template object is known.
    VSphere {
        /// The template's name.
        name: String,
        /// The template's vCenter server, `None` when the template was not
        /// read (offline input without it): then it is taken to match.
        server: Option<String>,
    },
    /// Any other kind, or no reference (`kind` empty): CAPV creates no
    /// module (a heterogeneous cluster).
    Other {
        /// The referenced kind (empty when there is no reference).
        kind: String,
    },
}

/// A KubeadmControlPlane or MachineDeployment of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleOwner {
    /// Its kind.
    pub kind: GroupKind,
    /// Its name.
    pub name: String,
    /// Whether it has a `deletionTimestamp`.
    pub deleting: bool,
    /// Its infrastructure template.
    pub template: InfrastructureTemplate,
}

/// What vCenter says about a recorded module.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ModuleState {
    /// The module exists (also the offline assumption).
    #[default]
    Exists,
    /// The module is gone: CAPV creates a replacement.
    Missing,
    /// The existence check failed: CAPV keeps the entry and reports this.
    CheckFailed(String),
}

/// A module to create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleCreate {
    /// The owner's name.
    pub target_object_name: String,
    /// `true` for the KubeadmControlPlane, `false` for a MachineDeployment.
    pub control_plane: bool,
    /// The recorded module this one replaces (it was gone from vCenter).
    #[serde(rename = "replaces", skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
}

/// An entry to delete (and its module to remove from vCenter).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleDelete {
    /// The owner's name as recorded.
    pub target_object_name: String,
    /// The module to remove.
    #[serde(rename = "moduleUUID")]
    pub module_uuid: String,
    /// Why (not serialised): the owner is gone, deleting, or already has an
    /// earlier entry.
    #[serde(skip)]
    pub reason: DeleteReason,
}

/// Why an entry is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeleteReason {
    /// No owner of that kind and name exists.
    #[default]
    OwnerGone,
    /// The owner is being deleted.
    OwnerDeleting,
    /// An earlier entry for the same owner is kept.
    Duplicate,
}

/// An owner that gets no module although it has none (A.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedOwner {
    /// Its kind.
    pub kind: GroupKind,
    /// Its name.
    pub name: String,
    /// Why, in words.
    pub reason: String,
}

/// Why CAPV's module reconciliation stops before changing anything.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// The VSphereCluster has no `cluster.x-k8s.io/cluster-name` label, so
    /// CAPV cannot list the cluster's owners.
    #[error(
        "failed to get Cluster name from VSphereCluster: missing cluster name label (Cluster API sets cluster.x-k8s.io/cluster-name on the VSphereCluster it owns)"
    )]
    MissingClusterName,
    /// More than one KubeadmControlPlane carries the cluster's name.
    #[error(
        "multiple KubeadmControlPlane objects found, expected 1, found {}: {} (CAPV creates no module until one is left)",
        names.len(),
        names.join(", ")
    )]
    MultipleControlPlanes {
        /// Their names, sorted.
        names: Vec<String>,
    },
}

/// Whether and why reconciliation ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReconcileStatus {
    /// Reconciliation ran.
    Reconciled,
    /// `status.vCenterVersion` closes the gate (A.5): nothing changes.
    VersionUnsupported,
    /// `spec.disableClusterModule: true`: nothing changes.
    Disabled,
    /// Reconciliation failed before changing anything.
    Failed(ReconcileError),
}

/// The outcome of one reconciliation. Serialises as
/// `{create: [...], delete: [...], keep: [...]}` plus `error` when it failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModulePlan {
    /// Modules to create.
    pub create: Vec<ModuleCreate>,
    /// Entries to delete.
    pub delete: Vec<ModuleDelete>,
    /// Entries kept (recorded order).
    pub keep: Vec<ModuleEntry>,
    /// Why nothing was reconciled, if so.
    #[serde(skip)]
    pub status: ReconcileStatus,
    /// Live owners without a module that CAPV skips (A.4).
    #[serde(skip)]
    pub skipped: Vec<SkippedOwner>,
    /// Kept entries whose existence check failed, with the failure.
    #[serde(skip)]
    pub check_failures: Vec<(ModuleEntry, String)>,
    /// The error, when reconciliation failed (serialised only then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ModulePlan {
    /// A plan that changes nothing: every recorded entry is kept.
    pub fn unchanged(recorded: &[ModuleEntry], status: ReconcileStatus) -> Self {
        let error = match &status {
            ReconcileStatus::Failed(error) => Some(error.to_string()),
            _ => None,
        };
        Self {
            create: Vec::new(),
            delete: Vec::new(),
            keep: recorded.to_vec(),
            status,
            skipped: Vec::new(),
            check_failures: Vec::new(),
            error,
        }
    }

    /// `spec.clusterModules` after the plan, assuming every create succeeds
    /// (new modules have no UUID yet: they are listed with an empty one).
    pub fn resulting_entries(&self) -> Vec<ModuleEntry> {
        let mut entries = self.keep.clone();
        entries.extend(self.create.iter().map(|create| ModuleEntry {
            control_plane: create.control_plane,
            target_object_name: create.target_object_name.clone(),
            module_uuid: String::new(),
        }));
        entries
    }

    /// Whether the plan changes anything.
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.delete.is_empty()
    }
}

/// The inputs of one reconciliation.
#[derive(Debug, Clone, Copy)]
pub struct ReconcileInput<'a> {
    /// The VSphereCluster's `cluster.x-k8s.io/cluster-name` label.
    pub cluster_name: Option<&'a str>,
    /// The VSphereCluster's `spec.server`.
    pub server: &'a str,
    /// Its `spec.clusterModules`, in order.
    pub recorded: &'a [ModuleEntry],
    /// The cluster's KubeadmControlPlanes and MachineDeployments (deleting
    /// ones included).
    pub owners: &'a [ModuleOwner],
}

/// Why a live owner gets no module, if it does not (A.4).
fn skip_reason(owner: &ModuleOwner, server: &str) -> Option<String> {
    match &owner.template {
        InfrastructureTemplate::Other { kind } if kind.is_empty() => Some(
            "no infrastructure template reference (CAPV creates modules only for VSphereMachineTemplate)"
                .to_owned(),
        ),
        InfrastructureTemplate::Other { kind } => Some(format!(
            "infrastructure template kind {kind} is not VSphereMachineTemplate"
        )),
        InfrastructureTemplate::VSphere {
            name,
            server: Some(template_server),
        } if template_server != server => Some(format!(
            "VSphereMachineTemplate {name} uses server {template_server:?}, the VSphereCluster {server:?}"
        )),
        InfrastructureTemplate::VSphere { .. } => None,
    }
}

/// Reconcile with every recorded module taken to exist (offline).
pub fn reconcile_modules(input: ReconcileInput<'_>) -> ModulePlan {
    reconcile_modules_with(input, |_| ModuleState::Exists)
}

/// Reconcile, asking `vcenter` what it knows about each recorded module of
/// a live owner (see the module documentation for the rules).
pub fn reconcile_modules_with(
    input: ReconcileInput<'_>,
    mut vcenter: impl FnMut(&ModuleEntry) -> ModuleState,
) -> ModulePlan {
    if input.cluster_name.is_none() {
        return ModulePlan::unchanged(
            input.recorded,
            ReconcileStatus::Failed(ReconcileError::MissingClusterName),
        );
    }
    let mut control_planes: Vec<&str> = input
        .owners
        .iter()
        .filter(|owner| owner.kind == GroupKind::KubeadmControlPlane)
        .map(|owner| owner.name.as_str())
        .collect();
    if control_planes.len() > 1 {
        control_planes.sort_unstable();
        return ModulePlan::unchanged(
            input.recorded,
            ReconcileStatus::Failed(ReconcileError::MultipleControlPlanes {
                names: control_planes.into_iter().map(str::to_owned).collect(),
            }),
        );
    }
    // Live owners still waiting for a module, sorted (KCP first, then name).
    let mut waiting: Vec<&ModuleOwner> = input
        .owners
        .iter()
        .filter(|owner| !owner.deleting)
        .collect();
    waiting.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    waiting.dedup_by(|a, b| a.kind == b.kind && a.name == b.name);

    let mut plan = ModulePlan::unchanged(&[], ReconcileStatus::Reconciled);
    let mut replaced: Vec<(GroupKind, &str, String)> = Vec::new();
    for entry in input.recorded {
        let kind = entry.kind();
        let name = entry.target_object_name.as_str();
        let Some(position) = waiting
            .iter()
            .position(|owner| owner.kind == kind && owner.name == name)
        else {
            let reason = if input
                .owners
                .iter()
                .any(|o| o.kind == kind && o.name == name)
            {
                if plan
                    .keep
                    .iter()
                    .any(|kept| kept.kind() == kind && kept.target_object_name == name)
                    || replaced.iter().any(|(k, n, _)| *k == kind && *n == name)
                {
                    DeleteReason::Duplicate
                } else {
                    DeleteReason::OwnerDeleting
                }
            } else {
                DeleteReason::OwnerGone
            };
            plan.delete.push(ModuleDelete {
                target_object_name: entry.target_object_name.clone(),
                module_uuid: entry.module_uuid.clone(),
                reason,
            });
            continue;
        };
        match vcenter(entry) {
            ModuleState::Exists => {
                plan.keep.push(entry.clone());
                waiting.remove(position);
            }
            ModuleState::CheckFailed(message) => {
                plan.keep.push(entry.clone());
                plan.check_failures.push((entry.clone(), message));
                waiting.remove(position);
            }
            ModuleState::Missing => {
                // The owner stays waiting and gets a new module; the stale
                // entry is dropped without a removal.
                replaced.push((kind, name, entry.module_uuid.clone()));
            }
        }
    }
    for owner in waiting {
        if let Some(reason) = skip_reason(owner, input.server) {
            plan.skipped.push(SkippedOwner {
                kind: owner.kind,
                name: owner.name.clone(),
                reason,
            });
            continue;
        }
        let replaces = replaced
            .iter()
            .rev()
            .find(|(kind, name, _)| *kind == owner.kind && *name == owner.name)
            .map(|(_, _, uuid)| uuid.clone());
        plan.create.push(ModuleCreate {
            target_object_name: owner.name.clone(),
            control_plane: owner.kind.is_control_plane(),
            replaces,
        });
    }
    plan
}

/// The suffix of the error CAPV's module service returns when the template's
/// resource pool belongs to a standalone host rather than a compute cluster
/// (its `IncompatibleOwnerError`, recognised by this suffix alone).
pub const INCOMPATIBLE_OWNER_SUFFIX: &str = "not a compute cluster";

/// What vCenter answered when CAPV asked it to create one module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    /// The module exists now, with this UUID.
    Created(String),
    /// CAPV's service skipped the creation without an error (A.4: an owner
    /// whose template is not a VSphereMachineTemplate or lives on another
    /// vCenter): no entry, no error.
    Skipped,
    /// The template's resource pool is owned by a standalone host, named
    /// here: no entry; the error alone does not fail the reconciliation.
    IncompatibleOwner(String),
    /// Any other failure, with vCenter's message.
    Failed(String),
}

/// CAPV's `ClusterModulesReady` condition on the VSphereCluster after a
/// reconciliation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModulesCondition {
    /// `status: True`.
    pub ready: bool,
    /// The message (empty when ready).
    pub message: String,
}

/// The VSphereCluster after CAPV's reconciliation has carried out a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconcileResult {
    /// The new `spec.clusterModules`: the kept entries, then the created
    /// modules.
    pub entries: Vec<ModuleEntry>,
    /// The `ClusterModulesReady` condition, `None` when the reconciliation
    /// leaves it as it was (it failed before looking at any module).
    pub condition: Option<ModulesCondition>,
    /// The error the reconciliation returns (CAPV then retries), if any.
    pub error: Option<String>,
}

impl ModulePlan {
    /// Carry out the plan as CAPV's `ClusterModuleReconciler.Reconcile`
    /// does, given what vCenter answers to each creation:
    ///
    /// - the new `spec.clusterModules` are the kept entries, then every
    ///   created module (skipped and failed creations leave no entry);
    /// - failed existence checks and failed creations are collected, in
    ///   that order, into one message, `Failed to create cluster modules
    ///   for: <name> <error>, ...`; any makes the condition False with that
    ///   message, and the reconciliation returns the message as its error
    ///   unless every one of them is an incompatible owner
    ///   ([`INCOMPATIBLE_OWNER_SUFFIX`]);
    /// - otherwise the condition is True;
    /// - with the version gate closed the entries are kept and the
    ///   condition is False (`vCenter version V does not support cluster
    ///   modules`); when the reconciliation failed before looking at any
    ///   module, nothing changes and its error is returned; with
    ///   `disableClusterModule` CAPV does not reconcile at all.
    pub fn apply(
        &self,
        vcenter_version: &str,
        mut create: impl FnMut(&ModuleCreate) -> CreateOutcome,
    ) -> ReconcileResult {
        match &self.status {
            ReconcileStatus::Reconciled => {}
            ReconcileStatus::VersionUnsupported => {
                return ReconcileResult {
                    entries: self.keep.clone(),
                    condition: Some(ModulesCondition {
                        ready: false,
                        message: format!(
                            "vCenter version {vcenter_version} does not support cluster modules"
                        ),
                    }),
                    error: None,
                };
            }
            ReconcileStatus::Disabled => {
                return ReconcileResult {
                    entries: self.keep.clone(),
                    condition: None,
                    error: None,
                };
            }
            ReconcileStatus::Failed(error) => {
                return ReconcileResult {
                    entries: self.keep.clone(),
                    condition: None,
                    error: Some(format!("failed to get Machine owner objects: {error}")),
                };
            }
        }
        let mut entries = self.keep.clone();
        let mut errors: Vec<(String, String)> = self
            .check_failures
            .iter()
            .map(|(entry, message)| {
                (
                    entry.target_object_name.clone(),
                    format!(
                        "failed to check if cluster module {:?} exists: {message}",
                        entry.module_uuid
                    ),
                )
            })
            .collect();
        for wanted in &self.create {
            let failure = match create(wanted) {
                CreateOutcome::Created(uuid) => {
                    entries.push(ModuleEntry {
                        control_plane: wanted.control_plane,
                        target_object_name: wanted.target_object_name.clone(),
                        module_uuid: uuid,
                    });
                    continue;
                }
                CreateOutcome::Skipped => continue,
                CreateOutcome::IncompatibleOwner(resource) => {
                    format!("{resource} {INCOMPATIBLE_OWNER_SUFFIX}")
                }
                CreateOutcome::Failed(message) => message,
            };
            errors.push((
                wanted.target_object_name.clone(),
                format!("failed to create cluster module: {failure}"),
            ));
        }
        if errors.is_empty() {
            return ReconcileResult {
                entries,
                condition: Some(ModulesCondition {
                    ready: true,
                    message: String::new(),
                }),
                error: None,
            };
        }
        let message = format!(
            "Failed to create cluster modules for: {}",
            errors
                .iter()
                .map(|(name, error)| format!("{name} {error}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let only_incompatible = errors
            .iter()
            .all(|(_, error)| error.ends_with(INCOMPATIBLE_OWNER_SUFFIX));
        ReconcileResult {
            entries,
            condition: Some(ModulesCondition {
                ready: false,
                message: message.clone(),
            }),
            error: (!only_incompatible).then_some(message),
        }
    }
}
