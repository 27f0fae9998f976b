//! Deferring to Cluster API's own Machine → Node label sync (B.9).
//!
//! Cluster API ≥ 1.4 copies Machine labels to Nodes on every Machine
//! reconcile and cannot be turned off; its bookkeeping annotation
//! `cluster.x-k8s.io/labels-from-machine` is the one `--sync-machine-labels`
//! uses too. Two writers of that annotation with different rules (another
//! `--additional-sync-machine-labels`, or CAPI's
//! `cluster.x-k8s.io/interruptible` label, which only CAPI can know from
//! the infrastructure machine) undo each other's keys forever. So the
//! controller syncs a Node's Machine labels only while nothing shows that
//! Cluster API syncs them ([`cluster_api_syncs`]):
//!
//! - the Node carries `cluster.x-k8s.io/annotations-from-machine`, which
//!   Cluster API's `patchNode` writes on every Node it patches (v1.14) and
//!   this controller never writes; or
//! - another field manager owns `labels-from-machine` on the Node (a patch
//!   that changes the value takes the field over; the API server records
//!   owners once the object has been server-side applied at least once,
//!   as real Nodes are).
//!
//! From then on the Node's Machine labels are Cluster API's and
//! `--sync-machine-labels` leaves them alone. The host label itself (its
//! own keys, its own bookkeeping annotation) is written either way.

use anti_affinity_placement::labels::LABELS_FROM_MACHINE_ANNOTATION;
use k8s_openapi::api::core::v1::Node;

/// The Node annotation in which Cluster API records the annotations it
/// copied from the Machine; only Cluster API writes it.
pub const ANNOTATIONS_FROM_MACHINE_ANNOTATION: &str = "cluster.x-k8s.io/annotations-from-machine";

/// Why a Node's Machine labels are left to Cluster API, or `None` when
/// nothing shows that Cluster API syncs them. `own` is this controller's
/// field manager.
pub fn cluster_api_syncs(node: &Node, own: &str) -> Option<String> {
    let annotated = node
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(ANNOTATIONS_FROM_MACHINE_ANNOTATION));
    if annotated {
        return Some(format!(
            "the Node has Cluster API's annotation {ANNOTATIONS_FROM_MACHINE_ANNOTATION}"
        ));
    }
    foreign_sync_manager(node, own)
        .map(|manager| format!("field manager {manager:?} owns {LABELS_FROM_MACHINE_ANNOTATION}"))
}

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

    #[test]
    fn cluster_api_shows_by_its_annotation_or_by_owning_the_bookkeeping() {
        let annotated: Node = serde_json::from_value(json!({"metadata": {
            "name": "n1",
            "annotations": {ANNOTATIONS_FROM_MACHINE_ANNOTATION: ""},
        }}))
        .unwrap();
        insta::assert_snapshot!(
            cluster_api_syncs(&annotated, "host-label-controller").unwrap_or_default(),
            @"the Node has Cluster API's annotation cluster.x-k8s.io/annotations-from-machine"
        );
        let owned = node(json!([owning("manager", LABELS_FROM_MACHINE_ANNOTATION)]));
        insta::assert_snapshot!(
            cluster_api_syncs(&owned, "host-label-controller").unwrap_or_default(),
            @r#"field manager "manager" owns cluster.x-k8s.io/labels-from-machine"#
        );
        let plain = node(json!([owning(
            "host-label-controller",
            LABELS_FROM_MACHINE_ANNOTATION
        )]));
        assert_eq!(cluster_api_syncs(&plain, "host-label-controller"), None);
    }
}
