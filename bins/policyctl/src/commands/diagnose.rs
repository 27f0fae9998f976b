//! `diagnose --pod NAMESPACE/NAME`: for a Pending pod, per node, the first
//! requirement that keeps it off that node, in plain words.
//!
//! Two sources are combined:
//! - for a Velero data-mover pod (label `velero.io/exposer-pod-group` or an
//!   owning DataUpload/DataDownload), `affinity-translate`'s diagnosis: node
//!   affinity term by term (load affinity, OS, volume topology), the restore
//!   pin, taints, cordons, and whether a node-agent runs on the node. The
//!   fragment is recomputed from the owning DataUpload or DataDownload when
//!   its volume is in the input (so requirements are attributed to their
//!   origin), else read from the pod's own spec;
//! - for every pod, kube-scheduler's filters (`kube-scheduler-sim`) in the
//!   default profile's order: cordon, node name, taints, node affinity,
//!   host ports, resources (requests against allocatable, pod count),
//!   volumes (disk conflicts, CSI attach limits, claims and PV node
//!   affinity, PV zones), topology spread, pod (anti-)affinity.
//!
//! The first problem of the data-mover diagnosis comes first; kube-scheduler's
//! explanation is used when that diagnosis finds nothing.
//!
//! Preemption hint (C.60; preemption itself is not simulated): on a node
//! that rejects the pod only for host ports or resources (NodePorts or
//! NodeResourcesFit, not a request larger than the whole node), the pods
//! bound there with a lower `spec.priority` (absent = 0) are taken away; if
//! the pod then passes every filter, they are put back one by one, highest
//! priority first (then by `namespace/name`), each one kept when the pod
//! still fits. The pods left out are the victims kube-scheduler's default
//! preemption would pick on that node. A pod with `preemptionPolicy: Never`
//! gets no hint.

use std::collections::{BTreeMap, BTreeSet};

use affinity_translate::{NodeAgentConfig, NodeOs, PodFragment, diagnose as diagnose_fragment};
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kube_adapters::meta::namespace_or_default;
use kube_scheduler_sim::{
    ClusterState, Code, Options, Plugin, diagnose as diagnose_scheduling, nominated_node,
    scheduling_skip,
};
use serde_json::json;

use crate::cli::ObjectRef;
use crate::commands::CommandError;
use crate::commands::affinity::{Direction, fragment_for_pvc, node_agent_tolerations};
use crate::commands::schedule::{Cluster, require_pod};
use crate::manifest::{Inventory, ObjectKey};
use crate::output::{Output, table};

/// Label Velero puts on data-mover pods (A2.17b).
const EXPOSER_POD_GROUP: &str = velero_api::labels::EXPOSER_POD_GROUP;

/// The verdict for one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeFinding {
    /// Whether the pod can run on the node as far as these checks go.
    pub fits: bool,
    /// Every reason it cannot, data-mover reasons first.
    pub problems: Vec<String>,
    /// Lower-priority pods whose eviction would let the pod fit here
    /// (`namespace/name (priority N)`); empty when preemption would not help.
    pub preemption_victims: Vec<String>,
}

