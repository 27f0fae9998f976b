//! `soothe [--mode optimistic|exact]`: which `New` loads (DataUpload,
//! DataDownload, PodVolumeBackup, PodVolumeRestore) one prepare-queue gate
//! would admit now, in admission order (load-soothe, L3.8–L3.14).
//!
//! The gate sees every load of the input and handles all of them (as if one
//! node-agent served the whole cluster): the loads in preparation (label
//! `velero.io/expose-on-going=true`, or phase `Accepted`/`Prepared`) fill the
//! `prepareQueueLength` slots, and the waiting loads are decided in one pass
//! of the gate, `load_soothe::plan_pass` — the same function the
//! `load-soothe-controller` calls — in first-in first-out order: the free
//! slots go to the first waiting loads, every later one is held, with the
//! same reason the controller's `PrepareQueueHold` Event gives. In exact
//! mode the ledger ConfigMap (`velero-prepare-queue-ledger`) is read from the
//! input when present, else the ledger starts empty. With the gate disabled
//! (`prepareQueueLength` absent or ≤ 0, L3.8) every waiting load is
//! admitted.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use affinity_translate::NodeAgentConfig;
use jiff::Timestamp;
use kube_adapters::velero::{GateScope, LoadObject, load};
use load_soothe::{
    CountCache, Enablement, ExactInput, ExactView, GateConfig, LedgerSnapshot, Load, LoadId, Mode,
    RecountPolicy, plan_pass,
};
use load_soothe::{DEFAULT_LEDGER_NAME, Ledger};
use serde_json::json;

use crate::cli::SootheMode;
use crate::commands::CommandError;
use crate::manifest::{Inventory, Objects};
use crate::output::{Output, or_dash, table};

/// Node name written into exact-mode ledger entries made by this simulation.
const GATE_NODE: &str = "policyctl";

/// What the gate decides for the waiting loads.
#[derive(Clone, Debug, Default)]
pub struct Admissions {
    /// `prepareQueueLength` as configured.
    pub prepare_queue_length: Option<i64>,
    /// Loads in preparation before any admission.
    pub in_preparation: u64,
    /// Whether the gate holds new loads right now (`count >= limit`).
    pub constrained: bool,
    /// Every waiting load in the gate's order (`Kind/namespace/name`), with
    /// `None` when admitted or the reason it is held.
    pub decisions: Vec<(String, Option<String>)>,
}

impl Admissions {
    /// Admitted loads, in admission order.
    pub fn admit(&self) -> Vec<&str> {
        self.decisions
            .iter()
            .filter(|(_, hold)| hold.is_none())
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// Held loads, in the gate's order.
    pub fn hold(&self) -> Vec<&str> {
        self.decisions
            .iter()
            .filter(|(_, hold)| hold.is_some())
            .map(|(name, _)| name.as_str())
            .collect()
    }
}

fn load_name(id: &LoadId) -> String {
    format!("{}/{}/{}", id.kind, id.namespace, id.name)
}

/// Every load of the input, as one gate standing for the whole cluster sees
/// it.
fn loads(inventory: &Inventory) -> Vec<Load> {
    fn all<K: LoadObject>(objects: &Objects<K>) -> impl Iterator<Item = Load> + '_ {
        objects
            .values()
            .map(|located| load(&located.object, GateScope::Everything))
    }
    all(&inventory.data_uploads)
        .chain(all(&inventory.data_downloads))
        .chain(all(&inventory.pod_volume_backups))
        .chain(all(&inventory.pod_volume_restores))
        .collect()
}

/// The exact-mode ledger of the input, if its ConfigMap is there.
fn ledger(inventory: &Inventory) -> Result<LedgerSnapshot, CommandError> {
    let found = inventory
        .config_maps
        .iter()
        .find(|(key, _)| key.name == DEFAULT_LEDGER_NAME);
    match found {
        None => Ok(LedgerSnapshot::absent()),
        Some((key, located)) => {
            let ledger =
                Ledger::from_config_map_data(located.object.data.as_ref()).map_err(|error| {
                    CommandError::Input(format!(
                        "ConfigMap {key} ({}): not a prepare-queue ledger: {error}",
                        located.origin
                    ))
                })?;
            Ok(LedgerSnapshot {
                resource_version: located.object.metadata.resource_version.clone(),
                ledger,
            })
        }
    }
}

