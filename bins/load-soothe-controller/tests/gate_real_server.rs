//! The scheduling-gate queue on the real kube-apiserver (the test bed):
//! the webhook is registered with kube-apiserver (a
//! MutatingWebhookConfiguration whose URL is the webhook on loopback over
//! TLS, trusted through its `caBundle`), a data-mover simulation built like
//! Velero's DataUpload controller accepts each `New` load and creates its
//! mover pod in the same reconcile (L3.15), and the gate loop lifts the
//! gates. Nothing in the simulation knows about the queue.
//!
//! The simulation moves a load to `Prepared` once its pod may be scheduled
//! (no scheduling gate left: the bed has no kubelet to run it), and on to
//! `Completed` (dropping `velero.io/expose-on-going`, deleting the pod)
//! 300 ms later. A load still `Accepted` after Velero's prepare timeout
//! (here 30 s) is cancelled, as Velero's `onPrepareTimeout` does.
//!
//! One test runs the built binary instead, as the generated `pod-gates`
//! manifests deploy it: their RBAC and Service applied, the binary under
//! the ServiceAccount's token, and kube-apiserver reaching the webhook
//! through the generated Service, as in a cluster (see
//! [`the_binary_under_its_generated_pod_gates_rbac_gates_and_lifts_mover_pods`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use controller_kit::Shutdown;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube_testbed::Testbed;
use kube_testbed::deploy;
use load_soothe::{Limit, PREPARE_QUEUE_GATE};
use load_soothe_controller::gates::{self, GateKeeping, GateLoopConfig, LimitSource};
use load_soothe_controller::webhook::{self, WebhookEndpoint, WebhookServer, WebhookTls};
use serde_json::json;

fn load_crds(bed: &Testbed) -> Vec<PathBuf> {
    let dir = bed.layout().crds("velero", &bed.versions().velero).unwrap();
    [
        "velero.io_datauploads.yaml",
        "velero.io_datadownloads.yaml",
        "velero.io_podvolumebackups.yaml",
        "velero.io_podvolumerestores.yaml",
    ]
    .iter()
    .map(|file| dir.join(file))
    .collect()
}

fn uploads_resource() -> ApiResource {
    ApiResource {
        group: "velero.io".into(),
        version: "v2alpha1".into(),
        api_version: "velero.io/v2alpha1".into(),
        kind: "DataUpload".into(),
        plural: "datauploads".into(),
    }
}

fn phase(du: &DynamicObject) -> &str {
    du.data["status"]["phase"].as_str().unwrap_or("New")
}

fn gated(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| g.iter().any(|g| g.name == PREPARE_QUEUE_GATE))
}

fn mover_pod(du: &DynamicObject) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("{}-mover", du.name_any()),
            "labels": {
                "velero.io/data-upload": du.name_any(),
                "velero.io/exposer-pod-group": "snapshot-exposer",
            },
            "ownerReferences": [{
                "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
                "name": du.name_any(), "uid": du.uid().unwrap(), "controller": true,
            }],
        },
        "spec": {
            "containers": [{"name": "mover", "image": "velero/velero:v1.18.3"}],
            "restartPolicy": "Never",
        },
    }))
    .unwrap()
}

/// How long ago a load was accepted: by this simulation (its own clock),
/// else from `status.acceptedTimestamp` (whole seconds, as written).
fn accepted_since(du: &DynamicObject, accepted_at: &BTreeMap<String, Instant>) -> Option<Duration> {
    if let Some(at) = accepted_at.get(&du.name_any()) {
        return Some(at.elapsed());
    }
    let stamp: jiff::Timestamp = du.data["status"]["acceptedTimestamp"]
        .as_str()?
        .parse()
        .ok()?;
    let since = jiff::Timestamp::now().duration_since(stamp);
    Duration::try_from(since).ok()
}

