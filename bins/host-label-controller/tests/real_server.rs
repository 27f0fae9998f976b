//! The built binary on the real kube-apiserver (the test bed), as users
//! deploy it: the generated manifests applied with kubectl (all but the
//! Deployment: the bed has no kubelet), Cluster API's own CRDs, and the
//! binary run with the Deployment's arguments and environment under its
//! ServiceAccount's token, so that the real RBAC authorizer judges every
//! request. Each test ends with SIGTERM and expects exit 0.
//!
//! Nodes are cluster-wide and the tests on the shared bed run at once, so
//! each test names its Nodes after its namespace and manages a label key
//! and annotation of its own (`--label-key`, `--managed-annotation`): a
//! controller never touches keys it does not manage. The management and
//! workload split runs on two beds of its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use host_label_controller::manifests::{DEFAULT_IMAGE, Features, render_with};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Secret};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube_testbed::Testbed;
use kube_testbed::deploy::{self, ControllerProcess, Deployed, Launch, Pod, metric, seen};
use serde_json::json;

const BINARY: &str = env!("CARGO_BIN_EXE_host-label-controller");
const POD: Pod<'static> = Pod {
    name: "host-label-controller-7b6c5d9f8-q4w2e",
    node: "node-1",
};
/// The Machine label CAPV writes the ESXi host to.
const CAPV_KEY: &str = "node.cluster.x-k8s.io/esxi-host";
const STATUS_CONFIGMAP: &str = "host-label-controller-status";

async fn start_bed(builder: kube_testbed::Builder) -> Testbed {
    builder
        .start()
        .await
        .unwrap_or_else(|e| panic!("the test bed did not start: {e}"))
}

/// Cluster API's CRDs `files` (`cluster.x-k8s.io_machines.yaml`, ...), as
/// the bed copied them from Cluster API's module.
fn capi_crds(bed: &Testbed, files: &[&str]) -> Vec<PathBuf> {
    let dir = bed
        .layout()
        .crds("cluster-api", &bed.versions().cluster_api)
        .unwrap();
    files.iter().map(|file| dir.join(file)).collect()
}

/// The controller's namespace with its manifests, and the label key and
/// annotation this test manages.
struct Site {
    namespace: String,
    label: String,
    annotation: String,
    deployed: Deployed,
    manifests: String,
    client: kube::Client,
}

async fn site(bed: &Testbed, prefix: &str, features: Features) -> Site {
    let namespace = bed.namespace(prefix).await.unwrap();
    site_in(bed, namespace, features).await
}

/// [`site`] in the existing namespace `namespace`.
async fn site_in(bed: &Testbed, namespace: String, features: Features) -> Site {
    let manifests = render_with(&namespace, DEFAULT_IMAGE, features).unwrap();
    let deployed = deploy::deploy_manifests(bed, &manifests, Some(&namespace))
        .await
        .unwrap();
    Site {
        label: format!("test.placement-policies.io/host-{namespace}"),
        annotation: format!("test.placement-policies.io/managed-{namespace}"),
        namespace,
        deployed,
        manifests,
        client: bed.client(),
    }
}

impl Site {
    /// The controller as the Deployment runs it, managing this test's key.
    async fn launch(&self, bed: &Testbed) -> Launch {
        self.deployed
            .launch(bed, Path::new(BINARY), &POD)
            .await
            .unwrap()
            .arg("--label-key", &self.label)
            .arg("--managed-annotation", &self.annotation)
    }

    fn node_name(&self, n: usize) -> String {
        format!("{}-n{n}", self.namespace)
    }

    /// Creates Node `name` (as a kubelet registers it) with `labels`.
    async fn create_node(&self, name: &str, labels: &[(&str, &str)]) {
        let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
        let node: Node =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
        Api::<Node>::all(self.client.clone())
            .create(&PostParams::default(), &node)
            .await
            .unwrap();
    }

    async fn labels(&self, node: &str) -> BTreeMap<String, String> {
        Api::<Node>::all(self.client.clone())
            .get(node)
            .await
            .unwrap()
            .metadata
            .labels
            .unwrap_or_default()
    }

    async fn host(&self, node: &str) -> Option<String> {
        self.labels(node).await.get(&self.label).cloned()
    }

