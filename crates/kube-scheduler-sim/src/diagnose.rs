//! "Why not this node?": the first failing requirement in plain words.
//!
//! Runs the same checks in the same order as the evaluator
//! (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
//! NodeResourcesFit, VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
//! VolumeZone, PodTopologySpread, InterPodAffinity), then names what
//! is responsible: the taint, the cordon, each resource with its amounts,
//! the pod holding a host port, the claim and volume whose zone or node
//! affinity excludes the node, the pod and domain of an (anti-)affinity
//! match. Meant for a `diagnose` command; not fast.

use k8s_openapi::api::core::v1::Pod;
use kube_validation::set_selector_misses;
use serde::{Deserialize, Serialize};

use crate::plugins::node_resources_fit::{Insufficient, fits_request_delegating};
use crate::plugins::node_unschedulable::UNSCHEDULABLE_TAINT_KEY;
use crate::plugins::pod_topology_spread::spread_prefilter;
use crate::plugins::{
    Reason, node_volume_limits, taint_toleration, volume_binding, volume_restrictions, volume_zone,
};
use crate::pod_info::PodInfo;
use crate::profile::evaluate;
use crate::result::{Options, Plugin};
use crate::state::ClusterState;

/// The verdict on one node with an explanation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// The node examined.
    pub node: String,
    /// Whether the pod passes every filter on this node.
    pub fits: bool,
    /// The first failing plugin.
    pub plugin: Option<Plugin>,
    /// kube-scheduler's message.
    pub message: Option<String>,
    /// The first failing requirement in plain words.
    pub explanation: String,
}

