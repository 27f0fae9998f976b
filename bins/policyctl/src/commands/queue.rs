//! `queue [--concurrent-backups N]`: the steady state the backup-queue
//! controller reaches from the input with no backup finishing.
//!
//! Velero keeps one queue per Velero namespace (Q4.3): Backups are grouped by
//! namespace, each group is planned on its own, and the results are merged
//! (keys `namespace/name`; `started` lists the groups in namespace order).
//!
//! Then each queue drains over time (`backup_queue::drain`): in rounds, in
//! each of which the running backups end and the queue starts the next
//! ones. The input gives no durations, so the unit is the round; every
//! backup gets the round it runs in and why it waited before (the JSON's
//! `drain`; the table's last section).
//!
//! The table lists each queue in queue order: the backups running after the
//! plan (those already `ReadyToStart` or `InProgress`, by name, then those
//! that start now, in dequeue order), then the `Queued` ones by their new
//! position, then every other backup by name.

use std::collections::BTreeMap;
use std::io::Write;

use backup_queue::{BackupInput, Drain, Phase, Plan, QueueInput, WaitReason, drain, plan};
use kube_adapters::velero::backup_input;
use serde_json::json;
use velero_api::Backup;

use crate::commands::CommandError;
use crate::manifest::Inventory;
use crate::output::{Output, fitted_table};

/// Velero's `--concurrent-backups` as given, and the number it means:
/// values below 1 mean 1 (Q4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConcurrentBackups {
    /// The value given.
    pub given: i64,
    /// The number of concurrent backups it means.
    pub effective: u32,
}

impl ConcurrentBackups {
    /// Reads a value as Velero does.
    pub fn new(given: i64) -> Self {
        Self {
            given,
            effective: u32::try_from(given.max(1)).unwrap_or(u32::MAX),
        }
    }
}

impl std::fmt::Display for ConcurrentBackups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--concurrent-backups {}", self.given)?;
        if i64::from(self.effective) != self.given {
            write!(
                f,
                " (values below 1 mean 1, as in Velero: {} concurrent backup)",
                self.effective
            )?;
        }
        Ok(())
    }
}

/// The merged outcome over every Velero namespace.
#[derive(Clone, Debug, Default)]
pub struct QueueOutcome {
    /// Per backup (`namespace/name`): phase and position after the plan,
    /// and the phase before.
    pub backups: BTreeMap<String, BackupAfter>,
    /// Backups started, in dequeue order.
    pub started: Vec<String>,
    /// Backups left queued, with the reason.
    pub waiting: BTreeMap<String, String>,
    /// Status patches needed.
    pub writes: usize,
    /// Backups whose namespace filter is invalid, with the problem.
    pub invalid: BTreeMap<String, String>,
    /// Every backup (`namespace/name`) in queue order (see the module
    /// documentation).
    pub order: Vec<String>,
    /// How the queues drain over time, round by round.
    pub drain: DrainOutcome,
}

/// How the queues drain, merged over every Velero namespace (all the queues
/// drain at once: round `r` is the same time in each).
#[derive(Clone, Debug, Default)]
pub struct DrainOutcome {
    /// The number of rounds until every queue is empty.
    pub rounds: u32,
    /// Every backup of a queue (`namespace/name`), in the order they run:
    /// by round, then by Velero namespace, then as the queue starts them.
    pub order: Vec<String>,
    /// Per backup (`namespace/name`): the round it runs in and why it
    /// waited before.
    pub backups: BTreeMap<String, DrainEntry>,
}

/// One backup of a [`DrainOutcome`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrainEntry {
    /// The round it runs in.
    pub start: u32,
    /// Already `ReadyToStart` or `InProgress` in the input.
    pub already_running: bool,
    /// Why it waited, one entry per stretch of rounds with one reason: the
    /// first [`DRAIN_WAITS_KEPT`] `- 1` stretches and the last one.
    pub waits: Vec<DrainWaitEntry>,
    /// Stretches left out between those kept (0 for most backups).
    pub waits_omitted: usize,
}

/// The most stretches of waiting listed per backup. A long queue whose
/// backups share one namespace waits behind a different running backup in
/// every round; listing every round would grow with the square of the
/// queue's length.
pub const DRAIN_WAITS_KEPT: usize = 10;

/// Rounds `from..=to` in which a backup waited for one reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrainWaitEntry {
    /// The first round of the stretch.
    pub from: u32,
    /// The last round of the stretch.
    pub to: u32,
    /// `namespaceOverlap` (with a running backup or an earlier queued one)
    /// or `concurrencyLimit`.
    pub kind: &'static str,
    /// The backup it waited for (`namespace/name`), for a namespace
    /// overlap.
    pub blocker: Option<String>,
    /// The planner's sentence.
    pub reason: String,
}