    async fn until_host(&self, controller: &ControllerProcess, node: &str, host: &str) {
        controller
            .until(
                &format!("{node} labelled {host}"),
                Duration::from_secs(60),
                || async {
                    let labels = self.labels(node).await;
                    seen(
                        labels.get(&self.label).map(String::as_str) == Some(host),
                        labels,
                    )
                },
            )
            .await;
    }

    fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }
}

/// A HostInventory placing each of `vms` on its host.
fn inventory(vms: &[(&str, &str)]) -> String {
    let mut hosts: Vec<&str> = vms.iter().map(|(_, host)| *host).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let mut doc = String::from("apiVersion: policyctl/v1alpha1\nkind: HostInventory\nhosts:\n");
    for host in hosts {
        doc.push_str(&format!("- name: {host}\n"));
    }
    doc.push_str("vms:\n");
    for (vm, host) in vms {
        doc.push_str(&format!("- name: {vm}\n  group: web\n  host: {host}\n"));
    }
    doc
}

async fn inventory_site(bed: &Testbed, prefix: &str) -> (Site, String, String) {
    let site = site(bed, prefix, Features::default()).await;
    let (n1, n2) = (site.node_name(1), site.node_name(2));
    site.create_node(&n1, &[("team", "a")]).await;
    site.create_node(&n2, &[]).await;
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "hosts"},
        "data": {"inventory.yaml": inventory(&[(&n1, "esx-a"), (&n2, "esx-b")])},
    }))
    .unwrap();
    site.config_maps()
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    (site, n1, n2)
}

#[tokio::test]
async fn labels_nodes_from_an_inventory_and_follows_its_edits() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    let (site, n1, n2) = inventory_site(bed, "hlc-inventory").await;
    let controller = site
        .launch(bed)
        .await
        .arg(
            "--inventory-configmap",
            &format!("{}/hosts", site.namespace),
        )
        .spawn()
        .unwrap();
    site.until_host(&controller, &n1, "esx-a").await;
    site.until_host(&controller, &n2, "esx-b").await;
    assert_eq!(site.labels(&n1).await["team"], "a", "a foreign label");

    // A vMotion recorded in the inventory.
    let edit = |vms: &[(&str, &str)]| json!({"data": {"inventory.yaml": inventory(vms)}});
    site.config_maps()
        .patch(
            "hosts",
            &PatchParams::default(),
            &Patch::Merge(edit(&[(&n1, "esx-b"), (&n2, "esx-b")])),
        )
        .await
        .unwrap();
    site.until_host(&controller, &n1, "esx-b").await;
    controller
        .until("the status summary", Duration::from_secs(30), || async {
            let status = site.config_maps().get_opt(STATUS_CONFIGMAP).await.unwrap();
            seen(
                status.as_ref().is_some_and(|cm| {
                    cm.data
                        .as_ref()
                        .is_some_and(|d| d.contains_key("summary.json"))
                }),
                status,
            )
        })
        .await;

    // A broken edit keeps the last good inventory.
    site.config_maps()
        .patch(
            "hosts",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"inventory.yaml": "vms: ["}})),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(site.host(&n1).await.as_deref(), Some("esx-b"));
    let annotations = Api::<Node>::all(bed.client())
        .get(&n1)
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap_or_default();
    assert!(
        annotations
            .get(&site.annotation)
            .is_some_and(|keys| keys.contains(&site.label)),
        "{annotations:?}"
    );
    assert_eq!(site.labels(&n1).await["team"], "a", "a foreign label");
    let node = Api::<Node>::all(bed.client()).get(&n1).await.unwrap();
    assert!(
        node.metadata
            .managed_fields
            .iter()
            .flatten()
            .any(|entry| entry.manager.as_deref() == Some("host-label-controller")),
        "the label is written under the controller's field manager: {:?}",
        node.metadata.managed_fields
    );
    controller.stop_cleanly().await;
}

