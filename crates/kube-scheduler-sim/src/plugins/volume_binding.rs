//! VolumeBinding (C.52, `pkg/scheduler/framework/plugins/volumebinding`),
//! PreFilter and Filter.
//!
//! PreFilter, over the pod's `persistentVolumeClaim` and `ephemeral`
//! volumes in spec order: a missing claim, a `Lost` claim, a claim being
//! deleted, or an ephemeral claim owned by another pod rejects the pod on
//! every node (UnschedulableAndUnresolvable, upstream's messages). Claims
//! are then sorted into *bound* (a volume name and bind-completed), *delayed*
//! (unbound, class `WaitForFirstConsumer`) and *immediate* (everything else,
//! including pre-bound claims); any immediate claim gives `pod has unbound
//! immediate PersistentVolumeClaims` on every node. A pod without claims
//! skips the plugin.
//!
//! Filter, per node (`FindPodVolumes`), UnschedulableAndUnresolvable with
//! every reason that applies, in upstream's order:
//! - bound claims: a PV missing gives `node(s) unavailable due to one or
//!   more pvc(s) bound to non-existent pv(s)`; a PV whose `spec.nodeAffinity`
//!   does not match the node's labels gives `node(s) had volume node
//!   affinity conflict`;
//! - delayed claims: a claim whose `volume.kubernetes.io/selected-node`
//!   names another node, or that neither an available PV (see
//!   `find_matching_volume`) nor dynamic provisioning (a provisioner other
//!   than `kubernetes.io/no-provisioner` whose `allowedTopologies` match the
//!   node) can satisfy, gives `node(s) didn't find available persistent
//!   volumes to bind`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use kube_validation::node_selector::selector_matches;
use kube_validation::{Quantity, namespace_or_default};

use crate::pod_info::PodInfo;
use crate::profile::{Cycle, PreFilter, SchedulerPlugin};
use crate::result::{Code, Plugin, Rejection};
use crate::volumes::{
    ANN_SELECTED_NODE, NO_PROVISIONER, Storage, claim_class, claim_is_bound, claim_volume_name,
    class_waits_for_consumer,
};
use kube_validation::LabelSelectorMatcher as PodSelector;

/// `ErrReasonNodeConflict`, as 1.35 and 1.37 word it (older releases
/// wrote `node(s) had volume node affinity conflict`).
pub const NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
/// `ErrReasonBindConflict`.
pub const BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// `ErrReasonPVNotExist`.
pub const PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
/// PreFilter's reason when an immediate claim is unbound.
pub const UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// PreFilter's result: the pod's claims by kind (claim names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Pre {
    pub(crate) bound: Vec<String>,
    pub(crate) delayed: Vec<String>,
}

/// PreFilter: `Err` with kube-scheduler's message, `Ok(None)` when skipped.
pub(crate) fn prefilter(storage: &Storage, pod: &PodInfo) -> Result<Option<Pre>, String> {
    if pod.volumes.claims.is_empty() {
        return Ok(None);
    }
    let mut claims = Vec::new();
    for c in &pod.volumes.claims {
        let Some(claim) = storage.claim(&pod.namespace, &c.claim) else {
            return Err(if c.ephemeral {
                format!(
                    "waiting for ephemeral volume controller to create the persistentvolumeclaim {:?}",
                    c.claim
                )
            } else {
                format!("persistentvolumeclaim {:?} not found", c.claim)
            });
        };
        if claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Lost") {
            return Err(format!(
                "persistentvolumeclaim {:?} bound to non-existent persistentvolume {:?}",
                c.claim,
                claim_volume_name(claim)
            ));
        }
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!(
                "persistentvolumeclaim {:?} is being deleted",
                c.claim
            ));
        }
        if c.ephemeral
            && let Some(uid) = &pod.volumes.uid
            && !claim
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true) && &o.uid == uid)
        {
            return Err(format!(
                "PVC {}/{} was not created for pod {}/{} (pod is not owner)",
                pod.namespace, c.claim, pod.namespace, pod.name
            ));
        }
        claims.push((c.claim.clone(), claim));
    }
    let mut pre = Pre::default();
    let mut immediate = false;
    for (name, claim) in claims {
        if claim_is_bound(claim) {
            pre.bound.push(name);
        } else if claim_volume_name(claim).is_empty()
            && storage
                .classes
                .get(claim_class(claim))
                .is_some_and(class_waits_for_consumer)
        {
            pre.delayed.push(name);
        } else {
            immediate = true;
        }
    }
    if immediate {
        return Err(UNBOUND_IMMEDIATE.to_owned());
    }
    Ok(Some(pre))
}

/// Why a bound claim fails on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BoundProblem {
    /// The claim's PV does not exist.
    Missing { claim: String, pv: String },
    /// The PV's node affinity does not match.
    NodeAffinity { claim: String, pv: String },
}

/// Why a delayed claim fails on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DelayedProblem {
    /// `volume.kubernetes.io/selected-node` names another node.
    SelectedNode { claim: String, node: String },
    /// No PV matches and the class cannot provision here.
    NoVolume {
        claim: String,
        class: String,
        why: String,
    },
}

