//! Helpers of the real-cluster tests of `load-soothe-controller`: minimal
//! Velero load CRDs (installed only if absent, schema-less, no status
//! subresource, like Velero's), throwaway namespaces, polling.
//!
//! Run against a throwaway cluster (kind or k3d):
//! `kind create cluster && cargo test -p load-soothe-controller-cluster-tests -- --ignored`.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, PostParams};

/// `(plural, kind, version)` of the four load kinds.
pub const LOAD_CRDS: [(&str, &str, &str); 4] = [
    ("datauploads", "DataUpload", "v2alpha1"),
    ("datadownloads", "DataDownload", "v2alpha1"),
    ("podvolumebackups", "PodVolumeBackup", "v1"),
    ("podvolumerestores", "PodVolumeRestore", "v1"),
];

fn crd(plural: &str, kind: &str, version: &str) -> Result<CustomResourceDefinition, kube::Error> {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.velero.io")},
        "spec": {
            "group": "velero.io",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{
                "name": version, "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    }))
    .map_err(kube::Error::SerdeError)
}

/// Creates the four load CRDs that do not exist yet and waits until they
/// are served. Returns the names created (for [`uninstall_crds`]).
pub async fn install_crds(client: &kube::Client) -> Result<Vec<String>, kube::Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut created = Vec::new();
    for (plural, kind, version) in LOAD_CRDS {
        let name = format!("{plural}.velero.io");
        if api.get_opt(&name).await?.is_none() {
            api.create(&PostParams::default(), &crd(plural, kind, version)?)
                .await?;
            created.push(name);
        }
    }
    for (plural, _, version) in LOAD_CRDS {
        let ar = kube::api::ApiResource {
            group: "velero.io".into(),
            version: version.into(),
            api_version: format!("velero.io/{version}"),
            kind: String::new(),
            plural: plural.into(),
        };
        let dynamic: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &ar);
        wait_for("CRD served", Duration::from_secs(30), || async {
            Ok(dynamic.list(&Default::default()).await.is_ok())
        })
        .await?;
    }
    Ok(created)
}

/// Deletes CRDs [`install_crds`] created.
pub async fn uninstall_crds(client: &kube::Client, names: &[String]) -> Result<(), kube::Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in names {
        api.delete(name, &DeleteParams::default()).await?;
    }
    Ok(())
}

/// Creates a namespace `<prefix>-<unique>` and returns its name.
pub async fn throwaway_namespace(
    client: &kube::Client,
    prefix: &str,
) -> Result<String, kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.generate_name = Some(format!("{prefix}-"));
    let created = api.create(&PostParams::default(), &ns).await?;
    Ok(created.metadata.name.unwrap_or_default())
}

/// Deletes a namespace (asynchronously, like `kubectl delete ns --wait=false`).
pub async fn delete_namespace(client: &kube::Client, name: &str) -> Result<(), kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    api.delete(name, &DeleteParams::default()).await.map(|_| ())
}

/// Polls `condition` every 200 ms until it returns `Ok(true)`; `Ok(false)`
/// after `timeout` (`what` is logged to stderr then).
pub async fn wait_for<F, Fut>(
    what: &str,
    timeout: Duration,
    mut condition: F,
) -> Result<bool, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, kube::Error>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if condition().await? {
            return Ok(true);
        }
        if tokio::time::Instant::now() >= deadline {
            eprintln!("timed out after {timeout:?} waiting for {what}");
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
