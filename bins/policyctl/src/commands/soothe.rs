//! `soothe [--mode optimistic|exact] [--datamover NAME]...`: which `New`
//! loads (DataUpload, DataDownload, PodVolumeBackup, PodVolumeRestore) one
//! prepare-queue gate would admit now, in admission order (L3.8–L3.14;
//! `load-soothe`).
//!
//! The gate is the gate of the data movers it serves, standing for the whole
//! cluster. Without `--datamover` it is Velero's node-agent gate: Velero's
//! built-in data mover (DataUploads and DataDownloads whose `spec.datamover`
//! is empty or `velero`) and every PodVolumeBackup and PodVolumeRestore.
//! With `--datamover NAME` (repeatable) it is the gate
//! `load-soothe-controller --datamover NAME` runs: DataUploads and
//! DataDownloads of those third-party data movers only. Waiting loads of
//! other data movers are listed as not gated here and never admitted; every
//! load in preparation counts towards the limit, whoever serves it.
//!
//! The loads in preparation (label `velero.io/expose-on-going=true`, or
//! phase `Accepted`/`Prepared`) fill the `prepareQueueLength` slots, and the
//! waiting loads are decided in one pass of the gate,
//! `load_soothe::plan_pass` — the same function the `load-soothe-controller`
//! calls — in first-in first-out order: the free slots go to the first
//! waiting loads, every later one is held, with the same reason the
//! controller's `PrepareQueueHold` Event gives. In exact mode the ledger
//! ConfigMap (`velero-prepare-queue-ledger`) is read from the input when
//! present, else the ledger starts empty. With the gate disabled
//! (`prepareQueueLength` absent or ≤ 0, L3.8) every waiting load it serves
//! is admitted.
//!
//! Then the same backlog drains over time (`load_soothe::simulate_backlog`),
//! step by step (a load prepares for one step; the input gives no
//! durations), through Velero's gate — every node-agent of the input (the
//! Nodes with a running node-agent pod, or every Node when the input has no
//! node-agent pod) deciding on its own stale count, one load per kind per
//! step — and through the exact gate: per step, the loads in preparation
//! against the limit (the JSON's `backlog`, the table's last lines).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use affinity_translate::NodeAgentConfig;
use jiff::Timestamp;
use kube_adapters::velero::{GateScope, LoadObject, load};
use load_soothe::{
    BacklogGate, BacklogInput, BacklogRun, CountCache, Enablement, ExactInput, ExactView,
    GateConfig, LedgerSnapshot, Load, LoadId, LoadKind, Mode, RecountPolicy, plan_pass,
    simulate_backlog,
};
use load_soothe::{DEFAULT_LEDGER_NAME, Ledger};
use serde_json::json;
use velero_api::{BUILT_IN_DATA_MOVER, is_built_in_data_mover};

use crate::cli::SootheMode;
use crate::commands::CommandError;
use crate::manifest::{Inventory, Objects};
use crate::output::{Output, fitted_table, or_dash};

/// Node name written into exact-mode ledger entries made by this simulation.
const GATE_NODE: &str = "policyctl";

/// The data movers a gate serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataMovers {
    /// Velero's node-agent gate: the built-in data mover (`spec.datamover`
    /// empty or `velero`) and the pod-volume loads.
    BuiltIn,
    /// `load-soothe-controller --datamover NAME...`: DataUploads and
    /// DataDownloads of these third-party data movers only.
    ThirdParty(BTreeSet<String>),
}

impl DataMovers {
    /// The scope of `--datamover` values (none: Velero's built-in).
    pub fn from_args(names: &[String]) -> Self {
        if names.is_empty() {
            Self::BuiltIn
        } else {
            Self::ThirdParty(names.iter().cloned().collect())
        }
    }

    /// The names, for output: `velero` for the built-in gate.
    pub fn names(&self) -> Vec<String> {
        match self {
            Self::BuiltIn => vec![BUILT_IN_DATA_MOVER.to_owned()],
            Self::ThirdParty(names) => names.iter().cloned().collect(),
        }
    }

