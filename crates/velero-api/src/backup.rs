//! `velero.io/v1` Backup: the fields the backup queue reads (Q4.1–Q4.22).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use crate::string_enum::string_enum;

/// Spec of a Backup: only the namespace and label filters the queue's
/// overlap model reads (Q4.5–Q4.9).
///
/// A partial object: never `replace()` it, patch only the fields you own.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "Backup",
    namespaced,
    status = "BackupStatus",
    schema = "disabled",
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct BackupSpec {
    /// Namespaces to include; empty or `*` means all (Q4.9). Entries may be
    /// glob patterns (`*`, `?`, `[...]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_namespaces: Option<Vec<String>>,
    /// Namespaces to exclude; entries may be glob patterns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_namespaces: Option<Vec<String>>,
    /// Resources must match this selector to be backed up (ignored by the
    /// queue, Q4.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Resources matching any of these selectors are backed up (ignored by
    /// the queue, Q4.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub or_label_selectors: Option<Vec<LabelSelector>>,
    /// Name of the BackupStorageLocation (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_location: Option<String>,
}

string_enum! {
    /// Phase of a Backup (Q4.2).
    pub enum BackupPhase {
        /// Created, not yet queued (also the empty phase).
        New => "New",
        /// Waiting in the queue at `queuePosition`.
        Queued => "Queued",
        /// Dequeued; the backup controller will start it.
        ReadyToStart => "ReadyToStart",
        /// Running.
        InProgress => "InProgress",
        /// Waiting for asynchronous plugin operations (e.g. data movement).
        WaitingForPluginOperations => "WaitingForPluginOperations",
        /// Waiting for plugin operations after a partial failure.
        WaitingForPluginOperationsPartiallyFailed => "WaitingForPluginOperationsPartiallyFailed",
        /// Finalising.
        Finalizing => "Finalizing",
        /// Finalising after a partial failure.
        FinalizingPartiallyFailed => "FinalizingPartiallyFailed",
        /// Finished successfully.
        Completed => "Completed",
        /// Finished with errors.
        PartiallyFailed => "PartiallyFailed",
        /// Failed.
        Failed => "Failed",
        /// Rejected by validation.
        FailedValidation => "FailedValidation",
        /// Being deleted.
        Deleting => "Deleting",
    }
}

impl BackupPhase {
    /// `New` or the empty phase: not yet queued (Q4.10, Q4.17).
    pub fn is_new(&self) -> bool {
        matches!(self, Self::New) || self.as_str().is_empty()
    }

    /// `Queued`, `ReadyToStart` or `InProgress`: the phases the queue sees
    /// (Q4.3).
    pub fn is_active(&self) -> bool {
        matches!(self, Self::Queued | Self::ReadyToStart | Self::InProgress)
    }
}

/// Status of a Backup: what the queue reads and writes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupStatus {
    /// Current phase; absent means `New`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<BackupPhase>,
    /// 1-based position in the queue while `Queued`; absent or 0 otherwise
    /// (Q4.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<i64>,
    /// Validation errors (phase `FailedValidation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_errors: Option<Vec<String>>,
    /// Why the backup failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// When the backup started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    /// When the backup finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_timestamp: Option<Time>,
}

impl Backup {
    /// The phase, `New` when the status or phase is absent.
    pub fn phase(&self) -> BackupPhase {
        self.status
            .as_ref()
            .and_then(|status| status.phase.clone())
            .unwrap_or(BackupPhase::New)
    }

    /// The queue position, 0 when absent (Q4.2).
    pub fn queue_position(&self) -> i64 {
        self.status
            .as_ref()
            .and_then(|status| status.queue_position)
            .unwrap_or(0)
    }
}
