//! One pass of a gate over its whole queue: which waiting loads to accept
//! now, the one ledger write that must come first (exact mode), and why every
//! other waiting load is held.
//!
//! [`decide`](crate::decide) answers for one load, the way Velero's
//! per-object reconcilers ask. A controller that sees every load at once
//! (the `load-soothe-controller`, `policyctl soothe`, the simulation) decides
//! the whole queue in one [`plan_pass`] instead, with the same rules:
//!
//! - waiting loads are taken in first-in first-out order
//!   ([`FifoKey`](crate::FifoKey)); loads this gate admitted that its view
//!   does not yet show leaving `New` (reservations) are in flight and
//!   neither accepted again nor held;
//! - the free slots go to the first waiting loads; once they are taken,
//!   **the block carries over**: every later load is held for the same
//!   reason (the queue is full), without deciding each one again;
//! - optimistic mode: the free slots are the limit minus the loads in
//!   preparation in the view and the reservations; holds say `QueueFull` and
//!   count this pass's admissions as "just admitted by this node";
//! - exact mode: the free slots are the limit minus the ledger entries whose
//!   load has not left preparation and the loads in preparation the ledger
//!   does not list. All the
//!   admissions of a pass go into **one** ledger write (compare-and-swap on
//!   the ledger's resourceVersion, also dropping the entries whose loads
//!   left preparation); the accepts come after it succeeds. A load the
//!   ledger already lists is accepted without a write, unless another node
//!   admitted it less than [`ACCEPT_GRACE`](crate::ACCEPT_GRACE) ago
//!   (held `AdmittedElsewhere`, which blocks nobody). Without a readable
//!   ledger everything is held `LedgerUnavailable`;
//! - Velero mode keeps Velero's behaviour: while the (lazily refreshed)
//!   count is below the limit every waiting load is admitted, since Velero
//!   does not count its own admissions;
//! - with the gate disabled every waiting load is accepted.
//!
//! Tombstones (loads seen deleted) only matter while the exact-mode ledger
//! lists them: [`retain_tombstones`] applies that policy.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde::Serialize;

use crate::cache::CountCache;
use crate::config::{Enablement, GateConfig, Mode};
use crate::decision::HoldReason;
use crate::exact::{accept_grace_over, has_left_preparation};
use crate::ledger::{ExactView, LEDGER_FORMAT_VERSION, Ledger, LedgerEntry, LedgerWrite};
use crate::model::{FifoKey, LoadId, LoadKind};

/// Exact mode's knowledge of the ledger for a pass.
#[derive(Clone, Copy, Debug)]
pub enum ExactInput<'a> {
    /// The ledger as last read, and this gate's node name.
    Read(ExactView<'a>),
    /// The ledger could not be read or parsed: what is wrong.
    Unavailable(&'a str),
}

/// A waiting load the pass holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PassHold {
    /// The load.
    pub load: LoadId,
    /// Why.
    pub reason: HoldReason,
    /// Waiting loads held ahead of it in this pass.
    pub ahead: u64,
}

impl PassHold {
    /// The sentence users read (Event note, `policyctl soothe`): the reason
    /// and how many loads wait ahead.
    pub fn note(&self) -> String {
        format!(
            "{}; {} earlier load(s) waiting ahead of this one",
            self.reason, self.ahead
        )
    }
}

/// What one pass decides. Carry it out in this order: the ledger write (if
/// any; on `409` re-read the ledger and pass again, accepting nothing), then
/// the accepts, each conditioned on the load's resourceVersion.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PassPlan {
    /// Loads to accept, in first-in first-out order.
    pub accepts: Vec<LoadId>,
    /// Exact mode: the ledger write admitting the accepted loads it does not
    /// list yet.
    #[serde(skip)]
    pub ledger_write: Option<LedgerWrite>,
    /// Waiting loads held, in first-in first-out order.
    pub holds: Vec<PassHold>,
}

/// Plans one pass over every waiting load of `counts` (see the module docs).
///
/// `exact` is only read in [`Mode::Exact`], where `None` means the ledger
/// was not read yet. `now` stamps new ledger entries and ends the accept
/// grace of other nodes' admissions.
pub fn plan_pass(
    config: &GateConfig,
    counts: &CountCache,
    exact: Option<ExactInput<'_>>,
    now: Timestamp,
) -> PassPlan {
    let waiting = counts.waiting().filter(|k| !counts.is_reserved_key(k));
    let limit = match config.enablement {
        Enablement::Disabled(_) => {
            return PassPlan {
                accepts: waiting.map(FifoKey::id).collect(),
                ..PassPlan::default()
            };
        }
        Enablement::Enabled(limit) => limit.get(),
    };
    match config.mode {
        Mode::Velero => {
            let view = counts.counts_view();
            if view.total() < limit {
                return PassPlan {
                    accepts: waiting.map(FifoKey::id).collect(),
                    ..PassPlan::default()
                };
            }
            hold_all(
                waiting,
                HoldReason::QueueFull {
                    counts: view,
                    reserved: 0,
                    limit,
                },
            )
        }
        Mode::Optimistic => {
            let view = counts.counts_view();
            let reserved = counts.reservation_count() as u64;
            let free = limit.saturating_sub(view.total() + reserved);
            let mut plan = PassPlan::default();
            let mut keys = waiting;
            plan.accepts = keys
                .by_ref()
                .take(usize::try_from(free).unwrap_or(usize::MAX))
                .map(FifoKey::id)
                .collect();
            let full = HoldReason::QueueFull {
                counts: view,
                reserved: reserved + plan.accepts.len() as u64,
                limit,
            };
            plan.holds = held(keys, &full);
            plan
        }
        Mode::Exact => match exact {
            None => hold_all(
                waiting,
                HoldReason::LedgerUnavailable {
                    detail: "not read yet".to_owned(),
                },
            ),
            Some(ExactInput::Unavailable(detail)) => hold_all(
                waiting,
                HoldReason::LedgerUnavailable {
                    detail: detail.to_owned(),
                },
            ),
            Some(ExactInput::Read(view)) => plan_exact(limit, counts, view, now),
        },
    }
}

