//! The count cache against simple reference implementations: a map of the
//! current states re-counted from scratch (fixed policy), and a transcription
//! of Velero's change-id counter (L3.9, L3.10, L3.12).

use std::collections::BTreeMap;

use jiff::Timestamp;
use load_soothe::{
    CountCache, KindCounts, Load, LoadId, LoadKind, Phase, RecountPolicy, WatchEvent,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Put {
        slot: usize,
        phase: Phase,
        label: bool,
        cancel: bool,
        created: i64,
    },
    Delete {
        slot: usize,
    },
    Query,
}

const SLOTS: usize = 12;

fn id_of(slot: usize) -> LoadId {
    LoadId::new(
        LoadKind::ALL[slot % 4],
        "velero",
        format!("l{slot}"),
        format!("u{slot}"),
    )
}

fn load(slot: usize, phase: Phase, label: bool, cancel: bool, created: i64) -> Load {
    Load {
        id: id_of(slot),
        phase,
        expose_on_going: label,
        cancel_requested: cancel,
        created: Timestamp::from_second(1_800_000_000 + created).unwrap(),
        resource_version: None,
        handled_here: true,
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..SLOTS, prop::sample::select(Phase::ALL.to_vec()), any::<bool>(), prop::bool::weighted(0.1), 0i64..5)
            .prop_map(|(slot, phase, label, cancel, created)| Op::Put { slot, phase, label, cancel, created }),
        1 => (0..SLOTS).prop_map(|slot| Op::Delete { slot }),
        2 => Just(Op::Query),
    ]
}

/// Independent count: loads in preparation (label or Accepted/Prepared) in a
/// plain map, per kind.
fn recount_from_scratch(view: &BTreeMap<usize, (Phase, bool)>) -> KindCounts {
    let mut c = KindCounts::default();
    for (slot, (phase, label)) in view {
        if *label || *phase == Phase::Accepted || *phase == Phase::Prepared {
            *c.get_mut(LoadKind::ALL[slot % 4]) += 1;
        }
    }
    c
}

/// Velero's `VgdpCounter`, transcribed: per kind a change id starting at 1
/// and a cached id starting at 0; an Update whose phase changed to Accepted,
/// or from Prepared, or from Accepted to anything but Prepared bumps the
/// change id; `IsConstrained` re-lists the kinds whose ids differ.
struct VeleroCounter {
    change_id: [u64; 4],
    cached_id: [u64; 4],
    cached: [u32; 4],
}

impl VeleroCounter {
    fn new() -> Self {
        VeleroCounter {
            change_id: [1; 4],
            cached_id: [0; 4],
            cached: [0; 4],
        }
    }

    fn on_update(&mut self, kind: usize, old: Phase, new: Phase) {
        if old != new
            && (new == Phase::Accepted
                || old == Phase::Prepared
                || (old == Phase::Accepted && new != Phase::Prepared))
        {
            self.change_id[kind] += 1;
        }
    }

    fn query(&mut self, view: &BTreeMap<usize, (Phase, bool)>) -> [u32; 4] {
        for kind in 0..4 {
            if self.change_id[kind] != self.cached_id[kind] {
                // Velero lists by label only; our "in preparation" also counts
                // Accepted/Prepared without the label.
                self.cached[kind] = view
                    .iter()
                    .filter(|(slot, (p, l))| {
                        *slot % 4 == kind && (*l || *p == Phase::Accepted || *p == Phase::Prepared)
                    })
                    .count() as u32;
                self.cached_id[kind] = self.change_id[kind];
            }
        }
        self.cached
    }
}

fn as_array(c: KindCounts) -> [u32; 4] {
    [
        c.data_upload,
        c.data_download,
        c.pod_volume_backup,
        c.pod_volume_restore,
    ]
}

