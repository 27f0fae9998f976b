//! One bed per test binary.

use std::sync::OnceLock;

use crate::error::Error;
use crate::testbed::Testbed;

/// The environment variable that skips the real-server tests
/// (`KUBE_TESTBED_SKIP=1`); see [`skip_requested`].
pub const SKIP_ENV: &str = "KUBE_TESTBED_SKIP";

static SHARED: OnceLock<Result<Testbed, Error>> = OnceLock::new();

/// Whether `KUBE_TESTBED_SKIP` asks to skip the tests that need the real
/// server (set and not `0`, `false` or empty). When it does, this prints
/// a loud `SKIPPED` line; the test then returns:
///
/// ```no_run
/// if kube_testbed::skip_requested() {
///     return;
/// }
/// ```
pub fn skip_requested() -> bool {
    let skip = std::env::var(SKIP_ENV)
        .map(|value| !matches!(value.trim(), "" | "0" | "false"))
        .unwrap_or(false);
    if skip {
        eprintln!("SKIPPED: real-server tests disabled by {SKIP_ENV}");
        println!("SKIPPED: real-server tests disabled by {SKIP_ENV}");
    }
    skip
}

/// The bed shared by the tests of this process: etcd, kube-apiserver,
/// kube-controller-manager and kube-scheduler, started by the first
/// caller (on a thread of its own, so any test or runtime may call it)
/// and stopped when the process ends. Give each test its own namespace
/// ([`Testbed::namespace`]); a test that restarts or compacts needs a bed
/// of its own.
///
/// # Panics
///
/// When the bed cannot start, with the reason (a missing bed names
/// `bash testbed/build.sh`). Every later call panics with the same reason.
pub fn shared() -> &'static Testbed {
    match try_shared() {
        Ok(bed) => bed,
        Err(error) => panic!("the shared test bed did not start: {error}"),
    }
}

/// [`shared`] without the panic.
pub fn try_shared() -> Result<&'static Testbed, &'static Error> {
    SHARED
        .get_or_init(|| {
            let started = std::thread::Builder::new()
                .name("kube-testbed".to_owned())
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| Error::io("cannot build a Tokio runtime", e))?;
                    runtime.block_on(
                        Testbed::builder()
                            .with_controller_manager()
                            .with_scheduler()
                            .start(),
                    )
                })
                .map_err(|e| Error::io("cannot start the bed's thread", e))?;
            started.join().unwrap_or_else(|_| {
                Err(Error::InvalidArgument(
                    "the thread starting the shared bed panicked".to_owned(),
                ))
            })
        })
        .as_ref()
}
