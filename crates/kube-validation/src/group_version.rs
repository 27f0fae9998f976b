//! `apiVersion` strings → API group and version, as apimachinery's
//! `schema.ParseGroupVersion` reads them (`k8s.io/apimachinery/pkg/runtime/schema/group_version.go`).

/// An API group and version (`group/version`; the core group is empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupVersion<'a> {
    /// API group (`""` for the core group).
    pub group: &'a str,
    /// Version (may be empty).
    pub version: &'a str,
}

/// An `apiVersion` with more than one `/`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected GroupVersion string: {0}")]
pub struct GroupVersionError(pub String);

/// Split an `apiVersion`: `""` and `"/"` are the empty group and version,
/// no `/` is a core-group version (`v1`), one `/` separates group and
/// version (either may be empty), more than one is an error.
pub fn parse_group_version(api_version: &str) -> Result<GroupVersion<'_>, GroupVersionError> {
    if api_version.is_empty() || api_version == "/" {
        return Ok(GroupVersion {
            group: "",
            version: "",
        });
    }
    match api_version.split_once('/') {
        None => Ok(GroupVersion {
            group: "",
            version: api_version,
        }),
        Some((_, version)) if version.contains('/') => {
            Err(GroupVersionError(api_version.to_owned()))
        }
        Some((group, version)) => Ok(GroupVersion { group, version }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// apimachinery's `TestGroupVersionParse` facts, plus the error case.
    #[test]
    fn splits_like_apimachinery() {
        for (input, group, version) in [
            ("", "", ""),
            ("/", "", ""),
            ("v1", "", "v1"),
            ("v1/", "v1", ""),
            ("/v1", "", "v1"),
            ("v1/a", "v1", "a"),
            ("cluster.x-k8s.io/v1beta2", "cluster.x-k8s.io", "v1beta2"),
        ] {
            assert_eq!(
                parse_group_version(input),
                Ok(GroupVersion { group, version }),
                "{input:?}"
            );
        }
        assert_eq!(
            parse_group_version("a/b/c").unwrap_err().to_string(),
            "unexpected GroupVersion string: a/b/c"
        );
        assert!(parse_group_version("//").is_err());
        assert!(parse_group_version("/v1/").is_err());
    }
}