#[tokio::test]
async fn dry_run_plans_and_writes_nothing() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    let (site, n1, n2) = inventory_site(bed, "hlc-dry").await;
    let controller = site
        .launch(bed)
        .await
        .arg(
            "--inventory-configmap",
            &format!("{}/hosts", site.namespace),
        )
        .switch("--dry-run")
        .spawn()
        .unwrap();
    controller
        .until("planned patches", Duration::from_secs(30), || async {
            let planned = match controller.http_get("/metrics").await {
                Ok((200, body)) => metric(&body, "host_label_controller_node_patches_total"),
                _ => 0.0,
            };
            seen(planned >= 2.0, planned)
        })
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    controller.stop_cleanly().await;
    // (kube-controller-manager's TTL controller annotates Nodes too, so
    // their resourceVersions say nothing: look for this controller's
    // fields.)
    for node in [&n1, &n2] {
        let node = Api::<Node>::all(bed.client()).get(node).await.unwrap();
        let managers: Vec<String> = node
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|entry| entry.manager.clone())
            .collect();
        assert!(
            !managers.iter().any(|m| m == "host-label-controller"),
            "dry run wrote {:?}: {managers:?}",
            node.metadata.name
        );
        assert!(
            !node
                .metadata
                .labels
                .unwrap_or_default()
                .contains_key(&site.label)
        );
        assert!(
            !node
                .metadata
                .annotations
                .unwrap_or_default()
                .contains_key(&site.annotation)
        );
    }
    assert!(
        site.config_maps()
            .get_opt(STATUS_CONFIGMAP)
            .await
            .unwrap()
            .is_none(),
        "dry run wrote the status ConfigMap"
    );
}

/// Machines as Cluster API 1.14 writes them: `v1beta2` (its storage
/// version), the status through the status subresource.
struct Machines {
    client: kube::Client,
}

/// Cluster API's `v1beta2` of `kind` (plural `plural`).
fn capi_v1beta2(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "cluster.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "cluster.x-k8s.io/v1beta2".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

impl Machines {
    fn new(client: kube::Client) -> Machines {
        Machines { client }
    }

    fn api(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.client.clone(),
            namespace,
            &capi_v1beta2("Machine", "machines"),
        )
    }

    async fn create(&self, namespace: &str, name: &str, cluster: &str, node: &str, host: &str) {
        let api = self.api(namespace);
        let machine: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": name, "labels": {
                CAPV_KEY: host, "cluster.x-k8s.io/cluster-name": cluster,
            }},
            "spec": {
                "clusterName": cluster,
                "bootstrap": {"dataSecretName": format!("{name}-bootstrap")},
                "infrastructureRef": {
                    "apiGroup": "infrastructure.cluster.x-k8s.io",
                    "kind": "VSphereMachine",
                    "name": name,
                },
            },
        }))
        .unwrap();
        api.create(&PostParams::default(), &machine).await.unwrap();
        api.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"nodeRef": {"name": node}, "phase": "Running"}})),
        )
        .await
        .unwrap();
    }

    /// CAPV records a vMotion on the Machine's label.
    async fn move_to(&self, namespace: &str, name: &str, host: &str) {
        self.api(namespace)
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {CAPV_KEY: host}}})),
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn labels_nodes_from_cluster_api_machines_and_follows_a_vmotion() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    bed.install_crd_files(&capi_crds(bed, &["cluster.x-k8s.io_machines.yaml"]))
        .await
        .unwrap();
    let site = site(bed, "hlc-machines", Features::default()).await;
    let (n1, n2) = (site.node_name(1), site.node_name(2));
    site.create_node(&n1, &[]).await;
    site.create_node(&n2, &[]).await;
    let machines = Machines::new(bed.client());
    machines
        .create(&site.namespace, "m1", "c1", &n1, "esx-01.lab")
        .await;
    let controller = site.launch(bed).await.spawn().unwrap();
    site.until_host(&controller, &n1, "esx-01.lab").await;

    // A vMotion, and a Machine whose Node registers later.
    machines.move_to(&site.namespace, "m1", "esx-02.lab").await;
    machines
        .create(&site.namespace, "m2", "c1", &n2, "esx-03.lab")
        .await;
    site.until_host(&controller, &n1, "esx-02.lab").await;
    site.until_host(&controller, &n2, "esx-03.lab").await;
    controller.stop_cleanly().await;
}

/// The requests `user` made according to the audit log: none refused, and
/// every grant of the generated rules used or explained in `unexercised`.
fn check_audit(log: &Path, user: &str, manifests: &str, unexercised: &[(&str, &str)], what: &str) {
    let requests = deploy::audited_requests(log, user).unwrap();
    assert!(!requests.is_empty(), "no request by {user} was audited");
    let refused: Vec<_> = requests.iter().filter(|r| r.code == 403).collect();
    assert!(
        refused.is_empty(),
        "{what}: the generated RBAC refused: {refused:#?}"
    );
    deploy::assert_least_privilege(manifests, &requests, unexercised, what);
}