/// Diagnoses one pod on every node.
pub fn diagnose(
    config: &NodeAgentConfig,
    inventory: &Inventory,
    pod_ref: &ObjectRef,
    options: &Options,
) -> Result<BTreeMap<String, NodeFinding>, CommandError> {
    let pod = require_pod(inventory, pod_ref)?;
    if let Some(skip) = scheduling_skip(pod) {
        // kube-scheduler never tries the pod: no node is examined (C.70).
        return Ok(inventory
            .nodes
            .keys()
            .map(|node| {
                (
                    node.name.clone(),
                    NodeFinding {
                        fits: false,
                        problems: vec![skip.to_string()],
                        preemption_victims: Vec::new(),
                    },
                )
            })
            .collect());
    }
    let cluster = Cluster::from_inventory(inventory);
    let others: Vec<Pod> = cluster
        .pods
        .iter()
        .filter(|p| {
            !(p.metadata.namespace.as_deref() == Some(pod_ref.namespace.as_str())
                && p.metadata.name.as_deref() == Some(pod_ref.name.as_str()))
        })
        .cloned()
        .collect();
    let mut state =
        ClusterState::for_options(&cluster.nodes, &cluster.namespaces, &others, options).map_err(
            |error| CommandError::Input(format!("cannot diagnose pod {pod_ref}: {error}")),
        )?;
    state.set_storage(&cluster.storage);
    state.set_dra(&cluster.dra);
    let mut incoming = pod.clone();
    if let Some(spec) = incoming.spec.as_mut() {
        spec.node_name = None;
    }
    let data_mover = data_mover_fragment(config, inventory, pod)?.map(|data_mover| {
        let (running, _) = node_agent_nodes_or_all(inventory, Some(&pod_ref.namespace));
        diagnose_fragment(&data_mover.fragment, &cluster.nodes, &running)
    });
    let mut result = BTreeMap::new();
    for node in inventory.nodes.keys() {
        let mut problems: Vec<String> = data_mover
            .as_ref()
            .and_then(|d| d.nodes.iter().find(|v| v.node == node.name))
            .map(|verdict| verdict.problems.iter().map(ToString::to_string).collect())
            .unwrap_or_default();
        // For a data-mover pod, node affinity, nodeSelector, taints and
        // cordons are explained above, requirement by requirement; add
        // kube-scheduler's verdict only for what that diagnosis does not
        // cover (node name, host ports, resources, pod (anti-)affinity,
        // topology spread).
        if let Some(verdict) = diagnose_scheduling(&state, &incoming, &node.name, options)
            && !verdict.fits
            && !(data_mover.is_some()
                && matches!(
                    verdict.plugin,
                    Some(
                        Plugin::NodeAffinity | Plugin::TaintToleration | Plugin::NodeUnschedulable
                    )
                ))
        {
            problems.push(verdict.explanation);
        }
        let preemption_victims = if problems.is_empty() {
            Vec::new()
        } else {
            preemption_victims(&mut state, &incoming, &node.name, &others, options)
        };
        result.insert(
            node.name.clone(),
            NodeFinding {
                fits: problems.is_empty(),
                problems,
                preemption_victims,
            },
        );
    }
    Ok(result)
}

fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

