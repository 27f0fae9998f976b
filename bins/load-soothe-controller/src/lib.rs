//! `load-soothe-controller`: a prepare-queue admission gate for third-party
//! Velero data movers (issue 8, item 1; spec `velero.md` §3.3).
//!
//! Velero's node-agent holds back new loads while too many are in
//! preparation (`loadConcurrency.prepareQueueLength`, L3.8–L3.14), but only
//! for the loads it handles itself, and only after a restart when the
//! ConfigMap changes (L3.4). This controller does the same for the
//! DataUploads and DataDownloads whose `spec.datamover` names one of the
//! configured data movers, with the `load-soothe` gate:
//!
//! - it watches the four load kinds in Velero's namespace (all four count
//!   against the limit) and the node-agent ConfigMap (edits take effect at
//!   once);
//! - it accepts `New` loads of its data movers the way Velero's node-agent
//!   does (phase `Accepted`, label `velero.io/expose-on-going=true`,
//!   `status.acceptedByNode`, `status.acceptedTimestamp`), first in first
//!   out, with merge patches conditioned on the load's resourceVersion;
//! - `--mode exact` admits through the shared ledger ConfigMap
//!   (compare-and-swap on its resourceVersion): never more than the limit in
//!   preparation, however many replicas run; `--mode optimistic` decides on
//!   its own view only (bound: replicas × limit, see [`controller`]).
//!
//! `main.rs` parses [`args::Cli`] and calls [`run`] with an injected client.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod args;
pub mod config;
pub mod controller;
pub mod error;
pub mod loads;
pub mod metrics;
pub mod rbac;
mod watch;

pub use config::{Config, GateMode};
pub use controller::run;
pub use error::Error;

/// The controller's name (ServiceAccount, Events reporter, metric prefix).
pub const CONTROLLER_NAME: &str = "load-soothe-controller";
