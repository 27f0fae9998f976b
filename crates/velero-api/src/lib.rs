//! Partial, hand-written kube 5 types for the Velero custom resources that the
//! placement and admission policies read and write.
//!
//! | kind | group/version | type |
//! |---|---|---|
//! | `Backup` | `velero.io/v1` | [`Backup`] |
//! | `BackupRepository` | `velero.io/v1` | [`BackupRepository`] |
//! | `PodVolumeBackup` | `velero.io/v1` | [`PodVolumeBackup`] |
//! | `PodVolumeRestore` | `velero.io/v1` | [`PodVolumeRestore`] |
//! | `DataUpload` | `velero.io/v2alpha1` | [`DataUpload`] |
//! | `DataDownload` | `velero.io/v2alpha1` | [`DataDownload`] |
//!
//! The label keys Velero puts on these objects are in [`labels`].
//!
//! Only the fields the policies read (L3.8–L3.14, Q4.1–Q4.22 and R5.2: namespace
//! filters of backups, queue phase and position, the key of a repository's
//! maintenance configuration, data-mover storage class,
//! node and phase of loads) plus the status fields the controllers write are
//! modelled. Every field is optional (`Option` or `#[serde(default)]`) and
//! unknown fields are ignored on input, so any object a Velero server writes
//! deserialises.
//!
//! # Never `replace()` these objects
//!
//! Because the types are partial, serialising one drops every field that is
//! not modelled here. Writing such an object back with `replace()` (PUT)
//! would silently erase the rest of the user's Backup or DataUpload. Patch
//! only the fields you own (merge patch or server-side apply on `/status`).
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod string_enum;

mod backup;
mod backup_repository;
mod data_mover;
pub mod labels;
mod pod_volume;
mod progress;

pub use backup::{Backup, BackupPhase, BackupSpec, BackupStatus};
pub use backup_repository::{BackupRepository, BackupRepositorySpec};
pub use data_mover::{
    BUILT_IN_DATA_MOVER, CsiSnapshotSpec, DataDownload, DataDownloadSpec, DataDownloadStatus,
    DataUpload, DataUploadSpec, DataUploadStatus, TargetVolumeSpec, is_built_in_data_mover,
};
pub use pod_volume::{
    PodVolumeBackup, PodVolumeBackupSpec, PodVolumeBackupStatus, PodVolumeRestore,
    PodVolumeRestoreSpec, PodVolumeRestoreStatus,
};
pub use progress::{DataMoveOperationProgress, LoadPhase};

#[cfg(test)]
mod tests;