async fn audited_bed(dir: &Path) -> (Testbed, PathBuf) {
    let (args, log) = deploy::audit_args(dir).unwrap();
    (
        start_bed(Testbed::builder().apiserver_args(args)).await,
        log,
    )
}

#[tokio::test]
async fn machines_in_a_management_cluster_label_the_nodes_of_its_workload_clusters() {
    if kube_testbed::skip_requested() {
        return;
    }
    // Two API servers: Cluster API's objects in one, the Nodes in the
    // other.
    let (management_dir, workload_dir) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ((management, management_log), (workload, workload_log)) = tokio::join!(
        audited_bed(management_dir.path()),
        audited_bed(workload_dir.path())
    );
    management
        .install_crd_files(&capi_crds(
            &management,
            &[
                "cluster.x-k8s.io_machines.yaml",
                "cluster.x-k8s.io_clusters.yaml",
            ],
        ))
        .await
        .unwrap();

    // The management cluster: the controller deployed with
    // `--all-clusters`.
    let all_clusters = Features {
        all_clusters: true,
        ..Features::default()
    };
    let on_management = site(&management, "hlc-management", all_clusters).await;

    // The workload cluster: its Nodes, and the controller's ServiceAccount
    // and RBAC there, in a namespace of the same name (the other
    // deployment of the split below runs there), which its kubeconfig
    // Secret authenticates as.
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": on_management.namespace}})).unwrap();
    Api::<Namespace>::all(workload.client())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let on_workload = site_in(
        &workload,
        on_management.namespace.clone(),
        Features::default(),
    )
    .await;
    let node = "worker-0";
    on_workload.create_node(node, &[]).await;
    let workload_kubeconfig = workload
        .service_account_kubeconfig(&on_workload.namespace, "host-label-controller")
        .await
        .unwrap();

    // Cluster API's objects: a Cluster, its Machine, and the Cluster's
    // kubeconfig Secret as Cluster API writes it.
    let capi = management.namespace("capi").await.unwrap();
    let clusters: Api<DynamicObject> = Api::namespaced_with(
        management.client(),
        &capi,
        &capi_v1beta2("Cluster", "clusters"),
    );
    let cluster: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": "c1"},
        "spec": {
            "controlPlaneEndpoint": {"host": "10.0.0.10", "port": 6443},
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "VSphereCluster",
                "name": "c1",
            },
        },
    }))
    .unwrap();
    clusters
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
    let mut secret = Secret::default();
    secret.metadata.name = Some("c1-kubeconfig".into());
    secret.metadata.labels = Some(BTreeMap::from([(
        "cluster.x-k8s.io/cluster-name".to_owned(),
        "c1".to_owned(),
    )]));
    secret.type_ = Some("cluster.x-k8s.io/secret".into());
    secret.data = Some(BTreeMap::from([(
        "value".to_owned(),
        ByteString(std::fs::read(&workload_kubeconfig).unwrap()),
    )]));
    Api::<Secret>::namespaced(management.client(), &capi)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let machines = Machines::new(management.client());
    machines
        .create(&capi, "c1-md-0", "c1", node, "esx-01.lab")
        .await;

    let controller = on_management.launch(&management).await.spawn().unwrap();
    on_workload
        .until_host(&controller, node, "esx-01.lab")
        .await;
    machines.move_to(&capi, "c1-md-0", "esx-02.lab").await;
    on_workload
        .until_host(&controller, node, "esx-02.lab")
        .await;
    // The summary of the workload cluster's Nodes, in the management
    // cluster: its entry in the controller's status ConfigMap there.
    let status_key = format!("{capi}_c1.summary.json");
    controller
        .until(
            "the workload cluster's summary",
            Duration::from_secs(30),
            || async {
                let status = on_management
                    .config_maps()
                    .get_opt(STATUS_CONFIGMAP)
                    .await
                    .unwrap();
                let data = status.and_then(|cm| cm.data).unwrap_or_default();
                seen(
                    data.contains_key(&status_key),
                    data.keys().cloned().collect::<Vec<_>>(),
                )
            },
        )
        .await;
    assert!(
        on_workload
            .config_maps()
            .get_opt(STATUS_CONFIGMAP)
            .await
            .unwrap()
            .is_none(),
        "--all-clusters writes nothing into the workload cluster's namespaces"
    );
    // The management cluster has no such Node: nothing was written there.
    assert!(
        Api::<Node>::all(management.client())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    controller.stop_cleanly().await;

    // The other deployment of the split: the controller in the workload
    // cluster, reading its own Cluster's Machines through a management
    // kubeconfig. Another Cluster's Machine naming a Node of the same
    // name never labels it.
    machines
        .create(&capi, "c2-md-0", "c2", node, "esx-99.lab")
        .await;
    let management_kubeconfig = management
        .service_account_kubeconfig(&on_management.namespace, "host-label-controller")
        .await
        .unwrap();
    let in_workload = on_workload
        .launch(&workload)
        .await
        .arg(
            "--machines-kubeconfig",
            &management_kubeconfig.display().to_string(),
        )
        .arg("--cluster", &format!("{capi}/c1"))
        .spawn()
        .unwrap();
    machines.move_to(&capi, "c1-md-0", "esx-03.lab").await;
    on_workload
        .until_host(&in_workload, node, "esx-03.lab")
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(on_workload.host(node).await.as_deref(), Some("esx-03.lab"));
    in_workload.stop_cleanly().await;

    check_audit(
        &management_log,
        &format!(
            "system:serviceaccount:{}:host-label-controller",
            on_management.namespace
        ),
        &on_management.manifests,
        &[(
            "create core/configmaps",
            "the status ConfigMap is created by server-side apply, which the authorizer checks as create and the audit log records as patch",
        )],
        "management cluster (--all-clusters)",
    );
    check_audit(
        &workload_log,
        &format!(
            "system:serviceaccount:{}:host-label-controller",
            on_workload.namespace
        ),
        &on_workload.manifests,
        &[
            (
                "create core/configmaps",
                "the status ConfigMap is created by server-side apply, which the authorizer checks as create and the audit log records as patch",
            ),
            (
                "get core/configmaps",
                "the inventory source; this run reads Machines",
            ),
            (
                "patch core/configmaps",
                "the status ConfigMap; with --all-clusters it is in the management cluster",
            ),
            (
                "list core/configmaps",
                "the inventory source; this run reads Machines",
            ),
            (
                "watch core/configmaps",
                "the inventory source; this run reads Machines",
            ),
            (
                "get core/nodes",
                "re-reads a Node after a 409; no conflict in this run",
            ),
            (
                "list cluster.x-k8s.io/machines",
                "this deployment reads Machines through --machines-kubeconfig; the same manifests serve a controller beside its Machines",
            ),
            (
                "watch cluster.x-k8s.io/machines",
                "this deployment reads Machines through --machines-kubeconfig; the same manifests serve a controller beside its Machines",
            ),
            (
                "create events.k8s.io/events",
                "Events report shared hosts and unlabelled Nodes; this run has neither",
            ),
            (
                "patch events.k8s.io/events",
                "Events report shared hosts and unlabelled Nodes; this run has neither",
            ),
        ],
        "workload cluster",
    );
}

