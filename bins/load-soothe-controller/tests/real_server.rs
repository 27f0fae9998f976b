//! The built binary on the real kube-apiserver (the test bed), as users
//! deploy it: the generated manifests of each mode applied with kubectl
//! (all but the Deployment or DaemonSet: the bed has no kubelet), Velero's
//! own DataUpload, DataDownload, PodVolumeBackup and PodVolumeRestore
//! CRDs, and the binary run with the workload's arguments and environment
//! under its ServiceAccount's token, so that the real RBAC authorizer
//! judges every request. Each test ends with SIGTERM and expects exit 0.
//!
//! Tests that do not break their bed share one (a namespace each); the
//! restart and compaction tests start beds of their own.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::runtime::{WatchStreamExt, watcher};
use kube_testbed::Testbed;
use kube_testbed::deploy::{
    self, ControllerProcess, Deployed, Pod, Relay, metric, seen, watch_from,
};
use load_soothe_controller::GateMode;
use load_soothe_controller::manifests::{IMAGE, render};
use serde_json::json;
use velero_api::{DataUpload, PodVolumeBackup};

const BINARY: &str = env!("CARGO_BIN_EXE_load-soothe-controller");
const NODE_AGENT_CONFIG: &str = "node-agent-config";
const LEDGER: &str = "velero-prepare-queue-ledger";

/// The CRDs of the four load kinds, as the bed built them from Velero's
/// module.
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

async fn start_bed(builder: kube_testbed::Builder) -> Testbed {
    builder
        .start()
        .await
        .unwrap_or_else(|e| panic!("the test bed did not start: {e}"))
}

/// A Velero namespace with the controller's manifests of one mode in it,
/// and Velero's node-agent ConfigMap.
struct Velero {
    namespace: String,
    mode: GateMode,
    config_maps: Api<ConfigMap>,
    uploads: Api<DataUpload>,
    dynamic_uploads: Api<DynamicObject>,
    events: Api<Event>,
    deployed: Deployed,
    manifests: String,
}

async fn velero_namespace(bed: &Testbed, prefix: &str, mode: GateMode, limit: i64) -> Velero {
    bed.install_crd_files(&load_crds(bed)).await.unwrap();
    let namespace = bed.namespace(prefix).await.unwrap();
    let manifests = render(
        mode,
        load_soothe_controller::Admission::Accept,
        &namespace,
        IMAGE,
        &["acme".to_owned()],
        None,
    )
    .unwrap();
    let deployed = deploy::deploy_manifests(bed, &manifests, Some(&namespace))
        .await
        .unwrap();
    let client = bed.client();
    let velero = Velero {
        config_maps: Api::namespaced(client.clone(), &namespace),
        uploads: Api::namespaced(client.clone(), &namespace),
        dynamic_uploads: Api::namespaced_with(
            client.clone(),
            &namespace,
            &ApiResource::erase::<DataUpload>(&()),
        ),
        events: Api::namespaced(client, &namespace),
        namespace,
        mode,
        deployed,
        manifests,
    };
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": NODE_AGENT_CONFIG},
        "data": node_agent_data(limit),
    }))
    .unwrap();
    velero
        .config_maps
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    velero
}

fn node_agent_data(limit: i64) -> serde_json::Value {
    json!({
        "node-agent-config.json":
            json!({"loadConcurrency": {"prepareQueueLength": limit}}).to_string()
    })
}

impl Velero {
    /// The pod the workload would run in: a Deployment's pod (exact
    /// mode, its name is the instance), or a DaemonSet's on `node`.
    fn pod(&self, index: usize) -> (String, String) {
        (
            format!("load-soothe-controller-6c9d8b7f5-p{index}"),
            format!("node-{index}"),
        )
    }

    /// The controller as the workload runs it, instance `index`.
    async fn start(&self, bed: &Testbed, index: usize) -> ControllerProcess {
        self.launch(bed, index).await.spawn().unwrap()
    }

    async fn launch(&self, bed: &Testbed, index: usize) -> deploy::Launch {
        let (name, node) = self.pod(index);
        self.deployed
            .launch(
                bed,
                Path::new(BINARY),
                &Pod {
                    name: &name,
                    node: &node,
                },
            )
            .await
            .unwrap()
    }

