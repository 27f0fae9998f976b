//! How a queue drains over time: the planner applied round after round,
//! with every running backup ending at the end of its round.
//!
//! The input carries no durations, so time is counted in **rounds**: in
//! round 0 the backups already `ReadyToStart`/`InProgress` run together with
//! those the plan of the snapshot starts; at the end of every round all the
//! running backups end (their phase leaves the queue, as Velero's backup
//! controller moves a finished backup on), and the plan of the next round
//! starts the next ones. Each backup therefore runs in exactly one round, and
//! the round a backup starts in is how many "generations" of backups must
//! finish before it. Every round after round 0 starts at least the head of
//! the queue (nothing runs and nothing is ahead of it), so a queue of `n`
//! waiting backups drains in at most `n + 1` rounds.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::explain::WaitReason;
use crate::input::{BackupInput, Phase, QueueInput};
use crate::plan::{Plan, StatusChange};
use crate::state::{QueueEvent, QueueState};

/// The rounds in which a queue drains (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Drain {
    /// The concurrency limit used (at least 1).
    pub concurrent_backups: u32,
    /// Round by round, the backups running in it (round `i` is
    /// `rounds[i]`). Empty when the queue tracks no backup.
    pub rounds: Vec<DrainRound>,
    /// Every backup of the queue, in the order they run: by round, the ones
    /// already running (by name) before the ones started, which are in
    /// dequeue order.
    pub backups: Vec<DrainedBackup>,
}

/// One round of a [`Drain`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DrainRound {
    /// The backups running in this round, in the order of
    /// [`Drain::backups`].
    pub running: Vec<Arc<str>>,
}

/// One backup of a [`Drain`]: the round it runs in and why it waited
/// before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainedBackup {
    /// The backup's name.
    pub backup: Arc<str>,
    /// The round it runs in.
    pub start: u32,
    /// True when it was already `ReadyToStart` or `InProgress` in the input
    /// (it runs in round 0 without being started by the queue).
    pub already_running: bool,
    /// Why it waited in each round before `start`: consecutive rounds with
    /// the same reason are one entry. Empty when it runs in round 0.
    pub waits: Vec<DrainWait>,
}

/// Rounds `from..=to` in which a backup waited for one reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainWait {
    /// The first round of the stretch.
    pub from: u32,
    /// The last round of the stretch.
    pub to: u32,
    /// Why it waited (the plan's reason in each of these rounds).
    pub reason: WaitReason,
}

/// Drains a queue snapshot round by round (see the module documentation):
/// each round is the plan of [`crate::plan`] on the snapshot left by the
/// previous round, with its writes applied and the backups that ran removed.
pub fn drain(input: &QueueInput) -> Drain {
    let mut state = QueueState::from_input(input);
    let mut result = Drain {
        concurrent_backups: state.concurrent_backups(),
        ..Drain::default()
    };
    if state.is_empty() {
        return result;
    }
    // The latest version of each backup the queue sees (a later duplicate
    // replaces an earlier one, as in `QueueState::from_input`).
    let mut current: BTreeMap<Arc<str>, BackupInput> = BTreeMap::new();
    for b in &input.backups {
        current.insert(Arc::from(b.name.as_str()), b.clone());
    }
    current.retain(|_, b| b.phase != Phase::Other);
    let mut index: BTreeMap<Arc<str>, usize> = BTreeMap::new();
    let mut running: Vec<Arc<str>> = state.active.keys().cloned().collect();
    for name in &running {
        index.insert(name.clone(), result.backups.len());
        result.backups.push(DrainedBackup {
            backup: name.clone(),
            start: 0,
            already_running: true,
            waits: Vec::new(),
        });
    }
    // Every round starts at least one backup, so this bound is never
    // reached; it only keeps a defect from looping forever.
    let max_rounds = u32::try_from(current.len().saturating_add(1)).unwrap_or(u32::MAX);
    let mut round: u32 = 0;
    while round < max_rounds {
        let plan = state.plan();
        for name in plan.started() {
            let name: Arc<str> = Arc::from(name);
            match index.get(&name) {
                Some(&at) => result.backups[at].start = round,
                None => {
                    index.insert(name.clone(), result.backups.len());
                    result.backups.push(DrainedBackup {
                        backup: name.clone(),
                        start: round,
                        already_running: false,
                        waits: Vec::new(),
                    });
                }
            }
            running.push(name);
        }
        for waiting in &plan.waiting {
            let Some(&at) = index.get(&waiting.backup) else {
                index.insert(waiting.backup.clone(), result.backups.len());
                result.backups.push(DrainedBackup {
                    backup: waiting.backup.clone(),
                    // Set when it starts.
                    start: u32::MAX,
                    already_running: false,
                    waits: vec![DrainWait {
                        from: round,
                        to: round,
                        reason: waiting.reason.clone(),
                    }],
                });
                continue;
            };
            let waits = &mut result.backups[at].waits;
            match waits.last_mut() {
                Some(last) if last.reason == waiting.reason && last.to + 1 == round => {
                    last.to = round;
                }
                _ => waits.push(DrainWait {
                    from: round,
                    to: round,
                    reason: waiting.reason.clone(),
                }),
            }
        }
        result.rounds.push(DrainRound {
            running: std::mem::take(&mut running),
        });
        if plan.waiting.is_empty() {
            break;
        }
        // The round ends: what ran leaves the queue, the plan's writes land.
        for name in &result.rounds[result.rounds.len() - 1].running {
            if let Some(b) = current.remove(name) {
                state.apply(QueueEvent::UpsertBackup(BackupInput {
                    phase: Phase::Other,
                    ..b
                }));
            }
        }
        apply_queue_writes(&plan, &mut current, &mut state);
        round += 1;
    }
    // In the order they run: by round, then as listed in the round.
    let order: BTreeMap<Arc<str>, usize> = result
        .rounds
        .iter()
        .flat_map(|r| r.running.iter())
        .enumerate()
        .map(|(i, name)| (name.clone(), i))
        .collect();
    result
        .backups
        .sort_by_key(|b| order.get(&b.backup).copied().unwrap_or(usize::MAX));
    result
}

/// Applies a plan's position writes (the starts are already running) to the
/// snapshot and the state.
fn apply_queue_writes(
    plan: &Plan,
    current: &mut BTreeMap<Arc<str>, BackupInput>,
    state: &mut QueueState,
) {
    for write in &plan.writes {
        if write.change == StatusChange::Start {
            continue;
        }
        if let Some(b) = current.get_mut(&write.backup) {
            b.phase = write.change.phase();
            b.queue_position = write.change.queue_position();
            state.apply(QueueEvent::UpsertBackup(b.clone()));
        }
    }
}

impl Drain {
    /// The number of rounds until the queue is empty.
    pub fn round_count(&self) -> u32 {
        u32::try_from(self.rounds.len()).unwrap_or(u32::MAX)
    }
}
