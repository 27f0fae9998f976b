//! Audit: replicas of one anti-affinity group that share a physical
//! host, and Nodes without the host label (which silently defeat
//! anti-affinity: a node missing the topology key is never rejected, C.13).
//!
//! A pod takes part when it is bound (`spec.nodeName`), not finished, and its
//! pod anti-affinity (required or preferred) or one of its topology spread
//! constraints uses one of our host keys as `topologyKey`. Replicas are
//! grouped by namespace and controller owner (the owner reference with
//! `controller: true`, else the first one); pods without owner by namespace
//! and the label selector of the first such term. A pod's host is the
//! sanitised name from the host information (node → host) when known, else
//! the Node's label value for the first host key it carries. Each group with
//! two or more pods on one host yields one entry; entries are sorted by host,
//! then pods. Each entry says whether the group's rule on the host key is
//! required (a required anti-affinity term or a `DoNotSchedule` spread
//! constraint: sharing means a label problem) or only preferred (sharing is
//! allowed by the rule).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod, PodSpec};
use kube_validation::format_label_selector;
use serde::Serialize;

use super::key::LabelKey;
use super::sanitize::sanitize_label_value;

/// How strongly a group's rule keeps its replicas apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RuleStrength {
    /// A required anti-affinity term (`requiredDuringScheduling...`) or a
    /// `DoNotSchedule` spread constraint: kube-scheduler refuses a second
    /// replica on the host while the host is labelled, so a shared host
    /// means a missing or wrong label.
    #[default]
    Required,
    /// Only a preferred anti-affinity term or a `ScheduleAnyway` spread
    /// constraint: kube-scheduler may put replicas together when it must,
    /// so a shared host is allowed by the rule.
    Preferred,
}

impl RuleStrength {
    /// `required` or `preferred`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleStrength::Required => "required",
            RuleStrength::Preferred => "preferred",
        }
    }
}

/// Pods of one anti-affinity group on one host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharedHost {
    /// The host (label value form).
    pub host: String,
    /// `namespace/name` of the pods, sorted.
    pub pods: Vec<String>,
    /// Whether the group's rule on the host key is required or only
    /// preferred (the strongest rule of its pods).
    pub rule: RuleStrength,
    /// The group: `namespace` and `owner KIND/NAME`, or the selector of
    /// pods without owner.
    pub group: String,
}

/// Audit result; serialises as `{unlabelledNodes: [...], sharedHosts: [{host, pods}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Audit {
    /// Nodes missing (or with an empty value for) any host key, sorted.
    pub unlabelled_nodes: Vec<String>,
    /// Replicas sharing a host.
    pub shared_hosts: Vec<SharedHost>,
}

impl Audit {
    /// The shared hosts whose group has a required rule on a host key:
    /// each one a label problem or a scheduling anomaly to act on.
    pub fn required_sharing(&self) -> impl Iterator<Item = &SharedHost> {
        self.shared_hosts
            .iter()
            .filter(|shared| shared.rule == RuleStrength::Required)
    }

    /// The groups whose rules on the host keys are only preferred, each
    /// summarised over every host its replicas share (sharing is what a
    /// preferred rule allows once replicas outnumber hosts), sorted by
    /// group.
    pub fn preferred_summary(&self) -> Vec<PreferredGroup> {
        let mut groups: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for shared in &self.shared_hosts {
            if shared.rule == RuleStrength::Preferred {
                let entry = groups.entry(shared.group.as_str()).or_default();
                entry.0 += 1;
                entry.1 += shared.pods.len();
            }
        }
        groups
            .into_iter()
            .map(|(group, (hosts, pods))| PreferredGroup {
                group: group.to_owned(),
                hosts,
                pods,
            })
            .collect()
    }
}

/// The replicas of one group whose rule on the host keys is only
/// preferred, over every host they share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreferredGroup {
    /// The group (`namespace owner KIND/NAME`, or its selector).
    pub group: String,
    /// Hosts with two or more of its replicas.
    pub hosts: usize,
    /// Replicas on those hosts.
    pub pods: usize,
}

/// The selector (debug form) of the first term of `spec` that spreads over
/// one of `keys` and the strength of the strongest such rule, or `None` if
/// no term does.
fn host_scoped_term(spec: &PodSpec, keys: &[LabelKey]) -> Option<(String, RuleStrength)> {
    let uses = |topology_key: &str| keys.iter().any(|k| k.as_str() == topology_key);
    let selector = host_scoped_selector(spec, keys)?;
    let required_anti = spec
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .into_iter()
        .flatten()
        .any(|t| uses(&t.topology_key));
    let hard_spread = spec
        .topology_spread_constraints
        .iter()
        .flatten()
        .any(|c| uses(&c.topology_key) && c.when_unsatisfiable == "DoNotSchedule");
    let strength = if required_anti || hard_spread {
        RuleStrength::Required
    } else {
        RuleStrength::Preferred
    };
    Some((selector, strength))
}

