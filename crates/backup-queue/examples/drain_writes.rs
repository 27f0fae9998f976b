//! Counts the status writes needed to drain a queue, for the planner and
//! for the reference model of Velero's reconcile loop (W4.3).
//!
//! The queue is the benchmark workload (`benches/support/workload.rs`):
//! Q queued backups over 5,000 namespaces, `--concurrent-backups=8`,
//! nothing running. Repeatedly: plan and apply, then the backup that
//! started first completes. The reference model is slow (it replays
//! Velero's reconciles), so by default it runs only up to Q = 100; Velero's
//! count is also computed from the planner's dequeue sequence with Velero's
//! rule (each dequeue = 1 write + 1 per other Queued backup, W4.3).
//!
//! Run with `cargo run --release -p backup-queue --example drain_writes --
//! [--reference-max N] [Q...]`.

#[path = "../benches/support/workload.rs"]
mod workload;

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use backup_queue::{Phase, QueueEvent, QueueInput, QueueState, reference};

struct Drain {
    writes: u64,
    velero_rule_writes: u64,
    steps: u64,
}

/// Drains with the incremental planner (one event per completion).
fn drain_planner(input: &QueueInput) -> Drain {
    let mut snapshot = input.clone();
    let index: HashMap<String, usize> = snapshot
        .backups
        .iter()
        .enumerate()
        .map(|(i, b)| (b.name.clone(), i))
        .collect();
    let mut state = QueueState::from_input(input);
    let mut running: VecDeque<String> = VecDeque::new();
    let mut d = Drain {
        writes: 0,
        velero_rule_writes: 0,
        steps: 0,
    };
    loop {
        let p = state.plan_writes();
        let mut queued = snapshot
            .backups
            .iter()
            .filter(|b| b.phase == Phase::Queued)
            .count() as u64;
        for w in &p.writes {
            if w.change.phase() == Phase::ReadyToStart {
                d.velero_rule_writes += queued; // 1 + (queued - 1)
                queued -= 1;
                running.push_back(w.backup.to_string());
            }
        }
        d.writes += p.writes.len() as u64;
        for w in &p.writes {
            let b = &mut snapshot.backups[index[&*w.backup]];
            b.phase = w.change.phase();
            b.queue_position = w.change.queue_position();
            state.apply(QueueEvent::UpsertBackup(b.clone()));
        }
        let Some(done) = running.pop_front() else {
            break;
        };
        let b = &mut snapshot.backups[index[&done]];
        b.phase = Phase::Other;
        state.apply(QueueEvent::UpsertBackup(b.clone()));
        d.steps += 1;
    }
    assert!(
        snapshot.backups.iter().all(|b| b.phase == Phase::Other),
        "queue drained"
    );
    d
}

/// Drains with the reference model of Velero's loop.
fn drain_reference(input: &QueueInput) -> u64 {
    let mut snapshot = input.clone();
    let mut running: VecDeque<String> = VecDeque::new();
    let mut writes = 0;
    loop {
        let outcome = reference::run_to_fixed_point(&snapshot);
        writes += outcome.writes;
        for (b, r) in snapshot.backups.iter_mut().zip(&outcome.backups) {
            if b.phase != Phase::ReadyToStart && r.phase == Phase::ReadyToStart {
                running.push_back(b.name.clone());
            }
            b.phase = r.phase;
            b.queue_position = r.queue_position;
        }
        let Some(done) = running.pop_front() else {
            break;
        };
        snapshot
            .backups
            .iter_mut()
            .find(|b| b.name == done)
            .unwrap()
            .phase = Phase::Other;
    }
    writes
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `--reference-max N`: run the (slow) reference model up to Q = N.
    let mut reference_max = 100;
    let mut sizes = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--reference-max" {
            reference_max = it
                .next()
                .and_then(|n| n.parse().ok())
                .expect("--reference-max N");
        } else {
            sizes.push(a.parse::<usize>().expect("Q must be a number"));
        }
    }
    let sizes = if sizes.is_empty() {
        vec![100, 1_000, 10_000]
    } else {
        sizes
    };
    println!(
        "| Q | planner writes | Velero writes (reference model) | Velero writes (W4.3 rule, same dequeue order) | ratio |"
    );
    println!("|---|---|---|---|---|");
    for q in sizes {
        let input = workload::after_completion(q);
        let t = Instant::now();
        let d = drain_planner(&input);
        let planner_time = t.elapsed();
        let reference = if q <= reference_max {
            Some(drain_reference(&input))
        } else {
            None
        };
        let velero = reference.unwrap_or(d.velero_rule_writes);
        println!(
            "| {q} | {} | {} | {} | {:.1}x |",
            d.writes,
            reference.map_or("not run".to_owned(), |w| w.to_string()),
            d.velero_rule_writes,
            velero as f64 / d.writes as f64,
        );
        eprintln!(
            "Q={q}: {} completions, planner drain took {planner_time:?}",
            d.steps
        );
    }
}