fn pod_key(pod: &Pod) -> (String, String) {
    (
        namespace_or_default(pod.metadata.namespace.as_deref()).to_owned(),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}

/// Whether `incoming` passes every filter on `node`.
fn fits_on(state: &ClusterState, incoming: &Pod, node: &str, options: &Options) -> bool {
    state
        .evaluate(incoming, options)
        .is_ok_and(|r| r.feasible.iter().any(|n| n == node))
}

/// The preemption hint of the module documentation: the lower-priority pods
/// on `node` whose eviction lets `incoming` fit there. The state is left as
/// it was.
fn preemption_victims(
    state: &mut ClusterState,
    incoming: &Pod,
    node: &str,
    pods: &[Pod],
    options: &Options,
) -> Vec<String> {
    let preempts = incoming
        .spec
        .as_ref()
        .and_then(|s| s.preemption_policy.as_deref())
        != Some("Never");
    let Ok(result) = state.evaluate(incoming, options) else {
        return Vec::new();
    };
    let resolvable = result.unschedulable.get(node).is_some_and(|failure| {
        matches!(failure.plugin, Plugin::NodePorts | Plugin::NodeResourcesFit)
            && failure.code == Code::Unschedulable
    });
    if !preempts || !resolvable {
        return Vec::new();
    }
    let own = priority(incoming);
    let mut candidates: Vec<&Pod> = pods
        .iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
        .filter(|p| priority(p) < own)
        .filter(|p| {
            let (namespace, name) = pod_key(p);
            state.find_pod(&namespace, &name).is_some()
        })
        .collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    // Most important first: higher priority, then namespace/name.
    candidates.sort_by(|a, b| {
        priority(b)
            .cmp(&priority(a))
            .then_with(|| pod_key(a).cmp(&pod_key(b)))
    });
    for p in &candidates {
        let (namespace, name) = pod_key(p);
        state.remove_pod_named(&namespace, &name);
    }
    let mut victims = Vec::new();
    if fits_on(state, incoming, node, options) {
        for p in &candidates {
            if state.add_pod(p).is_err() {
                continue;
            }
            if !fits_on(state, incoming, node, options) {
                let (namespace, name) = pod_key(p);
                state.remove_pod_named(&namespace, &name);
                victims.push(*p);
            }
        }
    } else {
        for p in &candidates {
            // Put back: nothing is evicted.
            let _ = state.add_pod(p);
        }
        return Vec::new();
    }
    for p in &victims {
        let _ = state.add_pod(p);
    }
    let mut names: Vec<String> = victims
        .iter()
        .map(|p| {
            let (namespace, name) = pod_key(p);
            format!("{namespace}/{name} (priority {})", priority(p))
        })
        .collect();
    names.sort();
    names
}

/// A data-mover pod's fragment, with a note when it was recomputed without
/// the tolerations Velero copies from the node-agent DaemonSet.
struct DataMover {
    fragment: PodFragment,
    note: Option<String>,
}

/// The data-mover fragment of a data-mover pod, `None` for other pods.
/// Recomputed from the owning DataUpload or DataDownload, its tolerations
/// are those Velero gives the pod: the allowlisted ones of the node-agent
/// DaemonSet in the pod's namespace, then the OS ones (A2.27).
fn data_mover_fragment(
    config: &NodeAgentConfig,
    inventory: &Inventory,
    pod: &Pod,
) -> Result<Option<DataMover>, CommandError> {
    let owner = pod.metadata.owner_references.iter().flatten().find(|o| {
        o.api_version.starts_with("velero.io/")
            && matches!(o.kind.as_str(), "DataUpload" | "DataDownload")
    });
    let labelled = pod
        .metadata
        .labels
        .as_ref()
        .is_some_and(|labels| labels.contains_key(EXPOSER_POD_GROUP));
    if owner.is_none() && !labelled {
        return Ok(None);
    }
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let os = match pod
        .spec
        .as_ref()
        .and_then(|s| s.os.as_ref())
        .map(|os| os.name.as_str())
    {
        Some("windows") => NodeOs::Windows,
        _ => NodeOs::Linux,
    };
    if let Some(owner) = owner {
        let key = ObjectKey::namespaced(&namespace, &owner.name);
        let pvc_key = if owner.kind == "DataUpload" {
            inventory.data_uploads.get(&key).and_then(|du| {
                let spec = &du.object.spec;
                Some((
                    ObjectKey::namespaced(spec.source_namespace.clone()?, spec.source_pvc.clone()?),
                    Direction::Backup,
                ))
            })
        } else {
            inventory.data_downloads.get(&key).and_then(|dd| {
                let target = dd.object.spec.target_volume.as_ref()?;
                Some((
                    ObjectKey::namespaced(target.namespace.clone()?, target.pvc.clone()?),
                    Direction::Restore,
                ))
            })
        };
        if let Some((pvc_key, direction)) = pvc_key
            && let Some(pvc) = inventory.persistent_volume_claims.get(&pvc_key)
            && let Ok(fragment) = fragment_for_pvc(config, inventory, &pvc.object, direction, os)
            && fragment.affinity == pod.spec.as_ref().and_then(|s| s.affinity.clone())
        {
            let node_agent = node_agent_tolerations(inventory, Some(&namespace), os);
            return Ok(Some(DataMover {
                fragment: fragment.with_node_agent_tolerations(&node_agent.tolerations),
                note: node_agent.note,
            }));
        }
    }
    fragment_from_spec(
        pod.spec.as_ref(),
        os,
        owner.is_some_and(|o| o.kind == "DataDownload"),
    )
    .map(|fragment| {
        Some(DataMover {
            fragment,
            note: None,
        })
    })
}

/// A fragment read back from a pod spec (requirement origins unknown).
fn fragment_from_spec(
    spec: Option<&PodSpec>,
    os: NodeOs,
    restore: bool,
) -> Result<PodFragment, CommandError> {
    let node_selector = spec
        .and_then(|s| s.node_selector.clone())
        .filter(|selector| !selector.is_empty());
    let value = json!({
        "kind": if restore { "restore" } else { "backup" },
        "nodeOs": os,
        "storageClass": "",
        "loadAffinityIndex": null,
        "affinity": spec.and_then(|s| s.affinity.clone()),
        "nodeSelector": node_selector,
        "tolerations": spec.and_then(|s| s.tolerations.clone()).unwrap_or_default(),
        "waitingForFirstConsumer": false,
    });
    serde_json::from_value(value).map_err(|error| {
        CommandError::Input(format!(
            "cannot read the data-mover pod's scheduling fields: {error}"
        ))
    })
}

/// What a data-mover verdict says when the input has no node-agent pod at
/// all: whether one runs on each node is then unknown, not "no".
pub const NO_NODE_AGENT_PODS: &str = "the input has no node-agent pods (label name=node-agent or name=node-agent-windows), so whether a node-agent runs on each node is unknown and was not checked; add them (kubectl get pods -n velero -l name=node-agent -o yaml)";

/// Whether the input has any node-agent pod (label `name=node-agent` or
/// `name=node-agent-windows`, in any phase), optionally only in one
/// namespace.
pub fn node_agent_pods_in_input(inventory: &Inventory, namespace: Option<&str>) -> bool {
    inventory
        .pods
        .iter()
        .filter(|(key, _)| namespace.is_none_or(|ns| key.namespace == ns))
        .any(|(_, located)| is_node_agent(&located.object))
}

/// The nodes to treat as running a node-agent: those with a running and
/// ready node-agent pod, or, when the input has no node-agent pod at all,
/// every node (the check is skipped and [`NO_NODE_AGENT_PODS`] says so).
/// The flag is whether the check was made.
pub fn node_agent_nodes_or_all(
    inventory: &Inventory,
    namespace: Option<&str>,
) -> (BTreeSet<String>, bool) {
    if node_agent_pods_in_input(inventory, namespace) {
        (running_node_agents(inventory, namespace), true)
    } else {
        (
            inventory.nodes.keys().map(|key| key.name.clone()).collect(),
            false,
        )
    }
}

fn is_node_agent(pod: &Pod) -> bool {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get("name"))
        .is_some_and(|name| name == "node-agent" || name == "node-agent-windows")
}

