//! The planner: one pass over the queue that reaches Velero's steady state
//! (Q4.22) and says why every backup left waiting waits.

use crate::explain::{SharedNamespaces, WaitReason};
use crate::input::{Phase, QueueInput};
use crate::plan::{InvalidFilter, Plan, StatusChange, StatusWrite, Waiting};
use crate::state::{NsSet, QueueState};
use crate::universe::Universe;

/// Plans the status writes that bring a queue snapshot to Velero's steady
/// state in one pass (Q4.22):
///
/// 1. `New` backups join the end of the queue in creation order (ties by
///    name), as at `max + 1` (Q4.10);
/// 2. in queue order — `(queuePosition, creationTimestamp, name)`, so equal
///    or zero positions left by races are ordered too — every waiting backup
///    whose namespace set is disjoint from every active backup and from
///    every earlier waiting backup starts while fewer than
///    `concurrent_backups` backups are `ReadyToStart`/`InProgress` (counted
///    from the objects, Q4.11–Q4.14);
/// 3. the backups left waiting are numbered 1..n; only changed positions
///    are written (Q4.15).
///
/// Equivalent to `QueueState::from_input(input).plan()`.
pub fn plan(input: &QueueInput) -> Plan {
    QueueState::from_input(input).plan()
}

impl QueueState {
    /// Plans the status writes that bring the queue to its steady state,
    /// with a [`crate::WaitReason`] for every backup left waiting.
    pub fn plan(&self) -> Plan {
        plan_state(self, true)
    }

    /// Like [`QueueState::plan`] without the explanations (`Plan::waiting`
    /// is empty): the cheap form for a controller reacting to every event.
    pub fn plan_writes(&self) -> Plan {
        plan_state(self, false)
    }
}

const NONE: u32 = u32::MAX;

/// The namespaces claimed so far in the pass, with the backup to blame for
/// each: active backups (by smallest name) before waiting ones (earliest in
/// the queue), so explanations do not change once the plan is applied.
struct Claims<'s> {
    state: &'s QueueState,
    /// Per id: slot of the active backup with the smallest name holding it.
    active: Vec<u32>,
    /// Per id: slot of the earliest waiting backup holding it.
    waiting: Vec<u32>,
    /// Active `All` backup with the smallest name.
    active_all: u32,
    /// Earliest waiting `All` backup.
    waiting_all: u32,
    /// Active backup with a non-empty set and the smallest name.
    active_any: u32,
    /// Earliest waiting backup with a non-empty set.
    waiting_any: u32,
}

impl<'s> Claims<'s> {
    fn new(state: &'s QueueState) -> Self {
        let n = state.universe.id_count();
        Self {
            state,
            active: vec![NONE; n],
            waiting: vec![NONE; n],
            active_all: NONE,
            waiting_all: NONE,
            active_any: NONE,
            waiting_any: NONE,
        }
    }

    fn smaller_name(&self, a: u32, b: u32) -> u32 {
        match (a, b) {
            (NONE, x) | (x, NONE) => x,
            _ if self.state.record(b).name < self.state.record(a).name => b,
            _ => a,
        }
    }

    fn claim_active(&mut self, slot: u32, set: &NsSet) {
        if is_empty(set, &self.state.universe) {
            return;
        }
        self.active_any = self.smaller_name(self.active_any, slot);
        match set {
            NsSet::All => self.active_all = self.smaller_name(self.active_all, slot),
            NsSet::Ids(ids) => {
                for &id in ids {
                    let cur = self.active[id as usize];
                    self.active[id as usize] = self.smaller_name(cur, slot);
                }
            }
        }
    }

    fn claim_waiting(&mut self, slot: u32, set: &NsSet) {
        if is_empty(set, &self.state.universe) {
            return;
        }
        if self.waiting_any == NONE {
            self.waiting_any = slot;
        }
        match set {
            NsSet::All => {
                if self.waiting_all == NONE {
                    self.waiting_all = slot;
                }
            }
            NsSet::Ids(ids) => {
                for &id in ids {
                    if self.waiting[id as usize] == NONE {
                        self.waiting[id as usize] = slot;
                    }
                }
            }
        }
    }

    /// The active backup to blame for blocking `set`, if any.
    fn active_blocker(&self, set: &NsSet) -> Option<u32> {
        if is_empty(set, &self.state.universe) {
            return None;
        }
        let found = match set {
            NsSet::All => self.active_any,
            NsSet::Ids(ids) => ids.iter().fold(self.active_all, |best, &id| {
                self.smaller_name(best, self.active[id as usize])
            }),
        };
        (found != NONE).then_some(found)
    }