    /// A DataUpload as Velero's backup creates it (every field its CRD
    /// requires), for data mover `datamover`.
    async fn create_upload(&self, name: &str, datamover: &str) {
        let upload: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
            "metadata": {"name": name},
            "spec": {
                "snapshotType": "CSI",
                "sourcePVC": format!("pvc-{name}"),
                "sourceNamespace": "app",
                "backupStorageLocation": "default",
                "operationTimeout": "10m0s",
                "datamover": datamover,
                "csiSnapshot": {"volumeSnapshot": format!("snap-{name}"), "storageClass": "standard"},
            },
        }))
        .unwrap();
        self.dynamic_uploads
            .create(&PostParams::default(), &upload)
            .await
            .unwrap();
    }

    async fn create_uploads(&self, n: usize) {
        for i in 0..n {
            self.create_upload(&format!("du-{i:02}"), "acme").await;
        }
    }

    async fn set_limit(&self, limit: i64) {
        self.config_maps
            .patch(
                NODE_AGENT_CONFIG,
                &PatchParams::default(),
                &Patch::Merge(json!({"data": node_agent_data(limit)})),
            )
            .await
            .unwrap();
    }

    /// Moves an accepted upload on to `phase` (`InProgress` or a terminal
    /// one) as its data mover does: in the same update, the expose label
    /// goes (the load leaves preparation).
    async fn set_phase(&self, name: &str, phase: &str) {
        let patch = json!({
            "metadata": {"labels": {"velero.io/expose-on-going": null}},
            "status": {"phase": phase},
        });
        self.uploads
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap();
    }

    /// name → phase of every DataUpload.
    async fn phases(&self) -> BTreeMap<String, String> {
        self.uploads
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|d| {
                (
                    d.metadata.name.clone().unwrap_or_default(),
                    d.phase().as_str().to_owned(),
                )
            })
            .collect()
    }

    async fn accepted(&self) -> BTreeSet<String> {
        self.phases()
            .await
            .into_iter()
            .filter(|(_, phase)| phase == "Accepted")
            .map(|(name, _)| name)
            .collect()
    }

    async fn until_accepted(&self, controller: &ControllerProcess, n: usize) -> BTreeSet<String> {
        controller
            .until(
                &format!("{n} accepted ({:?})", self.mode),
                Duration::from_secs(60),
                || async {
                    let accepted = self.accepted().await;
                    seen(accepted.len() == n, accepted)
                },
            )
            .await;
        self.accepted().await
    }

    /// (object, reason, note) of the Events in the namespace.
    async fn events(&self) -> Vec<(String, String, String)> {
        self.events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|e| {
                (
                    e.regarding.and_then(|r| r.name).unwrap_or_default(),
                    e.reason.unwrap_or_default(),
                    e.note.unwrap_or_default(),
                )
            })
            .collect()
    }

    /// Follows every DataUpload change and records the most loads ever
    /// Accepted at once.
    fn sampler(&self) -> Sampler {
        let most = Arc::new(Mutex::new(0));
        let task = tokio::spawn({
            let (api, most) = (self.uploads.clone(), most.clone());
            async move {
                let mut phases: BTreeMap<String, String> = BTreeMap::new();
                let mut stream = watcher(api, watcher::Config::default())
                    .default_backoff()
                    .boxed();
                while let Some(event) = stream.next().await {
                    match event {
                        Ok(watcher::Event::Apply(d) | watcher::Event::InitApply(d)) => {
                            phases.insert(
                                d.metadata.name.clone().unwrap_or_default(),
                                d.phase().as_str().to_owned(),
                            );
                        }
                        Ok(watcher::Event::Delete(d)) => {
                            phases.remove(d.metadata.name.as_deref().unwrap_or_default());
                        }
                        _ => continue,
                    }
                    let now = phases.values().filter(|p| *p == "Accepted").count();
                    let mut most = most.lock().unwrap();
                    *most = (*most).max(now);
                }
            }
        });
        Sampler { most, task }
    }
}

