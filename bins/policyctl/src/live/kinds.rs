//! The kinds live mode can list, where it lists them, and which ones each
//! command needs.

use crate::cli::{Command, ConfigAction, HostLabelsAction};

/// Where a kind is listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// A cluster-scoped kind (`/api/v1/nodes`).
    Cluster,
    /// A namespaced kind, listed across every namespace (`/api/v1/pods`).
    AllNamespaces,
    /// A namespaced kind, listed in Velero's namespace only (`--namespace`).
    VeleroNamespace,
}

/// A kind policyctl reads from a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Kind {
    /// `v1` ConfigMap (the node-agent configuration and the prepare-queue
    /// ledger), in Velero's namespace.
    ConfigMap,
    /// `v1` Node.
    Node,
    /// `v1` Namespace.
    Namespace,
    /// `v1` Pod, in every namespace.
    Pod,
    /// `v1` Service, in every namespace.
    Service,
    /// `v1` ReplicationController, in every namespace.
    ReplicationController,
    /// `apps/v1` ReplicaSet, in every namespace.
    ReplicaSet,
    /// `apps/v1` StatefulSet, in every namespace.
    StatefulSet,
    /// `v1` PersistentVolumeClaim, in every namespace.
    PersistentVolumeClaim,
    /// `v1` PersistentVolume.
    PersistentVolume,
    /// `storage.k8s.io/v1` StorageClass.
    StorageClass,
    /// `storage.k8s.io/v1` VolumeAttachment.
    VolumeAttachment,
    /// `storage.k8s.io/v1` CSINode.
    CSINode,
    /// `resource.k8s.io/v1` DeviceClass.
    DeviceClass,
    /// `resource.k8s.io/v1` ResourceClaim, in every namespace.
    ResourceClaim,
    /// `resource.k8s.io/v1` ResourceClaimTemplate, in every namespace.
    ResourceClaimTemplate,
    /// `resource.k8s.io/v1` ResourceSlice.
    ResourceSlice,
    /// `velero.io/v1` Backup, in Velero's namespace.
    Backup,
    /// `velero.io/v1` BackupRepository, in Velero's namespace (the keys of
    /// the repository-maintenance configuration).
    BackupRepository,
    /// `scheduling.k8s.io/v1` PriorityClass (the maintenance job's).
    PriorityClass,
    /// `velero.io/v1` PodVolumeBackup, in Velero's namespace.
    PodVolumeBackup,
    /// `velero.io/v1` PodVolumeRestore, in Velero's namespace.
    PodVolumeRestore,
    /// `velero.io/v2alpha1` DataUpload, in Velero's namespace.
    DataUpload,
    /// `velero.io/v2alpha1` DataDownload, in Velero's namespace.
    DataDownload,
    /// `apps/v1` Deployment, in every namespace (pod templates).
    Deployment,
    /// `apps/v1` DaemonSet, in Velero's namespace (the node-agent's
    /// tolerations, copied onto data-mover pods).
    DaemonSet,
    /// Cluster API Machine, in every namespace.
    Machine,
    /// Cluster API Cluster, in every namespace.
    Cluster,
    /// Cluster API KubeadmControlPlane, in every namespace.
    KubeadmControlPlane,
    /// Cluster API MachineDeployment, in every namespace.
    MachineDeployment,
    /// Cluster API MachineSet, in every namespace.
    MachineSet,
    /// CAPV VSphereCluster, in every namespace.
    VSphereCluster,
    /// CAPV VSphereMachineTemplate, in every namespace.
    VSphereMachineTemplate,
    /// CAPV VSphereVM, in every namespace.
    VSphereVM,
}

/// Cluster API versions, newest first: live mode lists the first one the
/// server serves.
const CAPI_VERSIONS: &[&str] = &["v1beta2", "v1beta1"];

/// How a kind is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resource {
    /// API group (empty for the core group).
    pub group: &'static str,
    /// Versions to try, in order (the next one only when the server does not
    /// serve the previous one).
    pub versions: &'static [&'static str],
    /// Kind.
    pub kind: &'static str,
    /// Plural resource name, as in URLs and RBAC rules.
    pub plural: &'static str,
    /// Where it is listed.
    pub scope: Scope,
}

