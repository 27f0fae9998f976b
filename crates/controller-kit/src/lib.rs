//! The shared runtime of the placement-policies controllers.
//!
//! A controller binary's `main` is a few lines:
//!
//! ```no_run
//! # async fn demo() -> anyhow_like::Result<()> {
//! use clap::Parser;
//! use controller_kit::{ControllerArgs, Shutdown};
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     common: ControllerArgs,
//! }
//! let cli = Cli::parse();
//! controller_kit::telemetry::init_tracing(cli.common.log_format)?;
//! let client = controller_kit::args::kube_client(&cli.common).await?;
//! let shutdown = Shutdown::new();
//! shutdown.listen_for_signals()?;
//! // my_controller::run(client, config, shutdown.clone()).await?;
//! std::process::exit(shutdown.reason().map_or(0, |r| r.exit_code()));
//! # }
//! # mod anyhow_like { pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>; }
//! ```
//!
//! and the library's `run(client, config, shutdown)` uses the pieces here:
//! [`metrics::ControllerMetrics`] on a prometheus-client registry served by
//! [`server::HealthServer`] (`/metrics`, `/healthz`, `/readyz`),
//! [`leader::acquire_leadership`] (losing the Lease fires the [`Shutdown`]
//! token with a non-zero exit code), [`events::EventPublisher`] (respects
//! `--dry-run`); [`runner::run_controller`] ties
//! the server, leader election and the work together, and
//! [`snapshot::Runtime`] is the work of a controller that decides over a
//! snapshot of everything it watches (index, pure pass, executor).
//! [`precondition::require`] checks what the controller needs before it
//! acts (and keeps checking while it cannot tell), and [`fleet::supervise`]
//! runs one such loop per object of a watched kind.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod api_error;
pub mod args;
pub mod error;
pub mod events;
pub mod fence;
pub mod fleet;
pub mod leader;
pub mod metrics;
pub mod precondition;
pub mod process;
pub mod runner;
pub mod server;
pub mod shutdown;
pub mod snapshot;
pub mod telemetry;

pub use api_error::ApiErrorKind;
pub use args::{ControllerArgs, LeaderElectionArgs, LeaderElectionConfig, LogFormat};
pub use error::Error;
pub use fence::WriteFence;
pub use shutdown::{Shutdown, ShutdownReason};
