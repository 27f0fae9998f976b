//! The controller's RBAC, declared once, and the deployment manifests
//! generated from it (`backup-queue-controller manifests`; the files under
//! `deploy/backup-queue-controller/` are this output and a test keeps them
//! in sync).

use controller_kit::rbac::{ControllerManifest, RbacVerb::*, Rule, Scope, normalize};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::config::CONTROLLER_NAME;

/// The image the generated Deployment runs (override with `--image`).
pub const DEFAULT_IMAGE: &str = "ghcr.io/placement-policies/backup-queue-controller:0.1.0";

/// Permissions on Backups, in the Velero namespace: watch them and patch
/// phase, position and the reason annotation (`backups/status` only for a
/// CRD with a status subresource). No create, update or delete.
pub const BACKUP_RULES: &[Rule] = &[
    Rule::new("velero.io", &["backups"], &[Get, List, Watch, Patch]),
    Rule::new("velero.io", &["backups/status"], &[Patch]),
];

/// Cluster-scoped permissions, so always in a ClusterRole whatever the
/// scope of the rest: list/watch Namespaces, and get the one
/// CustomResourceDefinition `backups.velero.io` (the start-up check that
/// Velero is 1.18 or later, see [`crate::crd_check`]).
pub const NAMESPACE_RULES: &[Rule] = &[
    Rule::new("", &["namespaces"], &[List, Watch]),
    Rule::new(
        "apiextensions.k8s.io",
        &["customresourcedefinitions"],
        &[Get],
    )
    .named(&[crate::crd_check::BACKUP_CRD]),
];

/// Where the Backup permissions apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ManifestScope {
    /// A Role in the Velero namespace for Backups and Events, plus a
    /// ClusterRole for Namespaces only (least privilege).
    Namespaced,
    /// One ClusterRole for Backups, Events and Namespaces.
    Cluster,
}

impl ManifestScope {
    /// The file name under `deploy/backup-queue-controller/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Namespaced => "namespaced.yaml",
            Self::Cluster => "cluster.yaml",
        }
    }
}

/// The manifests as one multi-document YAML string: ServiceAccount,
/// (Cluster)Role and binding, the Namespace ClusterRole and binding (namespaced
/// scope), leader-election Role and binding, Deployment.
pub fn render(
    scope: ManifestScope,
    namespace: &str,
    image: &str,
) -> Result<String, controller_kit::Error> {
    let mut manifest = ControllerManifest::new(CONTROLLER_NAME, namespace, image, &[]);
    manifest.args = vec![
        format!("--namespace={namespace}"),
        "--concurrent-backups=1".into(),
    ];
    match scope {
        ManifestScope::Cluster => {
            manifest.scope = Scope::Cluster;
            manifest.rules = [BACKUP_RULES, NAMESPACE_RULES].concat();
            manifest.to_yaml()
        }
        ManifestScope::Namespaced => {
            manifest.scope = Scope::Namespaced;
            manifest.rules = BACKUP_RULES.to_vec();
            let yaml = manifest.to_yaml()?;
            let mut docs: Vec<String> = yaml.split("---\n").map(str::to_owned).collect();
            let deployment = docs.pop().unwrap_or_default();
            docs.extend(namespace_reader(namespace)?);
            docs.push(deployment);
            Ok(docs.join("---\n"))
        }
    }
}

/// The ClusterRole (Namespaces list/watch) and its binding for the namespaced
/// variant.
fn namespace_reader(namespace: &str) -> Result<Vec<String>, controller_kit::Error> {
    let name = format!("{CONTROLLER_NAME}-namespaces");
    let labels = Some(
        [
            ("app.kubernetes.io/component", "controller"),
            ("app.kubernetes.io/name", CONTROLLER_NAME),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect(),
    );
    let meta = ObjectMeta {
        name: Some(name.clone()),
        labels,
        ..ObjectMeta::default()
    };
    let yaml = |r: Result<String, serde_saphyr::ser_error::Error>| {
        r.map_err(|e| controller_kit::Error::Yaml(e.to_string()))
    };
    Ok(vec![
        yaml(serde_saphyr::to_string(&ClusterRole {
            metadata: meta.clone(),
            rules: Some(normalize(NAMESPACE_RULES)),
            ..ClusterRole::default()
        }))?,
        yaml(serde_saphyr::to_string(&ClusterRoleBinding {
            metadata: meta,
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "ClusterRole".into(),
                name,
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: CONTROLLER_NAME.into(),
                namespace: Some(namespace.into()),
                ..Subject::default()
            }]),
        }))?,
    ])
}
