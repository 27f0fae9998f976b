//! The namespace of a namespaced object that does not say one.

/// The namespace a namespaced object without `metadata.namespace` belongs
/// to (`metav1.NamespaceDefault`).
pub const DEFAULT_NAMESPACE: &str = "default";

/// The namespace of a namespaced object: `metadata.namespace`, or
/// [`DEFAULT_NAMESPACE`] when it is absent or empty.
///
/// An object read from the API server always carries its namespace: on
/// create the server fills an empty one from the request path and refuses a
/// different one (`k8s.io/apiserver/pkg/registry/rest/meta.go`,
/// `EnsureObjectNamespaceMatchesRequestNamespace`, Kubernetes v1.35.4). An
/// object read from a manifest file may omit it, and `kubectl apply` then
/// creates it in the context's namespace, `default` unless configured.
/// Reading the file the way `kubectl` would apply it makes a file and the
/// cluster it came from give the same answer. An empty string is treated as
/// absent, as both the API server and `kubectl` do (`""` is
/// `metav1.NamespaceNone`, never a namespace's name).
///
/// ```
/// use kube_validation::namespace_or_default;
///
/// assert_eq!(namespace_or_default(None), "default");
/// assert_eq!(namespace_or_default(Some("")), "default");
/// assert_eq!(namespace_or_default(Some("velero")), "velero");
/// ```
#[inline]
pub fn namespace_or_default(namespace: Option<&str>) -> &str {
    match namespace {
        None | Some("") => DEFAULT_NAMESPACE,
        Some(namespace) => namespace,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_and_empty_namespaces_are_default_others_are_kept() {
        assert_eq!(namespace_or_default(None), "default");
        assert_eq!(namespace_or_default(Some("")), "default");
        assert_eq!(namespace_or_default(Some("velero")), "velero");
        // Not trimmed: a namespace of spaces is not a valid name, and the
        // API server would refuse it rather than default it.
        assert_eq!(namespace_or_default(Some(" ")), " ");
    }
}
