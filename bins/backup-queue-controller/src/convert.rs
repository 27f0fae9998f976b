//! The annotation this controller owns on Velero `Backup` objects. (Backups
//! become planner input through `kube_adapters::velero::backup_input`.)

use velero_api::Backup;

/// Why a backup is still `Queued`, in words. Velero's `BackupStatus` has no
/// message field (and Velero's CRD schema would prune one), so the reason is
/// kept in this annotation, written together with the status and removed
/// when the backup starts.
pub const REASON_ANNOTATION: &str = "backup-queue.placement-policies.io/waiting-reason";

/// The current value of [`REASON_ANNOTATION`].
pub fn current_reason(backup: &Backup) -> Option<&str> {
    backup
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REASON_ANNOTATION))
        .map(String::as_str)
}