/// Explain why `pod` does (not) fit `node_name`. `None` if the node is unknown.
pub fn diagnose(
    state: &ClusterState,
    pod: &Pod,
    node_name: &str,
    opts: &Options,
) -> Option<Diagnosis> {
    let node = state.node_index(node_name)?;
    let mut info = state.compile_pod(pod);
    let key = info.key();
    let mut d = Diagnosis {
        pod: key,
        node: node_name.to_owned(),
        fits: false,
        plugin: None,
        message: None,
        explanation: String::new(),
    };
    if let Some(skip) = crate::skip::scheduling_skip(pod) {
        d.explanation = skip.to_string();
        return Some(d);
    }
    let core = evaluate(
        state,
        crate::plugins::profile_for(opts.kubernetes_version),
        &info,
        opts,
    );
    if let Some(e) = &core.error {
        d.explanation = format!("the pod cannot be scheduled at all: {e}");
        return Some(d);
    }
    if let Some(r) = &core.all_nodes {
        let m = r.failure().message;
        d.plugin = Some(r.plugin);
        d.explanation = match r.plugin {
            Plugin::NodeAffinity => "every required node affinity term pins metadata.name, and no node name satisfies all pins of any term".to_owned(),
            Plugin::InterPodAffinity => {
                format!("the pod's own pod (anti-)affinity cannot be parsed: {m}")
            }
            plugin => {
                format!("{plugin:?} rejects the pod on every node before filtering: {m}")
            }
        };
        d.message = Some(m);
        return Some(d);
    }
    if core.reasons[node as usize].is_none()
        && let Some(held) = state.core_eval(pod, &info, opts).reasons[node as usize].as_ref()
    {
        // Only the pods nominated to the node reject it (C.71).
        let message = held.failure().message;
        d.plugin = Some(held.plugin);
        d.explanation = format!(
            "room on this node is kept for the pending pods nominated to it with a priority at least the pod's ({}): {message}",
            state.nominated_ahead(pod, node_name).join(", ")
        );
        d.message = Some(message);
        return Some(d);
    }
    let Some(rejection) = core.reasons[node as usize].clone() else {
        d.fits = true;
        d.explanation = format!(
            "the pod passes {} on this node",
            filter_names(opts.kubernetes_version)
        );
        return Some(d);
    };
    d.plugin = Some(rejection.plugin);
    d.message = Some(rejection.failure().message);
    info.resolve_namespaces(&state.namespaces);
    let entry = &state.nodes[node as usize];
    match rejection.plugin {
        Plugin::TaintToleration => {
            if let Some(taint) = taint_toleration::filter(&entry.taints, &info.tolerations) {
                d.explanation = format!(
                    "the node has taint {}, which no toleration of the pod tolerates",
                    kube_validation::taints::describe(taint)
                );
            }
            return Some(d);
        }
        Plugin::NodeResourcesFit => {
            if let (Ok(requests), Some(allocatable)) = (&info.requests, &entry.allocatable) {
                let delegated = crate::plugins::node_resources_fit::delegated_resources(
                    state,
                    requests,
                    opts.kubernetes_version,
                );
                d.explanation = fits_request_delegating(
                    requests,
                    allocatable,
                    &entry.requested,
                    entry.pod_count,
                    &delegated,
                )
                .iter()
                .map(Insufficient::explain)
                .collect::<Vec<_>>()
                .join("; ");
            }
            return Some(d);
        }
        Plugin::VolumeBinding => {
            d.explanation = explain_volumes(state, &info, node, None);
            return Some(d);
        }
        Plugin::NodeDeclaredFeatures => {
            d.explanation = explain_declared_features(&info, entry, opts.kubernetes_version);
            return Some(d);
        }
        Plugin::DynamicResources => {
            d.explanation = crate::plugins::dynamic_resources::explain(
                state,
                &info,
                opts.kubernetes_version,
                node,
            );
            return Some(d);
        }
        _ => {}
    }
    let Some(reason) = Reason::of(&rejection) else {
        return Some(d);
    };
    let labels = &entry.labels;
    let empty = Default::default();
    let pod_name = |p: &crate::pod_info::PodInfo| p.key();
    d.explanation = match reason.plugin() {
        Plugin::NodeAffinity if reason == Reason::NodeAffinityEnforced => {
            "the node does not match the scheduler's addedAffinity (NodeAffinityArgs), which applies to every pod".to_owned()
        }
        Plugin::NodeUnschedulable => format!(
            "the node is cordoned (spec.unschedulable: true) and the pod does not tolerate the {UNSCHEDULABLE_TAINT_KEY}:NoSchedule taint"
        ),
        Plugin::NodeName => format!(
            "the pod's spec.nodeName is {:?}, another node",
            info.node_name.as_deref().unwrap_or_default()
        ),
        Plugin::NodePorts => explain_ports(state, &info, node),
        Plugin::VolumeRestrictions
        | Plugin::NodeVolumeLimits
        | Plugin::VolumeBinding
        | Plugin::VolumeZone => explain_volumes(state, &info, node, Some(reason)),
        // Explained above.
        Plugin::TaintToleration | Plugin::NodeResourcesFit => String::new(),
        // Score-only plugins never reject a node; DynamicResources is
        // explained above.
        Plugin::NodeResourcesBalancedAllocation
        | Plugin::ImageLocality
        | Plugin::DynamicResources
        | Plugin::NodeDeclaredFeatures => String::new(),
        Plugin::NodeAffinity => explain_node_affinity(pod, labels),
        Plugin::PodTopologySpread => {
            let constraints = info.spread.as_deref().unwrap_or_default();
            let keys: Vec<&str> = constraints
                .iter()
                .map(|c| c.topology_key.as_str())
                .collect();
            spread_prefilter(state, &info, constraints)
                .explain(state, node, &keys)
                .unwrap_or_else(|| {
                    "a DoNotSchedule topology spread constraint is not satisfied".to_owned()
                })
        }
        Plugin::InterPodAffinity => {
            match reason {
                Reason::AffinityRules => {
                    match info
                        .required_affinity
                        .iter()
                        .enumerate()
                        .find(|(_, t)| !labels.contains_key(&t.topology_key))
                    {
                        Some((i, t)) => format!(
                            "the node has no label {:?}, the topologyKey of required pod affinity term {i}; required affinity needs every topologyKey on the node",
                            t.topology_key
                        ),
                        None => {
                            let domains: Vec<String> = info
                                .required_affinity
                                .iter()
                                .map(|t| {
                                    format!(
                                        "{}={}",
                                        t.topology_key,
                                        labels.get(&t.topology_key).map_or("", String::as_str)
                                    )
                                })
                                .collect();
                            format!(
                                "no running pod that matches all required pod affinity terms is in this node's domain ({}); the first-pod exception does not apply because such pods run elsewhere or the pod does not match its own terms",
                                domains.join(", ")
                            )
                        }
                    }
                }
                Reason::AntiAffinityRules => {
                    let mut found = None;
                    'outer: for (i, t) in info.required_anti_affinity.iter().enumerate() {
                        let Some(v) = labels.get(&t.topology_key) else {
                            continue;
                        };
                        for (p, n) in state.placed() {
                            let other = &state.nodes[n as usize];
                            if other.labels.get(&t.topology_key) == Some(v)
                                && t.matches(&p.namespace, &p.labels, &empty)
                            {
                                found = Some(format!(
                                    "pod {} on node {} matches required anti-affinity term {i} and shares the domain {}={v}",
                                    pod_name(p),
                                    other.name,
                                    t.topology_key
                                ));
                                break 'outer;
                            }
                        }
                    }
                    found.unwrap_or_else(|| {
                        "a pod matching a required anti-affinity term shares this node's domain"
                            .to_owned()
                    })
                }
                _ => {
                    let ns_labels = state.namespace_labels(&info.namespace);
                    let mut found = None;
                    'outer2: for (p, n) in state.placed() {
                        let other = &state.nodes[n as usize];
                        for (i, t) in p.required_anti_affinity.iter().enumerate() {
                            let Some(v) = other.labels.get(&t.topology_key) else {
                                continue;
                            };
                            if labels.get(&t.topology_key) == Some(v)
                                && t.matches(&info.namespace, &info.labels, ns_labels)
                            {
                                found = Some(format!(
                                    "running pod {} on node {} has required anti-affinity term {i} that matches this pod, and this node shares its domain {}={v}",
                                    pod_name(p),
                                    other.name,
                                    t.topology_key
                                ));
                                break 'outer2;
                            }
                        }
                    }
                    found.unwrap_or_else(|| "a running pod's required anti-affinity matches this pod in this node's domain".to_owned())
                }
            }
        }
    };
    Some(d)
}

