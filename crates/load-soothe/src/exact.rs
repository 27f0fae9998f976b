//! Exact mode: admission through the shared ledger (the protocol is in the
//! crate documentation, `# Exact mode`).

use jiff::Timestamp;

use crate::cache::CountCache;
use crate::config::Limit;
use crate::decision::{Admission, Decision, HoldReason, hold};
use crate::ledger::{
    ACCEPT_GRACE, ExactView, LEDGER_FORMAT_VERSION, Ledger, LedgerEntry, LedgerSnapshot,
    LedgerWrite,
};
use crate::model::{FifoKey, Load, LoadId};

/// Why an entry may be removed, from this view.
pub(crate) fn has_left_preparation(cache: &CountCache, id: &LoadId) -> bool {
    if cache.is_deleted(id) {
        return true;
    }
    match cache.get(id) {
        Some(load) => load.phase.is_past_preparation() && !load.expose_on_going,
        None => false,
    }
}

/// Ledger entries whose load this view neither has nor saw deleted. They keep
/// their slot; a controller should GET each (a live read) and call
/// [`CountCache::confirm_deleted`] if it is gone (not found, or another UID),
/// e.g. after a watch re-list that missed the delete.
pub fn unconfirmed_entries(ledger: &Ledger, cache: &CountCache) -> Vec<LoadId> {
    ledger
        .admitted
        .iter()
        .map(|e| &e.id)
        .filter(|id| cache.get(id).is_none() && !cache.is_deleted(id))
        .cloned()
        .collect()
}

/// A write that only removes entries whose loads left preparation, if there
/// are any. Not needed for progress (admitting writes clean up too); useful to
/// keep the ledger readable for humans.
pub fn plan_cleanup(snapshot: &LedgerSnapshot, cache: &CountCache) -> Option<LedgerWrite> {
    let (kept, removed) = split(&snapshot.ledger, cache);
    if removed.is_empty() {
        return None;
    }
    Some(LedgerWrite {
        expected_resource_version: snapshot.resource_version.clone(),
        ledger: Ledger {
            version: LEDGER_FORMAT_VERSION,
            admitted: kept,
        },
        admitted: Vec::new(),
        removed,
    })
}

fn split(ledger: &Ledger, cache: &CountCache) -> (Vec<LedgerEntry>, Vec<LoadId>) {
    let mut kept = Vec::new();
    let mut removed = Vec::new();
    for entry in &ledger.admitted {
        if has_left_preparation(cache, &entry.id) {
            removed.push(entry.id.clone());
        } else {
            kept.push(entry.clone());
        }
    }
    (kept, removed)
}

/// Whether [`ACCEPT_GRACE`] after the entry's admission is over at `now`
/// (then any node may accept the load, not only the admitting one).
pub(crate) fn accept_grace_over(entry: &LedgerEntry, now: Timestamp) -> bool {
    jiff::SignedDuration::try_from(ACCEPT_GRACE)
        .ok()
        .and_then(|g| entry.admitted_at.checked_add(g).ok())
        .is_none_or(|deadline| now >= deadline)
}

