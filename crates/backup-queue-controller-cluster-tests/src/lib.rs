//! Helpers for the real-cluster tests of `backup-queue-controller`
//! (the tier above the in-process end-to-end tests). The tests themselves are in `tests/` and are
//! `#[ignore = "needs cluster"]`: they compile in CI and never run there.
//! Run them against a throwaway cluster (kind or k3d, see
//! `docs/operations.md`) with
//! `cargo test -p backup-queue-controller-cluster-tests -- --ignored`.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, PostParams};

/// The bundled minimal Backup CRD (no status subresource, like Velero's).
pub const BACKUP_CRD_YAML: &str = include_str!("../crd/backups.velero.io.yaml");

/// Errors of the helpers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A Kubernetes call failed.
    #[error("Kubernetes API call failed: {0}")]
    Kube(#[from] kube::Error),
    /// The bundled CRD does not parse (a bug in this crate).
    #[error("crd/backups.velero.io.yaml does not parse: {0}")]
    Crd(String),
    /// Waiting timed out.
    #[error("timed out after {0:?} waiting for {1}")]
    Timeout(Duration, String),
}

/// Whether [`install_backup_crd`] created the CRD (then the caller removes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrdInstall {
    /// It was already there (e.g. Velero is installed); leave it.
    AlreadyPresent,
    /// This run created it.
    Created,
}

/// Installs the bundled Backup CRD unless `backups.velero.io` exists, and
/// waits until it is served.
pub async fn install_backup_crd(client: &kube::Client) -> Result<CrdInstall, Error> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    if crds.get_opt("backups.velero.io").await?.is_some() {
        return Ok(CrdInstall::AlreadyPresent);
    }
    let crd: CustomResourceDefinition =
        serde_saphyr::from_str(BACKUP_CRD_YAML).map_err(|e| Error::Crd(e.to_string()))?;
    crds.create(&PostParams::default(), &crd).await?;
    wait_for(
        "the Backup CRD to be established",
        Duration::from_secs(30),
        || async {
            let crd = crds.get("backups.velero.io").await?;
            Ok(crd
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True"))
        },
    )
    .await?;
    Ok(CrdInstall::Created)
}

/// Removes the CRD if this run created it.
pub async fn uninstall_backup_crd(client: &kube::Client, install: CrdInstall) -> Result<(), Error> {
    if install == CrdInstall::Created {
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        crds.delete("backups.velero.io", &DeleteParams::default())
            .await?;
    }
    Ok(())
}

/// Creates a namespace named `prefix-<unique suffix>`.
pub async fn throwaway_namespace(client: &kube::Client, prefix: &str) -> Result<String, Error> {
    let suffix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() % 1_000_000_000)
        .unwrap_or_default();
    let name = format!("{prefix}-{suffix}");
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))
        .map_err(|e| Error::Crd(e.to_string()))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(name)
}

/// Deletes a namespace (and everything in it).
pub async fn delete_namespace(client: &kube::Client, name: &str) -> Result<(), Error> {
    Api::<Namespace>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await?;
    Ok(())
}

/// Polls `cond` every 200 ms until it is true or `timeout` passes.
pub async fn wait_for<F, Fut>(what: &str, timeout: Duration, mut cond: F) -> Result<(), Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool, Error>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if cond().await? {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::Timeout(timeout, what.to_owned()));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_crd_parses_and_has_no_status_subresource() {
        let crd: CustomResourceDefinition = serde_saphyr::from_str(BACKUP_CRD_YAML).unwrap();
        assert_eq!(crd.spec.group, "velero.io");
        assert_eq!(crd.spec.names.plural, "backups");
        assert!(crd.spec.versions.iter().all(|v| v.subresources.is_none()));
    }
}
