//! From the audit to what users see: violations attributed to the pods'
//! owners (for Events) and the status ConfigMap summary. Pure functions.

use std::collections::BTreeMap;

use anti_affinity_placement::labels::{Audit, PreferredGroup};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use serde::Serialize;

/// Replicas of one workload sharing a physical host, attributed to the
/// workload's owner.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// The physical host (label value form).
    pub host: String,
    /// `namespace/name` of the pods, sorted.
    pub pods: Vec<String>,
    /// Where the Event goes: the pods' controller owner (the owner reference
    /// with `controller: true`, else the first one), else the first pod.
    pub owner: ObjectReference,
}

impl Violation {
    /// `Kind namespace/name` of the owner.
    pub fn owner_display(&self) -> String {
        format!(
            "{} {}/{}",
            self.owner.kind.as_deref().unwrap_or_default(),
            self.owner.namespace.as_deref().unwrap_or_default(),
            self.owner.name.as_deref().unwrap_or_default()
        )
    }

    /// The Event note (at most 1024 bytes, as the API requires).
    pub fn note(&self) -> String {
        let mut note = format!(
            "{} replicas run on physical host {} although their required anti-affinity or DoNotSchedule topology spread uses the host label: {}",
            self.pods.len(),
            self.host,
            self.pods.join(", ")
        );
        truncate(&mut note, 1024);
        note
    }
}

fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        let mut cut = max - 3;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
}

/// The reference an Event about `pod`'s workload goes to.
pub fn owner_reference(pod: &Pod) -> ObjectReference {
    let namespace = pod.metadata.namespace.clone();
    let owners = pod.metadata.owner_references.as_deref().unwrap_or_default();
    match owners
        .iter()
        .find(|o| o.controller == Some(true))
        .or_else(|| owners.first())
    {
        Some(o) => ObjectReference {
            api_version: Some(o.api_version.clone()),
            kind: Some(o.kind.clone()),
            name: Some(o.name.clone()),
            namespace,
            uid: Some(o.uid.clone()),
            ..ObjectReference::default()
        },
        None => ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: pod.metadata.name.clone(),
            namespace,
            uid: pod.metadata.uid.clone(),
            ..ObjectReference::default()
        },
    }
}

/// `namespace/name` of a pod (the audit's pod naming).
pub fn pod_key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The audit's shared hosts under a required rule, attributed to owners;
/// `pods` maps [`pod_key`] → pod. Entries whose pods are all unknown are
/// dropped. Sorted. Sharing under only preferred rules is no violation:
/// it is summarised in [`StatusSummary::preferred_sharing`].
pub fn violations(audit: &Audit, pods: &BTreeMap<String, &Pod>) -> Vec<Violation> {
    let mut out: Vec<Violation> = audit
        .required_sharing()
        .filter_map(|shared| {
            let first = shared.pods.iter().find_map(|p| pods.get(p))?;
            Some(Violation {
                host: shared.host.clone(),
                pods: shared.pods.clone(),
                owner: owner_reference(first),
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.host, &a.pods).cmp(&(&b.host, &b.pods)));
    out
}

/// One shared host in the status summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SummaryViolation {
    /// Physical host.
    pub host: String,
    /// `Kind namespace/name` of the owner (or the pod).
    pub owner: String,
    /// The pods.
    pub pods: Vec<String>,
}

/// The audit summary written to the status ConfigMap. No timestamps: the
/// same cluster state gives byte-identical content (and no rewrite).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusSummary {
    /// `machines` or `inventory NS/NAME`.
    pub source: String,
    /// The label keys, primary first.
    pub label_keys: Vec<String>,
    /// Number of Nodes.
    pub nodes: usize,
    /// Nodes with host information.
    pub nodes_with_host_information: usize,
    /// Nodes lacking (a value for) any host key, sorted.
    pub unlabelled_nodes: Vec<String>,
    /// Replicas sharing a host under a required rule, sorted by host then
    /// pods.
    pub shared_hosts: Vec<SummaryViolation>,
    /// Workloads whose rules on the host keys are only preferred, with how
    /// many hosts their replicas share, sorted by group.
    pub preferred_sharing: Vec<PreferredGroup>,
}

