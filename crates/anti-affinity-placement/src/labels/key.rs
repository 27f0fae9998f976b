//! Which label keys carry the host, and which annotation records them.

use kube_validation::validate_qualified_name;

/// CAPV's key (B.1); CAPI copies it from Machine to Node (B.5). Default.
pub const DEFAULT_HOST_LABEL_KEY: &str = "node.cluster.x-k8s.io/esxi-host";
/// A key kubelets cannot set on their own Node (NodeRestriction, B.7) and
/// that CAPI also syncs (B.5): the recommended key for security-relevant
/// topology.
pub const NODE_RESTRICTION_HOST_LABEL_KEY: &str = "node-restriction.kubernetes.io/esxi-host";
/// Our Node annotation listing, sorted and comma-joined, the label keys this
/// library manages on the Node (like CAPI's
/// `cluster.x-k8s.io/labels-from-machine`, B.5).
pub const DEFAULT_MANAGED_LABELS_ANNOTATION: &str = "policyctl/managed-host-labels";

const NODE_RESTRICTION_DOMAIN: &str = "node-restriction.kubernetes.io";

/// A label (or annotation) key that is a valid qualified name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LabelKey(String);

/// A key that is not a valid qualified name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {value:?} is not a valid label key: {}", problems.join("; "))]
#[non_exhaustive]
pub struct LabelKeyError {
    /// Where the key came from (e.g. `--host-label-key`).
    pub field: String,
    /// The key as given.
    pub value: String,
    /// apimachinery's complaints.
    pub problems: Vec<String>,
}

impl LabelKey {
    /// Validate `key`; `field` names its origin for the error message.
    pub fn new(field: &str, key: &str) -> Result<Self, LabelKeyError> {
        let problems = validate_qualified_name(key);
        if problems.is_empty() {
            Ok(Self(key.to_owned()))
        } else {
            Err(LabelKeyError {
                field: field.to_owned(),
                value: key.to_owned(),
                problems,
            })
        }
    }

    /// The key text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn prefix(&self) -> &str {
        self.0.split_once('/').map_or("", |(prefix, _)| prefix)
    }

    /// Whether kubelets are forbidden to set this key on their Node
    /// (`node-restriction.kubernetes.io` or a subdomain of it; B.7).
    pub fn is_kubelet_protected(&self) -> bool {
        let prefix = self.prefix();
        prefix == NODE_RESTRICTION_DOMAIN || prefix.ends_with(".node-restriction.kubernetes.io")
    }

    /// Whether Cluster API copies this key from Machine to Node by default
    /// (B.5: `node-role.kubernetes.io`, and `node-restriction.kubernetes.io`
    /// or `node.cluster.x-k8s.io` and their subdomains).
    pub fn is_synced_by_cluster_api(&self) -> bool {
        super::is_default_managed_label(&self.0)
    }
}

impl std::fmt::Display for LabelKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl LabelKey {
    /// A key known valid at compile time (the constants above).
    pub(crate) fn trusted(key: &'static str) -> Self {
        Self(key.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> LabelKey {
        LabelKey::new("key", k).unwrap()
    }

    #[test]
    fn trust_and_sync_classification() {
        assert!(!key(DEFAULT_HOST_LABEL_KEY).is_kubelet_protected());
        assert!(key(DEFAULT_HOST_LABEL_KEY).is_synced_by_cluster_api());
        assert!(key(NODE_RESTRICTION_HOST_LABEL_KEY).is_kubelet_protected());
        assert!(key("example.node-restriction.kubernetes.io/host").is_kubelet_protected());
        assert!(key("example.node-restriction.kubernetes.io/host").is_synced_by_cluster_api());
        assert!(!key("CIS-node").is_synced_by_cluster_api());
        assert!(!key("xnode.cluster.x-k8s.io/h").is_synced_by_cluster_api());
    }

    #[test]
    fn invalid_keys_name_the_field() {
        let err = LabelKey::new("--host-label-key", "bad key/").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--host-label-key: \"bad key/\" is not a valid label key")
        );
    }
}
