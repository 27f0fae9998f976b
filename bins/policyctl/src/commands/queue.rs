//! `queue [--concurrent-backups N]`: the steady state the backup-queue
//! controller reaches from the input with no backup finishing.
//!
//! Velero keeps one queue per Velero namespace (Q4.3): Backups are grouped by
//! namespace, each group is planned on its own, and the results are merged
//! (keys `namespace/name`; `started` lists the groups in namespace order).
//!
//! The table lists each queue in queue order: the backups running after the
//! plan (those already `ReadyToStart` or `InProgress`, by name, then those
//! that start now, in dequeue order), then the `Queued` ones by their new
//! position, then every other backup by name.

use std::collections::BTreeMap;
use std::io::Write;

use backup_queue::{BackupInput, Phase, Plan, QueueInput, plan};
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
    }
    result
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
    });
    Output {
        document,
        table: table_text(outcome, concurrent_backups),
    }
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
    text
}
