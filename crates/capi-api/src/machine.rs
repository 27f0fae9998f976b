//! `cluster.x-k8s.io` `Machine`: its labels (CAPV writes the ESXi host
//! there; `kube_adapters::capi::esxi_host` reads it) and the Node it became.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::resource::{ObjectRef, partial_resource};

/// A Cluster API Machine: `metadata`, `spec.infrastructureRef` and
/// `status.nodeRef.name`.
///
/// Reads `v1beta1` and `v1beta2` alike: `spec.infrastructureRef` is an
/// `ObjectReference` in `v1beta1` and a `ContractVersionedObjectReference`
/// in `v1beta2` (both carry `kind` and `name`); `status.nodeRef` is an
/// `ObjectReference` in `v1beta1` and a `MachineNodeReference` (`{name}`) in
/// `v1beta2`; both carry `name`, the only field read. As a
/// [`kube::Resource`] it is served at `cluster.x-k8s.io/v1beta1`, which
/// every Cluster API release that serves Machines still serves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Standard metadata (the labels carry the host).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The parts of the spec that are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<MachineSpec>,
    /// The parts of the status that are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MachineStatus>,
}

/// `Machine.spec` (only `infrastructureRef`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineSpec {
    /// The infrastructure machine (a VSphereMachine for CAPV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ObjectRef>,
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
    /// The infrastructure machine reference, when set.
    pub fn infrastructure_ref(&self) -> Option<&ObjectRef> {
        self.spec.as_ref()?.infrastructure_ref.as_ref()
    }

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

partial_resource!(
    Machine,
    "Machine",
    "cluster.x-k8s.io",
    "v1beta1",
    "machines"
);

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
