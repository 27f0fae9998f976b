//! How a failed Kubernetes API call is classified, once for every
//! controller: a write refused with `409` (conflict, or already exists on a
//! create) means the object changed since it was read; `404` means it is
//! gone; `403` is a permission problem (usually RBAC) that retrying does not
//! fix; everything else is transient or unexpected.
//!
//! The classification uses the HTTP status code, as apimachinery's
//! `IsConflict`/`IsNotFound` do for a status whose reason they do not know;
//! a `409 AlreadyExists` (create of an existing object) is a conflict too.

use kube::runtime::watcher;

use crate::metrics::ErrorKind;

/// The class of a failed API call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ApiErrorClass {
    /// `409`: a resourceVersion precondition failed, or the object exists.
    Conflict,
    /// `404`: the object (or its namespace or type) does not exist.
    NotFound,
    /// `403`: refused by authorization.
    Forbidden,
    /// Anything else: server errors, timeouts, connection failures.
    Other,
}

impl ApiErrorClass {
    /// Classifies a kube client error.
    pub fn of(error: &kube::Error) -> Self {
        match error {
            kube::Error::Api(status) => Self::of_code(status.code),
            _ => Self::Other,
        }
    }

    /// Classifies a watcher error (list or watch refused, or an error event
    /// in the stream).
    pub fn of_watch(error: &watcher::Error) -> Self {
        match error {
            watcher::Error::InitialListFailed(e)
            | watcher::Error::WatchStartFailed(e)
            | watcher::Error::WatchFailed(e) => Self::of(e),
            watcher::Error::WatchError(status) => Self::of_code(status.code),
            _ => Self::Other,
        }
    }

    fn of_code(code: u16) -> Self {
        match code {
            409 => Self::Conflict,
            404 => Self::NotFound,
            403 => Self::Forbidden,
            _ => Self::Other,
        }
    }
}

/// Whether the API server answered `409`.
pub fn is_conflict(error: &kube::Error) -> bool {
    ApiErrorClass::of(error) == ApiErrorClass::Conflict
}

/// Whether the API server answered `404`.
pub fn is_not_found(error: &kube::Error) -> bool {
    ApiErrorClass::of(error) == ApiErrorClass::NotFound
}

impl ErrorKind for ApiErrorClass {
    fn kind(&self) -> &'static str {
        match self {
            Self::Conflict => "conflict",
            Self::NotFound => "not_found",
            Self::Forbidden => "forbidden",
            Self::Other => "kube_api",
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::*;

    fn api(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Status::failure("x", reason).with_code(code).boxed())
    }

    #[test]
    fn classes_follow_the_status_code() {
        assert_eq!(
            ApiErrorClass::of(&api(409, "Conflict")),
            ApiErrorClass::Conflict
        );
        assert_eq!(
            ApiErrorClass::of(&api(409, "AlreadyExists")),
            ApiErrorClass::Conflict
        );
        assert_eq!(
            ApiErrorClass::of(&api(404, "NotFound")),
            ApiErrorClass::NotFound
        );
        assert_eq!(
            ApiErrorClass::of(&api(403, "Forbidden")),
            ApiErrorClass::Forbidden
        );
        assert_eq!(
            ApiErrorClass::of(&api(500, "InternalError")),
            ApiErrorClass::Other
        );
        assert!(is_conflict(&api(409, "")) && !is_conflict(&api(404, "")));
        assert!(is_not_found(&api(404, "")) && !is_not_found(&api(409, "")));
        let watch = watcher::Error::InitialListFailed(api(403, "Forbidden"));
        assert_eq!(ApiErrorClass::of_watch(&watch), ApiErrorClass::Forbidden);
        assert_eq!(ApiErrorClass::Other.kind(), "kube_api");
    }
}
