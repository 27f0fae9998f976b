//! The scheduling-gate form of the prepare queue (L3.15–L3.17): which
//! data-mover pods may leave the queue now.
//!
//! A data mover built like Velero's accepts a load and exposes it (creates
//! its pod) in one reconcile, and never exposes a load someone else
//! accepted (L3.15). So the queue does not accept on the mover's behalf: a
//! mutating admission webhook adds the gate [`PREPARE_QUEUE_GATE`] to every
//! mover pod at creation, kube-scheduler leaves a gated pod alone, and the
//! controller removes the gate, first in first out by the load's creation,
//! while fewer than the limit are in preparation.
//!
//! A load counts as in preparation ([`counts_against_limit`]) while its phase
//! is `Accepted` or `Prepared` and none of its mover pods is still gated.
//! The `velero.io/expose-on-going` label is not read: a mover that leaves it
//! on a finished load would otherwise hold a place for good (L3.17).
//!
//! [`plan_lifts`] decides with a soft limit (one replica, or replicas that
//! may each lift up to the limit); [`plan_exact_lifts`] lifts only the
//! loads listed in the shared [`Ledger`], which is written with
//! compare-and-swap and never lists more than the limit, so that several
//! replicas together never have more than the limit in preparation.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;

use crate::config::Limit;
use crate::ledger::{LEDGER_FORMAT_VERSION, Ledger, LedgerEntry, LedgerSnapshot, LedgerWrite};
use crate::model::{Load, LoadId};

/// The scheduling gate the webhook adds and the controller removes.
pub const PREPARE_QUEUE_GATE: &str = "velero.io/prepare-queue";

/// A data-mover pod as the controller sees it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MoverPod {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// The load it serves, from its label (`velero.io/data-upload` and the
    /// like) and owner reference.
    pub load: LoadId,
    /// Whether it still carries [`PREPARE_QUEUE_GATE`].
    pub gated: bool,
}

/// A pod to lift the gate of.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodRef {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
}

impl PodRef {
    fn of(pod: &MoverPod) -> PodRef {
        PodRef {
            namespace: pod.namespace.clone(),
            name: pod.name.clone(),
        }
    }
}

/// What a pass of the gate decides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiftPlan {
    /// Pods whose gate to remove, in queue order.
    pub lift: Vec<PodRef>,
    /// Gated pods that stay gated, in queue order, with their load.
    pub waiting: Vec<(PodRef, LoadId)>,
    /// How many loads count against the limit before this pass.
    pub in_preparation: u64,
}

/// Whether `load` holds a place in the prepare queue: its phase is
/// `Accepted` or `Prepared` and none of `pods` (its mover pods) is gated.
pub fn counts_against_limit(load: &Load, pods: &[&MoverPod]) -> bool {
    load.phase.is_preparing() && !pods.iter().any(|p| p.gated)
}

/// The pods of each load, and the loads by id.
struct View<'a> {
    loads: BTreeMap<&'a LoadId, &'a Load>,
    pods: BTreeMap<&'a LoadId, Vec<&'a MoverPod>>,
}

impl<'a> View<'a> {
    fn new(loads: &'a [Load], pods: &'a [MoverPod]) -> View<'a> {
        let mut by_load: BTreeMap<&LoadId, Vec<&MoverPod>> = BTreeMap::new();
        for pod in pods {
            by_load.entry(&pod.load).or_default().push(pod);
        }
        View {
            loads: loads.iter().map(|l| (&l.id, l)).collect(),
            pods: by_load,
        }
    }

    fn pods_of(&self, id: &LoadId) -> &[&'a MoverPod] {
        self.pods.get(id).map_or(&[], Vec::as_slice)
    }

    /// Loads in preparation, and mover pods running ungated for a load not
    /// seen (counted, to be safe).
    fn in_preparation(&self) -> BTreeSet<&'a LoadId> {
        let mut counted: BTreeSet<&LoadId> = self
            .loads
            .values()
            .filter(|l| counts_against_limit(l, self.pods_of(&l.id)))
            .map(|l| &l.id)
            .collect();
        for (id, pods) in &self.pods {
            if !self.loads.contains_key(id) && pods.iter().all(|p| !p.gated) {
                counted.insert(id);
            }
        }
        counted
    }

    /// Gated loads in queue order. A gated pod whose load is not seen yet
    /// has no place in the order and waits.
    fn queue(&self) -> (Vec<&'a Load>, Vec<&'a LoadId>) {
        let mut queued = Vec::new();
        let mut unseen = Vec::new();
        for (id, pods) in &self.pods {
            if !pods.iter().any(|p| p.gated) {
                continue;
            }
            match self.loads.get(id) {
                Some(load) => queued.push(*load),
                None => unseen.push(*id),
            }
        }
        queued.sort_by_key(|l| l.fifo_key());
        (queued, unseen)
    }

    fn gated_pods(&self, id: &LoadId) -> impl Iterator<Item = PodRef> + '_ {
        self.pods_of(id)
            .iter()
            .filter(|p| p.gated)
            .map(|p| PodRef::of(p))
    }
}

