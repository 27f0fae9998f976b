//! kube-apiserver's audit log (JSON lines, `Metadata` level, written by
//! the policy of [`kube_testbed::deploy::audit_args`]): the requests of
//! one user, read as the log grows.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::Deserialize;

/// One request of the audit log (its `ResponseComplete` stage).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The authorizer's verb: `get`, `list`, `watch`, `create`, `patch`,
    /// `update`, `delete`, ...
    pub verb: String,
    /// The resource with `/subresource` when there is one (`backups`,
    /// `machines/status`); the path for non-resource requests.
    pub resource: String,
    /// The namespace, empty for cluster-scoped requests.
    pub namespace: String,
    /// The object's name, empty for collections.
    pub name: String,
    /// The request's path and query.
    pub uri: String,
    /// The HTTP status code of the answer.
    pub code: u16,
    /// When the server received the request.
    pub received: Timestamp,
    /// When the server answered it (`stageTimestamp`).
    pub answered: Timestamp,
}

impl Request {
    /// Whether the request changes an object.
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }

    /// For a `list`, what it lists: the resource, the namespace and the
    /// label and field selectors (a watch's list has the same key each
    /// time). `None` for a later page of a list (`continue=`), which is
    /// part of the list that asked for the first.
    pub fn list_key(&self) -> Option<String> {
        if self.verb != "list" {
            return None;
        }
        let query = self.uri.split_once('?').map_or("", |(_, query)| query);
        let mut selectors = Vec::new();
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "continue" if !value.is_empty() => return None,
                "labelSelector" | "fieldSelector" => selectors.push(format!("{key}={value}")),
                _ => {}
            }
        }
        let mut key = self.resource.clone();
        if !self.namespace.is_empty() {
            key = format!("{key} in {}", self.namespace);
        }
        if !selectors.is_empty() {
            key = format!("{key} ({})", selectors.join(", "));
        }
        Some(key)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    #[serde(default)]
    stage: String,
    #[serde(default)]
    verb: String,
    #[serde(default)]
    request_u_r_i: String,
    #[serde(default)]
    user: User,
    #[serde(default)]
    object_ref: Option<ObjectRef>,
    #[serde(default)]
    response_status: Option<Status>,
    #[serde(default)]
    request_received_timestamp: String,
    #[serde(default)]
    stage_timestamp: String,
}

#[derive(Deserialize, Default)]
struct User {
    #[serde(default)]
    username: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ObjectRef {
    #[serde(default)]
    resource: String,
    #[serde(default)]
    subresource: Option<String>,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    code: u16,
}

/// Parses one line of the log; `None` for another user's request, an
/// earlier stage, or a line that is not an audit event.
fn parse_line(line: &str, user: &str) -> Option<Request> {
    // Cheap filter first: most lines are other users'.
    if !line.contains(user) {
        return None;
    }
    let event: Event = serde_json::from_str(line).ok()?;
    if event.user.username != user || event.stage != "ResponseComplete" {
        return None;
    }
    let (resource, namespace, name) = match event.object_ref {
        Some(object) => (
            match object.subresource {
                Some(sub) => format!("{}/{sub}", object.resource),
                None => object.resource,
            },
            object.namespace,
            object.name,
        ),
        None => (
            event
                .request_u_r_i
                .split('?')
                .next()
                .unwrap_or_default()
                .to_owned(),
            String::new(),
            String::new(),
        ),
    };
    Some(Request {
        verb: event.verb,
        resource,
        namespace,
        name,
        uri: event.request_u_r_i,
        code: event.response_status.map_or(0, |status| status.code),
        received: event.request_received_timestamp.parse().ok()?,
        answered: event.stage_timestamp.parse().ok()?,
    })
}

/// Reads the requests of one user from an audit log as it grows.
#[derive(Debug)]
pub struct Reader {
    path: PathBuf,
    user: String,
    offset: u64,
    requests: Vec<Request>,
}

impl Reader {
    /// A reader of `user`'s requests in the log at `path`, from its start.
    pub fn new(path: &Path, user: &str) -> Reader {
        Reader {
            path: path.to_owned(),
            user: user.to_owned(),
            offset: 0,
            requests: Vec::new(),
        }
    }

