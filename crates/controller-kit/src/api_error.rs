//! What an API error means to a controller: the one classification of
//! `kube::Error`s every controller uses to decide between re-reading,
//! forgetting and reporting.

use kube::core::Status;
use kube::core::response::reason;

/// The class of a failed API call, following apimachinery's
/// `k8s.io/apimachinery/pkg/api/errors` (`IsConflict`, `IsAlreadyExists`,
/// `IsNotFound`, `IsGone`/`IsResourceExpired`): the `Status` reason decides,
/// and the HTTP code only when the reason is empty or not one apimachinery
/// knows. So a `409` with reason `AlreadyExists` is not a conflict, and a
/// `404` whose reason names something else is not "not found".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ApiErrorKind {
    /// `409 Conflict`: a `resourceVersion` precondition failed (the object
    /// changed since it was read) or an apply hit another manager's field.
    /// Re-read and decide again from fresh state.
    Conflict,
    /// `409 AlreadyExists`: a create lost to another writer. Re-read it.
    AlreadyExists,
    /// `404 NotFound`: the object (or its kind) is gone.
    NotFound,
    /// `410 Gone` or `Expired`: a watch or list from a compacted
    /// `resourceVersion`. Relist.
    Gone,
    /// `403 Forbidden`: RBAC does not allow the call (fix the Role, not
    /// the request).
    Forbidden,
    /// Any other answer from the API server (`422`, `429`, `5xx`, ...).
    Other,
    /// No API answer at all: transport, TLS, authentication setup or
    /// decoding failed.
    NoAnswer,
}

impl ApiErrorKind {
    /// Classifies a kube error.
    pub fn of(error: &kube::Error) -> Self {
        match error {
            kube::Error::Api(status) => Self::of_status(status),
            _ => Self::NoAnswer,
        }
    }

    /// Classifies an API server's `Status` answer.
    pub fn of_status(status: &Status) -> Self {
        // apimachinery's `IsConflict` and friends: the reason decides, the
        // code only when the reason is not one apimachinery knows. (kube-core
        // 5's `Status::is_conflict` tests whether the *expected* reason is
        // known, so its code fallback never applies; hence our own.)
        let is = |expected: &str, code: u16| {
            status.reason == expected || (!reason::is_known(&status.reason) && status.code == code)
        };
        if is(reason::CONFLICT, 409) {
            Self::Conflict
        } else if status.reason == reason::ALREADY_EXISTS {
            Self::AlreadyExists
        } else if is(reason::NOT_FOUND, 404) {
            Self::NotFound
        } else if is(reason::FORBIDDEN, 403) {
            Self::Forbidden
        } else if is(reason::GONE, 410) || status.reason == reason::EXPIRED {
            Self::Gone
        } else {
            Self::Other
        }
    }

    /// Classifies a watcher's error (a failed list or watch, or an error
    /// event in the stream).
    pub fn of_watcher(error: &kube::runtime::watcher::Error) -> Self {
        use kube::runtime::watcher::Error as W;
        match error {
            W::InitialListFailed(error) | W::WatchStartFailed(error) | W::WatchFailed(error) => {
                Self::of(error)
            }
            W::WatchError(status) => Self::of_status(status),
            _ => Self::NoAnswer,
        }
    }

    /// A write that lost a race with another writer ([`Self::Conflict`] or
    /// [`Self::AlreadyExists`]): expected when several actors write, and
    /// answered by deciding again from a fresh read rather than by
    /// reporting an error.
    pub fn is_lost_race(self) -> bool {
        matches!(self, Self::Conflict | Self::AlreadyExists)
    }

    /// A bounded, stable name (for a metric label or a log field).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Conflict => "conflict",
            Self::AlreadyExists => "already_exists",
            Self::NotFound => "not_found",
            Self::Gone => "gone",
            Self::Forbidden => "forbidden",
            Self::Other => "api",
            Self::NoAnswer => "no_answer",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Box::new(Status {
            code,
            reason: reason.to_owned(),
            ..Status::default()
        }))
    }

    /// apimachinery's table: the reason decides; the code only when the
    /// reason is empty or unknown.
    #[test]
    fn reason_first_then_code_as_apimachinery() {
        let cases = [
            (409, "Conflict", ApiErrorKind::Conflict),
            (409, "", ApiErrorKind::Conflict),
            (409, "SomethingNew", ApiErrorKind::Conflict),
            (409, "AlreadyExists", ApiErrorKind::AlreadyExists),
            (404, "NotFound", ApiErrorKind::NotFound),
            (404, "", ApiErrorKind::NotFound),
            (404, "Forbidden", ApiErrorKind::Forbidden),
            (429, "TooManyRequests", ApiErrorKind::Other),
            (409, "Invalid", ApiErrorKind::Other),
            (500, "NotFound", ApiErrorKind::NotFound),
            (410, "Gone", ApiErrorKind::Gone),
            (410, "Expired", ApiErrorKind::Gone),
            (410, "", ApiErrorKind::Gone),
            (403, "Forbidden", ApiErrorKind::Forbidden),
            (403, "", ApiErrorKind::Forbidden),
            (422, "Invalid", ApiErrorKind::Other),
            (500, "InternalError", ApiErrorKind::Other),
        ];
        for (code, reason, want) in cases {
            assert_eq!(
                ApiErrorKind::of(&api(code, reason)),
                want,
                "{code} {reason}"
            );
        }
    }

    #[test]
    fn only_conflicts_and_already_exists_are_lost_races() {
        assert!(ApiErrorKind::Conflict.is_lost_race());
        assert!(ApiErrorKind::AlreadyExists.is_lost_race());
        assert!(!ApiErrorKind::NotFound.is_lost_race());
        assert!(!ApiErrorKind::Other.is_lost_race());
    }

    #[test]
    fn errors_without_an_api_answer_have_no_status() {
        let error = kube::Error::LinesCodecMaxLineLengthExceeded;
        assert_eq!(ApiErrorKind::of(&error), ApiErrorKind::NoAnswer);
    }
}
