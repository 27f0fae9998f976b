//! The prepare-queue admission gate of Velero's node-agent ("load
//! soothing", spec §3.3): how many DataUpload, DataDownload, PodVolumeBackup
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
//! - [`Mode::Exact`]: admission through a shared [`ledger`] written with
//!   compare-and-swap: never more than the limit in preparation.
//!
//! Modules: [`model`] (loads, phases, "in preparation"), [`config`]
//! (enablement, L3.8), [`recount`] (the transition table, L3.12), [`cache`]
//! (the count cache), [`gate`] (the decision), [`ledger`] (exact mode). The
//! discrete-event simulation of a cluster is the `load-soothe-sim` crate.
//!
//! `docs/load-soothe.md` explains the modes, the controller integration step
//! by step, and how to choose `prepareQueueLength`, with the simulation's
//! numbers.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod cache;
pub mod config;
pub mod gate;
pub mod ledger;
pub mod model;
pub mod recount;

pub use cache::{Applied, CountCache, WatchEvent};
pub use config::{Enablement, GateConfig, HOLD_REQUEUE_AFTER, Limit, Mode};
pub use gate::{
    Admission, Decision, Hold, HoldReason, NotGated, WAKE_SPREAD, decide, wake_delay, wake_list,
};
pub use ledger::{ExactView, Ledger, LedgerSnapshot, LedgerWrite, plan_admissions};
pub use model::{FifoKey, KindCounts, Load, LoadId, LoadKind, Phase};
pub use recount::{Recount, RecountPolicy};

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
