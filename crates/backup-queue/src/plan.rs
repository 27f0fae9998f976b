//! What a plan is: the status writes to make, in order, and why every backup
//! left waiting waits. (The pass that computes it is in `pass`.)

use std::fmt;
use std::sync::Arc;

use crate::explain::WaitReason;
use crate::input::{Phase, QueueInput};
use crate::namespaces::PatternError;

/// A status change for one backup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusChange {
    /// Dequeue: `phase = ReadyToStart`, `queuePosition` removed (Q4.14).
    /// Also used for a `New` backup that can start at once.
    Start,
    /// Queue a `New` backup: `phase = Queued`, `queuePosition = position`
    /// (Q4.10).
    Enqueue {
        /// The position it gets.
        position: u32,
    },
    /// Move a `Queued` backup to another position (Q4.15, but only when
    /// the position actually changes).
    Reposition {
        /// The position it had.
        from: u32,
        /// The position it gets.
        to: u32,
    },
}

impl StatusChange {
    /// The `status.phase` written.
    pub fn phase(self) -> Phase {
        match self {
            Self::Start => Phase::ReadyToStart,
            Self::Enqueue { .. } | Self::Reposition { .. } => Phase::Queued,
        }
    }

    /// The `status.queuePosition` written (0 = removed).
    pub fn queue_position(self) -> u32 {
        match self {
            Self::Start => 0,
            Self::Enqueue { position } => position,
            Self::Reposition { to, .. } => to,
        }
    }
}

/// One status write: a merge patch of `status.phase` and
/// `status.queuePosition` on the `/status` subresource.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StatusWrite {
    /// The backup's name.
    pub backup: Arc<str>,
    /// The `resourceVersion` of the snapshot the plan was made from; send
    /// it as a precondition so a write based on stale data fails with 409
    /// (re-plan from fresh state then).
    pub resource_version: Option<Arc<str>>,
    /// What to write.
    pub change: StatusChange,
}

/// A backup that stays `Queued`, with its position after the plan and why.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Waiting {
    /// The backup's name.
    pub backup: Arc<str>,
    /// Its `queuePosition` after the plan (1-based, dense).
    pub position: u32,
    /// Why it does not start.
    pub reason: WaitReason,
}

/// A backup whose namespace filter is invalid. Velero gives it the empty set
/// (Q4.9), so it overlaps nothing; this planner instead treats it as covering
/// every namespace (it may still run if the backup controller accepts the
/// pattern), so it starts only when it overlaps nothing. Report it to the
/// user early (Event, CLI): the backup controller will probably fail its
/// validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidFilter {
    /// The backup's name.
    pub backup: Arc<str>,
    /// The first invalid pattern.
    pub error: PatternError,
}

/// The outcome of planning: the writes to make, in order, and the state of
/// every backup left waiting.
///
/// Writes are ordered so that every prefix is safe to apply alone (a crash
/// half-way leaves no overlap and no duplicate position): first the
/// dequeues in queue order, then the position writes in ascending new
/// position.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Status writes, in the order to make them.
    pub writes: Vec<StatusWrite>,
    /// Every backup that is `Queued` after the plan, in queue order.
    pub waiting: Vec<Waiting>,
    /// Backups with an invalid namespace filter, by name.
    pub invalid: Vec<InvalidFilter>,
    /// Backups active (`ReadyToStart` or `InProgress`) after the plan.
    pub active: u32,
    /// The concurrency limit used.
    pub concurrent_backups: u32,
}

impl Plan {
    /// True if the plan writes nothing.
    pub fn is_noop(&self) -> bool {
        self.writes.is_empty()
    }

    /// The backups the plan starts, in order.
    pub fn started(&self) -> impl Iterator<Item = &str> {
        self.writes
            .iter()
            .filter(|w| w.change == StatusChange::Start)
            .map(|w| &*w.backup)
    }

    /// Applies the writes to a snapshot (what the API server would hold
    /// after they all succeed). Writes for unknown backups are ignored.
    pub fn apply_to(&self, input: &mut QueueInput) {
        let index: std::collections::HashMap<&str, &StatusWrite> =
            self.writes.iter().map(|w| (&*w.backup, w)).collect();
        for b in &mut input.backups {
            if let Some(w) = index.get(b.name.as_str()) {
                b.phase = w.change.phase();
                b.queue_position = w.change.queue_position();
            }
        }
    }
}

impl fmt::Display for StatusWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.change {
            StatusChange::Start => write!(f, "{}: start (phase ReadyToStart)", self.backup),
            StatusChange::Enqueue { position } => {
                write!(f, "{}: queue at position {position}", self.backup)
            }
            StatusChange::Reposition { from, to } => {
                write!(f, "{}: move from position {from} to {to}", self.backup)
            }
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} of {} concurrent backups active after the plan",
            self.active, self.concurrent_backups
        )?;
        if self.writes.is_empty() {
            writeln!(f, "writes: none")?;
        } else {
            writeln!(f, "writes:")?;
            for (i, w) in self.writes.iter().enumerate() {
                writeln!(f, "  {}. {w}", i + 1)?;
            }
        }
        if !self.waiting.is_empty() {
            writeln!(f, "waiting:")?;
            for w in &self.waiting {
                writeln!(f, "  #{} {}: {}", w.position, w.backup, w.reason)?;
            }
        }
        for i in &self.invalid {
            writeln!(f, "invalid: {}: {}", i.backup, i.error)?;
        }
        Ok(())
    }
}
