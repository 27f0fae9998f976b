//! The controller's RBAC, declared once, and the deployment manifests
//! generated from it (`backup-queue-controller manifests`; the files under
//! `deploy/backup-queue-controller/` are this output and a test keeps them
//! in sync).

use controller_manifests::{ControllerManifest, ExtraRole, RbacVerb::*, Rule, Scope};

use crate::config::CONTROLLER_NAME;

/// The image the generated Deployment runs (override with `--image`).
pub const DEFAULT_IMAGE: &str = "ghcr.io/placement-policies/backup-queue-controller:0.1.0";

/// Permissions on Backups, in the Velero namespace: watch them and patch
/// phase, position and the reason annotation (`backups/status` only for a
/// CRD with a status subresource). No create, update or delete. Plus `get`
/// on the Velero server's Deployment, by name, to check that Velero's own
/// queue controller is disabled ([`crate::velero_queue`]).
pub const BACKUP_RULES: &[Rule] = &[
    Rule::new("velero.io", &["backups"], &[Get, List, Watch, Patch]),
    Rule::new("velero.io", &["backups/status"], &[Patch]),
    Rule::new("apps", &["deployments"], &[Get])
        .named(&[crate::velero_queue::DEFAULT_VELERO_DEPLOYMENT]),
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
/// (Cluster)Role and binding, leader-election Role and binding, the
/// Namespace ClusterRole and binding (namespaced scope), Deployment.
pub fn render(
    scope: ManifestScope,
    namespace: &str,
    image: &str,
) -> Result<String, controller_manifests::Error> {
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
            manifest.extra_roles = vec![ExtraRole {
                suffix: "namespaces",
                scope: Scope::Cluster,
                rules: NAMESPACE_RULES,
            }];
            manifest.to_yaml()
        }
    }
}