/// One backup after the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupAfter {
    /// Phase before (as written in the object; `New` when absent).
    pub phase_before: String,
    /// Position before (0 when absent).
    pub position_before: i64,
    /// Phase after the plan.
    pub phase: String,
    /// Position after the plan (0 when not queued).
    pub position: u32,
}

/// Plans every queue of the input.
pub fn outcome(inventory: &Inventory, concurrent_backups: ConcurrentBackups) -> QueueOutcome {
    let cluster_namespaces: Vec<String> = inventory
        .namespaces
        .keys()
        .map(|key| key.name.clone())
        .collect();
    let mut by_namespace: BTreeMap<&str, Vec<&Backup>> = BTreeMap::new();
    for (key, located) in &inventory.backups {
        by_namespace
            .entry(key.namespace.as_str())
            .or_default()
            .push(&located.object);
    }
    let mut result = QueueOutcome::default();
    for (namespace, backups) in by_namespace {
        let input = QueueInput {
            backups: backups.iter().copied().map(backup_input).collect(),
            cluster_namespaces: cluster_namespaces.clone(),
            concurrent_backups: concurrent_backups.effective,
        };
        let plan = plan(&input);
        merge(&mut result, namespace, &backups, &input, &plan);
        merge_drain(&mut result.drain, namespace, &drain(&input));
    }
    let order = |key: &String| {
        let start = result.drain.backups.get(key).map_or(u32::MAX, |e| e.start);
        (start, key.split('/').next().unwrap_or_default().to_owned())
    };
    // By round, then namespace; the sort is stable, so each queue keeps
    // its own order within a round.
    result.drain.order.sort_by_key(order);
    result
}

/// Adds one queue's drain to the merged one.
fn merge_drain(result: &mut DrainOutcome, namespace: &str, drained: &Drain) {
    let key = |name: &str| format!("{namespace}/{name}");
    result.rounds = result.rounds.max(drained.round_count());
    for b in &drained.backups {
        result.order.push(key(&b.backup));
        let omitted = b.waits.len().saturating_sub(DRAIN_WAITS_KEPT);
        let kept = b
            .waits
            .iter()
            .enumerate()
            .filter(|(i, _)| *i + 1 < DRAIN_WAITS_KEPT || *i + 1 == b.waits.len())
            .map(|(_, w)| w);
        let waits = kept
            .map(|w| {
                let (kind, blocker) = match &w.reason {
                    WaitReason::OverlapsActive { backup, .. }
                    | WaitReason::BehindEarlier { backup, .. } => {
                        ("namespaceOverlap", Some(key(backup)))
                    }
                    _ => ("concurrencyLimit", None),
                };
                DrainWaitEntry {
                    from: w.from,
                    to: w.to,
                    kind,
                    blocker,
                    reason: w.reason.to_string(),
                }
            })
            .collect();
        result.backups.insert(
            key(&b.backup),
            DrainEntry {
                start: b.start,
                already_running: b.already_running,
                waits,
                waits_omitted: omitted,
            },
        );
    }
}

fn merge(
    result: &mut QueueOutcome,
    namespace: &str,
    backups: &[&Backup],
    input: &QueueInput,
    plan: &Plan,
) {
    let mut after = input.clone();
    plan.apply_to(&mut after);
    let key = |name: &str| format!("{namespace}/{name}");
    let states: BTreeMap<&str, &BackupInput> = after
        .backups
        .iter()
        .map(|state| (state.name.as_str(), state))
        .collect();
    for backup in backups {
        let name = backup.metadata.name.as_deref().unwrap_or_default();
        let Some(state) = states.get(name) else {
            continue;
        };
        let phase_before = backup.phase().to_string();
        let phase_before = if phase_before.is_empty() {
            "New".to_owned()
        } else {
            phase_before
        };
        let phase = match state.phase {
            Phase::Other => phase_before.clone(),
            known => known.as_str().to_owned(),
        };
        let position = if state.phase == Phase::Queued {
            state.queue_position
        } else {
            0
        };
        result.backups.insert(
            key(&state.name),
            BackupAfter {
                phase_before,
                position_before: backup.queue_position(),
                phase,
                position,
            },
        );
    }
    let started: Vec<String> = plan.started().map(&key).collect();
    // Queue order: running before the plan (by name), started now (dequeue
    // order), queued by new position, then the rest by name.
    let rank = |name: &str| -> (u8, usize, String) {
        let full = key(name);
        match states.get(name) {
            Some(state) if state.phase == Phase::Queued => (2, state.queue_position as usize, full),
            Some(state) if state.phase.is_active() => {
                match started.iter().position(|s| *s == full) {
                    Some(index) => (1, index, full),
                    None => (0, 0, full),
                }
            }
            _ => (3, 0, full),
        }
    };
    let mut order: Vec<(u8, usize, String)> = backups
        .iter()
        .map(|backup| rank(backup.metadata.name.as_deref().unwrap_or_default()))
        .collect();
    order.sort();
    result
        .order
        .extend(order.into_iter().map(|(_, _, name)| name));
    result.started.extend(started);
    for waiting in &plan.waiting {
        result
            .waiting
            .insert(key(&waiting.backup), waiting.reason.to_string());
    }
    for invalid in &plan.invalid {
        result
            .invalid
            .insert(key(&invalid.backup), invalid.error.to_string());
    }
    result.writes += plan.writes.len();
}

