//! Host information (Node name → physical host name) from an inventory
//! ConfigMap: a HostInventory, or OpenStack's server list (`openstack server
//! list --long -f json`, kept current by whoever refreshes the ConfigMap).
//! (From Cluster API Machines it comes through
//! `kube_adapters::capi::host_map`.) Pure functions over snapshots.

use std::collections::BTreeMap;

use anti_affinity_placement::hosts::HostInventory;
use anti_affinity_placement::tacker::plan::Server;
use anti_affinity_placement::tacker::servers::servers_from_listing;
use k8s_openapi::api::core::v1::ConfigMap;

/// What an inventory ConfigMap says about hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostInfo {
    /// Node name → host (a HostInventory: VM names are Node names).
    ByNode(BTreeMap<String, String>),
    /// OpenStack's servers with their hosts and addresses: a Node is the
    /// server holding one of its addresses, else the server of its name.
    Servers(Vec<Server>),
}

impl Default for HostInfo {
    fn default() -> Self {
        HostInfo::ByNode(BTreeMap::new())
    }
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
    /// The document does not parse as a HostInventory or a server list.
    #[error(
        "ConfigMap {configmap}, data key {key:?}: not a HostInventory or an `openstack server list --long -f json` list: {problem}"
    )]
    Parse {
        /// `namespace/name`.
        configmap: String,
        /// The key.
        key: String,
        /// The parser's message.
        problem: String,
    },
}

/// The host information under `key`: a JSON list is OpenStack's server
/// list; anything else a HostInventory (YAML or JSON), whose VMs with a
/// `host` give the hosts of the Nodes of their names.
pub fn hosts_from_inventory(configmap: &ConfigMap, key: &str) -> Result<HostInfo, InventoryError> {
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
    let parse_error = |problem: String| InventoryError::Parse {
        configmap: name.clone(),
        key: key.to_owned(),
        problem,
    };
    if text.trim_start().starts_with('[') {
        return servers_from_listing(text)
            .map(HostInfo::Servers)
            .map_err(|e| parse_error(e.to_string()));
    }
    let inventory: HostInventory =
        serde_saphyr::from_str(text).map_err(|e| parse_error(e.to_string()))?;
    Ok(HostInfo::ByNode(inventory.host_of_vm()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

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
        let HostInfo::ByNode(got) =
            hosts_from_inventory(&cm(&[("inventory.yaml", doc)]), "inventory.yaml").unwrap()
        else {
            panic!("a HostInventory")
        };
        assert_eq!(got.len(), 1);
        assert_eq!(got["n1"], "esx1");
    }

    /// The example cluster's ConfigMap is the one policyctl reads too.
    #[test]
    fn the_example_inventory_config_map_gives_the_hosts_of_its_vms() {
        let text = include_str!("../../../examples/cluster/host-inventory.yaml");
        let configmap: ConfigMap = serde_saphyr::from_str(text).unwrap();
        let HostInfo::ByNode(got) = hosts_from_inventory(&configmap, "inventory.yaml").unwrap()
        else {
            panic!("a HostInventory")
        };
        assert_eq!(got.len(), 7, "{got:?}");
        assert_eq!(got["worker-b3"], "esx-04");
        assert!(!got.contains_key("worker-b4"), "not placed yet");
    }

    #[test]
    fn inventory_errors_name_configmap_and_key() {
        let missing = hosts_from_inventory(&cm(&[]), "inventory.yaml").unwrap_err();
        insta::assert_snapshot!(missing.to_string(), @r#"ConfigMap ns/inv: data key "inventory.yaml" is missing; check --inventory-key"#);
        let bad = hosts_from_inventory(&cm(&[("k", "vms: 3")]), "k").unwrap_err();
        assert!(
            bad.to_string()
                .starts_with("ConfigMap ns/inv, data key \"k\": not a HostInventory or an"),
            "{bad}"
        );
    }

    #[test]
    fn a_json_list_is_openstack_s_server_list() {
        let listing = r#"[{"Name": "workerNode-0", "Host": "compute-b", "Networks": {"net0": ["10.10.0.45"]}}]"#;
        let got = hosts_from_inventory(&cm(&[("servers.json", listing)]), "servers.json").unwrap();
        let HostInfo::Servers(servers) = got else {
            panic!("a server list: {got:?}")
        };
        assert_eq!(servers[0].host.as_deref(), Some("compute-b"));
        let bad = hosts_from_inventory(&cm(&[("k", r#"[{"Host": "c"}]"#)]), "k").unwrap_err();
        insta::assert_snapshot!(bad.to_string(), @r#"ConfigMap ns/inv, data key "k": not a HostInventory or an `openstack server list --long -f json` list: [0]: no "Name": the list must come from `openstack server list --long -f json`"#);
    }
}