    /// The earliest waiting backup blocking `set`, if any. `rank` orders
    /// waiting slots.
    fn waiting_blocker(&self, set: &NsSet, rank: &[u32]) -> Option<u32> {
        if is_empty(set, &self.state.universe) {
            return None;
        }
        let earlier = |a: u32, b: u32| match (a, b) {
            (NONE, x) | (x, NONE) => x,
            _ if rank[b as usize] < rank[a as usize] => b,
            _ => a,
        };
        let found = match set {
            NsSet::All => self.waiting_any,
            NsSet::Ids(ids) => ids.iter().fold(self.waiting_all, |best, &id| {
                earlier(best, self.waiting[id as usize])
            }),
        };
        (found != NONE).then_some(found)
    }
}

fn is_empty(set: &NsSet, universe: &Universe) -> bool {
    match set {
        NsSet::All => universe.live_count() == 0,
        NsSet::Ids(ids) => ids.is_empty(),
    }
}

/// The namespaces two sets share, for an explanation.
fn shared(a: &NsSet, b: &NsSet, universe: &Universe) -> SharedNamespaces {
    let mut out = SharedNamespaces::collector();
    match (a, b) {
        (NsSet::All, NsSet::All) => universe
            .live()
            .for_each(|(_, id)| out.add(universe.name(id))),
        (NsSet::All, NsSet::Ids(ids)) | (NsSet::Ids(ids), NsSet::All) => {
            ids.iter().for_each(|&id| out.add(universe.name(id)));
        }
        (NsSet::Ids(x), NsSet::Ids(y)) => {
            let (mut i, mut j) = (0, 0);
            while i < x.len() && j < y.len() {
                match x[i].cmp(&y[j]) {
                    std::cmp::Ordering::Less => i += 1,
                    std::cmp::Ordering::Greater => j += 1,
                    std::cmp::Ordering::Equal => {
                        out.add(universe.name(x[i]));
                        i += 1;
                        j += 1;
                    }
                }
            }
        }
    }
    out.finish()
}

/// Which backups start and which wait, in queue order.
struct Decision {
    starts: Vec<u32>,
    waiting: Vec<u32>,
    /// One per waiting backup, or empty when not explained.
    reasons: Vec<WaitReason>,
    active: u32,
}

/// The pass with blame: finds for every waiting backup what blocks it.
fn decide_explained(state: &QueueState) -> Decision {
    let universe = &state.universe;
    let limit = state.limit;
    let mut claims = Claims::new(state);
    let mut active = u32::try_from(state.active.len()).unwrap_or(u32::MAX);
    for &slot in state.active.values() {
        claims.claim_active(slot, &state.record(slot).set);
    }
    // Per slot: order among waiting backups (for blame), final position.
    let mut rank = vec![NONE; state.slots.len()];
    let mut final_position = vec![0u32; state.slots.len()];
    let queued = state.waiting.len();
    let mut starts = Vec::new();
    let mut waiting: Vec<u32> = Vec::with_capacity(queued);
    let mut reasons: Vec<WaitReason> = Vec::with_capacity(queued);
    for (order, &slot) in state.waiting.values().enumerate() {
        rank[slot as usize] = u32::try_from(order).unwrap_or(NONE - 1);
        let r = state.record(slot);
        let reason = if let Some(x) = claims.active_blocker(&r.set) {
            let blocker = state.record(x);
            Some(WaitReason::OverlapsActive {
                backup: blocker.name.clone(),
                phase: if blocker.phase.is_active() {
                    blocker.phase
                } else {
                    Phase::ReadyToStart
                },
                namespaces: shared(&r.set, &blocker.set, universe),
            })
        } else if let Some(e) = claims.waiting_blocker(&r.set, &rank) {
            let blocker = state.record(e);
            Some(WaitReason::BehindEarlier {
                backup: blocker.name.clone(),
                position: final_position[e as usize],
                namespaces: shared(&r.set, &blocker.set, universe),
            })
        } else if active >= limit {
            Some(WaitReason::CapacityFull { limit })
        } else {
            None
        };
        match reason {
            None => {
                active += 1;
                claims.claim_active(slot, &r.set);
                starts.push(slot);
            }
            Some(reason) => {
                waiting.push(slot);
                final_position[slot as usize] = u32::try_from(waiting.len()).unwrap_or(NONE);
                claims.claim_waiting(slot, &r.set);
                reasons.push(reason);
            }
        }
    }
    Decision {
        starts,
        waiting,
        reasons,
        active,
    }
}

