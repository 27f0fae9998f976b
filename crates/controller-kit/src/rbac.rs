//! Least-privilege RBAC declared once per binary, and the manifests
//! generated from it: ServiceAccount, Role or ClusterRole with its binding,
//! the leader-election Role, and the workload ([`Workload::Deployment`] or
//! one pod per node as a [`Workload::DaemonSet`]).
//!
//! ```
//! use controller_kit::rbac::{ControllerManifest, RbacVerb::*, Rule, Scope};
//! const RULES: &[Rule] = &[
//!     Rule::new("velero.io", &["backups"], &[Get, List, Watch, Patch]),
//!     Rule::new("", &["namespaces"], &[Get, List, Watch]),
//! ];
//! let m = ControllerManifest::new("backup-queue-controller", "velero", "example/bqc:1", RULES);
//! assert!(m.role_rules().len() >= 2);
//! ```
//!
//! Output is deterministic: rules with the same API group, verbs and
//! resource names are merged, resources, resource names and rules are
//! sorted, verbs follow the order of [`RbacVerb`].
//!
//! A rule can be restricted to objects by name with [`Rule::named`]
//! (`resourceNames`). Kubernetes RBAC limits what that achieves:
//! - `create` (and `deletecollection`) can never be restricted by name: the
//!   name of a new object is not known when the request is authorized, so a
//!   rule with `create` and `resourceNames` never allows a create. Declare
//!   `create` in a separate, unnamed rule.
//! - `list` and `watch` restricted by name are allowed only for requests
//!   carrying a `metadata.name=<name>` field selector (single-object
//!   watches, as `kube::runtime::watcher` does with `Config::fields`); a
//!   plain namespace-wide list or watch needs an unnamed rule.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategy, Deployment, DeploymentSpec,
    DeploymentStrategy,
};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction,
    ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec, Probe, ResourceRequirements,
    SeccompProfile, SecurityContext, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::error::Error;

/// An RBAC verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RbacVerb {
    /// `get`
    Get,
    /// `list`
    List,
    /// `watch`
    Watch,
    /// `create`
    Create,
    /// `update`
    Update,
    /// `patch`
    Patch,
    /// `delete`
    Delete,
    /// `deletecollection`
    DeleteCollection,
}

impl RbacVerb {
    /// The verb as written in RBAC rules.
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

/// One declared permission: verbs on resources of an API group (`""` = core),
/// optionally only on objects with given names (see the module docs for
/// what `resourceNames` cannot restrict). Subresources are written
/// `backups/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// API group (`""` for core).
    pub api_group: &'static str,
    /// Resources (plural names, optionally `/subresource`).
    pub resources: &'static [&'static str],
    /// Allowed verbs.
    pub verbs: &'static [RbacVerb],
    /// Object names the rule is restricted to (`resourceNames`); empty: all
    /// objects.
    pub resource_names: &'static [&'static str],
}

impl Rule {
    /// Declares a rule (usable in `const` lists).
    pub const fn new(
        api_group: &'static str,
        resources: &'static [&'static str],
        verbs: &'static [RbacVerb],
    ) -> Self {
        Self {
            api_group,
            resources,
            verbs,
            resource_names: &[],
        }
    }

    /// Restricts the rule to the objects with these names (`resourceNames`).
    /// Do not combine with `create` or `deletecollection`, which Kubernetes
    /// never authorizes by name; `list`/`watch` then need a `metadata.name`
    /// field selector (see the module docs).
    pub const fn named(self, names: &'static [&'static str]) -> Self {
        Self {
            resource_names: names,
            ..self
        }
    }
}

/// Events published by `events::Recorder` (`events.k8s.io`: create, patch).
pub const EVENTS_RULE: Rule = Rule::new(
    "events.k8s.io",
    &["events"],
    &[RbacVerb::Create, RbacVerb::Patch],
);

/// The Lease verbs kube-lease-manager needs (get, create, patch).
pub const LEASE_RULE: Rule = Rule::new(
    "coordination.k8s.io",
    &["leases"],
    &[RbacVerb::Get, RbacVerb::Create, RbacVerb::Patch],
);

/// Where the controller's permissions apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Only the controller's own namespace: Role + RoleBinding.
    Namespaced,
    /// The whole cluster: ClusterRole + ClusterRoleBinding.
    Cluster,
}

