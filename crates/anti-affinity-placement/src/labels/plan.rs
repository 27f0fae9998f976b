//! The label plan for one Node: which of our keys to set or remove, and the
//! bookkeeping annotation (B.5's `labels-from-machine` pattern).
//!
//! Rules: `desired` maps each of our keys to its value. Keys to set are the
//! desired keys whose current value differs. Keys to remove are keys recorded
//! in the annotation (entries that are not valid label keys are ignored)
//! that are no longer desired and still present. The annotation is rewritten
//! to the sorted, comma-joined desired keys (removed when there are none).
//! Every other label is foreign and never touched. A desired key that exists
//! without being recorded (set by someone else) is overwritten and recorded:
//! configuring a key means owning it.

use std::collections::{BTreeMap, BTreeSet};

use kube_validation::is_qualified_name;
use serde::Serialize;

/// What to change on one Node. Serialises as
/// `{set: {key: value}, remove: [key], annotations: {key: value|null}}`
/// (`annotations` omitted when unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct NodeLabelPlan {
    /// Labels to add or change.
    pub set: BTreeMap<String, String>,
    /// Labels to delete (sorted).
    pub remove: Vec<String>,
    /// Annotations to write (`None` = delete the annotation).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, Option<String>>,
}

impl NodeLabelPlan {
    /// Whether the plan changes nothing.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.remove.is_empty() && self.annotations.is_empty()
    }

    /// Combine two plans for one Node into one: labels set by either are
    /// set (`self`'s value wins where both set a key), a removal is dropped
    /// when the other plan sets the key, and the annotation updates are
    /// united (`self`'s wins on the same annotation).
    pub fn merge(mut self, other: NodeLabelPlan) -> NodeLabelPlan {
        for (key, value) in other.set {
            self.set.entry(key).or_insert(value);
        }
        let mut remove: Vec<String> = self.remove.into_iter().chain(other.remove).collect();
        remove.retain(|key| !self.set.contains_key(key));
        remove.sort();
        remove.dedup();
        self.remove = remove;
        for (key, value) in other.annotations {
            self.annotations.entry(key).or_insert(value);
        }
        self
    }

    /// Apply the plan to a Node's labels and annotations.
    pub fn apply(
        &self,
        labels: &mut BTreeMap<String, String>,
        annotations: &mut BTreeMap<String, String>,
    ) {
        for key in &self.remove {
            labels.remove(key);
        }
        labels.extend(self.set.iter().map(|(k, v)| (k.clone(), v.clone())));
        for (key, value) in &self.annotations {
            match value {
                Some(value) => annotations.insert(key.clone(), value.clone()),
                None => annotations.remove(key),
            };
        }
    }
}

/// Keys recorded in the bookkeeping annotation value.
pub fn recorded_keys(annotation: Option<&str>) -> BTreeSet<&str> {
    annotation
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty() && is_qualified_name(k))
        .collect()
}

/// Plan one Node's labels (pure; see the module docs for the rules).
pub fn plan_node_labels(
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    desired: &BTreeMap<String, String>,
    managed_annotation: &str,
) -> NodeLabelPlan {
    let current_record = annotations.get(managed_annotation).map(String::as_str);
    let recorded = recorded_keys(current_record);
    let set = desired
        .iter()
        .filter(|(k, v)| labels.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let remove = recorded
        .iter()
        .filter(|k| !desired.contains_key(**k) && labels.contains_key(**k))
        .map(|k| (*k).to_owned())
        .collect();
    let record = desired
        .keys()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(",");
    let mut annotation_update = BTreeMap::new();
    if desired.is_empty() {
        if current_record.is_some() {
            annotation_update.insert(managed_annotation.to_owned(), None);
        }
    } else if current_record != Some(record.as_str()) {
        annotation_update.insert(managed_annotation.to_owned(), Some(record));
    }
    NodeLabelPlan {
        set,
        remove,
        annotations: annotation_update,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    const A: &str = "policyctl/managed-host-labels";

    #[test]
    fn first_sync_sets_label_and_records_it() {
        let plan = plan_node_labels(
            &map(&[("team", "x")]),
            &map(&[]),
            &map(&[("h/host", "esx1")]),
            A,
        );
        assert_eq!(plan.set, map(&[("h/host", "esx1")]));
        assert!(plan.remove.is_empty());
        assert_eq!(plan.annotations.get(A), Some(&Some("h/host".to_owned())));
    }

    #[test]
    fn key_no_longer_desired_is_removed_but_foreign_labels_stay() {
        let labels = map(&[("old/host", "esx1"), ("team", "x"), ("new/host", "esx2")]);
        let annotations = map(&[(A, "old/host")]);
        let plan = plan_node_labels(&labels, &annotations, &map(&[("new/host", "esx2")]), A);
        assert!(plan.set.is_empty());
        assert_eq!(plan.remove, vec!["old/host".to_owned()]);
        assert_eq!(plan.annotations.get(A), Some(&Some("new/host".to_owned())));
    }

    #[test]
    fn nothing_desired_removes_record() {
        let plan = plan_node_labels(&map(&[("h", "v")]), &map(&[(A, "h")]), &map(&[]), A);
        assert_eq!(plan.remove, vec!["h".to_owned()]);
        assert_eq!(plan.annotations.get(A), Some(&None));
    }

    #[test]
    fn invalid_record_entries_are_ignored() {
        assert_eq!(
            recorded_keys(Some(" a/b , ,bad key,c")),
            ["a/b", "c"].into_iter().collect()
        );
    }
}
