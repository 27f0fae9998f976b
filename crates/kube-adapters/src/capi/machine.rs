//! `cluster.x-k8s.io` `Machine`: its labels (CAPV writes the ESXi host
//! there) and the Node it became.

use std::borrow::Cow;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// A Cluster API Machine: only `metadata` and `status.nodeRef.name`.
///
/// Reads `v1beta1` and `v1beta2` alike: `status.nodeRef` is an
/// `ObjectReference` in `v1beta1` and a `MachineNodeReference` (`{name}`) in
/// `v1beta2`; both carry `name`, the only field read. As a
/// [`kube::Resource`] it is served at `cluster.x-k8s.io/v1beta1`, which
/// every Cluster API release that serves Machines still serves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Standard metadata (the labels carry the host).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The parts of the status that are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MachineStatus>,
}

/// `Machine.status` (only `nodeRef`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineStatus {
    /// The Node this Machine became.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<MachineNodeRef>,
}

/// `Machine.status.nodeRef` (only `name`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineNodeRef {
    /// The Node's name; empty means no Node (Cluster API's
    /// `MachineNodeReference.IsDefined`).
    #[serde(default)]
    pub name: String,
}

impl Machine {
    /// The name of the Node this Machine became: `status.nodeRef.name`,
    /// `None` when absent or empty (no Node yet).
    pub fn node_name(&self) -> Option<&str> {
        self.status
            .as_ref()?
            .node_ref
            .as_ref()
            .map(|node_ref| node_ref.name.as_str())
            .filter(|name| !name.is_empty())
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_versions_give_the_node_name() {
        let v1beta1: Machine = serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
            "metadata": {"name": "m1"},
            "spec": {"clusterName": "c"},
            "status": {"nodeRef": {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "x"}}
        }))
        .unwrap();
        assert_eq!(v1beta1.node_name(), Some("n1"));
        let v1beta2: Machine = serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": "m2"}, "status": {"nodeRef": {"name": "n2"}}
        }))
        .unwrap();
        assert_eq!(v1beta2.node_name(), Some("n2"));
    }

    #[test]
    fn absent_or_empty_node_refs_name_no_node() {
        for status in [
            json!(null),
            json!({}),
            json!({"nodeRef": {}}),
            json!({"nodeRef": {"name": ""}}),
        ] {
            let machine: Machine =
                serde_json::from_value(json!({"metadata": {"name": "m"}, "status": status}))
                    .unwrap();
            assert_eq!(machine.node_name(), None, "{status}");
        }
    }
}
