//! Kubernetes-style `Status` error bodies and the crate's own error type.

use serde_json::{Value, json};

/// An error the stand-in answers with, rendered as a Kubernetes `Status` body.
///
/// The `reason` strings are the ones the real API server uses
/// (`NotFound`, `AlreadyExists`, `Conflict`, `Gone`, `BadRequest`, ...), so
/// clients such as kube-runtime and kube-lease-manager, which match on
/// `code`/`reason`, behave as they would against a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status code (`404`, `409`, `410`, ...).
    pub code: u16,
    /// Machine-readable reason (`NotFound`, `Conflict`, ...).
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

impl ApiError {
    /// Builds an error from its parts.
    pub fn new(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// `404 NotFound` for `resource` `name`.
    pub fn not_found(resource: &str, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{resource} \"{name}\" not found"))
    }

    /// `409 AlreadyExists` for `resource` `name`.
    pub fn already_exists(resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{resource} \"{name}\" already exists"),
        )
    }

    /// `409 Conflict` (optimistic concurrency failure) for `resource` `name`.
    pub fn conflict(resource: &str, name: &str, detail: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {resource} \"{name}\": {detail}"),
        )
    }

    /// `410 Gone`: the requested resourceVersion was compacted away.
    pub fn gone(resource_version: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {resource_version}"),
        )
    }

    /// `400 BadRequest` with `message`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// `422 Invalid` with `message`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(422, "Invalid", message)
    }

    /// `405 MethodNotAllowed` with `message`.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// `500 InternalError` with `message`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// The `Status` object the real API server sends for this error.
    /// An empty `reason` is left out, as kube-apiserver leaves it out of
    /// errors it has no reason for.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if self.reason.is_empty()
            && let Some(fields) = status.as_object_mut()
        {
            fields.remove("reason");
        }
        status
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// Errors of the test helpers (seeding and reading objects directly).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FakeApiError {
    /// The resource type is not in the stand-in's registry.
    #[error(
        "resource {group}/{version} {plural} is not registered; call FakeApi::register(ResourceInfo::...) first"
    )]
    UnknownResource {
        /// API group (`""` for core).
        group: String,
        /// API version.
        version: String,
        /// Plural resource name.
        plural: String,
    },
    /// The object could not be converted to or from JSON.
    #[error("object does not round-trip through JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A CustomResourceDefinition could not be read.
    #[error("cannot install CustomResourceDefinitions: {0}")]
    Crd(String),
    /// The stand-in refused the write (the same answer a client would get).
    #[error("the API stand-in refused the write: {0}")]
    Api(ApiError),
}