/// Claimed namespaces, without owners.
struct Claimed {
    ids: Vec<bool>,
    /// An `All` set was claimed.
    all: bool,
    /// Some non-empty set was claimed.
    any: bool,
}

impl Claimed {
    fn claim(&mut self, set: &NsSet, universe: &Universe) {
        if is_empty(set, universe) {
            return;
        }
        self.any = true;
        match set {
            NsSet::All => self.all = true,
            NsSet::Ids(ids) => ids.iter().for_each(|&id| self.ids[id as usize] = true),
        }
    }

    fn blocks(&self, set: &NsSet, universe: &Universe) -> bool {
        !is_empty(set, universe)
            && match set {
                NsSet::All => self.any,
                NsSet::Ids(ids) => self.all || ids.iter().any(|&id| self.ids[id as usize]),
            }
    }
}

/// The same decisions without blame: a namespace is either claimed (by an
/// active or an earlier waiting backup) or not, and the first claimed
/// namespace of a backup settles that it waits.
fn decide_fast(state: &QueueState) -> Decision {
    let universe = &state.universe;
    let limit = state.limit;
    let mut claimed = Claimed {
        ids: vec![false; universe.id_count()],
        all: false,
        any: false,
    };
    let mut active = u32::try_from(state.active.len()).unwrap_or(u32::MAX);
    for &slot in state.active.values() {
        claimed.claim(&state.record(slot).set, universe);
    }
    let mut starts = Vec::new();
    let mut waiting: Vec<u32> = Vec::with_capacity(state.waiting.len());
    let mut order = state.waiting.values();
    for &slot in order.by_ref() {
        if active >= limit {
            // Nothing else can start: the rest of the queue just waits.
            waiting.push(slot);
            break;
        }
        let set = &state.record(slot).set;
        if claimed.blocks(set, universe) {
            waiting.push(slot);
        } else {
            active += 1;
            starts.push(slot);
        }
        claimed.claim(set, universe);
    }
    waiting.extend(order);
    Decision {
        starts,
        waiting,
        reasons: Vec::new(),
        active,
    }
}

/// The planning pass. Without `with_reasons`, `Plan::waiting` stays empty
/// (the cheap form for controllers that only need the writes).
fn plan_state(state: &QueueState, with_reasons: bool) -> Plan {
    let limit = state.limit;
    let decision = if with_reasons {
        decide_explained(state)
    } else {
        decide_fast(state)
    };
    let mut writes = Vec::with_capacity(decision.starts.len() + decision.waiting.len());
    writes.extend(decision.starts.iter().map(|&slot| {
        let r = state.record(slot);
        StatusWrite {
            backup: r.name.clone(),
            resource_version: r.resource_version.clone(),
            change: StatusChange::Start,
        }
    }));
    let mut waiting_out = Vec::with_capacity(decision.reasons.len());
    let mut reasons = decision.reasons.into_iter();
    for (i, &slot) in decision.waiting.iter().enumerate() {
        let r = state.record(slot);
        let position = u32::try_from(i + 1).unwrap_or(NONE);
        let change = match r.phase {
            Phase::New => Some(StatusChange::Enqueue { position }),
            _ if r.position != position => Some(StatusChange::Reposition {
                from: r.position,
                to: position,
            }),
            _ => None,
        };
        if let Some(change) = change {
            writes.push(StatusWrite {
                backup: r.name.clone(),
                resource_version: r.resource_version.clone(),
                change,
            });
        }
        if let Some(reason) = reasons.next() {
            waiting_out.push(Waiting {
                backup: r.name.clone(),
                position,
                reason,
            });
        }
    }
    let active = decision.active;

    let invalid = state
        .invalid
        .values()
        .filter_map(|&slot| {
            let r = state.record(slot);
            r.compiled.matcher.as_ref().err().map(|e| InvalidFilter {
                backup: r.name.clone(),
                error: e.clone(),
            })
        })
        .collect();

    Plan {
        writes,
        waiting: waiting_out,
        invalid,
        active,
        concurrent_backups: limit,
    }
}
