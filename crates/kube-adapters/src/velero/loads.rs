//! DataUpload, DataDownload, PodVolumeBackup, PodVolumeRestore → [`Load`].

use std::collections::BTreeSet;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use load_soothe::{Load, LoadId, LoadKind, Phase};
use serde::Serialize;
use serde::de::DeserializeOwned;
use velero_api::labels::EXPOSE_ON_GOING;
use velero_api::{
    BUILT_IN_DATA_MOVER, DataDownload, DataUpload, LoadPhase, PodVolumeBackup, PodVolumeRestore,
    is_built_in_data_mover,
};

use crate::meta::{created_or_epoch, namespace_or_default};

/// One of the four load kinds, as a typed kube resource: what [`load`] reads
/// from each.
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
    /// `spec.datamover` (DataUpload and DataDownload only; `None` for the
    /// pod-volume kinds, which Velero's node-agent always handles itself).
    fn data_mover(&self) -> Option<&str>;
    /// `status.phase` as written, `None` when absent.
    fn status_phase(&self) -> Option<&LoadPhase>;
    /// `spec.cancel == true`.
    fn cancel_requested(&self) -> bool;
}

macro_rules! load_object {
    ($type:ty, $kind:expr, data_mover: $has_mover:tt) => {
        impl LoadObject for $type {
            const KIND: LoadKind = $kind;
            fn data_mover(&self) -> Option<&str> {
                load_object!(@mover self, $has_mover)
            }
            fn status_phase(&self) -> Option<&LoadPhase> {
                self.status.as_ref()?.phase.as_ref()
            }
            fn cancel_requested(&self) -> bool {
                self.spec.cancel == Some(true)
            }
        }
    };
    (@mover $self:ident, true) => {
        $self.spec.data_mover.as_deref()
    };
    (@mover $self:ident, false) => {
        None
    };
}

load_object!(DataUpload, LoadKind::DataUpload, data_mover: true);
load_object!(DataDownload, LoadKind::DataDownload, data_mover: true);
load_object!(PodVolumeBackup, LoadKind::PodVolumeBackup, data_mover: false);
load_object!(PodVolumeRestore, LoadKind::PodVolumeRestore, data_mover: false);

/// Which loads a gate takes as its own ([`Load::handled_here`]); every load
/// counts towards the limit either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateScope<'a> {
    /// Every load of every kind: one gate standing for the whole cluster
    /// (`policyctl soothe`).
    Everything,
    /// DataUploads and DataDownloads whose `spec.datamover` is one of these
    /// names; `velero` also stands for an absent or empty `spec.datamover`
    /// (Velero's `IsBuiltInUploader`, [`velero_api::is_built_in_data_mover`]). PodVolumeBackups and
    /// PodVolumeRestores are never handled: Velero's node-agent accepts them
    /// itself. This is the scope of one `load-soothe-controller` replica.
    DataMovers(&'a BTreeSet<String>),
}

impl GateScope<'_> {
    /// Whether a load of this kind and `spec.datamover` is handled.
    pub fn handles(self, kind: LoadKind, data_mover: Option<&str>) -> bool {
        match self {
            GateScope::Everything => true,
            GateScope::DataMovers(names) => {
                matches!(kind, LoadKind::DataUpload | LoadKind::DataDownload)
                    && names.contains(if is_built_in_data_mover(data_mover) {
                        BUILT_IN_DATA_MOVER
                    } else {
                        data_mover.unwrap_or_default()
                    })
            }
        }
    }
}

/// Whether the value of the `velero.io/expose-on-going` label marks a load as
/// being exposed: only the exact string `"true"`, because Velero counts
/// loads with the label selector `velero.io/expose-on-going=true`.
pub fn expose_on_going(label_value: Option<&str>) -> bool {
    label_value == Some("true")
}

/// The gate's view of a load object.
///
/// - `id`: kind, namespace ([`namespace_or_default`]: a load in a file
///   without a namespace is where `kubectl apply` would put it), name (empty
///   when absent) and UID (empty when absent, as in a hand-written file).
/// - `phase`: `status.phase`, absent or empty meaning `New`.
/// - `expose_on_going`: [`expose_on_going`] of the label.
/// - `cancel_requested`: `spec.cancel == true`.
/// - `created`: `metadata.creationTimestamp`, the Unix epoch when absent.
/// - `handled_here`: [`GateScope::handles`].
pub fn load<K: LoadObject>(object: &K, scope: GateScope<'_>) -> Load {
    let meta = object.meta();
    Load {
        id: LoadId::new(
            K::KIND,
            namespace_or_default(meta.namespace.as_deref()),
            meta.name.clone().unwrap_or_default(),
            meta.uid.clone().unwrap_or_default(),
        ),
        phase: Phase::from_api(object.status_phase().map(LoadPhase::as_str)),
        expose_on_going: expose_on_going(
            meta.labels
                .as_ref()
                .and_then(|labels| labels.get(EXPOSE_ON_GOING))
                .map(String::as_str),
        ),
        cancel_requested: object.cancel_requested(),
        created: created_or_epoch(meta),
        resource_version: meta.resource_version.clone(),
        handled_here: scope.handles(K::KIND, object.data_mover()),
    }
}

