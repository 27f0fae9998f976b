//! VolumeZone (C.53, `pkg/scheduler/framework/plugins/volumezone`).
//!
//! PreFilter reads the PV bound to each `persistentVolumeClaim` volume (an
//! unbound `WaitForFirstConsumer` claim is skipped) and keeps its zone and
//! region labels — `failure-domain.beta.kubernetes.io/zone`,
//! `failure-domain.beta.kubernetes.io/region`, `topology.kubernetes.io/zone`,
//! `topology.kubernetes.io/region`, in that order — each value a
//! `__`-separated set of zones (a value with an empty element is ignored).
//! A missing PV rejects the pod on every node (`persistentvolume "x" not
//! found`); no labels skip the plugin.
//!
//! Filter: a node with none of the four labels passes (a single-zone
//! cluster). Otherwise, for every PV label, the node's value for the same
//! key — or, for a beta key the node lacks, for its GA key — must be in the
//! PV's set, else `node(s) had no available volume zone`
//! (UnschedulableAndUnresolvable).

use std::collections::{BTreeMap, BTreeSet};

use crate::pod_info::PodInfo;
use crate::profile::{Cycle, PreFilter, SchedulerPlugin};
use crate::result::{Code, Plugin, Rejection};
use crate::volumes::{
    Storage, claim_class, claim_volume_name, class_waits_for_consumer, label_zones_to_set,
};

/// kube-scheduler's reason (`ErrReasonConflict`).
pub const REASON: &str = "node(s) had no available volume zone";

/// The topology labels read, in upstream's order.
pub const TOPOLOGY_LABELS: [&str; 4] = [
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

/// One zone or region label of a bound PV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PvTopology {
    pub(crate) claim: String,
    pub(crate) pv: String,
    pub(crate) key: &'static str,
    pub(crate) values: BTreeSet<String>,
}

fn to_ga(key: &str) -> &str {
    match key {
        "failure-domain.beta.kubernetes.io/region" => "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone" => "topology.kubernetes.io/zone",
        k => k,
    }
}

/// PreFilter: `Err` with kube-scheduler's message, `Ok(None)` when skipped.
pub(crate) fn prefilter(
    storage: &Storage,
    pod: &PodInfo,
) -> Result<Option<Vec<PvTopology>>, String> {
    let mut out = Vec::new();
    for c in pod.volumes.claims.iter().filter(|c| !c.ephemeral) {
        if c.claim.is_empty() {
            return Err("PersistentVolumeClaim had no name".to_owned());
        }
        let Some(claim) = storage.claim(&pod.namespace, &c.claim) else {
            return Err(format!("persistentvolumeclaim {:?} not found", c.claim));
        };
        let pv_name = claim_volume_name(claim);
        if pv_name.is_empty() {
            let class = claim_class(claim);
            if class.is_empty() {
                return Err("PersistentVolumeClaim had no pv name and storageClass name".to_owned());
            }
            let Some(sc) = storage.classes.get(class) else {
                return Err(format!("storageclass.storage.k8s.io {class:?} not found"));
            };
            if class_waits_for_consumer(sc) {
                continue;
            }
            return Err("PersistentVolume had no name".to_owned());
        }
        let Some(pv) = storage.volumes.get(pv_name) else {
            return Err(format!("persistentvolume {pv_name:?} not found"));
        };
        let labels = pv.metadata.labels.as_ref();
        for key in TOPOLOGY_LABELS {
            let Some(value) = labels.and_then(|l| l.get(key)) else {
                continue;
            };
            if let Some(values) = label_zones_to_set(value) {
                out.push(PvTopology {
                    claim: c.claim.clone(),
                    pv: pv_name.to_owned(),
                    key,
                    values,
                });
            }
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

/// Filter on one node: the first PV label the node does not satisfy.
pub(crate) fn filter<'a>(
    topologies: &'a [PvTopology],
    labels: &BTreeMap<String, String>,
) -> Option<&'a PvTopology> {
    if !TOPOLOGY_LABELS.iter().any(|k| labels.contains_key(*k)) {
        return None;
    }
    topologies.iter().find(|t| {
        let v = labels.get(t.key).or_else(|| labels.get(to_ga(t.key)));
        !v.is_some_and(|v| t.values.contains(v))
    })
}

/// The node's value for a PV label, as the filter reads it.
pub(crate) fn node_value<'a>(
    t: &PvTopology,
    labels: &'a BTreeMap<String, String>,
) -> Option<(&'a str, &'a str)> {
    labels
        .get_key_value(t.key)
        .or_else(|| labels.get_key_value(to_ga(t.key)))
        .map(|(k, v)| (k.as_str(), v.as_str()))
}

/// The Filter's status for a zone conflict.
const REJECTION: Rejection = Rejection::new(
    Plugin::VolumeZone,
    Code::UnschedulableAndUnresolvable,
    REASON,
);

/// The plugin in a profile: PreFilter and Filter (C.53).
pub(crate) struct VolumeZone;

impl SchedulerPlugin for VolumeZone {
    fn name(&self) -> Plugin {
        Plugin::VolumeZone
    }

    fn pre_filter<'a>(&self, cycle: &Cycle<'a>) -> PreFilter<'a> {
        let state = cycle.state;
        if !cycle.pod.volumes.any {
            return PreFilter::Skip;
        }
        match prefilter(&state.storage, cycle.pod) {
            Err(m) => PreFilter::AllNodes(Rejection::many(
                Plugin::VolumeZone,
                Code::UnschedulableAndUnresolvable,
                vec![m],
            )),
            Ok(None) => PreFilter::Skip,
            Ok(Some(z)) => PreFilter::Filter(Box::new(move |node| {
                filter(&z, &state.nodes[node as usize].labels)
                    .is_some()
                    .then_some(REJECTION)
            })),
        }
    }
}
