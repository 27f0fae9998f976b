//! The one translation from Kubernetes API objects to the inputs of the pure
//! policy crates.
//!
//! The policy crates (`backup-queue`, `load-soothe`,
//! `anti-affinity-placement`) know nothing about CRDs: they take plain
//! values. Every program that feeds them — a controller reading typed objects
//! from watches, `policyctl` reading `kubectl get -o yaml` dumps — converts
//! through this crate, so the same object always becomes the same input,
//! whoever reads it.
//!
//! | API object | policy input | function |
//! |---|---|---|
//! | Velero `Backup` | [`backup_queue::BackupInput`] | [`velero::backup_input`] |
//! | Velero `DataUpload`, `DataDownload`, `PodVolumeBackup`, `PodVolumeRestore` | [`load_soothe::Load`] | [`velero::load`] |
//! | Cluster API `Machine` | node name → host name | [`capi::host_map`] |
//!
//! Where an object can say something the policy input cannot (an absent
//! namespace, a `queuePosition` beyond `u32`, two Machines naming one Node),
//! the function's documentation says which single reading is chosen and why;
//! deliberate differences from upstream are listed in
//! `docs/compatibility.md`.
//!
//! Pure like the policy crates: no I/O, no clock, no randomness.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod capi;
pub mod meta;
pub mod velero;
