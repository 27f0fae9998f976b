//! `policyctl` as the `kubectl` plugin: the program file name that makes
//! it `kubectl policy …`.

/// The name that makes the binary a `kubectl` plugin (`kubectl policy …`).
pub const KUBECTL_PLUGIN_NAME: &str = "kubectl-policy";

/// Whether the program file name (`argv[0]`) is the kubectl plugin's.
pub fn is_kubectl_plugin(argv0: Option<&std::ffi::OsStr>) -> bool {
    argv0
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_stem)
        .is_some_and(|stem| stem == KUBECTL_PLUGIN_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_is_recognised_by_its_file_name() {
        use std::ffi::OsStr;
        assert!(is_kubectl_plugin(Some(OsStr::new("kubectl-policy"))));
        assert!(is_kubectl_plugin(Some(OsStr::new(
            "/usr/local/bin/kubectl-policy"
        ))));
        // Windows: `kubectl-policy.exe`.
        assert!(is_kubectl_plugin(Some(OsStr::new("kubectl-policy.exe"))));
        assert!(!is_kubectl_plugin(Some(OsStr::new("policyctl"))));
        assert!(!is_kubectl_plugin(Some(OsStr::new("kubectl-policyctl"))));
        assert!(!is_kubectl_plugin(None));
    }
}
