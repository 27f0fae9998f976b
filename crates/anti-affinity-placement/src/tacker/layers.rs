//! The three layers of Tacker's hardware-aware affinity joined (E.8):
//! compute hosts → workers (the server list, and the Nodes' `CIS-node`
//! labels) → the CNF's pods, whose anti-affinity on `CIS-node` is what
//! keeps them on different hardware.

use std::collections::{BTreeMap, BTreeSet};

use super::plan::{Plan, Server};

/// How a workload's pods keep apart on the host label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum HostRule {
    /// A required anti-affinity term on the host label.
    Required,
    /// Only preferred terms on it.
    Preferred,
}

/// A workload of the CNF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CnfWorkload {
    /// `kind/namespace/name`.
    pub name: String,
    /// Desired replicas.
    pub replicas: u32,
    /// Its pods' anti-affinity on the host label, if any.
    pub rule: Option<HostRule>,
}

/// A pod of the CNF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CnfPod {
    /// `namespace/name`.
    pub name: String,
    /// The workload it belongs to (`kind/namespace/name`), if known.
    pub workload: Option<String>,
    /// The Node it runs on, if bound.
    pub node: Option<String>,
}

/// A Node, its host label and its addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelledNode {
    /// The Node's name.
    pub name: String,
    /// Its host label's value.
    pub host_label: Option<String>,
    /// Its `status.addresses` (any type).
    pub addresses: Vec<String>,
}

/// One workload across the layers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadLayer {
    /// `kind/namespace/name`.
    pub workload: String,
    /// Desired replicas.
    pub replicas: u32,
    /// Its rule on the host label.
    pub rule: Option<HostRule>,
    /// Distinct host-label values on the Nodes: under a required rule, at
    /// most one replica per value, and the rest only on unlabelled Nodes.
    pub labelled_hosts: u32,
    /// Replicas a required rule cannot place on a labelled Node
    /// (`replicas - labelled_hosts`, 0 without a required rule).
    pub beyond_labelled_hosts: u32,
    /// Its bound pods per compute host: the server list's host of the
    /// Node's server (by address, else by name or Tacker's guess of the
    /// name), else the Node's label, else `?`.
    pub pods_per_host: BTreeMap<String, Vec<String>>,
    /// Compute hosts holding more than one of its pods although the rule
    /// is required (labels stale or missing let them meet).
    pub shared_hosts: Vec<String>,
}

/// Joins the server list, the plan's workers, the Nodes and the CNF.
pub fn join_layers(
    plan: &Plan,
    servers: &[Server],
    nodes: &[LabelledNode],
    workloads: &[CnfWorkload],
    pods: &[CnfPod],
) -> Vec<WorkloadLayer> {
    let labelled: BTreeSet<&str> = nodes
        .iter()
        .filter_map(|n| n.host_label.as_deref())
        .collect();
    let labelled_hosts = u32::try_from(labelled.len()).unwrap_or(u32::MAX);
    // A Node's compute host: its server's (an address in common, else
    // named as the Node or as Tacker's guess of it), else its label.
    let host_of = |node: &str| -> String {
        let labelled = nodes.iter().find(|n| n.name == node);
        let by_address = labelled.and_then(|n| {
            servers
                .iter()
                .find(|s| s.ipv4.iter().any(|ip| n.addresses.contains(ip)))
                .and_then(|s| s.host.clone())
        });
        by_address
            .or_else(|| {
                plan.workers
                    .iter()
                    .find(|w| w.server == node || w.guessed_node.as_deref() == Some(node))
                    .and_then(|w| w.host.clone())
            })
            .or_else(|| labelled.and_then(|n| n.host_label.clone()))
            .unwrap_or_else(|| "?".to_owned())
    };
    workloads
        .iter()
        .map(|workload| {
            let mut pods_per_host: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for pod in pods
                .iter()
                .filter(|p| p.workload.as_deref() == Some(workload.name.as_str()))
            {
                if let Some(node) = &pod.node {
                    pods_per_host
                        .entry(host_of(node))
                        .or_default()
                        .push(pod.name.clone());
                }
            }
            let required = workload.rule == Some(HostRule::Required);
            let shared_hosts = if required {
                pods_per_host
                    .iter()
                    .filter(|(host, pods)| *host != "?" && pods.len() > 1)
                    .map(|(host, _)| host.clone())
                    .collect()
            } else {
                Vec::new()
            };
            WorkloadLayer {
                workload: workload.name.clone(),
                replicas: workload.replicas,
                rule: workload.rule,
                labelled_hosts,
                beyond_labelled_hosts: if required {
                    workload.replicas.saturating_sub(labelled_hosts)
                } else {
                    0
                },
                pods_per_host,
                shared_hosts,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            vdus: Vec::new(),
            hosts: vec!["h1".to_owned(), "h2".to_owned()],
            steps: Vec::new(),
            first_no_valid_host: None,
            workers: Vec::new(),
            shared_hosts: Vec::new(),
        }
    }

    fn server(name: &str, host: &str, ip: &str) -> Server {
        Server {
            name: name.to_owned(),
            host: Some(host.to_owned()),
            ipv4: vec![ip.to_owned()],
            zone: None,
        }
    }

    fn node(name: &str, label: Option<&str>, ip: &str) -> LabelledNode {
        LabelledNode {
            name: name.to_owned(),
            host_label: label.map(str::to_owned),
            addresses: vec![ip.to_owned()],
        }
    }

    fn pod(name: &str, node: &str) -> CnfPod {
        CnfPod {
            name: name.to_owned(),
            workload: Some("deployment/ns/app".to_owned()),
            node: Some(node.to_owned()),
        }
    }

    fn workload(rule: Option<HostRule>) -> CnfWorkload {
        CnfWorkload {
            name: "deployment/ns/app".to_owned(),
            replicas: 3,
            rule,
        }
    }

    #[test]
    fn a_node_s_host_is_its_server_s_by_address_even_when_its_label_is_stale() {
        let servers = [server("w1", "h2", "10.0.0.1")];
        let nodes = [node("n1", Some("h1"), "10.0.0.1")];
        let layers = join_layers(
            &plan(),
            &servers,
            &nodes,
            &[workload(Some(HostRule::Required))],
            &[pod("ns/a", "n1"), pod("ns/b", "n1")],
        );
        assert_eq!(layers[0].pods_per_host.keys().collect::<Vec<_>>(), ["h2"]);
        assert_eq!(layers[0].shared_hosts, ["h2"]);
        assert_eq!(layers[0].labelled_hosts, 1);
        assert_eq!(layers[0].beyond_labelled_hosts, 2);
    }

    #[test]
    fn only_a_required_rule_counts_replicas_beyond_the_labels_or_flags_sharing() {
        let nodes = [node("n1", None, "10.0.0.9")];
        for rule in [None, Some(HostRule::Preferred)] {
            let layers = join_layers(
                &plan(),
                &[],
                &nodes,
                &[workload(rule)],
                &[pod("ns/a", "n1"), pod("ns/b", "n1")],
            );
            assert_eq!(layers[0].beyond_labelled_hosts, 0);
            assert!(layers[0].shared_hosts.is_empty());
            // Neither a server nor a label says where n1 is.
            assert_eq!(layers[0].pods_per_host["?"].len(), 2);
        }
    }
}