/// The API reference of a load (for Events about it): the kind's
/// `apiVersion` and `kind`, the id's namespace and name, and its UID unless
/// unknown.
pub fn object_reference(id: &LoadId) -> ObjectReference {
    let api_version = match id.kind {
        LoadKind::DataUpload => DataUpload::api_version(&()),
        LoadKind::DataDownload => DataDownload::api_version(&()),
        LoadKind::PodVolumeBackup => PodVolumeBackup::api_version(&()),
        LoadKind::PodVolumeRestore => PodVolumeRestore::api_version(&()),
    };
    ObjectReference {
        api_version: Some(api_version.into_owned()),
        kind: Some(id.kind.as_str().to_owned()),
        name: Some(id.name.clone()),
        namespace: Some(id.namespace.clone()),
        uid: Some(id.uid.clone()).filter(|uid| !uid.is_empty()),
        ..ObjectReference::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn data_upload(value: serde_json::Value) -> DataUpload {
        serde_json::from_value(value).unwrap()
    }

    fn movers(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn maps_identity_phase_label_cancel_and_creation() {
        let du = data_upload(json!({
            "metadata": {"name": "du-1", "namespace": "velero", "uid": "u1",
                         "resourceVersion": "7", "creationTimestamp": "2026-11-22T03:00:00Z",
                         "labels": {"velero.io/expose-on-going": "true"}},
            "spec": {"datamover": "acme", "cancel": true},
            "status": {"phase": "Accepted"}
        }));
        let names = movers(&["acme"]);
        let got = load(&du, GateScope::DataMovers(&names));
        assert_eq!(
            got.id,
            LoadId::new(LoadKind::DataUpload, "velero", "du-1", "u1")
        );
        assert_eq!(got.phase, Phase::Accepted);
        assert!(got.expose_on_going && got.cancel_requested && got.handled_here);
        assert_eq!(got.resource_version.as_deref(), Some("7"));
        assert_eq!(got.created.to_string(), "2026-11-22T03:00:00Z");
    }

    /// Pins the one reading of a load without a namespace: `default` (it
    /// was `""` in one of two former copies of this conversion).
    #[test]
    fn a_load_without_namespace_is_in_default() {
        for namespace in [json!(null), json!("")] {
            let du = data_upload(json!({"metadata": {"name": "du", "namespace": namespace},
                "spec": {}}));
            assert_eq!(load(&du, GateScope::Everything).id.namespace, "default");
        }
    }

    #[test]
    fn only_the_exact_string_true_marks_an_expose() {
        assert!(expose_on_going(Some("true")));
        for value in [Some("True"), Some(""), Some("1"), None] {
            assert!(!expose_on_going(value), "{value:?}");
        }
    }

    #[test]
    fn absent_or_empty_phase_is_new_unknown_is_unrecognized() {
        let du = data_upload(json!({"metadata": {"name": "du"}, "spec": {}}));
        assert_eq!(load(&du, GateScope::Everything).phase, Phase::New);
        let du = data_upload(json!({"metadata": {"name": "du"}, "spec": {},
            "status": {"phase": ""}}));
        assert_eq!(load(&du, GateScope::Everything).phase, Phase::New);
        let du = data_upload(json!({"metadata": {"name": "du"}, "spec": {},
            "status": {"phase": "Paused"}}));
        assert_eq!(load(&du, GateScope::Everything).phase, Phase::Unrecognized);
    }

    #[test]
    fn velero_stands_for_an_absent_or_empty_data_mover_and_pod_volume_loads_are_never_handled() {
        let velero = movers(&["velero"]);
        let scope = GateScope::DataMovers(&velero);
        assert!(scope.handles(LoadKind::DataUpload, None));
        assert!(scope.handles(LoadKind::DataDownload, Some("")));
        assert!(scope.handles(LoadKind::DataDownload, Some("velero")));
        assert!(!scope.handles(LoadKind::DataUpload, Some("acme")));
        assert!(!scope.handles(LoadKind::PodVolumeBackup, None));
        assert!(!scope.handles(LoadKind::PodVolumeRestore, None));
        let acme = movers(&["acme"]);
        let scope = GateScope::DataMovers(&acme);
        assert!(!scope.handles(LoadKind::DataUpload, None));
        assert!(!scope.handles(LoadKind::DataUpload, Some("Acme")));
        assert!(GateScope::Everything.handles(LoadKind::PodVolumeRestore, None));
    }

    #[test]
    fn references_name_the_served_api_version_of_each_kind() {
        let id = LoadId::new(LoadKind::DataDownload, "velero", "dd", "");
        let reference = object_reference(&id);
        assert_eq!(reference.api_version.as_deref(), Some("velero.io/v2alpha1"));
        assert_eq!(reference.kind.as_deref(), Some("DataDownload"));
        assert_eq!(reference.uid, None);
        let id = LoadId::new(LoadKind::PodVolumeRestore, "velero", "pvr", "u");
        let reference = object_reference(&id);
        assert_eq!(reference.api_version.as_deref(), Some("velero.io/v1"));
        assert_eq!(reference.uid.as_deref(), Some("u"));
    }
}
