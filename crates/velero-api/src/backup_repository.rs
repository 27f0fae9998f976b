//! `velero.io/v1` BackupRepository: the fields that name a repository's
//! entry in the repository-maintenance job ConfigMap (R5.2).

use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// Spec of a BackupRepository: the three fields Velero builds the
/// repository's key of the repository-maintenance job ConfigMap from
/// (`<volumeNamespace>-<backupStorageLocation>-<repositoryType>`, R5.2).
///
/// A partial object: never `replace()` it, patch only the fields you own.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "BackupRepository",
    namespaced,
    schema = "disabled",
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct BackupRepositorySpec {
    /// Namespace of the volumes this repository holds data of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_namespace: Option<String>,
    /// Name of the BackupStorageLocation the repository lives in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_storage_location: Option<String>,
    /// Repository type (`kopia`, or `restic` in older installations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_type: Option<String>,
}
