//! Machine → Node label propagation, as Cluster API's Machine controller
//! does it (B.5; `util/labels.GetManagedLabels` and the Node patch of
//! `machine_controller_noderef.go`).
//!
//! **Which labels** ([`MachineLabelSync::is_managed`]): a Machine label is
//! managed when the part of its key before the first `/` (the whole key if
//! it has none) is exactly `node-role.kubernetes.io`, or is
//! `node-restriction.kubernetes.io` or `node.cluster.x-k8s.io` or a
//! subdomain of either (`custom.node.cluster.x-k8s.io` is managed,
//! `gpu-node.cluster.x-k8s.io` is not, nor is
//! `company.xyz/node.cluster.x-k8s.io`), or when the whole key matches one
//! of the additional regular expressions (unanchored, like Go's
//! `MatchString`).
//!
//! **The plan** ([`MachineLabelSync::plan`]): every managed Machine label is
//! set on the Node (overwriting a different value, whoever set it). The
//! keys set by the previous sync are read from the Node annotation
//! [`LABELS_FROM_MACHINE_ANNOTATION`] (comma-separated); those the Machine
//! no longer has are removed. The annotation is then the managed keys,
//! sorted and comma-joined (empty when there are none). No other label is
//! touched: a managed-domain label someone else put on the Node stays until
//! the Machine sets it (from then on it is the Machine's).

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;

use super::plan::NodeLabelPlan;

/// The Node annotation recording the label keys taken from the Machine.
pub const LABELS_FROM_MACHINE_ANNOTATION: &str = "cluster.x-k8s.io/labels-from-machine";
/// Keys whose prefix is exactly this are managed.
pub const NODE_ROLE_LABEL_PREFIX: &str = "node-role.kubernetes.io";
/// Keys in this domain or a subdomain are managed (kubelets cannot set them).
pub const NODE_RESTRICTION_LABEL_DOMAIN: &str = "node-restriction.kubernetes.io";
/// Keys in this domain or a subdomain are managed.
pub const MANAGED_NODE_LABEL_DOMAIN: &str = "node.cluster.x-k8s.io";

/// Whether `domain` is `parent` or a subdomain of it.
fn in_domain(domain: &str, parent: &str) -> bool {
    domain == parent
        || domain
            .strip_suffix(parent)
            .is_some_and(|sub| sub.ends_with('.'))
}

/// Whether Cluster API always copies a Machine label with this key to its
/// Node (the default managed domains, without additional expressions).
pub fn is_default_managed_label(key: &str) -> bool {
    let domain = key.split('/').next().unwrap_or(key);
    domain == NODE_ROLE_LABEL_PREFIX
        || in_domain(domain, NODE_RESTRICTION_LABEL_DOMAIN)
        || in_domain(domain, MANAGED_NODE_LABEL_DOMAIN)
}

/// Additional expressions that do not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "at least one of --additional-sync-machine-labels regexes is invalid: {}",
    problems.iter().map(|(pattern, message)| format!("{pattern:?}: {message}")).collect::<Vec<_>>().join("; ")
)]
#[non_exhaustive]
pub struct InvalidSyncPattern {
    /// Each invalid pattern with the compiler's message.
    pub problems: Vec<(String, String)>,
}

/// Which Machine labels go to the Node, and the plan that puts them there.
/// Two are equal when their additional expressions are, as written.
#[derive(Debug, Clone, Default)]
pub struct MachineLabelSync {
    additional: Vec<Regex>,
}

impl PartialEq for MachineLabelSync {
    fn eq(&self, other: &Self) -> bool {
        self.patterns().eq(other.patterns())
    }
}

impl Eq for MachineLabelSync {}

impl MachineLabelSync {
    /// The default managed domains plus `patterns` (regular expressions
    /// matched anywhere in the key). Every invalid pattern is reported.
    pub fn new<S: AsRef<str>>(
        patterns: impl IntoIterator<Item = S>,
    ) -> Result<Self, InvalidSyncPattern> {
        let mut additional = Vec::new();
        let mut problems = Vec::new();
        for pattern in patterns {
            let pattern = pattern.as_ref();
            match Regex::new(pattern) {
                Ok(regex) => additional.push(regex),
                Err(error) => problems.push((pattern.to_owned(), error.to_string())),
            }
        }
        if problems.is_empty() {
            Ok(Self { additional })
        } else {
            Err(InvalidSyncPattern { problems })
        }
    }

    /// The additional expressions, as given.
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        self.additional.iter().map(Regex::as_str)
    }

    /// Whether a Machine label with this key is copied to the Node.
    pub fn is_managed(&self, key: &str) -> bool {
        is_default_managed_label(key) || self.additional.iter().any(|re| re.is_match(key))
    }

    /// The Machine labels copied to the Node.
    pub fn managed_labels(
        &self,
        machine_labels: &BTreeMap<String, String>,
    ) -> BTreeMap<String, String> {
        machine_labels
            .iter()
            .filter(|(key, _)| self.is_managed(key))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// The plan for one Node from its Machine's labels (see the module
    /// documentation). The plan's annotation entry is
    /// [`LABELS_FROM_MACHINE_ANNOTATION`], present when its value changes.
    pub fn plan(
        &self,
        node_labels: &BTreeMap<String, String>,
        node_annotations: &BTreeMap<String, String>,
        machine_labels: &BTreeMap<String, String>,
    ) -> NodeLabelPlan {
        let desired = self.managed_labels(machine_labels);
        let current = node_annotations.get(LABELS_FROM_MACHINE_ANNOTATION);
        let previous: BTreeSet<&str> = current
            .map(|value| value.split(',').filter(|key| !key.is_empty()).collect())
            .unwrap_or_default();
        let set = desired
            .iter()
            .filter(|(key, value)| node_labels.get(*key) != Some(*value))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let remove = previous
            .iter()
            .filter(|key| !desired.contains_key(**key) && node_labels.contains_key(**key))
            .map(|key| (*key).to_owned())
            .collect();
        let record = desired
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(",");
        let mut annotations = BTreeMap::new();
        if current != Some(&record) {
            annotations.insert(LABELS_FROM_MACHINE_ANNOTATION.to_owned(), Some(record));
        }
        NodeLabelPlan {
            set,
            remove,
            annotations,
        }
    }
}