/// Runs the command.
pub fn run(
    inventory: &Inventory,
    concurrent_backups: ConcurrentBackups,
    stderr: &mut dyn Write,
) -> Result<Output, CommandError> {
    let outcome = outcome(inventory, concurrent_backups);
    for (backup, problem) in &outcome.invalid {
        let _ = writeln!(
            stderr,
            "warning: backup {backup} has an invalid namespace filter ({problem}); it is queued as if it covered every namespace, and Velero will probably fail its validation"
        );
    }
    Ok(render(&outcome, concurrent_backups))
}

/// The JSON document and table of an outcome.
pub fn render(outcome: &QueueOutcome, concurrent_backups: ConcurrentBackups) -> Output {
    let document = json!({
        "backups": outcome.backups.iter().map(|(key, b)| (key.clone(), json!({
            "phase": b.phase,
            "queuePosition": b.position,
        }))).collect::<serde_json::Map<_, _>>(),
        "started": outcome.started,
        "waiting": outcome.waiting,
        "writes": outcome.writes,
        "drain": drain_document(&outcome.drain),
    });
    Output {
        document,
        table: table_text(outcome, concurrent_backups),
    }
}

/// The JSON of a drain: the unit, the number of rounds, the backups in the
/// order they run, and per backup its start round and waits.
fn drain_document(drain: &DrainOutcome) -> serde_json::Value {
    json!({
        "unit": "round",
        "rounds": drain.rounds,
        "order": drain.order,
        "backups": drain.backups.iter().map(|(key, e)| (key.clone(), json!({
            "start": e.start,
            "alreadyRunning": e.already_running,
            "waitsOmitted": e.waits_omitted,
            "waits": e.waits.iter().map(|w| json!({
                "from": w.from,
                "to": w.to,
                "kind": w.kind,
                "blocker": w.blocker,
                "reason": w.reason,
            })).collect::<Vec<_>>(),
        }))).collect::<serde_json::Map<_, _>>(),
    })
}

/// Rounds listed in the table; a longer drain is summed up after them.
const DRAIN_ROUNDS_SHOWN: u32 = 12;

/// The drain in a few lines: the backups of each round.
fn drain_text(drain: &DrainOutcome) -> String {
    if drain.rounds == 0 {
        return String::new();
    }
    let mut text = format!(
        "\nDrain: {} round(s) until the queue is empty (no durations in the input: in each round\nevery running backup ends and the queue starts the next ones)\n",
        drain.rounds
    );
    let mut rows: Vec<[String; 2]> = Vec::new();
    for round in 0..drain.rounds.min(DRAIN_ROUNDS_SHOWN) {
        let names: Vec<&str> = drain
            .order
            .iter()
            .filter(|key| drain.backups.get(*key).is_some_and(|e| e.start == round))
            .map(String::as_str)
            .collect();
        rows.push([round.to_string(), names.join(", ")]);
    }
    text.push_str(&fitted_table(&["round", "backups running"], rows));
    if drain.rounds > DRAIN_ROUNDS_SHOWN {
        text.push_str(&format!(
            "... and {} more round(s) (see -o json)\n",
            drain.rounds - DRAIN_ROUNDS_SHOWN
        ));
    }
    text
}

/// The people's view: every backup in queue order with its phase and
/// position before and after, and why it waits.
pub fn table_text(outcome: &QueueOutcome, concurrent_backups: ConcurrentBackups) -> String {
    let mut text = format!(
        "{concurrent_backups}: {} started, {} waiting, {} status write(s)\n\n",
        outcome.started.len(),
        outcome.waiting.len(),
        outcome.writes
    );
    let position = |p: i64| {
        if p == 0 {
            "-".to_owned()
        } else {
            p.to_string()
        }
    };
    text.push_str(&fitted_table(
        &[
            "backup",
            "phase",
            "position",
            "new phase",
            "new position",
            "why",
        ],
        outcome.order.iter().filter_map(|key| {
            let b = outcome.backups.get(key)?;
            let why = if outcome.started.contains(key) {
                "starts now".to_owned()
            } else {
                outcome.waiting.get(key).cloned().unwrap_or_default()
            };
            Some([
                key.clone(),
                b.phase_before.clone(),
                position(b.position_before),
                b.phase.clone(),
                position(i64::from(b.position)),
                why,
            ])
        }),
    ));
    text.push_str(&drain_text(&outcome.drain));
    text
}