/// Whether a gated load's gate can go without taking a place: its load has
/// left preparation (cancelled, failed, finished) and lifting only lets
/// the mover clean up.
fn past_preparation(load: &Load) -> bool {
    load.phase.is_past_preparation() || load.cancel_requested
}

/// The soft-limit decision: lifts the gates of the oldest gated loads
/// while fewer than `limit` loads are in preparation, and the gates of
/// loads already past preparation (they take no place).
pub fn plan_lifts(limit: Limit, loads: &[Load], pods: &[MoverPod]) -> LiftPlan {
    let view = View::new(loads, pods);
    let in_preparation = view.in_preparation().len() as u64;
    let mut free = limit.get().saturating_sub(in_preparation);
    let (queued, unseen) = view.queue();
    let mut plan = LiftPlan {
        in_preparation,
        ..LiftPlan::default()
    };
    for load in queued {
        if past_preparation(load) {
            plan.lift.extend(view.gated_pods(&load.id));
        } else if free > 0 {
            free -= 1;
            plan.lift.extend(view.gated_pods(&load.id));
        } else {
            plan.waiting
                .extend(view.gated_pods(&load.id).map(|p| (p, load.id.clone())));
        }
    }
    for id in unseen {
        plan.waiting
            .extend(view.gated_pods(id).map(|p| (p, id.clone())));
    }
    plan
}

/// The exact-mode decision of one pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExactLiftPlan {
    /// Pods whose gate to remove now: their loads are listed in the ledger
    /// as read (or past preparation).
    pub lift: Vec<PodRef>,
    /// The ledger write to make first (compare-and-swap on the snapshot's
    /// resourceVersion); the loads it admits are lifted by the next pass,
    /// after the write succeeded.
    pub write: Option<LedgerWrite>,
}

/// The exact-mode decision: only loads listed in the ledger are lifted, and
/// a write admits at most `limit` less (entries kept + loads in preparation
/// outside the ledger, such as pods created while the webhook was
/// unreachable). An entry is dropped only when its load is seen past
/// preparation or is in `gone` (confirmed deleted). `replica` names the
/// writer in new entries.
pub fn plan_exact_lifts(
    limit: Limit,
    snapshot: &LedgerSnapshot,
    loads: &[Load],
    pods: &[MoverPod],
    gone: &BTreeSet<LoadId>,
    replica: &str,
    now: Timestamp,
) -> ExactLiftPlan {
    let view = View::new(loads, pods);
    let ledger = &snapshot.ledger;
    let left =
        |id: &LoadId| gone.contains(id) || view.loads.get(id).is_some_and(|l| past_preparation(l));
    let kept: Vec<&LedgerEntry> = ledger.admitted.iter().filter(|e| !left(&e.id)).collect();
    let removed: Vec<LoadId> = ledger
        .admitted
        .iter()
        .filter(|e| left(&e.id))
        .map(|e| e.id.clone())
        .collect();
    let listed: BTreeSet<&LoadId> = kept.iter().map(|e| &e.id).collect();
    let outside = view
        .in_preparation()
        .into_iter()
        .filter(|id| !listed.contains(id))
        .count() as u64;
    let free = limit.get().saturating_sub(kept.len() as u64 + outside);
    let (queued, _unseen) = view.queue();
    let mut plan = ExactLiftPlan::default();
    let mut admitted = Vec::new();
    for load in queued {
        if past_preparation(load) || listed.contains(&load.id) {
            plan.lift.extend(view.gated_pods(&load.id));
        } else if (admitted.len() as u64) < free {
            admitted.push(load.id.clone());
        }
    }
    if !admitted.is_empty() || !removed.is_empty() {
        let mut entries: Vec<LedgerEntry> = kept.into_iter().cloned().collect();
        entries.extend(admitted.iter().map(|id| LedgerEntry {
            id: id.clone(),
            admitted_at: now,
            admitted_by: replica.to_owned(),
        }));
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        plan.write = Some(LedgerWrite {
            expected_resource_version: snapshot.resource_version.clone(),
            ledger: Ledger {
                version: LEDGER_FORMAT_VERSION,
                admitted: entries,
            },
            admitted,
            removed,
        });
    }
    plan
}