/// Holds every key for `reason`, counting the loads ahead.
fn held<'a>(keys: impl Iterator<Item = &'a FifoKey>, reason: &HoldReason) -> Vec<PassHold> {
    keys.enumerate()
        .map(|(ahead, key)| PassHold {
            load: key.id(),
            reason: reason.clone(),
            ahead: ahead as u64,
        })
        .collect()
}

fn hold_all<'a>(keys: impl Iterator<Item = &'a FifoKey>, reason: HoldReason) -> PassPlan {
    PassPlan {
        holds: held(keys, &reason),
        ..PassPlan::default()
    }
}

/// A load id by reference, comparable with a [`FifoKey`] without
/// allocating.
type IdRef<'a> = (LoadKind, &'a str, &'a str, &'a str);

fn id_ref(id: &LoadId) -> IdRef<'_> {
    (id.kind, &id.namespace, &id.name, &id.uid)
}

fn key_ref(key: &FifoKey) -> IdRef<'_> {
    (key.kind, &key.namespace, &key.name, &key.uid)
}

fn plan_exact(limit: u64, counts: &CountCache, view: ExactView<'_>, now: Timestamp) -> PassPlan {
    let ledger = &view.ledger.ledger;
    let listed: BTreeMap<IdRef<'_>, &LedgerEntry> =
        ledger.admitted.iter().map(|e| (id_ref(&e.id), e)).collect();
    let (kept, removed): (Vec<&LedgerEntry>, Vec<&LedgerEntry>) = ledger
        .admitted
        .iter()
        .partition(|e| !has_left_preparation(counts, &e.id));
    let kept_ids: BTreeSet<IdRef<'_>> = kept.iter().map(|e| id_ref(&e.id)).collect();
    let unledgered = counts
        .in_preparation()
        .filter(|id| !kept_ids.contains(&id_ref(id)))
        .count() as u64;
    let free = limit.saturating_sub(kept.len() as u64 + unledgered);
    let mut plan = PassPlan::default();
    let mut admitted: Vec<LoadId> = Vec::new();
    for key in counts.waiting().filter(|k| !counts.is_reserved_key(k)) {
        let ahead = plan.holds.len() as u64;
        if let Some(entry) = listed.get(&key_ref(key)) {
            if entry.admitted_by != view.node && !accept_grace_over(entry, now) {
                plan.holds.push(PassHold {
                    load: key.id(),
                    reason: HoldReason::AdmittedElsewhere {
                        node: entry.admitted_by.clone(),
                    },
                    ahead,
                });
            } else {
                plan.accepts.push(key.id());
            }
        } else if (admitted.len() as u64) < free {
            let id = key.id();
            admitted.push(id.clone());
            plan.accepts.push(id);
        } else {
            plan.holds.push(PassHold {
                load: key.id(),
                reason: HoldReason::LedgerFull {
                    ledger_entries: kept.len() as u64 + admitted.len() as u64,
                    unledgered,
                    limit,
                },
                ahead,
            });
        }
    }
    if !admitted.is_empty() {
        let mut entries: Vec<LedgerEntry> = kept.into_iter().cloned().collect();
        entries.extend(admitted.iter().map(|id| LedgerEntry {
            id: id.clone(),
            admitted_at: now,
            admitted_by: view.node.to_owned(),
        }));
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        plan.ledger_write = Some(LedgerWrite {
            expected_resource_version: view.ledger.resource_version.clone(),
            ledger: Ledger {
                version: LEDGER_FORMAT_VERSION,
                admitted: entries,
            },
            admitted,
            removed: removed.into_iter().map(|e| e.id.clone()).collect(),
        });
    }
    plan
}

/// Forgets the tombstones no decision needs any more: in exact mode with a
/// readable ledger, those of loads the ledger does not list (an entry of a
/// load seen deleted is removed by the next write); in exact mode without
/// one, none (the ledger may list any of them); in the other modes, all.
pub fn retain_tombstones(cache: &mut CountCache, mode: Mode, ledger: Option<&Ledger>) {
    match (mode, ledger) {
        (Mode::Exact, Some(ledger)) => {
            let listed: BTreeSet<&LoadId> = ledger.admitted.iter().map(|e| &e.id).collect();
            cache.retain_tombstones(|id| listed.contains(id));
        }
        (Mode::Exact, None) => {}
        (Mode::Optimistic | Mode::Velero, _) => cache.retain_tombstones(|_| false),
    }
}
