//! Worked scenarios: the design document's example, Velero's edge cases
//! (namespace sets, order of checks, positions, restart: Q4.5–Q4.21) and this crate's deliberate differences.

mod common;

use backup_queue::{
    NamespaceFilter, Phase, QueueEvent, QueueState, StatusChange, WaitReason, plan, reference,
};
use common::*;

/// The design document's five backups, `--concurrent-backups=2`.
fn design_scenario() -> backup_queue::QueueInput {
    input(
        vec![
            backup("backup1", &["ns1", "ns2"], Phase::InProgress, 0, 1),
            backup("backup2", &["ns2", "ns3", "ns5"], Phase::Queued, 1, 2),
            backup("backup3", &["ns4", "ns3"], Phase::Queued, 2, 3),
            backup("backup4", &["ns5", "ns6"], Phase::Queued, 2, 4),
            backup("backup5", &["ns8", "ns9"], Phase::Queued, 3, 5),
        ],
        &[
            "ns1", "ns2", "ns3", "ns4", "ns5", "ns6", "ns7", "ns8", "ns9",
        ],
        2,
    )
}

#[test]
fn design_scenario_starts_backup5_only() {
    let p = plan(&design_scenario());
    assert_eq!(p.started().collect::<Vec<_>>(), ["backup5"]);
    insta::assert_snapshot!("design_scenario_plan", p.to_string());
    insta::assert_debug_snapshot!("design_scenario_writes", p.writes);
}

#[test]
fn design_scenario_after_backup1_completes_starts_backup2() {
    let mut state = design_scenario();
    let first = plan(&state);
    first.apply_to(&mut state);
    state.backups[0].phase = Phase::Other; // backup1 Completed
    let p = plan(&state);
    assert_eq!(p.started().collect::<Vec<_>>(), ["backup2"]);
    insta::assert_snapshot!("design_scenario_after_backup1_completes", p.to_string());
}

#[test]
fn design_scenario_agrees_with_velero_where_positions_are_distinct() {
    // D4.6: Velero does not compare backup3 and backup4 (equal positions);
    // they do not overlap here, so the outcome is the same.
    let input = design_scenario();
    let velero = reference::run_to_fixed_point(&input);
    let mut after = input.clone();
    plan(&input).apply_to(&mut after);
    for (r, b) in velero.backups.iter().zip(&after.backups) {
        assert_eq!(r.phase, b.phase, "{}", r.name);
    }
}

#[test]
fn new_backups_queue_in_creation_order_with_name_tie_break() {
    let input = input(
        vec![
            backup("running", &["a"], Phase::InProgress, 0, 0),
            backup("q", &["a"], Phase::Queued, 7, 0),
            backup("z-new", &["a"], Phase::New, 0, 5),
            backup("b-new", &["a"], Phase::New, 0, 3),
            backup("a-new", &["a"], Phase::New, 0, 5),
        ],
        &["a"],
        1,
    );
    let p = plan(&input);
    let writes: Vec<_> = p.writes.iter().map(|w| (&*w.backup, w.change)).collect();
    assert_eq!(
        writes,
        [
            ("q", StatusChange::Reposition { from: 7, to: 1 }),
            ("b-new", StatusChange::Enqueue { position: 2 }),
            ("a-new", StatusChange::Enqueue { position: 3 }),
            ("z-new", StatusChange::Enqueue { position: 4 }),
        ]
    );
}

#[test]
fn a_new_backup_with_room_starts_directly() {
    let p = plan(&input(
        vec![backup("n", &["a"], Phase::New, 0, 0)],
        &["a"],
        1,
    ));
    assert_eq!(p.writes.len(), 1);
    assert_eq!(p.writes[0].change, StatusChange::Start);
    assert_eq!(p.writes[0].resource_version.as_deref(), Some("rv-n"));
}

