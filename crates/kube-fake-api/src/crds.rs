//! Minimal CustomResourceDefinitions kept with the stand-in, for tests that
//! need a real schema: Velero 1.17's and 1.18's Backup (1.18 adds the
//! `Queued`/`ReadyToStart` phases and `status.queuePosition`) and Cluster
//! API 1.12's Machine. Each file says what it keeps of the upstream CRD.
//! Install them with [`crate::FakeApi::install_crds`] or, as a directory,
//! with [`crate::FakeApi::install_crds_from_dir`] (or the loopback
//! server's `--crds DIR`).

use std::path::PathBuf;

/// Velero 1.17's `backups.velero.io`: no queue phases, no `queuePosition`.
pub const VELERO_1_17_BACKUP: &str = include_str!("../crds/velero-1.17/backups.velero.io.yaml");

/// Velero 1.18's `backups.velero.io`: `Queued`, `ReadyToStart`, `queuePosition`.
pub const VELERO_1_18_BACKUP: &str = include_str!("../crds/velero-1.18/backups.velero.io.yaml");

/// Cluster API 1.12's `machines.cluster.x-k8s.io` (v1beta1, status subresource).
pub const CLUSTER_API_1_12_MACHINE: &str =
    include_str!("../crds/cluster-api-1.12/machines.cluster.x-k8s.io.yaml");

/// The directory holding one sub-directory per set (`velero-1.17`,
/// `velero-1.18`, `cluster-api-1.12`), for `--crds DIR`.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crds")
}
