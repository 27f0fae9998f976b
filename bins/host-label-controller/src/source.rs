//! Host information (Node name → physical host name) from a HostInventory
//! ConfigMap. (From Cluster API Machines it comes through
//! `kube_adapters::capi::host_map`.) Pure functions over snapshots.

use std::collections::BTreeMap;

use anti_affinity_placement::hosts::HostInventory;
use k8s_openapi::api::core::v1::ConfigMap;

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
        let got = hosts_from_inventory(&cm(&[("inventory.yaml", doc)]), "inventory.yaml").unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got["n1"], "esx1");
    }

    /// The example cluster's ConfigMap is the one policyctl reads too.
    #[test]
    fn the_example_inventory_config_map_gives_the_hosts_of_its_vms() {
        let text = include_str!("../../../examples/cluster/host-inventory.yaml");
        let configmap: ConfigMap = serde_saphyr::from_str(text).unwrap();
        let got = hosts_from_inventory(&configmap, "inventory.yaml").unwrap();
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
                .starts_with("ConfigMap ns/inv, data key \"k\": not a HostInventory:"),
            "{bad}"
        );
    }
}