/// The workload cluster's kubeconfig Secret of Cluster `c1` in `capi`, as
/// Cluster API writes it, holding `kubeconfig`.
fn kubeconfig_secret(kubeconfig: &[u8]) -> Secret {
    let mut secret = Secret::default();
    secret.metadata.name = Some("c1-kubeconfig".into());
    secret.metadata.labels = Some(BTreeMap::from([(
        "cluster.x-k8s.io/cluster-name".to_owned(),
        "c1".to_owned(),
    )]));
    secret.type_ = Some("cluster.x-k8s.io/secret".into());
    secret.data = Some(BTreeMap::from([(
        "value".to_owned(),
        ByteString(kubeconfig.to_vec()),
    )]));
    secret
}

/// Cluster `c1` in `namespace`, `v1beta2`.
async fn create_cluster(bed: &Testbed, namespace: &str) {
    let clusters: Api<DynamicObject> = Api::namespaced_with(
        bed.client(),
        namespace,
        &capi_v1beta2("Cluster", "clusters"),
    );
    let cluster: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": "c1"},
        "spec": {
            "controlPlaneEndpoint": {"host": "10.0.0.10", "port": 6443},
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "VSphereCluster",
                "name": "c1",
            },
        },
    }))
    .unwrap();
    clusters
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
}

