//! Helpers shared by the real-server tests.
#![allow(dead_code)]

use std::future::Future;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, WatchParams};
use kube_testbed::{Builder, Testbed};

/// Starts a bed of its own for a test; a bed that cannot start fails the
/// test with the reason (a missing bed names `bash testbed/build.sh`).
pub async fn start(builder: Builder) -> Testbed {
    match builder.start().await {
        Ok(bed) => bed,
        Err(error) => panic!("the test bed did not start: {error}"),
    }
}

/// Polls `check` every 100 ms until it gives `Some`, or fails after `limit`.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            started.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The HTTP status code of a failed API call.
pub fn status_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// How a watch from `resource_version` starts: `Ok(())` once it delivers
/// an event (the caller made a change after that version), `Err(code)`
/// when the server refuses it, with an HTTP error or with an error event
/// in the stream.
pub async fn watch_from<K>(api: &Api<K>, resource_version: &str) -> Result<(), u16>
where
    K: kube::Resource
        + Clone
        + k8s_openapi::serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let stream = match api.watch(&WatchParams::default(), resource_version).await {
        Ok(stream) => stream,
        Err(error) => return Err(status_code(&error).unwrap_or(0)),
    };
    let mut stream = Box::pin(stream);
    let limit = Duration::from_secs(30);
    match tokio::time::timeout(limit, stream.next()).await {
        Ok(Some(Ok(kube::api::WatchEvent::Error(status)))) => Err(status.code),
        Ok(Some(Err(error))) => Err(status_code(&error).unwrap_or(0)),
        Ok(Some(Ok(kube::api::WatchEvent::Bookmark(_)))) => {
            panic!("a watch from {resource_version} began with a bookmark, not an event")
        }
        Ok(Some(Ok(_))) => Ok(()),
        Ok(None) => panic!("a watch from {resource_version} ended without an event"),
        Err(_) => panic!("a watch from {resource_version} gave nothing in {limit:?}"),
    }
}
