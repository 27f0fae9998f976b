//! The patches the controller sends, as pure functions of a planned write.
//!
//! Every status write is a JSON merge patch carrying
//! `metadata.resourceVersion` from the snapshot it was planned from: the API
//! server treats it as a precondition and answers `409 Conflict` if the
//! Backup changed since, so a decision based on stale data never lands.
//! Only the fields this controller owns are touched (`status.phase`,
//! `status.queuePosition`, the [`REASON_ANNOTATION`]); the object is never
//! replaced (CONVENTIONS §4).

use backup_queue::StatusChange;
use serde_json::{Map, Value, json};

use crate::convert::REASON_ANNOTATION;

/// What to do with the reason annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReasonUpdate {
    /// Leave it as it is.
    Keep,
    /// Set it to this text.
    Set(String),
    /// Remove it.
    Remove,
}

/// One write to one Backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupWrite {
    /// The Backup's name.
    pub backup: String,
    /// The resourceVersion the decision was made from.
    pub resource_version: Option<String>,
    /// Status change, if any.
    pub change: Option<StatusChange>,
    /// Annotation change.
    pub reason: ReasonUpdate,
}

fn status_value(change: StatusChange) -> Value {
    let position = change.queue_position();
    json!({
        "phase": change.phase().as_str(),
        "queuePosition": if position == 0 { Value::Null } else { json!(position) },
    })
}

fn metadata(resource_version: Option<&str>, reason: &ReasonUpdate) -> Map<String, Value> {
    let mut meta = Map::new();
    if let Some(rv) = resource_version {
        meta.insert("resourceVersion".into(), json!(rv));
    }
    match reason {
        ReasonUpdate::Keep => {}
        ReasonUpdate::Set(text) => {
            meta.insert("annotations".into(), json!({ REASON_ANNOTATION: text }));
        }
        ReasonUpdate::Remove => {
            meta.insert("annotations".into(), json!({ REASON_ANNOTATION: null }));
        }
    }
    meta
}

impl BackupWrite {
    /// True if the write changes nothing.
    pub fn is_empty(&self) -> bool {
        self.change.is_none() && self.reason == ReasonUpdate::Keep
    }

    /// The merge patch for a Backup CRD without a status subresource
    /// (Velero's): status and annotation in one conditional write.
    pub fn object_patch(&self) -> Value {
        let mut body = Map::new();
        body.insert(
            "metadata".into(),
            Value::Object(metadata(self.resource_version.as_deref(), &self.reason)),
        );
        if let Some(change) = self.change {
            body.insert("status".into(), status_value(change));
        }
        Value::Object(body)
    }

    /// With a status subresource: the conditional merge patch for `/status`
    /// (if the status changes), then the merge patch for the annotation on
    /// the object (if it changes), conditioned on `resource_version_after`
    /// (the version the first patch produced, or the planned one).
    pub fn subresource_patches(
        &self,
        resource_version_after: Option<&str>,
    ) -> (Option<Value>, Option<Value>) {
        let status = self.change.map(|change| {
            json!({
                "metadata": metadata(self.resource_version.as_deref(), &ReasonUpdate::Keep),
                "status": status_value(change),
            })
        });
        let annotation = (self.reason != ReasonUpdate::Keep)
            .then(|| json!({ "metadata": metadata(resource_version_after, &self.reason) }));
        (status, annotation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(change: Option<StatusChange>, reason: ReasonUpdate) -> BackupWrite {
        BackupWrite {
            backup: "b1".into(),
            resource_version: Some("41".into()),
            change,
            reason,
        }
    }

    #[test]
    fn patches_are_conditional_and_touch_only_owned_fields() {
        let cases = [
            (
                "start",
                write(Some(StatusChange::Start), ReasonUpdate::Remove),
            ),
            (
                "enqueue",
                write(
                    Some(StatusChange::Enqueue { position: 3 }),
                    ReasonUpdate::Set("capacity full".into()),
                ),
            ),
            (
                "reposition",
                write(
                    Some(StatusChange::Reposition { from: 3, to: 2 }),
                    ReasonUpdate::Keep,
                ),
            ),
            (
                "reason only",
                write(None, ReasonUpdate::Set("overlaps".into())),
            ),
        ];
        let rendered: Vec<Value> = cases
            .iter()
            .map(|(name, w)| {
                let (status, annotation) = w.subresource_patches(Some("42"));
                json!({"case": name, "object": w.object_patch(),
                       "status_subresource": {"status": status, "annotation": annotation}})
            })
            .collect();
        insta::assert_json_snapshot!(rendered);
    }

    #[test]
    fn empty_write_is_detected() {
        assert!(write(None, ReasonUpdate::Keep).is_empty());
        assert!(!write(None, ReasonUpdate::Remove).is_empty());
    }
}
