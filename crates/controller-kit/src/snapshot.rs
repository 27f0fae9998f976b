//! The snapshot-controller runtime: one loop, shared by every controller,
//! that keeps a binary's index up to date from watches, runs the binary's
//! pure pass over it and lets the binary's executor carry out the plan.
//!
//! A controller that decides over a whole set of objects at once (a queue,
//! a prepare-queue gate, every Node of a cluster) is not a per-object
//! reconciler: it needs a consistent snapshot of everything it watches.
//! After the model of kubert's index (linkerd2's policy controller), a
//! binary supplies three things:
//!
//! 1. an **index**: a synchronous, in-memory view of the watched objects,
//!    implementing [`IndexResource<K>`] (`apply`, `delete`, `reset`) for
//!    every kind `K` it watches. No I/O, no clock: it is unit-tested by
//!    calling those methods directly;
//! 2. a **pass** ([`Reconciler::plan`]): a pure function from the index
//!    (and `now`) to a plan, a value saying what to write;
//! 3. an **executor** ([`Reconciler::execute`]): carries the plan out through
//!    the [`Writer`] it is handed, and says how it went ([`Outcome`]).
//!
//! The [`Runtime`] owns, once for every binary:
//!
//! - the **initial sync**: no pass before every watch has listed once; then
//!   `/readyz` turns ready;
//! - **coalescing**: every update already delivered is applied before a
//!   pass, and each watch may ask for its changes to wait a little
//!   ([`Watch::debounce`]) so that a burst becomes one pass;
//! - **retry with backoff** after a failed pass ([`Outcome::Retry`]), and a
//!   pass again at once after a refused write ([`Outcome::Replan`]), a few
//!   times in a row before backing off too;
//! - **conditional writes and their 409 handling** ([`Writer::patch`],
//!   [`Writer::create`]): a merge patch carries the resourceVersion it was
//!   planned from; the response goes into the index at once (the next pass
//!   sees the write); a `409` makes the writer read the object again and put
//!   it into the index, a `404` removes it from the index, so the next pass
//!   plans from fresh state. Watch events older than a write the index
//!   already holds are dropped, and the echo of the write itself does not
//!   cause a pass;
//! - **news between writes** ([`Writer::news`]): an executor with a long
//!   plan asks between writes whether someone else changed a watched
//!   object; if so it stops ([`Outcome::Superseded`]) and the next pass
//!   plans from the change, so a change never waits for a long plan made
//!   before it;
//! - `--dry-run` (the writer logs what it would write and writes nothing),
//!   Events ([`Writer::publish`]), and no write at all once shutdown
//!   started (a lost Lease stops a leader from acting);
//! - **metrics**: passes and their duration, writes by outcome, errors by
//!   kind (watch failures, refused writes, Events) on
//!   [`crate::metrics::ControllerMetrics`];
//! - **shutdown**: the loop ends when the [`crate::Shutdown`] token fires.
//!
//! Leader election (or none, for per-node workloads) and the
//! `/metrics`/`/healthz`/`/readyz` server stay with
//! [`crate::runner::run_controller`], whose work is this runtime's
//! [`Runtime::run`].

mod runtime;
mod state;
mod watch;
mod writer;

use std::future::Future;

use kube::Resource;
use kube::runtime::reflector::ObjectRef;

/// The time a pass is made at (`jiff`'s, as the policy crates use).
pub use jiff::Timestamp;
pub use runtime::{Runtime, Settings};
pub use watch::Watch;
pub use writer::{Refused, Target, WRITE_REFUSED, Writer, Written};

/// A synchronous index over the objects of kind `K` a controller watches.
///
/// The runtime calls these methods in the order the watch delivers events;
/// an index implements this trait once per watched kind. Writes made
/// through the [`Writer`] feed their responses to [`IndexResource::apply`]
/// too.
pub trait IndexResource<K: Resource<DynamicType = ()>> {
    /// An object was created or changed (or written by this controller).
    fn apply(&mut self, object: K);

    /// An object was deleted (or a write or read found it gone).
    fn delete(&mut self, key: ObjectRef<K>);

    /// A watch listed its objects again (its first list, or a re-list after
    /// it lost its place): `objects` is everything it matches now,
    /// `removed` what it had delivered before and no longer lists.
    ///
    /// The default applies each object and deletes each removed one;
    /// override it when rebuilding at once is cheaper.
    fn reset(&mut self, objects: Vec<K>, removed: Vec<ObjectRef<K>>) {
        for object in objects {
            self.apply(object);
        }
        for key in removed {
            self.delete(key);
        }
    }
}

/// How carrying out a plan went.
///
/// Ordered by severity: combining outcomes keeps the worst
/// ([`Outcome::and`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// Everything was written (or nothing had to be): wait for changes.
    Done,
    /// The executor stopped before the end of its plan because news
    /// arrived ([`Writer::news`]); every prefix of a plan being safe, the
    /// pass already due plans again from the news, without backing off.
    Superseded,
    /// A write was refused because the world moved on (`409`, `404`); the
    /// writer put the fresh state into the index: pass again now.
    Replan,
    /// A write failed for another reason: pass again after a backoff.
    Retry,
}

impl Outcome {
    /// The worse of two outcomes.
    #[must_use]
    pub fn and(self, other: Outcome) -> Outcome {
        self.max(other)
    }
}

/// What a binary supplies besides its index: the pure pass and the
/// executor.
pub trait Reconciler: Send + 'static {
    /// The index the pass reads.
    type Index: Send + 'static;
    /// What the pass decides.
    type Plan: Send;

    /// The pass: a pure function of the index and the time. It must not
    /// change the index or do I/O, so it can be unit-tested on an index
    /// built by hand.
    fn plan(&self, index: &Self::Index, now: Timestamp) -> Self::Plan;

    /// Carries out `plan` with `writer` (which also gives access to the
    /// index, e.g. to apply a GET). Executor state such as which Events were
    /// already published lives in `self`.
    fn execute(
        &mut self,
        plan: Self::Plan,
        writer: &mut Writer<'_, Self::Index>,
    ) -> impl Future<Output = Outcome> + Send;
}