fn host_scoped_selector(spec: &PodSpec, keys: &[LabelKey]) -> Option<String> {
    let uses = |topology_key: &str| keys.iter().any(|k| k.as_str() == topology_key);
    let anti = spec
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.as_ref());
    let required = anti
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .into_iter()
        .flatten()
        .find(|t| uses(&t.topology_key))
        .map(|t| format_label_selector(t.label_selector.as_ref()));
    let preferred = || {
        anti.and_then(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .into_iter()
        .flatten()
        .find(|t| uses(&t.pod_affinity_term.topology_key))
        .map(|t| format_label_selector(t.pod_affinity_term.label_selector.as_ref()))
    };
    let spread = || {
        spec.topology_spread_constraints
            .iter()
            .flatten()
            .find(|c| uses(&c.topology_key))
            .map(|c| format_label_selector(c.label_selector.as_ref()))
    };
    required.or_else(preferred).or_else(spread)
}

fn group_of(pod: &Pod, selector: String) -> (String, String) {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let owners = pod.metadata.owner_references.as_deref().unwrap_or_default();
    let owner = owners
        .iter()
        .find(|o| o.controller == Some(true))
        .or_else(|| owners.first());
    match owner {
        Some(o) => (namespace, format!("owner {}/{}", o.kind, o.name)),
        None => (namespace, format!("selector {selector}")),
    }
}

/// A Node as the audit reads it: its name and its labels. A controller
/// that plans label changes audits the Nodes as they will be by pointing
/// at the planned labels, without copying the Nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLabels<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.labels`.
    pub labels: &'a BTreeMap<String, String>,
}

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

impl<'a> NodeLabels<'a> {
    /// The view of a Node, `None` for a Node without a name (the audit
    /// cannot name it, and no pod can be bound to it).
    pub fn of(node: &'a Node) -> Option<Self> {
        Some(Self {
            name: node.metadata.name.as_deref()?,
            labels: node.metadata.labels.as_ref().unwrap_or(&NO_LABELS),
        })
    }

    fn label(&self, key: &LabelKey) -> Option<&'a str> {
        self.labels
            .get(key.as_str())
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// Audit nodes and pods against the host keys (`keys` non-empty; the caller
/// passes the configured keys).
pub fn audit(
    nodes: &[Node],
    pods: &[Pod],
    keys: &[LabelKey],
    host_of_node: &BTreeMap<String, String>,
) -> Audit {
    let views: Vec<NodeLabels<'_>> = nodes.iter().filter_map(NodeLabels::of).collect();
    audit_views(&views, pods, keys, host_of_node)
}

/// [`audit`] of Node views and borrowed pods: the same result, without
/// owning either.
pub fn audit_views<'a>(
    nodes: &[NodeLabels<'_>],
    pods: impl IntoIterator<Item = &'a Pod>,
    keys: &[LabelKey],
    host_of_node: &BTreeMap<String, String>,
) -> Audit {
    let mut unlabelled_nodes: Vec<String> = nodes
        .iter()
        .filter(|n| keys.iter().any(|k| n.label(k).is_none()))
        .map(|n| n.name.to_owned())
        .collect();
    unlabelled_nodes.sort();
    unlabelled_nodes.dedup();

    let labelled_host: BTreeMap<&str, &str> = nodes
        .iter()
        .filter_map(|n| Some((n.name, keys.iter().find_map(|k| n.label(k))?)))
        .collect();
    let host_of = |node: &str| -> Option<String> {
        host_of_node
            .get(node)
            .map(|h| sanitize_label_value(h))
            .or_else(|| labelled_host.get(node).map(|h| (*h).to_owned()))
    };

    // (group, host) → pods, and each group's strongest rule
    let mut placed: BTreeMap<((String, String), String), Vec<String>> = BTreeMap::new();
    let mut strength: BTreeMap<(String, String), RuleStrength> = BTreeMap::new();
    for pod in pods {
        let Some(spec) = pod.spec.as_ref() else {
            continue;
        };
        let finished = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .is_some_and(|p| p == "Succeeded" || p == "Failed");
        let Some(node) = spec.node_name.as_deref() else {
            continue;
        };
        if finished {
            continue;
        }
        let Some((selector, rule)) = host_scoped_term(spec, keys) else {
            continue;
        };
        let Some(host) = host_of(node) else { continue };
        let name = format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        );
        let group = group_of(pod, selector);
        let entry = strength.entry(group.clone()).or_insert(rule);
        *entry = (*entry).min(rule);
        placed.entry((group, host)).or_default().push(name);
    }
    let mut shared_hosts: Vec<SharedHost> = placed
        .into_iter()
        .filter(|(_, pods)| pods.len() > 1)
        .map(|((group, host), mut pods)| {
            pods.sort();
            SharedHost {
                host,
                pods,
                rule: strength.get(&group).copied().unwrap_or_default(),
                group: format!("{} {}", group.0, group.1),
            }
        })
        .collect();
    shared_hosts.sort_by(|a, b| (&a.host, &a.pods).cmp(&(&b.host, &b.pods)));
    Audit {
        unlabelled_nodes,
        shared_hosts,
    }
}
