//! The pass: from the index to the Node label patches and the audit, a pure
//! function.
//!
//! 1. For every Node with host information, the label plan of
//!    [`anti_affinity_placement::labels::HostLabelConfig::plan_node`]
//!    (sanitised values; only keys recorded in the bookkeeping annotation are
//!    ever changed or removed; foreign labels are never touched); with
//!    `--sync-machine-labels`, merged with the plan that copies its Machine's
//!    managed labels ([`anti_affinity_placement::labels::MachineLabelSync`],
//!    B.5, B.8; sets win over removals, the host label's value over the
//!    Machine's), except on Nodes that show Cluster API's own sync: those
//!    are left to it ([`crate::capi_sync`], B.9).
//! 2. The audit ([`anti_affinity_placement::labels::audit`]) of the Nodes
//!    *as they will be after the patches*: replicas of one workload sharing
//!    a physical host (attributed to their owner), Nodes without the label,
//!    and the status summary.
//! 3. With `--audit-cluster-modules`, the cluster-module audit
//!    ([`crate::modules::audit`]).

use std::collections::BTreeMap;

use anti_affinity_placement::labels::{HostLabelConfig, NodeLabelPlan, NodeLabels, audit_views};
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod};
use kube::{Resource, ResourceExt};
use kube_adapters::capi::machine_label_plans;

use crate::capi_sync;
use crate::config::{CONTROLLER_NAME, Config, HostSource};
use crate::index::HostIndex;
use crate::modules::{self, ModuleAudit};
use crate::report::{self, StatusSummary, Violation};

/// A Node label patch.
#[derive(Clone, Debug, PartialEq)]
pub struct NodePatch {
    /// The Node.
    pub node: String,
    /// The physical host it runs on, when known (a patch may only sync
    /// Machine labels).
    pub host: Option<String>,
    /// The resourceVersion the plan was made from (the precondition).
    pub resource_version: Option<String>,
    /// What to change.
    pub labels: NodeLabelPlan,
}

/// A Node lacking a host label, to report.
#[derive(Clone, Debug, PartialEq)]
pub struct Unlabelled {
    /// The Node.
    pub node: String,
    /// Where the Event goes.
    pub reference: ObjectReference,
    /// The Event note.
    pub note: String,
}

/// What one pass decides.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Node patches, by Node name.
    pub patches: Vec<NodePatch>,
    /// Replicas sharing a physical host under a required rule, sorted.
    pub violations: Vec<Violation>,
    /// Nodes lacking a host label, sorted.
    pub unlabelled: Vec<Unlabelled>,
    /// Nodes the host source says nothing about.
    pub without_host_information: usize,
    /// The status ConfigMap content.
    pub summary: StatusSummary,
    /// Why the inventory cannot be used now (the last good one is used).
    pub inventory_problem: Option<String>,
    /// The cluster-module audit, with `--audit-cluster-modules`.
    pub modules: Option<ModuleAudit>,
    /// With `--sync-machine-labels`: Nodes whose Machine labels are left
    /// to Cluster API's own sync, with the evidence, sorted by Node.
    pub sync_deferred: Vec<(String, String)>,
}

/// `machines` or `inventory NS/NAME (KEY)`.
pub fn source_name(source: &HostSource) -> String {
    match source {
        HostSource::Machines => "machines".into(),
        HostSource::Inventory { configmap, key } => format!("inventory {configmap} ({key})"),
    }
}

