//! The prepare-queue admission gate of Velero's node-agent ("load
//! soothing", L3.8–L3.14): how many DataUpload, DataDownload, PodVolumeBackup
//! and PodVolumeRestore loads may be in preparation (exposed: snapshot, PVC
//! and data-mover pod created, not yet transferring) at once, cluster-wide.
//!
//! Pure: no I/O, no clock (`now` is a parameter), no randomness. A controller
//! keeps one [`CountCache`] per node-agent, feeds it the watch events of the
//! four kinds ([`CountCache::handle`]), and before accepting a `New` load
//! calls [`decide`], then carries out the [`Decision`]:
//!
//! - [`Mode::Velero`]: Velero's behaviour, bugs included (stale counts after
//!   creates and deletes, no order among waiting loads);
//! - [`Mode::Optimistic`]: the same soft limit with the fixes: exact
//!   incremental count, first-in first-out admission across kinds
//!   ([`FifoKey`]), own admissions remembered; overshoot bounded by nodes ×
//!   kinds (L3.14) and measured by the `load-soothe-sim` simulator;
//! - [`Mode::Exact`]: admission through a shared [`Ledger`] written with
//!   compare-and-swap: never more than the limit in preparation.
//!
//! The pieces: [`Load`] (loads, phases, "in preparation"), [`GateConfig`]
//! (enablement, L3.8), [`recount()`] (the transition table, L3.12),
//! [`CountCache`] (the count cache), [`decide`] (the decision for one load),
//! [`plan_pass`] (the decisions for a whole queue at once, as a controller,
//! `policyctl soothe` and the simulator make them), [`simulate_backlog`]
//! (a backlog draining step by step through Velero's gate or the exact
//! one, as `policyctl report` shows it), [`Ledger`],
//! [`plan_admissions`] and [`plan_cleanup`] (exact mode). The discrete-event
//! simulation of a cluster is the `load-soothe-sim` crate.
//!
//! `docs/load-soothe.md` explains the modes, the controller integration step
//! by step, and how to choose `prepareQueueLength`, with the simulation's
//! numbers.
//!
//! # Exact mode: why the limit is never exceeded
//!
//! 1. A gate accepts a `New` load only if the load is listed in the ledger
//!    (its own successful write, or any later read of the ledger), and the
//!    accept update is conditional on the load's resourceVersion.
//! 2. A write adds at most `limit − (entries kept + loads seen in preparation
//!    outside the ledger)` loads, so the ledger never lists more than
//!    `limit` loads.
//! 3. An entry is removed only when its load has permanently left
//!    preparation: seen deleted (or confirmed gone by a live read), or seen in
//!    a phase after `Prepared` without the expose label. Phases only move
//!    forward, so a stale view can only under-remove.
//!
//! Hence every load in preparation is listed in the current ledger, and the
//! number in preparation is at most `limit` (checked by the model tests in
//! `tests/exact_model.rs`).
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod backlog;
mod cache;
mod config;
mod decision;
mod exact;
mod gate;
mod ledger;
mod lift;
mod model;
mod pass;
mod recount;

pub use backlog::{BacklogGate, BacklogInput, BacklogRun, BacklogStep, simulate_backlog};
pub use cache::{Applied, CountCache, WatchEvent};
pub use config::{DisabledBecause, Enablement, GateConfig, HOLD_REQUEUE_AFTER, Limit, Mode};
pub use decision::{Admission, Decision, Hold, HoldReason, NotGated};
pub use exact::{plan_admissions, plan_cleanup, unconfirmed_entries};
pub use gate::{WAKE_SPREAD, decide, wake_delay, wake_list};
pub use ledger::{
    ACCEPT_GRACE, DEFAULT_LEDGER_NAME, ExactView, LEDGER_DATA_KEY, LEDGER_FORMAT_VERSION, Ledger,
    LedgerEntry, LedgerError, LedgerSnapshot, LedgerWrite,
};
pub use lift::{
    ExactLiftPlan, LiftPlan, MoverPod, PREPARE_QUEUE_GATE, PodRef, counts_against_limit,
    plan_exact_lifts, plan_lifts,
};
pub use model::{FifoKey, KindCounts, Load, LoadId, LoadKind, Phase, in_preparation};
pub use pass::{ExactInput, PassHold, PassPlan, plan_pass, retain_tombstones};
pub use recount::{FixTrigger, Observed, Recount, RecountPolicy, VeleroTrigger, recount};

impl RecountPolicy {
    /// The table a mode uses: Velero's for [`Mode::Velero`], the fixed one
    /// otherwise.
    pub fn for_mode(mode: Mode) -> RecountPolicy {
        match mode {
            Mode::Velero => RecountPolicy::Velero,
            Mode::Optimistic | Mode::Exact => RecountPolicy::Fixed,
        }
    }
}

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