/// One reconcile of every DataUpload, as Velero's DataUpload controller
/// orders it: `New` → accept and expose at once; `Accepted` → only the
/// prepare timeout (and `Prepared` once the pod may run); `Prepared` →
/// finish after 300 ms.
async fn mover_round(
    uploads: &Api<DynamicObject>,
    pods: &Api<Pod>,
    prepared_at: &mut BTreeMap<String, Instant>,
    accepted_at: &mut BTreeMap<String, Instant>,
    prepare_timeout: Duration,
) -> Vec<String> {
    let mut created_gated = Vec::new();
    let Ok(list) = uploads.list(&ListParams::default()).await else {
        return created_gated;
    };
    let pod_list = pods.list(&ListParams::default()).await.unwrap();
    let pod_of = |name: &str| {
        pod_list
            .items
            .iter()
            .find(|p| p.labels().get("velero.io/data-upload").map(String::as_str) == Some(name))
    };
    for du in &list.items {
        let name = du.name_any();
        match phase(du) {
            "New" => {
                let accept = json!({
                    "metadata": {
                        "resourceVersion": du.resource_version(),
                        "labels": {"velero.io/expose-on-going": "true"},
                    },
                    "status": {
                        "phase": "Accepted", "acceptedByNode": "node-1",
                        "acceptedTimestamp": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                    },
                });
                if uploads
                    .patch(&name, &PatchParams::default(), &Patch::Merge(accept))
                    .await
                    .is_ok()
                {
                    accepted_at.insert(name.clone(), Instant::now());
                    let created = pods
                        .create(&PostParams::default(), &mover_pod(du))
                        .await
                        .unwrap();
                    if gated(&created) {
                        created_gated.push(created.name_any());
                    }
                }
            }
            "Accepted" => {
                if pod_of(&name).is_some_and(|p| !gated(p)) {
                    let prepared = json!({"status": {"phase": "Prepared", "node": "node-1"}});
                    uploads
                        .patch(&name, &PatchParams::default(), &Patch::Merge(prepared))
                        .await
                        .unwrap();
                    prepared_at.insert(name.clone(), Instant::now());
                } else if accepted_since(du, accepted_at).is_some_and(|t| t > prepare_timeout) {
                    let cancel = json!({
                        "metadata": {"labels": {"velero.io/expose-on-going": null}},
                        "status": {"phase": "Canceled"},
                    });
                    uploads
                        .patch(&name, &PatchParams::default(), &Patch::Merge(cancel))
                        .await
                        .unwrap();
                }
            }
            "Prepared" => {
                let started = *prepared_at.entry(name.clone()).or_insert_with(Instant::now);
                if started.elapsed() >= Duration::from_millis(300) {
                    let done = json!({
                        "metadata": {"labels": {"velero.io/expose-on-going": null}},
                        "status": {"phase": "Completed"},
                    });
                    uploads
                        .patch(&name, &PatchParams::default(), &Patch::Merge(done))
                        .await
                        .unwrap();
                    let _ = pods
                        .delete(&format!("{name}-mover"), &DeleteParams::default())
                        .await;
                }
            }
            _ => {}
        }
    }
    created_gated
}

/// Loads in preparation whose pod may run: `Accepted` with an ungated pod,
/// or `Prepared`.
async fn running_preparations(uploads: &Api<DynamicObject>, pods: &Api<Pod>) -> usize {
    let list = uploads.list(&ListParams::default()).await.unwrap();
    let pod_list = pods.list(&ListParams::default()).await.unwrap();
    list.items
        .iter()
        .filter(|du| match phase(du) {
            "Prepared" => true,
            "Accepted" => pod_list.items.iter().any(|p| {
                p.labels().get("velero.io/data-upload") == Some(&du.name_any()) && !gated(p)
            }),
            _ => false,
        })
        .count()
}

/// Creates data-mover-labelled probe pods until one comes back gated
/// (kube-apiserver calls a new webhook once its informer saw it), then
/// deletes it.
/// Whether a controller log reports a refused request: the word
/// "forbidden", or the status code 403 standing alone (timestamps and
/// ports hold those digits inside longer numbers).
fn mentions_a_refusal(log: &str) -> bool {
    log.to_lowercase().contains("forbidden")
        || log
            .split(|c: char| !c.is_ascii_digit())
            .any(|number| number == "403")
}

