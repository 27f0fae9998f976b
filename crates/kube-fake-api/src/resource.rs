//! The registry of resource types the stand-in serves.

use std::collections::BTreeMap;

/// Identifies a resource collection: API group, version and plural name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId {
    /// API group, `""` for the core group.
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
    /// Plural lower-case resource name, e.g. `configmaps`.
    pub plural: String,
}

impl ResourceId {
    /// Builds an id from its parts.
    pub fn new(group: &str, version: &str, plural: &str) -> Self {
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
        }
    }

    /// The `apiVersion` string (`v1` for core, `group/version` otherwise).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group` as used in error messages (`configmaps`, `leases.coordination.k8s.io`).
    pub fn qualified_name(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// Everything the stand-in needs to know about one resource type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// Group, version and plural name.
    pub id: ResourceId,
    /// The `kind`, e.g. `ConfigMap`.
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether the type has a `/status` subresource. When it has one, writes
    /// to the main resource ignore `.status` and writes to `/status` change
    /// only `.status`, as on a real API server.
    pub status_subresource: bool,
    /// Whether the type is a custom resource (served from a
    /// CustomResourceDefinition), where kube-apiserver refuses
    /// strategic-merge patches (415) and updates without a resourceVersion
    /// (422). Default: the group has a dot and does not end in `.k8s.io`
    /// (CRD groups need a dot; the built-in dotted groups are `*.k8s.io`);
    /// change with [`ResourceInfo::with_custom`].
    pub custom: bool,
}

/// Whether `group` is, by default, a custom resource's group (see
/// [`ResourceInfo::custom`]).
pub fn is_custom_group(group: &str) -> bool {
    group.contains('.') && !group.ends_with(".k8s.io")
}

impl ResourceInfo {
    /// A namespaced resource without a status subresource.
    pub fn namespaced(group: &str, version: &str, kind: &str, plural: &str) -> Self {
        Self {
            id: ResourceId::new(group, version, plural),
            kind: kind.to_owned(),
            namespaced: true,
            status_subresource: false,
            custom: is_custom_group(group),
        }
    }

    /// A cluster-scoped resource without a status subresource.
    pub fn cluster(group: &str, version: &str, kind: &str, plural: &str) -> Self {
        Self {
            namespaced: false,
            ..Self::namespaced(group, version, kind, plural)
        }
    }

    /// Same resource with the `/status` subresource switched on or off.
    #[must_use]
    pub fn with_status_subresource(self, enabled: bool) -> Self {
        Self {
            status_subresource: enabled,
            ..self
        }
    }

    /// Same resource, marked as a custom resource or not.
    #[must_use]
    pub fn with_custom(self, custom: bool) -> Self {
        Self { custom, ..self }
    }

    /// The resource for a kube [`Resource`](kube::Resource) type with a
    /// static dynamic type (k8s-openapi types and `#[derive(CustomResource)]`).
    pub fn of<K: kube::Resource<DynamicType = ()>>(namespaced: bool) -> Self {
        Self {
            id: ResourceId::new(&K::group(&()), &K::version(&()), &K::plural(&())),
            kind: K::kind(&()).into_owned(),
            namespaced,
            status_subresource: false,
            custom: is_custom_group(&K::group(&())),
        }
    }
}

/// The set of resource types the stand-in serves, keyed by [`ResourceId`].
#[derive(Debug, Clone)]
pub struct Registry {
    resources: BTreeMap<ResourceId, ResourceInfo>,
    schemas: BTreeMap<ResourceId, serde_json::Value>,
}