struct Sampler {
    most: Arc<Mutex<usize>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    fn most(&self) -> usize {
        *self.most.lock().unwrap()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Admits the first two in order, holds the others with an Event, follows
/// the limit raised in the ConfigMap, and gives a deleted load's slot to
/// the next in line; a load of another data mover is left alone.
async fn admits_follows_edits_and_frees_slots(mode: GateMode, prefix: &str) {
    let bed = kube_testbed::shared();
    let velero = velero_namespace(bed, prefix, mode, 2).await;
    velero.create_upload("du-foreign", "other-mover").await;
    velero.create_uploads(6).await;
    let sampler = velero.sampler();
    let controller = velero.start(bed, 0).await;

    let accepted = velero.until_accepted(&controller, 2).await;
    assert_eq!(
        accepted,
        BTreeSet::from(["du-00".to_owned(), "du-01".to_owned()]),
        "first in, first admitted"
    );
    controller
        .until(
            "a hold Event on a waiting load",
            Duration::from_secs(30),
            || async {
                let events = velero.events().await;
                seen(
                    events.iter().any(|(o, r, n)| {
                        o == "du-05" && r == "PrepareQueueHold" && n.contains("prepare queue full")
                    }),
                    events,
                )
            },
        )
        .await;
    // Several requeue periods later, still at the limit.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(velero.accepted().await.len(), 2, "{mode:?}");

    velero.set_limit(3).await;
    velero.until_accepted(&controller, 3).await;
    let first = "du-00";
    velero
        .uploads
        .delete(first, &DeleteParams::default())
        .await
        .unwrap();
    controller
        .until(
            "du-03 takes the freed slot",
            Duration::from_secs(60),
            || async {
                let phases = velero.phases().await;
                seen(phases.get("du-03").is_some_and(|p| p == "Accepted"), phases)
            },
        )
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(velero.accepted().await.len(), 3, "{mode:?}");
    let foreign = velero.uploads.get("du-foreign").await.unwrap();
    assert!(
        foreign.metadata.labels.is_none()
            && serde_json::to_value(&foreign).unwrap()["status"].is_null(),
        "another data mover's load was touched: {foreign:?}"
    );
    assert!(sampler.most() <= 3, "{} accepted at once", sampler.most());
    let accepted_by = velero.uploads.get("du-01").await.unwrap();
    let (pod, node) = velero.pod(0);
    let instance = match mode {
        GateMode::Exact => pod,
        GateMode::Optimistic => node,
    };
    assert_eq!(
        serde_json::to_value(&accepted_by).unwrap()["status"]["acceptedByNode"],
        json!(instance)
    );
    if mode == GateMode::Exact {
        // The ledger lists exactly the loads in preparation.
        let ledger = velero.config_maps.get(LEDGER).await.unwrap();
        let text = ledger.data.unwrap_or_default()["ledger.json"].clone();
        let admitted: BTreeSet<String> = serde_json::from_str::<serde_json::Value>(&text).unwrap()
            ["admitted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(admitted, velero.accepted().await, "{text}");
    }
    controller.stop_cleanly().await;
}

#[tokio::test]
async fn exact_mode_admits_within_the_limit_follows_edits_and_frees_deleted_slots() {
    if kube_testbed::skip_requested() {
        return;
    }
    admits_follows_edits_and_frees_slots(GateMode::Exact, "lsc-exact").await;
}

#[tokio::test]
async fn optimistic_mode_admits_within_the_limit_follows_edits_and_frees_deleted_slots() {
    if kube_testbed::skip_requested() {
        return;
    }
    admits_follows_edits_and_frees_slots(GateMode::Optimistic, "lsc-optimistic").await;
}

#[tokio::test]
async fn the_two_replicas_of_exact_mode_never_admit_beyond_the_limit() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    let velero = velero_namespace(bed, "lsc-replicas", GateMode::Exact, 2).await;
    velero.create_uploads(8).await;
    let sampler = velero.sampler();
    // The Deployment's two replicas race on the ledger.
    let replicas = [velero.start(bed, 0).await, velero.start(bed, 1).await];
    let mut done = BTreeSet::new();
    let started = Instant::now();
    while done.len() < 8 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{done:?} done; phases {:?}; logs:\n{}\n{}",
            velero.phases().await,
            replicas[0].log_tail(30),
            replicas[1].log_tail(30)
        );
        // The data mover finishes what was accepted.
        for name in velero.accepted().await {
            velero.set_phase(&name, "Completed").await;
            done.insert(name);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(sampler.most() <= 2, "{} accepted at once", sampler.most());
    let by: BTreeSet<String> = velero
        .uploads
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|d| {
            serde_json::to_value(d).unwrap()["status"]["acceptedByNode"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    eprintln!("accepted by {by:?}");
    for replica in &replicas {
        replica.stop_cleanly().await;
    }
}

#[tokio::test]
async fn pod_volume_loads_count_against_the_limit() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    let velero = velero_namespace(bed, "lsc-pvb", GateMode::Exact, 2).await;
    // A PodVolumeBackup of Velero's own node-agent, in preparation.
    let pvbs: Api<DynamicObject> = Api::namespaced_with(
        bed.client(),
        &velero.namespace,
        &ApiResource::erase::<PodVolumeBackup>(&()),
    );
    let pvb: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "PodVolumeBackup",
        "metadata": {"name": "pvb-1", "labels": {"velero.io/expose-on-going": "true"}},
        "spec": {
            "backupStorageLocation": "default", "node": "node-0", "repoIdentifier": "s3:s3.example.com/velero/restic/app",
            "volume": "data", "pod": {"kind": "Pod", "namespace": "app", "name": "app-0"},
        },
        "status": {"phase": "Accepted"},
    }))
    .unwrap();
    pvbs.create(&PostParams::default(), &pvb).await.unwrap();
    velero.create_uploads(3).await;
    let controller = velero.start(bed, 0).await;
    velero.until_accepted(&controller, 1).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(velero.accepted().await.len(), 1);
    controller.stop_cleanly().await;
}

