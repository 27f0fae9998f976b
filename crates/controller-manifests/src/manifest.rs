//! A controller's manifests generated from its declared [`Rule`]s:
//! ServiceAccount, Role or ClusterRole with its binding, the
//! leader-election Role, further roles ([`ExtraRole`]) and the workload
//! ([`Workload::Deployment`] or one pod per node as a
//! [`Workload::DaemonSet`]), with a Service in front of its pods when it
//! serves something besides its metrics ([`ControllerService`], a webhook
//! say).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategy, Deployment, DeploymentSpec,
    DeploymentStrategy,
};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction,
    ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec, Probe, ResourceRequirements,
    SeccompProfile, SecurityContext, Service, ServiceAccount, ServicePort, ServiceSpec,
};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::error::Error;
use crate::rules::{EVENTS_RULE, LEASE_RULE, Rule, normalize};

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

/// A further role like [`ExtraRole`] whose rules are restricted to names
/// known only when the manifests are rendered (derived from the namespace,
/// say): every rule gets [`RenderedRole::resource_names`] as its
/// `resourceNames`, in place of the names it declares. Kubernetes never
/// authorizes `create` or `deletecollection` by name (see
/// [`crate::rules`]): do not list them here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedRole {
    /// Appended to the controller's name, after a dash.
    pub suffix: String,
    /// Cluster or namespaced, as for [`ExtraRole::scope`].
    pub scope: Scope,
    /// The rules (their declared names are replaced).
    pub rules: Vec<Rule>,
    /// The objects every rule is restricted to.
    pub resource_names: Vec<String>,
}

impl RenderedRole {
    /// The role's normalised rules, each restricted to the names.
    pub fn policy_rules(&self) -> Vec<PolicyRule> {
        let unnamed: Vec<Rule> = self.rules.iter().map(|r| r.named(&[])).collect();
        let mut names = self.resource_names.clone();
        names.sort();
        names.dedup();
        normalize(&unnamed)
            .into_iter()
            .map(|rule| PolicyRule {
                resource_names: Some(names.clone()),
                ..rule
            })
            .collect()
    }
}

/// A port the controller serves to the cluster through
/// [`ControllerService`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedPort {
    /// The port's name, in the container and in the Service (at most 15
    /// lowercase letters, digits and dashes, as Kubernetes requires of a
    /// named port).
    pub name: String,
    /// The port the container listens on.
    pub container_port: u16,
    /// The Service's port, forwarded to the container's port by name.
    pub service_port: u16,
}

/// A Service in front of the controller's pods (same namespace, selecting
/// them by their labels), and the container ports it forwards to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerService {
    /// The Service's name.
    pub name: String,
    /// Its ports.
    pub ports: Vec<ServedPort>,
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
    /// Further roles with names known at render time, each with its
    /// binding (after [`ControllerManifest::extra_roles`]).
    pub rendered_roles: Vec<RenderedRole>,
    /// A Service in front of the pods, and the container ports it needs.
    pub service: Option<ControllerService>,
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
            rendered_roles: Vec::new(),
            service: None,
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
            ports: Some(self.container_ports()),
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

    /// The metrics port, then the ports of the Service.
    fn container_ports(&self) -> Vec<ContainerPort> {
        let port = |name: &str, number: u16| ContainerPort {
            name: Some(name.into()),
            container_port: i32::from(number),
            protocol: Some("TCP".into()),
            ..ContainerPort::default()
        };
        let mut ports = vec![port("http-metrics", self.metrics_port)];
        for served in self.service.iter().flat_map(|s| &s.ports) {
            ports.push(port(&served.name, served.container_port));
        }
        ports
    }

    fn service(&self, service: &ControllerService) -> Service {
        Service {
            metadata: meta(&service.name, Some(&self.namespace), &self.name),
            spec: Some(ServiceSpec {
                selector: Some(labels(&self.name)),
                ports: Some(
                    service
                        .ports
                        .iter()
                        .map(|p| ServicePort {
                            name: Some(p.name.clone()),
                            port: i32::from(p.service_port),
                            target_port: Some(IntOrString::String(p.name.clone())),
                            protocol: Some("TCP".into()),
                            ..ServicePort::default()
                        })
                        .collect(),
                ),
                ..ServiceSpec::default()
            }),
            ..Service::default()
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
    /// and [`ControllerManifest::rendered_roles`] with their bindings, the
    /// Service (if any), Deployment or DaemonSet. Refuses
    /// a namespace that is not an RFC 1123 label or an image that is not a
    /// valid reference ([`crate::inputs`]), naming `--namespace` or
    /// `--image`.
    pub fn to_yaml(&self) -> Result<String, Error> {
        crate::inputs::validate_namespace("--namespace", &self.namespace)?;
        crate::inputs::validate_image("--image", &self.image)?;
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
        roles.extend(self.rendered_roles.iter().map(|rendered| {
            (
                format!("{}-{}", self.name, rendered.suffix),
                rendered.scope,
                rendered.policy_rules(),
            )
        }));
        for (name, scope, rules) in roles {
            let (role, binding) = self.role_and_binding(&name, scope, rules);
            push(role)?;
            push(binding)?;
        }
        if let Some(service) = &self.service {
            push(serde_saphyr::to_string(&self.service(service)))?;
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
    use super::*;
    use crate::rules::RbacVerb::*;

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
}
