//! Fault injection: errors, 409 storms, latency and dropped watches.
//!
//! A [`Fault`] matches requests by verb, resource (plural), namespace and
//! name (each optional) and fires a limited or unlimited number of times.
//! Faults are evaluated in the order they were injected; every matching
//! latency fault adds its delay, and the first matching error fault answers
//! the request instead of the store.

use std::time::Duration;

use crate::error::ApiError;

/// The API verbs, as in RBAC and the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    /// Read one object.
    Get,
    /// Read a collection.
    List,
    /// Stream changes of a collection.
    Watch,
    /// POST a new object.
    Create,
    /// PUT a whole object.
    Update,
    /// PATCH an object.
    Patch,
    /// DELETE one object.
    Delete,
    /// DELETE a collection.
    DeleteCollection,
}

impl Verb {
    /// The lower-case RBAC name (`get`, `deletecollection`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Watch => "watch",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::DeleteCollection => "deletecollection",
        }
    }
}

impl std::fmt::Display for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a fault does when it fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultAction {
    /// Answer with this error instead of serving the request.
    Respond(ApiError),
    /// Wait this long before serving the request.
    Delay(Duration),
    /// For watches: close the stream after this long.
    DropWatchAfter(Duration),
}

/// One injected fault. Build with [`Fault::error`], [`Fault::conflict`],
/// [`Fault::internal_error`], [`Fault::latency`] or [`Fault::drop_watch_after`],
/// then narrow it with the `on_*` methods and limit it with [`Fault::times`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    verb: Option<Verb>,
    resource: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    action: FaultAction,
    remaining: Option<u32>,
}

impl Fault {
    fn with_action(action: FaultAction) -> Self {
        Self {
            verb: None,
            resource: None,
            namespace: None,
            name: None,
            action,
            remaining: None,
        }
    }

    /// Answers matching requests with `code`/`reason`/`message`.
    pub fn error(code: u16, reason: &str, message: &str) -> Self {
        Self::with_action(FaultAction::Respond(ApiError::new(code, reason, message)))
    }

    /// Answers matching requests with `500 InternalError`.
    pub fn internal_error() -> Self {
        Self::error(500, "InternalError", "injected fault: internal error")
    }

    /// Answers matching requests with `409 Conflict` (a "409 storm" when
    /// combined with [`Fault::times`]).
    pub fn conflict() -> Self {
        Self::error(
            409,
            "Conflict",
            "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again (injected fault)",
        )
    }

    /// Delays matching requests by `delay`.
    pub fn latency(delay: Duration) -> Self {
        Self::with_action(FaultAction::Delay(delay))
    }

    /// Closes matching watch streams `after` they start (use
    /// `Duration::ZERO` to close them right after the initial events).
    pub fn drop_watch_after(after: Duration) -> Self {
        Self::with_action(FaultAction::DropWatchAfter(after)).on_verb(Verb::Watch)
    }

    /// Only requests with this verb.
    #[must_use]
    pub fn on_verb(self, verb: Verb) -> Self {
        Self {
            verb: Some(verb),
            ..self
        }
    }

    /// Only requests for this resource (plural name, e.g. `backups`).
    #[must_use]
    pub fn on_resource(self, plural: &str) -> Self {
        Self {
            resource: Some(plural.to_owned()),
            ..self
        }
    }

    /// Only requests in this namespace.
    #[must_use]
    pub fn on_namespace(self, namespace: &str) -> Self {
        Self {
            namespace: Some(namespace.to_owned()),
            ..self
        }
    }

    /// Only requests for the object with this name.
    #[must_use]
    pub fn on_name(self, name: &str) -> Self {
        Self {
            name: Some(name.to_owned()),
            ..self
        }
    }

    /// Fire at most `n` times (default: unlimited).
    #[must_use]
    pub fn times(self, n: u32) -> Self {
        Self {
            remaining: Some(n),
            ..self
        }
    }

    fn matches(&self, req: &FaultTarget<'_>) -> bool {
        self.remaining != Some(0)
            && self.verb.is_none_or(|v| v == req.verb)
            && self.resource.as_deref().is_none_or(|r| r == req.resource)
            && self
                .namespace
                .as_deref()
                .is_none_or(|n| Some(n) == req.namespace)
            && self.name.as_deref().is_none_or(|n| Some(n) == req.name)
    }
}