/// The volume filters' verdict on a node in plain words: the claim, the
/// volume and the label or term responsible.
fn explain_volumes(
    state: &ClusterState,
    info: &crate::pod_info::PodInfo,
    node: u32,
    reason: Option<Reason>,
) -> String {
    use crate::plugins::volume_binding::{BoundProblem, DelayedProblem, find};
    let entry = &state.nodes[node as usize];
    let Ok(pre) = volume_prefilter(state, info) else {
        return "a volume plugin rejects the pod on every node".to_owned();
    };
    match reason {
        Some(Reason::DiskConflict) => {
            for d in &info.volumes.disks {
                if let Some((used, _)) = entry.volumes.disks.iter().find(|(e, _)| d.conflicts(e)) {
                    let holder = state
                        .placed()
                        .filter(|(_, n)| *n == node)
                        .map(|(p, _)| p)
                        .find(|p| p.volumes.disks.contains(used))
                        .map(|p| format!("pod {}", p.key()))
                        .unwrap_or_else(|| "a pod".to_owned());
                    return format!(
                        "{} is already used by {holder} on this node, and the two mounts are not both read-only",
                        d.describe()
                    );
                }
            }
            "an inline disk of the pod is already in use on this node".to_owned()
        }
        Some(Reason::ReadWriteOncePodConflict) => {
            let claims = pre.restrictions.map(|r| r.in_use).unwrap_or_default();
            format!(
                "PersistentVolumeClaim(s) {} have access mode ReadWriteOncePod and another scheduled pod already uses them",
                claims.join(", ")
            )
        }
        Some(Reason::MaxVolumeCount) => {
            let new = pre.limits.unwrap_or_default();
            match node_volume_limits::exceeded(
                &new,
                &entry.volumes,
                state.storage.csi_limits.get(&entry.name),
            ) {
                Some((driver, attached, count, limit)) => format!(
                    "CSI driver {driver}: {attached} volume(s) already attached here plus {count} new one(s) of the pod exceed the node's limit of {limit} (CSINode {} spec.drivers[].allocatable.count)",
                    entry.name
                ),
                None => "a CSI driver's volume limit on this node would be exceeded".to_owned(),
            }
        }
        Some(Reason::VolumeZoneConflict) => {
            let topologies = pre.zone.unwrap_or_default();
            match volume_zone::filter(&topologies, &entry.labels) {
                Some(t) => {
                    let wanted: Vec<&str> = t.values.iter().map(String::as_str).collect();
                    let has = match volume_zone::node_value(t, &entry.labels) {
                        Some((k, v)) => format!("the node has {k}={v}"),
                        None => format!("the node has no label {:?}", t.key),
                    };
                    format!(
                        "PersistentVolumeClaim {} is bound to PersistentVolume {}, labelled {}={}; {has}",
                        t.claim,
                        t.pv,
                        t.key,
                        wanted.join("__")
                    )
                }
                None => "a bound volume's zone does not match the node".to_owned(),
            }
        }
        _ => {
            let Some(b) = pre.binding else {
                return "the pod's claims cannot be bound on this node".to_owned();
            };
            let (bound, delayed) = find(&state.storage, info, &b, &entry.name, &entry.labels);
            let mut parts = Vec::new();
            match bound {
                Some(BoundProblem::NodeAffinity { claim, pv }) => parts.push(format!(
                    "PersistentVolumeClaim {claim} is bound to PersistentVolume {pv}, whose spec.nodeAffinity does not match the node's labels {:?}",
                    entry.labels
                )),
                Some(BoundProblem::Missing { claim, pv }) => parts.push(format!(
                    "PersistentVolumeClaim {claim} is bound to PersistentVolume {pv}, which does not exist"
                )),
                None => {}
            }
            match delayed {
                Some(DelayedProblem::SelectedNode { claim, node }) => parts.push(format!(
                    "PersistentVolumeClaim {claim} waits for its volume on node {node} ({} annotation)",
                    crate::volumes::ANN_SELECTED_NODE
                )),
                Some(DelayedProblem::NoVolume { claim, class, why }) => parts.push(format!(
                    "PersistentVolumeClaim {claim} (StorageClass {class}, WaitForFirstConsumer): {why}"
                )),
                None => {}
            }
            if parts.is_empty() {
                "the pod's claims cannot be bound on this node".to_owned()
            } else {
                parts.join("; ")
            }
        }
    }
}