/// The exact-mode decision for a load the gate applies to.
///
/// Holds allocate nothing beyond the reason; only an admission builds the
/// new ledger.
pub(crate) fn decide_exact(
    limit: Limit,
    cache: &CountCache,
    view: ExactView<'_>,
    load: &Load,
    now: Timestamp,
) -> Decision {
    let snapshot = view.ledger;
    let ledger = &snapshot.ledger;
    if let Some(entry) = ledger.entry(&load.id) {
        if entry.admitted_by != view.node && !accept_grace_over(entry, now) {
            return hold(HoldReason::AdmittedElsewhere {
                node: entry.admitted_by.clone(),
            });
        }
        return Decision::Admit(Admission {
            occupied: ledger.len() as u64,
            limit: limit.get(),
            ahead: 0,
            already_in_ledger: true,
        });
    }
    let kept = |id: &LoadId| -> bool {
        ledger.admitted.iter().any(|e| e.id == *id) && !has_left_preparation(cache, id)
    };
    let kept_count = ledger
        .admitted
        .iter()
        .filter(|e| !has_left_preparation(cache, &e.id))
        .count() as u64;
    let unledgered = cache.in_preparation().filter(|id| !kept(id)).count() as u64;
    let occupied = kept_count + unledgered;
    if occupied >= limit.get() {
        return hold(HoldReason::LedgerFull {
            ledger_entries: kept_count,
            unledgered,
            limit: limit.get(),
        });
    }
    let free = limit.get() - occupied;
    let key = load.fifo_key();
    // The waiting loads ahead of this one that the ledger does not list yet
    // (a listed one keeps its slot and is counted in `kept_count`).
    let listed = |k: &FifoKey| ledger.admitted.iter().any(|e| e.is_key(k));
    let ahead: Vec<&FifoKey> = cache
        .waiting()
        .take_while(|k| **k < key)
        .filter(|k| !listed(k))
        .take(usize::try_from(free).unwrap_or(usize::MAX))
        .collect();
    if ahead.len() as u64 >= free {
        return hold(HoldReason::WaitingBehind {
            ahead: ahead.len() as u64,
            free,
            limit: limit.get(),
        });
    }
    // Admit the loads ahead (they are next anyway) and this one, in one write.
    let (mut entries, removed) = split(ledger, cache);
    let mut admitted: Vec<LoadId> = ahead.iter().map(|k| k.id()).collect();
    admitted.push(load.id.clone());
    entries.extend(
        admitted
            .iter()
            .map(|id| LedgerEntry::new(id, now, view.node)),
    );
    entries.sort_by(|a, b| a.id.cmp(&b.id));
    Decision::WriteLedger(LedgerWrite {
        expected_resource_version: snapshot.resource_version.clone(),
        ledger: Ledger {
            version: LEDGER_FORMAT_VERSION,
            admitted: entries,
        },
        admitted,
        removed,
    })
}

/// Admits the next loads of this node's queue, up to the free slots of this
/// view, and removes the entries whose loads left preparation, in one write;
/// `None` if there is nothing to admit.
///
/// Call it on the node that just moved a load out of preparation (to
/// `InProgress`, or a terminal phase), right after applying that update to
/// its own cache: that node knows first that a slot is free, so letting it
/// (rather than every node-agent) take the slot avoids a burst of
/// conflicting ledger writes. Loads it admits for itself it accepts at once;
/// the others are accepted by their nodes when they see the ledger.
pub fn plan_admissions(
    limit: Limit,
    cache: &CountCache,
    view: ExactView<'_>,
    now: Timestamp,
) -> Option<LedgerWrite> {
    let ledger = &view.ledger.ledger;
    let kept_count = ledger
        .admitted
        .iter()
        .filter(|e| !has_left_preparation(cache, &e.id))
        .count() as u64;
    let kept = |id: &LoadId| -> bool {
        ledger.admitted.iter().any(|e| e.id == *id) && !has_left_preparation(cache, id)
    };
    let unledgered = cache.in_preparation().filter(|id| !kept(id)).count() as u64;
    let free = limit.get().checked_sub(kept_count + unledgered)?;
    if free == 0 {
        return None;
    }
    let listed = |k: &FifoKey| ledger.admitted.iter().any(|e| e.is_key(k));
    let admitted: Vec<LoadId> = cache
        .waiting()
        .filter(|k| !listed(k))
        .take(usize::try_from(free).unwrap_or(usize::MAX))
        .map(FifoKey::id)
        .collect();
    if admitted.is_empty() {
        return None;
    }
    let (mut entries, removed) = split(ledger, cache);
    entries.extend(
        admitted
            .iter()
            .map(|id| LedgerEntry::new(id, now, view.node)),
    );
    entries.sort_by(|a, b| a.id.cmp(&b.id));
    Some(LedgerWrite {
        expected_resource_version: view.ledger.resource_version.clone(),
        ledger: Ledger {
            version: LEDGER_FORMAT_VERSION,
            admitted: entries,
        },
        admitted,
        removed,
    })
}