/// FindPodVolumes on one node: the first problem of the bound claims and
/// of the delayed claims.
pub(crate) fn find(
    storage: &Storage,
    pod: &PodInfo,
    pre: &Pre,
    node_name: &str,
    labels: &BTreeMap<String, String>,
) -> (Option<BoundProblem>, Option<DelayedProblem>) {
    let mut bound_problem = None;
    for name in &pre.bound {
        let Some(claim) = storage.claim(&pod.namespace, name) else {
            continue;
        };
        let pv_name = claim_volume_name(claim);
        match storage.volumes.get(pv_name) {
            None => {
                bound_problem = Some(BoundProblem::Missing {
                    claim: name.clone(),
                    pv: pv_name.to_owned(),
                });
                break;
            }
            Some(pv) if !pv_node_affinity_matches(pv, labels) => {
                bound_problem = Some(BoundProblem::NodeAffinity {
                    claim: name.clone(),
                    pv: pv_name.to_owned(),
                });
                break;
            }
            Some(_) => {}
        }
    }
    (
        bound_problem,
        find_delayed(storage, pod, pre, node_name, labels),
    )
}

fn find_delayed(
    storage: &Storage,
    pod: &PodInfo,
    pre: &Pre,
    node_name: &str,
    labels: &BTreeMap<String, String>,
) -> Option<DelayedProblem> {
    let mut to_match: Vec<&PersistentVolumeClaim> = Vec::new();
    let mut to_provision: Vec<&PersistentVolumeClaim> = Vec::new();
    for name in &pre.delayed {
        let claim = storage.claim(&pod.namespace, name)?;
        match claim
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANN_SELECTED_NODE))
        {
            Some(selected) if selected != node_name => {
                return Some(DelayedProblem::SelectedNode {
                    claim: name.clone(),
                    node: selected.clone(),
                });
            }
            Some(_) => to_provision.push(claim),
            None => to_match.push(claim),
        }
    }
    // Smallest requests first (a stable sort; upstream's is not).
    to_match.sort_by_key(|c| requested_storage(c).unwrap_or(0));
    let mut chosen: BTreeSet<&str> = BTreeSet::new();
    for claim in to_match {
        match find_matching_volume(storage, claim, labels, &chosen) {
            Some(pv) => {
                chosen.insert(pv);
            }
            None => to_provision.push(claim),
        }
    }
    for claim in to_provision {
        let class_name = claim_class(claim);
        let name = claim.metadata.name.clone().unwrap_or_default();
        let Some(class) = storage.classes.get(class_name) else {
            return Some(DelayedProblem::NoVolume {
                claim: name,
                class: class_name.to_owned(),
                why: format!("StorageClass {class_name:?} does not exist"),
            });
        };
        if let Some(why) = cannot_provision(class, labels) {
            return Some(DelayedProblem::NoVolume {
                claim: name,
                class: class_name.to_owned(),
                why,
            });
        }
    }
    None
}

/// Why a class cannot provision a volume for a node, `None` when it can.
fn cannot_provision(class: &StorageClass, labels: &BTreeMap<String, String>) -> Option<String> {
    if class.provisioner.is_empty() || class.provisioner == NO_PROVISIONER {
        return Some(format!(
            "no PersistentVolume matches and the class's provisioner {:?} does not provision dynamically",
            class.provisioner
        ));
    }
    let terms = class.allowed_topologies.as_deref().unwrap_or_default();
    let matches = terms.is_empty()
        || terms.iter().any(|t| {
            t.match_label_expressions
                .iter()
                .flatten()
                .all(|e| labels.get(&e.key).is_some_and(|v| e.values.contains(v)))
        });
    (!matches).then(|| {
        "no PersistentVolume matches and the node is outside the class's allowedTopologies"
            .to_owned()
    })
}

/// Whether a PV's `spec.nodeAffinity.required` matches node labels
/// (`CheckNodeAffinity`; an unparsable selector matches nothing).
pub(crate) fn pv_node_affinity_matches(
    pv: &PersistentVolume,
    labels: &BTreeMap<String, String>,
) -> bool {
    match pv
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
    {
        None => true,
        Some(sel) => selector_matches(sel, "", labels),
    }
}

fn requested_storage(claim: &PersistentVolumeClaim) -> Option<i128> {
    let q = claim
        .spec
        .as_ref()?
        .resources
        .as_ref()?
        .requests
        .as_ref()?
        .get("storage")?;
    Quantity::parse(&q.0).ok().map(Quantity::nanos)
}

fn capacity(pv: &PersistentVolume) -> Option<i128> {
    let q = pv.spec.as_ref()?.capacity.as_ref()?.get("storage")?;
    Quantity::parse(&q.0).ok().map(Quantity::nanos)
}

