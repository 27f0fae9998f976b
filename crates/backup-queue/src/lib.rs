//! Velero's concurrent backup queue as a pure, incremental planner.
//!
//! Velero moves new backups to `Queued` with a `queuePosition`, and starts
//! (`ReadyToStart`) a queued backup when fewer than `--concurrent-backups`
//! backups are running and its namespaces overlap neither a running backup
//! nor a backup ahead of it in the queue (Q4.1–Q4.22).
//! This crate decides the same thing from a snapshot:
//!
//! - [`NamespaceMatcher`] validates and compiles a backup's namespace filter
//!   once (Velero's wildcard rules, Q4.6–Q4.9);
//! - [`plan`] turns a [`QueueInput`] into a [`Plan`]: ordered status writes
//!   reaching the steady state in one pass, plus a [`WaitReason`] for every
//!   backup left waiting;
//! - [`drain`] applies the planner round after round, every running backup
//!   ending at the end of its round, and gives each backup the round it
//!   runs in and why it waited before ([`Drain`]);
//! - [`QueueState`] keeps resolved namespace sets up to date one
//!   [`QueueEvent`] at a time and plans without re-resolving anything;
//! - with the `reference` feature, `reference` is a deliberately
//!   straightforward model of Velero's own reconcile loop, the oracle of the
//!   tests, benchmarks and fuzz target (not needed to plan).
//!
//! No I/O, no clock, no randomness: the same input gives the same plan.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod drain;
mod explain;
mod input;
mod namespaces;
mod pass;
mod plan;
#[cfg(feature = "reference")]
pub mod reference;
mod state;
mod universe;

pub use drain::{Drain, DrainRound, DrainWait, DrainedBackup, drain};
pub use explain::{SHARED_NAMES_SHOWN, SharedNamespaces, WaitReason};
pub use input::{BackupInput, NamespaceFilter, Phase, QueueInput};
pub use namespaces::{
    FilterField, NamespaceMatcher, PatternCache, PatternError, PatternProblem, validate_pattern,
};
pub use pass::plan;
pub use plan::{InvalidFilter, Plan, StatusChange, StatusWrite, Waiting};
pub use state::{QueueEvent, QueueState};

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
