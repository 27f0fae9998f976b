//! Scheduling diagnosis of a data-mover pod (documented on [`diagnose()`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::core::v1::{Node, NodeSelectorRequirement, NodeSelectorTerm};
use kube_validation::node_selector::{field_requirement_holds, requirement_holds, term_matches};
use kube_validation::set_selector_misses;
use kube_validation::taints;
use serde::Serialize;

use crate::fragment::PodFragment;
use crate::translate::render_requirement;

/// Where a failing requirement comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Origin {
    /// The selected `loadAffinity` entry.
    LoadAffinity {
        /// Its index in the configuration.
        index: Option<usize>,
    },
    /// The OS requirement every data-mover pod carries (A2.16).
    Os,
    /// The vSphere fast-provisioning hostname rule (A2.16).
    FastProvisioning,
    /// A fragment whose origin is unknown (e.g. read back from JSON).
    Unknown,
}

/// One reason a node cannot run the pod.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
#[non_exhaustive]
pub enum Problem {
    /// No node-agent pod runs on the node (W2.6).
    NodeAgentNotRunning,
    /// The node is cordoned (`spec.unschedulable`).
    Cordoned,
    /// A `nodeSelector` entry does not match (restore pinned to a node).
    NodeSelector {
        /// Label key.
        key: String,
        /// Required value.
        expected: String,
        /// The node's value, if any.
        actual: Option<String>,
    },
    /// A requirement of the node affinity does not hold.
    Requirement {
        /// Where it comes from.
        origin: Origin,
        /// The requirement, rendered (`key Op [values]`).
        requirement: String,
        /// The node's value for the key, if any.
        actual: Option<String>,
    },
    /// No term of the volume topology (the source PV's node affinity)
    /// matches: the volume cannot be used on this node.
    VolumeTopology {
        /// Per term, the first requirement that fails.
        failing: Vec<String>,
    },
    /// The node affinity has no term at all (a topology without terms).
    NoTerms,
    /// A taint that no toleration of the pod tolerates.
    Taint {
        /// `key=value:Effect`, or `key:Effect` without a value
        /// (`kube_validation::taints::describe`).
        taint: String,
    },
}

/// The verdict for one node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeVerdict {
    /// Node name.
    pub node: String,
    /// Why the pod cannot run there (empty: it can, as far as these rules go).
    pub problems: Vec<Problem>,
}

/// The verdict for every node, in node-name order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnosis {
    /// One verdict per node.
    pub nodes: Vec<NodeVerdict>,
}

impl Diagnosis {
    /// Names of the nodes that can run the pod.
    pub fn schedulable(&self) -> Vec<&str> {
        self.nodes
            .iter()
            .filter(|n| n.problems.is_empty())
            .map(|n| n.node.as_str())
            .collect()
    }
}

/// Explains, for each node, what keeps the fragment's pod off it: node
/// affinity (load affinity, OS, fast-provisioning, volume topology),
/// `nodeSelector`, untolerated `NoSchedule`/`NoExecute` taints, a cordon,
/// and a missing node-agent (`node_agent_nodes`: names of the nodes where a
/// node-agent pod runs). Resources, ports and pod (anti-)affinity are not
/// considered.
///
/// "Why can't this data-mover pod schedule?" — for every node, which part of
/// a [`PodFragment`] it fails, in plain words. Velero only logs a diagnosis
/// after the 30-minute prepare timeout (A2.19, A2.25, W2.5); this answers
/// before the pod is even created.
pub fn diagnose(
    fragment: &PodFragment,
    nodes: &[Node],
    node_agent_nodes: &BTreeSet<String>,
) -> Diagnosis {
    let mut verdicts: Vec<NodeVerdict> = nodes
        .iter()
        .map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let empty = BTreeMap::new();
            let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
            let mut problems = Vec::new();
            if !node_agent_nodes.contains(&name) {
                problems.push(Problem::NodeAgentNotRunning);
            }
            if !taints::cordon_admits(node, &fragment.tolerations) {
                problems.push(Problem::Cordoned);
            }
            if let Some(node_selector) = &fragment.node_selector {
                for (key, expected) in set_selector_misses(node_selector, labels) {
                    problems.push(Problem::NodeSelector {
                        key: key.clone(),
                        expected: expected.clone(),
                        actual: labels.get(key).cloned(),
                    });
                }
            }
            affinity_problems(fragment, &name, labels, &mut problems);
            let node_taints = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_deref())
                .unwrap_or_default();
            for taint in taints::untolerated(node_taints, &fragment.tolerations) {
                problems.push(Problem::Taint {
                    taint: taints::describe(taint),
                });
            }
            NodeVerdict {
                node: name,
                problems,
            }
        })
        .collect();
    verdicts.sort_by(|a, b| a.node.cmp(&b.node));
    Diagnosis { nodes: verdicts }
}

