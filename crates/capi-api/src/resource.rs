//! `kube::Resource` for the partial types, and the object reference shape
//! they share.

use serde::{Deserialize, Serialize};

/// Implements [`kube::Resource`] for a partial type with a `metadata`
/// field, served at a fixed group and version.
macro_rules! partial_resource {
    ($type:ty, $kind:literal, $group:literal, $version:literal, $plural:literal) => {
        impl kube::Resource for $type {
            type DynamicType = ();
            type Scope = k8s_openapi::NamespaceResourceScope;

            fn kind(_: &()) -> std::borrow::Cow<'_, str> {
                $kind.into()
            }
            fn group(_: &()) -> std::borrow::Cow<'_, str> {
                $group.into()
            }
            fn version(_: &()) -> std::borrow::Cow<'_, str> {
                $version.into()
            }
            fn plural(_: &()) -> std::borrow::Cow<'_, str> {
                $plural.into()
            }
            fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &self.metadata
            }
            fn meta_mut(
                &mut self,
            ) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &mut self.metadata
            }
        }
    };
}
pub(crate) use partial_resource;

/// A reference to another object: `v1beta1`'s `ObjectReference`
/// (`apiVersion`, `kind`, `name`) or `v1beta2`'s
/// `ContractVersionedObjectReference` (`apiGroup`, `kind`, `name`). Only
/// `kind` and `name` are read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// `v1beta1`: the referenced object's `apiVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `v1beta2`: the referenced object's API group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_group: Option<String>,
    /// The referenced kind.
    #[serde(default)]
    pub kind: String,
    /// The referenced name.
    #[serde(default)]
    pub name: String,
}
