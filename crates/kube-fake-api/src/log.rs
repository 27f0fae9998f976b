//! The request log tests assert on.

use crate::faults::Verb;
use crate::resource::ResourceId;

/// One request as the stand-in saw it, with the status it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// HTTP method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// Raw query string (may be empty).
    pub query: String,
    /// The API verb, when the path named a resource.
    pub verb: Option<Verb>,
    /// The resource, when the path named one.
    pub resource: Option<ResourceId>,
    /// Namespace from the path.
    pub namespace: Option<String>,
    /// Object name from the path.
    pub name: Option<String>,
    /// Subresource (`status`) from the path.
    pub subresource: Option<String>,
    /// `Content-Type` of the request, if any.
    pub content_type: Option<String>,
    /// The field manager the request acts as: the `fieldManager` query
    /// parameter, else the `User-Agent` prefix (see `ApiRequest::manager`).
    pub field_manager: Option<String>,
    /// Whether the request was a dry run (`dryRun=All`).
    pub dry_run: bool,
    /// The HTTP status answered (`200` for watches, whose errors are in-stream).
    pub status: u16,
    /// Whether an injected fault answered the request.
    pub injected: bool,
}

impl RequestRecord {
    /// Whether this request was `verb` on the resource with plural name `plural`.
    pub fn is(&self, verb: Verb, plural: &str) -> bool {
        self.verb == Some(verb) && self.resource.as_ref().is_some_and(|r| r.plural == plural)
    }

    /// Whether this request changed (or tried to change) state.
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb,
            Some(Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection)
        )
    }
}
