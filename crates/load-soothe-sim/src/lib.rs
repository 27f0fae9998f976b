//! Deterministic discrete-event simulation of a cluster: N node-agents, each
//! with its own [`CountCache`] fed by a watch that lags the API server, M
//! loads of the four kinds, preparation and transfer times, a per-node
//! data-path cap (L3.6), and the gate in one of the three [`Mode`]s.
//!
//! Each node's gate decides in one of two [`GateStyle`]s: per load, as
//! Velero's node-agent reconcilers do (`decide`), or in passes over its whole
//! queue, as the `load-soothe-controller` does (`plan_pass`, the same
//! function `policyctl soothe` shows).
//!
//! The simulation drives `load-soothe`'s real cache, gate, pass and ledger
//! functions; only the API server and the clock are modelled. Randomness
//! comes from the workspace's [`SplitMix64`] seeded by the scenario, so a
//! scenario always gives the same report.
//!
//! A crate of its own (not published): the simulator is a tool for choosing
//! and checking the gate's modes (`docs/load-soothe.md`,
//! `docs/performance.md`), not part of the gate's API.
//!
//! Model (times in milliseconds):
//! - Loads are created at the server (`New`) at their arrival time. Kinds
//!   rotate DataUpload, DataDownload, PodVolumeBackup, PodVolumeRestore.
//!   DataUpload/DataDownload loads are reconciled by every node (all race to
//!   accept them; the data-mover pod lands on a random node);
//!   PodVolumeBackup/Restore loads only by their own (random) node.
//! - Every write at the server produces a watch event delivered to each node
//!   after a random latency in `watch_latency_ms`, in order per node.
//! - A node reconciles a load when its watch shows it `New`, and again 5 s
//!   after a hold (L3.13). In optimistic and exact modes a node also
//!   reconciles the head of its queue when a slot frees or the ledger admits
//!   a load it handles (Velero mode only polls).
//! - An admission sends the accept update, conditional on the load's
//!   resourceVersion; it reaches the server after `api_latency_ms` and fails
//!   (a conflict) if the load moved on. Exact mode first compare-and-swaps
//!   the ledger; on conflict the node GETs the ledger (one read) and decides
//!   again.
//! - An accepted load is in preparation for its preparation time, then waits
//!   as `Prepared` for a data-path slot on its node (FIFO, `per_node_concurrency`),
//!   then transfers (`InProgress`, out of preparation) and completes.
//!
//! Metrics: peak number of loads in preparation at the server, overshoot
//! (peak − limit, at least 0), API writes (accept updates and ledger writes,
//! conflicts included), API reads (live GETs; watch traffic is not counted),
//! gate evaluations, waiting time from creation to acceptance.

#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use jiff::Timestamp;

use load_soothe::CountCache;
use load_soothe::RecountPolicy;
use load_soothe::{Decision, WAKE_SPREAD, decide, wake_delay, wake_list};
use load_soothe::{ExactInput, HOLD_REQUEUE_AFTER, plan_pass};
use load_soothe::{ExactView, Ledger, LedgerSnapshot, LedgerWrite, plan_admissions};
use load_soothe::{GateConfig, Mode};
use load_soothe::{Load, LoadId, LoadKind, Phase};
use testkit::SplitMix64;

/// How each node's gate decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum GateStyle {
    /// Velero's node-agent: one reconcile per load ([`decide`]), requeued
    /// every 5 s while held, one worker per kind.
    PerLoad,
    /// The `load-soothe-controller`: one [`plan_pass`] over the node's whole
    /// queue whenever its view changed (changes arriving while a pass or its
    /// writes are under way make one pass after them), and again 5 s after a
    /// pass that held loads. One worker per node; the pass's writes are
    /// awaited before the next pass, and each successful accept goes into the
    /// node's view at once (the patch response). A conflicting accept reads
    /// the load again (one GET).
    Pass,
}

impl GateStyle {
    /// The label in the report table.
    pub fn label(self) -> &'static str {
        match self {
            GateStyle::PerLoad => "per load",
            GateStyle::Pass => "pass",
        }
    }
}

/// When loads arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// All loads created back to back, `gap_ms` apart, from t = 0.
    Burst {
        /// Gap between two creations.
        gap_ms: u64,
    },
    /// One load every `every_ms`.
    Steady {
        /// Interval between creations.
        every_ms: u64,
    },
}

