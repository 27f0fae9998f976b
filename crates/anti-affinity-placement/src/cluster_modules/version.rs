//! The vCenter version gate: cluster modules need vCenter 7 or later, read
//! the way CAPV reads `VSphereCluster.status.vCenterVersion` (A.5).
//!
//! CAPV parses the string with a strict semantic-version parser
//! (`github.com/blang/semver` v3.5.1 `New`): exactly `MAJOR.MINOR.PATCH`,
//! decimal numbers without leading zeroes that fit in 64 bits, then an
//! optional `-PRERELEASE` and `+BUILD`, each a dot-separated list of
//! non-empty `[0-9A-Za-z-]` identifiers (numeric prerelease identifiers
//! without leading zeroes). Nothing is trimmed and no `v` prefix is allowed,
//! so `"7.0"`, `"v7.0.3"` and `" 7.0.3"` are not versions and the gate is
//! closed, like for `""` and `"6.7.0"`.

use std::fmt;

/// The vCenter major version from which cluster modules exist.
pub const CLUSTER_MODULES_MIN_MAJOR: u64 = 7;

/// A version string that CAPV's parser accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VCenterVersion {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
    /// Prerelease identifiers (after `-`), as written.
    pub prerelease: Vec<String>,
    /// Build metadata identifiers (after `+`), as written.
    pub build: Vec<String>,
}

/// Why a version string is not a version (the parser's reason, in words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VersionError {
    /// The string is empty.
    #[error("the version is empty")]
    Empty,
    /// Fewer than three dot-separated parts.
    #[error("{0:?} has no MAJOR.MINOR.PATCH (write e.g. 7.0.3)")]
    NotThreeParts(String),
    /// A number part is not a number, has a leading zero or overflows.
    #[error(
        "{value:?}: the {part} number {number:?} is not a decimal number without leading zeroes that fits in 64 bits"
    )]
    BadNumber {
        /// The whole version string.
        value: String,
        /// `major`, `minor` or `patch`.
        part: &'static str,
        /// The offending text.
        number: String,
    },
    /// A prerelease identifier is empty, has a leading zero or a character
    /// outside `[0-9A-Za-z-]`.
    #[error("{value:?}: prerelease identifier {identifier:?} is invalid")]
    BadPrerelease {
        /// The whole version string.
        value: String,
        /// The offending identifier.
        identifier: String,
    },
    /// A build identifier is empty or has a character outside `[0-9A-Za-z-]`.
    #[error("{value:?}: build identifier {identifier:?} is invalid")]
    BadBuild {
        /// The whole version string.
        value: String,
        /// The offending identifier.
        identifier: String,
    },
}

fn only_digits(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_digit())
}

fn only_identifier_chars(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn leading_zero(text: &str) -> bool {
    text.len() > 1 && text.starts_with('0')
}

/// A `MAJOR`, `MINOR` or `PATCH` number: digits only (an empty string is
/// not a number), no leading zero, at most `u64::MAX`.
fn number(value: &str, part: &'static str, text: &str) -> Result<u64, VersionError> {
    let bad = || VersionError::BadNumber {
        value: value.to_owned(),
        part,
        number: text.to_owned(),
    };
    if !only_digits(text) || leading_zero(text) {
        return Err(bad());
    }
    text.parse::<u64>().map_err(|_| bad())
}

impl VCenterVersion {
    /// Parse `text` exactly as CAPV's semantic-version parser does.
    pub fn parse(text: &str) -> Result<Self, VersionError> {
        if text.is_empty() {
            return Err(VersionError::Empty);
        }
        let mut parts = text.splitn(3, '.');
        let (Some(major), Some(minor), Some(rest)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(VersionError::NotThreeParts(text.to_owned()));
        };
        let major = number(text, "major", major)?;
        let minor = number(text, "minor", minor)?;
        // Build metadata starts at the first `+`, the prerelease at the first
        // `-` before it.
        let (rest, build) = match rest.split_once('+') {
            Some((rest, build)) => (rest, Some(build)),
            None => (rest, None),
        };
        let (patch, prerelease) = match rest.split_once('-') {
            Some((patch, prerelease)) => (patch, Some(prerelease)),
            None => (rest, None),
        };
        let patch = number(text, "patch", patch)?;
        let prerelease = prerelease
            .map(|list| {
                list.split('.')
                    .map(|identifier| {
                        let valid = !identifier.is_empty()
                            && if only_digits(identifier) {
                                !leading_zero(identifier) && identifier.parse::<u64>().is_ok()
                            } else {
                                only_identifier_chars(identifier)
                            };
                        if valid {
                            Ok(identifier.to_owned())
                        } else {
                            Err(VersionError::BadPrerelease {
                                value: text.to_owned(),
                                identifier: identifier.to_owned(),
                            })
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?
            .unwrap_or_default();
        let build = build
            .map(|list| {
                list.split('.')
                    .map(|identifier| {
                        if !identifier.is_empty() && only_identifier_chars(identifier) {
                            Ok(identifier.to_owned())
                        } else {
                            Err(VersionError::BadBuild {
                                value: text.to_owned(),
                                identifier: identifier.to_owned(),
                            })
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?
            .unwrap_or_default();
        Ok(Self {
            major,
            minor,
            patch,
            prerelease,
            build,
        })
    }

    /// Whether this vCenter has cluster modules (major version ≥ 7).
    pub fn supports_cluster_modules(&self) -> bool {
        self.major >= CLUSTER_MODULES_MIN_MAJOR
    }
}

impl fmt::Display for VCenterVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.prerelease.is_empty() {
            write!(f, "-{}", self.prerelease.join("."))?;
        }
        if !self.build.is_empty() {
            write!(f, "+{}", self.build.join("."))?;
        }
        Ok(())
    }
}

/// CAPV's gate (`IsClusterCompatible`): `status.vCenterVersion` parses
/// ([`VCenterVersion::parse`]) and its major version is at least 7. Empty,
/// unparsable and 6.x versions close the gate.
pub fn cluster_modules_supported(vcenter_version: &str) -> bool {
    VCenterVersion::parse(vcenter_version).is_ok_and(|v| v.supports_cluster_modules())
}
