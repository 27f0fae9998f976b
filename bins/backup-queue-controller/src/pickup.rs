//! The pickup nudge: Velero's backup controller starts a `ReadyToStart`
//! Backup only on an Update event (its create predicate returns false, and
//! it sets no resync period), so a Backup that is `ReadyToStart` when the
//! Velero server (re)starts, or that this controller made `ReadyToStart`
//! while Velero was down, is not started for hours while it holds a slot
//! of the queue. A `ReadyToStart` Backup that has not moved on within
//! `--pickup-timeout` is therefore nudged: a metadata-only merge patch
//! setting [`PICKUP_ANNOTATION`] to the time, which is exactly the Update
//! event Velero reacts to. It is repeated every `--pickup-timeout` while
//! the Backup stays `ReadyToStart`: a running Velero moves a nudged Backup
//! on at once, so a Backup still waiting means Velero is not there yet,
//! and a constant interval bounds the wait after Velero comes back by the
//! timeout (a backoff would stretch it to the longest backoff).
//!
//! How long a Backup has been `ReadyToStart` is read from the objects, so
//! it survives a restart of this controller: the time of the last nudge
//! (the annotation), else the time of this controller's last write to the
//! Backup (its `managedFields` entry: the write that made it
//! `ReadyToStart`), else its creation.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use kube::ResourceExt;
use serde_json::{Value, json};
use velero_api::{Backup, BackupPhase};

use crate::config::CONTROLLER_NAME;
use crate::index::QueueIndex;

/// The annotation a nudge sets (to the time of the nudge, RFC 3339).
pub const PICKUP_ANNOTATION: &str = "backup-queue.placement-policies.io/pickup-nudged-at";

/// One nudge to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nudge {
    /// The Backup.
    pub backup: String,
    /// The resourceVersion it was decided from (the precondition).
    pub resource_version: Option<String>,
    /// Which nudge this is (1 for the first since this process saw the
    /// Backup `ReadyToStart`).
    pub attempt: u32,
    /// How long the Backup has been waiting since it became ready or was
    /// last nudged.
    pub waited: Duration,
}

/// Since when `backup` has been waiting to be picked up (see the module docs).
pub fn waiting_since(backup: &Backup) -> Option<Timestamp> {
    if let Some(at) = backup
        .annotations()
        .get(PICKUP_ANNOTATION)
        .and_then(|t| t.parse::<Timestamp>().ok())
    {
        return Some(at);
    }
    let ours = backup
        .managed_fields()
        .iter()
        .filter(|e| e.manager.as_deref() == Some(CONTROLLER_NAME))
        .filter_map(|e| e.time.as_ref().map(|t| t.0))
        .max();
    ours.or_else(|| backup.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The nudges due at `now`: every `ReadyToStart` Backup waiting for at
/// least `timeout` (since it became ready or was last nudged); `attempts`
/// is how often this process nudged each already. Sorted by name.
pub fn due(
    index: &QueueIndex,
    now: Timestamp,
    timeout: Duration,
    attempts: &BTreeMap<String, u32>,
) -> Vec<Nudge> {
    let mut out: Vec<Nudge> = index
        .backups()
        .filter(|b| b.phase() == BackupPhase::ReadyToStart)
        .filter_map(|b| {
            let name = b.name_any();
            let attempt = attempts.get(&name).copied().unwrap_or(0);
            let since = waiting_since(b)?;
            let waited = Duration::try_from(now.duration_since(since)).unwrap_or_default();
            (waited >= timeout).then(|| Nudge {
                backup: name,
                resource_version: b.resource_version(),
                attempt: attempt + 1,
                waited,
            })
        })
        .collect();
    out.sort_by(|a, b| a.backup.cmp(&b.backup));
    out
}

/// The merge patch of a nudge: the annotation only.
pub fn patch(now: Timestamp) -> Value {
    json!({"metadata": {"annotations": {PICKUP_ANNOTATION: now.to_string()}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patch_touches_only_the_annotation() {
        let now: Timestamp = "2026-11-24T07:00:00Z".parse().unwrap();
        assert_eq!(
            patch(now),
            json!({"metadata": {"annotations": {PICKUP_ANNOTATION: "2026-11-24T07:00:00Z"}}})
        );
    }
}