/// The request attributes faults match on.
#[derive(Debug, Clone, Copy)]
pub struct FaultTarget<'a> {
    /// The verb.
    pub verb: Verb,
    /// Plural resource name.
    pub resource: &'a str,
    /// Namespace, if any.
    pub namespace: Option<&'a str>,
    /// Object name, if any.
    pub name: Option<&'a str>,
}

/// Handle to remove an injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FaultId(u64);

/// What the faults decided for one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultOutcome {
    /// Total injected delay.
    pub delay: Duration,
    /// The injected error, if any.
    pub error: Option<ApiError>,
    /// For watches: close the stream after this long.
    pub drop_watch_after: Option<Duration>,
}

/// The injected faults, in injection order.
#[derive(Debug, Default)]
pub struct Faults {
    next_id: u64,
    faults: Vec<(FaultId, Fault)>,
}

impl Faults {
    /// Adds a fault.
    pub fn inject(&mut self, fault: Fault) -> FaultId {
        self.next_id += 1;
        let id = FaultId(self.next_id);
        self.faults.push((id, fault));
        id
    }

    /// Removes one fault; `false` if it was not there.
    pub fn remove(&mut self, id: FaultId) -> bool {
        let before = self.faults.len();
        self.faults.retain(|(i, _)| *i != id);
        self.faults.len() != before
    }

    /// Removes every fault.
    pub fn clear(&mut self) {
        self.faults.clear();
    }

    /// Evaluates (and counts down) the faults matching `target`.
    pub fn evaluate(&mut self, target: &FaultTarget<'_>) -> FaultOutcome {
        let mut outcome = FaultOutcome::default();
        for (_, fault) in &mut self.faults {
            if !fault.matches(target) {
                continue;
            }
            let fired = match &fault.action {
                FaultAction::Delay(d) => {
                    outcome.delay += *d;
                    true
                }
                FaultAction::Respond(err) if outcome.error.is_none() => {
                    outcome.error = Some(err.clone());
                    true
                }
                FaultAction::DropWatchAfter(d) if outcome.drop_watch_after.is_none() => {
                    outcome.drop_watch_after = Some(*d);
                    true
                }
                _ => false,
            };
            if fired && let Some(n) = fault.remaining.as_mut() {
                *n -= 1;
            }
        }
        self.faults.retain(|(_, f)| f.remaining != Some(0));
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(verb: Verb, resource: &str) -> FaultTarget<'_> {
        FaultTarget {
            verb,
            resource,
            namespace: Some("ns"),
            name: Some("a"),
        }
    }

    #[test]
    fn limited_faults_fire_exactly_n_times_on_matching_requests_only() {
        let mut faults = Faults::default();
        faults.inject(
            Fault::conflict()
                .on_verb(Verb::Patch)
                .on_resource("backups")
                .times(2),
        );
        assert!(
            faults
                .evaluate(&target(Verb::Get, "backups"))
                .error
                .is_none()
        );
        assert!(
            faults
                .evaluate(&target(Verb::Patch, "leases"))
                .error
                .is_none()
        );
        assert_eq!(
            faults
                .evaluate(&target(Verb::Patch, "backups"))
                .error
                .map(|e| e.code),
            Some(409)
        );
        assert_eq!(
            faults
                .evaluate(&target(Verb::Patch, "backups"))
                .error
                .map(|e| e.code),
            Some(409)
        );
        assert!(
            faults
                .evaluate(&target(Verb::Patch, "backups"))
                .error
                .is_none()
        );
    }

    #[test]
    fn latencies_add_up_and_removed_faults_stop_firing() {
        let mut faults = Faults::default();
        let a = faults.inject(Fault::latency(Duration::from_millis(5)));
        faults.inject(Fault::latency(Duration::from_millis(7)).on_name("a"));
        assert_eq!(
            faults.evaluate(&target(Verb::Get, "pods")).delay,
            Duration::from_millis(12)
        );
        assert!(faults.remove(a));
        assert_eq!(
            faults.evaluate(&target(Verb::Get, "pods")).delay,
            Duration::from_millis(7)
        );
    }
}