impl StatusSummary {
    /// Pretty JSON with a trailing newline (fields in declaration order).
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Summary entries for `violations`, sorted by host, then pods.
pub fn summary_violations(violations: &[Violation]) -> Vec<SummaryViolation> {
    let mut out: Vec<SummaryViolation> = violations
        .iter()
        .map(|v| SummaryViolation {
            host: v.host.clone(),
            owner: v.owner_display(),
            pods: v.pods.clone(),
        })
        .collect();
    out.sort_by(|a, b| (&a.host, &a.pods).cmp(&(&b.host, &b.pods)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use anti_affinity_placement::labels::{RuleStrength, SharedHost};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    fn pod(name: &str, owners: Vec<OwnerReference>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("app".into()),
                uid: Some(format!("uid-{name}")),
                owner_references: Some(owners),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn owner(kind: &str, name: &str, controller: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            controller,
            ..OwnerReference::default()
        }
    }

    #[test]
    fn controller_owner_wins_then_first_owner_then_pod() {
        let p = pod(
            "a",
            vec![owner("X", "x", None), owner("ReplicaSet", "rs", Some(true))],
        );
        assert_eq!(owner_reference(&p).name.as_deref(), Some("rs"));
        let p = pod("a", vec![owner("X", "x", None)]);
        assert_eq!(owner_reference(&p).kind.as_deref(), Some("X"));
        let p = pod("a", vec![]);
        let r = owner_reference(&p);
        assert_eq!(
            (r.kind.as_deref(), r.name.as_deref(), r.namespace.as_deref()),
            (Some("Pod"), Some("a"), Some("app"))
        );
    }

    #[test]
    fn violations_attribute_shared_hosts_to_owners_and_summary_is_stable() {
        let a = pod("a", vec![owner("ReplicaSet", "web-1", Some(true))]);
        let b = pod("b", vec![owner("ReplicaSet", "web-1", Some(true))]);
        let index: BTreeMap<String, &Pod> = [(pod_key(&a), &a), (pod_key(&b), &b)].into();
        let audit = Audit {
            unlabelled_nodes: vec!["n3".into()],
            shared_hosts: vec![
                SharedHost {
                    host: "esx1".into(),
                    pods: vec!["app/a".into(), "app/b".into()],
                    rule: RuleStrength::Required,
                    group: "app owner ReplicaSet/web-1".into(),
                },
                SharedHost {
                    host: "esx2".into(),
                    pods: vec!["gone/x".into(), "gone/y".into()],
                    rule: RuleStrength::Required,
                    group: "gone owner ReplicaSet/x".into(),
                },
                // Only preferred: summarised, not a violation.
                SharedHost {
                    host: "esx1".into(),
                    pods: vec!["app/c".into(), "app/d".into(), "app/e".into()],
                    rule: RuleStrength::Preferred,
                    group: "app owner ReplicaSet/cache-1".into(),
                },
                SharedHost {
                    host: "esx2".into(),
                    pods: vec!["app/f".into(), "app/g".into()],
                    rule: RuleStrength::Preferred,
                    group: "app owner ReplicaSet/cache-1".into(),
                },
            ],
        };
        let v = violations(&audit, &index);
        assert_eq!(v.len(), 1, "only the required group whose pods are known");
        assert_eq!(v[0].owner_display(), "ReplicaSet app/web-1");
        let summary = StatusSummary {
            source: "machines".into(),
            label_keys: vec!["node.cluster.x-k8s.io/esxi-host".into()],
            nodes: 3,
            nodes_with_host_information: 2,
            unlabelled_nodes: audit.unlabelled_nodes.clone(),
            shared_hosts: summary_violations(&v),
            preferred_sharing: audit.preferred_summary(),
        };
        insta::assert_snapshot!(summary.to_json());
        insta::assert_snapshot!(v[0].note(), @"2 replicas run on physical host esx1 although their required anti-affinity or DoNotSchedule topology spread uses the host label: app/a, app/b");
    }

    #[test]
    fn long_notes_are_cut_to_the_api_limit() {
        let v = Violation {
            host: "h".into(),
            pods: (0..200)
                .map(|i| format!("ns/pod-with-a-long-name-{i}"))
                .collect(),
            owner: ObjectReference::default(),
        };
        let note = v.note();
        assert!(note.len() <= 1024 && note.ends_with("..."));
    }
}
