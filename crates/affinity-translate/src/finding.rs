//! Findings about a configuration (documented on [`Finding`]).

use std::fmt;

use serde::Serialize;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Velero fails (start-up, pod creation, a panic) or the setting cannot work.
    Error,
    /// Velero ignores or silently changes the setting.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Error => "error",
            Self::Warning => "warning",
        })
    }
}

/// What kind of problem a finding reports (stable, for programs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FindingKind {
    /// A key Velero does not know (silently ignored by Velero, C1.8).
    UnknownKey,
    /// A key that matched only case-insensitively (Go accepts it, C1.8).
    KeyCase,
    /// A number that Velero replaces or skips (`<= 0`, too large).
    InvalidNumber,
    /// A label selector that Velero cannot convert (concurrency rule skipped).
    InvalidSelector,
    /// A node affinity requirement the API server rejects.
    InvalidRequirement,
    /// A `null` `loadAffinity` entry (Velero panics, A2.6).
    NullEntry,
    /// A `loadAffinity` entry that selection never returns (A2.5).
    DeadEntry,
    /// `podResources` that Velero drops as a whole (C1.14).
    InvalidResources,
    /// A setting that has no effect in this combination.
    Ineffective,
    /// A name or label that the API server rejects.
    InvalidName,
    /// A key the chosen Velero version does not read yet (V1.1).
    NotReadAtVersion,
    /// A repository-maintenance entry that does not decode (R5.5).
    Undecodable,
    /// A repository-maintenance entry no BackupRepository reads (R5.2).
    UnknownEntry,
    /// A priority class that names no PriorityClass of the input (R5.11).
    MissingPriorityClass,
}

/// One problem found in a configuration.
///
/// Structured findings about a configuration: what is wrong, where, and
/// what Velero would do with it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// How bad it is.
    pub severity: Severity,
    /// What kind of problem it is.
    pub kind: FindingKind,
    /// JSON path of the offending field (`loadAffinity[1].nodeSelector...`),
    /// `""` for the whole document.
    pub path: String,
    /// What is wrong, with the offending value.
    pub message: String,
    /// What Velero does with it (rule number from the spec).
    pub velero: String,
}

impl Finding {
    pub(crate) fn new(
        severity: Severity,
        kind: FindingKind,
        path: impl Into<String>,
        message: impl Into<String>,
        velero: impl Into<String>,
    ) -> Self {
        Self {
            severity,
            kind,
            path: path.into(),
            message: message.into(),
            velero: velero.into(),
        }
    }

    pub(crate) fn warning(
        kind: FindingKind,
        path: impl Into<String>,
        message: impl Into<String>,
        velero: impl Into<String>,
    ) -> Self {
        Self::new(Severity::Warning, kind, path, message, velero)
    }

    pub(crate) fn error(
        kind: FindingKind,
        path: impl Into<String>,
        message: impl Into<String>,
        velero: impl Into<String>,
    ) -> Self {
        Self::new(Severity::Error, kind, path, message, velero)
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "<document>"
        } else {
            &self.path
        };
        write!(
            f,
            "{}: {}: {} (Velero: {})",
            self.severity, path, self.message, self.velero
        )
    }
}