async fn dry_run(mode: GateMode, prefix: &str) {
    let bed = kube_testbed::shared();
    let velero = velero_namespace(bed, prefix, mode, 2).await;
    velero.create_uploads(4).await;
    let versions = |list: Vec<DataUpload>| -> BTreeMap<String, String> {
        list.into_iter()
            .map(|d| {
                (
                    d.metadata.name.unwrap_or_default(),
                    d.metadata.resource_version.unwrap_or_default(),
                )
            })
            .collect()
    };
    let before = versions(
        velero
            .uploads
            .list(&ListParams::default())
            .await
            .unwrap()
            .items,
    );
    let controller = velero
        .launch(bed, 0)
        .await
        .switch("--dry-run")
        .spawn()
        .unwrap();
    controller
        .until(
            "decisions: two loads held",
            Duration::from_secs(30),
            || async {
                let held = match controller.http_get("/metrics").await {
                    Ok((200, body)) => metric(&body, "load_soothe_controller_held_loads"),
                    _ => 0.0,
                };
                seen(held >= 2.0, held)
            },
        )
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    controller.stop_cleanly().await;
    let after = versions(
        velero
            .uploads
            .list(&ListParams::default())
            .await
            .unwrap()
            .items,
    );
    assert_eq!(after, before, "{mode:?}: dry run changed a DataUpload");
    assert_eq!(
        velero.events().await,
        vec![],
        "{mode:?}: dry run recorded Events"
    );
    assert!(
        velero.config_maps.get_opt(LEDGER).await.unwrap().is_none(),
        "{mode:?}: dry run wrote the ledger"
    );
}

#[tokio::test]
async fn exact_mode_dry_run_decides_and_writes_nothing() {
    if kube_testbed::skip_requested() {
        return;
    }
    dry_run(GateMode::Exact, "lsc-dry-exact").await;
}

#[tokio::test]
async fn optimistic_mode_dry_run_decides_and_writes_nothing() {
    if kube_testbed::skip_requested() {
        return;
    }
    dry_run(GateMode::Optimistic, "lsc-dry-optimistic").await;
}

/// The resource requests of the controller's ServiceAccount from the
/// audit log: none refused outside `restart` (kube-apiserver answers 403
/// until its RBAC caches have synced after a restart), and what the
/// generated rules grant that the run did not use.
fn check_audit(log: &Path, velero: &Velero, restart: (jiff::Timestamp, jiff::Timestamp)) {
    let user = format!(
        "system:serviceaccount:{}:load-soothe-controller",
        velero.namespace
    );
    let requests = deploy::audited_requests(log, &user).unwrap();
    assert!(!requests.is_empty(), "no request by {user} was audited");
    let during_restart = |time: &str| {
        time.parse::<jiff::Timestamp>()
            .is_ok_and(|t| restart.0 <= t && t <= restart.1)
    };
    let refused: Vec<_> = requests
        .iter()
        .filter(|r| r.code == 403 && !during_restart(&r.time))
        .collect();
    assert!(
        refused.is_empty(),
        "the generated RBAC refused: {refused:#?}"
    );
    let reread = "re-reads an object after a 409; no conflict on it in this run";
    deploy::assert_least_privilege(
        &velero.manifests,
        &requests,
        &[
            ("get core/configmaps", reread),
            ("get velero.io/datauploads", reread),
            ("get velero.io/datadownloads", reread),
            ("get velero.io/podvolumebackups", reread),
            ("get velero.io/podvolumerestores", reread),
            (
                "patch velero.io/datadownloads",
                "accepts DataDownloads; this run restores nothing",
            ),
            (
                "patch events.k8s.io/events",
                "an Event repeated within its series; none in this run",
            ),
        ],
        &format!("load-soothe-controller, {:?} mode", velero.mode),
    );
}