/// One simulated cluster and workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// Name in the report.
    pub name: String,
    /// Number of node-agents.
    pub nodes: u32,
    /// Number of loads.
    pub loads: u32,
    /// `prepareQueueLength`.
    pub limit: u64,
    /// Arrival pattern.
    pub arrival: Arrival,
    /// Preparation time range (Accepted → pod running).
    pub prep_ms: (u64, u64),
    /// Transfer time range (InProgress → Completed).
    pub transfer_ms: (u64, u64),
    /// Watch delivery latency range, per node and event.
    pub watch_latency_ms: (u64, u64),
    /// One-way latency of a write or read to the API server.
    pub api_latency_ms: u64,
    /// Data-path cap per node (L3.5).
    pub per_node_concurrency: u32,
    /// Time a gate evaluation occupies a controller worker. Each node runs
    /// one worker per kind (controller-runtime's default of one concurrent
    /// reconcile per controller); a write additionally occupies the worker
    /// for one API round trip.
    pub eval_ms: u64,
    /// Seed of the generator.
    pub seed: u64,
}

impl Scenario {
    /// The scenario with default timings: preparation 10–30 s, transfer
    /// 20–60 s, watch latency 10–200 ms, API latency 5 ms (one way), 1 ms per
    /// gate evaluation, 2 data paths per node.
    pub fn new(name: &str, nodes: u32, loads: u32, limit: u64, arrival: Arrival) -> Scenario {
        Scenario {
            name: name.to_owned(),
            nodes,
            loads,
            limit,
            arrival,
            prep_ms: (10_000, 30_000),
            transfer_ms: (20_000, 60_000),
            watch_latency_ms: (10, 200),
            api_latency_ms: 5,
            per_node_concurrency: 2,
            eval_ms: 1,
            seed: 0x5eed_0001 ^ (u64::from(nodes) << 20) ^ u64::from(loads),
        }
    }
}

/// Gate counts of the standard scenarios: one node; two (the exact-mode
/// controller's 2-replica Deployment); 10 and 100 (node-agents, or the
/// optimistic controller's DaemonSet).
pub const STANDARD_NODES: [u32; 4] = [1, 2, 10, 100];

/// The scenarios of docs/performance.md: [`STANDARD_NODES`] with steady
/// arrivals (200 loads, one every 0.5 s) and a burst of 1,000 loads;
/// `prepareQueueLength` 20.
pub fn standard_scenarios() -> Vec<Scenario> {
    let mut out = Vec::new();
    for nodes in STANDARD_NODES {
        out.push(Scenario::new(
            &format!("steady {nodes}n"),
            nodes,
            200,
            20,
            Arrival::Steady { every_ms: 500 },
        ));
    }
    for nodes in STANDARD_NODES {
        out.push(Scenario::new(
            &format!("burst {nodes}n"),
            nodes,
            1000,
            20,
            Arrival::Burst { gap_ms: 1 },
        ));
    }
    out
}

/// The measured outcome of one run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// Scenario name.
    pub scenario: String,
    /// Mode.
    pub mode: Mode,
    /// How the gates decide.
    pub style: GateStyle,
    /// Nodes.
    pub nodes: u32,
    /// Loads created.
    pub loads: u32,
    /// `prepareQueueLength`.
    pub limit: u64,
    /// Loads accepted.
    pub admitted: u64,
    /// Loads completed.
    pub completed: u64,
    /// Highest number of loads in preparation at the server.
    pub peak_in_preparation: u64,
    /// `peak − limit`, at least 0.
    pub overshoot: u64,
    /// Accept updates and ledger writes, conflicts included.
    pub api_writes: u64,
    /// Writes rejected with a conflict.
    pub conflicts: u64,
    /// Live reads (ledger GETs after a conflict).
    pub api_reads: u64,
    /// Gate evaluations on all nodes.
    pub reconciles: u64,
    /// Mean wait from creation to acceptance, in milliseconds.
    pub mean_wait_ms: u64,
    /// Longest wait from creation to acceptance, in milliseconds.
    pub max_wait_ms: u64,
    /// Time when the last load completed, in milliseconds.
    pub makespan_ms: u64,
    /// Loads accepted while not listed in the ledger (exact mode; must be 0).
    pub accepted_outside_ledger: u64,
}

impl Report {
    /// API writes per admitted load, in thousandths.
    pub fn writes_per_admitted_milli(&self) -> u64 {
        (self.api_writes * 1000)
            .checked_div(self.admitted)
            .unwrap_or(0)
    }

