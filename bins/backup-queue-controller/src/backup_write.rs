//! One planned write to one Backup, and the merge patches that carry it
//! out: the vocabulary the pass plans in and the executor writes with.

use backup_queue::StatusChange;
use serde_json::{Map, Value, json};

use crate::config::REASON_ANNOTATION;

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
    /// The resourceVersion the decision was made from (the precondition).
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

fn annotations(reason: &ReasonUpdate) -> Option<Value> {
    match reason {
        ReasonUpdate::Keep => None,
        ReasonUpdate::Set(text) => Some(json!({ REASON_ANNOTATION: text })),
        ReasonUpdate::Remove => Some(json!({ REASON_ANNOTATION: null })),
    }
}

impl BackupWrite {
    /// True if the write changes nothing.
    pub fn is_empty(&self) -> bool {
        self.change.is_none() && self.reason == ReasonUpdate::Keep
    }

    /// The merge patch for a Backup CRD without a status subresource
    /// (Velero's): status and annotation in one write.
    pub fn object_patch(&self) -> Value {
        let mut body = Map::new();
        let mut metadata = Map::new();
        if let Some(a) = annotations(&self.reason) {
            metadata.insert("annotations".into(), a);
        }
        body.insert("metadata".into(), Value::Object(metadata));
        if let Some(change) = self.change {
            body.insert("status".into(), status_value(change));
        }
        Value::Object(body)
    }

    /// With a status subresource: the merge patch for `/status`, if the
    /// status changes.
    pub fn status_patch(&self) -> Option<Value> {
        self.change
            .map(|change| json!({ "status": status_value(change) }))
    }

    /// With a status subresource: the merge patch of the annotation on the
    /// object, if it changes.
    pub fn annotation_patch(&self) -> Option<Value> {
        annotations(&self.reason).map(|a| json!({ "metadata": { "annotations": a } }))
    }
}
