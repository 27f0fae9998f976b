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

    /// Whether kube-apiserver keeps `metadata.generation` for this type:
    /// custom resources and the built-in types whose strategy sets it
    /// (`pkg/registry/*/strategy.go`, `PrepareForCreate`: Deployments,
    /// Pods, Jobs, ...). ConfigMaps, Secrets, Leases, Events, Namespaces,
    /// Nodes and Services have none.
    pub fn has_generation(&self) -> bool {
        const WITH_GENERATION: &[(&str, &str)] = &[
            ("", "pods"),
            ("", "podtemplates"),
            ("", "replicationcontrollers"),
            ("apps", "daemonsets"),
            ("apps", "deployments"),
            ("apps", "replicasets"),
            ("apps", "statefulsets"),
            ("autoscaling", "horizontalpodautoscalers"),
            ("batch", "cronjobs"),
            ("batch", "jobs"),
            ("discovery.k8s.io", "endpointslices"),
            ("networking.k8s.io", "ingressclasses"),
            ("networking.k8s.io", "ingresses"),
            ("networking.k8s.io", "networkpolicies"),
            ("policy", "poddisruptionbudgets"),
            ("scheduling.k8s.io", "priorityclasses"),
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            (
                "admissionregistration.k8s.io",
                "mutatingwebhookconfigurations",
            ),
            (
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
            ),
            (
                "admissionregistration.k8s.io",
                "validatingadmissionpolicies",
            ),
            (
                "admissionregistration.k8s.io",
                "validatingadmissionpolicybindings",
            ),
            ("flowcontrol.apiserver.k8s.io", "flowschemas"),
            (
                "flowcontrol.apiserver.k8s.io",
                "prioritylevelconfigurations",
            ),
            ("resource.k8s.io", "deviceclasses"),
            ("resource.k8s.io", "resourceslices"),
        ];
        self.custom
            || WITH_GENERATION
                .iter()
                .any(|(group, plural)| self.id.group == *group && self.id.plural == *plural)
    }

    /// Whether a DELETE that removes the object at once answers with the
    /// object (`ReturnDeletedObject` in the type's registry,
    /// `pkg/registry/*/storage/storage.go`: Pods, Services, Namespaces,
    /// ...) rather than a `Status` of `Success`, as it does for
    /// ConfigMaps, Secrets, Leases, Nodes, Deployments and custom resources.
    pub fn returns_deleted_object(&self) -> bool {
        const RETURNING: &[(&str, &str)] = &[
            ("", "namespaces"),
            ("", "persistentvolumeclaims"),
            ("", "persistentvolumes"),
            ("", "pods"),
            ("", "podtemplates"),
            ("", "resourcequotas"),
            ("", "serviceaccounts"),
            ("", "services"),
            ("storage.k8s.io", "csidrivers"),
            ("storage.k8s.io", "csinodes"),
            ("storage.k8s.io", "storageclasses"),
            ("storage.k8s.io", "volumeattachments"),
            ("storage.k8s.io", "volumeattributesclasses"),
        ];
        !self.custom
            && (self.id.group == "resource.k8s.io"
                || RETURNING
                    .iter()
                    .any(|(group, plural)| self.id.group == *group && self.id.plural == *plural))
    }

    /// The fields a `fieldSelector` may name for this type, and how
    /// kube-apiserver refuses another: its field label conversion
    /// (`pkg/apis/core/v1/conversion.go`; the default one,
    /// `runtime.DefaultMetaV1FieldSelectorConversion`, takes the name and
    /// namespace only). `None`: any field (a type the stand-in does not
    /// know; kube-apiserver would be stricter).
    pub fn field_selector_check(&self, field: &str) -> Option<Result<(), String>> {
        const POD: &[&str] = &[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
            "spec.host",
        ];
        const EVENT: &[&str] = &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "metadata.namespace",
            "metadata.name",
        ];
        let special: Option<&[&str]> = match (self.id.group.as_str(), self.id.plural.as_str()) {
            ("", "pods") => Some(POD),
            ("", "nodes") => Some(&["metadata.name", "spec.unschedulable"]),
            ("", "events") => Some(EVENT),
            ("", "namespaces") => Some(&["status.phase", "metadata.name"]),
            ("", "secrets") => Some(&["type", "metadata.namespace", "metadata.name"]),
            ("", "services") => Some(&[
                "metadata.namespace",
                "metadata.name",
                "spec.clusterIP",
                "spec.type",
            ]),
            ("", "replicationcontrollers") => {
                Some(&["metadata.name", "metadata.namespace", "status.replicas"])
            }
            // Custom resources: the name and namespace (and a CRD's
            // selectableFields, which the stand-in does not read).
            _ if self.custom => Some(&["metadata.name", "metadata.namespace"]),
            ("", _) | ("apps" | "coordination.k8s.io", _) => None,
            _ => return None,
        };
        Some(match special {
            Some(allowed) if allowed.contains(&field) => Ok(()),
            Some(_) => Err(format!("field label not supported: {field}")),
            None if matches!(field, "metadata.name" | "metadata.namespace") => Ok(()),
            None => Err(format!(
                "\"{field}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
            )),
        })
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
    /// core v1 namespaces, nodes and persistentvolumes (cluster), pods,
    /// configmaps, secrets, services, events, persistentvolumeclaims,
    /// replicationcontrollers, serviceaccounts; `coordination.k8s.io/v1`
    /// leases; `events.k8s.io/v1` events; `apps/v1` deployments,
    /// daemonsets, replicasets, statefulsets; `batch/v1` jobs;
    /// `storage.k8s.io/v1` storageclasses, volumeattachments, csinodes and
    /// csidrivers (cluster); `scheduling.k8s.io/v1` priorityclasses
    /// (cluster); `rbac.authorization.k8s.io/v1` roles and
    /// rolebindings, clusterroles and clusterrolebindings (cluster; stored,
    /// not enforced: see [`crate::FakeApi::enforce_rbac`]);
    /// `velero.io/v1` backups,
    /// podvolumebackups, podvolumerestores, restores, schedules;
    /// `velero.io/v2alpha1` datauploads, datadownloads; `cluster.x-k8s.io/v1beta1`
    /// machines, clusters, machinedeployments, machinesets;
    /// `controlplane.cluster.x-k8s.io/v1beta1` kubeadmcontrolplanes;
    /// `infrastructure.cluster.x-k8s.io/v1beta1` vsphereclusters, vspherevms,
    /// vspheremachinetemplates. Namespaces, nodes, pods, services,
    /// persistent volumes and claims, replication controllers, the
    /// workload kinds of `apps` and `batch`, volume attachments and the
    /// Cluster API and CAPV kinds (but
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
            ResourceInfo::namespaced("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims")
                .with_status_subresource(true),
            ResourceInfo::cluster("", "v1", "PersistentVolume", "persistentvolumes")
                .with_status_subresource(true),
            ResourceInfo::namespaced("", "v1", "ReplicationController", "replicationcontrollers")
                .with_status_subresource(true),
            ResourceInfo::namespaced("", "v1", "ServiceAccount", "serviceaccounts"),
            ResourceInfo::namespaced("apps", "v1", "Deployment", "deployments")
                .with_status_subresource(true),
            ResourceInfo::namespaced("apps", "v1", "DaemonSet", "daemonsets")
                .with_status_subresource(true),
            ResourceInfo::namespaced("apps", "v1", "ReplicaSet", "replicasets")
                .with_status_subresource(true),
            ResourceInfo::namespaced("apps", "v1", "StatefulSet", "statefulsets")
                .with_status_subresource(true),
            ResourceInfo::namespaced("batch", "v1", "Job", "jobs").with_status_subresource(true),
            ResourceInfo::cluster("storage.k8s.io", "v1", "StorageClass", "storageclasses"),
            ResourceInfo::cluster(
                "storage.k8s.io",
                "v1",
                "VolumeAttachment",
                "volumeattachments",
            )
            .with_status_subresource(true),
            ResourceInfo::cluster("storage.k8s.io", "v1", "CSINode", "csinodes"),
            ResourceInfo::cluster("storage.k8s.io", "v1", "CSIDriver", "csidrivers"),
            ResourceInfo::cluster(
                "scheduling.k8s.io",
                "v1",
                "PriorityClass",
                "priorityclasses",
            ),
            ResourceInfo::namespaced("rbac.authorization.k8s.io", "v1", "Role", "roles"),
            ResourceInfo::namespaced(
                "rbac.authorization.k8s.io",
                "v1",
                "RoleBinding",
                "rolebindings",
            ),
            ResourceInfo::cluster(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRole",
                "clusterroles",
            ),
            ResourceInfo::cluster(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRoleBinding",
                "clusterrolebindings",
            ),
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