/// The summed samples of the errors counter.
async fn reconcile_errors(controller: &ControllerProcess) -> f64 {
    match controller.http_get("/metrics").await {
        Ok((200, body)) => metric(&body, "host_label_controller_reconcile_errors_total"),
        other => panic!("no metrics: {other:?}"),
    }
}

/// `--all-clusters` beside Cluster API as it is usually deployed: the
/// controller's namespace exists only in the management cluster (its
/// workload identity lives in another namespace there), and the workload
/// cluster's credentials are rotated — the Secret changes, then the old
/// token is revoked (its ServiceAccount deleted). The status goes into the
/// management cluster, one entry per workload cluster, so no pass fails and
/// a Machine move shows on the Node within 5 s; after the rotation the
/// labels still follow the Machine.
#[tokio::test]
async fn all_clusters_keeps_status_in_the_management_cluster_and_follows_rotated_credentials() {
    if kube_testbed::skip_requested() {
        return;
    }
    let (management, workload) =
        tokio::join!(start_bed(Testbed::builder()), start_bed(Testbed::builder()));
    management
        .install_crd_files(&capi_crds(
            &management,
            &[
                "cluster.x-k8s.io_machines.yaml",
                "cluster.x-k8s.io_clusters.yaml",
            ],
        ))
        .await
        .unwrap();
    let all_clusters = Features {
        all_clusters: true,
        ..Features::default()
    };
    let on_management = site(&management, "hlc-fleet", all_clusters).await;

    // Two identities in the workload cluster, in namespaces of their own
    // (none is the controller's management namespace): the first one's
    // token is the Secret's until the rotation.
    let (first, second) = (
        site(&workload, "hlc-agent-a", Features::default()).await,
        site(&workload, "hlc-agent-b", Features::default()).await,
    );
    assert!(
        Api::<Namespace>::all(workload.client())
            .get_opt(&on_management.namespace)
            .await
            .unwrap()
            .is_none(),
        "the controller's namespace must not exist in the workload cluster"
    );
    let kubeconfig_of = |site: &Site| {
        let (bed, namespace) = (&workload, site.namespace.clone());
        async move {
            let path = bed
                .service_account_kubeconfig(&namespace, "host-label-controller")
                .await
                .unwrap();
            std::fs::read(path).unwrap()
        }
    };
    let node = "worker-0";
    first.create_node(node, &[]).await;
    let first_kubeconfig = kubeconfig_of(&first).await;

    let capi = management.namespace("capi").await.unwrap();
    create_cluster(&management, &capi).await;
    let secrets: Api<Secret> = Api::namespaced(management.client(), &capi);
    secrets
        .create(
            &PostParams::default(),
            &kubeconfig_secret(&first_kubeconfig),
        )
        .await
        .unwrap();
    let machines = Machines::new(management.client());
    machines
        .create(&capi, "c1-md-0", "c1", node, "esx-01.lab")
        .await;

    let controller = on_management.launch(&management).await.spawn().unwrap();
    // The labels are in the workload cluster, under the key this test
    // manages (the site of the management namespace names it).
    let labelled = |host: &'static str| {
        let (workload, key) = (workload.client(), on_management.label.clone());
        move || {
            let (workload, key) = (workload.clone(), key.clone());
            async move {
                let labels = Api::<Node>::all(workload)
                    .get(node)
                    .await
                    .unwrap()
                    .metadata
                    .labels
                    .unwrap_or_default();
                seen(labels.get(&key).map(String::as_str) == Some(host), labels)
            }
        }
    };
    controller
        .until(
            "the first label",
            Duration::from_secs(60),
            labelled("esx-01.lab"),
        )
        .await;
    // Long enough for a failing status write to have backed off several
    // times.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let moved = std::time::Instant::now();
    machines.move_to(&capi, "c1-md-0", "esx-02.lab").await;
    controller
        .until("the move", Duration::from_secs(60), labelled("esx-02.lab"))
        .await;
    let latency = moved.elapsed();
    assert!(
        latency < Duration::from_secs(5),
        "label latency {latency:?}"
    );
    assert_eq!(reconcile_errors(&controller).await, 0.0);

    // The status: in the management cluster, the workload cluster's entry.
    let status_key = format!("{capi}_c1.summary.json");
    controller
        .until("the status entry", Duration::from_secs(30), || async {
            let status = on_management
                .config_maps()
                .get_opt(STATUS_CONFIGMAP)
                .await
                .unwrap();
            let data = status.and_then(|cm| cm.data).unwrap_or_default();
            seen(
                data.contains_key(&status_key),
                data.keys().cloned().collect::<Vec<_>>(),
            )
        })
        .await;
    let (code, body) = controller.http_get("/metrics").await.unwrap();
    assert_eq!(code, 200);
    assert!(
        body.contains(&format!(
            "host_label_controller_unlabelled_nodes{{cluster=\"{capi}/c1\"}} 0"
        )),
        "{body}"
    );

    // The rotation: the Secret names the second identity, then the first
    // one's token is revoked.
    secrets
        .patch(
            "c1-kubeconfig",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"value": ByteString(kubeconfig_of(&second).await)}})),
        )
        .await
        .unwrap();
    Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(
        workload.client(),
        &first.namespace,
    )
    .delete("host-label-controller", &Default::default())
    .await
    .unwrap();
    let old = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(std::str::from_utf8(&first_kubeconfig).unwrap())
            .unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let old = Api::<Node>::all(kube::Client::try_from(old).unwrap());
    controller
        .until("the old token refused", Duration::from_secs(30), || async {
            let answer = old.get(node).await.map(|_| ()).map_err(|e| e.to_string());
            seen(
                matches!(&answer, Err(e) if e.contains("401") || e.contains("Unauthorized")),
                answer,
            )
        })
        .await;
    machines.move_to(&capi, "c1-md-0", "esx-03.lab").await;
    controller
        .until(
            "the move after the rotation",
            Duration::from_secs(30),
            labelled("esx-03.lab"),
        )
        .await;
    controller.stop_cleanly().await;
}