/// The kind of workload running the controller's pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// A Deployment with [`ControllerManifest::replicas`] replicas.
    Deployment,
    /// A DaemonSet: one pod per node (`replicas` is ignored). The container
    /// gets `NODE_NAME` from the downward API (`spec.nodeName`).
    DaemonSet,
}

/// A further role bound to the controller's ServiceAccount besides its
/// main one, named `<controller>-<suffix>`: cluster-scoped kinds a
/// namespaced controller still needs (a ClusterRole), or objects in the
/// controller's own namespace a cluster-wide one needs (a Role). Its rules
/// are taken as declared (no Events added).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtraRole {
    /// Appended to the controller's name, after a dash.
    pub suffix: &'static str,
    /// [`Scope::Cluster`]: a ClusterRole and ClusterRoleBinding;
    /// [`Scope::Namespaced`]: a Role and RoleBinding in the controller's
    /// namespace.
    pub scope: Scope,
    /// The role's rules.
    pub rules: &'static [Rule],
}

/// Everything needed to generate one controller's manifests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerManifest {
    /// Controller name: ServiceAccount, roles, Deployment, `app.kubernetes.io/name` label.
    pub name: String,
    /// Namespace the controller runs in (and, for [`Scope::Namespaced`], acts in).
    pub namespace: String,
    /// Container image.
    pub image: String,
    /// Extra container arguments.
    pub args: Vec<String>,
    /// Permission scope.
    pub scope: Scope,
    /// Declared rules (without Events and Leases, which are added).
    pub rules: Vec<Rule>,
    /// Whether replicas elect a leader (adds the Lease Role and `--leader-elect`).
    pub leader_election: bool,
    /// Whether the controller publishes Events with this identity (adds
    /// [`EVENTS_RULE`]); off for a deployment that publishes its Events
    /// through other credentials.
    pub events: bool,
    /// Further roles, each with its binding.
    pub extra_roles: Vec<ExtraRole>,
    /// Deployment or DaemonSet.
    pub workload: Workload,
    /// Number of replicas (Deployment only).
    pub replicas: i32,
    /// Port of `/metrics`, `/healthz`, `/readyz`.
    pub metrics_port: u16,
}

fn labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), name.to_owned()),
        (
            "app.kubernetes.io/component".to_owned(),
            "controller".to_owned(),
        ),
    ])
}

fn meta(name: &str, namespace: Option<&str>, app: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: Some(labels(app)),
        ..ObjectMeta::default()
    }
}

/// One serialised manifest.
type Yaml = Result<String, serde_saphyr::ser_error::Error>;

/// Rules merged by (API group, verbs, resource names).
type MergeKey<'a> = (&'a str, BTreeSet<RbacVerb>, BTreeSet<&'a str>);

/// Merges and sorts rules (see the module docs). Rules are merged only when
/// API group, verbs and resource names are all equal, so merging never
/// widens a name restriction.
pub fn normalize(rules: &[Rule]) -> Vec<PolicyRule> {
    let mut merged: BTreeMap<MergeKey<'_>, BTreeSet<&str>> = BTreeMap::new();
    for r in rules {
        let verbs: BTreeSet<RbacVerb> = r.verbs.iter().copied().collect();
        let names: BTreeSet<&str> = r.resource_names.iter().copied().collect();
        merged
            .entry((r.api_group, verbs, names))
            .or_default()
            .extend(r.resources.iter().copied());
    }
    let mut out: Vec<PolicyRule> = merged
        .into_iter()
        .map(|((group, verbs, names), resources)| PolicyRule {
            api_groups: Some(vec![group.to_owned()]),
            resources: Some(resources.into_iter().map(str::to_owned).collect()),
            verbs: verbs.into_iter().map(|v| v.as_str().to_owned()).collect(),
            resource_names: (!names.is_empty())
                .then(|| names.into_iter().map(str::to_owned).collect()),
            ..PolicyRule::default()
        })
        .collect();
    // Unnamed rules (`None`) sort before named ones with the same group,
    // resources and verbs.
    out.sort_by(|a, b| {
        (&a.api_groups, &a.resources, &a.verbs, &a.resource_names).cmp(&(
            &b.api_groups,
            &b.resources,
            &b.verbs,
            &b.resource_names,
        ))
    });
    out
}