/// The pass (see the module docs).
pub fn plan(config: &Config, index: &HostIndex) -> Plan {
    let hosts = index.hosts();
    let mut synced = match &config.machine_sync {
        Some(sync) => machine_label_plans(index.nodes(), index.machines(), sync).nodes,
        None => BTreeMap::new(),
    };
    let mut sync_deferred = Vec::new();
    if config.machine_sync.is_some() {
        for node in index.nodes() {
            if let Some(why) = capi_sync::cluster_api_syncs(node, CONTROLLER_NAME) {
                let name = node.name_any();
                synced.remove(&name);
                sync_deferred.push((name, why));
            }
        }
        sync_deferred.sort();
    }
    let (patches, patched_labels) = label_plans(&config.labels, index.nodes(), &hosts, &mut synced);
    // Every Node as it will be once the patches are made: the planned labels
    // of the patched ones, the index's own of the rest (nothing is copied).
    let nodes: Vec<NodeLabels<'_>> = index
        .nodes()
        .filter_map(NodeLabels::of)
        .map(|node| match patched_labels.get(node.name) {
            Some(labels) => NodeLabels { labels, ..node },
            None => node,
        })
        .collect();
    let result = audit_views(&nodes, index.pods(), config.labels.keys(), &hosts);
    let by_key: BTreeMap<String, &Pod> = index.pods().map(|p| (report::pod_key(p), p)).collect();
    let violations = report::violations(&result, &by_key);
    let without_host_information = nodes
        .iter()
        .filter(|n| hosts.get(n.name).is_none_or(String::is_empty))
        .count();
    let keys: Vec<String> = config
        .labels
        .keys()
        .iter()
        .map(|k| k.as_str().to_owned())
        .collect();
    let source = source_name(&config.source);
    let unlabelled = result
        .unlabelled_nodes
        .iter()
        .filter_map(|name| {
            let node = index.node(name)?;
            let why = if hosts.get(name).is_some_and(|h| !h.is_empty()) {
                "the controller could not label it yet"
            } else {
                "the host information source has no host for it"
            };
            Some(Unlabelled {
                node: name.clone(),
                reference: node.object_ref(&()),
                note: format!(
                    "Node lacks host label(s) {}: {why} ({source}); anti-affinity and topology spread on these keys ignore it",
                    keys.join(", ")
                ),
            })
        })
        .collect();
    let summary = StatusSummary {
        source,
        label_keys: keys,
        nodes: nodes.len(),
        nodes_with_host_information: nodes.len() - without_host_information,
        unlabelled_nodes: result.unlabelled_nodes.clone(),
        shared_hosts: report::summary_violations(&violations),
        preferred_sharing: result.preferred_summary(),
    };
    Plan {
        patches,
        violations,
        unlabelled,
        without_host_information,
        summary,
        inventory_problem: index.inventory_problem().map(str::to_owned),
        modules: config.audit_cluster_modules.then(|| modules::audit(index)),
        sync_deferred,
    }
}

/// The patches (host labels merged with the Machine label sync plans in
/// `synced`, which are taken), and the labels each patched Node will have
/// once they are made, by Node name.
fn label_plans<'a>(
    labels: &HostLabelConfig,
    nodes: impl Iterator<Item = &'a Node>,
    hosts: &BTreeMap<String, String>,
    synced: &mut BTreeMap<String, NodeLabelPlan>,
) -> (Vec<NodePatch>, BTreeMap<String, BTreeMap<String, String>>) {
    let mut patches = Vec::new();
    let mut patched_labels = BTreeMap::new();
    for node in nodes {
        let name = node.name_any();
        let host = hosts.get(&name).filter(|h| !h.is_empty());
        let host_plan = host.map(|host| labels.plan_node(node, host));
        let plan = match (host_plan, synced.remove(&name)) {
            (Some(host_plan), Some(sync_plan)) => host_plan.merge(sync_plan),
            (Some(plan), None) | (None, Some(plan)) => plan,
            (None, None) => continue,
        };
        if plan.is_empty() {
            continue;
        }
        let mut after = node.metadata.labels.clone().unwrap_or_default();
        let mut annotations = node.metadata.annotations.clone().unwrap_or_default();
        plan.apply(&mut after, &mut annotations);
        patched_labels.insert(name.clone(), after);
        patches.push(NodePatch {
            node: name,
            host: host.cloned(),
            resource_version: node.resource_version(),
            labels: plan,
        });
    }
    (patches, patched_labels)
}
