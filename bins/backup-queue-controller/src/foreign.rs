//! Detecting another writer of queue positions through `managedFields`.
//!
//! Velero's own queue controller (Velero versions that have it, unless
//! disabled with `--disable-controllers`) and this controller must never
//! both order the same queue. The API server records, per field manager,
//! which fields it last set; a manager other than ours owning
//! `status.queuePosition` means someone else writes positions.

use kube::ResourceExt;
use serde_json::Value;
use velero_api::Backup;

/// The field managers other than `ours` that own `status.queuePosition`
/// (`fieldsV1` contains `f:status` → `f:queuePosition`), sorted, without
/// duplicates.
pub fn foreign_queue_writers(backup: &Backup, ours: &str) -> Vec<String> {
    let mut out: Vec<String> = backup
        .managed_fields()
        .iter()
        .filter(|entry| entry.manager.as_deref().is_some_and(|m| m != ours))
        .filter(|entry| {
            entry
                .fields_v1
                .as_ref()
                .and_then(|f| f.0.get("f:status"))
                .and_then(|s| s.get("f:queuePosition"))
                .is_some_and(|v| !v.is_null())
        })
        .filter_map(|entry| entry.manager.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A `managedFields` entry claiming `status.queuePosition` for `manager`
/// (what the API server records after `manager` writes a position); used by
/// tests and docs.
pub fn queue_position_entry(manager: &str) -> Value {
    serde_json::json!({
        "manager": manager,
        "operation": "Update",
        "apiVersion": "velero.io/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {".": {}, "f:phase": {}, "f:queuePosition": {}}}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_other_managers_owning_the_position_count() {
        let b: Backup = serde_json::from_value(json!({
            "metadata": {"name": "b", "managedFields": [
                queue_position_entry("velero-server"),
                queue_position_entry("backup-queue-controller"),
                {"manager": "kubectl", "operation": "Update",
                 "fieldsV1": {"f:spec": {"f:includedNamespaces": {}}}},
                {"manager": "velero-backup", "operation": "Update",
                 "fieldsV1": {"f:status": {"f:phase": {}}}},
                queue_position_entry("velero-server"),
            ]},
            "spec": {}
        }))
        .unwrap();
        assert_eq!(
            foreign_queue_writers(&b, "backup-queue-controller"),
            ["velero-server"]
        );
        assert!(foreign_queue_writers(&b, "velero-server").len() == 1);
    }
}
