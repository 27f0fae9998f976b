//! The controllers at scale on the real API server: a measurement run by
//! hand (`cargo run --release -p controller-scale -- --help`), not part of
//! `cargo test` (a smoke test runs it at a tiny size).
//!
//! For each controller it starts a test bed of its own (etcd and
//! kube-apiserver from `testbed/`, with an audit log of every request at
//! `Metadata` level), applies the controller's generated manifests (its
//! ServiceAccount and RBAC, [`kube_testbed::deploy`]) and runs the built
//! controller binary as a process under that ServiceAccount's token. Then,
//! for each size (by default 1/10, 1/2 and all of the controller's full
//! size), it:
//!
//! 1. creates objects up to that size (as the admin, before the controller
//!    starts);
//! 2. starts the controller and times its readiness (`/readyz`) and its
//!    convergence (the objects in the state the controller should put
//!    them in, seen through a watch of this program);
//! 3. makes events (creates or updates of objects) at a fixed rate and
//!    takes, for each, the time from the answer to the event's request to
//!    the server's answer to the controller's write of the object the
//!    event concerns (the audit log's `stageTimestamp`; both clocks are
//!    this machine's);
//! 4. reads the controller's peak resident memory (`VmHWM` of
//!    `/proc/<pid>/status`);
//! 5. stops the controller (SIGTERM), makes changes while it is down,
//!    starts it again and times its convergence;
//! 6. counts, from the audit log, the controller's requests by verb and
//!    resource (keyed by its ServiceAccount user) during the events, and
//!    every LIST after the initial one of each watch.
//!
//! The machine's load average (`/proc/loadavg`) is recorded beside each
//! figure.

#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod audit;
mod driver;
pub mod report;
pub mod stats;
pub mod system;
mod workloads;

use std::path::PathBuf;
use std::time::Duration;

pub use driver::{BUILD_COMMAND, measure};
pub use report::{ControllerReport, EventReport, SizeReport};

/// The controllers this program measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Controller {
    /// `backup-queue-controller`: Velero Backups in one namespace.
    BackupQueue,
    /// `load-soothe-controller`: Velero DataUploads in one namespace.
    LoadSoothe,
    /// `host-label-controller`: Cluster API Machines and Nodes.
    HostLabel,
}

impl Controller {
    /// Every controller, in the order they are measured.
    pub const ALL: [Controller; 3] = [
        Controller::BackupQueue,
        Controller::LoadSoothe,
        Controller::HostLabel,
    ];

    /// The name of its binary (and package).
    pub fn binary(self) -> &'static str {
        match self {
            Controller::BackupQueue => "backup-queue-controller",
            Controller::LoadSoothe => "load-soothe-controller",
            Controller::HostLabel => "host-label-controller",
        }
    }

    /// The number of watched objects of the full-size run.
    pub fn full_size(self) -> usize {
        match self {
            Controller::BackupQueue => 10_000,
            Controller::LoadSoothe => 20_000,
            Controller::HostLabel => 5_000,
        }
    }
}

/// What to measure and how hard.
#[derive(Debug, Clone)]
pub struct Options {
    /// The controllers to measure, in this order.
    pub controllers: Vec<Controller>,
    /// Where the controller binaries are (`<dir>/<binary>`).
    pub bin_dir: PathBuf,
    /// The full size for every controller instead of its own
    /// ([`Controller::full_size`]).
    pub size: Option<usize>,
    /// The sizes measured, as fractions of the full size (ascending).
    pub fractions: Vec<f64>,
    /// Events made at [`Options::event_rate`] at each size.
    pub events: usize,
    /// Events per second.
    pub event_rate: f64,
    /// Updates that cause a long series of writes (completing the running
    /// Backup renumbers the queue), made one at a time at each size.
    pub slow_events: usize,
    /// Changes made while the controller is stopped, before its restart.
    pub restart_changes: usize,
    /// Requests in flight while creating the objects.
    pub create_concurrency: usize,
    /// Percentage of the Backups that wait in the queue (the rest are
    /// finished).
    pub queued_percent: u32,
    /// Nodes the DataUploads were accepted on (`load-soothe-controller`).
    pub nodes: usize,
    /// How long any one wait (readiness, convergence) may take.
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            controllers: Controller::ALL.to_vec(),
            bin_dir: PathBuf::from("target/release"),
            size: None,
            fractions: vec![0.1, 0.5, 1.0],
            events: 200,
            event_rate: 10.0,
            slow_events: 3,
            restart_changes: 100,
            create_concurrency: 16,
            queued_percent: 10,
            nodes: 500,
            timeout: Duration::from_secs(900),
        }
    }
}

impl Options {
    /// The sizes measured for `controller`: each fraction of its full
    /// size, at least 1, ascending, without repeats.
    pub fn sizes(&self, controller: Controller) -> Vec<usize> {
        let full = self.size.unwrap_or_else(|| controller.full_size());
        let mut sizes: Vec<usize> = self
            .fractions
            .iter()
            .map(|f| ((full as f64) * f).round().max(1.0) as usize)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_fractions_of_the_full_size_ascending_and_distinct() {
        let options = Options::default();
        assert_eq!(
            options.sizes(Controller::LoadSoothe),
            [2_000, 10_000, 20_000]
        );
        let tiny = Options {
            size: Some(2),
            fractions: vec![1.0, 0.1, 0.5],
            ..Options::default()
        };
        assert_eq!(tiny.sizes(Controller::HostLabel), [1, 2]);
    }
}
