//! Deferring to Cluster API's own Machine → Node label sync (B.9).
//!
//! Cluster API ≥ 1.4 copies Machine labels to Nodes on every Machine
//! reconcile and cannot be turned off; its bookkeeping annotation
//! `cluster.x-k8s.io/labels-from-machine` is the one `--sync-machine-labels`
//! uses too. Two writers of that annotation with different rules (another
//! `--additional-sync-machine-labels`, or CAPI's
//! `cluster.x-k8s.io/interruptible` label, which only CAPI can know from
//! the infrastructure machine) undo each other's keys forever. So the
//! controller syncs a Node's Machine labels only while no other field
//! manager owns that annotation on the Node: once Cluster API has written
//! it (its patch changes the value and so takes the field over), the Node
//! is Cluster API's and `--sync-machine-labels` leaves it alone. The host
//! label itself (its own keys, its own bookkeeping annotation) is written
//! either way.

use anti_affinity_placement::labels::LABELS_FROM_MACHINE_ANNOTATION;
use k8s_openapi::api::core::v1::Node;

/// The field manager, other than `own`, that owns the Node's
/// `labels-from-machine` annotation (Cluster API's machine controller, in
/// practice), if any.
pub fn foreign_sync_manager<'a>(node: &'a Node, own: &str) -> Option<&'a str> {
    let field = format!("f:{LABELS_FROM_MACHINE_ANNOTATION}");
    node.metadata
        .managed_fields
        .as_deref()
        .unwrap_or_default()
        .iter()
        .filter(|entry| entry.manager.as_deref() != Some(own))
        .find(|entry| {
            entry.fields_v1.as_ref().is_some_and(|fields| {
                fields.0["f:metadata"]["f:annotations"]
                    .get(&field)
                    .is_some()
            })
        })
        .map(|entry| entry.manager.as_deref().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(entries: serde_json::Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": "n1", "managedFields": entries}}))
            .unwrap()
    }

    fn owning(manager: &str, annotation: &str) -> serde_json::Value {
        json!({
            "manager": manager, "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:annotations": {format!("f:{annotation}"): {}}}},
        })
    }

    #[test]
    fn another_manager_of_labels_from_machine_is_found_and_ours_is_not() {
        let capi = node(json!([
            owning("host-label-controller", "x.example/managed"),
            owning("manager", LABELS_FROM_MACHINE_ANNOTATION),
        ]));
        assert_eq!(
            foreign_sync_manager(&capi, "host-label-controller"),
            Some("manager")
        );
        let ours = node(json!([owning(
            "host-label-controller",
            LABELS_FROM_MACHINE_ANNOTATION
        )]));
        assert_eq!(foreign_sync_manager(&ours, "host-label-controller"), None);
        let unrelated = node(json!([owning(
            "kube-controller-manager",
            "node.alpha.kubernetes.io/ttl"
        )]));
        assert_eq!(
            foreign_sync_manager(&unrelated, "host-label-controller"),
            None
        );
        assert_eq!(foreign_sync_manager(&node(json!([])), "x"), None);
    }
}