proptest! {
    #[test]
    fn fixed_cache_count_always_equals_a_recount_of_the_view(ops in prop::collection::vec(op(), 0..80)) {
        let mut cache = CountCache::new(RecountPolicy::Fixed);
        let mut view = BTreeMap::new();
        for op in ops {
            match op {
                Op::Put { slot, phase, label, cancel, created } => {
                    cache.handle(WatchEvent::Modified { old: None, new: load(slot, phase, label, cancel, created) });
                    view.insert(slot, (phase, label));
                }
                Op::Delete { slot } => {
                    cache.handle(WatchEvent::Deleted(load(slot, Phase::New, false, false, 0)));
                    view.remove(&slot);
                }
                Op::Query => {}
            }
            prop_assert_eq!(cache.counts(), recount_from_scratch(&view));
            prop_assert_eq!(cache.live_counts(), recount_from_scratch(&view));
            let listed: Vec<LoadId> = cache.in_preparation().cloned().collect();
            let expected: Vec<LoadId> = {
                let mut v: Vec<LoadId> = view.iter()
                    .filter(|(_, (p, l))| *l || *p == Phase::Accepted || *p == Phase::Prepared)
                    .map(|(s, _)| id_of(*s)).collect();
                v.sort();
                v
            };
            prop_assert_eq!(listed, expected);
        }
    }

    #[test]
    fn velero_cache_count_matches_velero_change_id_counter(ops in prop::collection::vec(op(), 0..80)) {
        let mut cache = CountCache::new(RecountPolicy::Velero);
        let mut velero = VeleroCounter::new();
        let mut view: BTreeMap<usize, (Phase, bool)> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Put { slot, phase, label, cancel, created } => {
                    cache.apply(load(slot, phase, label, cancel, created));
                    if let Some((old, _)) = view.get(&slot) {
                        velero.on_update(slot % 4, *old, phase);
                    }
                    view.insert(slot, (phase, label));
                }
                Op::Delete { slot } => {
                    cache.delete(&id_of(slot));
                    view.remove(&slot);
                }
                Op::Query => {
                    prop_assert_eq!(as_array(cache.counts()), velero.query(&view));
                }
            }
        }
    }

    #[test]
    fn waiting_queue_lists_exactly_the_waiting_loads_in_fifo_order(ops in prop::collection::vec(op(), 0..80)) {
        let mut cache = CountCache::new(RecountPolicy::Fixed);
        let mut view: BTreeMap<usize, Load> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Put { slot, phase, label, cancel, created } => {
                    let l = load(slot, phase, label, cancel, created);
                    cache.apply(l.clone());
                    view.insert(slot, l);
                }
                Op::Delete { slot } => {
                    cache.delete(&id_of(slot));
                    view.remove(&slot);
                }
                Op::Query => {}
            }
            // Oracle: New, not cancelled, not labelled; sorted by
            // (created, namespace, name, kind, uid).
            let mut expected: Vec<(Timestamp, String, String, LoadKind, String)> = view
                .values()
                .filter(|l| l.phase == Phase::New && !l.cancel_requested && !l.expose_on_going)
                .map(|l| (l.created, l.id.namespace.clone(), l.id.name.clone(), l.id.kind, l.id.uid.clone()))
                .collect();
            expected.sort();
            let got: Vec<(Timestamp, String, String, LoadKind, String)> = cache
                .waiting()
                .map(|k| (k.created, k.namespace.clone(), k.name.clone(), k.kind, k.uid.clone()))
                .collect();
            prop_assert_eq!(got, expected);
        }
    }
}

#[test]
fn velero_policy_keeps_a_stale_count_after_deleting_a_load_in_preparation() {
    let mut cache = CountCache::new(RecountPolicy::Velero);
    cache.apply(load(0, Phase::New, false, false, 0));
    cache.apply(load(0, Phase::Accepted, true, false, 0));
    assert_eq!(cache.counts().total(), 1);
    cache.delete(&id_of(0));
    // W3.3: Velero never recounts on delete.
    assert_eq!(cache.counts().total(), 1);
    assert_eq!(cache.live_counts().total(), 0);

    let mut fixed = CountCache::new(RecountPolicy::Fixed);
    fixed.apply(load(0, Phase::Accepted, true, false, 0));
    fixed.delete(&id_of(0));
    assert_eq!(fixed.counts().total(), 0);
}

#[test]
fn velero_policy_misses_a_load_created_in_preparation() {
    let mut cache = CountCache::new(RecountPolicy::Velero);
    // The first evaluation lists every kind (L3.9); later creates are missed.
    assert_eq!(cache.counts().total(), 0);
    cache.apply(load(1, Phase::Prepared, true, false, 0));
    assert_eq!(cache.counts().total(), 0);
    let mut fixed = CountCache::new(RecountPolicy::Fixed);
    fixed.apply(load(1, Phase::Prepared, true, false, 0));
    assert_eq!(fixed.counts().total(), 1);
}

#[test]
fn resync_deletes_missing_loads_and_applies_the_rest() {
    let mut cache = CountCache::new(RecountPolicy::Fixed);
    cache.apply(load(0, Phase::Accepted, true, false, 0));
    cache.apply(load(1, Phase::New, false, false, 0));
    cache.resync(vec![load(1, Phase::Prepared, true, false, 0)]);
    assert!(cache.get(&id_of(0)).is_none());
    assert!(cache.is_deleted(&id_of(0)));
    assert_eq!(cache.counts().total(), 1);
    assert_eq!(cache.waiting_len(), 0);
}
