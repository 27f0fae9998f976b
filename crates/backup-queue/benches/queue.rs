//! Planner vs. the reference model of Velero's reconcile loop, measured in
//! the same run. See `docs/performance.md` (`## backup-queue`).
//!
//! Run: `cargo bench -p backup-queue --bench queue -- --warm-up-time 1 --measurement-time 3`

#[path = "support/workload.rs"]
mod workload;

use std::hint::black_box;
use std::time::Instant;

use backup_queue::{Phase, QueueEvent, QueueInput, QueueState, plan, reference};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group};

const SIZES: &[usize] = &[100, 1_000, 2_000, 10_000];

/// Largest Q for which criterion times the reference model, per workload:
/// one reference run of `blocked` takes seconds from Q = 1,000 on (over a
/// minute at Q = 10,000), so larger sizes are timed once, outside criterion
/// ([`one_shot`]).
fn reference_max(workload: &str) -> usize {
    if workload == "blocked" { 100 } else { 2_000 }
}

/// A named workload generator.
type Workload = (&'static str, fn(usize) -> QueueInput);

fn workloads() -> [Workload; 2] {
    [
        ("blocked", workload::blocked),
        ("after_completion", workload::after_completion),
    ]
}

fn full_plan(c: &mut Criterion) {
    for (name, make) in workloads() {
        let mut group = c.benchmark_group(format!("full_plan/{name}"));
        group.sample_size(10);
        for &q in SIZES {
            let input = make(q);
            group.bench_with_input(BenchmarkId::new("planner", q), &input, |b, input| {
                b.iter(|| plan(black_box(input)))
            });
            if q <= reference_max(name) {
                group.bench_with_input(
                    BenchmarkId::new("velero_reference", q),
                    &input,
                    |b, input| b.iter(|| reference::run_to_fixed_point(black_box(input))),
                );
            }
        }
        group.finish();
    }
}

fn incremental(c: &mut Criterion) {
    let mut group = c.benchmark_group("incremental");
    for &q in SIZES {
        // The running whole-cluster backup completes: 8 backups start and
        // every other position changes.
        let input = workload::blocked(q);
        let state = QueueState::from_input(&input);
        let mut completed = input.backups[0].clone();
        completed.phase = Phase::Other;
        // One of 8 running small backups completes: the next one starts.
        let mut busy = workload::after_completion(q);
        plan(&busy).apply_to(&mut busy);
        let busy_state = QueueState::from_input(&busy);
        let mut done = busy
            .backups
            .iter()
            .find(|b| b.phase == Phase::ReadyToStart)
            .cloned()
            .unwrap();
        // A running backup's status changes without touching what the
        // planner reads (Velero's progress updates): nothing to write; the
        // controller takes the `writes` path for such events.
        let mut progress = done.clone();
        progress.resource_version = Some("progress".into());
        done.phase = Phase::Other;

        for (label, state, event) in [
            ("full_cluster_completes", &state, &completed),
            ("one_slot_freed", &busy_state, &done),
            ("progress_update", &busy_state, &progress),
        ] {
            group.bench_with_input(
                BenchmarkId::new(format!("{label}/writes"), q),
                &q,
                |b, _| {
                    b.iter_batched_ref(
                        || state.clone(),
                        |s| {
                            s.apply(QueueEvent::UpsertBackup(event.clone()));
                            s.plan_writes()
                        },
                        BatchSize::LargeInput,
                    )
                },
            );
            group.bench_with_input(
                BenchmarkId::new(format!("{label}/explained"), q),
                &q,
                |b, _| {
                    b.iter_batched_ref(
                        || state.clone(),
                        |s| {
                            s.apply(QueueEvent::UpsertBackup(event.clone()));
                            s.plan()
                        },
                        BatchSize::LargeInput,
                    )
                },
            );
        }
    }
    group.finish();
}

/// Single timed runs of the reference model where criterion would take too
/// long, next to the planner on the same input.
fn one_shot() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    for (name, make) in workloads() {
        for &q in SIZES {
            if q <= reference_max(name) {
                continue;
            }
            let input = make(q);
            let t = Instant::now();
            black_box(reference::run_to_fixed_point(&input));
            let r = t.elapsed();
            let t = Instant::now();
            for _ in 0..10 {
                black_box(plan(&input));
            }
            let p = t.elapsed() / 10;
            println!(
                "one-shot {name}/{q}: velero_reference {r:.2?} (1 run), planner {p:.2?} (mean of 10), ratio {:.0}x",
                r.as_secs_f64() / p.as_secs_f64()
            );
        }
    }
}

criterion_group!(benches, full_plan, incremental);

fn main() {
    one_shot();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
