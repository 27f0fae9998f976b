//! A backlog of waiting loads draining through the gate, step by step:
//! Velero's gate (L3.10, L3.14) beside the exact gate.
//!
//! The input gives no durations, so time is counted in **steps**, and the
//! model is deliberately small:
//!
//! - a load is in preparation for exactly one step: the loads in
//!   preparation at step 0 (the snapshot's) and the loads admitted in a step
//!   have all left preparation at the start of the next step;
//! - **Velero's gate**: every node-agent runs one reconcile worker per kind,
//!   and in one step each worker decides one waiting load of its kind
//!   against the count of its cache as it was at the start of the step —
//!   it sees neither its own admissions nor the other node-agents' until the
//!   next step (L3.10, L3.12). While that count is below the limit, each
//!   worker admits, so up to node-agents × kinds loads are admitted in one
//!   step: the soft limit of L3.14. Every node-agent is taken to reconcile
//!   every kind (a pod-volume load is really reconciled by its own node only,
//!   so this is the upper bound);
//! - **the exact gate**: admissions go through one ledger written with
//!   compare-and-swap, so a step admits at most the free slots (limit minus
//!   loads in preparation), in first-in first-out order.
//!
//! Both gates drain the same backlog; the difference is how far above the
//! limit the number of loads in preparation goes.

use crate::config::Limit;
use crate::model::LoadKind;

/// What the backlog simulation starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BacklogInput {
    /// `prepareQueueLength`.
    pub limit: Limit,
    /// Loads in preparation at step 0.
    pub in_preparation: u64,
    /// The kinds of the waiting loads, in the gate's first-in first-out
    /// order.
    pub waiting: Vec<LoadKind>,
    /// The node-agents deciding (Velero's gate); values below 1 mean 1.
    pub node_agents: u32,
}

/// Which gate a backlog drains through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BacklogGate {
    /// Velero's node-agents, each on its own stale count (the soft limit).
    Velero,
    /// The ledger of the exact mode (never above the limit).
    Exact,
}

/// One step of a backlog drain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BacklogStep {
    /// Loads in preparation during the step: those carried into it (the
    /// snapshot's, at step 0) and those admitted in it.
    pub in_preparation: u64,
    /// Loads admitted in the step.
    pub admitted: u64,
    /// Loads still waiting after the step.
    pub waiting: u64,
}

/// A backlog drained through one gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BacklogRun {
    /// The steps, until the backlog is empty (at least one step).
    pub steps: Vec<BacklogStep>,
}

impl BacklogRun {
    /// The most loads in preparation in any step.
    pub fn peak(&self) -> u64 {
        self.steps
            .iter()
            .map(|s| s.in_preparation)
            .max()
            .unwrap_or(0)
    }

    /// How far the peak goes above `limit` (0 when it does not).
    pub fn overshoot(&self, limit: Limit) -> u64 {
        self.peak().saturating_sub(limit.get())
    }
}

/// Drains the backlog through `gate` (see the module documentation).
pub fn simulate_backlog(input: &BacklogInput, gate: BacklogGate) -> BacklogRun {
    let limit = input.limit.get();
    let node_agents = u64::from(input.node_agents.max(1));
    // Per kind, the waiting loads left, and in FIFO order the kinds left.
    let mut queue: Vec<LoadKind> = input.waiting.clone();
    let mut carried = input.in_preparation;
    let mut steps = Vec::new();
    loop {
        let admitted_kinds: Vec<usize> = match gate {
            BacklogGate::Exact => {
                let free = limit.saturating_sub(carried);
                let take = usize::try_from(free).unwrap_or(usize::MAX).min(queue.len());
                (0..take).collect()
            }
            BacklogGate::Velero => {
                if carried >= limit {
                    Vec::new()
                } else {
                    // Each node-agent's worker of a kind takes the next
                    // waiting load of that kind.
                    let mut taken = [0u64; LoadKind::COUNT];
                    let mut picked = Vec::new();
                    for (i, kind) in queue.iter().enumerate() {
                        let n = &mut taken[kind.index()];
                        if *n < node_agents {
                            *n += 1;
                            picked.push(i);
                        }
                    }
                    picked
                }
            }
        };
        let admitted = admitted_kinds.len() as u64;
        let mut index = 0;
        queue.retain(|_| {
            let keep = admitted_kinds.binary_search(&index).is_err();
            index += 1;
            keep
        });
        steps.push(BacklogStep {
            in_preparation: carried + admitted,
            admitted,
            waiting: queue.len() as u64,
        });
        if queue.is_empty() {
            break;
        }
        // Every load prepares for one step: the next step starts empty.
        carried = 0;
    }
    BacklogRun { steps }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(in_preparation: u64, waiting: usize, node_agents: u32) -> BacklogInput {
        BacklogInput {
            limit: Limit::new(4).expect("positive"),
            in_preparation,
            waiting: vec![LoadKind::DataUpload; waiting],
            node_agents,
        }
    }

    #[test]
    fn velero_overshoots_where_the_exact_gate_fills_the_free_slots() {
        let i = input(3, 4, 5);
        let velero = simulate_backlog(&i, BacklogGate::Velero);
        assert_eq!(
            velero.steps,
            [BacklogStep {
                in_preparation: 7,
                admitted: 4,
                waiting: 0
            }]
        );
        assert_eq!(velero.overshoot(i.limit), 3);
        let exact = simulate_backlog(&i, BacklogGate::Exact);
        let in_prep: Vec<u64> = exact.steps.iter().map(|s| s.in_preparation).collect();
        assert_eq!(in_prep, [4, 3]);
        assert_eq!(exact.overshoot(i.limit), 0);
    }

    #[test]
    fn a_full_queue_admits_nothing_in_its_first_step() {
        let i = input(4, 2, 1);
        for gate in [BacklogGate::Velero, BacklogGate::Exact] {
            let run = simulate_backlog(&i, gate);
            assert_eq!(run.steps[0].admitted, 0, "{gate:?}");
            assert_eq!(
                run.steps[1].admitted,
                if gate == BacklogGate::Exact { 2 } else { 1 }
            );
        }
    }
}
