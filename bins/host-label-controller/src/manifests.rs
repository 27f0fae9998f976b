//! The controller's RBAC, declared once, and the deployment manifests
//! generated from it (`host-label-controller manifests`; the file under
//! `deploy/host-label-controller/` is this output and a test keeps it in sync).

use controller_manifests::{ControllerManifest, ExtraRole, RbacVerb::*, Rule, Scope};

use crate::config::{CONTROLLER_NAME, DEFAULT_STATUS_CONFIGMAP};

/// The image the generated Deployment runs (override with `--image`).
pub const DEFAULT_IMAGE: &str = "ghcr.io/placement-policies/host-label-controller:0.1.0";

/// Cluster-wide permissions (ClusterRole): read and patch Nodes (labels and
/// our annotation only; `get` re-reads a Node after a `409`), watch Machines
/// and Pods. No create, update or delete. Events (`events.k8s.io`
/// create/patch) are added by controller-kit.
pub const CLUSTER_RULES: &[Rule] = &[
    Rule::new("", &["nodes"], &[Get, List, Watch, Patch]),
    Rule::new("", &["pods"], &[List, Watch]),
    Rule::new("cluster.x-k8s.io", &["machines"], &[List, Watch]),
];

/// Added with `--audit-cluster-modules`: watch the Cluster API and CAPV
/// objects the cluster-module audit works on.
pub const CLUSTER_MODULE_RULES: &[Rule] = &[
    Rule::new(
        "cluster.x-k8s.io",
        &["clusters", "machinedeployments", "machinesets"],
        &[List, Watch],
    ),
    Rule::new(
        "controlplane.cluster.x-k8s.io",
        &["kubeadmcontrolplanes"],
        &[List, Watch],
    ),
    Rule::new(
        "infrastructure.cluster.x-k8s.io",
        &["vsphereclusters", "vspheremachinetemplates", "vspherevms"],
        &[List, Watch],
    ),
];

/// With `--all-clusters` the controller runs in the management cluster and
/// needs there only this (ClusterRole): watch Clusters and their Machines,
/// and read each Cluster's `<cluster>-kubeconfig` Secret. The Secret names
/// are not known in advance, so `get` on Secrets is not restricted by name:
/// grant it only where Cluster API keeps these Secrets (they are read
/// again periodically and on `401`/`403`, with `get`: no list or watch of
/// Secrets). Nodes, Pods and Events are all in the workload clusters,
/// reached with the credentials of those Secrets, so the management
/// identity is granted none of them; the status ConfigMap is in the
/// management cluster ([`ALL_CLUSTERS_NAMESPACE_RULES`]).
pub const ALL_CLUSTERS_RULES: &[Rule] = &[
    Rule::new(
        "cluster.x-k8s.io",
        &["clusters", "machines"],
        &[List, Watch],
    ),
    Rule::new("", &["secrets"], &[Get]),
];

/// Optional features the generated Deployment runs with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Features {
    /// `--sync-machine-labels` (no further permission).
    pub sync_machine_labels: bool,
    /// `--audit-cluster-modules` (adds [`CLUSTER_MODULE_RULES`]).
    pub audit_cluster_modules: bool,
    /// `--all-clusters` ([`ALL_CLUSTERS_RULES`] instead of
    /// [`CLUSTER_RULES`], no Events, [`ALL_CLUSTERS_NAMESPACE_RULES`]
    /// instead of [`NAMESPACE_RULES`]).
    pub all_clusters: bool,
}

/// Permissions in the controller's own namespace (Role): read the inventory
/// ConfigMap, create and patch the status ConfigMap.
pub const NAMESPACE_RULES: &[Rule] = &[Rule::new(
    "",
    &["configmaps"],
    &[Get, List, Watch, Create, Patch],
)];

/// With `--all-clusters`, in the controller's namespace of the management
/// cluster (Role): create and patch the status ConfigMap, which holds one
/// entry per workload cluster (server-side apply, one field manager per
/// workload cluster).
pub const ALL_CLUSTERS_NAMESPACE_RULES: &[Rule] =
    &[Rule::new("", &["configmaps"], &[Create, Patch])];

/// The manifests as one multi-document YAML string: ServiceAccount,
/// ClusterRole and binding, leader-election Role and binding, the ConfigMap
/// Role and binding, Deployment.
pub fn render(namespace: &str, image: &str) -> Result<String, controller_manifests::Error> {
    render_with(namespace, image, Features::default())
}

/// [`render`] for a Deployment running with `features`.
pub fn render_with(
    namespace: &str,
    image: &str,
    features: Features,
) -> Result<String, controller_manifests::Error> {
    let mut rules = if features.all_clusters {
        ALL_CLUSTERS_RULES.to_vec()
    } else {
        CLUSTER_RULES.to_vec()
    };
    if features.audit_cluster_modules {
        rules.extend_from_slice(CLUSTER_MODULE_RULES);
    }
    let mut manifest = ControllerManifest::new(CONTROLLER_NAME, namespace, image, &rules);
    manifest.scope = Scope::Cluster;
    manifest.events = !features.all_clusters;
    manifest.args = vec![
        format!("--namespace={namespace}"),
        format!("--status-configmap={namespace}/{DEFAULT_STATUS_CONFIGMAP}"),
    ];
    if features.sync_machine_labels {
        manifest.args.push("--sync-machine-labels".to_owned());
    }
    if features.audit_cluster_modules {
        manifest.args.push("--audit-cluster-modules".to_owned());
    }
    if features.all_clusters {
        manifest.args.push("--all-clusters".to_owned());
    }
    manifest.extra_roles = vec![ExtraRole {
        suffix: "configmaps",
        scope: Scope::Namespaced,
        rules: if features.all_clusters {
            ALL_CLUSTERS_NAMESPACE_RULES
        } else {
            NAMESPACE_RULES
        },
    }];
    manifest.to_yaml()
}
