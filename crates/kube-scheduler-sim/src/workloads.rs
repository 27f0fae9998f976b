//! Services, ReplicationControllers, ReplicaSets and StatefulSets: the
//! objects whose selectors kube-scheduler's system-default topology
//! spreading uses for a pod without constraints of its own (C.46,
//! `helper.DefaultSelector`).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{ReplicationController, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube_validation::{namespace_or_default, set_selector_matches};

use crate::pod_info::PodInfo;
use kube_validation::LabelSelectorMatcher as PodSelector;

/// The workload objects of a snapshot that select pods.
#[derive(Debug, Clone, Default)]
pub struct Workloads {
    /// Services (`spec.selector`).
    pub services: Vec<Service>,
    /// ReplicationControllers (`spec.selector`).
    pub replication_controllers: Vec<ReplicationController>,
    /// ReplicaSets (`spec.selector`).
    pub replica_sets: Vec<ReplicaSet>,
    /// StatefulSets (`spec.selector`).
    pub stateful_sets: Vec<StatefulSet>,
}

type Labels = BTreeMap<String, String>;

/// Selectors by namespace and name, as the scheduler's listers hold them.
#[derive(Debug, Clone, Default)]
pub(crate) struct WorkloadIndex {
    /// Per namespace, the selectors of its Services with a non-null
    /// selector, by Service name.
    services: BTreeMap<String, BTreeMap<String, Labels>>,
    /// (namespace, name) → `spec.selector` (null as empty).
    replication_controllers: BTreeMap<(String, String), Labels>,
    /// (namespace, name) → `spec.selector`.
    replica_sets: BTreeMap<(String, String), Option<LabelSelector>>,
    /// (namespace, name) → `spec.selector`.
    stateful_sets: BTreeMap<(String, String), Option<LabelSelector>>,
}

fn key(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (
        namespace_or_default(meta.namespace.as_deref()).to_owned(),
        meta.name.clone().unwrap_or_default(),
    )
}

impl WorkloadIndex {
    /// Index `w` (later objects of the same namespace and name replace
    /// earlier ones).
    pub(crate) fn add(&mut self, w: &Workloads) {
        for s in &w.services {
            let (ns, name) = key(&s.metadata);
            // Services with a null selector match nothing (GetPodServices).
            if let Some(sel) = s.spec.as_ref().and_then(|s| s.selector.clone()) {
                self.services.entry(ns).or_default().insert(name, sel);
            }
        }
        for rc in &w.replication_controllers {
            let sel = rc
                .spec
                .as_ref()
                .and_then(|s| s.selector.clone())
                .unwrap_or_default();
            self.replication_controllers.insert(key(&rc.metadata), sel);
        }
        for rs in &w.replica_sets {
            let sel = rs.spec.as_ref().map(|s| s.selector.clone());
            self.replica_sets.insert(key(&rs.metadata), sel);
        }
        for ss in &w.stateful_sets {
            let sel = ss.spec.as_ref().map(|s| s.selector.clone());
            self.stateful_sets.insert(key(&ss.metadata), sel);
        }
    }

    /// `helper.DefaultSelector`: the selectors of the Services in the pod's
    /// namespace whose selector matches the pod's labels, merged (by
    /// Service name; a later key wins), then the selector of the pod's
    /// controller when it is a ReplicationController (`v1`, merged as
    /// labels), a ReplicaSet or a StatefulSet (`apps/v1`, requirements
    /// added; an unparsable or null selector adds nothing) found by name in
    /// the pod's namespace. `None` when the result has no requirement.
    pub(crate) fn default_selector(&self, pod: &PodInfo) -> Option<PodSelector> {
        let mut labels = Labels::new();
        for sel in self
            .services
            .get(&pod.namespace)
            .into_iter()
            .flat_map(|m| m.values())
        {
            if set_selector_matches(sel, &pod.labels) {
                labels.extend(sel.clone());
            }
        }
        let mut expressions: Vec<LabelSelectorRequirement> = Vec::new();
        if let Some((api_version, kind, name)) = &pod.controller {
            let k = (pod.namespace.clone(), name.clone());
            let owner_selector = match (api_version.as_str(), kind.as_str()) {
                ("v1", "ReplicationController") => {
                    if let Some(sel) = self.replication_controllers.get(&k) {
                        labels.extend(sel.clone());
                    }
                    None
                }
                ("apps/v1", "ReplicaSet") => self.replica_sets.get(&k),
                ("apps/v1", "StatefulSet") => self.stateful_sets.get(&k),
                _ => None,
            };
            if let Some(Some(sel)) = owner_selector
                && matches!(
                    PodSelector::compile(Some(sel)),
                    Ok(PodSelector::Matching(_))
                )
            {
                for (k, v) in sel.match_labels.iter().flatten() {
                    expressions.push(LabelSelectorRequirement {
                        key: k.clone(),
                        operator: "In".to_owned(),
                        values: Some(vec![v.clone()]),
                    });
                }
                expressions.extend(sel.match_expressions.iter().flatten().cloned());
            }
        }
        if labels.is_empty() && expressions.is_empty() {
            return None;
        }
        let combined = LabelSelector {
            match_labels: Some(labels),
            match_expressions: Some(expressions),
        };
        PodSelector::compile(Some(&combined)).ok()
    }
}
