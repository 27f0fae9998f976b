//! The API server's matchLabelKeys / mismatchLabelKeys merge (C.9).
//!
//! kube-scheduler never reads `matchLabelKeys` of pod (anti-)affinity terms:
//! the API server merges them into `labelSelector` when the pod is created
//! (`pkg/registry/core/pod/strategy.go applyMatchLabelKeysAndMismatchLabelKeys`).
//! [`apply_match_label_keys`] performs that merge. It is idempotent: a
//! requirement already present verbatim (as in a pod read back from the API
//! server, which merged it already) is not added again, so the merge happens
//! exactly once whether the pod comes from a manifest or from a cluster.

use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
use std::collections::BTreeMap;

/// Merge every (anti-)affinity term's `matchLabelKeys` (as `key In [value]`)
/// and `mismatchLabelKeys` (as `key NotIn [value]`) into its `labelSelector`,
/// with the pod's own label values. Keys the pod lacks are ignored; nothing is
/// merged into a null selector (C.9).
pub fn apply_match_label_keys(pod: &mut Pod) {
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let Some(affinity) = pod.spec.as_mut().and_then(|s| s.affinity.as_mut()) else {
        return;
    };
    if let Some(a) = affinity.pod_affinity.as_mut() {
        for t in a
            .required_during_scheduling_ignored_during_execution
            .iter_mut()
            .flatten()
        {
            merge_term(t, &labels);
        }
        for t in a
            .preferred_during_scheduling_ignored_during_execution
            .iter_mut()
            .flatten()
        {
            merge_term(&mut t.pod_affinity_term, &labels);
        }
    }
    if let Some(a) = affinity.pod_anti_affinity.as_mut() {
        for t in a
            .required_during_scheduling_ignored_during_execution
            .iter_mut()
            .flatten()
        {
            merge_term(t, &labels);
        }
        for t in a
            .preferred_during_scheduling_ignored_during_execution
            .iter_mut()
            .flatten()
        {
            merge_term(&mut t.pod_affinity_term, &labels);
        }
    }
}

fn merge_term(term: &mut PodAffinityTerm, labels: &BTreeMap<String, String>) {
    let Some(selector) = term.label_selector.as_mut() else {
        return;
    };
    let adds = term
        .match_label_keys
        .iter()
        .flatten()
        .map(|k| (k, "In"))
        .chain(
            term.mismatch_label_keys
                .iter()
                .flatten()
                .map(|k| (k, "NotIn")),
        );
    for (key, op) in adds {
        let Some(value) = labels.get(key) else {
            continue;
        };
        let req = LabelSelectorRequirement {
            key: key.clone(),
            operator: op.to_owned(),
            values: Some(vec![value.clone()]),
        };
        let exprs = selector.match_expressions.get_or_insert_with(Vec::new);
        if !exprs.contains(&req) {
            exprs.push(req);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Affinity, PodAntiAffinity, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

    fn pod(selector: Option<LabelSelector>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                labels: Some(BTreeMap::from([
                    ("app".into(), "db".into()),
                    ("pod-template-hash".into(), "h1".into()),
                ])),
                ..Default::default()
            },
            spec: Some(PodSpec {
                affinity: Some(Affinity {
                    pod_anti_affinity: Some(PodAntiAffinity {
                        required_during_scheduling_ignored_during_execution: Some(vec![
                            PodAffinityTerm {
                                label_selector: selector,
                                match_label_keys: Some(vec![
                                    "pod-template-hash".into(),
                                    "missing".into(),
                                ]),
                                mismatch_label_keys: Some(vec!["app".into()]),
                                topology_key: "kubernetes.io/hostname".into(),
                                ..Default::default()
                            },
                        ]),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn exprs(p: &Pod) -> Option<Vec<(String, String, Vec<String>)>> {
        let t = &p
            .spec
            .as_ref()
            .unwrap()
            .affinity
            .as_ref()
            .unwrap()
            .pod_anti_affinity
            .as_ref()
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .unwrap()[0];
        t.label_selector.as_ref().map(|s| {
            s.match_expressions
                .iter()
                .flatten()
                .map(|e| {
                    (
                        e.key.clone(),
                        e.operator.clone(),
                        e.values.clone().unwrap_or_default(),
                    )
                })
                .collect()
        })
    }

    #[test]
    fn merges_present_keys_once_and_ignores_missing_keys() {
        let mut p = pod(Some(LabelSelector::default()));
        apply_match_label_keys(&mut p);
        apply_match_label_keys(&mut p);
        assert_eq!(
            exprs(&p).unwrap(),
            vec![
                ("pod-template-hash".into(), "In".into(), vec!["h1".into()]),
                ("app".into(), "NotIn".into(), vec!["db".into()]),
            ]
        );
    }

    #[test]
    fn nothing_is_merged_into_a_null_selector() {
        let mut p = pod(None);
        apply_match_label_keys(&mut p);
        assert_eq!(exprs(&p), None);
    }
}
