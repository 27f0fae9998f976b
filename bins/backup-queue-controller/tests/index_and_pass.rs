//! The index and the pass, synchronously: Backups and Namespaces are fed to
//! the index the way the runtime's watches do, and the pass is a function
//! call.

use backup_queue::StatusChange;
use backup_queue_controller::backup_write::ReasonUpdate;
use backup_queue_controller::index::QueueIndex;
use backup_queue_controller::{REASON_ANNOTATION, pass, queue_position_entry};
use controller_kit::snapshot::IndexResource;
use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use velero_api::Backup;

fn backup(name: &str, rv: &str, minute: i64, phase: &str, position: i64, ns: &[&str]) -> Backup {
    let created = jiff::Timestamp::from_second(1_700_000_000 + 60 * minute).unwrap();
    serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "Backup",
        "metadata": {"name": name, "namespace": "velero", "resourceVersion": rv,
                     "creationTimestamp": created.to_string()},
        "spec": {"includedNamespaces": ns},
        "status": {"phase": phase, "queuePosition": position},
    }))
    .unwrap()
}

fn namespace(name: &str) -> Namespace {
    serde_json::from_value(json!({"metadata": {"name": name}})).unwrap()
}

fn index() -> QueueIndex {
    let mut index = QueueIndex::new(1);
    index.reset(vec![namespace("a"), namespace("b")], vec![]);
    index.reset(
        vec![
            backup("running", "1", 1, "InProgress", 0, &["a"]),
            backup("next", "2", 2, "New", 0, &["a", "b"]),
            backup("other", "3", 3, "New", 0, &["b"]),
        ],
        vec![],
    );
    index
}

#[test]
fn new_backups_are_queued_with_their_reasons_conditioned_on_their_versions() {
    let index = index();
    let plan = pass::plan(&index);
    assert!(plan.explained);
    assert_eq!(plan.active, 1);
    let writes: Vec<(&str, Option<&str>, Option<StatusChange>)> = plan
        .writes
        .iter()
        .map(|w| (w.backup.as_str(), w.resource_version.as_deref(), w.change))
        .collect();
    assert_eq!(
        writes,
        [
            (
                "next",
                Some("2"),
                Some(StatusChange::Enqueue { position: 1 })
            ),
            (
                "other",
                Some("3"),
                Some(StatusChange::Enqueue { position: 2 })
            ),
        ]
    );
    assert!(
        matches!(&plan.writes[0].reason, ReasonUpdate::Set(r) if r.contains("overlaps backup running"))
    );
}

#[test]
fn the_fast_path_is_taken_until_something_the_reasons_depend_on_changes() {
    // The steady state: both waiting backups already queued in place.
    let mut index = QueueIndex::new(1);
    index.reset(vec![namespace("a"), namespace("b")], vec![]);
    index.reset(
        vec![
            backup("running", "1", 1, "InProgress", 0, &["a"]),
            backup("next", "2", 2, "Queued", 1, &["a", "b"]),
            backup("other", "3", 3, "Queued", 2, &["b"]),
        ],
        vec![],
    );
    assert!(index.needs_explaining());
    index.explained();
    // A label or progress change of the running backup: no explanations.
    let mut touched = backup("running", "9", 1, "InProgress", 0, &["a"]);
    touched.metadata.labels = Some([("x".to_owned(), "y".to_owned())].into());
    index.apply(touched);
    assert!(!index.needs_explaining());
    let plan = pass::plan(&index);
    assert!(!plan.explained, "the fast path");
    assert!(plan.writes.is_empty());
    // A user editing our annotation makes the pass explain (and rewrite it).
    let mut edited = backup("next", "10", 2, "Queued", 1, &["a", "b"]);
    edited.metadata.annotations = Some([(REASON_ANNOTATION.to_owned(), "x".to_owned())].into());
    index.apply(edited);
    assert!(index.needs_explaining());
    index.explained();
    // The running backup completes: explained, and `next` starts.
    index.apply(backup("running", "11", 1, "Completed", 0, &["a"]));
    assert!(index.needs_explaining());
    let plan = pass::plan(&index);
    assert!(plan.explained);
    assert!(
        plan.writes
            .iter()
            .any(|w| w.backup == "next" && w.change == Some(StatusChange::Start))
    );
}

#[test]
fn a_fast_plan_that_writes_is_explained_after_all() {
    let mut index = index();
    // Pretend the last explained plan was carried out although nothing was
    // written (e.g. a fault between passes): the fast path finds writes.
    index.explained();
    let plan = pass::plan(&index);
    assert!(plan.explained);
    assert_eq!(plan.writes.len(), 2);
}

#[test]
fn deletes_and_namespace_changes_are_tracked_and_other_position_writers_seen() {
    let mut index = index();
    index.explained();
    IndexResource::<Backup>::delete(&mut index, ObjectRef::new("running").within("velero"));
    assert!(index.needs_explaining());
    assert!(index.backup("running").is_none());
    index.explained();
    IndexResource::<Namespace>::delete(&mut index, ObjectRef::new("b"));
    assert!(index.needs_explaining());

    let mut foreign = backup("other", "20", 3, "Queued", 2, &["b"]);
    foreign.metadata.managed_fields =
        Some(serde_json::from_value(json!([queue_position_entry("velero-server")])).unwrap());
    index.apply(foreign);
    assert_eq!(
        index.foreign_writers().iter().cloned().collect::<Vec<_>>(),
        [("other".to_owned(), "velero-server".to_owned())]
    );
    index.apply(backup("other", "21", 3, "Queued", 2, &["b"]));
    assert!(index.foreign_writers().is_empty());
}
