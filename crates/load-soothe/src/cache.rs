//! The count cache (documented on [`CountCache`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{FifoKey, KindCounts, Load, LoadId, LoadKind};
use crate::recount::{Observed, Recount, RecountPolicy, recount};

/// A watch event for one load, as a kube-runtime watcher or an informer
/// delivers it. The old object of `Modified` is optional: the cache keeps the
/// last state it saw of every load and uses that.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEvent {
    /// A load appeared (create, or first seen in a list).
    Added(Load),
    /// A load changed.
    Modified {
        /// The previous state, if the source knows it (ignored: the cache's
        /// own last state is authoritative).
        old: Option<Load>,
        /// The new state.
        new: Load,
    },
    /// A load was deleted.
    Deleted(Load),
}

/// What one event did to the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The table's verdict for the event.
    pub recount: Recount,
    /// Whether the load's "in preparation" status changed.
    pub preparation_changed: bool,
    /// Whether a load left preparation (or a reservation was released): a
    /// controller may wake the head of the waiting queue instead of waiting
    /// for the 5 s requeue (see [`CountCache::wake_candidates`]).
    pub slot_freed: bool,
}

/// Per-node count of loads in preparation, waiting queue and local
/// reservations.
///
/// The count cache: one per node-agent, shared by its four controllers, fed by
/// watch events of the four kinds, maintained incrementally. No decision
/// lists objects: the count, the waiting queue and the set of loads in
/// preparation are updated on each event in O(log n).
///
/// For [`RecountPolicy::Velero`] the cache reproduces Velero's lazily
/// refreshed per-kind count (L3.9, L3.10): a trigger of the
/// [recount table](crate::recount()) marks the kind stale, and the next
/// [`CountCache::counts`] call takes the current count of that kind, which is
/// what Velero's re-list of its informer cache returns. Between triggers the
/// count is frozen, so creates and deletes are missed (W3.3). For
/// [`RecountPolicy::Fixed`] every event that changes "in preparation" is a
/// trigger, so the count always equals the number of loads in preparation in
/// the view.
#[derive(Clone, Debug)]
pub struct CountCache {
    policy: RecountPolicy,
    loads: BTreeMap<LoadId, Load>,
    live: KindCounts,
    cached: KindCounts,
    stale: [bool; LoadKind::COUNT],
    waiting: BTreeSet<FifoKey>,
    in_preparation: BTreeSet<LoadId>,
    reservations: BTreeSet<LoadId>,
    tombstones: BTreeSet<LoadId>,
}

impl CountCache {
    /// An empty cache applying `policy`.
    pub fn new(policy: RecountPolicy) -> CountCache {
        CountCache {
            policy,
            loads: BTreeMap::new(),
            live: KindCounts::default(),
            cached: KindCounts::default(),
            // Velero's change ids start at 1 and the cached ids at 0, so the
            // first evaluation lists every kind (L3.9).
            stale: [true; LoadKind::COUNT],
            waiting: BTreeSet::new(),
            in_preparation: BTreeSet::new(),
            reservations: BTreeSet::new(),
            tombstones: BTreeSet::new(),
        }
    }

    /// The table this cache applies.
    pub fn policy(&self) -> RecountPolicy {
        self.policy
    }

    /// Applies one watch event.
    pub fn handle(&mut self, event: WatchEvent) -> Applied {
        match event {
            WatchEvent::Added(load) | WatchEvent::Modified { new: load, .. } => self.apply(load),
            WatchEvent::Deleted(load) => self.delete(&load.id),
        }
    }

    /// Records the current state of a load (create or update).
    pub fn apply(&mut self, load: Load) -> Applied {
        let id = load.id.clone();
        let old = self.loads.get(&id).map(observed);
        let new = observed(&load);
        let released = if load.is_queued_here() {
            false
        } else {
            self.reservations.remove(&id)
        };
        if let Some(previous) = self.loads.get(&id) {
            self.waiting.remove(&previous.fifo_key());
        }
        if load.is_queued_here() {
            self.waiting.insert(load.fifo_key());
        }
        self.tombstones.remove(&id);
        self.loads.insert(id.clone(), load);
        self.transition(&id, old, Some(new), released)
    }

    /// Records the deletion of a load. Deleting an unknown load only leaves a
    /// tombstone.
    pub fn delete(&mut self, id: &LoadId) -> Applied {
        let old = self.loads.remove(id);
        if let Some(previous) = &old {
            self.waiting.remove(&previous.fifo_key());
        }
        let released = self.reservations.remove(id);
        self.tombstones.insert(id.clone());
        self.transition(id, old.as_ref().map(observed), None, released)
    }

    /// Replaces the whole view with a fresh list (a watcher's re-list): loads
    /// missing from `loads` are deleted, the others applied, each through the
    /// table as a single event.
    pub fn resync(&mut self, loads: impl IntoIterator<Item = Load>) {
        let fresh: BTreeMap<LoadId, Load> = loads.into_iter().map(|l| (l.id.clone(), l)).collect();
        let gone: Vec<LoadId> = self
            .loads
            .keys()
            .filter(|id| !fresh.contains_key(*id))
            .cloned()
            .collect();
        for id in gone {
            self.delete(&id);
        }
        for load in fresh.into_values() {
            self.apply(load);
        }
    }

