//! Host information (Node name → physical host name) from Cluster API
//! Machines or from a HostInventory ConfigMap. Pure functions over snapshots.

use std::borrow::Cow;
use std::collections::BTreeMap;

use anti_affinity_placement::hosts::HostInventory;
use anti_affinity_placement::labels::DEFAULT_HOST_LABEL_KEY;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// The Machine label CAPV writes with the ESXi host name (B.1).
pub const MACHINE_HOST_LABEL: &str = DEFAULT_HOST_LABEL_KEY;

/// The part of a `cluster.x-k8s.io/v1beta1` Machine this controller reads
/// (metadata and `status.nodeRef.name`; everything else is ignored, and the
/// controller never writes Machines).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Standard metadata (labels carry the host).
    pub metadata: ObjectMeta,
    /// Status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MachineStatus>,
}

/// `Machine.status` (only `nodeRef`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineStatus {
    /// The Node this Machine became.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<NodeRef>,
}

/// `Machine.status.nodeRef` (only `name`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeRef {
    /// Node name.
    #[serde(default)]
    pub name: String,
}

impl kube::Resource for Machine {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Machine".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "cluster.x-k8s.io".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1beta1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "machines".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Node name → host from Machines: each Machine with `status.nodeRef.name`
/// and a non-empty [`MACHINE_HOST_LABEL`]. Tie-break when two Machines name
/// the same Node (should not happen): the Machine first in
/// `namespace/name` order wins.
pub fn hosts_from_machines<'a>(
    machines: impl IntoIterator<Item = &'a Machine>,
) -> BTreeMap<String, String> {
    let mut sorted: Vec<&Machine> = machines.into_iter().collect();
    sorted.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    let mut out = BTreeMap::new();
    for m in sorted {
        let node = m
            .status
            .as_ref()
            .and_then(|s| s.node_ref.as_ref())
            .map(|r| r.name.as_str())
            .filter(|n| !n.is_empty());
        let host = m
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(MACHINE_HOST_LABEL))
            .filter(|h| !h.is_empty());
        if let (Some(node), Some(host)) = (node, host) {
            out.entry(node.to_owned()).or_insert_with(|| host.clone());
        }
    }
    out
}

/// Why an inventory ConfigMap could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InventoryError {
    /// The data key is missing.
    #[error("ConfigMap {configmap}: data key {key:?} is missing; check --inventory-key")]
    MissingKey {
        /// `namespace/name`.
        configmap: String,
        /// The key.
        key: String,
    },
    /// The document does not parse as a HostInventory.
    #[error("ConfigMap {configmap}, data key {key:?}: not a HostInventory: {problem}")]
    Parse {
        /// `namespace/name`.
        configmap: String,
        /// The key.
        key: String,
        /// The parser's message.
        problem: String,
    },
}

/// Node name → host from a HostInventory (YAML or JSON) under `key`: every
/// VM with a `host` (VM names are Node names).
pub fn hosts_from_inventory(
    configmap: &ConfigMap,
    key: &str,
) -> Result<BTreeMap<String, String>, InventoryError> {
    let name = format!(
        "{}/{}",
        configmap.metadata.namespace.as_deref().unwrap_or_default(),
        configmap.metadata.name.as_deref().unwrap_or_default()
    );
    let text = configmap
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .ok_or_else(|| InventoryError::MissingKey {
            configmap: name.clone(),
            key: key.to_owned(),
        })?;
    let inventory: HostInventory =
        serde_saphyr::from_str(text).map_err(|e| InventoryError::Parse {
            configmap: name,
            key: key.to_owned(),
            problem: e.to_string(),
        })?;
    Ok(inventory.host_of_vm())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(ns: &str, name: &str, node: Option<&str>, host: Option<&str>) -> Machine {
        Machine {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                labels: host.map(|h| [(MACHINE_HOST_LABEL.to_owned(), h.to_owned())].into()),
                ..ObjectMeta::default()
            },
            status: node.map(|n| MachineStatus {
                node_ref: Some(NodeRef { name: n.into() }),
            }),
        }
    }

    #[test]
    fn machines_without_node_or_host_are_skipped_and_first_machine_wins() {
        let ms = [
            machine("b", "m", Some("n1"), Some("esx-b")),
            machine("a", "m", Some("n1"), Some("esx-a")),
            machine("a", "no-node", None, Some("esx-c")),
            machine("a", "no-host", Some("n2"), None),
            machine("a", "empty-host", Some("n3"), Some("")),
            machine("a", "ok", Some("n4"), Some("esx-d")),
        ];
        let got = hosts_from_machines(&ms);
        let want: BTreeMap<String, String> = [("n1", "esx-a"), ("n4", "esx-d")]
            .into_iter()
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .collect();
        assert_eq!(got, want);
    }

    fn cm(data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some("inv".into()),
                ..ObjectMeta::default()
            },
            data: Some(
                data.iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn inventory_vms_with_hosts_become_node_hosts() {
        let doc = "apiVersion: policyctl/v1alpha1\nkind: HostInventory\nhosts:\n- name: esx1\nvms:\n- name: n1\n  group: w\n  host: esx1\n- name: n2\n  group: w\n";
        let got = hosts_from_inventory(&cm(&[("inventory.yaml", doc)]), "inventory.yaml").unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got["n1"], "esx1");
    }

    #[test]
    fn inventory_errors_name_configmap_and_key() {
        let missing = hosts_from_inventory(&cm(&[]), "inventory.yaml").unwrap_err();
        insta::assert_snapshot!(missing.to_string(), @r#"ConfigMap ns/inv: data key "inventory.yaml" is missing; check --inventory-key"#);
        let bad = hosts_from_inventory(&cm(&[("k", "vms: 3")]), "k").unwrap_err();
        assert!(
            bad.to_string()
                .starts_with("ConfigMap ns/inv, data key \"k\": not a HostInventory:"),
            "{bad}"
        );
    }
}
