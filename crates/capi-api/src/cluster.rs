//! `cluster.x-k8s.io` `Cluster`: which infrastructure cluster it uses.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::resource::{ObjectRef, partial_resource};

/// A Cluster API Cluster: `metadata` and `spec.infrastructureRef` (the same
/// path in `v1beta1` and `v1beta2`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// Standard metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The parts of the spec that are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ClusterSpec>,
}

/// `Cluster.spec` (only `infrastructureRef`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// The infrastructure cluster (a VSphereCluster for CAPV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ObjectRef>,
}

impl Cluster {
    /// The infrastructure cluster reference, when set.
    pub fn infrastructure_ref(&self) -> Option<&ObjectRef> {
        self.spec.as_ref()?.infrastructure_ref.as_ref()
    }
}

partial_resource!(
    Cluster,
    "Cluster",
    "cluster.x-k8s.io",
    "v1beta1",
    "clusters"
);