#[test]
fn equal_positions_never_start_two_overlapping_backups() {
    // W4.4: two New backups raced to the same position. Velero, reconciling
    // both from a cache that does not show the other's dequeue yet, finds
    // neither "earlier" than the other and starts both.
    let input = input(
        vec![
            backup("second", &["a", "b"], Phase::Queued, 1, 2),
            backup("first", &["b", "c"], Phase::Queued, 1, 1),
        ],
        &["a", "b", "c"],
        5,
    );
    let p = plan(&input);
    assert_eq!(p.started().collect::<Vec<_>>(), ["first"]);
    insta::assert_snapshot!("equal_positions", p.to_string());
}

#[test]
fn zero_positions_sort_first_but_still_check_overlap() {
    // Q4.12: Velero lets a Queued backup at position 0 skip every check.
    let input = input(
        vec![
            backup("running", &["a"], Phase::InProgress, 0, 0),
            backup("zero", &["a"], Phase::Queued, 0, 5),
            backup("one", &["b"], Phase::Queued, 1, 1),
        ],
        &["a", "b"],
        3,
    );
    let p = plan(&input);
    assert_eq!(p.started().collect::<Vec<_>>(), ["one"]);
    assert_eq!(&*p.waiting[0].backup, "zero");
    assert_eq!(p.waiting[0].position, 1);
    assert!(matches!(
        p.waiting[0].reason,
        WaitReason::OverlapsActive { .. }
    ));
}

#[test]
fn all_namespace_and_label_selector_only_backups_overlap_everything() {
    let input = input(
        vec![
            backup("labels-only", &[], Phase::InProgress, 0, 0),
            backup("one-ns", &["web"], Phase::Queued, 1, 1),
            backup("not-yet-created", &["future"], Phase::Queued, 2, 2),
        ],
        &["web", "db"],
        4,
    );
    let p = plan(&input);
    assert_eq!(p.started().count(), 0);
    insta::assert_snapshot!("all_namespace_backup_blocks_everything", p.to_string());
}

#[test]
fn namespaces_that_do_not_exist_yet_still_conflict() {
    // Velero resolves "future" to the empty set and starts both (W4.5).
    let input = input(
        vec![
            backup("first", &["future"], Phase::Queued, 1, 1),
            backup("second", &["future", "web"], Phase::Queued, 2, 2),
            backup("glob", &["fut*"], Phase::Queued, 3, 3),
        ],
        &["web"],
        4,
    );
    let p = plan(&input);
    assert_eq!(p.started().collect::<Vec<_>>(), ["first"]);
    let reasons: Vec<String> = p
        .waiting
        .iter()
        .map(|w| format!("{}: {}", w.backup, w.reason))
        .collect();
    insta::assert_debug_snapshot!("not_yet_existing_namespaces", reasons);
    let velero = reference::run_to_fixed_point(&input);
    assert_eq!(
        velero
            .backups
            .iter()
            .filter(|b| b.phase == Phase::ReadyToStart)
            .count(),
        3
    );
}

#[test]
fn a_backup_whose_set_is_empty_conflicts_with_nothing() {
    let input = input(
        vec![
            backup("all", &["*"], Phase::InProgress, 0, 0),
            backup("nothing", &["nomatch-*"], Phase::Queued, 1, 1),
            backup("excluded", &["web"], Phase::Queued, 2, 2),
        ],
        &["web"],
        3,
    );
    let mut input = input;
    input.backups[2].namespaces = NamespaceFilter::including(["web"]).excluding(["w*"]);
    let p = plan(&input);
    assert_eq!(p.started().collect::<Vec<_>>(), ["nothing", "excluded"]);
}

#[test]
fn invalid_patterns_are_reported_and_held_as_all_namespaces() {
    let mut input = input(
        vec![
            backup("running", &["a"], Phase::InProgress, 0, 0),
            backup("bad", &["a-(x)*"], Phase::Queued, 1, 1),
            backup("bad-exclude", &["b"], Phase::Queued, 2, 2),
        ],
        &["a", "b"],
        3,
    );
    input.backups[2].namespaces = NamespaceFilter::including(["b"]).excluding(["b**"]);
    let p = plan(&input);
    assert_eq!(p.started().count(), 0);
    insta::assert_snapshot!("invalid_patterns", p.to_string());
}