    /// Reads the complete lines written since the last call; returns
    /// every request of the user read so far, in the log's order.
    pub fn update(&mut self) -> std::io::Result<&[Request]> {
        let mut file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(&self.requests),
            Err(e) => return Err(e),
        };
        file.seek(SeekFrom::Start(self.offset))?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut line = String::new();
        loop {
            line.clear();
            let read = reader.read_line(&mut line)?;
            if read == 0 || !line.ends_with('\n') {
                // The end, or a line still being written.
                break;
            }
            self.offset += read as u64;
            if let Some(request) = parse_line(&line, &self.user) {
                self.requests.push(request);
            }
        }
        Ok(&self.requests)
    }

    /// The requests read so far.
    pub fn requests(&self) -> &[Request] {
        &self.requests
    }
}

/// The requests received in `[from, to]`.
pub fn between(requests: &[Request], from: Timestamp, to: Timestamp) -> Vec<&Request> {
    requests
        .iter()
        .filter(|r| r.received >= from && r.received <= to)
        .collect()
}

/// Counts by `verb resource` (`patch backups`, `create events`).
pub fn by_verb(requests: &[&Request]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for request in requests {
        *counts
            .entry(format!("{} {}", request.verb, request.resource))
            .or_insert(0) += 1;
    }
    counts
}

/// Lists after the first of each key ([`Request::list_key`]) among
/// `requests` (one process's): `key → how many more`.
pub fn relists(requests: &[&Request]) -> BTreeMap<String, usize> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for key in requests.iter().filter_map(|r| r.list_key()) {
        *seen.entry(key).or_insert(0) += 1;
    }
    seen.into_iter()
        .filter(|(_, count)| *count > 1)
        .map(|(key, count)| (key, count - 1))
        .collect()
}

/// The first write by the user to `resource`/`name` received at or after
/// `after`.
pub fn first_write_after<'a>(
    requests: &'a [Request],
    resource: &str,
    name: &str,
    after: Timestamp,
) -> Option<&'a Request> {
    requests.iter().find(|r| {
        r.is_write()
            && r.code < 400
            && r.resource == resource
            && r.name == name
            && r.received >= after
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = "system:serviceaccount:velero:backup-queue-controller";

    fn line(verb: &str, uri: &str, name: &str) -> String {
        format!(
            r#"{{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"{uri}","verb":"{verb}","user":{{"username":"{USER}"}},"objectRef":{{"resource":"backups","namespace":"velero","name":"{name}","apiGroup":"velero.io","apiVersion":"v1"}},"responseStatus":{{"metadata":{{}},"code":200}},"requestReceivedTimestamp":"2026-11-27T18:00:00.100000Z","stageTimestamp":"2026-11-27T18:00:00.150000Z"}}"#
        )
    }

    #[test]
    fn a_line_becomes_a_request_of_its_user_only() {
        let request = parse_line(
            &line(
                "patch",
                "/apis/velero.io/v1/namespaces/velero/backups/b1",
                "b1",
            ),
            USER,
        )
        .unwrap();
        assert_eq!(request.verb, "patch");
        assert_eq!(request.resource, "backups");
        assert_eq!(request.name, "b1");
        assert_eq!(request.code, 200);
        assert!(request.is_write());
        assert_eq!(
            (request.answered - request.received)
                .total(jiff::Unit::Millisecond)
                .unwrap(),
            50.0
        );
        let other = line("get", "/x", "b1").replace(USER, "someone-else");
        assert_eq!(parse_line(&other, USER), None);
    }

    #[test]
    fn later_pages_belong_to_their_list_and_a_second_list_is_a_relist() {
        let uri = "/apis/velero.io/v1/namespaces/velero/backups?limit=500";
        let first = parse_line(&line("list", uri, ""), USER).unwrap();
        let page = parse_line(&line("list", &format!("{uri}&continue=abc"), ""), USER).unwrap();
        let selected = parse_line(
            &line(
                "list",
                &format!("{uri}&fieldSelector=metadata.name%3Dx"),
                "",
            ),
            USER,
        )
        .unwrap();
        assert_eq!(first.list_key().unwrap(), "backups in velero");
        assert_eq!(page.list_key(), None);
        assert_ne!(selected.list_key(), first.list_key());
        let again = first.clone();
        let all = [&first, &page, &selected, &again];
        assert_eq!(
            relists(&all),
            BTreeMap::from([("backups in velero".to_owned(), 1)])
        );
    }
}