impl ControllerManifest {
    /// Defaults: cluster scope, leader election with a 2-replica Deployment,
    /// port 8080, no extra args.
    pub fn new(name: &str, namespace: &str, image: &str, rules: &[Rule]) -> Self {
        Self {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            image: image.to_owned(),
            args: Vec::new(),
            scope: Scope::Cluster,
            rules: rules.to_vec(),
            leader_election: true,
            events: true,
            extra_roles: Vec::new(),
            workload: Workload::Deployment,
            replicas: 2,
            metrics_port: 8080,
        }
    }

    /// The controller's role rules: the declared ones plus Events (when
    /// [`ControllerManifest::events`]).
    pub fn role_rules(&self) -> Vec<PolicyRule> {
        let mut rules = self.rules.clone();
        if self.events {
            rules.push(EVENTS_RULE);
        }
        normalize(&rules)
    }

    fn subject(&self) -> Subject {
        Subject {
            kind: "ServiceAccount".into(),
            name: self.name.clone(),
            namespace: Some(self.namespace.clone()),
            ..Subject::default()
        }
    }

    fn role_ref(&self, kind: &str, name: &str) -> RoleRef {
        RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: kind.into(),
            name: name.into(),
        }
    }

    fn pod_template(&self) -> PodTemplateSpec {
        let mut args = self.args.clone();
        if self.leader_election {
            args.push("--leader-elect".into());
        }
        args.push(format!("--metrics-addr=0.0.0.0:{}", self.metrics_port));
        let field_env = |name: &str, path: &str| EnvVar {
            name: name.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: path.into(),
                    ..ObjectFieldSelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        };
        let mut env = vec![
            field_env("POD_NAME", "metadata.name"),
            field_env("POD_NAMESPACE", "metadata.namespace"),
        ];
        if self.workload == Workload::DaemonSet {
            env.push(field_env("NODE_NAME", "spec.nodeName"));
        }
        let probe = |path: &str| Probe {
            http_get: Some(HTTPGetAction {
                path: Some(path.into()),
                port: IntOrString::String("http-metrics".into()),
                ..HTTPGetAction::default()
            }),
            period_seconds: Some(10),
            ..Probe::default()
        };
        let container = Container {
            name: "controller".into(),
            image: Some(self.image.clone()),
            args: Some(args),
            env: Some(env),
            ports: Some(vec![ContainerPort {
                name: Some("http-metrics".into()),
                container_port: i32::from(self.metrics_port),
                protocol: Some("TCP".into()),
                ..ContainerPort::default()
            }]),
            liveness_probe: Some(probe("/healthz")),
            readiness_probe: Some(probe("/readyz")),
            resources: Some(ResourceRequirements {
                requests: Some(BTreeMap::from([
                    ("cpu".into(), Quantity("50m".into())),
                    ("memory".into(), Quantity("64Mi".into())),
                ])),
                limits: Some(BTreeMap::from([(
                    "memory".into(),
                    Quantity("256Mi".into()),
                )])),
                ..ResourceRequirements::default()
            }),
            security_context: Some(SecurityContext {
                allow_privilege_escalation: Some(false),
                read_only_root_filesystem: Some(true),
                run_as_non_root: Some(true),
                capabilities: Some(Capabilities {
                    drop: Some(vec!["ALL".into()]),
                    ..Capabilities::default()
                }),
                ..SecurityContext::default()
            }),
            ..Container::default()
        };
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(labels(&self.name)),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                service_account_name: Some(self.name.clone()),
                security_context: Some(PodSecurityContext {
                    run_as_non_root: Some(true),
                    run_as_user: Some(65532),
                    run_as_group: Some(65532),
                    seccomp_profile: Some(SeccompProfile {
                        type_: "RuntimeDefault".into(),
                        ..SeccompProfile::default()
                    }),
                    ..PodSecurityContext::default()
                }),
                containers: vec![container],
                ..PodSpec::default()
            }),
        }
    }

    fn selector(&self) -> LabelSelector {
        LabelSelector {
            match_labels: Some(labels(&self.name)),
            ..LabelSelector::default()
        }
    }

    fn deployment(&self) -> Deployment {
        Deployment {
            metadata: meta(&self.name, Some(&self.namespace), &self.name),
            spec: Some(DeploymentSpec {
                replicas: Some(self.replicas),
                selector: self.selector(),
                strategy: Some(DeploymentStrategy {
                    type_: Some(
                        if self.leader_election {
                            "RollingUpdate"
                        } else {
                            "Recreate"
                        }
                        .into(),
                    ),
                    ..DeploymentStrategy::default()
                }),
                template: self.pod_template(),
                ..DeploymentSpec::default()
            }),
            ..Deployment::default()
        }
    }

    fn daemon_set(&self) -> DaemonSet {
        DaemonSet {
            metadata: meta(&self.name, Some(&self.namespace), &self.name),
            spec: Some(DaemonSetSpec {
                selector: self.selector(),
                update_strategy: Some(DaemonSetUpdateStrategy {
                    type_: Some("RollingUpdate".into()),
                    ..DaemonSetUpdateStrategy::default()
                }),
                template: self.pod_template(),
                ..DaemonSetSpec::default()
            }),
            ..DaemonSet::default()
        }
    }

    /// The role `name` with `rules` and its binding to the ServiceAccount:
    /// a ClusterRole and ClusterRoleBinding, or a Role and RoleBinding in the
    /// controller's namespace.
    fn role_and_binding(&self, name: &str, scope: Scope, rules: Vec<PolicyRule>) -> (Yaml, Yaml) {
        let ns = Some(self.namespace.as_str());
        match scope {
            Scope::Cluster => (
                serde_saphyr::to_string(&ClusterRole {
                    metadata: meta(name, None, &self.name),
                    rules: Some(rules),
                    ..ClusterRole::default()
                }),
                serde_saphyr::to_string(&ClusterRoleBinding {
                    metadata: meta(name, None, &self.name),
                    role_ref: self.role_ref("ClusterRole", name),
                    subjects: Some(vec![self.subject()]),
                }),
            ),
            Scope::Namespaced => (
                serde_saphyr::to_string(&Role {
                    metadata: meta(name, ns, &self.name),
                    rules: Some(rules),
                }),
                serde_saphyr::to_string(&RoleBinding {
                    metadata: meta(name, ns, &self.name),
                    role_ref: self.role_ref("Role", name),
                    subjects: Some(vec![self.subject()]),
                }),
            ),
        }
    }

    /// All manifests as one multi-document YAML string, in a fixed order:
    /// ServiceAccount, (Cluster)Role, (Cluster)RoleBinding, leader-election
    /// Role and RoleBinding (if enabled), the [`ControllerManifest::extra_roles`]
    /// with their bindings, Deployment or DaemonSet. Refuses
    /// a namespace that is not an RFC 1123 label or an image that is not a
    /// valid reference ([`crate::manifest_inputs`]), naming `--namespace` or
    /// `--image`.
    pub fn to_yaml(&self) -> Result<String, Error> {
        crate::manifest_inputs::validate_namespace("--namespace", &self.namespace)?;
        crate::manifest_inputs::validate_image("--image", &self.image)?;
        let ns = Some(self.namespace.as_str());
        let mut docs: Vec<String> = Vec::new();
        let mut push = |v: Yaml| -> Result<(), Error> {
            docs.push(v.map_err(|e| Error::Yaml(e.to_string()))?);
            Ok(())
        };
        push(serde_saphyr::to_string(&ServiceAccount {
            metadata: meta(&self.name, ns, &self.name),
            automount_service_account_token: Some(true),
            ..ServiceAccount::default()
        }))?;
        // The controller's role, the leader-election Role, the extra roles.
        let mut roles = vec![(self.name.clone(), self.scope, self.role_rules())];
        if self.leader_election {
            roles.push((
                format!("{}-leader-election", self.name),
                Scope::Namespaced,
                normalize(&[LEASE_RULE]),
            ));
        }
        roles.extend(self.extra_roles.iter().map(|extra| {
            (
                format!("{}-{}", self.name, extra.suffix),
                extra.scope,
                normalize(extra.rules),
            )
        }));
        for (name, scope, rules) in roles {
            let (role, binding) = self.role_and_binding(&name, scope, rules);
            push(role)?;
            push(binding)?;
        }
        match self.workload {
            Workload::Deployment => push(serde_saphyr::to_string(&self.deployment()))?,
            Workload::DaemonSet => push(serde_saphyr::to_string(&self.daemon_set()))?,
        }
        Ok(docs.join("---\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::RbacVerb::*;
    use super::*;

    #[test]
    fn normalize_merges_same_group_and_verbs_and_sorts() {
        let rules = [
            Rule::new("velero.io", &["backups"], &[Watch, Get, List]),
            Rule::new("", &["namespaces"], &[Get, List, Watch]),
            Rule::new(
                "velero.io",
                &["podvolumebackups", "backups"],
                &[List, Get, Watch],
            ),
            Rule::new("velero.io", &["backups"], &[Patch]),
        ];
        let out = normalize(&rules);
        let flat: Vec<(String, Vec<String>, Vec<String>)> = out
            .into_iter()
            .map(|r| {
                (
                    r.api_groups.unwrap().join(","),
                    r.resources.unwrap(),
                    r.verbs,
                )
            })
            .collect();
        assert_eq!(
            flat,
            vec![
                (
                    "".into(),
                    vec!["namespaces".into()],
                    vec!["get".into(), "list".into(), "watch".into()]
                ),
                (
                    "velero.io".into(),
                    vec!["backups".into()],
                    vec!["patch".into()]
                ),
                (
                    "velero.io".into(),
                    vec!["backups".into(), "podvolumebackups".into()],
                    vec!["get".into(), "list".into(), "watch".into()]
                ),
            ]
        );
    }

    #[test]
    fn rule_order_does_not_change_the_output() {
        let a = [
            Rule::new("a", &["x"], &[Get]),
            Rule::new("b", &["y"], &[List]),
        ];
        let b = [a[1], a[0]];
        assert_eq!(normalize(&a), normalize(&b));
    }

    #[test]
    fn extra_roles_come_with_their_bindings_before_the_workload() {
        const NAMESPACES: &[Rule] = &[Rule::new("", &["namespaces"], &[List, Watch])];
        const CONFIGMAPS: &[Rule] = &[Rule::new("", &["configmaps"], &[Get])];
        let mut m = ControllerManifest::new("c", "ns", "example/c:1", &[]);
        m.extra_roles = vec![
            ExtraRole {
                suffix: "namespaces",
                scope: Scope::Cluster,
                rules: NAMESPACES,
            },
            ExtraRole {
                suffix: "configmaps",
                scope: Scope::Namespaced,
                rules: CONFIGMAPS,
            },
        ];
        let yaml = m.to_yaml().unwrap();
        let docs: Vec<(String, String)> = yaml
            .split("---\n")
            .map(|doc| {
                let line = |key: &str| {
                    doc.lines()
                        .find_map(|l| l.strip_prefix(key))
                        .unwrap_or("")
                        .to_owned()
                };
                (line("kind: "), line("  name: "))
            })
            .collect();
        let expected = [
            ("ServiceAccount", "c"),
            ("ClusterRole", "c"),
            ("ClusterRoleBinding", "c"),
            ("Role", "c-leader-election"),
            ("RoleBinding", "c-leader-election"),
            ("ClusterRole", "c-namespaces"),
            ("ClusterRoleBinding", "c-namespaces"),
            ("Role", "c-configmaps"),
            ("RoleBinding", "c-configmaps"),
            ("Deployment", "c"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(k, n)| ((*k).to_owned(), (*n).to_owned()))
            .collect();
        assert_eq!(docs, expected);
        // The extra roles' rules are as declared: no Events added.
        let namespaces = yaml.split("---\n").nth(5).unwrap();
        assert!(namespaces.contains("- namespaces\n"), "{namespaces}");
        assert!(!namespaces.contains("events"), "{namespaces}");
    }

    #[test]
    fn rules_with_different_resource_names_are_never_merged() {
        let rules = [
            Rule::new("", &["configmaps"], &[Get, Patch]).named(&["ledger"]),
            Rule::new("", &["configmaps"], &[Get, Patch]),
            Rule::new("", &["secrets"], &[Get, Patch]).named(&["ledger"]),
            Rule::new("", &["configmaps"], &[Get, Patch]).named(&["b", "a"]),
        ];
        let flat: Vec<(Vec<String>, Option<Vec<String>>)> = normalize(&rules)
            .into_iter()
            .map(|r| (r.resources.unwrap(), r.resource_names))
            .collect();
        assert_eq!(
            flat,
            vec![
                (vec!["configmaps".into()], None),
                (
                    vec!["configmaps".into()],
                    Some(vec!["a".into(), "b".into()])
                ),
                (
                    vec!["configmaps".into(), "secrets".into()],
                    Some(vec!["ledger".into()])
                ),
            ]
        );
    }

    #[test]
    fn unnamed_rules_emit_no_resource_names() {
        let out = normalize(&[Rule::new("", &["configmaps"], &[Create])]);
        assert_eq!(out[0].resource_names, None);
    }
}
