//! The gate decision for one load (documented on [`decide`]).

use std::time::Duration;

use jiff::Timestamp;

use crate::cache::CountCache;
use crate::config::{Enablement, GateConfig, Limit, Mode};
use crate::decision::{Admission, Decision, HoldReason, NotGated, hold};
use crate::exact::decide_exact;
use crate::ledger::{ExactView, LedgerSnapshot};
use crate::model::{FifoKey, Load, LoadId, Phase};

/// The checks common to every mode: is the gate on, and does it apply to
/// this load? Returns the limit when it does.
pub(crate) fn applicable(enablement: Enablement, load: &Load) -> Result<Limit, NotGated> {
    let limit = match enablement {
        Enablement::Disabled(why) => return Err(NotGated::Disabled(why)),
        Enablement::Enabled(limit) => limit,
    };
    if !load.handled_here {
        return Err(NotGated::NotHandledHere);
    }
    if load.phase != Phase::New || load.in_preparation() {
        return Err(NotGated::NotNew(load.phase));
    }
    if load.cancel_requested {
        return Err(NotGated::CancelRequested);
    }
    Ok(limit)
}

/// Decides for one load.
///
/// `exact` is only read in [`Mode::Exact`] (`None` there means "ledger not
/// read yet" and holds). `now` stamps new ledger entries. An admission in
/// [`Mode::Optimistic`] is remembered in `cache` as a reservation until the
/// view shows the load leave `New`; a hold changes nothing.
///
/// The gate decision for one load (L3.13), in the three modes.
///
/// A controller calls [`decide`] in the reconcile of a DataUpload,
/// DataDownload, PodVolumeBackup or PodVolumeRestore, before accepting it:
///
/// | decision | what the controller does |
/// |---|---|
/// | [`Decision::NotGated`] | its normal flow (the gate does not apply) |
/// | [`Decision::Admit`] | the accept update (conditional on the load's resourceVersion) |
/// | [`Decision::Hold`] | nothing written; requeue after [`crate::Hold::requeue_after`] |
/// | [`Decision::WriteLedger`] | compare-and-swap the ledger; on success the accept update, on 409 re-read the ledger and decide again |
pub fn decide(
    config: &GateConfig,
    cache: &mut CountCache,
    exact: Option<ExactView<'_>>,
    load: &Load,
    now: Timestamp,
) -> Decision {
    let limit = match applicable(config.enablement, load) {
        Ok(limit) => limit,
        Err(not) => return Decision::NotGated(not),
    };
    match config.mode {
        Mode::Velero => decide_velero(limit, cache),
        Mode::Optimistic => decide_optimistic(limit, cache, load),
        Mode::Exact => match exact {
            Some(view) => decide_exact(limit, cache, view, load, now),
            None => hold(HoldReason::LedgerUnavailable {
                detail: "not read yet".to_owned(),
            }),
        },
    }
}

/// Velero: `sum of cached counts >= limit` holds, anything else admits
/// (L3.10, L3.13).
fn decide_velero(limit: Limit, cache: &mut CountCache) -> Decision {
    let counts = cache.counts();
    let occupied = counts.total();
    if occupied >= limit.get() {
        return hold(HoldReason::QueueFull {
            counts,
            reserved: 0,
            limit: limit.get(),
        });
    }
    Decision::Admit(Admission {
        occupied,
        limit: limit.get(),
        ahead: 0,
        already_in_ledger: false,
    })
}

/// Optimistic: the count plus this gate's reservations must be below the
/// limit, and the load must be among the first `free` waiting loads.
fn decide_optimistic(limit: Limit, cache: &mut CountCache, load: &Load) -> Decision {
    let counts = cache.counts();
    let reserved = cache.reservation_count() as u64;
    let occupied = counts.total() + reserved;
    if occupied >= limit.get() {
        return hold(HoldReason::QueueFull {
            counts,
            reserved,
            limit: limit.get(),
        });
    }
    let free = limit.get() - occupied;
    let key = load.fifo_key();
    let ahead = cache
        .waiting()
        .take_while(|k| **k < key)
        .filter(|k| !cache.is_reserved_key(k))
        .take(usize::try_from(free).unwrap_or(usize::MAX))
        .count() as u64;
    if ahead >= free {
        return hold(HoldReason::WaitingBehind {
            ahead,
            free,
            limit: limit.get(),
        });
    }
    cache.reserve(&load.id);
    Decision::Admit(Admission {
        occupied,
        limit: limit.get(),
        ahead,
        already_in_ledger: false,
    })
}

/// The waiting loads a controller should reconcile now because a slot was
/// freed (see [`crate::Applied::slot_freed`]): as many heads of this node's
/// queue as there are free slots in this view (none in [`Mode::Velero`],
/// which only polls). Exact mode counts the ledger entries as occupied.
pub fn wake_list(
    config: &GateConfig,
    cache: &mut CountCache,
    ledger: Option<&LedgerSnapshot>,
) -> Vec<LoadId> {
    let Some(limit) = config.enablement.limit() else {
        return Vec::new();
    };
    let occupied = match config.mode {
        Mode::Velero => return Vec::new(),
        Mode::Optimistic => cache.counts().total() + cache.reservation_count() as u64,
        Mode::Exact => {
            let listed = ledger.map(|l| l.ledger.len() as u64).unwrap_or(0);
            listed.max(cache.counts().total())
        }
    };
    let free = limit.get().saturating_sub(occupied);
    let free = usize::try_from(free).unwrap_or(usize::MAX);
    cache
        .waiting()
        .filter(|k| !cache.is_reserved_key(k))
        .filter(|k| {
            ledger.is_none_or(|l| {
                !l.ledger
                    .admitted
                    .iter()
                    .any(|e| e.id.uid == k.uid && e.id.name == k.name && e.id.kind == k.kind)
            })
        })
        .take(free)
        .map(FifoKey::id)
        .collect()
}

/// Default spread of [`wake_delay`].
pub const WAKE_SPREAD: Duration = Duration::from_secs(1);

/// A deterministic per-node delay in `[0, spread)` before reconciling a woken
/// load, so that the node-agents that all see the same slot free do not all
/// try to take it in the same instant (in exact mode every simultaneous
/// attempt but one is a ledger conflict). FNV-1a of the node name and the
/// load UID: the same node and load always get the same delay, and the node
/// with the smallest delay for a load differs from load to load.
pub fn wake_delay(node: &str, load: &LoadId, spread: Duration) -> Duration {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for b in node.bytes().chain([0u8]).chain(load.uid.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(PRIME);
    }
    let millis = u64::try_from(spread.as_millis()).unwrap_or(u64::MAX);
    if millis == 0 {
        return Duration::ZERO;
    }
    Duration::from_millis(h % millis)
}
