//! One child loop per object of a watched kind: a controller that works on
//! many targets (host-label-controller's `--all-clusters`, one labelling
//! loop per Cluster API Cluster) watches the objects naming them and runs
//! a loop for each, started when the object appears and stopped when it
//! goes.
//!
//! [`supervise`] owns everything but the child itself:
//!
//! - the watch (with kube's default backoff after an error) and the set of
//!   objects it has seen, rebuilt from every re-list so an object deleted
//!   while the watch was down is stopped too; `/readyz` turns ready once
//!   the first list is in;
//! - starting: the caller's `start` prepares a child (reads its
//!   credentials, builds its client) and returns the loop to run; when it
//!   cannot yet, the object is tried again every [`Fleet::recheck`];
//! - restarting: a child whose loop ended (its credentials stopped
//!   working, its watch gave up) is started afresh within a recheck,
//!   through `start` again, so whatever it read is read again;
//! - stopping: a child of a deleted object, and every child on shutdown,
//!   gets its own [`Shutdown`] fired ([`ShutdownReason::Requested`]) and
//!   is awaited.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use kube::Resource;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;

use crate::server::Readiness;
use crate::shutdown::{Shutdown, ShutdownReason};

/// The object a child loop belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Member {
    /// Its namespace (empty for a cluster-scoped kind).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl Member {
    fn of<K: Resource>(object: &K) -> Self {
        let meta = object.meta();
        Self {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

impl fmt::Display for Member {
    /// `namespace/name`, or `name` for a cluster-scoped object.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// How a fleet is watched and supervised.
#[derive(Debug, Clone)]
pub struct Fleet<K: Resource> {
    /// The objects naming the members.
    pub api: Api<K>,
    /// The watch's selectors.
    pub config: watcher::Config,
    /// How often members that could not be started, or whose loop ended,
    /// are tried again.
    pub recheck: Duration,
}

/// A started member: its stop token and its task.
struct Running {
    stop: Shutdown,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn stop(self) {
        self.stop.trigger(ShutdownReason::Requested);
        let _ = self.task.await;
    }
}

/// Runs one child loop per object of `fleet` until `shutdown` fires, then
/// stops every child and returns. `start(member, stop)` prepares a child:
/// `Ok(loop)` runs `loop` in a task of its own (it must return soon after
/// `stop` fires); `Err(reason)` is logged and the member is tried again
/// within a recheck. Returns an error only if the watch stream ends,
/// which kube's watcher never does on its own.
pub async fn supervise<K, Start, Prepared, Loop>(
    fleet: Fleet<K>,
    readiness: &Readiness,
    shutdown: &Shutdown,
    mut start: Start,
) -> Result<(), crate::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug + Send + 'static,
    Start: FnMut(Member, Shutdown) -> Prepared,
    Prepared: Future<Output = Result<Loop, String>>,
    Loop: Future<Output = ()> + Send + 'static,
{
    let kind = K::kind(&()).into_owned();
    let mut events = watcher(fleet.api, fleet.config).default_backoff().boxed();
    let mut known: BTreeSet<Member> = BTreeSet::new();
    let mut listing: Option<BTreeSet<Member>> = None;
    let mut running: BTreeMap<Member, Running> = BTreeMap::new();
    let mut recheck = tokio::time::interval(fleet.recheck);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let result = loop {
        tokio::select! {
            () = shutdown.signalled() => break Ok(()),
            _ = recheck.tick() => {}
            event = events.next() => match event {
                Some(Ok(watcher::Event::Init)) => listing = Some(BTreeSet::new()),
                Some(Ok(watcher::Event::InitApply(object))) => {
                    if let Some(listed) = listing.as_mut() {
                        listed.insert(Member::of(&object));
                    }
                }
                Some(Ok(watcher::Event::InitDone)) => {
                    if let Some(listed) = listing.take() {
                        known = listed;
                    }
                    readiness.set_ready(true);
                }
                Some(Ok(watcher::Event::Apply(object))) => {
                    known.insert(Member::of(&object));
                }
                Some(Ok(watcher::Event::Delete(object))) => {
                    known.remove(&Member::of(&object));
                }
                Some(Err(error)) => {
                    tracing::warn!(%error, kind = %kind, "watch failed; retrying with backoff");
                    continue;
                }
                None => break Err(crate::Error::WatchEnded),
            },
        }
        let ended: Vec<Member> = running
            .iter()
            .filter(|(member, child)| !known.contains(*member) || child.task.is_finished())
            .map(|(member, _)| member.clone())
            .collect();
        for member in ended {
            if let Some(child) = running.remove(&member) {
                if known.contains(&member) {
                    tracing::info!(%member, kind = %kind, "the loop ended; starting it again");
                } else {
                    tracing::info!(%member, kind = %kind, "gone; stopping its loop");
                }
                child.stop().await;
            }
        }
        let waiting: Vec<Member> = known
            .iter()
            .filter(|member| !running.contains_key(*member))
            .cloned()
            .collect();
        for member in waiting {
            let stop = Shutdown::new();
            match start(member.clone(), stop.clone()).await {
                Ok(child) => {
                    tracing::info!(%member, kind = %kind, "loop started");
                    let task = tokio::spawn(child);
                    running.insert(member, Running { stop, task });
                }
                Err(reason) => {
                    tracing::warn!(%member, kind = %kind, %reason, "cannot start its loop yet");
                }
            }
        }
    };
    for (_, child) in running {
        child.stop().await;
    }
    result
}