    /// One line for table headers.
    pub fn describe(&self) -> String {
        match self {
            Self::BuiltIn => {
                "Velero's built-in data mover and pod-volume loads (no --datamover)".to_owned()
            }
            Self::ThirdParty(names) => format!(
                "--datamover {}",
                names.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        }
    }

    /// The gate's view of a load object: [`load`] with `handled_here` set
    /// when this gate serves the load.
    fn load<K: LoadObject>(&self, object: &K) -> Load {
        match self {
            Self::BuiltIn => {
                let built_in: BTreeSet<String> = [BUILT_IN_DATA_MOVER.to_owned()].into();
                let mut load = load(object, GateScope::DataMovers(&built_in));
                if matches!(
                    K::KIND,
                    LoadKind::PodVolumeBackup | LoadKind::PodVolumeRestore
                ) {
                    // Velero's node-agent gates its pod-volume loads too.
                    load.handled_here = true;
                }
                load
            }
            Self::ThirdParty(names) => load(object, GateScope::DataMovers(names)),
        }
    }
}

/// What the gate decides for the waiting loads.
#[derive(Clone, Debug, Default)]
pub struct Admissions {
    /// `prepareQueueLength` as configured.
    pub prepare_queue_length: Option<i64>,
    /// Loads in preparation before any admission.
    pub in_preparation: u64,
    /// Whether the gate holds new loads right now (`count >= limit`).
    pub constrained: bool,
    /// Every waiting load the gate serves, in the gate's order
    /// (`Kind/namespace/name`), with `None` when admitted or the reason it
    /// is held.
    pub decisions: Vec<(String, Option<String>)>,
    /// Waiting loads of data movers this gate does not serve
    /// (`Kind/namespace/name`), with who gates them instead.
    pub not_gated_here: Vec<(String, String)>,
    /// The backlog of the waiting loads drained step by step through
    /// Velero's gate and the exact gate (`None` with the gate disabled).
    pub backlog: Option<Backlog>,
}

/// The waiting loads drained over time through both gates.
#[derive(Clone, Debug)]
pub struct Backlog {
    /// The node-agents deciding in Velero's gate.
    pub node_agents: u32,
    /// Whether they are the Nodes with a running node-agent pod (else every
    /// Node: the input has no node-agent pod).
    pub node_agents_checked: bool,
    /// `prepareQueueLength`.
    pub limit: u64,
    /// Through Velero's gate.
    pub velero: BacklogRun,
    /// Through the exact gate.
    pub exact: BacklogRun,
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

/// Every load of the input, as one gate serving `movers` for the whole
/// cluster sees it, with each load's `spec.datamover`.
fn loads(inventory: &Inventory, movers: &DataMovers) -> Vec<(Load, Option<String>)> {
    fn all<'a, K: LoadObject>(
        objects: &'a Objects<K>,
        movers: &'a DataMovers,
    ) -> impl Iterator<Item = (Load, Option<String>)> + 'a {
        objects.values().map(move |located| {
            (
                movers.load(&located.object),
                located.object.data_mover().map(str::to_owned),
            )
        })
    }
    all(&inventory.data_uploads, movers)
        .chain(all(&inventory.data_downloads, movers))
        .chain(all(&inventory.pod_volume_backups, movers))
        .chain(all(&inventory.pod_volume_restores, movers))
        .collect()
}

