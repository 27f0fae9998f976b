//! What the tests of a controller binary run as a process need, in one
//! place: a [`Controller`] to start with a clean environment, the helpers
//! around its pipes and its end ([`closed_pipe`], [`stderr_lines`],
//! [`sigterm`], [`wait_with_deadline`], [`unreachable_kubeconfig`]), and
//! the [`checks`] every controller binary passes (its `manifests` command
//! and a start-up error, as a user sees them).
//!
//! A dev-dependency of the binaries only, on the standard library alone.
#![warn(missing_docs)]

pub mod checks;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Environment variables removed from every run: the test's own settings
/// must not change what the binary prints.
const CLEARED: &[&str] = &[
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "RUST_LOG",
    "KUBECONFIG",
    "NO_COLOR",
];

/// A controller binary under test.
#[derive(Clone, Copy, Debug)]
pub struct Controller {
    /// The built binary (`env!("CARGO_BIN_EXE_<name>")`).
    pub bin: &'static str,
    /// Its name, which starts its error lines (`NAME: error: …`).
    pub name: &'static str,
    /// Its own environment variables that would change a run (flags
    /// settable by env var), removed as well.
    pub cleared_env: &'static [&'static str],
    /// Arguments every run of the controller needs besides the ones a check
    /// gives (`--datamover acme`).
    pub run_args: &'static [&'static str],
}

impl Controller {
    /// A command for the binary with the environment cleared of
    /// `RUST_BACKTRACE`, `RUST_LIB_BACKTRACE`, `RUST_LOG`, `KUBECONFIG`,
    /// `NO_COLOR` and [`Controller::cleared_env`].
    pub fn command(&self) -> Command {
        let mut c = Command::new(self.bin);
        for name in CLEARED.iter().chain(self.cleared_env) {
            c.env_remove(name);
        }
        c
    }
}

/// The write end of a pipe whose read end is already closed: every write
/// fails with `EPIPE`, as when `| head` has exited.
pub fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap_or_else(|e| panic!("pipe: {e}"));
    drop(reader);
    Stdio::from(writer)
}

/// The lines a process wrote to standard error.
pub fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Writes, in `dir`, a kubeconfig naming a loopback port nothing listens
/// on, and returns its path.
pub fn unreachable_kubeconfig(dir: &Path) -> PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:9\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n",
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

/// A fresh directory under the system's temporary directory, named after
/// `prefix`, `name` and this process.
pub fn temp_dir(prefix: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Sends SIGTERM to `child` (as Kubernetes does to stop a pod).
pub fn sigterm(child: &Child) {
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(status.success(), "kill -TERM {} failed", child.id());
}

/// Waits for `child` to exit and returns its exit code; kills it and
/// panics if it is still running after `deadline`. Blocks the thread: in
/// an async test whose runtime also serves the child, poll
/// [`Child::try_wait`] with the runtime's sleep instead.
pub fn wait_with_deadline(child: &mut Child, deadline: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("wait: {e}")) {
            return status.code();
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            panic!("the controller did not exit within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
