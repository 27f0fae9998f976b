//! The launcher of the test bed: the real control plane, built from the
//! upstream Go modules pinned under `testbed/` (`bash testbed/build.sh`),
//! started on loopback for tests and for people.
//!
//! ```no_run
//! # async fn example() -> Result<(), kube_testbed::Error> {
//! use kube_testbed::Testbed;
//!
//! let bed = Testbed::builder().with_scheduler().start().await?;
//! let namespace = bed.namespace("demo").await?;
//! let client = bed.client();
//! # let _ = (namespace, client);
//! # Ok(()) }
//! ```
//!
//! # What runs
//!
//! - etcd on two free loopback ports (client and peer), its data in the
//!   bed's temporary directory.
//! - kube-apiserver on a free loopback port, with a CA generated at start
//!   that signs its serving certificate (127.0.0.1, ::1, localhost) and
//!   the client certificates it accepts (`--client-ca-file`); a static
//!   admin token (`--token-auth-file`); RBAC; service-account keys
//!   generated at start, so the TokenRequest API works; no endpoint
//!   reconciler (nothing is reachable at a Service IP). Admission is the
//!   default set less the plugins in [`DISABLED_ADMISSION_PLUGINS`], each
//!   with its reason.
//! - Optionally kube-controller-manager, kube-scheduler and the Velero
//!   server ([`Builder`]).
//!
//! Each component's output goes to `logs/<component>.log` in the bed's
//! directory ([`Testbed::log_path`]); a component that fails to start or
//! to become ready is reported with the end of its log.
//!
//! # No orphans
//!
//! Dropping a [`Testbed`] stops its components, also while a panic
//! unwinds. When the process ends without dropping it (a `static` bed such
//! as [`shared`], `std::process::exit`, SIGKILL), each component stops all
//! the same: it runs under a small `bash` supervisor that watches a pipe
//! only this process holds, and stops the component when the pipe closes.
//! (The workspace forbids `unsafe`, which rules out
//! `prctl(PR_SET_PDEATHSIG)` in a `pre_exec` hook.) A cleaner process
//! removes the bed's directory in that case.
//!
//! # Tests
//!
//! Tests use [`shared`] (one bed per test binary) with a namespace each
//! ([`Testbed::namespace`]), or a bed of their own when they need other
//! components or break it on purpose ([`Testbed::restart_apiserver`],
//! [`Testbed::compact_etcd`]). A test that cannot find the bed fails with
//! an error naming `bash testbed/build.sh`. Setting `KUBE_TESTBED_SKIP=1`
//! is the one way to skip them: [`skip_requested`] then prints a
//! `SKIPPED` line and the test returns.
//!
//! # Environment
//!
//! | variable | effect |
//! |---|---|
//! | `KUBE_TESTBED_DIR` | the built bed to use (default: `testbed/` under the cargo target directory, see [`Layout::discover`]) |
//! | `KUBE_TESTBED_SKIP` | `1` skips the real-server tests ([`skip_requested`]) |
//! | `KUBE_TESTBED_SCHEDULER`, `KUBE_TESTBED_CONTROLLER_MANAGER`, `KUBE_TESTBED_VELERO` | `kube-testbed up`'s `--scheduler`, `--controller-manager`, `--velero` |
//!
//! # For people
//!
//! `cargo run -p kube-testbed -- up [--scheduler] [--controller-manager]
//! [--velero]` starts a bed, prints its kubeconfig and an
//! `export KUBECONFIG=...` line, and runs until Ctrl-C or SIGTERM.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod admission;
mod cli;
pub mod deploy;
mod error;
mod kubeconfig;
mod locate;
mod pki;
mod shared;
mod supervise;
mod testbed;

pub use admission::{DISABLED_ADMISSION_PLUGINS, DISABLED_CONTROLLERS, Disabled, When};
pub use cli::{Cli, Command, UpArgs, run};
pub use error::{BUILD_COMMAND, Error};
pub use locate::{DIR_ENV, Layout, Versions};
pub use shared::{SKIP_ENV, shared, skip_requested, try_shared};
pub use supervise::process_alive;
pub use testbed::{
    ADMIN_USER, Builder, Component, SERVICE_ACCOUNT_ISSUER, SERVICE_CLUSTER_IP_RANGE, Testbed,
};
