//! The pass: from the index to the writes that bring the queue to its
//! steady state, a pure function.
//!
//! When anything the explanations depend on changed since the last
//! explained plan was carried out, the planner explains every waiting
//! backup ([`QueueState::plan`](backup_queue::QueueState::plan)) and the
//! pass adds the reason annotations that change. Otherwise (a Backup's
//! labels, or an `InProgress` backup's progress, changed) it asks the fast
//! [`QueueState::plan_writes`](backup_queue::QueueState::plan_writes),
//! which gives no explanations; should that plan write anything, the pass
//! explains after all, since every status write carries its reason.
//!
//! Writes come in the planner's order, whose every prefix is safe to apply
//! alone: the status writes (each with its annotation change), then
//! annotation-only writes of waiting backups whose reason changed.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use backup_queue::{Plan, WaitReason};
use kube::ResourceExt;

use crate::backup_write::{BackupWrite, ReasonUpdate};
use crate::index::{QueueIndex, current_reason};

/// What one pass decides.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuePlan {
    /// The writes, in order.
    pub writes: Vec<BackupWrite>,
    /// Whether the planner explained every waiting backup (then
    /// [`QueuePlan::queued`] and [`QueuePlan::active`] are known).
    pub explained: bool,
    /// Backups `Queued` after the plan.
    pub queued: usize,
    /// Backups `ReadyToStart` or `InProgress` after the plan.
    pub active: u32,
    /// Backups whose namespace filter is invalid: (backup, error).
    pub invalid: Vec<(String, String)>,
    /// Pickup nudges due (filled by the reconciler, which knows the time
    /// and how often it nudged each Backup).
    pub nudges: Vec<crate::pickup::Nudge>,
}

/// The pass (see the module docs).
pub fn plan(index: &QueueIndex) -> QueuePlan {
    let state = index.state();
    let (queue, explained) = if index.needs_explaining() {
        (state.plan(), true)
    } else {
        let fast = state.plan_writes();
        if fast.writes.is_empty() {
            (fast, false)
        } else {
            (state.plan(), true)
        }
    };
    QueuePlan {
        writes: if explained {
            writes_for(&queue, index)
        } else {
            Vec::new()
        },
        explained,
        queued: queue.waiting.len(),
        active: queue.active,
        invalid: queue
            .invalid
            .iter()
            .map(|i| (i.backup.to_string(), i.error.to_string()))
            .collect(),
        nudges: Vec::new(),
    }
}

/// The plan's status writes (in order) with their annotation changes, then
/// annotation-only writes for waiting backups whose reason changed.
fn writes_for(plan: &Plan, index: &QueueIndex) -> Vec<BackupWrite> {
    let reasons: HashMap<&str, String> = plan
        .waiting
        .iter()
        .map(|w| (&*w.backup, reason_text(&w.reason)))
        .collect();
    let desired = |name: &str| -> ReasonUpdate {
        let current = index.backup(name).and_then(current_reason);
        match (reasons.get(name), current) {
            (Some(want), Some(have)) if want == have => ReasonUpdate::Keep,
            (Some(want), _) => ReasonUpdate::Set(want.clone()),
            (None, Some(_)) => ReasonUpdate::Remove,
            (None, None) => ReasonUpdate::Keep,
        }
    };
    let mut out = Vec::with_capacity(plan.writes.len());
    let mut seen = HashSet::new();
    for w in &plan.writes {
        seen.insert(&*w.backup);
        out.push(BackupWrite {
            backup: w.backup.to_string(),
            resource_version: w.resource_version.as_deref().map(str::to_owned),
            change: Some(w.change),
            reason: desired(&w.backup),
        });
    }
    for w in &plan.waiting {
        if seen.contains(&*w.backup) {
            continue;
        }
        let reason = desired(&w.backup);
        if reason != ReasonUpdate::Keep {
            out.push(BackupWrite {
                backup: w.backup.to_string(),
                resource_version: index
                    .backup(&w.backup)
                    .and_then(ResourceExt::resource_version),
                change: None,
                reason,
            });
        }
    }
    out
}

/// The words of a wait reason, for the annotation and the `Waiting` Event.
pub fn reason_text(reason: &WaitReason) -> String {
    match reason {
        WaitReason::OverlapsActive {
            backup,
            phase,
            namespaces,
        } => format!(
            "waiting because it overlaps backup {backup} ({phase}) on namespaces {namespaces}"
        ),
        WaitReason::BehindEarlier {
            backup,
            position,
            namespaces,
        } => format!(
            "waiting because it overlaps backup {backup}, queued ahead of it at position {position}, on namespaces {namespaces}"
        ),
        WaitReason::CapacityFull { limit } => format!(
            "waiting for a free slot: {limit} of {limit} concurrent backups are running or ready to start"
        ),
        other => format!("waiting: {other}"),
    }
}

/// `1h2m3s`, `4m0s`, `12s`.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec}s"),
        (h, m, sec) => format!("{h}h{m}m{sec}s"),
    }
}
