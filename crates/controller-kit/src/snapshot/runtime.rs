//! The loop: watches in, passes out.

use std::fmt::Debug;
use std::pin::pin;
use std::time::Duration;

use futures::stream::SelectAll;
use futures::{FutureExt, StreamExt};
use kube::Resource;
use serde::de::DeserializeOwned;
use sync_wrapper::SyncWrapper;
use tokio::time::Instant;

use super::state::{LoopState, Versions, Watches};
use super::watch::{Watch, updates};
use super::writer::Writer;
use super::{IndexResource, Outcome, Reconciler};
use crate::Shutdown;
use crate::events::EventPublisher;
use crate::metrics::ControllerMetrics;
use crate::server::Readiness;

/// How the runtime paces passes and how it writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The controller's name: field manager of every write and reporter of
    /// its Events.
    pub name: &'static str,
    /// This replica's name in Events (`reportingInstance`).
    pub instance: Option<String>,
    /// `--dry-run`: decide and log, write nothing.
    pub dry_run: bool,
    /// Pass at least this often even when nothing changes (time-based
    /// decisions, and a safety net against a missed event).
    pub resync: Option<Duration>,
    /// First wait after a failed pass; doubles per consecutive failure.
    pub retry_backoff: Duration,
    /// Longest wait between retries.
    pub max_retry_backoff: Duration,
    /// Passes in a row that may end in [`Outcome::Replan`] before the
    /// runtime backs off as for a failure (a writer fighting over an object).
    pub max_quick_replans: u32,
}

impl Settings {
    /// Defaults: no resync, backoff 100 ms doubling up to 10 s, three quick
    /// re-plans, writes enabled.
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            instance: None,
            dry_run: false,
            resync: None,
            retry_backoff: Duration::from_millis(100),
            max_retry_backoff: Duration::from_secs(10),
            max_quick_replans: 3,
        }
    }
}

/// The snapshot-controller loop of one binary: see the
/// [module docs](super).
pub struct Runtime<R: Reconciler> {
    settings: Settings,
    index: R::Index,
    reconciler: R,
    metrics: ControllerMetrics,
    readiness: Readiness,
    events: EventPublisher,
    watches: Watches<R::Index>,
    debounces: Vec<Duration>,
}

impl<R: Reconciler> Runtime<R> {
    /// A runtime for `reconciler` over `index` (usually empty: the first
    /// list of every watch fills it). `readiness` turns ready after the
    /// initial sync.
    pub fn new(
        client: kube::Client,
        settings: Settings,
        index: R::Index,
        reconciler: R,
        metrics: ControllerMetrics,
        readiness: Readiness,
    ) -> Self {
        let events = EventPublisher::new(
            client,
            settings.name,
            settings.instance.clone(),
            settings.dry_run,
        );
        Self {
            settings,
            index,
            reconciler,
            metrics,
            readiness,
            events,
            watches: SyncWrapper::new(SelectAll::new()),
            debounces: Vec::new(),
        }
    }

    /// Adds a watch feeding the index's [`IndexResource<K>`].
    #[must_use]
    pub fn watch<K>(mut self, watch: Watch<K>) -> Self
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        R::Index: IndexResource<K>,
    {
        let id = self.debounces.len();
        self.debounces.push(watch.debounce_time());
        self.watches
            .get_mut()
            .push(updates::<K, R::Index>(watch).map(move |u| (id, u)).boxed());
        self
    }

    /// Runs until `shutdown` fires. Fails only if a watch stream ends (kube's
    /// watcher never ends on its own).
    pub async fn run(self, shutdown: &Shutdown) -> Result<(), crate::Error> {
        let Self {
            settings,
            mut index,
            mut reconciler,
            metrics,
            readiness,
            events,
            mut watches,
            debounces,
        } = self;
        let mut state = LoopState {
            synced: vec![false; debounces.len()],
            all_synced: debounces.is_empty(),
            due: None,
            retry_at: None,
            backoff: settings.retry_backoff,
            quick_replans: 0,
            versions: Versions::default(),
        };
        if state.all_synced {
            readiness.set_ready(true);
            state.due = Some(Instant::now());
        }
        let mut stop = pin!(shutdown.signalled());
        loop {
            tokio::select! {
                biased;
                () = &mut stop => return Ok(()),
                next = watches.get_mut().next() => match next {
                    Some((id, update)) => state.take(id, update, &mut index, &debounces, &metrics),
                    None => return Err(crate::Error::WatchEnded),
                },
                () = sleep_until(state.wake_at()) => {}
            }
            // Coalesce: take in everything already delivered.
            while let Some(Some((id, update))) = watches.get_mut().next().now_or_never() {
                state.take(id, update, &mut index, &debounces, &metrics);
            }
            if !state.all_synced {
                if !state.synced.iter().all(|s| *s) {
                    continue;
                }
                state.all_synced = true;
                readiness.set_ready(true);
                tracing::info!("every watch has listed; passes start");
                state.due = Some(Instant::now());
            }
            let now = Instant::now();
            if state.wake_at().is_none_or(|at| at > now) {
                continue;
            }
            state.due = None;
            state.retry_at = None;
            let outcome = {
                let _timer = metrics.reconcile_started();
                let plan = reconciler.plan(&index, jiff::Timestamp::now());
                let mut writer = Writer {
                    index: &mut index,
                    state: &mut state,
                    watches: &mut watches,
                    debounces: &debounces,
                    metrics: &metrics,
                    events: &events,
                    shutdown,
                    field_manager: settings.name,
                    dry_run: settings.dry_run,
                    readiness: &readiness,
                };
                reconciler.execute(plan, &mut writer).await
            };
            state.after_pass(outcome, &settings);
        }
    }
}

/// The pacing after a pass, which depends on the [`Settings`].
impl LoopState {
    fn after_pass(&mut self, outcome: Outcome, settings: &Settings) {
        let now = Instant::now();
        let outcome = match outcome {
            Outcome::Replan if self.quick_replans >= settings.max_quick_replans => {
                tracing::debug!(
                    replans = self.quick_replans,
                    "writes keep being refused; backing off"
                );
                Outcome::Retry
            }
            other => other,
        };
        match outcome {
            Outcome::Done | Outcome::Superseded => {
                self.backoff = settings.retry_backoff;
                self.quick_replans = 0;
            }
            Outcome::Replan => {
                self.quick_replans += 1;
                self.due = Some(now);
            }
            Outcome::Retry => {
                self.quick_replans = 0;
                self.retry_at = Some(now + self.backoff);
                self.due = Some(now);
                self.backoff = (self.backoff * 2).min(settings.max_retry_backoff);
            }
        }
        if let Some(resync) = settings.resync {
            self.want_pass(resync);
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
