//! Planner vs. the reference model of Velero's reconcile loop, measured in
//! the same run. See `docs/performance.md` (`## backup-queue`).

#[path = "support/workload.rs"]
mod workload;

use std::hint::black_box;

use backup_queue::{Phase, QueueEvent, QueueState, plan, reference};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};

/// The reference model is quadratic or worse; measured up to this size.
const REFERENCE_MAX_Q: usize = 2_000;
const SIZES: &[usize] = &[100, 1_000, 2_000, 10_000];

fn full_plan(c: &mut Criterion) {
    for (name, make) in [
        ("blocked", workload::blocked as fn(usize) -> _),
        ("after_completion", workload::after_completion),
    ] {
        let mut group = c.benchmark_group(format!("full_plan/{name}"));
        group.sample_size(10);
        for &q in SIZES {
            let input = make(q);
            group.bench_with_input(BenchmarkId::new("planner", q), &input, |b, input| {
                b.iter(|| plan(black_box(input)))
            });
            if q <= REFERENCE_MAX_Q {
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
    let mut group = c.benchmark_group("incremental/one_completion");
    for &q in SIZES {
        let input = workload::blocked(q);
        let state = QueueState::from_input(&input);
        let mut completed = input.backups[0].clone();
        completed.phase = Phase::Other;
        group.bench_with_input(BenchmarkId::new("planner", q), &q, |b, _| {
            b.iter_batched_ref(
                || state.clone(),
                |s| {
                    s.apply(QueueEvent::UpsertBackup(completed.clone()));
                    s.plan()
                },
                BatchSize::LargeInput,
            )
        });
        // A completion that frees a slot but no namespace (capacity full).
        let mut small = workload::after_completion(q);
        let started = plan(&small);
        started.apply_to(&mut small);
        let state = QueueState::from_input(&small);
        let mut done = small
            .backups
            .iter()
            .find(|b| b.phase == Phase::ReadyToStart)
            .cloned()
            .unwrap();
        done.phase = Phase::Other;
        group.bench_with_input(BenchmarkId::new("planner_slot_freed", q), &q, |b, _| {
            b.iter_batched_ref(
                || state.clone(),
                |s| {
                    s.apply(QueueEvent::UpsertBackup(done.clone()));
                    s.plan()
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, full_plan, incremental);
criterion_main!(benches);
