//! Velero `Backup` objects to the planner's [`BackupInput`], and the
//! annotation this controller owns.

use backup_queue::{BackupInput, NamespaceFilter, Phase};
use jiff::Timestamp;
use kube::ResourceExt;
use velero_api::Backup;

/// Why a backup is still `Queued`, in words. Velero's `BackupStatus` has no
/// message field (and Velero's CRD schema would prune one), so the reason is
/// kept in this annotation, written together with the status and removed
/// when the backup starts.
pub const REASON_ANNOTATION: &str = "backup-queue.placement-policies.io/waiting-reason";

/// The planner's view of a Backup. A missing creation timestamp sorts first
/// (the Unix epoch); a negative or oversized `queuePosition` is treated as
/// unset (0), as the planner documents.
pub fn backup_input(backup: &Backup) -> BackupInput {
    let status = backup.status.as_ref();
    let phase = status
        .and_then(|s| s.phase.as_ref())
        .map_or(Phase::New, |p| Phase::from_velero(p.as_str()));
    let position = status
        .and_then(|s| s.queue_position)
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or(0);
    BackupInput {
        name: backup.name_any(),
        resource_version: backup.resource_version(),
        phase,
        queue_position: position,
        created: backup
            .metadata
            .creation_timestamp
            .as_ref()
            .map_or(Timestamp::UNIX_EPOCH, |t| t.0),
        namespaces: NamespaceFilter {
            included: backup.spec.included_namespaces.clone().unwrap_or_default(),
            excluded: backup.spec.excluded_namespaces.clone().unwrap_or_default(),
        },
    }
}

/// The current value of [`REASON_ANNOTATION`].
pub fn current_reason(backup: &Backup) -> Option<&str> {
    backup
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REASON_ANNOTATION))
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn backup(v: serde_json::Value) -> Backup {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn maps_phase_position_filter_and_creation() {
        let b = backup(json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": {"name": "b1", "namespace": "velero", "resourceVersion": "7",
                         "creationTimestamp": "2026-01-02T03:04:05Z"},
            "spec": {"includedNamespaces": ["a", "b*"], "excludedNamespaces": ["bx"]},
            "status": {"phase": "Queued", "queuePosition": 3}
        }));
        let input = backup_input(&b);
        assert_eq!(input.name, "b1");
        assert_eq!(input.resource_version.as_deref(), Some("7"));
        assert_eq!(input.phase, Phase::Queued);
        assert_eq!(input.queue_position, 3);
        assert_eq!(input.created.to_string(), "2026-01-02T03:04:05Z");
        assert_eq!(input.namespaces.included, ["a", "b*"]);
        assert_eq!(input.namespaces.excluded, ["bx"]);
    }

    #[test]
    fn missing_status_is_new_and_negative_positions_are_unset() {
        let b = backup(json!({"metadata": {"name": "b"}, "spec": {}}));
        let input = backup_input(&b);
        assert_eq!(input.phase, Phase::New);
        assert_eq!(input.created, Timestamp::UNIX_EPOCH);
        assert!(input.namespaces.included.is_empty());
        let b = backup(json!({"metadata": {"name": "b"}, "spec": {},
            "status": {"phase": "Completed", "queuePosition": -4}}));
        let input = backup_input(&b);
        assert_eq!(input.phase, Phase::Other);
        assert_eq!(input.queue_position, 0);
    }
}
