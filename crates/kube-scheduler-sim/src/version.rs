//! The Kubernetes releases whose kube-scheduler the simulator follows
//! (C.73): each minor release is a value, and what differs between them
//! is asked of that value, never of a cargo feature.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A Kubernetes minor release whose kube-scheduler default profile the
/// simulator can follow. Ordered by release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[non_exhaustive]
pub enum KubernetesVersion {
    /// Kubernetes 1.34.
    V1_34,
    /// Kubernetes 1.35.
    V1_35,
    /// Kubernetes 1.36.
    V1_36,
    /// Kubernetes 1.37, the newest supported release and the default.
    #[default]
    V1_37,
}

impl KubernetesVersion {
    /// Every supported release, oldest first.
    pub const ALL: [KubernetesVersion; 4] = [Self::V1_34, Self::V1_35, Self::V1_36, Self::V1_37];

    /// The newest supported release, the default.
    pub const LATEST: KubernetesVersion = Self::V1_37;

    /// The minor version number (`37` for 1.37).
    pub fn minor(self) -> u32 {
        match self {
            Self::V1_34 => 34,
            Self::V1_35 => 35,
            Self::V1_36 => 36,
            Self::V1_37 => 37,
        }
    }

    /// The release of a minor version number, when it is supported.
    pub fn from_minor(minor: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.minor() == minor)
    }

    /// The release of an API server's `/version` answer (`major` `"1"`,
    /// `minor` such as `"37"` or, on some managed clusters, `"37+"`).
    pub fn from_server_version(major: &str, minor: &str) -> Result<Self, VersionError> {
        let given = format!("{major}.{minor}");
        let minor = minor.trim().trim_end_matches('+');
        parse_major_minor(major.trim(), minor, &given)
    }

    /// The supported release nearest to an API server's `/version` answer
    /// (as [`KubernetesVersion::from_server_version`] reads it), for a
    /// server release outside the supported ones; `None` when it is not a
    /// Kubernetes 1.x version at all.
    pub fn nearest_to_server_version(major: &str, minor: &str) -> Option<Self> {
        if major.trim() != "1" {
            return None;
        }
        let minor: u32 = minor.trim().trim_end_matches('+').parse().ok()?;
        Self::ALL
            .into_iter()
            .min_by_key(|v| v.minor().abs_diff(minor))
    }

    /// Whether NodeResourcesBalancedAllocation scores the change a pod
    /// makes to a node's balance rather than the balance after placing it
    /// (C.74): from 1.36.
    pub fn balanced_allocation_scores_the_change(self) -> bool {
        self >= Self::V1_36
    }

    /// The supported releases as text (`1.34, 1.35, 1.36, 1.37`).
    pub fn supported_list() -> String {
        Self::ALL
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "1.{}", self.minor())
    }
}

/// Why a Kubernetes version is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VersionError {
    /// Not `MAJOR.MINOR[.PATCH]` (with an optional `v` and build suffix).
    #[error(
        "{given:?} is not a Kubernetes version: expected MAJOR.MINOR or MAJOR.MINOR.PATCH (for example 1.37 or v1.37.2)"
    )]
    Malformed {
        /// The text given.
        given: String,
    },
    /// A well-formed version the simulator does not follow.
    #[error("Kubernetes {given} is not supported: the simulator follows {supported}")]
    Unsupported {
        /// The version given.
        given: String,
        /// The supported releases.
        supported: String,
    },
}

fn parse_major_minor(
    major: &str,
    minor: &str,
    given: &str,
) -> Result<KubernetesVersion, VersionError> {
    let malformed = || VersionError::Malformed {
        given: given.to_owned(),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(major) || !digits(minor) {
        return Err(malformed());
    }
    let unsupported = || VersionError::Unsupported {
        given: given.to_owned(),
        supported: KubernetesVersion::supported_list(),
    };
    if major != "1" {
        return Err(unsupported());
    }
    let minor: u32 = minor.parse().map_err(|_| unsupported())?;
    KubernetesVersion::from_minor(minor).ok_or_else(unsupported)
}

impl FromStr for KubernetesVersion {
    type Err = VersionError;

    /// `1.37`, `v1.37`, `1.37.2`, `v1.37.2`, and build suffixes such as
    /// `v1.37.2-gke.1200` or `v1.37.2+k3s1`: the patch and the suffix do
    /// not change the scheduler's default profile.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        let bare = trimmed.strip_prefix('v').unwrap_or(trimmed);
        let core = bare.split(['-', '+']).next().unwrap_or_default();
        let mut parts = core.split('.');
        let (Some(major), Some(minor)) = (parts.next(), parts.next()) else {
            return Err(VersionError::Malformed {
                given: trimmed.to_owned(),
            });
        };
        let patch_ok = match (parts.next(), parts.next()) {
            (None, None) => true,
            (Some(patch), None) => !patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit()),
            _ => false,
        };
        if !patch_ok {
            return Err(VersionError::Malformed {
                given: trimmed.to_owned(),
            });
        }
        parse_major_minor(major, minor, trimmed)
    }
}

impl Serialize for KubernetesVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KubernetesVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_with_or_without_patch_prefix_and_suffix() {
        for text in [
            "1.37",
            "v1.37",
            "1.37.2",
            "v1.37.2",
            "v1.37.2-gke.1200",
            "v1.37.2+k3s1",
            " 1.37 ",
        ] {
            assert_eq!(text.parse(), Ok(KubernetesVersion::V1_37), "{text}");
        }
        assert_eq!("1.34.4".parse(), Ok(KubernetesVersion::V1_34));
    }

    #[test]
    fn malformed_and_unsupported_versions_are_refused_with_the_supported_list() {
        for text in ["", "1", "1.x", "latest", "1.37.2.1", "1..37", "v1.37."] {
            assert!(
                matches!(
                    text.parse::<KubernetesVersion>(),
                    Err(VersionError::Malformed { .. })
                ),
                "{text:?}"
            );
        }
        let error = "1.33".parse::<KubernetesVersion>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "Kubernetes 1.33 is not supported: the simulator follows 1.34, 1.35, 1.36, 1.37"
        );
        assert!(matches!(
            "2.0".parse::<KubernetesVersion>(),
            Err(VersionError::Unsupported { .. })
        ));
    }

    #[test]
    fn server_versions_with_a_plus_suffix_parse() {
        assert_eq!(
            KubernetesVersion::from_server_version("1", "36+"),
            Ok(KubernetesVersion::V1_36)
        );
        assert!(KubernetesVersion::from_server_version("1", "").is_err());
        assert_eq!(
            KubernetesVersion::nearest_to_server_version("1", "31+"),
            Some(KubernetesVersion::V1_34)
        );
        assert_eq!(
            KubernetesVersion::nearest_to_server_version("1", "40"),
            Some(KubernetesVersion::V1_37)
        );
        assert_eq!(KubernetesVersion::nearest_to_server_version("2", "0"), None);
    }

    #[test]
    fn display_round_trips_through_parse_for_every_release() {
        for version in KubernetesVersion::ALL {
            assert_eq!(version.to_string().parse(), Ok(version));
            let json = serde_json::to_string(&version).unwrap();
            assert_eq!(
                serde_json::from_str::<KubernetesVersion>(&json).unwrap(),
                version
            );
        }
        assert_eq!(KubernetesVersion::default(), KubernetesVersion::LATEST);
    }
}
