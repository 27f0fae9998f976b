//! Plain input types: what the planner needs to know about each Backup.
//!
//! The controller and the CLI map Velero `Backup` objects into these structs;
//! this crate knows nothing about the Velero CRD itself.

use jiff::Timestamp;

/// The phase of a Backup as far as the queue is concerned (Q4.2, Q4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// `""` or `New`: not yet queued (Q4.10).
    New,
    /// `Queued`: waiting in the queue with a `queuePosition`.
    Queued,
    /// `ReadyToStart`: dequeued, waiting for the backup controller.
    ReadyToStart,
    /// `InProgress`: being backed up.
    InProgress,
    /// Any other phase (post-processing `WaitingForPluginOperations*`,
    /// `Finalizing*`, terminal phases, unknown strings): invisible to the
    /// queue, neither counted nor blocking namespaces (Q4.3, Q4.16).
    Other,
}

impl Phase {
    /// Maps a Velero `status.phase` string (`""` and `"New"` both mean
    /// [`Phase::New`]; unknown strings mean [`Phase::Other`]).
    pub fn from_velero(phase: &str) -> Self {
        match phase {
            "" | "New" => Self::New,
            "Queued" => Self::Queued,
            "ReadyToStart" => Self::ReadyToStart,
            "InProgress" => Self::InProgress,
            _ => Self::Other,
        }
    }

    /// True for the phases that occupy a concurrency slot and block their
    /// namespaces (`ReadyToStart`, `InProgress`).
    pub fn is_active(self) -> bool {
        matches!(self, Self::ReadyToStart | Self::InProgress)
    }

    /// True for the phases the queue orders (`New`, `Queued`).
    pub fn is_waiting(self) -> bool {
        matches!(self, Self::New | Self::Queued)
    }

    /// The Velero phase string (`Other` has none and gives `"Other"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::New => "New",
            Self::Queued => "Queued",
            Self::ReadyToStart => "ReadyToStart",
            Self::InProgress => "InProgress",
            Self::Other => "Other",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The namespace filter of a Backup spec (`spec.includedNamespaces`,
/// `spec.excludedNamespaces`).
///
/// A label-selector-only backup (no `includedNamespaces`) has an empty
/// `included` list and therefore covers every namespace (Q4.9); label
/// selectors, resource filters and cluster-scoped resources play no part in
/// overlap.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NamespaceFilter {
    /// Included namespaces or wildcard patterns; empty or containing `*`
    /// means every namespace.
    pub included: Vec<String>,
    /// Excluded namespaces or wildcard patterns.
    pub excluded: Vec<String>,
}

impl NamespaceFilter {
    /// A filter covering every namespace (a whole-cluster or
    /// label-selector-only backup).
    pub fn all() -> Self {
        Self::default()
    }

    /// A filter including exactly the given namespaces or patterns.
    pub fn including<I, S>(included: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            included: included.into_iter().map(Into::into).collect(),
            excluded: Vec::new(),
        }
    }

    /// The same filter with the given excluded namespaces or patterns.
    #[must_use]
    pub fn excluding<I, S>(mut self, excluded: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.excluded = excluded.into_iter().map(Into::into).collect();
        self
    }
}

/// One Backup as the queue sees it. Backups are identified by `name`; one
/// [`QueueInput`] describes the backups of one Velero namespace (Velero's
/// queue never looks across namespaces, Q4.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInput {
    /// `metadata.name`; unique within the queue.
    pub name: String,
    /// `metadata.resourceVersion` the snapshot was taken at, copied opaquely
    /// into every write for this backup so the writer can make it
    /// conditional (a stale write then fails with 409 instead of clobbering).
    pub resource_version: Option<String>,
    /// `status.phase`.
    pub phase: Phase,
    /// `status.queuePosition` (0 = unset; negative values should be mapped
    /// to 0).
    pub queue_position: u32,
    /// `metadata.creationTimestamp`, the first tie-break after the position.
    pub created: Timestamp,
    /// The namespace filter of the spec.
    pub namespaces: NamespaceFilter,
}

/// A snapshot of one queue: every backup of one Velero namespace, the
/// cluster's namespaces and the concurrency limit.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueueInput {
    /// The backups (any order; names must be unique, a later duplicate
    /// replaces an earlier one).
    pub backups: Vec<BackupInput>,
    /// The names of the cluster's Namespace objects (any order).
    pub cluster_namespaces: Vec<String>,
    /// `--concurrent-backups`; values below 1 mean 1 (Q4.1).
    pub concurrent_backups: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn velero_phase_strings_map_to_queue_phases() {
        assert_eq!(Phase::from_velero(""), Phase::New);
        assert_eq!(Phase::from_velero("New"), Phase::New);
        assert_eq!(Phase::from_velero("Queued"), Phase::Queued);
        assert_eq!(Phase::from_velero("ReadyToStart"), Phase::ReadyToStart);
        assert_eq!(Phase::from_velero("InProgress"), Phase::InProgress);
        for other in [
            "WaitingForPluginOperations",
            "WaitingForPluginOperationsPartiallyFailed",
            "Finalizing",
            "FinalizingPartiallyFailed",
            "Completed",
            "PartiallyFailed",
            "Failed",
            "FailedValidation",
            "Deleting",
            "SomethingNew",
        ] {
            assert_eq!(Phase::from_velero(other), Phase::Other, "{other}");
        }
        assert!(Phase::ReadyToStart.is_active() && Phase::InProgress.is_active());
        assert!(!Phase::Queued.is_active() && Phase::Queued.is_waiting());
    }
}