    /// API reads per admitted load, in thousandths.
    pub fn reads_per_admitted_milli(&self) -> u64 {
        (self.api_reads * 1000)
            .checked_div(self.admitted)
            .unwrap_or(0)
    }

    /// Gate evaluations per admitted load, in tenths.
    pub fn reconciles_per_admitted_tenths(&self) -> u64 {
        (self.reconciles * 10)
            .checked_div(self.admitted)
            .unwrap_or(0)
    }
}

fn milli(v: u64) -> String {
    format!("{}.{:03}", v / 1000, v % 1000)
}

fn tenths(v: u64) -> String {
    format!("{}.{}", v / 10, v % 10)
}

fn secs(ms: u64) -> String {
    format!("{}.{}", ms / 1000, (ms % 1000) / 100)
}

/// The reports as a Markdown table.
pub fn table(reports: &[Report]) -> String {
    let mut s = String::new();
    s.push_str("| scenario | mode | gate | nodes | loads | limit | peak | overshoot | writes/admitted | conflicts | reads/admitted | evaluations/admitted | mean wait s | max wait s | makespan s |\n");
    s.push_str("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for r in reports {
        let _ = writeln!(
            s,
            "| {} | {:?} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.scenario,
            r.mode,
            r.style.label(),
            r.nodes,
            r.loads,
            r.limit,
            r.peak_in_preparation,
            r.overshoot,
            milli(r.writes_per_admitted_milli()),
            r.conflicts,
            milli(r.reads_per_admitted_milli()),
            tenths(r.reconciles_per_admitted_tenths()),
            secs(r.mean_wait_ms),
            secs(r.max_wait_ms),
            secs(r.makespan_ms),
        );
    }
    s
}

/// The runs of a scenario in the report: every mode decided per load
/// (Velero's node-agent, with the gate's modes), then the controller's
/// passes in its two modes.
pub const RUNS: [(Mode, GateStyle); 5] = [
    (Mode::Velero, GateStyle::PerLoad),
    (Mode::Optimistic, GateStyle::PerLoad),
    (Mode::Exact, GateStyle::PerLoad),
    (Mode::Optimistic, GateStyle::Pass),
    (Mode::Exact, GateStyle::Pass),
];

/// Runs every scenario in every combination of [`RUNS`].
pub fn run_all(scenarios: &[Scenario]) -> Vec<Report> {
    let mut out = Vec::new();
    for s in scenarios {
        for (mode, style) in RUNS {
            out.push(run_with(s, mode, style));
        }
    }
    out
}

#[derive(Clone, Debug)]
enum Ev {
    Create(usize),
    DeliverLoad {
        node: usize,
        load: Load,
    },
    DeliverLedger {
        node: usize,
        rv: u64,
        ledger: Ledger,
    },
    Reconcile {
        node: usize,
        idx: usize,
    },
    Accept {
        idx: usize,
        rv: String,
        /// Pass style: the node awaiting the response.
        reply_to: Option<usize>,
    },
    AcceptReply {
        node: usize,
        /// The load as the response (or, after a conflict, the GET) shows it.
        load: Load,
    },
    Pass {
        node: usize,
    },
    LedgerCas {
        node: usize,
        idx: usize,
        write: LedgerWrite,
    },
    LedgerCasOk {
        node: usize,
        idx: usize,
        rv: u64,
        ledger: Ledger,
    },
    LedgerGetReply {
        node: usize,
        idx: usize,
        rv: u64,
        ledger: Ledger,
    },
    PrepDone(usize),
    Complete(usize),
}

struct ServerLoad {
    id: LoadId,
    created_ms: u64,
    phase: Phase,
    label: bool,
    rv: u64,
    handler: Option<usize>,
    exec_node: usize,
    accepted_ms: Option<u64>,
}

struct NodeState {
    name: String,
    busy_until: [u64; 4],
    cache: CountCache,
    ledger: LedgerSnapshot,
    ledger_rv: u64,
    last_delivery: u64,
    pending: BTreeMap<usize, u64>,
    /// Pass style: when the next pass is due.
    pass_at: Option<u64>,
    /// Pass style: the worker is evaluating or awaiting writes until then.
    pass_busy_until: u64,
    /// Pass style: accepts waiting for the pass's ledger write.
    pass_accepts: Vec<LoadId>,
    /// Pass style: responses the executor still awaits; no pass runs
    /// before they are in.
    awaiting: u32,
    /// Pass style: a pass came due while responses were awaited.
    pass_deferred: bool,
}

