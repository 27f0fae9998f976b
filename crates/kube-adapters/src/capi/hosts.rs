//! Machines → node name → host name.

use std::collections::BTreeMap;

use crate::meta::namespace_or_default;
use anti_affinity_placement::labels::DEFAULT_HOST_LABEL_KEY;
use capi_api::Machine;

/// Node name → host name from Machines, with the Machines that named an
/// already-mapped Node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostMap {
    /// Node name → host name.
    pub hosts: BTreeMap<String, String>,
    /// Machines that named a Node an earlier Machine had already mapped, in
    /// `namespace/name` order; their host was not used.
    pub shadowed: Vec<ShadowedMachine>,
}

/// A Machine whose host was not used because another Machine named the same
/// Node first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShadowedMachine {
    /// The Node both Machines name.
    pub node: String,
    /// `namespace/name` of the Machine whose host is used.
    pub used: String,
    /// `namespace/name` of this Machine.
    pub machine: String,
    /// This Machine's host (possibly equal to the used one).
    pub host: String,
}

/// The ESXi host CAPV recorded on a Machine: its
/// `node.cluster.x-k8s.io/esxi-host` label (B.1), `None` when absent or
/// empty (an empty value names no host).
pub fn esxi_host(machine: &Machine) -> Option<&str> {
    machine
        .metadata
        .labels
        .as_ref()?
        .get(DEFAULT_HOST_LABEL_KEY)
        .map(String::as_str)
        .filter(|host| !host.is_empty())
}

/// Node name → host name from Cluster API Machines: for each Machine with a
/// Node (`status.nodeRef.name`, [`Machine::node_name`]), the value of its
/// `node.cluster.x-k8s.io/esxi-host` label, the label CAPV writes on the
/// Machine with the name of the ESXi host running the VM.
///
/// - A Machine without a Node, or whose label is absent or **empty**, is
///   skipped ([`Machine::node_name`], [`esxi_host`]): an empty
///   value names no host, and mapping it would make every such Node appear
///   to share one host called `""`.
/// - Node names are unique in a cluster and Cluster API links a Machine to
///   its Node by provider ID, so two Machines naming one Node means stale
///   data (or Machines of several clusters read together). The result must
///   not depend on the order the Machines were listed in (a watch cache and
///   a file list them differently), so the **first Machine in
///   `namespace/name` order wins** (an absent namespace is `default`, as
///   everywhere); the others are reported in [`HostMap::shadowed`].
pub fn host_map<'a>(machines: impl IntoIterator<Item = &'a Machine>) -> HostMap {
    let mut mapped: Vec<(&str, &str, &str, &str)> = machines
        .into_iter()
        .filter_map(|machine| {
            Some((
                namespace_or_default(machine.metadata.namespace.as_deref()),
                machine.metadata.name.as_deref().unwrap_or_default(),
                machine.node_name()?,
                esxi_host(machine)?,
            ))
        })
        .collect();
    mapped.sort_unstable();
    let mut result = HostMap::default();
    let mut owner: BTreeMap<&str, String> = BTreeMap::new();
    for (namespace, name, node, host) in mapped {
        let machine = format!("{namespace}/{name}");
        match owner.get(node) {
            Some(used) => result.shadowed.push(ShadowedMachine {
                node: node.to_owned(),
                used: used.clone(),
                machine,
                host: host.to_owned(),
            }),
            None => {
                result.hosts.insert(node.to_owned(), host.to_owned());
                owner.insert(node, machine);
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use capi_api::machine::{MachineNodeRef, MachineStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use proptest::prelude::*;

    fn machine(namespace: &str, name: &str, node: Option<&str>, host: Option<&str>) -> Machine {
        Machine {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                labels: host.map(|h| [(DEFAULT_HOST_LABEL_KEY.to_owned(), h.to_owned())].into()),
                ..ObjectMeta::default()
            },
            spec: None,
            status: node.map(|n| MachineStatus {
                node_ref: Some(MachineNodeRef { name: n.into() }),
            }),
        }
    }

    fn pairs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    /// Pins the reading of incomplete Machines and of two Machines naming
    /// one Node (one former copy of this conversion mapped empty values and
    /// let the last Machine win).
    #[test]
    fn empty_values_are_skipped_and_the_first_machine_in_namespace_name_order_wins() {
        let machines = [
            machine("b", "m", Some("n1"), Some("esx-b")),
            machine("a", "m", Some("n1"), Some("esx-a")),
            machine("a", "no-node", None, Some("esx-c")),
            machine("a", "empty-node", Some(""), Some("esx-c")),
            machine("a", "no-host", Some("n2"), None),
            machine("a", "empty-host", Some("n3"), Some("")),
            machine("a", "ok", Some("n4"), Some("esx-d")),
        ];
        let got = host_map(&machines);
        assert_eq!(got.hosts, pairs(&[("n1", "esx-a"), ("n4", "esx-d")]));
        assert_eq!(
            got.shadowed,
            [ShadowedMachine {
                node: "n1".into(),
                used: "a/m".into(),
                machine: "b/m".into(),
                host: "esx-b".into(),
            }]
        );
    }

    /// Machines with distinct `namespace/name` (as in any real listing).
    fn arb_machines() -> impl Strategy<Value = Vec<Machine>> {
        prop::collection::vec(
            (
                prop::sample::select(vec!["a", "b"]),
                prop::option::of(prop::sample::select(vec!["", "n1", "n2"])),
                prop::option::of(prop::sample::select(vec!["", "esx-1", "esx-2"])),
            ),
            0..8,
        )
        .prop_map(|specs| {
            specs
                .into_iter()
                .enumerate()
                .map(|(i, (ns, node, host))| machine(ns, &format!("m{i}"), node, host))
                .collect()
        })
    }

    proptest! {
        /// Oracle: for each Node, the smallest `namespace/name` among the
        /// Machines with a non-empty node and host gives the host.
        #[test]
        fn host_map_is_the_smallest_complete_machine_per_node_whatever_the_listing_order(
            (machines, shuffled) in arb_machines()
                .prop_flat_map(|machines| (Just(machines.clone()), Just(machines).prop_shuffle())),
        ) {
            let mut oracle: BTreeMap<String, ((String, String), String)> = BTreeMap::new();
            for m in &machines {
                let node = m.status.as_ref().and_then(|s| s.node_ref.as_ref()).map(|r| r.name.clone());
                let host = m.metadata.labels.as_ref().and_then(|l| l.get(DEFAULT_HOST_LABEL_KEY)).cloned();
                if let (Some(node), Some(host)) = (node, host) {
                    if node.is_empty() || host.is_empty() {
                        continue;
                    }
                    let key = (m.metadata.namespace.clone().unwrap(), m.metadata.name.clone().unwrap());
                    let entry = oracle.entry(node).or_insert((key.clone(), host.clone()));
                    if key < entry.0 {
                        *entry = (key, host);
                    }
                }
            }
            let want: BTreeMap<String, String> =
                oracle.into_iter().map(|(node, (_, host))| (node, host)).collect();
            prop_assert_eq!(&host_map(&machines).hosts, &want);
            prop_assert_eq!(host_map(&shuffled), host_map(&machines));
        }
    }
}
