//! Where the built test bed is, and what versions it holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// The environment variable naming a built test bed directory (one with
/// `bin/`, `crds/` and `versions.env`), overriding the default
/// `<target>/testbed`.
pub const DIR_ENV: &str = "KUBE_TESTBED_DIR";

/// A built test bed directory, as `bash testbed/build.sh` lays it out:
/// `bin/<program>`, `crds/<product>-<version>/*.yaml` and `versions.env`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The bed at `root` (nothing is checked until a file is asked for).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Layout { root: root.into() }
    }

    /// The bed this process uses: `$KUBE_TESTBED_DIR` if set and not empty,
    /// else `testbed/` under the cargo target directory, which is
    /// `$CARGO_TARGET_DIR` at run time, else `CARGO_TARGET_DIR` as it was
    /// when this crate was built, else the workspace's `target/`. A
    /// relative target directory is taken from the workspace root.
    pub fn discover() -> Self {
        if let Some(dir) = non_empty_env(DIR_ENV) {
            return Layout::new(dir);
        }
        let workspace = workspace_root();
        let target = non_empty_env("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .or_else(|| {
                option_env!("CARGO_TARGET_DIR")
                    .filter(|dir| !dir.is_empty())
                    .map(PathBuf::from)
            })
            .map(|dir| workspace.join(dir))
            .unwrap_or_else(|| workspace.join("target"));
        Layout::new(target.join("testbed"))
    }

    /// The bed's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The program `name` of the bed (`etcd`, `kube-apiserver`,
    /// `kube-controller-manager`, `kube-scheduler`, `kubectl`, `velero`),
    /// or an error naming the missing file and the build command.
    pub fn binary(&self, name: &str) -> Result<PathBuf, Error> {
        let path = self.root.join("bin").join(name);
        // `is_file` follows the links build.sh makes into its cache, so a
        // link whose target was removed counts as missing too.
        if path.is_file() {
            Ok(path)
        } else {
            Err(Error::MissingBinary {
                name: name.to_owned(),
                path,
            })
        }
    }

    /// The directory of the CRDs of `product` at `version`
    /// (`crds/velero-v1.18.3`), or an error naming the build command.
    pub fn crds(&self, product: &str, version: &str) -> Result<PathBuf, Error> {
        let path = self.root.join("crds").join(format!("{product}-{version}"));
        if path.is_dir() {
            Ok(path)
        } else {
            Err(Error::MissingFile {
                what: format!("CRDs of {product} {version}"),
                path,
            })
        }
    }

    /// Reads `versions.env`.
    pub fn versions(&self) -> Result<Versions, Error> {
        let path = self.root.join("versions.env");
        let text = std::fs::read_to_string(&path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                Error::MissingFile {
                    what: "versions.env".to_owned(),
                    path: path.clone(),
                }
            } else {
                Error::io(format!("cannot read {}", path.display()), source)
            }
        })?;
        Versions::parse(&text).map_err(|problem| Error::BadVersions { path, problem })
    }
}

/// The versions of the programs and CRDs in a bed, read from its
/// `versions.env` (written by `bash testbed/build.sh`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versions {
    /// `ETCD_VERSION`, e.g. `v3.6.16`.
    pub etcd: String,
    /// `KUBERNETES_VERSION`, e.g. `v1.37.2`: what `/version` reports as `gitVersion`.
    pub kubernetes: String,
    /// `VELERO_VERSION`: the Velero server and the CRDs in `crds/velero-<it>`.
    pub velero: String,
    /// `VELERO_PREVIOUS_VERSION`: the CRDs in `crds/velero-crds-<it>`.
    pub velero_previous: String,
    /// `CLUSTER_API_VERSION`: the CRDs in `crds/cluster-api-<it>`.
    pub cluster_api: String,
    /// `CAPV_VERSION`: the CRDs in `crds/capv-<it>`.
    pub capv: String,
    /// Every `KEY=VALUE` of the file, the ones above included.
    pub all: BTreeMap<String, String>,
}

impl Versions {
    /// The minor of [`Versions::kubernetes`] (`37` for `v1.37.2`); 0 when
    /// it is not a `v1.N[.P]` version.
    pub fn kubernetes_minor(&self) -> u32 {
        self.kubernetes
            .trim_start_matches('v')
            .split('.')
            .nth(1)
            .and_then(|minor| minor.parse().ok())
            .unwrap_or(0)
    }
}

impl Versions {
    /// Parses the text of a `versions.env`: `KEY=VALUE` lines, blank lines
    /// and `#` comments. Every version named above must be present.
    pub fn parse(text: &str) -> Result<Versions, String> {
        let mut all = BTreeMap::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                return Err(format!("line {} is not KEY=VALUE: {line:?}", index + 1));
            };
            all.insert(key.trim().to_owned(), value.trim().to_owned());
        }
        let get = |key: &str| match all.get(key) {
            Some(value) if !value.is_empty() => Ok(value.clone()),
            _ => Err(format!("no {key}")),
        };
        Ok(Versions {
            etcd: get("ETCD_VERSION")?,
            kubernetes: get("KUBERNETES_VERSION")?,
            velero: get("VELERO_VERSION")?,
            velero_previous: get("VELERO_PREVIOUS_VERSION")?,
            cluster_api: get("CLUSTER_API_VERSION")?,
            capv: get("CAPV_VERSION")?,
            all,
        })
    }
}

/// The workspace this crate belongs to (`crates/kube-testbed/../..`).
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

pub(crate) fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_env_as_build_sh_writes_it() {
        let text = "# Written by testbed/build.sh: the versions in this test bed.\n\
                    ETCD_VERSION=v3.6.16\nKUBERNETES_VERSION=v1.37.2\nVELERO_VERSION=v1.18.3\n\
                    VELERO_PREVIOUS_VERSION=v1.17.2\nCLUSTER_API_VERSION=v1.14.2\nCAPV_VERSION=v1.14.0\n";
        let versions = Versions::parse(text).unwrap();
        assert_eq!(versions.etcd, "v3.6.16");
        assert_eq!(versions.kubernetes, "v1.37.2");
        assert_eq!(versions.velero_previous, "v1.17.2");
        assert_eq!(versions.all.len(), 6);
    }

    #[test]
    fn a_missing_version_is_named() {
        assert_eq!(
            Versions::parse("ETCD_VERSION=v3.6.16\n").unwrap_err(),
            "no KUBERNETES_VERSION"
        );
        assert!(
            Versions::parse("nonsense\n")
                .unwrap_err()
                .contains("line 1 is not KEY=VALUE")
        );
    }

    #[test]
    fn a_missing_binary_names_the_build_command() {
        let layout = Layout::new("/nonexistent/testbed");
        let message = layout.binary("etcd").unwrap_err().to_string();
        assert!(
            message.contains("no etcd at /nonexistent/testbed/bin/etcd"),
            "{message}"
        );
        assert!(message.contains("bash testbed/build.sh"), "{message}");
    }
}
