//! Readings of `metadata` shared by every kind.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The namespace a namespaced object without `metadata.namespace` belongs to.
pub const DEFAULT_NAMESPACE: &str = "default";

/// The namespace of a namespaced object: `metadata.namespace`, or
/// [`DEFAULT_NAMESPACE`] when it is absent or empty.
///
/// An object read from the API server always carries its namespace (the
/// server fills an empty one from the request path on create:
/// `k8s.io/apiserver/pkg/registry/rest` `BeforeCreate` → `ValidNamespace`).
/// An object read from a manifest file may omit it, and `kubectl apply`
/// then creates it in the context's namespace, `default` unless configured.
/// Reading the file the way `kubectl` would apply it makes a file and the
/// cluster it came from give the same input. An empty string is treated as
/// absent, as both the API server and `kubectl` do.
pub fn namespace_or_default(namespace: Option<&str>) -> &str {
    match namespace {
        None | Some("") => DEFAULT_NAMESPACE,
        Some(namespace) => namespace,
    }
}

/// `metadata.creationTimestamp`, or the Unix epoch when absent (an object
/// written by hand into a file): such objects sort before every object the
/// API server created, deterministically.
pub fn created_or_epoch(metadata: &ObjectMeta) -> Timestamp {
    metadata
        .creation_timestamp
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |time| time.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_and_empty_namespaces_are_default_others_are_kept() {
        assert_eq!(namespace_or_default(None), "default");
        assert_eq!(namespace_or_default(Some("")), "default");
        assert_eq!(namespace_or_default(Some("velero")), "velero");
    }

    #[test]
    fn missing_creation_time_is_the_epoch() {
        assert_eq!(
            created_or_epoch(&ObjectMeta::default()),
            Timestamp::UNIX_EPOCH
        );
    }
}