/// Cluster API's Machine → Node sync as its machine controller's
/// `patchNode` (v1.14) does it, with `--additional-sync-machine-labels
/// ^other\.example/`: the labels in its domains (`node-role.kubernetes.io`
/// exactly, `node-restriction.kubernetes.io` and `node.cluster.x-k8s.io`
/// and their subdomains) or matching the expression are set on the Node,
/// keys recorded in `cluster.x-k8s.io/labels-from-machine` that are no
/// longer wanted are removed, and the annotation is rewritten (sorted,
/// comma-joined); the Machine's bookkeeping annotations
/// (`cluster.x-k8s.io/cluster-name`, `…/cluster-namespace`, `…/machine`)
/// are set and `cluster.x-k8s.io/annotations-from-machine` records the
/// others (none here). A merge patch conditioned on the resourceVersion,
/// as field manager `manager` (the name controller-runtime gives Cluster
/// API's binary), only when something changes. Returns whether it patched.
async fn capi_patch_node(
    client: &kube::Client,
    namespace: &str,
    machine: &str,
    node: &str,
) -> bool {
    const LABELS_FROM_MACHINE: &str = "cluster.x-k8s.io/labels-from-machine";
    let machine = Machines::new(client.clone())
        .api(namespace)
        .get(machine)
        .await
        .unwrap();
    let nodes: Api<Node> = Api::all(client.clone());
    let current = nodes.get(node).await.unwrap();
    let in_domain =
        |domain: &str, parent: &str| domain == parent || domain.ends_with(&format!(".{parent}"));
    let wanted: BTreeMap<String, String> = machine
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(key, _)| {
            let domain = key.split('/').next().unwrap_or_default();
            domain == "node-role.kubernetes.io"
                || in_domain(domain, "node-restriction.kubernetes.io")
                || in_domain(domain, "node.cluster.x-k8s.io")
                || key.starts_with("other.example/")
        })
        .collect();
    let labels = current.metadata.labels.clone().unwrap_or_default();
    let annotations = current.metadata.annotations.clone().unwrap_or_default();
    let mut label_patch = serde_json::Map::new();
    for (key, value) in &wanted {
        if labels.get(key) != Some(value) {
            label_patch.insert(key.clone(), json!(value));
        }
    }
    for key in annotations
        .get(LABELS_FROM_MACHINE)
        .map(String::as_str)
        .unwrap_or_default()
        .split(',')
        .filter(|key| !key.is_empty())
    {
        if !wanted.contains_key(key) && labels.contains_key(key) {
            label_patch.insert(key.to_owned(), serde_json::Value::Null);
        }
    }
    let recorded = wanted.keys().cloned().collect::<Vec<_>>().join(",");
    let mut annotation_patch = serde_json::Map::new();
    for (key, value) in [
        (LABELS_FROM_MACHINE, recorded.as_str()),
        ("cluster.x-k8s.io/annotations-from-machine", ""),
        ("cluster.x-k8s.io/cluster-name", "c1"),
        ("cluster.x-k8s.io/cluster-namespace", namespace),
        (
            "cluster.x-k8s.io/machine",
            machine.metadata.name.as_deref().unwrap_or_default(),
        ),
    ] {
        if annotations.get(key).map(String::as_str) != Some(value) {
            annotation_patch.insert(key.to_owned(), json!(value));
        }
    }
    if label_patch.is_empty() && annotation_patch.is_empty() {
        return false;
    }
    let patch = json!({"metadata": {
        "resourceVersion": current.metadata.resource_version,
        "labels": label_patch,
        "annotations": annotation_patch,
    }});
    let params = PatchParams {
        field_manager: Some("manager".into()),
        ..PatchParams::default()
    };
    // A 409 is Cluster API's requeue: the next round reads again.
    nodes
        .patch(node, &params, &Patch::Merge(patch))
        .await
        .is_ok()
}

