//! Properties of `drain` (the planner applied round after round), checked
//! against the independent namespace oracle of `common` and a
//! straightforward round-by-round reference.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use backup_queue::{Phase, QueueInput, WaitReason, drain, plan};
use common::*;
use proptest::prelude::*;

/// The backups the queue sees (every phase but `Other`), by name.
fn queue_names(input: &QueueInput) -> BTreeSet<String> {
    input
        .backups
        .iter()
        .filter(|b| b.phase != Phase::Other)
        .map(|b| b.name.clone())
        .collect()
}

/// The input with only the named backups (the queue as it is in a round:
/// the backups that ran before have left it, and with them the namespaces
/// only their literal includes brought in).
fn only(input: &QueueInput, names: &BTreeSet<String>) -> QueueInput {
    let mut left = input.clone();
    left.backups.retain(|b| names.contains(&b.name));
    left
}

/// The reference: in every round, in queue order, a waiting backup starts
/// when its namespaces are disjoint from every running backup and every
/// earlier waiting one and fewer than the limit run; then everything that
/// ran ends.
fn oracle_start_rounds(input: &QueueInput) -> BTreeMap<String, u32> {
    let limit = input.concurrent_backups.max(1) as usize;
    let mut remaining = queue_names(input);
    let mut starts = BTreeMap::new();
    let mut running: Vec<String> = active_names(input);
    for name in &running {
        starts.insert(name.clone(), 0);
    }
    let mut queue = queue_order(input);
    let mut round = 0;
    loop {
        let sets = oracle_sets(&only(input, &remaining));
        let mut claimed: BTreeSet<String> = running
            .iter()
            .flat_map(|r| sets[r].iter().cloned())
            .collect();
        let mut left = Vec::new();
        for b in queue {
            if sets[&b].is_disjoint(&claimed) && running.len() < limit {
                starts.insert(b.clone(), round);
                running.push(b.clone());
            } else {
                left.push(b.clone());
            }
            claimed.extend(sets[&b].iter().cloned());
        }
        queue = left;
        if queue.is_empty() {
            return starts;
        }
        for r in running.drain(..) {
            remaining.remove(&r);
        }
        round += 1;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_backup_of_the_queue_starts_exactly_once(input in any_input()) {
        let d = drain(&input);
        let mut seen = BTreeMap::new();
        for (round, r) in d.rounds.iter().enumerate() {
            for name in &r.running {
                prop_assert!(seen.insert(name.to_string(), round as u32).is_none(), "{} runs twice", name);
            }
        }
        let names: BTreeSet<String> = seen.keys().cloned().collect();
        prop_assert_eq!(&names, &queue_names(&input));
        prop_assert_eq!(d.backups.len(), names.len());
        for b in &d.backups {
            prop_assert_eq!(Some(&b.start), seen.get(&*b.backup), "{}", b.backup);
        }
    }

    #[test]
    fn never_more_than_concurrent_backups_run_in_a_round(input in any_input()) {
        let d = drain(&input);
        let limit = input.concurrent_backups.max(1) as usize;
        let already = active_names(&input).len();
        for (round, r) in d.rounds.iter().enumerate() {
            let started = r.running.len() - if round == 0 { already } else { 0 };
            if started > 0 {
                prop_assert!(r.running.len() <= limit, "round {}: {} run with limit {}", round, r.running.len(), limit);
            }
        }
    }

    #[test]
    fn no_two_backups_that_overlap_in_namespaces_run_in_the_same_round(input in any_input()) {
        let d = drain(&input);
        let already: BTreeSet<String> = active_names(&input).into_iter().collect();
        let mut remaining = queue_names(&input);
        for (round, r) in d.rounds.iter().enumerate() {
            // The namespaces as they are in this round.
            let sets = oracle_sets(&only(&input, &remaining));
            for a in &r.running {
                // Backups running together in the input are not the drain's doing.
                if already.contains(&**a) {
                    continue;
                }
                for b in &r.running {
                    if a != b {
                        prop_assert!(!overlap(&sets, a, b), "round {}: {} and {} share a namespace", round, a, b);
                    }
                }
            }
            for a in &r.running {
                remaining.remove(&**a);
            }
        }
    }

    #[test]
    fn start_rounds_match_a_round_by_round_reference(input in any_input()) {
        let d = drain(&input);
        let got: BTreeMap<String, u32> = d.backups.iter().map(|b| (b.backup.to_string(), b.start)).collect();
        prop_assert_eq!(got, oracle_start_rounds(&input));
    }

    #[test]
    fn round_zero_is_the_plan_of_the_snapshot(input in any_input()) {
        let p = plan(&input);
        let d = drain(&input);
        let already = active_names(&input).len();
        let started: Vec<&str> = d.rounds.first().map(|r| r.running[already..].iter().map(|n| &**n).collect()).unwrap_or_default();
        prop_assert_eq!(started, p.started().collect::<Vec<_>>());
        for w in &p.waiting {
            let b = d.backups.iter().find(|b| b.backup == w.backup).unwrap();
            prop_assert_eq!(b.waits[0].from, 0);
            prop_assert_eq!(&b.waits[0].reason, &w.reason);
        }
    }

    #[test]
    fn a_backup_waits_in_every_round_before_its_start_and_in_no_other(input in any_input()) {
        let d = drain(&input);
        for b in &d.backups {
            let mut next = 0;
            for w in &b.waits {
                prop_assert_eq!(w.from, next, "{}: gap or overlap in its waits", b.backup);
                prop_assert!(w.to >= w.from);
                next = w.to + 1;
            }
            prop_assert_eq!(next, b.start, "{}", b.backup);
            if b.already_running {
                prop_assert_eq!(b.start, 0);
            }
        }
    }

    #[test]
    fn every_round_runs_a_backup_and_the_queue_drains_in_at_most_n_plus_one_rounds(input in any_input()) {
        let d = drain(&input);
        let waiting = queue_order(&input).len();
        prop_assert!(d.rounds.len() <= waiting + 1, "{} rounds for {} waiting", d.rounds.len(), waiting);
        for r in &d.rounds {
            prop_assert!(!r.running.is_empty());
        }
    }

    #[test]
    fn the_drain_is_the_same_for_the_same_input(input in any_input()) {
        let mut shuffled = input.clone();
        shuffled.backups.reverse();
        // Names are unique in the generated inputs, so order does not matter.
        prop_assert_eq!(drain(&input), drain(&shuffled));
    }
}

#[test]
fn a_queue_behind_a_whole_cluster_backup_drains_round_by_round() {
    let input = input(
        vec![
            backup("all", &["*"], Phase::InProgress, 0, 0),
            backup("db", &["db-a"], Phase::Queued, 1, 1),
            backup("web", &["web"], Phase::Queued, 2, 2),
            backup("db-again", &["db-a"], Phase::Queued, 3, 3),
            backup("logs", &["logs"], Phase::New, 0, 4),
        ],
        &["db-a", "logs", "web"],
        2,
    );
    let d = drain(&input);
    let rounds: Vec<Vec<&str>> = d
        .rounds
        .iter()
        .map(|r| r.running.iter().map(|n| &**n).collect())
        .collect();
    assert_eq!(
        rounds,
        [vec!["all"], vec!["db", "web"], vec!["db-again", "logs"]]
    );
    let logs = d.backups.iter().find(|b| &*b.backup == "logs").unwrap();
    assert_eq!(logs.waits.len(), 2, "{:?}", logs.waits);
    assert!(matches!(
        logs.waits[0].reason,
        WaitReason::OverlapsActive { .. }
    ));
    assert_eq!(logs.waits[1].reason, WaitReason::CapacityFull { limit: 2 });
    let again = d.backups.iter().find(|b| &*b.backup == "db-again").unwrap();
    assert!(
        matches!(&again.waits[..], [a, b] if matches!(a.reason, WaitReason::OverlapsActive { .. }) && matches!(&b.reason, WaitReason::OverlapsActive { backup, .. } if &**backup == "db")),
        "{:?}",
        again.waits
    );
}
