//! Helpers for the real-cluster tests of `host-label-controller`
//! (the tier above the in-process end-to-end tests). The tests in `tests/` are
//! `#[ignore = "needs cluster"]`: they compile in CI and never run there.
//! Run them against a throwaway cluster (kind or k3d, see
//! `docs/operations.md`) with
//! `cargo test -p host-label-controller-cluster-tests -- --ignored`.
//!
//! They never touch existing labels: each run uses a label key and a
//! bookkeeping annotation with a unique suffix under
//! [`TEST_KEY_PREFIX`], the HostInventory source (no Cluster API needed) in
//! a throwaway namespace, and [`remove_test_keys`] cleans the Nodes up.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// Prefix of the per-run label key and annotation.
pub const TEST_KEY_PREFIX: &str = "itest.placement-policies.example";

/// Errors of the helpers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A Kubernetes call failed.
    #[error("Kubernetes API call failed: {0}")]
    Kube(#[from] kube::Error),
    /// Waiting timed out.
    #[error("timed out after {0:?} waiting for {1}")]
    Timeout(Duration, String),
}

/// A suffix unique to this process and moment (lower-case hex).
pub fn unique_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{:x}{:x}", std::process::id(), nanos)
}

/// The per-run label key and annotation key.
pub fn test_keys(suffix: &str) -> (String, String) {
    (
        format!("{TEST_KEY_PREFIX}/host-{suffix}"),
        format!("{TEST_KEY_PREFIX}/managed-{suffix}"),
    )
}

/// Creates the namespace `name`.
pub async fn create_namespace(client: &kube::Client, name: &str) -> Result<(), Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    api.create(&PostParams::default(), &ns).await?;
    Ok(())
}

/// Deletes a namespace (best effort: the test outcome matters more).
pub async fn delete_namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
}

/// Names of all Nodes, sorted.
pub async fn node_names(client: &kube::Client) -> Result<Vec<String>, Error> {
    let api: Api<Node> = Api::all(client.clone());
    let mut names: Vec<String> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    names.sort();
    Ok(names)
}

/// The value of `key` on Node `name`.
pub async fn node_label(
    client: &kube::Client,
    name: &str,
    key: &str,
) -> Result<Option<String>, Error> {
    let api: Api<Node> = Api::all(client.clone());
    Ok(api
        .get(name)
        .await?
        .metadata
        .labels
        .unwrap_or_default()
        .get(key)
        .cloned())
}

/// Removes this run's label and annotation from every Node.
pub async fn remove_test_keys(
    client: &kube::Client,
    label: &str,
    annotation: &str,
) -> Result<(), Error> {
    let api: Api<Node> = Api::all(client.clone());
    for name in node_names(client).await? {
        let patch =
            json!({"metadata": {"labels": {label: null}, "annotations": {annotation: null}}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(())
}

/// Polls `check` every 250 ms until it returns `true`, for at most `timeout`.
pub async fn wait_for<F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<(), Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, Error>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await? {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::Timeout(timeout, what.to_owned()));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A HostInventory putting every Node on `host`, as ConfigMap data.
pub fn inventory_for(nodes: &[String], host: &str) -> String {
    let mut doc = String::from("apiVersion: policyctl/v1alpha1\nkind: HostInventory\nhosts:\n");
    doc.push_str(&format!("- name: {host}\nvms:\n"));
    for n in nodes {
        doc.push_str(&format!("- name: {n}\n  group: itest\n  host: {host}\n"));
    }
    doc
}
