//! `Backup` → [`BackupInput`].

use backup_queue::{BackupInput, NamespaceFilter, Phase};
use velero_api::Backup;

use crate::meta::created_or_epoch;

/// The backup queue's view of a Backup.
///
/// - `name`: `metadata.name` (empty when absent; the API server never
///   stores an object without one).
/// - `phase`: `status.phase`, absent or empty meaning `New`
///   ([`Phase::from_velero`]).
/// - `queue_position`: `status.queuePosition` through [`queue_position`].
/// - `created`: `metadata.creationTimestamp`, the Unix epoch when absent.
/// - `namespaces`: `spec.includedNamespaces` and `spec.excludedNamespaces`
///   verbatim (absent means empty, which the queue reads as every
///   namespace, as Velero does).
pub fn backup_input(backup: &Backup) -> BackupInput {
    let spec = &backup.spec;
    BackupInput {
        name: backup.metadata.name.clone().unwrap_or_default(),
        resource_version: backup.metadata.resource_version.clone(),
        phase: Phase::from_velero(backup.phase().as_str()),
        queue_position: queue_position(backup.queue_position()),
        created: created_or_epoch(&backup.metadata),
        namespaces: NamespaceFilter {
            included: spec.included_namespaces.clone().unwrap_or_default(),
            excluded: spec.excluded_namespaces.clone().unwrap_or_default(),
        },
    }
}

/// `status.queuePosition` (an `int` in Velero, unbounded in its CRD schema)
/// clamped into the queue's `0..=u32::MAX`.
///
/// Velero orders `Queued` backups by this integer and nothing else (its
/// `queuePositionOrderFunc`; `earlierThan` compares with `<`), so the one
/// reading that keeps Velero's order is a monotone one: a position above
/// `u32::MAX` stays behind every smaller position (it is not reset to 0,
/// which would move it to the head of the queue), and a negative position
/// stays ahead of every positive one. Velero itself only ever writes
/// `1..=n` (and 0 once dequeued); out-of-range values come from hand edits.
/// Several positions clamped to the same bound are ordered by the queue's
/// next keys (creation time, then name); see `docs/compatibility.md`.
pub fn queue_position(position: i64) -> u32 {
    u32::try_from(position.max(0)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::Timestamp;
    use serde_json::json;

    fn backup(value: serde_json::Value) -> Backup {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn maps_phase_position_filter_and_creation() {
        let input = backup_input(&backup(json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": {"name": "b1", "namespace": "velero", "resourceVersion": "7",
                         "creationTimestamp": "2026-01-02T03:04:05Z"},
            "spec": {"includedNamespaces": ["a", "b*"], "excludedNamespaces": ["bx"]},
            "status": {"phase": "Queued", "queuePosition": 3}
        })));
        assert_eq!(input.name, "b1");
        assert_eq!(input.resource_version.as_deref(), Some("7"));
        assert_eq!(input.phase, Phase::Queued);
        assert_eq!(input.queue_position, 3);
        assert_eq!(input.created.to_string(), "2026-01-02T03:04:05Z");
        assert_eq!(input.namespaces.included, ["a", "b*"]);
        assert_eq!(input.namespaces.excluded, ["bx"]);
    }

    #[test]
    fn missing_status_is_new_at_the_epoch_covering_every_namespace() {
        let input = backup_input(&backup(json!({"metadata": {"name": "b"}, "spec": {}})));
        assert_eq!(input.phase, Phase::New);
        assert_eq!(input.queue_position, 0);
        assert_eq!(input.created, Timestamp::UNIX_EPOCH);
        assert_eq!(input.namespaces, NamespaceFilter::all());
        let input = backup_input(&backup(
            json!({"metadata": {"name": "b"}, "spec": {}, "status": {"phase": ""}}),
        ));
        assert_eq!(input.phase, Phase::New);
    }

    #[test]
    fn unknown_and_post_processing_phases_are_invisible_to_the_queue() {
        for phase in [
            "Completed",
            "WaitingForPluginOperations",
            "Finalizing",
            "Bogus",
        ] {
            let input = backup_input(&backup(
                json!({"metadata": {"name": "b"}, "spec": {}, "status": {"phase": phase}}),
            ));
            assert_eq!(input.phase, Phase::Other, "{phase}");
        }
    }

    /// Pins the one reading of an out-of-range `queuePosition`: clamped, so
    /// an oversized position stays at the back of the queue (it was 0, the
    /// head, in one of two former copies of this conversion).
    #[test]
    fn oversized_positions_saturate_and_negative_positions_clamp_to_zero() {
        assert_eq!(queue_position(i64::from(u32::MAX) + 1), u32::MAX);
        assert_eq!(queue_position(i64::MAX), u32::MAX);
        assert_eq!(queue_position(i64::from(u32::MAX)), u32::MAX);
        assert_eq!(queue_position(7), 7);
        assert_eq!(queue_position(0), 0);
        assert_eq!(queue_position(-4), 0);
        assert_eq!(queue_position(i64::MIN), 0);
        let input = backup_input(&backup(json!({"metadata": {"name": "b"}, "spec": {},
            "status": {"phase": "Queued", "queuePosition": 5_000_000_000_i64}})));
        assert_eq!(input.queue_position, u32::MAX);
    }

    /// Velero's order by position survives the clamp (never inverted; ties
    /// only where both sides hit the same bound).
    #[test]
    fn clamping_never_inverts_velero_order() {
        let samples = [
            i64::MIN,
            -1,
            0,
            1,
            2,
            i64::from(u32::MAX) - 1,
            i64::from(u32::MAX),
            i64::from(u32::MAX) + 1,
            i64::MAX,
        ];
        for a in samples {
            for b in samples {
                if a < b {
                    assert!(queue_position(a) <= queue_position(b), "{a} < {b}");
                }
            }
        }
    }
}
