//! Node labels naming the physical host, and their audit (B.1–B.8).
//!
//! - [`sanitize_label_value`]: any host name → a valid label value (fixes
//!   B.3), identical to CAPV's value whenever CAPV's is valid and unshortened.
//! - [`HostLabelConfig`]: the keys to write (default
//!   [`DEFAULT_HOST_LABEL_KEY`], optionally a kubelet-proof
//!   [`NODE_RESTRICTION_HOST_LABEL_KEY`]) and the bookkeeping annotation.
//! - [`plan_node_labels`]: one Node's current labels and annotations plus the
//!   desired values → the labels to set and remove and the annotation update;
//!   foreign labels are never touched.
//! - [`audit`]: replicas sharing a host, nodes without the label.
//! - [`MachineLabelSync`]: Cluster API's Machine → Node label propagation
//!   (managed domains, additional expressions, the
//!   `cluster.x-k8s.io/labels-from-machine` bookkeeping).
//!
//! Host information is a plain map node name → host name: from Cluster API
//! Machines (`status.nodeRef.name` → the Machine's
//! `node.cluster.x-k8s.io/esxi-host` label) or from a
//! [`crate::hosts::HostInventory`] whose VM names are node names
//! ([`crate::hosts::HostInventory::host_of_vm`]).

mod audit;
mod key;
mod machine_sync;
mod plan;
mod sanitize;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde::Serialize;

pub use audit::{Audit, NodeLabels, PreferredGroup, RuleStrength, SharedHost, audit, audit_views};
pub use key::{
    DEFAULT_HOST_LABEL_KEY, DEFAULT_MANAGED_LABELS_ANNOTATION, LabelKey, LabelKeyError,
    NODE_RESTRICTION_HOST_LABEL_KEY,
};
pub use machine_sync::{
    InvalidSyncPattern, LABELS_FROM_MACHINE_ANNOTATION, MANAGED_NODE_LABEL_DOMAIN,
    MachineLabelSync, NODE_RESTRICTION_LABEL_DOMAIN, NODE_ROLE_LABEL_PREFIX,
    is_default_managed_label,
};
pub use plan::{NodeLabelPlan, plan_node_labels, recorded_keys};
pub use sanitize::{Sanitized, capv_sanitize, sanitize, sanitize_label_value};

/// Which keys carry the host and which annotation records them. Always has
/// at least one key (the first is the primary one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLabelConfig {
    keys: Vec<LabelKey>,
    managed_annotation: LabelKey,
}

impl Default for HostLabelConfig {
    /// Key [`DEFAULT_HOST_LABEL_KEY`], annotation
    /// [`DEFAULT_MANAGED_LABELS_ANNOTATION`].
    fn default() -> Self {
        Self::new(LabelKey::trusted(DEFAULT_HOST_LABEL_KEY))
    }
}

impl HostLabelConfig {
    /// One host key, the default annotation.
    pub fn new(key: LabelKey) -> Self {
        Self {
            keys: vec![key],
            managed_annotation: LabelKey::trusted(DEFAULT_MANAGED_LABELS_ANNOTATION),
        }
    }

    /// Key [`NODE_RESTRICTION_HOST_LABEL_KEY`] (kubelets cannot forge it, B.7).
    pub fn node_restriction() -> Self {
        Self::new(LabelKey::trusted(NODE_RESTRICTION_HOST_LABEL_KEY))
    }

    /// Also write `key` (e.g. both the CAPV key and a node-restriction key).
    pub fn with_additional_key(mut self, key: LabelKey) -> Self {
        if !self.keys.contains(&key) {
            self.keys.push(key);
        }
        self
    }

    /// Use another bookkeeping annotation.
    pub fn with_managed_annotation(mut self, key: LabelKey) -> Self {
        self.managed_annotation = key;
        self
    }

    /// The host keys, primary first.
    pub fn keys(&self) -> &[LabelKey] {
        &self.keys
    }

    /// The bookkeeping annotation key.
    pub fn managed_annotation(&self) -> &LabelKey {
        &self.managed_annotation
    }

    /// Every host key → the sanitised `host`.
    pub fn desired(&self, host: &str) -> BTreeMap<String, String> {
        let value = sanitize_label_value(host);
        self.keys
            .iter()
            .map(|k| (k.as_str().to_owned(), value.clone()))
            .collect()
    }

    /// Plan one Node's labels for `host`.
    pub fn plan_node(&self, node: &Node, host: &str) -> NodeLabelPlan {
        let empty = BTreeMap::new();
        plan_node_labels(
            node.metadata.labels.as_ref().unwrap_or(&empty),
            node.metadata.annotations.as_ref().unwrap_or(&empty),
            &self.desired(host),
            self.managed_annotation.as_str(),
        )
    }

    /// Plans for every Node with known host information (Nodes without it,
    /// or with an empty host name, are left alone and show up in the audit if unlabelled; Nodes whose
    /// plan is empty are omitted), plus the audit of the current state.
    pub fn host_labels(
        &self,
        nodes: &[Node],
        pods: &[Pod],
        host_of_node: &BTreeMap<String, String>,
    ) -> HostLabelsReport {
        let nodes_plan = nodes
            .iter()
            .filter_map(|node| {
                let name = node.metadata.name.as_deref()?;
                let host = host_of_node.get(name).filter(|h| !h.is_empty())?;
                let plan = self.plan_node(node, host);
                (!plan.is_empty()).then(|| (name.to_owned(), plan))
            })
            .collect();
        HostLabelsReport {
            nodes: nodes_plan,
            audit: audit(nodes, pods, &self.keys, host_of_node),
        }
    }
}

/// Output of `host-labels`: `{nodes: {node: {set, remove}}, audit: {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostLabelsReport {
    /// Non-empty plans per Node name.
    pub nodes: BTreeMap<String, NodeLabelPlan>,
    /// Audit of the current state.
    pub audit: Audit,
}
