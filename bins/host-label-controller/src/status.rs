//! Where the status summary goes.
//!
//! - One cluster (the controller beside its Nodes, with or without
//!   `--machines-kubeconfig`): the status ConfigMap in the controller's
//!   own namespace of that cluster, keys `summary.json` (and
//!   `modules.json`), applied with the controller's field manager.
//! - `--all-clusters`: the status ConfigMap in the **management** cluster,
//!   in the controller's namespace there (which exists: the controller
//!   runs in it), one entry per workload cluster: keys
//!   `<namespace>_<cluster>.summary.json` (and `.modules.json`; `_` never
//!   occurs in a namespace or name, so the key names one Cluster). Each
//!   workload cluster's loop applies only its own keys under a field
//!   manager of its own ([`StatusPlace::field_manager`]), so server-side
//!   apply keeps the other clusters' entries. Nothing is written into a
//!   workload cluster's namespaces, which usually do not exist there.

use controller_kit::ApiErrorKind;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Map, Value, json};

use crate::config::{CONTROLLER_NAME, ObjectName};

/// Where a labelling loop writes its status summary.
#[derive(Clone)]
pub enum StatusPlace {
    /// The status ConfigMap in the cluster whose Nodes are labelled.
    Workload,
    /// The status ConfigMap in the management cluster, entries of `cluster`.
    Management {
        /// The management cluster's client.
        client: kube::Client,
        /// The workload cluster's Cluster API Cluster.
        cluster: ObjectName,
    },
}

impl std::fmt::Debug for StatusPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::fmt::Display for StatusPlace {
    /// `workload cluster`, or `management cluster, entries of NS/NAME`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StatusPlace::Workload => f.write_str("workload cluster"),
            StatusPlace::Management { cluster, .. } => {
                write!(f, "management cluster, entries of {cluster}")
            }
        }
    }
}

/// The ConfigMap data key of `key` (`summary.json`, `modules.json`) for
/// `cluster` in the management cluster's status ConfigMap.
pub fn management_key(cluster: &ObjectName, key: &str) -> String {
    format!("{}_{}.{key}", cluster.namespace, cluster.name)
}

impl StatusPlace {
    /// The field manager of the status writes: the controller's name, and
    /// in the management cluster `host-label-controller/<namespace>_<cluster>`
    /// (one per workload cluster, so each owns only its own keys).
    pub fn field_manager(&self) -> String {
        match self {
            StatusPlace::Workload => CONTROLLER_NAME.to_owned(),
            StatusPlace::Management { cluster, .. } => {
                format!("{CONTROLLER_NAME}/{}_{}", cluster.namespace, cluster.name)
            }
        }
    }

    /// `data` with its keys as they are written here.
    pub fn data(&self, data: &Map<String, Value>) -> Map<String, Value> {
        match self {
            StatusPlace::Workload => data.clone(),
            StatusPlace::Management { cluster, .. } => data
                .iter()
                .map(|(key, value)| (management_key(cluster, key), value.clone()))
                .collect(),
        }
    }
}

/// The server-side apply body of the status ConfigMap `target` with `data`.
pub fn body(target: &ObjectName, data: &Map<String, Value>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": target.name,
            "namespace": target.namespace,
            "labels": { "app.kubernetes.io/name": CONTROLLER_NAME },
        },
        "data": data,
    })
}

/// A failed status write, counted by [`controller_kit::metrics`] as
/// `kube_api` (or `forbidden`), as the runtime's own writes are.
pub(crate) struct StatusWriteFailed(pub(crate) ApiErrorKind);

impl controller_kit::metrics::ErrorKind for StatusWriteFailed {
    fn kind(&self) -> &'static str {
        match self.0 {
            ApiErrorKind::Forbidden => "forbidden",
            _ => "kube_api",
        }
    }
}

/// Applies `data` to the status ConfigMap `target` in the management
/// cluster through `client`, as `field_manager` (forced: the keys are this
/// manager's alone).
pub(crate) async fn apply_in_management(
    client: &kube::Client,
    target: &ObjectName,
    field_manager: &str,
    data: &Map<String, Value>,
) -> Result<(), kube::Error> {
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), &target.namespace);
    let params = PatchParams::apply(field_manager).force();
    api.patch(&target.name, &params, &Patch::Apply(body(target, data)))
        .await
        .map(|_| ())
}

/// Removes `cluster`'s entries (`summary.json`, `modules.json`) from the
/// status ConfigMap `target` in the management cluster (its Cluster is
/// gone). A missing ConfigMap is nothing to remove.
pub(crate) async fn remove_from_management(
    client: &kube::Client,
    target: &ObjectName,
    cluster: &ObjectName,
) -> Result<(), kube::Error> {
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), &target.namespace);
    let gone: Map<String, Value> = [
        crate::config::STATUS_DATA_KEY,
        crate::config::MODULES_DATA_KEY,
    ]
    .iter()
    .map(|key| (management_key(cluster, key), Value::Null))
    .collect();
    let patch = json!({ "data": gone });
    match api
        .patch(&target.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn management_keys_name_the_cluster_unambiguously() {
        let cluster = ObjectName {
            namespace: "capi-system".into(),
            name: "c1.lab".into(),
        };
        assert_eq!(
            management_key(&cluster, "summary.json"),
            "capi-system_c1.lab.summary.json"
        );
    }
}
