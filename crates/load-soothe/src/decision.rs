//! What the gate decides for one load: the vocabulary shared by the gate's
//! modes ([`crate::decide`]) and exact-mode admission.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::config::{DisabledBecause, HOLD_REQUEUE_AFTER};
use crate::ledger::LedgerWrite;
use crate::model::{KindCounts, Phase};

/// The decision for one load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The gate does not apply to this load.
    NotGated(NotGated),
    /// Proceed to accept the load.
    Admit(Admission),
    /// Do not accept now; write nothing; reconcile again later.
    Hold(Hold),
    /// Exact mode: write this ledger content first (compare-and-swap on its
    /// resourceVersion), then accept the load.
    WriteLedger(LedgerWrite),
}

impl Decision {
    /// Whether this is a hold.
    pub fn is_hold(&self) -> bool {
        matches!(self, Decision::Hold(_))
    }
}

/// Why the gate does not apply (L3.8, L3.13).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum NotGated {
    /// `prepareQueueLength` absent, zero or negative.
    Disabled(#[serde(skip)] DisabledBecause),
    /// The load is not `New` (already past the gate).
    NotNew(Phase),
    /// `spec.cancel` is set: the controller cancels it without gating.
    CancelRequested,
    /// Another node-agent processes this load (PodVolumeBackup of another
    /// node, PodVolumeRestore `shouldProcess` false): ignore it.
    NotHandledHere,
}

/// An admission and the view it was decided on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Admission {
    /// Loads in preparation in the view (plus this gate's reservations, in
    /// optimistic mode) before this admission.
    pub occupied: u64,
    /// The limit.
    pub limit: u64,
    /// Number of waiting loads ahead of this one (0 = head of the queue;
    /// always 0 in Velero mode, which has no order).
    pub ahead: u64,
    /// Whether the load was already in the exact-mode ledger (admitted
    /// earlier, possibly by another node).
    pub already_in_ledger: bool,
}

/// A hold: write nothing, requeue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hold {
    /// Delay before the next reconcile (5 s, L3.13).
    #[serde(serialize_with = "ser_duration")]
    pub requeue_after: Duration,
    /// Why.
    pub reason: HoldReason,
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{}s", d.as_secs()))
}

/// Why a load is held.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum HoldReason {
    /// The count is at or above the limit (`sum >= limit`, L3.10).
    QueueFull {
        /// Loads in preparation per kind, as the gate counts them.
        counts: KindCounts,
        /// Admissions of this gate not yet visible in the view.
        reserved: u64,
        /// The limit.
        limit: u64,
    },
    /// There is room, but earlier waiting loads take it first (FIFO).
    WaitingBehind {
        /// Waiting loads ahead of this one that fill the free slots.
        ahead: u64,
        /// Free slots.
        free: u64,
        /// The limit.
        limit: u64,
    },
    /// Exact mode: the ledger (plus loads seen in preparation outside it) is
    /// full.
    LedgerFull {
        /// Entries in the ledger that still hold a slot.
        ledger_entries: u64,
        /// Loads seen in preparation that the ledger does not list (admitted
        /// by a gate not using the ledger); they count too.
        unledgered: u64,
        /// The limit.
        limit: u64,
    },
    /// Exact mode: the load is in the ledger, admitted by another node-agent
    /// that is expected to accept it (for [`crate::ACCEPT_GRACE`]).
    AdmittedElsewhere {
        /// The admitting node.
        node: String,
    },
    /// Exact mode: the ledger has not been read yet (or could not be
    /// parsed); nothing is admitted without it.
    LedgerUnavailable {
        /// What is wrong.
        detail: String,
    },
}

impl fmt::Display for HoldReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HoldReason::QueueFull {
                counts,
                reserved,
                limit,
            } => {
                // The breakdown adds up to the total: the loads seen in
                // preparation per kind, plus this gate's admissions not yet
                // seen.
                write!(
                    f,
                    "prepare queue full: {} of {limit} loads in preparation ({counts}",
                    counts.total() + reserved
                )?;
                if *reserved > 0 {
                    write!(f, ", plus {reserved} just admitted by this node")?;
                }
                f.write_str(")")
            }
            HoldReason::WaitingBehind { ahead, free, limit } => write!(
                f,
                "waiting behind {ahead} earlier load(s) for {free} free slot(s) of prepareQueueLength {limit}"
            ),
            HoldReason::LedgerFull {
                ledger_entries,
                unledgered,
                limit,
            } => {
                write!(
                    f,
                    "prepare queue full: {} of {limit} slots taken ({ledger_entries} admitted in the ledger",
                    ledger_entries + unledgered
                )?;
                if *unledgered > 0 {
                    write!(f, ", plus {unledgered} in preparation outside the ledger")?;
                }
                f.write_str(")")
            }
            HoldReason::AdmittedElsewhere { node } => {
                write!(f, "admitted by node-agent on {node}, which accepts it")
            }
            HoldReason::LedgerUnavailable { detail } => {
                write!(f, "prepare queue ledger unavailable: {detail}")
            }
        }
    }
}

impl fmt::Display for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}; retrying in {}s",
            self.reason,
            self.requeue_after.as_secs()
        )
    }
}

pub(crate) fn hold(reason: HoldReason) -> Decision {
    Decision::Hold(Hold {
        requeue_after: HOLD_REQUEUE_AFTER,
        reason,
    })
}
