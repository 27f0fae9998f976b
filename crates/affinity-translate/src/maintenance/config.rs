//! The typed repository-maintenance job configuration (documented on
//! [`JobConfig`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{LoadAffinity, PodResources};

/// One value of the repository-maintenance job ConfigMap (Velero's
/// `JobConfigs`, R5.1): the `global` entry or a repository's entry.
///
/// Every field is optional; `None` means absent (or `null`). A loaded entry
/// serialises back to the keys the user wrote.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobConfig {
    /// Node selection of the job's pod; only the first entry's
    /// `nodeSelector` is used (R5.8). `null` entries are kept as `None` so
    /// that indexes match the user's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_affinity: Option<Vec<Option<LoadAffinity>>>,
    /// Requests and limits of the job's container (R5.10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_resources: Option<PodResources>,
    /// How many finished jobs of a repository are kept (R5.13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_latest_maintenance_jobs: Option<i64>,
    /// Priority class of the job's pod (R5.4, R5.11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Annotations of the job's pod, replacing the inherited ones (R5.12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_annotations: Option<BTreeMap<String, String>>,
    /// Labels of the job's pod, replacing the inherited ones (R5.12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_labels: Option<BTreeMap<String, String>>,
}

impl JobConfig {
    /// The priority class name as Go sees it: `""` is absent.
    pub fn priority_class(&self) -> Option<&str> {
        self.priority_class_name
            .as_deref()
            .filter(|name| !name.is_empty())
    }

    /// The pod labels as Go sees them: an empty map is absent.
    pub fn labels(&self) -> Option<&BTreeMap<String, String>> {
        self.pod_labels.as_ref().filter(|map| !map.is_empty())
    }

    /// The pod annotations as Go sees them: an empty map is absent.
    pub fn annotations(&self) -> Option<&BTreeMap<String, String>> {
        self.pod_annotations.as_ref().filter(|map| !map.is_empty())
    }

    /// The `loadAffinity` list as Go sees it: an empty list is absent.
    pub fn load_affinities(&self) -> Option<&[Option<LoadAffinity>]> {
        self.load_affinity
            .as_deref()
            .filter(|entries| !entries.is_empty())
    }
}
