//! RBAC authorization of requests made as a ServiceAccount, from the
//! Role, ClusterRole, RoleBinding and ClusterRoleBinding objects of a YAML
//! stream (a controller's generated manifests), following kube-apiserver's
//! RBAC authorizer (`plugin/pkg/auth/authorizer/rbac/rbac.go`,
//! `VisitRulesFor`, `RuleAllows`, and `pkg/apis/rbac/v1/evaluation_helpers.go`):
//!
//! - a RoleBinding grants its Role's (or ClusterRole's) rules in its own
//!   namespace only; a ClusterRoleBinding grants its ClusterRole's rules
//!   everywhere, cluster-scoped resources included;
//! - a rule allows a request when its `verbs`, `apiGroups` and `resources`
//!   match (`*` matches all; a subresource is `resource/subresource`) and,
//!   if it lists `resourceNames`, the request names one of them: `create`
//!   never does, `list` and `watch` only through a `metadata.name=<name>`
//!   field selector (how the request-info resolver fills in the name,
//!   `staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`);
//! - discovery (`/api`, `/apis/...`) is allowed to everyone, as the
//!   `system:discovery` ClusterRole does.
//!
//! Requests without an identity (the plain [`crate::FakeApi::client`],
//! test seeding) are not checked: they act as a cluster administrator.

use serde_json::Value;

use crate::resource::ResourceInfo;
use crate::router::ApiRequest;

/// The prefix of the bearer tokens [`crate::FakeApi::client_as`] sends:
/// `fake-sa:<namespace>:<name>`.
pub const TOKEN_PREFIX: &str = "fake-sa:";

#[derive(Debug, Clone)]
struct Rule {
    verbs: Vec<String>,
    groups: Vec<String>,
    resources: Vec<String>,
    names: Vec<String>,
}

#[derive(Debug, Clone)]
struct Grant {
    /// `None`: everywhere (a ClusterRoleBinding).
    namespace: Option<String>,
    subjects: Vec<(String, String, Option<String>)>,
    rules: Vec<Rule>,
}

/// The grants of a set of RBAC objects.
#[derive(Debug, Clone, Default)]
pub struct Rbac {
    grants: Vec<Grant>,
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn rules(role: &Value) -> Vec<Rule> {
    role["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| Rule {
            verbs: strings(&r["verbs"]),
            groups: strings(&r["apiGroups"]),
            resources: strings(&r["resources"]),
            names: strings(&r["resourceNames"]),
        })
        .collect()
}

impl Rbac {
    /// Reads the RBAC objects of a YAML stream (other kinds are skipped).
    /// A binding whose role is not in the stream grants nothing.
    pub fn from_yaml(yaml: &str) -> Result<Self, String> {
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(yaml).map_err(|e| format!("invalid YAML: {e}"))?;
        let name = |d: &Value| {
            d["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        let ns = |d: &Value| d["metadata"]["namespace"].as_str().map(str::to_owned);
        let find = |kind: &str, role: &str, namespace: Option<&str>| {
            docs.iter()
                .find(|d| {
                    d["kind"] == kind
                        && name(d) == role
                        && (kind == "ClusterRole" || ns(d).as_deref() == namespace)
                })
                .map(rules)
                .unwrap_or_default()
        };
        let mut grants = Vec::new();
        for d in &docs {
            let kind = d["kind"].as_str().unwrap_or_default();
            if kind != "RoleBinding" && kind != "ClusterRoleBinding" {
                continue;
            }
            let namespace = if kind == "RoleBinding" { ns(d) } else { None };
            let role_kind = d["roleRef"]["kind"].as_str().unwrap_or_default();
            let role_name = d["roleRef"]["name"].as_str().unwrap_or_default();
            let subjects = d["subjects"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| {
                    (
                        s["kind"].as_str().unwrap_or_default().to_owned(),
                        s["name"].as_str().unwrap_or_default().to_owned(),
                        s["namespace"].as_str().map(str::to_owned),
                    )
                })
                .collect();
            grants.push(Grant {
                rules: find(role_kind, role_name, namespace.as_deref()),
                namespace,
                subjects,
            });
        }
        Ok(Self { grants })
    }

    /// Whether `user` (`system:serviceaccount:<ns>:<name>` or a user name)
    /// may make `req` on `info`.
    pub fn allows(&self, user: &str, req: &ApiRequest, info: &ResourceInfo) -> bool {
        let namespace = request_namespace(req, info);
        let name = match req.verb {
            crate::Verb::List | crate::Verb::Watch => req
                .param("fieldSelector")
                .and_then(|f| {
                    f.split(',')
                        .find_map(|t| t.trim().strip_prefix("metadata.name="))
                })
                .map(str::to_owned),
            crate::Verb::Create => None,
            _ => req.name.clone(),
        };
        let resource = match &req.subresource {
            Some(sub) => format!("{}/{sub}", info.id.plural),
            None => info.id.plural.clone(),
        };
        self.grants
            .iter()
            .filter(|g| g.subjects.iter().any(|s| subject_matches(s, user)))
            .filter(|g| match (&g.namespace, namespace) {
                (None, _) => true,
                (Some(granted), Some(asked)) => granted == asked,
                (Some(_), None) => false,
            })
            .flat_map(|g| &g.rules)
            .any(|r| {
                rule_allows(
                    r,
                    req.verb.as_str(),
                    &info.id.group,
                    &resource,
                    name.as_deref(),
                )
            })
    }
}

/// The namespace RBAC sees a request in: the path's for namespaced types,
/// and a Namespace's own name for a request naming it (the request-info
/// resolver sets it so, staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go),
/// so a RoleBinding in `x` can grant `get` on the Namespace `x`.
pub fn request_namespace<'a>(req: &'a ApiRequest, info: &ResourceInfo) -> Option<&'a str> {
    if info.namespaced {
        req.namespace.as_deref()
    } else if info.id.group.is_empty() && info.id.plural == "namespaces" {
        req.name.as_deref()
    } else {
        None
    }
}

fn subject_matches((kind, name, namespace): &(String, String, Option<String>), user: &str) -> bool {
    match kind.as_str() {
        "ServiceAccount" => {
            user == format!(
                "system:serviceaccount:{}:{name}",
                namespace.as_deref().unwrap_or_default()
            )
        }
        "User" => user == name,
        _ => false,
    }
}

fn rule_allows(rule: &Rule, verb: &str, group: &str, resource: &str, name: Option<&str>) -> bool {
    let has = |list: &[String], want: &str| list.iter().any(|v| v == "*" || v == want);
    let resource_ok = rule.resources.iter().any(|r| {
        r == "*"
            || r == resource
            || r.strip_prefix("*/")
                .is_some_and(|sub| resource.split_once('/').is_some_and(|(_, s)| s == sub))
    });
    let name_ok = rule.names.is_empty() || name.is_some_and(|n| rule.names.iter().any(|r| r == n));
    has(&rule.verbs, verb) && has(&rule.groups, group) && resource_ok && name_ok
}

/// The user a bearer token of [`crate::FakeApi::client_as`] stands for.
pub fn user_of_token(token: &str) -> Option<String> {
    let rest = token.strip_prefix(TOKEN_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    Some(format!("system:serviceaccount:{namespace}:{name}"))
}
