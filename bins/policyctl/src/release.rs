//! Which Kubernetes release's kube-scheduler the scheduling answers follow
//! (rule C.73): `--kubernetes-version`, else in live mode the API server's
//! `/version`, else the newest release the simulator supports.

use std::io::Write;

use kube_scheduler_sim::{KubernetesVersion, Options, VersionError};

/// Where the release came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ReleaseSource {
    /// Nothing said: the newest supported release.
    #[default]
    Newest,
    /// `--kubernetes-version`.
    Flag,
    /// The API server's `/version` (its `gitVersion`).
    Server(String),
    /// The API server's `/version` names a release the simulator does not
    /// follow (its `gitVersion`): the nearest supported one is used.
    NearestToServer(String),
}

/// The release the answers follow, and why.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KubernetesRelease {
    /// The release.
    pub version: KubernetesVersion,
    /// Where it came from.
    pub source: ReleaseSource,
}

impl KubernetesRelease {
    /// The simulator's default options for this release.
    pub fn options(&self) -> Options {
        Options {
            kubernetes_version: self.version,
            ..Options::default()
        }
    }

    /// How the JSON outputs state it: `"1.37"`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::Value::String(self.version.to_string())
    }
}

/// The API server's `/version` fields this needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerVersion {
    /// `major`, such as `"1"`.
    pub major: String,
    /// `minor`, such as `"37"` or `"37+"`.
    pub minor: String,
    /// `gitVersion`, such as `"v1.37.2"`.
    pub git_version: String,
}

/// Resolves the release: the flag wins, then the server's release; a
/// server release the simulator does not follow gives the nearest
/// supported one and a note on `stderr`.
pub fn resolve(
    flag: Option<KubernetesVersion>,
    server: Option<&ServerVersion>,
    stderr: &mut dyn Write,
) -> KubernetesRelease {
    if let Some(version) = flag {
        return KubernetesRelease {
            version,
            source: ReleaseSource::Flag,
        };
    }
    let Some(server) = server else {
        return KubernetesRelease::default();
    };
    match KubernetesVersion::from_server_version(&server.major, &server.minor) {
        Ok(version) => KubernetesRelease {
            version,
            source: ReleaseSource::Server(server.git_version.clone()),
        },
        Err(error) => {
            let version =
                KubernetesVersion::nearest_to_server_version(&server.major, &server.minor)
                    .unwrap_or(KubernetesVersion::LATEST);
            let reason = match error {
                VersionError::Unsupported { .. } => "a release the simulator does not follow",
                _ => "a version policyctl cannot read",
            };
            // If standard error is gone there is nowhere to note it.
            let _ = writeln!(
                stderr,
                "note: the API server reports Kubernetes {} ({reason}); the scheduling answers follow {version}, the nearest supported release (set --kubernetes-version to choose: {})",
                server.git_version,
                KubernetesVersion::supported_list()
            );
            KubernetesRelease {
                version,
                source: ReleaseSource::NearestToServer(server.git_version.clone()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(minor: &str) -> ServerVersion {
        ServerVersion {
            major: "1".to_owned(),
            minor: minor.to_owned(),
            git_version: format!("v1.{}.0", minor.trim_end_matches('+')),
        }
    }

    #[test]
    fn the_flag_wins_over_the_server() {
        let mut notes = Vec::new();
        let release = resolve(
            Some(KubernetesVersion::V1_35),
            Some(&server("37")),
            &mut notes,
        );
        assert_eq!(release.version, KubernetesVersion::V1_35);
        assert_eq!(release.source, ReleaseSource::Flag);
        assert!(notes.is_empty());
    }

    #[test]
    fn the_server_release_is_used_when_supported() {
        let mut notes = Vec::new();
        let release = resolve(None, Some(&server("36+")), &mut notes);
        assert_eq!(release.version, KubernetesVersion::V1_36);
        assert_eq!(release.source, ReleaseSource::Server("v1.36.0".to_owned()));
        assert!(notes.is_empty());
    }

    #[test]
    fn an_unsupported_server_release_gives_the_nearest_with_a_note() {
        let mut notes = Vec::new();
        let release = resolve(None, Some(&server("31")), &mut notes);
        assert_eq!(release.version, KubernetesVersion::V1_34);
        let note = String::from_utf8(notes).unwrap();
        assert_eq!(
            note,
            "note: the API server reports Kubernetes v1.31.0 (a release the simulator does not follow); the scheduling answers follow 1.34, the nearest supported release (set --kubernetes-version to choose: 1.34, 1.35, 1.36, 1.37)\n"
        );
        let release = resolve(None, Some(&server("40")), &mut Vec::new());
        assert_eq!(release.version, KubernetesVersion::V1_37);
    }

    #[test]
    fn nothing_said_is_the_newest_release() {
        let release = resolve(None, None, &mut Vec::new());
        assert_eq!(release.version, KubernetesVersion::LATEST);
        assert_eq!(release.source, ReleaseSource::Newest);
    }
}