impl Resource {
    /// `group/version` (`version` for the core group).
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_owned()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    /// How messages name the kind: `velero.io/v1 Backup`, or
    /// `cluster.x-k8s.io/{v1beta2,v1beta1} Machine` when several versions are
    /// tried.
    pub fn display_name(&self) -> String {
        let version = match self.versions {
            [one] => (*one).to_owned(),
            several => format!("{{{}}}", several.join(",")),
        };
        format!("{} {}", self.api_version(&version), self.kind)
    }

    /// The list URL path of `version`, in `namespace` for
    /// [`Scope::VeleroNamespace`].
    pub fn list_path(&self, version: &str, namespace: &str) -> String {
        let prefix = if self.group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{}/{version}", self.group)
        };
        match self.scope {
            Scope::VeleroNamespace => format!("{prefix}/namespaces/{namespace}/{}", self.plural),
            Scope::Cluster | Scope::AllNamespaces => format!("{prefix}/{}", self.plural),
        }
    }
}

impl Kind {
    /// Every kind, in the order live mode lists them.
    pub const ALL: [Kind; 34] = [
        Kind::ConfigMap,
        Kind::Node,
        Kind::Namespace,
        Kind::Pod,
        Kind::Service,
        Kind::ReplicationController,
        Kind::ReplicaSet,
        Kind::StatefulSet,
        Kind::PersistentVolumeClaim,
        Kind::PersistentVolume,
        Kind::StorageClass,
        Kind::VolumeAttachment,
        Kind::CSINode,
        Kind::DeviceClass,
        Kind::ResourceClaim,
        Kind::ResourceClaimTemplate,
        Kind::ResourceSlice,
        Kind::Backup,
        Kind::BackupRepository,
        Kind::PriorityClass,
        Kind::PodVolumeBackup,
        Kind::PodVolumeRestore,
        Kind::DataUpload,
        Kind::DataDownload,
        Kind::Deployment,
        Kind::DaemonSet,
        Kind::Machine,
        Kind::Cluster,
        Kind::KubeadmControlPlane,
        Kind::MachineDeployment,
        Kind::MachineSet,
        Kind::VSphereCluster,
        Kind::VSphereMachineTemplate,
        Kind::VSphereVM,
    ];

    /// The key its reading is recorded under (`crate::reading::Reading`):
    /// `<group>/<plural>`, `core/<plural>` for the core group.
    pub fn reading_key(self) -> String {
        let resource = self.resource();
        let group = if resource.group.is_empty() {
            "core"
        } else {
            resource.group
        };
        format!("{group}/{}", resource.plural)
    }