/// Who gates a load this gate does not serve.
fn gated_by(kind: LoadKind, data_mover: Option<&str>) -> String {
    match (kind, data_mover) {
        (LoadKind::PodVolumeBackup | LoadKind::PodVolumeRestore, _) => {
            "pod-volume load: gated by Velero's node-agent (soothe without --datamover)".to_owned()
        }
        (_, mover) if is_built_in_data_mover(mover) => {
            "Velero's built-in data mover: gated by Velero's node-agent (soothe without --datamover)"
                .to_owned()
        }
        (_, mover) => {
            let name = mover.unwrap_or_default();
            format!(
                "data mover {name}: gated by load-soothe-controller --datamover {name} (soothe --datamover {name})"
            )
        }
    }
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

/// Runs the gate serving `movers` over the input.
pub fn admissions(
    config: &NodeAgentConfig,
    inventory: &Inventory,
    mode: SootheMode,
    movers: &DataMovers,
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
    let with_movers = loads(inventory, movers);
    // Ledger entries are stamped with the newest creation time of the input,
    // so the output never depends on the clock.
    let now = with_movers
        .iter()
        .map(|(l, _)| l.created)
        .max()
        .unwrap_or(Timestamp::UNIX_EPOCH);
    let mut not_gated_here: Vec<(&Load, String)> = with_movers
        .iter()
        .filter(|(l, _)| l.is_waiting() && !l.handled_here)
        .map(|(l, mover)| (l, gated_by(l.id.kind, mover.as_deref())))
        .collect();
    not_gated_here.sort_by(|(a, _), (b, _)| (a.created, &a.id).cmp(&(b.created, &b.id)));
    let not_gated_here = not_gated_here
        .into_iter()
        .map(|(l, why)| (load_name(&l.id), why))
        .collect();
    let mut cache = CountCache::new(RecountPolicy::for_mode(mode));
    cache.resync(with_movers.into_iter().map(|(l, _)| l));
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
        not_gated_here,
        ..Admissions::default()
    };
    if let Enablement::Enabled(limit) = gate.enablement {
        let (agents, checked) = crate::commands::diagnose::node_agent_nodes_or_all(inventory, None);
        let input = BacklogInput {
            limit,
            in_preparation,
            waiting: cache.waiting().map(|key| key.kind).collect(),
            node_agents: u32::try_from(agents.len()).unwrap_or(u32::MAX),
        };
        result.backlog = Some(Backlog {
            node_agents: input.node_agents.max(1),
            node_agents_checked: checked,
            limit: limit.get(),
            velero: simulate_backlog(&input, BacklogGate::Velero),
            exact: simulate_backlog(&input, BacklogGate::Exact),
        });
    }
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
pub fn render(result: &Admissions, mode: SootheMode, movers: &DataMovers) -> Output {
    let document = json!({
        "prepareQueueLength": result.prepare_queue_length,
        "inPreparation": result.in_preparation,
        "constrained": result.constrained,
        "dataMovers": movers.names(),
        "admit": result.admit(),
        "hold": result.hold(),
        "notGatedHere": result.not_gated_here.iter().map(|(name, _)| name).collect::<Vec<_>>(),
        "backlog": result.backlog.as_ref().map(backlog_document),
    });
    let mode_name = match mode {
        SootheMode::Optimistic => "optimistic",
        SootheMode::Exact => "exact",
    };
    let mut text = format!(
        "Mode {mode_name}, gating {}:\nprepareQueueLength {}, {} load(s) in preparation{}; {} admitted, {} held, {} not gated here\n\n",
        movers.describe(),
        or_dash(result.prepare_queue_length),
        result.in_preparation,
        if result.constrained {
            " (constrained)"
        } else {
            ""
        },
        result.admit().len(),
        result.hold().len(),
        result.not_gated_here.len()
    );
    if result.decisions.is_empty() && result.not_gated_here.is_empty() {
        text.push_str("No load is waiting for admission.\n");
    } else {
        let gated = result
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
            });
        let other = result.not_gated_here.iter().map(|(name, why)| {
            [
                "-".to_owned(),
                name.clone(),
                "not gated here".to_owned(),
                why.clone(),
            ]
        });
        text.push_str(&fitted_table(
            &["order", "load", "decision", "why"],
            gated.chain(other),
        ));
    }
    if let Some(backlog) = &result.backlog {
        text.push_str(&backlog_text(backlog));
    }
    Output {
        document,
        table: text,
    }
}

/// The JSON of one gate's drain.
fn run_document(run: &BacklogRun, limit: u64) -> serde_json::Value {
    let limit = load_soothe::Limit::new(limit);
    json!({
        "peak": run.peak(),
        "overshoot": limit.map_or(0, |l| run.overshoot(l)),
        "steps": run.steps.iter().map(|s| json!({
            "inPreparation": s.in_preparation,
            "admitted": s.admitted,
            "waiting": s.waiting,
        })).collect::<Vec<_>>(),
    })
}

/// The JSON of the backlog: the unit, the node-agents, and per gate the
/// peak, the overshoot and the steps.
fn backlog_document(backlog: &Backlog) -> serde_json::Value {
    json!({
        "unit": "step",
        "limit": backlog.limit,
        "nodeAgents": backlog.node_agents,
        "nodeAgentsFrom": if backlog.node_agents_checked { "nodes with a running node-agent pod" } else { "every Node (the input has no node-agent pod)" },
        "velero": run_document(&backlog.velero, backlog.limit),
        "exact": run_document(&backlog.exact, backlog.limit),
    })
}

/// The backlog in two lines.
fn backlog_text(backlog: &Backlog) -> String {
    let line = |name: &str, run: &BacklogRun| {
        format!(
            "  {name}: peak {} in preparation ({} above the limit) over {} step(s)\n",
            run.peak(),
            run.peak().saturating_sub(backlog.limit),
            run.steps.len()
        )
    };
    format!(
        "\nBacklog drained step by step (a load prepares for one step; in Velero's gate each of\n{} node-agent(s) decides one load per kind per step on its own count):\n{}{}",
        backlog.node_agents,
        line("Velero's gate", &backlog.velero),
        line("exact gate", &backlog.exact)
    )
}

/// Runs the command.
pub fn run(
    config: &NodeAgentConfig,
    inventory: &Inventory,
    mode: SootheMode,
    movers: &DataMovers,
    stderr: &mut dyn Write,
) -> Result<Output, CommandError> {
    let result = admissions(config, inventory, mode, movers)?;
    if result.prepare_queue_length.is_none_or(|n| n <= 0) {
        let _ = writeln!(
            stderr,
            "note: loadConcurrency.prepareQueueLength is absent or not positive: the gate is disabled and admits every load it serves (L3.8)"
        );
    }
    Ok(render(&result, mode, movers))
}
