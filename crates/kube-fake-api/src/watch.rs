//! Watch streams: initial events, history replay, live events, bookmarks,
//! `410 Gone`, timeouts and dropped connections.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::error::ApiError;
use crate::handlers;
use crate::resource::ResourceInfo;
use crate::router::ApiRequest;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::store::{EventType, Store, StoredEvent};

/// The parsed parameters of one watch request.
#[derive(Debug, Clone)]
pub struct WatchSpec {
    info: ResourceInfo,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
    bookmarks: bool,
    timeout: Option<Duration>,
    drop_after: Option<Duration>,
}

/// What the watch starts with, computed while the store is locked.
pub struct WatchStart {
    spec: WatchSpec,
    initial: Vec<Bytes>,
    live: Option<broadcast::Receiver<Arc<StoredEvent>>>,
    last_rv: u64,
}

fn line(kind: &str, object: &Value) -> Bytes {
    let mut v = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

fn bookmark(info: &ResourceInfo, rv: u64, initial_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    line(
        "BOOKMARK",
        &json!({"apiVersion": info.id.api_version(), "kind": info.kind, "metadata": meta}),
    )
}

impl WatchSpec {
    fn selects(&self, v: &Value) -> bool {
        self.labels.matches(v) && self.fields.matches(v)
    }

    /// The wire event for `ev` as this watch sees it: `MODIFIED` turns into
    /// `ADDED`/`DELETED` when the object enters/leaves the selectors.
    fn translate(&self, ev: &StoredEvent) -> Option<Bytes> {
        if ev.key.resource != self.info.id {
            return None;
        }
        if let Some(ns) = &self.namespace
            && ev.key.namespace != *ns
        {
            return None;
        }
        let now = self.selects(&ev.object);
        let before = ev.previous.as_ref().is_some_and(|p| self.selects(p));
        let kind = match ev.kind {
            EventType::Added if now => EventType::Added,
            EventType::Deleted if before || now => EventType::Deleted,
            EventType::Modified if now && before => EventType::Modified,
            EventType::Modified if now => EventType::Added,
            EventType::Modified if before => EventType::Deleted,
            _ => return None,
        };
        Some(line(kind.as_str(), &ev.object))
    }
}

/// Prepares a watch under the store lock. `resourceVersion` unset or `0`
/// starts with synthetic `ADDED` events for the current objects; a newer one
/// replays history after it, or answers an in-stream `410` ERROR event when
/// that history was compacted.
pub fn start(
    store: &Store,
    req: &ApiRequest,
    drop_after: Option<Duration>,
) -> Result<WatchStart, ApiError> {
    let info = handlers::resolve(store, req)?;
    let (labels, fields) = handlers::selectors(&info, req)?;
    let spec = WatchSpec {
        namespace: if info.namespaced {
            req.namespace.clone()
        } else {
            None
        },
        labels,
        fields,
        bookmarks: req.flag("allowWatchBookmarks"),
        timeout: req
            .param("timeoutSeconds")
            .and_then(|s| s.parse::<u64>().ok())
            .map(Duration::from_secs),
        drop_after,
        info,
    };
    let rv_param = req.param("resourceVersion").unwrap_or_default();
    let current = store.resource_version();
    let mut initial = Vec::new();
    let live;
    if rv_param.is_empty() || rv_param == "0" || req.flag("sendInitialEvents") {
        for v in handlers::matching(store, &spec.info, req)? {
            initial.push(line("ADDED", &v));
        }
        if req.flag("sendInitialEvents") {
            initial.push(bookmark(&spec.info, current, true));
        }
        live = Some(store.subscribe());
    } else {
        let rv: u64 = rv_param.parse().map_err(|_| {
            ApiError::bad_request(format!(
                "invalid resourceVersion {rv_param:?}: expected a number"
            ))
        })?;
        match store.subscribe_since(rv) {
            Some((replay, rx)) => {
                initial.extend(replay.iter().filter_map(|ev| spec.translate(ev)));
                live = Some(rx);
            }
            None => {
                initial.push(line("ERROR", &ApiError::gone(rv).to_status()));
                live = None;
            }
        }
    }
    Ok(WatchStart {
        spec,
        initial,
        live,
        last_rv: current,
    })
}

/// Runs a watch, writing JSON lines into `tx` until the client goes away,
/// the timeout or a drop fires, `dropped` changes, or the watch lags.
pub async fn run(
    start: WatchStart,
    tx: mpsc::Sender<Bytes>,
    mut dropped: tokio::sync::watch::Receiver<u64>,
    bookmark_interval: Duration,
) {
    let WatchStart {
        spec,
        initial,
        live,
        mut last_rv,
    } = start;
    for l in initial {
        if tx.send(l).await.is_err() {
            return;
        }
    }
    let Some(mut live) = live else { return };
    let deadline = spec.timeout.into_iter().chain(spec.drop_after).min();
    let sleep = tokio::time::sleep(deadline.unwrap_or(Duration::from_secs(365 * 24 * 3600)));
    tokio::pin!(sleep);
    let mut ticker = tokio::time::interval(bookmark_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    dropped.borrow_and_update();
    loop {
        tokio::select! {
            () = &mut sleep => return,
            _ = dropped.changed() => return,
            () = tx.closed() => return,
            _ = ticker.tick(), if spec.bookmarks => {
                if tx.send(bookmark(&spec.info, last_rv, false)).await.is_err() {
                    return;
                }
            }
            ev = live.recv() => match ev {
                Ok(ev) => {
                    last_rv = last_rv.max(ev.rv);
                    if let Some(l) = spec.translate(&ev)
                        && tx.send(l).await.is_err()
                    {
                        return;
                    }
                }
                // Lagged or closed: end the stream; the client re-watches from its last resourceVersion.
                Err(_) => return,
            },
        }
    }
}