    /// How the kind is served.
    pub fn resource(self) -> Resource {
        use Scope::{AllNamespaces, Cluster, VeleroNamespace};
        let (group, versions, kind, plural, scope): (_, &'static [&'static str], _, _, _) =
            match self {
                Kind::ConfigMap => ("", &["v1"], "ConfigMap", "configmaps", VeleroNamespace),
                Kind::Node => ("", &["v1"], "Node", "nodes", Cluster),
                Kind::Namespace => ("", &["v1"], "Namespace", "namespaces", Cluster),
                Kind::Pod => ("", &["v1"], "Pod", "pods", AllNamespaces),
                Kind::Service => ("", &["v1"], "Service", "services", AllNamespaces),
                Kind::ReplicationController => (
                    "",
                    &["v1"],
                    "ReplicationController",
                    "replicationcontrollers",
                    AllNamespaces,
                ),
                Kind::ReplicaSet => ("apps", &["v1"], "ReplicaSet", "replicasets", AllNamespaces),
                Kind::StatefulSet => (
                    "apps",
                    &["v1"],
                    "StatefulSet",
                    "statefulsets",
                    AllNamespaces,
                ),
                Kind::PersistentVolumeClaim => (
                    "",
                    &["v1"],
                    "PersistentVolumeClaim",
                    "persistentvolumeclaims",
                    AllNamespaces,
                ),
                Kind::PersistentVolume => (
                    "",
                    &["v1"],
                    "PersistentVolume",
                    "persistentvolumes",
                    Cluster,
                ),
                Kind::StorageClass => (
                    "storage.k8s.io",
                    &["v1"],
                    "StorageClass",
                    "storageclasses",
                    Cluster,
                ),
                Kind::VolumeAttachment => (
                    "storage.k8s.io",
                    &["v1"],
                    "VolumeAttachment",
                    "volumeattachments",
                    Cluster,
                ),
                Kind::CSINode => ("storage.k8s.io", &["v1"], "CSINode", "csinodes", Cluster),
                Kind::DeviceClass => (
                    "resource.k8s.io",
                    &["v1"],
                    "DeviceClass",
                    "deviceclasses",
                    Cluster,
                ),
                Kind::ResourceClaim => (
                    "resource.k8s.io",
                    &["v1"],
                    "ResourceClaim",
                    "resourceclaims",
                    AllNamespaces,
                ),
                Kind::ResourceClaimTemplate => (
                    "resource.k8s.io",
                    &["v1"],
                    "ResourceClaimTemplate",
                    "resourceclaimtemplates",
                    AllNamespaces,
                ),
                Kind::ResourceSlice => (
                    "resource.k8s.io",
                    &["v1"],
                    "ResourceSlice",
                    "resourceslices",
                    Cluster,
                ),
                Kind::Backup => ("velero.io", &["v1"], "Backup", "backups", VeleroNamespace),
                Kind::BackupRepository => (
                    "velero.io",
                    &["v1"],
                    "BackupRepository",
                    "backuprepositories",
                    VeleroNamespace,
                ),
                Kind::PriorityClass => (
                    "scheduling.k8s.io",
                    &["v1"],
                    "PriorityClass",
                    "priorityclasses",
                    Cluster,
                ),
                Kind::PodVolumeBackup => (
                    "velero.io",
                    &["v1"],
                    "PodVolumeBackup",
                    "podvolumebackups",
                    VeleroNamespace,
                ),
                Kind::PodVolumeRestore => (
                    "velero.io",
                    &["v1"],
                    "PodVolumeRestore",
                    "podvolumerestores",
                    VeleroNamespace,
                ),
                Kind::DataUpload => (
                    "velero.io",
                    &["v2alpha1"],
                    "DataUpload",
                    "datauploads",
                    VeleroNamespace,
                ),
                Kind::DataDownload => (
                    "velero.io",
                    &["v2alpha1"],
                    "DataDownload",
                    "datadownloads",
                    VeleroNamespace,
                ),
                Kind::Deployment => ("apps", &["v1"], "Deployment", "deployments", AllNamespaces),
                Kind::DaemonSet => ("apps", &["v1"], "DaemonSet", "daemonsets", VeleroNamespace),
                Kind::Machine => (
                    "cluster.x-k8s.io",
                    CAPI_VERSIONS,
                    "Machine",
                    "machines",
                    AllNamespaces,
                ),
                Kind::Cluster => (
                    "cluster.x-k8s.io",
                    CAPI_VERSIONS,
                    "Cluster",
                    "clusters",
                    AllNamespaces,
                ),
                Kind::KubeadmControlPlane => (
                    "controlplane.cluster.x-k8s.io",
                    CAPI_VERSIONS,
                    "KubeadmControlPlane",
                    "kubeadmcontrolplanes",
                    AllNamespaces,
                ),
                Kind::MachineDeployment => (
                    "cluster.x-k8s.io",
                    CAPI_VERSIONS,
                    "MachineDeployment",
                    "machinedeployments",
                    AllNamespaces,
                ),
                Kind::MachineSet => (
                    "cluster.x-k8s.io",
                    CAPI_VERSIONS,
                    "MachineSet",
                    "machinesets",
                    AllNamespaces,
                ),
                Kind::VSphereCluster => (
                    "infrastructure.cluster.x-k8s.io",
                    CAPI_VERSIONS,
                    "VSphereCluster",
                    "vsphereclusters",
                    AllNamespaces,
                ),
                Kind::VSphereMachineTemplate => (
                    "infrastructure.cluster.x-k8s.io",
                    CAPI_VERSIONS,
                    "VSphereMachineTemplate",
                    "vspheremachinetemplates",
                    AllNamespaces,
                ),
                Kind::VSphereVM => (
                    "infrastructure.cluster.x-k8s.io",
                    CAPI_VERSIONS,
                    "VSphereVM",
                    "vspherevms",
                    AllNamespaces,
                ),
            };
        Resource {
            group,
            versions,
            kind,
            plural,
            scope,
        }
    }
}