#[tokio::test]
async fn exact_mode_keeps_the_limit_through_a_kube_apiserver_restart() {
    if kube_testbed::skip_requested() {
        return;
    }
    let audit = tempfile::tempdir().unwrap();
    let (args, audit_log) = deploy::audit_args(audit.path()).unwrap();
    let bed = start_bed(Testbed::builder().apiserver_args(args)).await;
    let velero = velero_namespace(&bed, "lsc-restart", GateMode::Exact, 2).await;
    velero.create_uploads(5).await;
    let controller = velero.start(&bed, 0).await;
    velero.until_accepted(&controller, 2).await;

    let started = Instant::now();
    let stopped_at = jiff::Timestamp::now();
    bed.restart_apiserver().await.unwrap();
    let ready_at = jiff::Timestamp::now();
    eprintln!("kube-apiserver restarted in {:?}", started.elapsed());
    // After the restart: a finished load frees its slot, an edit raises
    // the limit.
    velero.set_phase("du-00", "Completed").await;
    controller
        .until("du-02 admitted", Duration::from_secs(60), || async {
            let phases = velero.phases().await;
            seen(phases["du-02"] == "Accepted", phases)
        })
        .await;
    velero.set_limit(3).await;
    velero.until_accepted(&controller, 3).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(velero.accepted().await.len(), 3);
    controller.stop_cleanly().await;
    check_audit(&audit_log, &velero, (stopped_at, ready_at));
}

#[tokio::test]
async fn exact_mode_relists_when_etcd_compaction_answers_its_rewatch_with_410_gone() {
    if kube_testbed::skip_requested() {
        return;
    }
    // Without the watch cache, watches are served by etcd, which refuses
    // a compacted revision.
    let bed = start_bed(Testbed::builder().watch_cache(false)).await;
    let velero = velero_namespace(&bed, "lsc-compact", GateMode::Exact, 2).await;
    velero.create_uploads(5).await;
    let relay = Relay::start(bed.server_url().trim_start_matches("https://")).unwrap();
    let launch = velero.launch(&bed, 0).await;
    let through_relay = relay.kubeconfig(launch.kubeconfig_path()).unwrap();
    let controller = launch.kubeconfig(&through_relay).spawn().unwrap();
    velero.until_accepted(&controller, 2).await;

    // Everything the controller has seen is older than `seen_version`;
    // writes elsewhere move etcd on, then it compacts.
    let seen_version = velero
        .uploads
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let other = bed.namespace("lsc-compact-other").await.unwrap();
    let others: Api<ConfigMap> = Api::namespaced(bed.client(), &other);
    for i in 0..3 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("cm-{i}")}})).unwrap();
        others.create(&PostParams::default(), &cm).await.unwrap();
    }
    bed.compact_etcd().await.unwrap();
    assert_eq!(watch_from(&velero.uploads, &seen_version).await, Err(410));
    assert_eq!(
        watch_from(&velero.config_maps, &seen_version).await,
        Err(410)
    );

    // Its connections drop: every watch (loads, node-agent ConfigMap,
    // ledger) restarts from a compacted revision and must list again.
    assert!(relay.cut() > 0, "the controller had no open connection");
    velero.set_phase("du-00", "Completed").await;
    controller
        .until("du-02 admitted", Duration::from_secs(60), || async {
            let phases = velero.phases().await;
            seen(phases["du-02"] == "Accepted", phases)
        })
        .await;
    velero.set_limit(3).await;
    velero.until_accepted(&controller, 3).await;
    controller.stop_cleanly().await;
}
