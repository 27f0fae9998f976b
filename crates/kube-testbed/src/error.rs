//! The one error type of the launcher.

use std::path::PathBuf;
use std::time::Duration;

use crate::Component;

/// The command that builds the test bed, named by every error that a
/// missing or incomplete bed causes.
pub const BUILD_COMMAND: &str = "bash testbed/build.sh";

/// Why the test bed could not be found, started, or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A program of the bed is not where the bed keeps it.
    #[error(
        "the test bed has no {name} at {}: build the test bed with `{BUILD_COMMAND}` \
         (or point KUBE_TESTBED_DIR at a built one)",
        path.display()
    )]
    MissingBinary {
        /// The program's name (`etcd`, `kube-apiserver`, ...).
        name: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A file or directory the bed's build writes is not there.
    #[error(
        "the test bed has no {what} at {}: build the test bed with `{BUILD_COMMAND}` \
         (or point KUBE_TESTBED_DIR at a built one)",
        path.display()
    )]
    MissingFile {
        /// What the file is (`versions.env`, `the Velero CRDs`, ...).
        what: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// `versions.env` lacks a version or has a line that is not `KEY=VALUE`.
    #[error("{}: {problem}; rebuild the test bed with `{BUILD_COMMAND}`", path.display())]
    BadVersions {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A file or directory operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A key or certificate could not be generated.
    #[error("cannot generate {what}: {source}")]
    Certificate {
        /// Which key or certificate.
        what: String,
        /// The cause.
        source: rcgen::Error,
    },
    /// The system's random source failed.
    #[error("no random bytes for {what}: {detail}")]
    Random {
        /// What they were for.
        what: &'static str,
        /// The cause.
        detail: String,
    },
    /// A component could not be started at all (its supervisor did not run).
    #[error("cannot start {component}: {detail}")]
    Spawn {
        /// The component.
        component: Component,
        /// The cause.
        detail: String,
    },
    /// A component exited while the bed was waiting for it.
    #[error("{component} exited ({status}) before it was ready; the end of {}:\n{log_tail}", log.display())]
    Exited {
        /// The component.
        component: Component,
        /// How it exited.
        status: String,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        log_tail: String,
    },
    /// A component did not become ready in time.
    #[error(
        "{component} was not ready after {waited:?} (last answer: {last}); the end of {}:\n{log_tail}",
        log.display()
    )]
    NotReady {
        /// The component.
        component: Component,
        /// How long the bed waited.
        waited: Duration,
        /// The last probe's answer or error.
        last: String,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        log_tail: String,
    },
    /// A Kubernetes API call failed.
    #[error("{context}: {source}")]
    Kube {
        /// What was being done.
        context: String,
        /// The cause.
        source: kube::Error,
    },
    /// A kubeconfig written by the bed could not be read back.
    #[error("kubeconfig {}: {source}", path.display())]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: kube::config::KubeconfigError,
    },
    /// A `kubectl` command failed.
    #[error("`kubectl {args}` failed ({status}):\n{stderr}")]
    Kubectl {
        /// Its arguments (after `--kubeconfig`).
        args: String,
        /// How it exited.
        status: String,
        /// What it printed on standard error.
        stderr: String,
    },
    /// etcd refused or failed a request of its HTTP gateway.
    #[error("etcd {request}: {detail}")]
    Etcd {
        /// The request (`POST /v3/kv/compaction`).
        request: &'static str,
        /// The answer or the error.
        detail: String,
    },
    /// An argument given to the bed is not usable.
    #[error("{0}")]
    InvalidArgument(String),
    /// A wait on the API server ran out of time.
    #[error("timed out after {waited:?} waiting for {what}")]
    Timeout {
        /// What the bed was waiting for.
        what: String,
        /// How long it waited.
        waited: Duration,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn kube(context: impl Into<String>, source: kube::Error) -> Self {
        Error::Kube {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn certificate(what: impl Into<String>, source: rcgen::Error) -> Self {
        Error::Certificate {
            what: what.into(),
            source,
        }
    }
}