/// Runs the gate over the input.
pub fn admissions(
    config: &NodeAgentConfig,
    inventory: &Inventory,
    mode: SootheMode,
) -> Result<Admissions, CommandError> {
    let mode = match mode {
        SootheMode::Optimistic => Mode::Optimistic,
        SootheMode::Exact => Mode::Exact,
    };
    let prepare_queue_length = config
        .load_concurrency
        .as_ref()
        .and_then(|c| c.prepare_queue_length);
    let gate = GateConfig::new(prepare_queue_length, mode);
    let loads = loads(inventory);
    // Ledger entries are stamped with the newest creation time of the input,
    // so the output never depends on the clock.
    let now = loads
        .iter()
        .map(|l| l.created)
        .max()
        .unwrap_or(Timestamp::UNIX_EPOCH);
    let mut cache = CountCache::new(RecountPolicy::for_mode(mode));
    cache.resync(loads);
    let in_preparation = cache.counts().total();
    let constrained = match gate.enablement {
        Enablement::Enabled(limit) => in_preparation >= limit.get(),
        Enablement::Disabled(_) => false,
    };
    let snapshot = if mode == Mode::Exact {
        ledger(inventory)?
    } else {
        LedgerSnapshot::absent()
    };
    let mut result = Admissions {
        prepare_queue_length,
        in_preparation,
        constrained,
        ..Admissions::default()
    };
    let exact = (mode == Mode::Exact).then_some(ExactInput::Read(ExactView {
        ledger: &snapshot,
        node: GATE_NODE,
    }));
    // The controller's own pass: the same accepts, holds and reasons.
    let plan = plan_pass(&gate, &cache, exact, now);
    let accepted: BTreeSet<&LoadId> = plan.accepts.iter().collect();
    let held: BTreeMap<&LoadId, String> = plan.holds.iter().map(|h| (&h.load, h.note())).collect();
    for key in cache.waiting() {
        let id = key.id();
        if accepted.contains(&id) {
            result.decisions.push((load_name(&id), None));
        } else if let Some(note) = held.get(&id) {
            result.decisions.push((load_name(&id), Some(note.clone())));
        }
    }
    Ok(result)
}

/// The JSON document and table of the admissions.
pub fn render(result: &Admissions, mode: SootheMode) -> Output {
    let document = json!({
        "prepareQueueLength": result.prepare_queue_length,
        "inPreparation": result.in_preparation,
        "constrained": result.constrained,
        "admit": result.admit(),
        "hold": result.hold(),
    });
    let mode_name = match mode {
        SootheMode::Optimistic => "optimistic",
        SootheMode::Exact => "exact",
    };
    let mut text = format!(
        "Mode {mode_name}: prepareQueueLength {}, {} load(s) in preparation{}; {} admitted, {} held\n\n",
        or_dash(result.prepare_queue_length),
        result.in_preparation,
        if result.constrained {
            " (constrained)"
        } else {
            ""
        },
        result.admit().len(),
        result.hold().len()
    );
    if result.decisions.is_empty() {
        text.push_str("No load is waiting for admission.\n");
    } else {
        text.push_str(&table(
            &["order", "load", "decision", "why"],
            result
                .decisions
                .iter()
                .enumerate()
                .map(|(i, (name, hold))| {
                    [
                        (i + 1).to_string(),
                        name.clone(),
                        if hold.is_some() { "hold" } else { "admit" }.to_owned(),
                        hold.clone().unwrap_or_default(),
                    ]
                }),
        ));
    }
    Output {
        document,
        table: text,
    }
}

/// Runs the command.
pub fn run(
    config: &NodeAgentConfig,
    inventory: &Inventory,
    mode: SootheMode,
    stderr: &mut dyn Write,
) -> Result<Output, CommandError> {
    let result = admissions(config, inventory, mode)?;
    if result.prepare_queue_length.is_none_or(|n| n <= 0) {
        let _ = writeln!(
            stderr,
            "note: loadConcurrency.prepareQueueLength is absent or not positive: the gate is disabled and admits every load (L3.8)"
        );
    }
    Ok(render(&result, mode))
}
