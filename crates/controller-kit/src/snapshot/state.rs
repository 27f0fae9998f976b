//! What the loop keeps between passes, shared by the loop and the
//! [`Writer`](super::Writer) (which takes in watch updates between writes):
//! the watch streams, the pacing state, and the resourceVersions of the
//! controller's own writes that the watches have not shown yet.

use std::collections::HashMap;
use std::time::Duration;

use futures::stream::{BoxStream, SelectAll};
use sync_wrapper::SyncWrapper;
use tokio::time::Instant;

use super::watch::{ObjectKey, Update};
use crate::metrics::{ControllerMetrics, ErrorKind};

/// Every watch's updates, tagged with the watch's position. The streams are
/// `Send` but not `Sync`; the wrapper lets the executor's `Writer` (which
/// must be `Sync`, as executors hold `&Writer` across awaits) reach them
/// through `&mut` alone.
pub(crate) type Watches<I> = SyncWrapper<SelectAll<BoxStream<'static, (usize, Update<I>)>>>;

struct WatchError;
impl ErrorKind for WatchError {
    fn kind(&self) -> &'static str {
        "watch"
    }
}

/// What the loop keeps between passes (and the writer updates when it
/// takes in news, [`Writer::news`]).
pub(crate) struct LoopState {
    pub(super) synced: Vec<bool>,
    pub(super) all_synced: bool,
    /// When the next pass is wanted.
    pub(super) due: Option<Instant>,
    /// Not before this (backing off).
    pub(super) retry_at: Option<Instant>,
    pub(super) backoff: Duration,
    pub(super) quick_replans: u32,
    pub(super) versions: Versions,
}

impl LoopState {
    pub(super) fn wake_at(&self) -> Option<Instant> {
        if !self.all_synced {
            return None;
        }
        let due = self.due?;
        Some(self.retry_at.map_or(due, |r| r.max(due)))
    }

    pub(super) fn want_pass(&mut self, after: Duration) {
        let at = Instant::now() + after;
        self.due = Some(self.due.map_or(at, |d| d.min(at)));
    }

    /// Whether a pass is wanted (a change someone else made arrived).
    pub(crate) fn pass_wanted(&self) -> bool {
        self.due.is_some()
    }

    pub(crate) fn take<I>(
        &mut self,
        id: usize,
        update: Update<I>,
        index: &mut I,
        debounces: &[Duration],
        metrics: &ControllerMetrics,
    ) {
        let debounce = debounces.get(id).copied().unwrap_or_default();
        match update {
            Update::Apply {
                key,
                version,
                change,
            } => match self.versions.observe(&key, version.as_deref()) {
                Freshness::Newer => {
                    change(index);
                    self.want_pass(debounce);
                }
                Freshness::Same | Freshness::Older => {}
            },
            Update::Delete { key, change } => {
                self.versions.forget(&key);
                change(index);
                self.want_pass(debounce);
            }
            Update::Reset {
                listed,
                removed,
                change,
            } => {
                for (key, version) in &listed {
                    self.versions.observe(key, version.as_deref());
                }
                for key in &removed {
                    self.versions.forget(key);
                }
                change(index);
                if let Some(synced) = self.synced.get_mut(id) {
                    *synced = true;
                }
                self.want_pass(debounce);
            }
            Update::Failed { message } => {
                tracing::warn!(%message, "watch failed; retrying with backoff");
                metrics.record_error(&WatchError);
            }
        }
    }
}

/// resourceVersions the index holds from this controller's own writes and
/// reads, newer than what the watch has shown so far.
#[derive(Debug, Default)]
pub(crate) struct Versions(HashMap<ObjectKey, u64>);

/// resourceVersions are etcd revisions in every API server: integers that
/// grow. A version that is not one is never compared.
fn number(version: Option<&str>) -> Option<u64> {
    version.and_then(|v| v.parse().ok())
}

/// What to do with a watched change of an object.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Freshness {
    /// Newer than anything the index holds: apply it.
    Newer,
    /// The very version this controller wrote or read: the index has it.
    Same,
    /// Older than what the index holds: drop it.
    Older,
}

impl Versions {
    pub(crate) fn record(&mut self, key: ObjectKey, version: Option<&str>) {
        match number(version) {
            Some(n) => {
                self.0.insert(key, n);
            }
            None => {
                self.0.remove(&key);
            }
        }
    }

    /// Classifies a watched version of `key` and forgets the record once the
    /// watch caught up with it.
    pub(crate) fn observe(&mut self, key: &ObjectKey, version: Option<&str>) -> Freshness {
        let Some(held) = self.0.get(key).copied() else {
            return Freshness::Newer;
        };
        match number(version) {
            Some(seen) if seen < held => Freshness::Older,
            Some(seen) if seen == held => {
                self.0.remove(key);
                Freshness::Same
            }
            _ => {
                self.0.remove(key);
                Freshness::Newer
            }
        }
    }

    pub(crate) fn forget(&mut self, key: &ObjectKey) {
        self.0.remove(key);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::named::<()>(None, name.to_owned())
    }

    #[test]
    fn watched_versions_older_than_a_write_are_dropped_and_its_echo_is_recognised() {
        let mut v = Versions::default();
        v.record(key("a"), Some("10"));
        assert_eq!(v.observe(&key("a"), Some("9")), Freshness::Older);
        assert_eq!(v.observe(&key("a"), Some("10")), Freshness::Same);
        // Caught up: the record is gone, later versions apply.
        assert_eq!(v.len(), 0);
        assert_eq!(v.observe(&key("a"), Some("9")), Freshness::Newer);
        v.record(key("b"), Some("10"));
        assert_eq!(v.observe(&key("b"), Some("11")), Freshness::Newer);
        assert_eq!(v.len(), 0);
        // Versions that are not numbers are never compared.
        v.record(key("c"), Some("10"));
        assert_eq!(v.observe(&key("c"), Some("x")), Freshness::Newer);
        v.record(key("d"), Some("abc"));
        assert_eq!(v.len(), 0);
    }
}