/// The node-agent configuration, the repository-maintenance
/// configuration, the ledger of `soothe --mode exact` and the
/// HostInventory are ConfigMaps.
pub(crate) const CONFIG: &[Kind] = &[Kind::ConfigMap];
pub(crate) const SCHEDULING: &[Kind] = &[Kind::Node, Kind::Namespace, Kind::Pod];
/// The objects kube-scheduler's default topology spreading takes its
/// selectors from (`schedule` scores).
pub(crate) const WORKLOADS: &[Kind] = &[
    Kind::Service,
    Kind::ReplicationController,
    Kind::ReplicaSet,
    Kind::StatefulSet,
];
pub(crate) const STORAGE: &[Kind] = &[
    Kind::PersistentVolumeClaim,
    Kind::PersistentVolume,
    Kind::StorageClass,
    Kind::VolumeAttachment,
];
/// What kube-scheduler's DynamicResources plugin reads.
pub(crate) const DEVICES: &[Kind] = &[
    Kind::DeviceClass,
    Kind::ResourceClaim,
    Kind::ResourceClaimTemplate,
    Kind::ResourceSlice,
];
/// What kube-scheduler's volume filters read.
pub(crate) const VOLUMES: &[Kind] = &[
    Kind::PersistentVolumeClaim,
    Kind::PersistentVolume,
    Kind::StorageClass,
    Kind::CSINode,
];
pub(crate) const DATA_PATH: &[Kind] = &[
    Kind::DataUpload,
    Kind::DataDownload,
    Kind::PodVolumeBackup,
    Kind::PodVolumeRestore,
];
pub(crate) const CLUSTER_API: &[Kind] = &[
    Kind::Machine,
    Kind::Cluster,
    Kind::KubeadmControlPlane,
    Kind::MachineDeployment,
    Kind::MachineSet,
    Kind::VSphereCluster,
    Kind::VSphereMachineTemplate,
    Kind::VSphereVM,
];

/// Whether `command` reads a HostInventory (kept in a ConfigMap; see
/// [`crate::host_source`]).
pub fn reads_host_inventory(command: &Command) -> bool {
    matches!(
        command,
        Command::Hosts { .. } | Command::HostLabels(_) | Command::Modules(_) | Command::Report(_)
    )
}

/// Whether `command` simulates kube-scheduler, and so follows a
/// Kubernetes release ([`crate::release`]).
pub fn simulates_scheduler(command: &Command) -> bool {
    matches!(
        command,
        Command::Schedule(_)
            | Command::Diagnose(_)
            | Command::Capacity(_)
            | Command::Maintenance
            | Command::Report(_)
    )
}

/// What a command reads in live mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Needs {
    /// These kinds (sorted, without duplicates).
    Kinds(Vec<Kind>),
    /// The command reads no objects.
    Nothing,
}

