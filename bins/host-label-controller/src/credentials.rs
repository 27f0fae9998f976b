//! A workload cluster's credentials under `--all-clusters`: its Cluster
//! API kubeconfig Secret (`<cluster>-kubeconfig`, key `value`), the client
//! built from it, and the signal that the client's credentials stopped
//! working.
//!
//! Cluster API's ClusterCache drops a workload cluster's connection as
//! soon as its health probe gets `401 Unauthorized`, and builds the next
//! one from the Secret read again. Here every response of the workload
//! client is watched instead: a `401` or `403` raises [`AuthFailures`],
//! and the caller (`clusters::run_cluster` in the crate root) reads the
//! Secret again and rebuilds the client when its content changed. The
//! caller also reads the Secret every [`crate::ALL_CLUSTERS_RECHECK`], so
//! a rotation is picked up before the old credentials are revoked.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use tokio::sync::Notify;

use crate::config::ObjectName;

/// The key of the kubeconfig in Cluster API's Secret.
pub const KUBECONFIG_KEY: &str = "value";

/// Why a workload cluster's credentials cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialError {
    /// The Secret could not be read.
    #[error("cannot read Secret {secret}: {source}")]
    Read {
        /// `namespace/name` of the Secret.
        secret: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The Secret has no kubeconfig.
    #[error("Secret {secret}: data key {KUBECONFIG_KEY:?} is missing")]
    MissingKey {
        /// `namespace/name` of the Secret.
        secret: String,
    },
    /// The kubeconfig is not text.
    #[error("Secret {secret}: data key {KUBECONFIG_KEY:?} is not UTF-8")]
    NotUtf8 {
        /// `namespace/name` of the Secret.
        secret: String,
    },
    /// The kubeconfig does not parse or gives no usable client.
    #[error("Secret {secret}: data key {KUBECONFIG_KEY:?}: unusable kubeconfig: {problem}")]
    Unusable {
        /// `namespace/name` of the Secret.
        secret: String,
        /// The parser's or client builder's message.
        problem: String,
    },
}

/// `namespace/<cluster>-kubeconfig`: Cluster API's kubeconfig Secret of
/// `cluster`.
pub fn secret_name(cluster: &ObjectName) -> ObjectName {
    ObjectName {
        namespace: cluster.namespace.clone(),
        name: format!("{}-kubeconfig", cluster.name),
    }
}

/// The kubeconfig bytes of `cluster`'s Secret, read through `management`.
pub async fn read_kubeconfig(
    management: &kube::Client,
    cluster: &ObjectName,
) -> Result<Vec<u8>, CredentialError> {
    let secret = secret_name(cluster);
    let api: Api<Secret> = Api::namespaced(management.clone(), &secret.namespace);
    let read = api
        .get(&secret.name)
        .await
        .map_err(|source| CredentialError::Read {
            secret: secret.to_string(),
            source,
        })?;
    read.data
        .and_then(|mut data| data.remove(KUBECONFIG_KEY))
        .map(|bytes| bytes.0)
        .ok_or_else(|| CredentialError::MissingKey {
            secret: secret.to_string(),
        })
}

/// Raised when the workload cluster answers `401` or `403`: a hint that
/// the credentials may have been rotated. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct AuthFailures(Arc<Notify>);

impl AuthFailures {
    /// Waits for the next failure (one raised since the last wait counts).
    pub async fn next(&self) {
        self.0.notified().await;
    }

    fn raise(&self) {
        self.0.notify_one();
    }
}

/// Whether an answer with `status` raises [`AuthFailures`].
pub fn is_auth_failure(status: http::StatusCode) -> bool {
    status == http::StatusCode::UNAUTHORIZED || status == http::StatusCode::FORBIDDEN
}

/// The client of the workload cluster whose Secret `secret` held
/// `kubeconfig`, raising `failures` on every `401`/`403` answer.
pub async fn workload_client(
    secret: &ObjectName,
    kubeconfig: &[u8],
    failures: AuthFailures,
) -> Result<kube::Client, CredentialError> {
    let unusable = |problem: String| CredentialError::Unusable {
        secret: secret.to_string(),
        problem,
    };
    let text = std::str::from_utf8(kubeconfig).map_err(|_| CredentialError::NotUtf8 {
        secret: secret.to_string(),
    })?;
    let parsed = kube::config::Kubeconfig::from_yaml(text).map_err(|e| unusable(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(parsed, &Default::default())
        .await
        .map_err(|e| unusable(e.to_string()))?;
    let default_namespace = config.default_namespace.clone();
    let inner = kube::Client::try_from(config).map_err(|e| unusable(e.to_string()))?;
    Ok(kube::Client::new(
        Watched { inner, failures },
        default_namespace,
    ))
}

/// The workload client, every answer checked by [`is_auth_failure`].
#[derive(Clone)]
struct Watched {
    inner: kube::Client,
    failures: AuthFailures,
}

type Answer = Result<http::Response<kube::client::Body>, kube::Error>;

impl tower::Service<http::Request<kube::client::Body>> for Watched {
    type Response = http::Response<kube::client::Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let (inner, failures) = (self.inner.clone(), self.failures.clone());
        Box::pin(async move {
            let response = inner.send(request).await?;
            if is_auth_failure(response.status()) {
                failures.raise();
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_401_and_403_count_as_auth_failures() {
        for code in [401, 403] {
            assert!(is_auth_failure(http::StatusCode::from_u16(code).unwrap()));
        }
        for code in [200, 404, 409, 429, 500] {
            assert!(!is_auth_failure(http::StatusCode::from_u16(code).unwrap()));
        }
    }

    #[tokio::test]
    async fn a_kubeconfig_that_is_not_text_or_not_a_kubeconfig_is_named_with_its_secret() {
        let secret = secret_name(&ObjectName {
            namespace: "capi".into(),
            name: "c1".into(),
        });
        let error = workload_client(&secret, &[0xff, 0xfe], AuthFailures::default())
            .await
            .err()
            .map(|e| e.to_string());
        insta::assert_snapshot!(error.unwrap_or_default(), @r#"Secret capi/c1-kubeconfig: data key "value" is not UTF-8"#);
        let error = workload_client(&secret, b"clusters: 3", AuthFailures::default())
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error
                .starts_with("Secret capi/c1-kubeconfig: data key \"value\": unusable kubeconfig:"),
            "{error}"
        );
    }
}