/// The filters of `version`'s default profile, as a list for a sentence
/// (`A, B and C`).
fn filter_names(version: crate::KubernetesVersion) -> String {
    let names: Vec<String> = crate::plugins::profile_for(version)
        .filters
        .iter()
        .map(|p| format!("{:?}", p.name()))
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// Which features the pod needs that the node does not declare (C.76).
fn explain_declared_features(
    info: &PodInfo,
    node: &crate::state::NodeEntry,
    version: crate::KubernetesVersion,
) -> String {
    use crate::node_features::declared_features;
    let known = declared_features(&node.declared_features, version);
    let missing: Vec<&str> = info
        .required_features
        .iter()
        .map(|f| f.name())
        .filter(|name| !known.contains(name))
        .collect();
    let declared = if node.declared_features.is_empty() {
        "declares no features (status.declaredFeatures is empty)".to_owned()
    } else {
        format!(
            "declares {} (status.declaredFeatures)",
            node.declared_features.join(", ")
        )
    };
    format!(
        "the pod needs the node feature{} {}, and the node {declared}",
        if missing.len() == 1 { "" } else { "s" },
        missing.join(", ")
    )
}

fn explain_ports(state: &ClusterState, info: &crate::pod_info::PodInfo, node: u32) -> String {
    let entry = &state.nodes[node as usize];
    for wanted in &info.host_ports {
        let Some(used) = entry.used_ports.conflict(wanted) else {
            continue;
        };
        let holder = state
            .placed()
            .filter(|(_, n)| *n == node)
            .map(|(p, _)| p)
            .find(|p| p.host_ports.contains(used))
            .map(|p| format!("pod {}", p.key()))
            .unwrap_or_else(|| "a pod".to_owned());
        return format!("host port {wanted} is taken: {holder} on this node uses {used}");
    }
    "a requested host port is already in use on this node".to_owned()
}

fn explain_node_affinity(pod: &Pod, labels: &std::collections::BTreeMap<String, String>) -> String {
    let spec = pod.spec.as_ref();
    if let Some(node_selector) = spec.and_then(|s| s.node_selector.as_ref())
        && let Some((k, v)) = set_selector_misses(node_selector, labels).next()
    {
        return match labels.get(k) {
            None => format!("nodeSelector requires {k}={v}, but the node has no label {k:?}"),
            Some(actual) => {
                format!("nodeSelector requires {k}={v}, but the node has {k}={actual}")
            }
        };
    }
    let terms = spec
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map_or(0, |t| t.node_selector_terms.len());
    if terms == 0 {
        "requiredDuringSchedulingIgnoredDuringExecution has no nodeSelectorTerms, which matches no node".to_owned()
    } else {
        format!(
            "none of the {terms} required node affinity term(s) matches the node's labels {labels:?} (empty or unparsable terms never match)"
        )
    }
}

/// [`diagnose`] for every node, in node-name order.
pub fn diagnose_all(state: &ClusterState, pod: &Pod, opts: &Options) -> Vec<Diagnosis> {
    let mut names: Vec<&str> = state.node_names().collect();
    names.sort_unstable();
    names
        .into_iter()
        .filter_map(|n| diagnose(state, pod, n, opts))
        .collect()
}

/// What the volume plugins' PreFilters computed (`None` = skipped).
#[derive(Default)]
struct VolumePre {
    restrictions: Option<volume_restrictions::Pre>,
    limits: Option<node_volume_limits::NewVolumes>,
    binding: Option<volume_binding::Pre>,
    zone: Option<Vec<volume_zone::PvTopology>>,
}

/// The PreFilters of VolumeRestrictions, NodeVolumeLimits, VolumeBinding
/// and VolumeZone, in that order; `Err` when one rejects every node.
fn volume_prefilter(state: &ClusterState, pod: &PodInfo) -> Result<VolumePre, String> {
    if !pod.volumes.any {
        return Ok(VolumePre::default());
    }
    let storage = &state.storage;
    Ok(VolumePre {
        restrictions: volume_restrictions::prefilter(storage, pod)?,
        limits: node_volume_limits::prefilter(storage, pod),
        binding: volume_binding::prefilter(storage, pod)?,
        zone: volume_zone::prefilter(storage, pod)?,
    })
}