/// The kinds `command` reads: each command declares them here, and the
/// end-to-end tests check that live mode then gives the same result as
/// `-f` with every object.
pub fn needs(command: &Command) -> Needs {
    let groups: &[&[Kind]] = match command {
        Command::Config {
            action: ConfigAction::Check { .. },
        } => &[CONFIG],
        Command::Concurrency => &[CONFIG, &[Kind::Node]],
        // Nodes: Velero fails the load when none has the data mover's OS.
        // The node-agent DaemonSet: the tolerations Velero copies onto
        // data-mover pods.
        Command::Affinity(_) => &[CONFIG, STORAGE, &[Kind::Node, Kind::DaemonSet]],
        // Wildcards of includedNamespaces resolve against the Namespaces.
        Command::Queue(_) => &[&[Kind::Backup, Kind::Namespace]],
        // The backlog's node-agents are the Nodes with a node-agent pod.
        Command::Soothe(_) => &[CONFIG, DATA_PATH, &[Kind::Node, Kind::Pod]],
        Command::Schedule(_) => &[SCHEDULING, WORKLOADS, VOLUMES, DEVICES],
        // The pod templates of `--workload` come from Deployments and
        // StatefulSets.
        Command::Capacity(_) => &[SCHEDULING, WORKLOADS, VOLUMES, DEVICES, &[Kind::Deployment]],
        // The HostInventory is kept in a ConfigMap.
        Command::Hosts { .. } => &[CONFIG],
        Command::HostLabels(args) => match &args.action {
            Some(HostLabelsAction::Sanitize { .. }) => return Needs::Nothing,
            None => &[CONFIG, SCHEDULING, &[Kind::Machine]],
        },
        Command::Diagnose(_) => &[
            CONFIG,
            SCHEDULING,
            STORAGE,
            VOLUMES,
            DEVICES,
            DATA_PATH,
            &[Kind::DaemonSet],
        ],
        Command::Modules(_) => &[CONFIG, CLUSTER_API],
        // The ConfigMap, the repositories, the server Deployment the job
        // copies from, the PriorityClasses, and what kube-scheduler reads.
        Command::Maintenance => &[
            CONFIG,
            SCHEDULING,
            VOLUMES,
            &[
                Kind::BackupRepository,
                Kind::PriorityClass,
                Kind::Deployment,
            ],
        ],
        Command::Report(_) => &[&Kind::ALL],
        Command::Rbac(_) | Command::Vnf { .. } => return Needs::Nothing,
    };
    let mut kinds: Vec<Kind> = groups
        .iter()
        .flat_map(|group| group.iter().copied())
        .collect();
    kinds.sort();
    kinds.dedup();
    Needs::Kinds(kinds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_needs_every_kind_and_hosts_needs_the_inventory_config_map() {
        let report = Command::Report(crate::cli::ReportArgs {
            concurrent_backups: 1,
            soothe_mode: crate::cli::SootheMode::Optimistic,
            datamovers: Vec::new(),
            vnfd: None,
            vnf_flavour: None,
            base_hot: None,
            hypervisors: None,
            servers: None,
        });
        assert_eq!(needs(&report), Needs::Kinds(Kind::ALL.to_vec()));
        assert_eq!(
            needs(&Command::Hosts {
                action: crate::cli::HostsAction::Plan
            }),
            Needs::Kinds(vec![Kind::ConfigMap])
        );
    }

    #[test]
    fn every_kind_has_its_own_resource_and_a_list_path() {
        let mut seen = std::collections::BTreeSet::new();
        for kind in Kind::ALL {
            let resource = kind.resource();
            assert!(seen.insert((resource.group, resource.plural)), "{kind:?}");
            let path = resource.list_path(resource.versions[0], "velero");
            assert!(path.ends_with(resource.plural), "{path}");
            assert_eq!(
                path.contains("/namespaces/velero/"),
                resource.scope == Scope::VeleroNamespace,
                "{path}"
            );
        }
        assert_eq!(
            Kind::Pod.resource().list_path("v1", "velero"),
            "/api/v1/pods"
        );
        assert_eq!(
            Kind::Backup.resource().list_path("v1", "velero"),
            "/apis/velero.io/v1/namespaces/velero/backups"
        );
        assert_eq!(
            Kind::Machine.resource().display_name(),
            "cluster.x-k8s.io/{v1beta2,v1beta1} Machine"
        );
    }
}