struct Sim<'a> {
    s: &'a Scenario,
    mode: Mode,
    style: GateStyle,
    config: GateConfig,
    rng: SplitMix64,
    queue: BTreeMap<(u64, u64), Ev>,
    seq: u64,
    now: u64,
    loads: Vec<ServerLoad>,
    nodes: Vec<NodeState>,
    ledger: Option<(u64, Ledger)>,
    global_rv: u64,
    in_prep: u64,
    running: Vec<u32>,
    prepared_queue: Vec<std::collections::VecDeque<usize>>,
    report: Report,
    waits: u64,
}

/// Epoch of the simulated clock (creation timestamps are this plus the
/// simulated time).
fn epoch() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH)
}

fn ts(ms: u64) -> Timestamp {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    epoch()
        .checked_add(jiff::SignedDuration::from_millis(ms))
        .unwrap_or(epoch())
}

/// `idx` of a ledger write not made for one particular load.
const NO_LOAD: usize = usize::MAX;

/// Simulated time limit: a run stops after 7 simulated days.
const TIME_CAP_MS: u64 = 7 * 24 * 3600 * 1000;

/// `idx` of the ledger write of a pass (pass style).
const PASS: usize = usize::MAX - 1;

/// Runs one scenario in one mode, deciding per load as Velero's node-agent
/// does.
pub fn run(s: &Scenario, mode: Mode) -> Report {
    run_with(s, mode, GateStyle::PerLoad)
}

/// Runs one scenario in one mode with gates deciding in `style`.
pub fn run_with(s: &Scenario, mode: Mode, style: GateStyle) -> Report {
    let mut sim = Sim::new(s, mode, style);
    sim.run();
    sim.finish()
}

impl<'a> Sim<'a> {
    fn new(s: &'a Scenario, mode: Mode, style: GateStyle) -> Self {
        let nodes = s.nodes.max(1) as usize;
        let mut rng = SplitMix64::new(s.seed);
        let kinds = LoadKind::ALL;
        let loads = (0..s.loads as usize)
            .map(|i| {
                let kind = kinds[i % 4];
                let created_ms = match s.arrival {
                    Arrival::Burst { gap_ms } => i as u64 * gap_ms,
                    Arrival::Steady { every_ms } => i as u64 * every_ms,
                };
                let node = rng.range(0, nodes as u64 - 1) as usize;
                let handler = match kind {
                    LoadKind::DataUpload | LoadKind::DataDownload => None,
                    LoadKind::PodVolumeBackup | LoadKind::PodVolumeRestore => Some(node),
                };
                ServerLoad {
                    id: LoadId::new(
                        kind,
                        "velero",
                        format!("load-{i:05}"),
                        format!("uid-{i:05}"),
                    ),
                    created_ms,
                    phase: Phase::New,
                    label: false,
                    rv: 0,
                    handler,
                    exec_node: node,
                    accepted_ms: None,
                }
            })
            .collect();
        let policy = RecountPolicy::for_mode(mode);
        let node_states = (0..nodes)
            .map(|n| NodeState {
                name: format!("node-{n}"),
                busy_until: [0; 4],
                cache: CountCache::new(policy),
                ledger: LedgerSnapshot::absent(),
                ledger_rv: 0,
                last_delivery: 0,
                pending: BTreeMap::new(),
                pass_at: None,
                pass_busy_until: 0,
                pass_accepts: Vec::new(),
                awaiting: 0,
                pass_deferred: false,
            })
            .collect();
        let config = GateConfig::new(i64::try_from(s.limit).ok(), mode);
        Sim {
            s,
            mode,
            style,
            config,
            rng,
            queue: BTreeMap::new(),
            seq: 0,
            now: 0,
            loads,
            nodes: node_states,
            ledger: None,
            global_rv: 0,
            in_prep: 0,
            running: vec![0; nodes],
            prepared_queue: vec![std::collections::VecDeque::new(); nodes],
            report: Report {
                scenario: s.name.clone(),
                mode,
                style,
                nodes: s.nodes,
                loads: s.loads,
                limit: s.limit,
                admitted: 0,
                completed: 0,
                peak_in_preparation: 0,
                overshoot: 0,
                api_writes: 0,
                conflicts: 0,
                api_reads: 0,
                reconciles: 0,
                mean_wait_ms: 0,
                max_wait_ms: 0,
                makespan_ms: 0,
                accepted_outside_ledger: 0,
            },
            waits: 0,
        }
    }

    fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.queue.insert((at, self.seq), ev);
    }

    fn run(&mut self) {
        for i in 0..self.loads.len() {
            let at = self.loads[i].created_ms;
            self.push(at, Ev::Create(i));
        }
        while let Some(((at, _), ev)) = self.queue.pop_first() {
            if at > TIME_CAP_MS {
                break;
            }
            self.now = at;
            self.step(ev);
            if self.report.completed == u64::from(self.s.loads) {
                break;
            }
        }
    }

    fn finish(mut self) -> Report {
        self.report.overshoot = self.report.peak_in_preparation.saturating_sub(self.s.limit);
        self.report.mean_wait_ms = self.waits.checked_div(self.report.admitted).unwrap_or(0);
        self.report
    }

    fn load_view(&self, idx: usize, node: usize) -> Load {
        let l = &self.loads[idx];
        Load {
            id: l.id.clone(),
            phase: l.phase,
            expose_on_going: l.label,
            cancel_requested: false,
            created: ts(l.created_ms - l.created_ms % 1000),
            resource_version: Some(l.rv.to_string()),
            handled_here: l.handler.is_none_or(|h| h == node),
        }
    }

    fn broadcast_load(&mut self, idx: usize) {
        for node in 0..self.nodes.len() {
            let lat = self
                .rng
                .range(self.s.watch_latency_ms.0, self.s.watch_latency_ms.1);
            let at = (self.now + lat).max(self.nodes[node].last_delivery);
            self.nodes[node].last_delivery = at;
            let load = self.load_view(idx, node);
            self.push(at, Ev::DeliverLoad { node, load });
        }
    }

    fn broadcast_ledger(&mut self) {
        let Some((rv, ledger)) = self.ledger.clone() else {
            return;
        };
        for node in 0..self.nodes.len() {
            let lat = self
                .rng
                .range(self.s.watch_latency_ms.0, self.s.watch_latency_ms.1);
            let at = (self.now + lat).max(self.nodes[node].last_delivery);
            self.nodes[node].last_delivery = at;
            self.push(
                at,
                Ev::DeliverLedger {
                    node,
                    rv,
                    ledger: ledger.clone(),
                },
            );
        }
    }

    fn bump(&mut self, idx: usize) {
        self.global_rv += 1;
        self.loads[idx].rv = self.global_rv;
    }

    fn set_in_prep(&mut self, idx: usize, phase: Phase, label: bool) {
        let was = load_soothe::in_preparation(self.loads[idx].phase, self.loads[idx].label);
        self.loads[idx].phase = phase;
        self.loads[idx].label = label;
        let is = load_soothe::in_preparation(phase, label);
        if is && !was {
            self.in_prep += 1;
            self.report.peak_in_preparation = self.report.peak_in_preparation.max(self.in_prep);
        } else if was && !is {
            self.in_prep -= 1;
        }
        self.bump(idx);
        self.broadcast_load(idx);
    }

    fn schedule_reconcile(&mut self, node: usize, idx: usize, at: u64) {
        let pending = &mut self.nodes[node].pending;
        if pending.get(&idx).is_some_and(|t| *t <= at) {
            return;
        }
        pending.insert(idx, at);
        self.push(at, Ev::Reconcile { node, idx });
    }

    fn idx_of(id: &LoadId) -> usize {
        id.name
            .strip_prefix("load-")
            .and_then(|n| n.parse().ok())
            .unwrap_or(usize::MAX)
    }

    fn wake(&mut self, node: usize) {
        // Velero only polls; in exact mode the node that frees a slot takes
        // it (`plan_admissions`), the others poll.
        if self.mode != Mode::Optimistic {
            return;
        }
        let n = &mut self.nodes[node];
        let ledger = (self.mode == Mode::Exact).then_some(&n.ledger);
        let name = n.name.clone();
        for id in wake_list(&self.config, &mut n.cache, ledger) {
            let idx = Self::idx_of(&id);
            let delay = u64::try_from(wake_delay(&name, &id, WAKE_SPREAD).as_millis()).unwrap_or(0);
            if idx < self.loads.len() {
                self.schedule_reconcile(node, idx, self.now + delay);
            }
        }
    }

    fn step(&mut self, ev: Ev) {
        match ev {
            Ev::Create(idx) => {
                self.bump(idx);
                self.broadcast_load(idx);
            }
            Ev::DeliverLoad { node, load } => {
                let idx = Self::idx_of(&load.id);
                let queued = load.is_queued_here();
                let applied = self.nodes[node].cache.apply(load);
                if self.style == GateStyle::Pass {
                    self.request_pass(node, self.now);
                    return;
                }
                if queued {
                    self.schedule_reconcile(node, idx, self.now);
                }
                if applied.slot_freed {
                    self.wake(node);
                }
            }
            Ev::DeliverLedger { node, rv, ledger } => {
                self.observe_ledger(node, rv, ledger);
                if self.style == GateStyle::Pass {
                    self.request_pass(node, self.now);
                } else {
                    self.wake(node);
                }
            }
            Ev::Reconcile { node, idx } => {
                if self.nodes[node].pending.get(&idx) != Some(&self.now) {
                    return;
                }
                let worker = idx % 4;
                let busy = self.nodes[node].busy_until[worker];
                if busy > self.now {
                    self.nodes[node].pending.insert(idx, busy);
                    self.push(busy, Ev::Reconcile { node, idx });
                    return;
                }
                self.nodes[node].pending.remove(&idx);
                self.nodes[node].busy_until[worker] = self.now + self.s.eval_ms;
                self.reconcile(node, idx);
            }
            Ev::Pass { node } => {
                if self.nodes[node].pass_at != Some(self.now) {
                    return;
                }
                let busy = self.nodes[node].pass_busy_until;
                if busy > self.now {
                    self.nodes[node].pass_at = Some(busy);
                    self.push(busy, Ev::Pass { node });
                    return;
                }
                self.nodes[node].pass_at = None;
                if self.nodes[node].awaiting > 0 {
                    self.nodes[node].pass_deferred = true;
                    return;
                }
                self.pass(node);
            }
            Ev::AcceptReply { node, load } => {
                // Like the controller's index, never go back to an older
                // version than the watch already delivered.
                let rv = |l: &Load| {
                    l.resource_version
                        .as_deref()
                        .and_then(|v| v.parse::<u64>().ok())
                };
                let cache = &mut self.nodes[node].cache;
                if cache.get(&load.id).and_then(rv) < rv(&load) {
                    cache.apply(load);
                }
                self.response_in(node);
            }
            Ev::Accept { idx, rv, reply_to } => {
                let l = &self.loads[idx];
                let accepted = l.phase == Phase::New && l.rv.to_string() == rv;
                if accepted {
                    if self.mode == Mode::Exact
                        && !self
                            .ledger
                            .as_ref()
                            .is_some_and(|(_, led)| led.contains(&l.id))
                    {
                        self.report.accepted_outside_ledger += 1;
                    }
                    let created = l.created_ms;
                    self.loads[idx].accepted_ms = Some(self.now);
                    self.report.admitted += 1;
                    let wait = self.now - created;
                    self.waits += wait;
                    self.report.max_wait_ms = self.report.max_wait_ms.max(wait);
                    self.set_in_prep(idx, Phase::Accepted, true);
                    let prep = self.rng.range(self.s.prep_ms.0, self.s.prep_ms.1);
                    self.push(self.now + prep, Ev::PrepDone(idx));
                } else {
                    self.report.conflicts += 1;
                }
                if let Some(node) = reply_to {
                    if !accepted {
                        // The controller reads the load again after a 409.
                        self.report.api_reads += 1;
                    }
                    let load = self.load_view(idx, node);
                    let at = self.now + self.s.api_latency_ms;
                    self.push(at, Ev::AcceptReply { node, load });
                }
            }
            Ev::LedgerCas { node, idx, write } => {
                let current = self.ledger.as_ref().map(|(rv, _)| rv.to_string());
                if current == write.expected_resource_version {
                    self.global_rv += 1;
                    let rv = self.global_rv;
                    self.ledger = Some((rv, write.ledger.clone()));
                    self.broadcast_ledger();
                    let at = self.now + self.s.api_latency_ms;
                    self.push(
                        at,
                        Ev::LedgerCasOk {
                            node,
                            idx,
                            rv,
                            ledger: write.ledger,
                        },
                    );
                } else {
                    self.report.conflicts += 1;
                    // The node learns of the conflict and GETs the ledger.
                    self.report.api_reads += 1;
                    let (rv, ledger) = self.ledger.clone().unwrap_or((0, Ledger::empty()));
                    let at = self.now + 3 * self.s.api_latency_ms;
                    self.occupy(node, idx, at);
                    self.push(
                        at,
                        Ev::LedgerGetReply {
                            node,
                            idx,
                            rv,
                            ledger,
                        },
                    );
                }
            }
            Ev::LedgerCasOk {
                node,
                idx,
                rv,
                ledger,
            } => {
                self.observe_ledger(node, rv, ledger.clone());
                if idx == PASS {
                    let accepts = std::mem::take(&mut self.nodes[node].pass_accepts);
                    self.send_pass_accepts(node, &accepts);
                    self.response_in(node);
                    return;
                }
                // Accept the load decided on, and wake the other admitted
                // loads this node handles.
                if idx != NO_LOAD {
                    self.send_accept(node, idx);
                }
                let mine: Vec<LoadId> = ledger
                    .admitted
                    .iter()
                    .filter(|e| e.admitted_by == self.nodes[node].name)
                    .map(|e| e.id.clone())
                    .collect();
                for id in mine {
                    let other = Self::idx_of(&id);
                    if other != idx
                        && other < self.loads.len()
                        && self.nodes[node]
                            .cache
                            .get(&id)
                            .is_some_and(Load::is_queued_here)
                    {
                        self.schedule_reconcile(node, other, self.now);
                    }
                }
            }
            Ev::LedgerGetReply {
                node,
                idx,
                rv,
                ledger,
            } => {
                self.observe_ledger(node, rv, ledger);
                if idx == PASS {
                    self.nodes[node].pass_accepts.clear();
                    self.response_in(node);
                    self.request_pass(node, self.now);
                } else if idx == NO_LOAD {
                    self.take_freed_slots(node);
                } else {
                    self.schedule_reconcile(node, idx, self.now);
                }
            }
            Ev::PrepDone(idx) => {
                self.set_in_prep(idx, Phase::Prepared, true);
                let node = self.loads[idx].exec_node;
                if self.running[node] < self.s.per_node_concurrency {
                    self.start_transfer(idx);
                } else {
                    self.prepared_queue[node].push_back(idx);
                }
            }
            Ev::Complete(idx) => {
                self.loads[idx].phase = Phase::Completed;
                self.bump(idx);
                self.broadcast_load(idx);
                self.report.completed += 1;
                self.report.makespan_ms = self.now;
                let node = self.loads[idx].exec_node;
                self.running[node] -= 1;
                if let Some(next) = self.prepared_queue[node].pop_front() {
                    self.start_transfer(next);
                }
            }
        }
    }

    fn start_transfer(&mut self, idx: usize) {
        let node = self.loads[idx].exec_node;
        self.running[node] += 1;
        self.set_in_prep(idx, Phase::InProgress, false);
        if self.mode == Mode::Exact && self.style == GateStyle::PerLoad {
            // The node writing InProgress applies its own update at once and
            // takes the freed slot.
            let own = self.load_view(idx, node);
            self.nodes[node].cache.apply(own);
            self.take_freed_slots(node);
        }
        let t = self.rng.range(self.s.transfer_ms.0, self.s.transfer_ms.1);
        self.push(self.now + t, Ev::Complete(idx));
    }

    fn observe_ledger(&mut self, node: usize, rv: u64, ledger: Ledger) {
        let n = &mut self.nodes[node];
        if rv > n.ledger_rv {
            n.ledger_rv = rv;
            n.ledger = LedgerSnapshot {
                resource_version: Some(rv.to_string()),
                ledger,
            };
        }
    }

    fn take_freed_slots(&mut self, node: usize) {
        let Some(limit) = self.config.enablement.limit() else {
            return;
        };
        let n = &self.nodes[node];
        let view = ExactView {
            ledger: &n.ledger,
            node: &n.name,
        };
        if let Some(write) = plan_admissions(limit, &n.cache, view, ts(self.now)) {
            self.report.api_writes += 1;
            self.push(
                self.now + self.s.api_latency_ms,
                Ev::LedgerCas {
                    node,
                    idx: NO_LOAD,
                    write,
                },
            );
        }
    }

    fn occupy(&mut self, node: usize, idx: usize, until: u64) {
        if idx == PASS {
            let b = &mut self.nodes[node].pass_busy_until;
            *b = (*b).max(until);
            return;
        }
        if idx == NO_LOAD {
            return;
        }
        let b = &mut self.nodes[node].busy_until[idx % 4];
        *b = (*b).max(until);
    }

    fn send_accept(&mut self, node: usize, idx: usize) {
        let Some(load) = self.nodes[node].cache.get(&self.loads[idx].id) else {
            return;
        };
        let rv = load.resource_version.clone().unwrap_or_default();
        self.report.api_writes += 1;
        self.occupy(node, idx, self.now + 2 * self.s.api_latency_ms);
        self.push(
            self.now + self.s.api_latency_ms,
            Ev::Accept {
                idx,
                rv,
                reply_to: None,
            },
        );
    }

    /// Pass style: one awaited response arrived; a pass deferred for the
    /// responses runs once the last is in.
    fn response_in(&mut self, node: usize) {
        let n = &mut self.nodes[node];
        n.awaiting = n.awaiting.saturating_sub(1);
        if n.awaiting == 0 && std::mem::take(&mut n.pass_deferred) {
            self.request_pass(node, self.now);
        }
    }

    /// Pass style: a pass at `at` or earlier (changes coalesce into one).
    fn request_pass(&mut self, node: usize, at: u64) {
        let n = &mut self.nodes[node];
        if n.pass_at.is_some_and(|t| t <= at) {
            return;
        }
        let at = at.max(n.pass_busy_until);
        n.pass_at = Some(at);
        self.push(at, Ev::Pass { node });
    }

    /// Pass style: one `plan_pass` over the node's view, carried out as the
    /// controller's executor does.
    fn pass(&mut self, node: usize) {
        self.report.reconciles += 1;
        self.occupy(node, PASS, self.now + self.s.eval_ms);
        let now = ts(self.now);
        let n = &self.nodes[node];
        let exact = ExactInput::Read(ExactView {
            ledger: &n.ledger,
            node: &n.name,
        });
        let plan = plan_pass(&self.config, &n.cache, Some(exact), now);
        if !plan.holds.is_empty() {
            let after = u64::try_from(HOLD_REQUEUE_AFTER.as_millis()).unwrap_or(u64::MAX);
            self.request_pass(node, self.now + after);
        }
        match plan.ledger_write {
            Some(write) => {
                self.report.api_writes += 1;
                self.nodes[node].awaiting += 1;
                self.nodes[node].pass_accepts = plan.accepts;
                self.occupy(node, PASS, self.now + 2 * self.s.api_latency_ms);
                self.push(
                    self.now + self.s.api_latency_ms,
                    Ev::LedgerCas {
                        node,
                        idx: PASS,
                        write,
                    },
                );
            }
            None => self.send_pass_accepts(node, &plan.accepts),
        }
    }

    /// Pass style: the accepts of a pass, sent together and awaited.
    fn send_pass_accepts(&mut self, node: usize, accepts: &[LoadId]) {
        for id in accepts {
            let idx = Self::idx_of(id);
            let Some(load) = self.nodes[node].cache.get(id) else {
                continue;
            };
            if idx >= self.loads.len() {
                continue;
            }
            let rv = load.resource_version.clone().unwrap_or_default();
            self.report.api_writes += 1;
            self.nodes[node].awaiting += 1;
            self.occupy(node, PASS, self.now + 2 * self.s.api_latency_ms);
            self.push(
                self.now + self.s.api_latency_ms,
                Ev::Accept {
                    idx,
                    rv,
                    reply_to: Some(node),
                },
            );
        }
    }

    fn reconcile(&mut self, node: usize, idx: usize) {
        let id = self.loads[idx].id.clone();
        let Some(load) = self.nodes[node].cache.get(&id).cloned() else {
            return;
        };
        if !load.is_queued_here() {
            return;
        }
        self.report.reconciles += 1;
        let now = ts(self.now);
        let n = &mut self.nodes[node];
        let exact = ExactView {
            ledger: &n.ledger,
            node: &n.name,
        };
        let decision = decide(&self.config, &mut n.cache, Some(exact), &load, now);
        match decision {
            Decision::NotGated(_) => {}
            Decision::Admit(_) => self.send_accept(node, idx),
            Decision::Hold(h) => {
                let after = u64::try_from(h.requeue_after.as_millis()).unwrap_or(u64::MAX);
                self.schedule_reconcile(node, idx, self.now + after);
            }
            Decision::WriteLedger(write) => {
                self.report.api_writes += 1;
                self.occupy(node, idx, self.now + 2 * self.s.api_latency_ms);
                self.push(
                    self.now + self.s.api_latency_ms,
                    Ev::LedgerCas { node, idx, write },
                );
            }
        }
    }
}
