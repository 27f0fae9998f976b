//! Mapping the four Velero load kinds to `load_soothe::Load`, and the accept
//! patch.
//!
//! # How a load is accepted
//!
//! The same fields Velero's node-agent writes when it accepts a DataUpload
//! or DataDownload (spec L3.11, L3.13; field names from `velero-api`):
//! `status.phase: Accepted`, `status.acceptedByNode` (this instance's
//! `--node`), `status.acceptedTimestamp` (now), and the label
//! `velero.io/expose-on-going: "true"`, in **one JSON merge patch on the
//! main resource** that carries `metadata.resourceVersion` (added by the
//! runtime's writer; a precondition:
//! `409 Conflict` if the load changed since it was read, so two replicas
//! racing for one load cannot both accept it).
//!
//! Not confirmed from the spec: whether Velero's CRDs enable the `/status`
//! subresource. Velero's controllers write phase and label in one update of
//! the whole object (L3.11 says both change "in the same update"), which is
//! only possible without it, so the patch goes to the main resource.

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::{Resource, ResourceExt};
use load_soothe::model::EXPOSE_ON_GOING_LABEL;
use load_soothe::{Load, LoadId, LoadKind, Phase};
use serde::Serialize;
use serde::de::DeserializeOwned;
use velero_api::{DataDownload, DataUpload, PodVolumeBackup, PodVolumeRestore};

use crate::config::Config;

/// One of the four load kinds, as a typed kube resource.
pub trait LoadObject:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + std::fmt::Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// The kind.
    const KIND: LoadKind;
    /// `spec.datamover` (DataUpload, DataDownload only).
    fn datamover(&self) -> Option<&str>;
    /// `status.phase` as written.
    fn phase_text(&self) -> Option<&str>;
    /// `spec.cancel`.
    fn cancel(&self) -> bool;
}

impl LoadObject for DataUpload {
    const KIND: LoadKind = LoadKind::DataUpload;
    fn datamover(&self) -> Option<&str> {
        self.spec.data_mover.as_deref()
    }
    fn phase_text(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_ref().map(|p| p.as_str())
    }
    fn cancel(&self) -> bool {
        self.spec.cancel == Some(true)
    }
}

impl LoadObject for DataDownload {
    const KIND: LoadKind = LoadKind::DataDownload;
    fn datamover(&self) -> Option<&str> {
        self.spec.data_mover.as_deref()
    }
    fn phase_text(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_ref().map(|p| p.as_str())
    }
    fn cancel(&self) -> bool {
        self.spec.cancel == Some(true)
    }
}

impl LoadObject for PodVolumeBackup {
    const KIND: LoadKind = LoadKind::PodVolumeBackup;
    fn datamover(&self) -> Option<&str> {
        None
    }
    fn phase_text(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_ref().map(|p| p.as_str())
    }
    fn cancel(&self) -> bool {
        self.spec.cancel == Some(true)
    }
}

impl LoadObject for PodVolumeRestore {
    const KIND: LoadKind = LoadKind::PodVolumeRestore;
    fn datamover(&self) -> Option<&str> {
        None
    }
    fn phase_text(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_ref().map(|p| p.as_str())
    }
    fn cancel(&self) -> bool {
        self.spec.cancel == Some(true)
    }
}

/// Whether this instance accepts loads of this kind and data mover: only
/// DataUploads and DataDownloads have `spec.datamover`; PodVolumeBackups and
/// PodVolumeRestores are always Velero's own (they only count).
pub fn handled_here(kind: LoadKind, datamover: Option<&str>, config: &Config) -> bool {
    matches!(kind, LoadKind::DataUpload | LoadKind::DataDownload) && config.handles(datamover)
}

/// The gate's view of an object.
pub fn observe<K: LoadObject>(obj: &K, config: &Config) -> Load {
    let meta = obj.meta();
    Load {
        id: LoadId::new(
            K::KIND,
            obj.namespace().unwrap_or_default(),
            obj.name_any(),
            meta.uid.clone().unwrap_or_default(),
        ),
        phase: Phase::from_api(obj.phase_text()),
        expose_on_going: Load::expose_label_is_set(
            obj.labels().get(EXPOSE_ON_GOING_LABEL).map(String::as_str),
        ),
        cancel_requested: obj.cancel(),
        created: meta
            .creation_timestamp
            .as_ref()
            .map_or(jiff::Timestamp::UNIX_EPOCH, |t| t.0),
        resource_version: meta.resource_version.clone(),
        handled_here: handled_here(K::KIND, obj.datamover(), config),
    }
}