impl Default for Registry {
    /// The built-in resource types:
    /// core v1 namespaces, nodes (cluster), pods, configmaps, secrets,
    /// services, events; `coordination.k8s.io/v1` leases; `events.k8s.io/v1`
    /// events; `apps/v1` deployments; `velero.io/v1` backups,
    /// podvolumebackups, podvolumerestores, restores, schedules;
    /// `velero.io/v2alpha1` datauploads, datadownloads; `cluster.x-k8s.io/v1beta1`
    /// machines, clusters, machinedeployments, machinesets;
    /// `controlplane.cluster.x-k8s.io/v1beta1` kubeadmcontrolplanes;
    /// `infrastructure.cluster.x-k8s.io/v1beta1` vsphereclusters, vspherevms,
    /// vspheremachinetemplates. Namespaces, nodes, pods, services,
    /// deployments and the Cluster API and CAPV kinds (but
    /// vspheremachinetemplates) have the `/status` subresource, as their
    /// CRDs declare; the Velero kinds do not (Velero's
    /// `Backup` CRD declares none); re-register a type with
    /// [`ResourceInfo::with_status_subresource`] to change that.
    fn default() -> Self {
        let list = [
            ResourceInfo::cluster("", "v1", "Namespace", "namespaces")
                .with_status_subresource(true),
            ResourceInfo::cluster("", "v1", "Node", "nodes").with_status_subresource(true),
            ResourceInfo::namespaced("", "v1", "Pod", "pods").with_status_subresource(true),
            ResourceInfo::namespaced("", "v1", "ConfigMap", "configmaps"),
            ResourceInfo::namespaced("", "v1", "Secret", "secrets"),
            ResourceInfo::namespaced("", "v1", "Service", "services").with_status_subresource(true),
            ResourceInfo::namespaced("", "v1", "Event", "events"),
            ResourceInfo::namespaced("coordination.k8s.io", "v1", "Lease", "leases"),
            ResourceInfo::namespaced("events.k8s.io", "v1", "Event", "events"),
            ResourceInfo::namespaced("apps", "v1", "Deployment", "deployments")
                .with_status_subresource(true),
            ResourceInfo::namespaced("velero.io", "v1", "Backup", "backups"),
            ResourceInfo::namespaced("velero.io", "v1", "Restore", "restores"),
            ResourceInfo::namespaced("velero.io", "v1", "Schedule", "schedules"),
            ResourceInfo::namespaced("velero.io", "v1", "PodVolumeBackup", "podvolumebackups"),
            ResourceInfo::namespaced("velero.io", "v1", "PodVolumeRestore", "podvolumerestores"),
            ResourceInfo::namespaced("velero.io", "v2alpha1", "DataUpload", "datauploads"),
            ResourceInfo::namespaced("velero.io", "v2alpha1", "DataDownload", "datadownloads"),
            ResourceInfo::namespaced("cluster.x-k8s.io", "v1beta1", "Machine", "machines")
                .with_status_subresource(true),
            ResourceInfo::namespaced("cluster.x-k8s.io", "v1beta1", "Cluster", "clusters")
                .with_status_subresource(true),
            ResourceInfo::namespaced(
                "cluster.x-k8s.io",
                "v1beta1",
                "MachineDeployment",
                "machinedeployments",
            )
            .with_status_subresource(true),
            ResourceInfo::namespaced("cluster.x-k8s.io", "v1beta1", "MachineSet", "machinesets")
                .with_status_subresource(true),
            ResourceInfo::namespaced(
                "controlplane.cluster.x-k8s.io",
                "v1beta1",
                "KubeadmControlPlane",
                "kubeadmcontrolplanes",
            )
            .with_status_subresource(true),
            ResourceInfo::namespaced(
                "infrastructure.cluster.x-k8s.io",
                "v1beta1",
                "VSphereCluster",
                "vsphereclusters",
            )
            .with_status_subresource(true),
            ResourceInfo::namespaced(
                "infrastructure.cluster.x-k8s.io",
                "v1beta1",
                "VSphereVM",
                "vspherevms",
            )
            .with_status_subresource(true),
            ResourceInfo::namespaced(
                "infrastructure.cluster.x-k8s.io",
                "v1beta1",
                "VSphereMachineTemplate",
                "vspheremachinetemplates",
            ),
        ];
        let mut registry = Self::empty();
        for info in list {
            registry.register(info);
        }
        registry
    }
}

impl Registry {
    /// An empty registry.
    pub fn empty() -> Self {
        Self {
            resources: BTreeMap::new(),
            schemas: BTreeMap::new(),
        }
    }

    /// Adds or replaces a resource type (dropping any schema it had).
    pub fn register(&mut self, info: ResourceInfo) {
        self.schemas.remove(&info.id);
        self.resources.insert(info.id.clone(), info);
    }

    /// Sets the OpenAPI v3 schema objects of `id` are checked against (see
    /// [`crate::schema`]).
    pub fn set_schema(&mut self, id: &ResourceId, schema: serde_json::Value) {
        self.schemas.insert(id.clone(), schema);
    }

    /// The schema of `id`, if one was installed.
    pub fn schema(&self, id: &ResourceId) -> Option<&serde_json::Value> {
        self.schemas.get(id)
    }

    /// Looks a resource type up.
    pub fn get(&self, id: &ResourceId) -> Option<&ResourceInfo> {
        self.resources.get(id)
    }

    /// All registered resource types, sorted by id.
    pub fn iter(&self) -> impl Iterator<Item = &ResourceInfo> {
        self.resources.values()
    }
}