    fn transition(
        &mut self,
        id: &LoadId,
        old: Option<Observed>,
        new: Option<Observed>,
        released: bool,
    ) -> Applied {
        let was = old.is_some_and(Observed::in_preparation);
        let is = new.is_some_and(Observed::in_preparation);
        let kind = id.kind;
        if was && !is {
            let c = self.live.get_mut(kind);
            *c = c.saturating_sub(1);
            self.in_preparation.remove(id);
        } else if !was && is {
            *self.live.get_mut(kind) += 1;
            self.in_preparation.insert(id.clone());
        }
        let verdict = recount(self.policy, old, new);
        if verdict.refreshes() {
            self.stale[kind.index()] = true;
        }
        Applied {
            recount: verdict,
            preparation_changed: was != is,
            slot_freed: (was && !is) || released,
        }
    }

    /// The per-kind counts the gate compares with the limit. Like Velero's
    /// `IsConstrained` (L3.10), this refreshes every kind marked stale since
    /// the last call; the other kinds keep their cached count.
    pub fn counts(&mut self) -> KindCounts {
        for kind in LoadKind::ALL {
            if self.stale[kind.index()] {
                *self.cached.get_mut(kind) = self.live.get(kind);
                self.stale[kind.index()] = false;
            }
        }
        self.cached
    }

    /// What [`CountCache::counts`] would return now, without refreshing
    /// anything (for a pass that must not change the cache).
    pub fn counts_view(&self) -> KindCounts {
        let mut view = self.cached;
        for kind in LoadKind::ALL {
            if self.stale[kind.index()] {
                *view.get_mut(kind) = self.live.get(kind);
            }
        }
        view
    }

    /// The exact number of loads in preparation in this view, per kind
    /// (what a full re-list would count).
    pub fn live_counts(&self) -> KindCounts {
        self.live
    }

    /// The loads in preparation in this view, sorted by id.
    pub fn in_preparation(&self) -> impl Iterator<Item = &LoadId> {
        self.in_preparation.iter()
    }

    /// The waiting loads handled here (`New`, not cancelled), in admission
    /// order.
    pub fn waiting(&self) -> impl Iterator<Item = &FifoKey> {
        self.waiting.iter()
    }

    /// The number of waiting loads.
    pub fn waiting_len(&self) -> usize {
        self.waiting.len()
    }

    /// The last state seen of a load.
    pub fn get(&self, id: &LoadId) -> Option<&Load> {
        self.loads.get(id)
    }

    /// Whether the view saw this load deleted (and has not seen it since).
    pub fn is_deleted(&self, id: &LoadId) -> bool {
        self.tombstones.contains(id)
    }

    /// Records that a live read (GET) confirmed the load no longer exists
    /// (not found, or found with another UID). Used for ledger entries whose
    /// load this view never saw (see [`crate::unconfirmed_entries`]).
    pub fn confirm_deleted(&mut self, id: &LoadId) -> Applied {
        self.delete(id)
    }

    /// Forgets tombstones for which `keep` is false (tombstones are only
    /// needed for ids still listed in the exact-mode ledger).
    pub fn retain_tombstones(&mut self, mut keep: impl FnMut(&LoadId) -> bool) {
        self.tombstones.retain(|id| keep(id));
    }

    /// Number of tombstones held.
    pub fn tombstone_count(&self) -> usize {
        self.tombstones.len()
    }

    /// Loads this gate admitted that the view does not yet show leaving
    /// `New`. They count against the limit (optimistic mode).
    pub fn reservations(&self) -> impl Iterator<Item = &LoadId> {
        self.reservations.iter()
    }

    /// Number of reservations.
    pub fn reservation_count(&self) -> usize {
        self.reservations.len()
    }

    pub(crate) fn is_reserved_key(&self, key: &FifoKey) -> bool {
        !self.reservations.is_empty() && self.reservations.contains(&key.id())
    }

    pub(crate) fn reserve(&mut self, id: &LoadId) {
        self.reservations.insert(id.clone());
    }

    /// Releases a reservation after the accept update failed for another
    /// reason than the load having moved on (e.g. a 500): the load is waiting
    /// again.
    pub fn release(&mut self, id: &LoadId) -> bool {
        self.reservations.remove(id)
    }

    /// The first `n` waiting loads: the ones to reconcile at once when a slot
    /// is freed, instead of waiting for their 5 s requeue.
    pub fn wake_candidates(&self, n: usize) -> Vec<LoadId> {
        self.waiting.iter().take(n).map(FifoKey::id).collect()
    }
}

fn observed(load: &Load) -> Observed {
    Observed {
        phase: load.phase,
        expose_on_going: load.expose_on_going,
    }
}
