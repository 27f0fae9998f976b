//! One pass of the gate at scale: 10,000 `New` loads waiting, 1,000 in
//! preparation (the limit), one event (a load leaves preparation, a slot
//! frees), then the pass. The incremental form applies the event to the
//! count cache and plans; the naive baseline, measured in the same run,
//! recounts everything each pass (a fresh cache built from every load, as a
//! controller without the incremental cache would), then plans. Both give
//! the same plan (checked before timing).
//!
//! `cargo bench -p load-soothe --bench pass`

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use jiff::Timestamp;
use load_soothe::{
    CountCache, ExactInput, ExactView, GateConfig, Ledger, LedgerEntry, LedgerSnapshot, Load,
    LoadId, LoadKind, Mode, PassPlan, Phase, RecountPolicy, plan_pass,
};

const WAITING: usize = 10_000;
const IN_PREPARATION: usize = 1_000;

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).unwrap()
}

fn load(i: usize, phase: Phase) -> Load {
    Load {
        id: LoadId::new(
            LoadKind::ALL[i % 4],
            "velero",
            format!("load-{i:05}"),
            format!("uid-{i:05}"),
        ),
        phase,
        expose_on_going: phase == Phase::Accepted,
        cancel_requested: false,
        // Bursts: ten loads per creation second.
        created: t((i / 10) as i64),
        resource_version: Some(i.to_string()),
        handled_here: true,
    }
}

struct Scenario {
    mode: Mode,
    loads: Vec<Load>,
    event: Load,
    ledger: LedgerSnapshot,
}

impl Scenario {
    fn new(mode: Mode) -> Self {
        let loads: Vec<Load> = (0..IN_PREPARATION + WAITING)
            .map(|i| {
                load(
                    i,
                    if i < IN_PREPARATION {
                        Phase::Accepted
                    } else {
                        Phase::New
                    },
                )
            })
            .collect();
        let mut event = load(0, Phase::InProgress);
        event.resource_version = Some("999999".into());
        let ledger = LedgerSnapshot {
            resource_version: Some("7".into()),
            ledger: Ledger {
                version: 1,
                admitted: loads[..IN_PREPARATION]
                    .iter()
                    .map(|l| LedgerEntry {
                        id: l.id.clone(),
                        admitted_at: t(0),
                        admitted_by: "node-a".into(),
                    })
                    .collect(),
            },
        };
        Self {
            mode,
            loads,
            event,
            ledger,
        }
    }

    fn gate(&self) -> GateConfig {
        GateConfig::new(Some(IN_PREPARATION as i64), self.mode)
    }

    fn exact(&self) -> Option<ExactInput<'_>> {
        (self.mode == Mode::Exact).then_some(ExactInput::Read(ExactView {
            ledger: &self.ledger,
            node: "node-a",
        }))
    }

    /// The cache before the event, as a controller holds it.
    fn cache(&self) -> CountCache {
        let mut cache = CountCache::new(RecountPolicy::for_mode(self.mode));
        cache.resync(self.loads.iter().cloned());
        cache
    }

    fn incremental(&self, cache: &mut CountCache) -> PassPlan {
        cache.apply(self.event.clone());
        plan_pass(&self.gate(), cache, self.exact(), t(100_000))
    }

    fn naive(&self) -> PassPlan {
        let mut cache = CountCache::new(RecountPolicy::for_mode(self.mode));
        cache.resync(std::iter::once(self.event.clone()).chain(self.loads[1..].iter().cloned()));
        plan_pass(&self.gate(), &cache, self.exact(), t(100_000))
    }
}

fn bench(c: &mut Criterion) {
    for (name, mode) in [("optimistic", Mode::Optimistic), ("exact", Mode::Exact)] {
        let scenario = Scenario::new(mode);
        let plan = scenario.incremental(&mut scenario.cache());
        assert_eq!(plan, scenario.naive(), "both forms plan the same");
        assert_eq!(plan.accepts.len(), 1, "one slot freed, one load admitted");
        assert_eq!(plan.holds.len(), WAITING - 1);
        let cache = scenario.cache();
        let mut group = c.benchmark_group(format!("pass/{name}"));
        group.sample_size(20);
        group.bench_function("incremental: apply one event, plan", |b| {
            b.iter_batched_ref(
                || cache.clone(),
                |cache| black_box(scenario.incremental(cache)),
                BatchSize::LargeInput,
            );
        });
        group.bench_function("naive: recount everything, plan", |b| {
            b.iter(|| black_box(scenario.naive()));
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
