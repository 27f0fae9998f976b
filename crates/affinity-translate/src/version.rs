//! The Velero releases whose behaviour is modelled, and what each reads.
//!
//! Velero decodes the node-agent configuration with Go's `encoding/json`,
//! which ignores keys its struct does not have: a key a newer release reads
//! is silently ignored by an older one (V1.1). The loader takes the version
//! the configuration is meant for, so that it says so instead of calling
//! the key unknown, and drops it as that release does.

use std::fmt;
use std::str::FromStr;

/// A Velero release (or the development branch) whose behaviour the
/// policies follow. Ordered by release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum VeleroVersion {
    /// v1.17.0.
    V1_17_0,
    /// v1.17.1.
    V1_17_1,
    /// v1.17.2.
    V1_17_2,
    /// v1.18.0.
    V1_18_0,
    /// v1.18.1.
    V1_18_1,
    /// v1.18.2.
    V1_18_2,
    /// v1.18.3.
    V1_18_3,
    /// The development branch, as of the commit named by [`MAIN_COMMIT`].
    Main,
}

/// The commit of Velero's `main` branch that [`VeleroVersion::Main`]
/// follows (repository velero-io/velero, committed 2026-08-21).
pub const MAIN_COMMIT: &str = "d2241adba0610dbc1fd57f8df32fdd4a39c36552";

impl VeleroVersion {
    /// Every modelled version, oldest first.
    pub const ALL: [VeleroVersion; 8] = [
        Self::V1_17_0,
        Self::V1_17_1,
        Self::V1_17_2,
        Self::V1_18_0,
        Self::V1_18_1,
        Self::V1_18_2,
        Self::V1_18_3,
        Self::Main,
    ];

    /// The newest release: the default.
    pub const NEWEST_RELEASE: VeleroVersion = Self::V1_18_3;

    /// The oldest modelled version.
    pub const OLDEST: VeleroVersion = Self::V1_17_0;

    /// `1.18.3`, or `main`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1_17_0 => "1.17.0",
            Self::V1_17_1 => "1.17.1",
            Self::V1_17_2 => "1.17.2",
            Self::V1_18_0 => "1.18.0",
            Self::V1_18_1 => "1.18.1",
            Self::V1_18_2 => "1.18.2",
            Self::V1_18_3 => "1.18.3",
            Self::Main => "main",
        }
    }

    /// The version of a Velero server image (`velero/velero:v1.18.1`,
    /// `registry.example.com/velero:v1.18.1@sha256:…`), if its tag names a
    /// modelled release. Images built from `main` carry no version tag and
    /// give `None`.
    pub fn from_image(image: &str) -> Option<Self> {
        let without_digest = image.split('@').next().unwrap_or(image);
        let (repository, tag) = without_digest.rsplit_once(':')?;
        // `host:port/velero` without a tag: the colon belongs to the host.
        if tag.contains('/') || repository.is_empty() {
            return None;
        }
        let release = tag.strip_prefix('v')?;
        Self::ALL
            .into_iter()
            .find(|version| *version != Self::Main && version.as_str() == release)
    }
}

impl fmt::Display for VeleroVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A version that is not modelled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unsupported Velero version {given:?}: expected one of 1.17.0, 1.17.1, 1.17.2, 1.18.0, 1.18.1, 1.18.2, 1.18.3 (a leading v is allowed; 1.17 and 1.18 mean their newest patch release) or main"
)]
pub struct UnsupportedVersion {
    /// What was given.
    pub given: String,
}

impl FromStr for VeleroVersion {
    type Err = UnsupportedVersion;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let unsupported = || UnsupportedVersion {
            given: text.to_owned(),
        };
        if text == "main" {
            return Ok(Self::Main);
        }
        let release = text.strip_prefix('v').unwrap_or(text);
        let newest_patch = |minor: &str| {
            Self::ALL
                .into_iter()
                .rev()
                .find(|version| version.as_str().starts_with(&format!("{minor}.")))
        };
        match release {
            "1.17" | "1.18" => newest_patch(release).ok_or_else(unsupported),
            _ => Self::ALL
                .into_iter()
                .find(|version| *version != Self::Main && version.as_str() == release)
                .ok_or_else(unsupported),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_as_written_and_print_back() {
        for version in VeleroVersion::ALL {
            assert_eq!(version.as_str().parse::<VeleroVersion>(), Ok(version));
        }
        assert_eq!("v1.18.1".parse(), Ok(VeleroVersion::V1_18_1));
        assert_eq!("1.17".parse(), Ok(VeleroVersion::V1_17_2));
        assert_eq!("1.18".parse(), Ok(VeleroVersion::V1_18_3));
        for bad in [
            "1.16.0", "1.18.9", "v1.18", "latest", "", "vmain", "1.18.1 ",
        ] {
            if bad == "v1.18" {
                assert_eq!(bad.parse(), Ok(VeleroVersion::V1_18_3));
                continue;
            }
            let error = bad.parse::<VeleroVersion>().unwrap_err();
            assert!(error.to_string().contains("expected one of"), "{error}");
        }
    }

    #[test]
    fn the_version_of_a_server_image_is_its_release_tag() {
        let of = VeleroVersion::from_image;
        assert_eq!(of("velero/velero:v1.18.1"), Some(VeleroVersion::V1_18_1));
        assert_eq!(
            of("registry.example.com:5000/velero/velero:v1.17.0@sha256:abc"),
            Some(VeleroVersion::V1_17_0)
        );
        assert_eq!(of("registry.example.com:5000/velero/velero"), None);
        assert_eq!(of("velero/velero:main"), None);
        assert_eq!(of("velero/velero:v1.16.2"), None);
        assert_eq!(of("velero/velero"), None);
    }
}