/// `--sync-machine-labels` with an expression other than Cluster API's,
/// while a Cluster API-style `patchNode` syncs the same Machine to the same
/// Node: the two would take each other's keys out of `labels-from-machine`
/// for ever. The controller leaves the Node's Machine labels to Cluster
/// API once Cluster API writes the annotation, so the Node's
/// resourceVersion settles, with Cluster API's labels and the host label.
#[tokio::test]
async fn machine_label_sync_settles_beside_cluster_apis_own() {
    if kube_testbed::skip_requested() {
        return;
    }
    // A bed of its own: this controller syncs every Machine's labels.
    let bed = start_bed(Testbed::builder()).await;
    bed.install_crd_files(&capi_crds(&bed, &["cluster.x-k8s.io_machines.yaml"]))
        .await
        .unwrap();
    let features = Features {
        sync_machine_labels: true,
        ..Features::default()
    };
    let site = site(&bed, "hlc-capi-sync", features).await;
    let node = site.node_name(1);
    site.create_node(&node, &[]).await;
    let machines = Machines::new(bed.client());
    machines
        .create(&site.namespace, "m1", "c1", &node, "esx-01.lab")
        .await;
    machines
        .api(&site.namespace)
        .patch(
            "m1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {
                "ours.example/tier": "gold",
                "other.example/zone": "z1",
                "node-role.kubernetes.io/worker": "",
            }}})),
        )
        .await
        .unwrap();
    let controller = site
        .launch(&bed)
        .await
        .arg("--additional-sync-machine-labels", "^ours\\.example/")
        .spawn()
        .unwrap();
    site.until_host(&controller, &node, "esx-01.lab").await;

    // Cluster API's machine controller, requeued every 200 ms.
    let capi = {
        let (client, namespace, node) = (bed.client(), site.namespace.clone(), node.clone());
        tokio::spawn(async move {
            loop {
                capi_patch_node(&client, &namespace, "m1", &node).await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    // Settled: the resourceVersion unchanged for 5 s.
    let nodes: Api<Node> = Api::all(bed.client());
    let resource_version = || async {
        nodes
            .get(&node)
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap_or_default()
    };
    let started = std::time::Instant::now();
    let mut last = (resource_version().await, std::time::Instant::now());
    let mut changes = 0;
    while last.1.elapsed() < Duration::from_secs(5) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the Node's resourceVersion never settled: {changes} changes; the controller's log:\n{}",
            controller.log_tail(40)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = resource_version().await;
        if now != last.0 {
            changes += 1;
            last = (now, std::time::Instant::now());
        }
    }
    capi.abort();
    let settled = nodes.get(&node).await.unwrap();
    let labels = settled.metadata.labels.unwrap_or_default();
    let annotations = settled.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations
            .get("cluster.x-k8s.io/labels-from-machine")
            .map(String::as_str),
        Some("node-role.kubernetes.io/worker,node.cluster.x-k8s.io/esxi-host,other.example/zone"),
        "Cluster API's bookkeeping"
    );
    assert_eq!(
        labels.get("other.example/zone").map(String::as_str),
        Some("z1")
    );
    assert_eq!(
        labels.get(&site.label).map(String::as_str),
        Some("esx-01.lab")
    );
    controller.stop_cleanly().await;
}