#[test]
fn capacity_counts_ready_to_start_and_in_progress_objects_only() {
    // Q4.3: post-processing and terminal phases are invisible; Q4.21: a
    // ReadyToStart survivor of a restart counts (Velero's tracker forgets it).
    let input = input(
        vec![
            backup("survivor", &["a"], Phase::ReadyToStart, 0, 0),
            backup("finalizing", &["b"], Phase::Other, 0, 0),
            backup("q", &["b"], Phase::Queued, 1, 1),
        ],
        &["a", "b"],
        1,
    );
    let p = plan(&input);
    assert_eq!(p.started().count(), 0);
    assert_eq!(p.waiting[0].reason, WaitReason::CapacityFull { limit: 1 });
    assert_eq!(
        p.waiting[0].reason.to_string(),
        "capacity full: all 1 concurrent backup slots are taken"
    );
}

#[test]
fn concurrency_below_one_means_one() {
    let input = input(
        vec![
            backup("x", &["a"], Phase::Queued, 1, 0),
            backup("y", &["b"], Phase::Queued, 2, 0),
        ],
        &["a", "b"],
        0,
    );
    let p = plan(&input);
    assert_eq!(p.started().collect::<Vec<_>>(), ["x"]);
    assert_eq!(p.concurrent_backups, 1);
}

#[test]
fn renumbering_writes_only_changed_positions() {
    let input = input(
        vec![
            backup("a", &["x"], Phase::Queued, 1, 0),
            backup("b", &["y"], Phase::Queued, 2, 0),
            backup("c", &["x"], Phase::Queued, 3, 0),
            backup("d", &["z"], Phase::Queued, 5, 0),
        ],
        &["x", "y", "z"],
        2,
    );
    // a and b start; c moves 3 -> 1 and d 5 -> 2.
    let p = plan(&input);
    let writes: Vec<_> = p.writes.iter().map(|w| (&*w.backup, w.change)).collect();
    assert_eq!(
        writes,
        [
            ("a", StatusChange::Start),
            ("b", StatusChange::Start),
            ("c", StatusChange::Reposition { from: 3, to: 1 }),
            ("d", StatusChange::Reposition { from: 5, to: 2 }),
        ]
    );
    // Velero: 2 dequeues, each patching every other Queued backup.
    assert_eq!(reference::run_to_fixed_point(&input).writes, 2 + 3 + 2);
}

#[test]
fn explanations_list_a_few_shared_namespaces_and_count_the_rest() {
    let cluster: Vec<String> = (0..12).map(|i| format!("ns{i:02}")).collect();
    let refs: Vec<&str> = cluster.iter().map(String::as_str).collect();
    let p = plan(&input(
        vec![
            backup("everything", &[], Phase::InProgress, 0, 0),
            backup("many", &["ns*"], Phase::Queued, 1, 1),
        ],
        &refs,
        2,
    ));
    assert_eq!(
        p.waiting[0].reason.to_string(),
        "overlaps InProgress backup everything on namespaces [ns00, ns01, ns02, ns03, ns04, and 7 more]"
    );
}

#[test]
fn incremental_events_follow_the_design_scenario() {
    let input = design_scenario();
    let mut state = QueueState::from_input(&input);
    let first = state.plan();
    assert_eq!(first, plan(&input));
    for w in &first.writes {
        let mut b = input
            .backups
            .iter()
            .find(|b| *b.name == *w.backup)
            .unwrap()
            .clone();
        b.phase = w.change.phase();
        b.queue_position = w.change.queue_position();
        state.apply(QueueEvent::UpsertBackup(b));
    }
    assert!(state.plan().is_noop());
    state.apply(QueueEvent::DeleteBackup("backup1".into()));
    assert_eq!(state.plan().started().collect::<Vec<_>>(), ["backup2"]);
    assert_eq!(state.len(), 4);
}