/// Nodes where a Running and ready node-agent pod (label `name=node-agent`
/// or `name=node-agent-windows`) is, optionally only in one namespace.
pub fn running_node_agents(inventory: &Inventory, namespace: Option<&str>) -> BTreeSet<String> {
    inventory
        .pods
        .iter()
        .filter(|(key, _)| namespace.is_none_or(|ns| key.namespace == ns))
        .map(|(_, located)| &located.object)
        .filter(|p| is_node_agent(p))
        .filter(|p| is_running_and_ready(p))
        .filter_map(|p| p.spec.as_ref().and_then(|s| s.node_name.clone()))
        .collect()
}

fn is_running_and_ready(pod: &Pod) -> bool {
    let Some(status) = pod.status.as_ref() else {
        return false;
    };
    status.phase.as_deref() == Some("Running")
        && status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Runs the command.
pub fn run(
    config: &NodeAgentConfig,
    inventory: &Inventory,
    pod_ref: &ObjectRef,
    options: &Options,
) -> Result<Output, CommandError> {
    let findings = diagnose(config, inventory, pod_ref, options)?;
    let pod = require_pod(inventory, pod_ref)?;
    let phase = pod.status.as_ref().and_then(|s| s.phase.clone());
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    let schedulable: Vec<&String> = findings
        .iter()
        .filter(|(_, f)| f.fits)
        .map(|(n, _)| n)
        .collect();
    let skip = scheduling_skip(pod);
    let nominated = nominated_node(pod).map(str::to_owned);
    let mut document = json!({
        "pod": pod_ref.to_string(),
        "phase": phase,
        "nodeName": node,
        "schedulable": schedulable,
        "nodes": findings.iter().map(|(name, f)| {
            let mut node = json!({
                "fits": f.fits,
                "reason": f.problems.first(),
                "problems": f.problems,
            });
            if !f.preemption_victims.is_empty() {
                node["preemptionVictims"] = json!(f.preemption_victims);
            }
            (name.clone(), node)
        }).collect::<serde_json::Map<_, _>>(),
    });
    if let Some(skip) = &skip {
        document["skipped"] = json!({"kind": skip.label(), "message": skip.to_string()});
        return Ok(Output {
            document,
            table: format!(
                "Pod {pod_ref} (phase {}): kube-scheduler does not try to place it, so no node is examined:\n{skip}\n",
                phase.as_deref().unwrap_or("unknown"),
            ),
        });
    }
    if let Some(nominated) = &nominated {
        document["nominatedNodeName"] = json!(nominated);
    }
    let data_mover = data_mover_fragment(config, inventory, pod)?;
    let unchecked_agents =
        data_mover.is_some() && !node_agent_pods_in_input(inventory, Some(&pod_ref.namespace));
    let mut notes: Vec<String> = Vec::new();
    if unchecked_agents {
        document["nodeAgents"] = json!("not in input");
        notes.push(NO_NODE_AGENT_PODS.to_owned());
    }
    notes.extend(data_mover.and_then(|d| d.note));
    if !notes.is_empty() {
        document["notes"] = json!(notes);
    }
    let mut text = format!(
        "Pod {pod_ref} (phase {}): {} node(s) can run it{}\n\n",
        phase.as_deref().unwrap_or("unknown"),
        schedulable.len(),
        if schedulable.is_empty() {
            String::new()
        } else {
            format!(
                ": {}",
                schedulable
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    if let Some(nominated) = &nominated {
        let fits_there = findings.get(nominated).is_some_and(|f| f.fits);
        text.truncate(text.trim_end().len());
        text.push_str(&format!(
            "\nNominated node {nominated} (status.nominatedNodeName): {}\n\n",
            if fits_there {
                "the pod fits there, and kube-scheduler takes it without comparing scores"
            } else {
                "the pod does not fit there, so kube-scheduler tries every node"
            }
        ));
    }
    text.push_str(&table(
        &["node", "fits", "first failing requirement"],
        findings.iter().map(|(name, f)| {
            [
                name.clone(),
                if f.fits { "yes" } else { "no" }.to_owned(),
                f.problems.first().cloned().unwrap_or_default(),
            ]
        }),
    ));
    for note in &notes {
        text.push_str(&format!("\nNote: {note}.\n"));
    }
    let hints: Vec<(&String, &NodeFinding)> = findings
        .iter()
        .filter(|(_, f)| !f.preemption_victims.is_empty())
        .collect();
    if !hints.is_empty() {
        text.push_str(
            "\nPreemption could make room (a hint: preemption is not simulated); evicting these lower-priority pods would let the pod fit:\n",
        );
        for (node, f) in hints {
            text.push_str(&format!("  {node}: {}\n", f.preemption_victims.join(", ")));
        }
    }
    Ok(Output {
        document,
        table: text,
    })
}
