//! The cluster-module audit of a pass (`--audit-cluster-modules`): for every
//! VSphereCluster, CAPV's module view and its host audit
//! ([`anti_affinity_placement::cluster_modules`], rules A.1–A.5, A.15,
//! A.16), and from it what the executor reports — an Event on each Machine
//! that shares an ESXi host with another member of its module, the
//! `module_host_violations{group, forced}` gauges and the `modules.json`
//! entry of the status ConfigMap. A pure function of the index.

use std::collections::BTreeMap;

use anti_affinity_placement::cluster_modules::{ClusterModulesReport, Membership};
use capi_api::Machine;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube_adapters::meta::namespace_or_default;

use crate::index::HostIndex;

/// A Machine sharing an ESXi host with other members of its module.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedHost {
    /// Identity of the occurrence (Events are published once per occurrence).
    pub id: String,
    /// The Machine the Event goes to.
    pub machine: ObjectReference,
    /// The Event note.
    pub note: String,
}

/// One gauge sample of `module_host_violations`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GroupViolations {
    /// `namespace/group` (the group as keyed in the audit).
    pub group: String,
    /// Whether the violations are forced.
    pub forced: bool,
    /// Members beyond one per host.
    pub violations: u64,
}

/// What the audit of one pass found.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ModuleAudit {
    /// VSphereCluster `namespace/name` → its report.
    pub clusters: BTreeMap<String, ClusterModulesReport>,
    /// Machines sharing a host with members of their module, sorted.
    pub shared: Vec<SharedHost>,
    /// One sample per group.
    pub groups: Vec<GroupViolations>,
}

impl ModuleAudit {
    /// The `modules.json` content: pretty JSON of `{VSphereCluster: report}`
    /// with a trailing newline; byte-identical for the same state.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.clusters).unwrap_or_default();
        text.push('\n');
        text
    }
}

fn machine_reference(machine: &Machine) -> ObjectReference {
    let mut reference = machine.object_ref(&());
    // Machines read at any served version are one object; name the version
    // the controller reads them at.
    reference.api_version = Some("cluster.x-k8s.io/v1beta1".to_owned());
    reference
}

/// The audit (see the module documentation).
pub fn audit(index: &HostIndex) -> ModuleAudit {
    let objects = index.cluster_api();
    let machines: BTreeMap<(String, String), &Machine> = objects
        .machines
        .iter()
        .map(|m| {
            (
                (
                    namespace_or_default(m.metadata.namespace.as_deref()).to_owned(),
                    m.metadata.name.clone().unwrap_or_default(),
                ),
                *m,
            )
        })
        .collect();
    let mut out = ModuleAudit::default();
    for vsphere_cluster in &objects.vsphere_clusters {
        let namespace = namespace_or_default(vsphere_cluster.metadata.namespace.as_deref());
        let id = format!(
            "{namespace}/{}",
            vsphere_cluster.metadata.name.as_deref().unwrap_or_default()
        );
        let report = objects
            .cluster_modules_input(vsphere_cluster, None)
            .report();
        for (key, group) in &report.audit {
            out.groups.push(GroupViolations {
                group: format!("{namespace}/{key}"),
                forced: group.forced,
                violations: group.violations,
            });
            for (host, members) in group.hosts.iter().filter(|(_, m)| m.len() > 1) {
                for member in members {
                    let Some(machine) = machines.get(&(namespace.to_owned(), member.clone()))
                    else {
                        continue;
                    };
                    let module = report
                        .membership
                        .get(&format!("{namespace}/{member}"))
                        .and_then(Membership::module_uuid)
                        .map_or_else(|| "no module yet".to_owned(), |m| format!("module {m}"));
                    let others: Vec<&str> = members
                        .iter()
                        .filter(|m| *m != member)
                        .map(String::as_str)
                        .collect();
                    let verdict = if group.forced {
                        "forced: the group has more members than eligible hosts".to_owned()
                    } else {
                        let vm = report
                            .moves
                            .iter()
                            .find(|m| m.from == *host && members.contains(&m.vm))
                            .map(|m| format!("; vMotion {} from {} to {}", m.vm, m.from, m.to))
                            .unwrap_or_default();
                        format!("fixable: a spread over the hosts exists{vm}")
                    };
                    out.shared.push(SharedHost {
                        id: format!(
                            "module {namespace}/{key} {host} {} {member}",
                            members.join(",")
                        ),
                        machine: machine_reference(machine),
                        note: format!(
                            "Machine {member} shares ESXi host {host} with {} of {key} ({module}): {} violation(s), {verdict}",
                            others.join(", "),
                            group.violations
                        ),
                    });
                }
            }
        }
        out.clusters.insert(id, report);
    }
    out.groups.sort();
    out.shared
        .sort_by(|a, b| (&a.id, &a.machine.name).cmp(&(&b.id, &b.machine.name)));
    out
}
