//! Readings of `metadata` shared by every kind.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

// The namespace of a namespaced object, `default` when absent or empty: the
// one rule lives in `kube-validation` with the other Kubernetes rules.
pub use kube_validation::{DEFAULT_NAMESPACE, namespace_or_default};

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
    fn missing_creation_time_is_the_epoch() {
        assert_eq!(
            created_or_epoch(&ObjectMeta::default()),
            Timestamp::UNIX_EPOCH
        );
    }
}