/// The accept patch (see the module docs). The runtime's writer adds the
/// load's resourceVersion as the precondition; loads without a known
/// resourceVersion are never accepted.
pub fn accept_patch(node: &str, now: jiff::Timestamp) -> serde_json::Value {
    serde_json::json!({
        "metadata": {
            "labels": { EXPOSE_ON_GOING_LABEL: "true" },
        },
        "status": {
            "phase": "Accepted",
            "acceptedByNode": node,
            "acceptedTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        },
    })
}

/// API version of a kind.
pub fn api_version(kind: LoadKind) -> &'static str {
    match kind {
        LoadKind::DataUpload | LoadKind::DataDownload => "velero.io/v2alpha1",
        LoadKind::PodVolumeBackup | LoadKind::PodVolumeRestore => "velero.io/v1",
    }
}

/// The reference Events are published on.
pub fn object_reference(id: &LoadId) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version(id.kind).to_owned()),
        kind: Some(id.kind.as_str().to_owned()),
        name: Some(id.name.clone()),
        namespace: Some(id.namespace.clone()),
        uid: Some(id.uid.clone()).filter(|u| !u.is_empty()),
        ..ObjectReference::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GateMode;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn du(datamover: Option<&str>, phase: Option<&str>, label: Option<&str>) -> DataUpload {
        let mut du = DataUpload::new("du-1", velero_api::DataUploadSpec::default());
        du.metadata.namespace = Some("velero".into());
        du.metadata.uid = Some("u1".into());
        du.metadata.resource_version = Some("7".into());
        du.metadata.creation_timestamp = Some(Time("2026-11-22T03:00:00Z".parse().unwrap()));
        du.spec.data_mover = datamover.map(str::to_owned);
        if let Some(p) = phase {
            du.status = Some(velero_api::DataUploadStatus {
                phase: Some(serde_json::from_value(serde_json::json!(p)).unwrap()),
                ..Default::default()
            });
        }
        if let Some(l) = label {
            du.metadata.labels = Some([(EXPOSE_ON_GOING_LABEL.to_owned(), l.to_owned())].into());
        }
        du
    }

    #[test]
    fn observe_maps_phase_label_datamover_and_identity() {
        let config = Config::new("velero", "n1", &["acme"], GateMode::Exact);
        let load = observe(&du(Some("acme"), None, None), &config);
        assert_eq!(
            load.id,
            LoadId::new(LoadKind::DataUpload, "velero", "du-1", "u1")
        );
        assert_eq!(load.phase, Phase::New);
        assert!(load.handled_here && load.is_queued_here());
        assert_eq!(load.resource_version.as_deref(), Some("7"));
        let load = observe(&du(Some("other"), Some("Accepted"), Some("true")), &config);
        assert!(!load.handled_here);
        assert!(load.in_preparation());
        let load = observe(&du(Some("acme"), Some("Prepared"), Some("yes")), &config);
        assert!(!load.expose_on_going);
        assert!(load.in_preparation());
    }

    #[test]
    fn pod_volume_loads_are_never_handled_here() {
        let config = Config::new("velero", "n1", &["velero"], GateMode::Exact);
        assert!(!handled_here(LoadKind::PodVolumeBackup, None, &config));
        assert!(handled_here(LoadKind::DataDownload, None, &config));
    }

    #[test]
    fn accept_patch_sets_velero_accept_fields() {
        let patch = accept_patch("node-a", "2026-11-22T03:00:01.5Z".parse().unwrap());
        insta::assert_json_snapshot!(patch, @r#"
        {
          "metadata": {
            "labels": {
              "velero.io/expose-on-going": "true"
            }
          },
          "status": {
            "acceptedByNode": "node-a",
            "acceptedTimestamp": "2026-11-22T03:00:01Z",
            "phase": "Accepted"
          }
        }
        "#);
    }
}