async fn until_the_webhook_gates(pods: &Api<Pod>, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let probe: Pod = serde_json::from_value(json!({
            "metadata": {"name": "probe", "labels": {"velero.io/data-upload": "probe"}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }))
        .unwrap();
        let created = pods.create(&PostParams::default(), &probe).await.unwrap();
        pods.delete("probe", &DeleteParams::default().grace_period(0))
            .await
            .unwrap();
        while pods.get_opt("probe").await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if gated(&created) {
            return;
        }
        assert!(Instant::now() < deadline, "the webhook never gated a pod");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn scenario(keeping: &[GateKeeping], loads: usize, limit: u64) {
    let bed = Testbed::builder()
        .start()
        .await
        .unwrap_or_else(|e| panic!("the test bed did not start: {e}"));
    bed.install_crd_files(&load_crds(&bed)).await.unwrap();
    let namespace = bed.namespace("lsc-gate").await.unwrap();
    let client = bed.client();
    let shutdown = Shutdown::new();

    // The webhook on loopback over TLS, registered with kube-apiserver.
    let tls = WebhookTls::self_signed(&["127.0.0.1".to_owned()]).unwrap();
    let server = WebhookServer::bind("127.0.0.1:0".parse().unwrap(), &tls)
        .await
        .unwrap();
    let url = format!("https://{}/mutate", server.local_addr().unwrap());
    tokio::spawn(server.run(shutdown.clone()));
    let configurations: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let configuration = webhook::configuration(
        &format!("load-soothe-{namespace}"),
        &namespace,
        &WebhookEndpoint::Url(url),
        tls.ca_pem(),
    );
    configurations
        .create(&PostParams::default(), &configuration)
        .await
        .unwrap();

    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    until_the_webhook_gates(&pods, Duration::from_secs(20)).await;
    // A pod that is not a mover's is left alone.
    let other: Pod = serde_json::from_value(json!({
        "metadata": {"name": "node-agent-x"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }))
    .unwrap();
    assert!(!gated(
        &pods.create(&PostParams::default(), &other).await.unwrap()
    ));

    let uploads: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &namespace, &uploads_resource());
    for i in 0..loads {
        let du: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
            "metadata": {"name": format!("du-{i:02}")},
            "spec": {"snapshotType": "CSI", "sourcePVC": "pvc", "sourceNamespace": "app",
                     "backupStorageLocation": "default", "operationTimeout": "10m0s",
                     "csiSnapshot": {"volumeSnapshot": "snap", "storageClass": "standard"}},
        }))
        .unwrap();
        uploads.create(&PostParams::default(), &du).await.unwrap();
    }

    for keeping in keeping {
        let config = GateLoopConfig {
            namespace: namespace.clone(),
            limit: LimitSource::Fixed(Limit::new(limit).unwrap()),
            keeping: keeping.clone(),
            interval: Duration::from_millis(100),
            dry_run: false,
        };
        tokio::spawn(gates::run(bed.client(), config, shutdown.clone()));
    }

    let most = Arc::new(Mutex::new(0usize));
    let monitor = tokio::spawn({
        let (uploads, pods, most, shutdown) = (
            uploads.clone(),
            pods.clone(),
            most.clone(),
            shutdown.clone(),
        );
        async move {
            while !shutdown.is_triggered() {
                let now = running_preparations(&uploads, &pods).await;
                let mut most = most.lock().unwrap();
                *most = (*most).max(now);
            }
        }
    });

    let (mut prepared_at, mut accepted_at) = (BTreeMap::new(), BTreeMap::new());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        mover_round(
            &uploads,
            &pods,
            &mut prepared_at,
            &mut accepted_at,
            Duration::from_secs(30),
        )
        .await;
        let list = uploads.list(&ListParams::default()).await.unwrap();
        let phases: Vec<&str> = list.items.iter().map(phase).collect();
        if phases.iter().all(|p| *p == "Completed" || *p == "Canceled") {
            assert!(
                phases.iter().all(|p| *p == "Completed"),
                "a load was cancelled at the prepare timeout: {phases:?}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "loads left unfinished: {phases:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    shutdown.trigger(controller_kit::ShutdownReason::Requested);
    monitor.await.unwrap();
    let most = *most.lock().unwrap();
    assert!(
        most <= limit as usize,
        "{most} loads in preparation with a limit of {limit}"
    );
    assert!(most >= 1, "the monitor saw the loads prepare");
    configurations
        .delete(&configuration.name_any(), &DeleteParams::default())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_velero_style_mover_runs_every_load_through_the_gate_within_the_limit() {
    if kube_testbed::skip_requested() {
        return;
    }
    scenario(&[GateKeeping::Soft], 8, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_exact_replicas_never_have_more_than_the_limit_in_preparation() {
    if kube_testbed::skip_requested() {
        return;
    }
    let replica = |name: &str| GateKeeping::Exact {
        ledger: "velero-prepare-queue-ledger".into(),
        replica: name.into(),
    };
    scenario(&[replica("r1"), replica("r2")], 8, 2).await;
}

/// The mode this queue replaces: the controller accepts loads of its data
/// mover (`--admission accept`) before the mover looks, and the
/// Velero-style mover, whose `Accepted` branch never exposes (L3.15),
/// leaves each of them to its prepare timeout (3 s here): every load the
/// controller accepted is cancelled; the ones the mover accepted itself
/// complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_velero_style_mover_cancels_every_load_accepted_on_its_behalf() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = Testbed::builder()
        .start()
        .await
        .unwrap_or_else(|e| panic!("the test bed did not start: {e}"));
    bed.install_crd_files(&load_crds(&bed)).await.unwrap();
    let namespace = bed.namespace("lsc-accept").await.unwrap();
    let client = bed.client();
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), &namespace);
    let node_agent: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "node-agent-config"},
        "data": {"node-agent-config.json":
            json!({"loadConcurrency": {"prepareQueueLength": 2}}).to_string()},
    }))
    .unwrap();
    config_maps
        .create(&PostParams::default(), &node_agent)
        .await
        .unwrap();
    let uploads: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &namespace, &uploads_resource());
    for i in 0..4 {
        let du: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
            "metadata": {"name": format!("du-{i:02}")},
            "spec": {"snapshotType": "CSI", "sourcePVC": "pvc", "sourceNamespace": "app",
                     "backupStorageLocation": "default", "operationTimeout": "10m0s",
                     "datamover": "acme",
                     "csiSnapshot": {"volumeSnapshot": "snap", "storageClass": "standard"}},
        }))
        .unwrap();
        uploads.create(&PostParams::default(), &du).await.unwrap();
    }
    let shutdown = Shutdown::new();
    let mut config = load_soothe_controller::Config::new(
        &namespace,
        "controller-0",
        &["acme"],
        load_soothe_controller::GateMode::Exact,
    );
    config.admission = load_soothe_controller::Admission::Accept;
    let controller = tokio::spawn(load_soothe_controller::run(
        client.clone(),
        config,
        shutdown.clone(),
    ));
    // The controller accepts up to the limit before the mover looks.
    let by_controller = |list: &kube::core::ObjectList<DynamicObject>| -> Vec<String> {
        list.items
            .iter()
            .filter(|d| d.data["status"]["acceptedByNode"] == "controller-0")
            .map(|d| d.name_any())
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let accepted = loop {
        let accepted = by_controller(&uploads.list(&ListParams::default()).await.unwrap());
        if accepted.len() == 2 {
            break accepted;
        }
        assert!(
            Instant::now() < deadline,
            "the controller accepted {accepted:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let (mut prepared_at, mut accepted_at) = (BTreeMap::new(), BTreeMap::new());
    let deadline = Instant::now() + Duration::from_secs(60);
    let list = loop {
        mover_round(
            &uploads,
            &pods,
            &mut prepared_at,
            &mut accepted_at,
            Duration::from_secs(3),
        )
        .await;
        let list = uploads.list(&ListParams::default()).await.unwrap();
        let phases: Vec<String> = list.items.iter().map(|d| phase(d).to_owned()).collect();
        if phases.iter().all(|p| p == "Completed" || p == "Canceled") {
            break list;
        }
        assert!(
            Instant::now() < deadline,
            "loads left unfinished: {phases:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    shutdown.trigger(controller_kit::ShutdownReason::Requested);
    let _ = controller.await;
    let all_by_controller = by_controller(&list);
    assert!(
        accepted.iter().all(|a| all_by_controller.contains(a)),
        "{accepted:?}"
    );
    for du in &list.items {
        let name = du.name_any();
        if all_by_controller.contains(&name) {
            assert_eq!(phase(du), "Canceled", "{name}, accepted by the controller");
            assert!(
                !accepted_at.contains_key(&name),
                "the mover never exposed {name}, which it did not accept"
            );
        } else {
            assert_eq!(phase(du), "Completed", "{name}, accepted by the mover");
        }
    }
}

/// This machine's address on its default route (not loopback: an
/// EndpointSlice may not point at loopback).
fn host_address() -> std::net::IpAddr {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    // No packet is sent: connecting a UDP socket only picks the route.
    socket
        .connect("192.0.2.1:9")
        .or_else(|_| socket.connect("10.255.255.255:9"))
        .expect("a route to a non-loopback address (the webhook needs one to be reached through its Service)");
    let address = socket.local_addr().unwrap().ip();
    assert!(!address.is_loopback(), "{address}");
    address
}

/// The `pod-gates` workload as its generated manifests deploy it: the
/// ServiceAccount, Role, the webhook's ClusterRole, the Service
/// `load-soothe-controller` and the MutatingWebhookConfiguration applied
/// with kubectl, the binary run with the
/// Deployment's arguments under the ServiceAccount's token. kube-apiserver
/// reaches the webhook through that Service as in a cluster: with
/// `--enable-aggregator-routing` it resolves a Service to its
/// EndpointSlice, which the test writes (the bed has no pods to select)
/// with this machine's address and the webhook's port. So the
/// configuration the binary writes (Service reference, `caBundle` of the
/// CA in the Secret it made, name `load-soothe-controller-<namespace>`) is
/// the one that gates the mover pods. The audit log shows no request
/// refused, and every generated permission used.
///
/// A second replica started afterwards reads the Secret the first made and
/// applies the existing configuration again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_under_its_generated_pod_gates_rbac_gates_and_lifts_mover_pods() {
    if kube_testbed::skip_requested() {
        return;
    }
    pod_gates_under_generated_rbac(None).await;
}

/// The same with a cert-manager-style `kubernetes.io/tls` Secret made
/// beforehand (serving certificate and chain in `tls.crt`, `tls.key`,
/// `ca.crt`) and manifests rendered with `--webhook-tls-secret`: the
/// binary serves it, writes its `ca.crt` as the `caBundle`, creates no
/// Secret, and needs nothing but `get` on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cert_manager_secret_named_at_render_time_serves_the_webhook_under_its_rbac() {
    if kube_testbed::skip_requested() {
        return;
    }
    pod_gates_under_generated_rbac(Some("webhook-cert")).await;
}

/// A `kubernetes.io/tls` Secret `name` as cert-manager writes it, for the
/// Service `load-soothe-controller` in `namespace`; returns the CA (PEM).
async fn cert_manager_secret(client: &kube::Client, namespace: &str, name: &str) -> String {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec![format!("load-soothe-controller.{namespace}.svc")])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "metadata": {"name": name},
        "type": "kubernetes.io/tls",
        "stringData": {
            "tls.crt": format!("{}{}", cert.pem(), ca_cert.pem()),
            "tls.key": key.serialize_pem(),
            "ca.crt": ca_cert.pem(),
        },
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    ca_cert.pem()
}

/// The body of the two tests above; `given_secret`: an existing Secret
/// named at render time, else the one the controller makes.
async fn pod_gates_under_generated_rbac(given_secret: Option<&str>) {
    let audit = tempfile::tempdir().unwrap();
    let (mut args, audit_log) = deploy::audit_args(audit.path()).unwrap();
    args.push("--enable-aggregator-routing=true".to_owned());
    let bed = Testbed::builder()
        .apiserver_args(args)
        .start()
        .await
        .unwrap_or_else(|e| panic!("the test bed did not start: {e}"));
    bed.install_crd_files(&load_crds(&bed)).await.unwrap();
    let namespace = bed
        .namespace(if given_secret.is_some() {
            "lsc-gates-cm"
        } else {
            "lsc-gates-rbac"
        })
        .await
        .unwrap();
    let client = bed.client();
    let given_ca = match given_secret {
        Some(name) => Some(cert_manager_secret(&client, &namespace, name).await),
        None => None,
    };
    let manifests = load_soothe_controller::manifests::render(
        load_soothe_controller::GateMode::Exact,
        load_soothe_controller::Admission::PodGates,
        &namespace,
        load_soothe_controller::manifests::IMAGE,
        &["acme".to_owned()],
        given_secret,
    )
    .unwrap();
    let deployed = deploy::deploy_manifests(&bed, &manifests, Some(&namespace))
        .await
        .unwrap();
    assert!(
        deployed
            .applied
            .contains(&format!("Service/{namespace}/load-soothe-controller")),
        "{:?}",
        deployed.applied
    );
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), &namespace);
    let node_agent: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "node-agent-config"},
        "data": {"node-agent-config.json":
            json!({"loadConcurrency": {"prepareQueueLength": 2}}).to_string()},
    }))
    .unwrap();
    config_maps
        .create(&PostParams::default(), &node_agent)
        .await
        .unwrap();

    // The Service's endpoint: the webhook on this machine's address.
    let address = host_address();
    let port = deploy::free_port().unwrap();
    let slices: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &namespace,
        &ApiResource {
            group: "discovery.k8s.io".into(),
            version: "v1".into(),
            api_version: "discovery.k8s.io/v1".into(),
            kind: "EndpointSlice".into(),
            plural: "endpointslices".into(),
        },
    );
    let slice: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {
            "name": "load-soothe-controller-webhook",
            "labels": {"kubernetes.io/service-name": "load-soothe-controller"},
        },
        "addressType": if address.is_ipv4() { "IPv4" } else { "IPv6" },
        "endpoints": [{"addresses": [address.to_string()], "conditions": {"ready": true}}],
        "ports": [{"name": "webhook", "port": port, "protocol": "TCP"}],
    }))
    .unwrap();
    slices.create(&PostParams::default(), &slice).await.unwrap();

    let replica = |index: usize, webhook_port: u16| {
        let deployed = deployed.clone();
        let bed = &bed;
        async move {
            let name = format!("load-soothe-controller-6c9d8b7f5-p{index}");
            deployed
                .launch(
                    bed,
                    std::path::Path::new(env!("CARGO_BIN_EXE_load-soothe-controller")),
                    &deploy::Pod {
                        name: &name,
                        node: "node-0",
                    },
                )
                .await
                .unwrap()
                .arg("--webhook-addr", &format!("{address}:{webhook_port}"))
                .spawn()
                .unwrap()
        }
    };
    let controller = replica(0, port).await;
    let configurations: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let configuration_name = format!("load-soothe-controller-{namespace}");
    // The manifests created the configuration without a caBundle; the
    // controller sets it.
    controller
        .until(
            "the webhook configuration's caBundle",
            Duration::from_secs(30),
            || async {
                let found = configurations.get_opt(&configuration_name).await;
                let has_ca = found
                    .as_ref()
                    .ok()
                    .and_then(Option::as_ref)
                    .is_some_and(|c| {
                        c.webhooks
                            .as_ref()
                            .is_some_and(|w| w[0].client_config.ca_bundle.is_some())
                    });
                deploy::seen(has_ca, found.map(|c| c.is_some()))
            },
        )
        .await;
    let configuration = configurations.get(&configuration_name).await.unwrap();
    let client_config = &configuration.webhooks.as_ref().unwrap()[0].client_config;
    let service = client_config.service.as_ref().unwrap();
    assert_eq!(
        (
            service.namespace.as_str(),
            service.name.as_str(),
            service.port
        ),
        (namespace.as_str(), "load-soothe-controller", Some(443))
    );
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(client.clone(), &namespace);
    let secret = secrets
        .get(given_secret.unwrap_or("load-soothe-controller-webhook-tls"))
        .await
        .unwrap();
    if let Some(ca) = &given_ca {
        assert_eq!(
            client_config.ca_bundle.as_ref().map(|b| b.0.as_slice()),
            Some(ca.as_bytes()),
            "the caBundle is the given Secret's ca.crt"
        );
        assert!(
            secrets
                .get_opt("load-soothe-controller-webhook-tls")
                .await
                .unwrap()
                .is_none(),
            "no Secret is made when one is given"
        );
    }
    assert_eq!(
        client_config.ca_bundle.as_ref().map(|b| &b.0),
        secret
            .data
            .as_ref()
            .and_then(|d| d.get("ca.crt"))
            .map(|b| &b.0),
        "the caBundle is the CA of the Secret"
    );

    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    until_the_webhook_gates(&pods, Duration::from_secs(30)).await;

    let uploads: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &namespace, &uploads_resource());
    for i in 0..6 {
        let du: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
            "metadata": {"name": format!("du-{i:02}")},
            "spec": {"snapshotType": "CSI", "sourcePVC": "pvc", "sourceNamespace": "app",
                     "backupStorageLocation": "default", "operationTimeout": "10m0s",
                     "datamover": "acme",
                     "csiSnapshot": {"volumeSnapshot": "snap", "storageClass": "standard"}},
        }))
        .unwrap();
        uploads.create(&PostParams::default(), &du).await.unwrap();
    }
    let (mut prepared_at, mut accepted_at) = (BTreeMap::new(), BTreeMap::new());
    let (mut most, mut created_gated) = (0, Vec::new());
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        created_gated.extend(
            mover_round(
                &uploads,
                &pods,
                &mut prepared_at,
                &mut accepted_at,
                Duration::from_secs(60),
            )
            .await,
        );
        most = most.max(running_preparations(&uploads, &pods).await);
        let list = uploads.list(&ListParams::default()).await.unwrap();
        let phases: Vec<&str> = list.items.iter().map(phase).collect();
        if phases.iter().all(|p| *p == "Completed" || *p == "Canceled") {
            assert!(
                phases.iter().all(|p| *p == "Completed"),
                "a load was cancelled at the prepare timeout: {phases:?}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "loads left unfinished: {phases:?}; the controller's log:\n{}",
            controller.log_tail(40)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(most <= 2, "{most} loads in preparation with a limit of 2");
    // What the webhook answered at creation, read from the create
    // responses: polling for gated pods raced the controller's lifts.
    created_gated.sort();
    assert_eq!(
        created_gated,
        (0..6)
            .map(|i| format!("du-{i:02}-mover"))
            .collect::<Vec<_>>(),
        "every mover pod is created gated"
    );

    // A second replica reads the Secret the first made and applies the
    // configuration again (its webhook is not behind the Service).
    let second = replica(1, deploy::free_port().unwrap()).await;
    second
        .until(
            "the second replica ready",
            Duration::from_secs(30),
            || async {
                match second.http_get("/readyz").await {
                    Ok((status, body)) => deploy::seen(status == 200, (status, body)),
                    Err(error) => Err(error.to_string()),
                }
            },
        )
        .await;
    second.stop_cleanly().await;
    controller.stop_cleanly().await;
    for process in [&controller, &second] {
        let log = process.log();
        assert!(!mentions_a_refusal(&log), "{log}");
    }

    let user = format!("system:serviceaccount:{namespace}:load-soothe-controller");
    let requests = deploy::audited_requests(&audit_log, &user).unwrap();
    let refused: Vec<_> = requests.iter().filter(|r| r.code == 403).collect();
    assert!(
        refused.is_empty(),
        "the generated RBAC refused: {refused:#?}"
    );
    // Each replica applied the configuration the manifests created: a
    // patch of an existing object.
    let applies: Vec<_> = requests
        .iter()
        .filter(|r| r.resource == "mutatingwebhookconfigurations")
        .map(|r| (r.verb.as_str(), r.code))
        .collect();
    assert_eq!(applies, [("patch", 200), ("patch", 200)], "{requests:#?}");
    deploy::assert_least_privilege(
        &manifests,
        &requests,
        &[],
        "load-soothe-controller --admission pod-gates",
    );
    configurations
        .delete(&configuration_name, &DeleteParams::default())
        .await
        .unwrap();
}