fn affinity_problems(
    fragment: &PodFragment,
    name: &str,
    labels: &BTreeMap<String, String>,
    problems: &mut Vec<Problem>,
) {
    let Some(selector) = fragment
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
    else {
        return;
    };
    let terms = &selector.node_selector_terms;
    if terms.is_empty() {
        problems.push(Problem::NoTerms);
        return;
    }
    let layout = &fragment.layout;
    let shared = layout.load_affinity + layout.os + layout.fast_provisioning;
    let expressions = |term: &NodeSelectorTerm| term.match_expressions.clone().unwrap_or_default();
    let layout_fits = layout.os == 1
        && match &layout.topology {
            Some(own) => {
                own.len() == terms.len()
                    && terms
                        .iter()
                        .zip(own)
                        .all(|(t, n)| expressions(t).len() == n + shared)
            }
            None => terms.len() == 1 && expressions(&terms[0]).len() == shared,
        };
    if !layout_fits {
        // Origin unknown: report per term what fails.
        if !terms.iter().any(|t| term_matches(t, name, labels)) {
            for term in terms {
                for requirement in expressions(term) {
                    push_requirement(Origin::Unknown, &requirement, labels, problems);
                }
            }
        }
        return;
    }
    let first = &terms[0];
    let first_expressions = expressions(first);
    let own_first = layout.topology.as_ref().map_or(0, |o| o[0]);
    let shared_requirements = &first_expressions[own_first..];
    for (i, requirement) in shared_requirements.iter().enumerate() {
        let origin = if i < layout.load_affinity {
            Origin::LoadAffinity {
                index: fragment.load_affinity_index,
            }
        } else if i < layout.load_affinity + layout.os {
            Origin::Os
        } else {
            Origin::FastProvisioning
        };
        push_requirement(origin, requirement, labels, problems);
    }
    if let Some(own) = &layout.topology {
        let mut failing = Vec::new();
        let mut any = false;
        for (term, n) in terms.iter().zip(own) {
            let topology_term = NodeSelectorTerm {
                match_expressions: Some(expressions(term)[..*n].to_vec()),
                match_fields: term.match_fields.clone(),
            };
            // The PV term's own part, matched as kube-scheduler matches a
            // term (a node without a name has no fields to check). Empty, it
            // adds nothing to the pod's term, which also carries the OS
            // requirement, so it holds.
            let own_is_empty = *n == 0
                && topology_term
                    .match_fields
                    .as_ref()
                    .is_none_or(Vec::is_empty);
            let holds = own_is_empty || term_matches(&topology_term, name, labels);
            if holds {
                any = true;
                break;
            }
            failing.push(first_failure(&topology_term, name, labels));
        }
        if !any {
            problems.push(Problem::VolumeTopology { failing });
        }
    }
}

fn first_failure(term: &NodeSelectorTerm, name: &str, labels: &BTreeMap<String, String>) -> String {
    for requirement in term.match_expressions.iter().flatten() {
        if requirement_holds(requirement, labels) != Some(true) {
            return format!(
                "{} (node has {})",
                render_requirement(requirement),
                describe(labels.get(&requirement.key), &requirement.key)
            );
        }
    }
    for field in term.match_fields.iter().flatten() {
        if field_requirement_holds(field, name) != Some(true) {
            return format!("field {} (node is {name})", render_requirement(field));
        }
    }
    "empty term".to_owned()
}

fn describe(actual: Option<&String>, key: &str) -> String {
    match actual {
        Some(v) => format!("{key}={v}"),
        None => format!("no {key} label"),
    }
}

fn push_requirement(
    origin: Origin,
    requirement: &NodeSelectorRequirement,
    labels: &BTreeMap<String, String>,
    problems: &mut Vec<Problem>,
) {
    if requirement_holds(requirement, labels) != Some(true) {
        problems.push(Problem::Requirement {
            origin,
            requirement: render_requirement(requirement),
            actual: labels.get(&requirement.key).cloned(),
        });
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NodeAgentNotRunning => f.write_str(
                "no node-agent runs on this node, so the data mover could not start here (Velero waits for the 30-minute prepare timeout)",
            ),
            Self::Cordoned => f.write_str("the node is cordoned (unschedulable)"),
            Self::NodeSelector { key, expected, actual } => write!(
                f,
                "the pod is pinned to {key}={expected} (the restore PVC's selected node), but the node has {}",
                describe(actual.as_ref(), key)
            ),
            Self::Requirement { origin, requirement, actual } => {
                let key = requirement.split(' ').next().unwrap_or_default();
                let what = match origin {
                    Origin::LoadAffinity { index: Some(i) } => format!("loadAffinity[{i}] requires"),
                    Origin::LoadAffinity { index: None } => "the load affinity requires".to_owned(),
                    Origin::Os => "the data-mover OS requirement is".to_owned(),
                    Origin::FastProvisioning => {
                        "fast provisioning keeps the pod off nodes the volume is attached to:".to_owned()
                    }
                    Origin::Unknown => "the node affinity requires".to_owned(),
                };
                write!(f, "{what} {requirement}, but the node has {}", describe(actual.as_ref(), key))
            }
            Self::VolumeTopology { failing } => write!(
                f,
                "the volume is not reachable from this node: no term of the PersistentVolume's node affinity matches ({})",
                failing.join("; ")
            ),
            Self::NoTerms => f.write_str("the volume topology has no terms, so no node can host the pod"),
            Self::Taint { taint } => write!(f, "the node has taint {taint}, which the pod does not tolerate"),
        }
    }
}

impl fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ok = self.schedulable();
        writeln!(
            f,
            "{} of {} nodes can run the data-mover pod",
            ok.len(),
            self.nodes.len()
        )?;
        for verdict in &self.nodes {
            if verdict.problems.is_empty() {
                writeln!(f, "node {}: ok", verdict.node)?;
            } else {
                writeln!(f, "node {}:", verdict.node)?;
                for problem in &verdict.problems {
                    writeln!(f, "  - {problem}")?;
                }
            }
        }
        Ok(())
    }
}
