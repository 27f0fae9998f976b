//! Request routing: turns a method, path and query into an [`ApiRequest`].

use std::collections::BTreeMap;

use crate::error::ApiError;
use crate::faults::Verb;
use crate::resource::ResourceId;

/// What a request addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A resource request.
    Resource(ApiRequest),
    /// `GET /api`: core API versions.
    CoreVersions,
    /// `GET /version`: the server's version (everyone may read it, as the
    /// `system:public-info-viewer` ClusterRole allows).
    Version,
    /// `GET /apis`: API groups.
    Groups,
    /// `GET /api/v1` or `GET /apis/{group}/{version}`: resources of a group version.
    GroupVersion {
        /// Group (`""` for core).
        group: String,
        /// Version.
        version: String,
    },
}

/// A parsed resource request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiRequest {
    /// The API verb.
    pub verb: Verb,
    /// The resource collection.
    pub resource: ResourceId,
    /// Namespace from the path (`None` for cluster-scoped or all-namespaces requests).
    pub namespace: Option<String>,
    /// Object name from the path.
    pub name: Option<String>,
    /// Subresource (`status`).
    pub subresource: Option<String>,
    /// Decoded query parameters.
    pub query: BTreeMap<String, String>,
    /// The request's `User-Agent` header, if any (set by the service after routing).
    pub user_agent: Option<String>,
}

impl ApiRequest {
    /// A query parameter.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }

    /// A boolean query parameter (`true`/`1`).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.param(key), Some("true" | "1"))
    }

    /// The field manager a write is recorded under: the `fieldManager`
    /// parameter, else the `User-Agent`'s first `/`-separated segment,
    /// printable characters only and at most 128 of them, as kube-apiserver's
    /// `managerOrUserAgent` / `prefixFromUserAgent`
    /// (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go`).
    /// `None` when neither yields a name.
    pub fn manager(&self) -> Option<String> {
        if let Some(m) = self.param("fieldManager").filter(|m| !m.is_empty()) {
            return Some(m.to_owned());
        }
        let agent = self.user_agent.as_deref()?;
        let prefix: String = agent
            .split('/')
            .next()
            .unwrap_or_default()
            .chars()
            .filter(|c| !c.is_control())
            .take(128)
            .collect();
        (!prefix.is_empty()).then_some(prefix)
    }

    /// Whether `dryRun=All` was given.
    pub fn dry_run(&self) -> bool {
        self.param("dryRun").is_some_and(|v| !v.is_empty())
    }
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// Decodes `application/x-www-form-urlencoded` text (`+` is a space).
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a query string into decoded key/value pairs (last one wins).
pub fn parse_query(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

/// Routes `method` `path?query`.
pub fn route(method: &http::Method, path: &str, query: &str) -> Result<Route, ApiError> {
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api"] => return Ok(Route::CoreVersions),
        ["version"] => return Ok(Route::Version),
        ["apis"] => return Ok(Route::Groups),
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(ApiError::not_found("path", path)),
    };
    if rest.is_empty() {
        return Ok(Route::GroupVersion {
            group: group.to_owned(),
            version: version.to_owned(),
        });
    }
    let (namespace, plural, name, subresource) = match rest {
        ["namespaces", ns, "status" | "finalize"] if group.is_empty() => {
            (None, "namespaces", Some(*ns), rest.get(2).copied())
        }
        ["namespaces", ns, plural, tail @ ..] => match tail {
            [] => (Some(*ns), *plural, None, None),
            [name] => (Some(*ns), *plural, Some(*name), None),
            [name, sub] => (Some(*ns), *plural, Some(*name), Some(*sub)),
            _ => return Err(ApiError::not_found("path", path)),
        },
        [plural] => (None, *plural, None, None),
        [plural, name] => (None, *plural, Some(*name), None),
        [plural, name, sub] => (None, *plural, Some(*name), Some(*sub)),
        _ => return Err(ApiError::not_found("path", path)),
    };
    let query = parse_query(query);
    let verb = match (method.as_str(), name.is_some()) {
        ("GET", true) => Verb::Get,
        ("GET", false) if matches!(query.get("watch").map(String::as_str), Some("true" | "1")) => {
            Verb::Watch
        }
        ("GET", false) => Verb::List,
        ("POST", false) => Verb::Create,
        ("PUT", true) => Verb::Update,
        ("PATCH", true) => Verb::Patch,
        ("DELETE", true) => Verb::Delete,
        ("DELETE", false) => Verb::DeleteCollection,
        (m, _) => {
            return Err(ApiError::method_not_allowed(format!(
                "{m} is not supported on {path}"
            )));
        }
    };
    Ok(Route::Resource(ApiRequest {
        verb,
        resource: ResourceId::new(group, version, plural),
        namespace: namespace.map(str::to_owned),
        name: name.map(str::to_owned),
        subresource: subresource.map(str::to_owned),
        query,
        user_agent: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn res(method: Method, path: &str, query: &str) -> ApiRequest {
        match route(&method, path, query).unwrap() {
            Route::Resource(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn paths_map_to_verbs_scopes_and_subresources() {
        let r = res(
            Method::GET,
            "/api/v1/namespaces/ns/configmaps",
            "watch=true&labelSelector=a%3Db%2Cc+in+%28x%29",
        );
        assert_eq!(r.verb, Verb::Watch);
        assert_eq!(r.namespace.as_deref(), Some("ns"));
        assert_eq!(r.param("labelSelector"), Some("a=b,c in (x)"));
        let r = res(
            Method::PATCH,
            "/apis/velero.io/v1/namespaces/velero/backups/b1/status",
            "",
        );
        assert_eq!(
            (
                r.verb,
                r.resource.group.as_str(),
                r.name.as_deref(),
                r.subresource.as_deref()
            ),
            (Verb::Patch, "velero.io", Some("b1"), Some("status"))
        );
        let r = res(Method::GET, "/api/v1/namespaces/kube-system", "");
        assert_eq!(
            (
                r.verb,
                r.resource.plural.as_str(),
                r.namespace,
                r.name.as_deref()
            ),
            (Verb::Get, "namespaces", None, Some("kube-system"))
        );
        let r = res(Method::PUT, "/api/v1/namespaces/x/status", "");
        assert_eq!(
            (
                r.resource.plural.as_str(),
                r.name.as_deref(),
                r.subresource.as_deref()
            ),
            ("namespaces", Some("x"), Some("status"))
        );
        let r = res(Method::GET, "/api/v1/pods", "");
        assert_eq!((r.verb, r.namespace), (Verb::List, None));
        assert_eq!(
            res(Method::DELETE, "/api/v1/nodes", "").verb,
            Verb::DeleteCollection
        );
        assert!(route(&Method::GET, "/healthz", "").is_err());
        assert_eq!(route(&Method::GET, "/apis", "").unwrap(), Route::Groups);
    }

    #[test]
    fn percent_decoding_handles_truncated_escapes() {
        assert_eq!(percent_decode("a%3d%2"), "a=%2");
        assert_eq!(percent_decode("%"), "%");
    }
}