/// `FindMatchingVolume`, simplified (C.52): among the PVs of the claim's
/// class not chosen yet, not being deleted, with enough capacity, the same
/// volume mode and a node affinity matching the node, a PV pre-bound to the
/// claim (`claimRef`) wins; otherwise the smallest *available* one (phase
/// `Available`, or no phase and no `claimRef`) whose labels match the
/// claim's selector and whose access modes include the claim's. Ties go to
/// the smallest name. VolumeAttributesClass is not compared.
pub(crate) fn find_matching_volume<'a>(
    storage: &'a Storage,
    claim: &PersistentVolumeClaim,
    labels: &BTreeMap<String, String>,
    chosen: &BTreeSet<&str>,
) -> Option<&'a str> {
    let class = claim_class(claim);
    let ns = namespace_or_default(claim.metadata.namespace.as_deref());
    let name = claim.metadata.name.as_deref().unwrap_or_default();
    let uid = claim.metadata.uid.as_deref().unwrap_or_default();
    let request = requested_storage(claim).unwrap_or(0);
    let spec = claim.spec.as_ref();
    let mode = spec
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    let selector = match spec.and_then(|s| s.selector.as_ref()) {
        None => None,
        Some(s) => Some(PodSelector::compile(Some(s)).ok()?),
    };
    let modes = spec
        .and_then(|s| s.access_modes.clone())
        .unwrap_or_default();
    let mut best: Option<(i128, &str)> = None;
    for (pv_name, pv) in &storage.volumes {
        let Some(pv_spec) = pv.spec.as_ref() else {
            continue;
        };
        if pv_spec.storage_class_name.as_deref().unwrap_or_default() != class
            || chosen.contains(pv_name.as_str())
        {
            continue;
        }
        let claim_ref = pv_spec.claim_ref.as_ref();
        let bound_to_claim = claim_ref.is_some_and(|r| {
            r.name.as_deref() == Some(name)
                && namespace_or_default(r.namespace.as_deref()) == ns
                && r.uid.as_deref().is_none_or(|u| u.is_empty() || u == uid)
        });
        if claim_ref.is_some() && !bound_to_claim {
            continue;
        }
        let cap = capacity(pv).unwrap_or(0);
        if cap < request
            || pv_spec.volume_mode.as_deref().unwrap_or("Filesystem") != mode
            || pv.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let affinity_ok = pv_node_affinity_matches(pv, labels);
        if bound_to_claim {
            return affinity_ok.then_some(pv_name.as_str());
        }
        let phase = pv.status.as_ref().and_then(|s| s.phase.as_deref());
        if !(phase == Some("Available") || phase.is_none()) {
            continue;
        }
        if let Some(sel) = &selector
            && !sel.matches(pv.metadata.labels.as_ref().unwrap_or(&BTreeMap::new()))
        {
            continue;
        }
        if !affinity_ok {
            continue;
        }
        let pv_modes = pv_spec.access_modes.as_deref().unwrap_or_default();
        if !modes.iter().all(|m| pv_modes.contains(m)) {
            continue;
        }
        if best.is_none_or(|(c, _)| cap < c) {
            best = Some((cap, pv_name.as_str()));
        }
    }
    best.map(|b| b.1)
}

/// Filter on one node: kube-scheduler's reasons, in upstream's order.
pub(crate) fn filter(
    storage: &Storage,
    pod: &PodInfo,
    pre: &Pre,
    node_name: &str,
    labels: &BTreeMap<String, String>,
) -> Vec<&'static str> {
    let (bound, delayed) = find(storage, pod, pre, node_name, labels);
    let mut out = Vec::new();
    if matches!(bound, Some(BoundProblem::NodeAffinity { .. })) {
        out.push(NODE_CONFLICT);
    }
    if delayed.is_some() {
        out.push(BIND_CONFLICT);
    }
    if matches!(bound, Some(BoundProblem::Missing { .. })) {
        out.push(PV_NOT_EXIST);
    }
    out
}

/// The plugin in a profile: PreFilter and Filter (C.52).
pub(crate) struct VolumeBinding;

impl SchedulerPlugin for VolumeBinding {
    fn name(&self) -> Plugin {
        Plugin::VolumeBinding
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        let (state, pod) = (cycle.state, cycle.pod);
        if !pod.volumes.any {
            return PreFilter::Skip;
        }
        match prefilter(&state.storage, pod) {
            Err(m) => PreFilter::AllNodes(Rejection::many(
                Plugin::VolumeBinding,
                Code::UnschedulableAndUnresolvable,
                vec![m],
            )),
            Ok(None) => PreFilter::Skip,
            Ok(Some(pre)) => PreFilter::Filter(Box::new(move |node| {
                let e = &state.nodes[node as usize];
                let reasons = filter(&state.storage, pod, &pre, &e.name, &e.labels);
                (!reasons.is_empty()).then(|| {
                    Rejection::many(
                        Plugin::VolumeBinding,
                        Code::UnschedulableAndUnresolvable,
                        reasons.into_iter().map(str::to_owned).collect(),
                    )
                })
            })),
        }
    }
}
