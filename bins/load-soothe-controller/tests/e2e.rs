//! End-to-end tests: the real `run()` against `kube-fake-api`, with a test
//! "data mover" that moves Accepted loads through Prepared, InProgress and
//! Completed, and a sampler that counts the loads in preparation after every
//! change (every watch event of the DataUploads, in resourceVersion order).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube_fake_api::{FakeApi, ResourceId, eventually, id_of};
use load_soothe_controller::{Config, GateMode};
use serde_json::json;
use tokio::task::JoinHandle;
use velero_api::{DataUpload, PodVolumeBackup};

const NS: &str = "velero";
const LABEL: &str = "velero.io/expose-on-going";

fn config(node: &str, mode: GateMode) -> Config {
    let mut c = Config::new(NS, node, &["acme"], mode);
    // These tests drive the accept admission on the fake API server (the
    // pod-gates webhook needs the real one: gate_real_server.rs).
    c.admission = load_soothe_controller::Admission::Accept;
    c.requeue_after = Duration::from_millis(50);
    c.confirm_interval = Duration::from_millis(200);
    c
}

fn node_agent_cm(limit: i64) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("node-agent-config".into());
    cm.metadata.namespace = Some(NS.into());
    cm.data = Some(BTreeMap::from([(
        "node-agent-config.json".to_owned(),
        json!({"loadConcurrency": {"prepareQueueLength": limit}}).to_string(),
    )]));
    cm
}

fn set_limit(api: &FakeApi, limit: i64) {
    api.modify_value(&id_of::<ConfigMap>(), Some(NS), "node-agent-config", |v| {
        v["data"] = serde_json::to_value(node_agent_cm(limit).data).unwrap();
    })
    .expect("node-agent ConfigMap exists");
}

fn du(name: &str, datamover: &str) -> DataUpload {
    let mut du = DataUpload::new(name, velero_api::DataUploadSpec::default());
    du.metadata.namespace = Some(NS.into());
    du.spec.data_mover = Some(datamover.into());
    du
}

fn seed_burst(api: &FakeApi, n: usize) {
    for i in 0..n {
        api.seed(&du(&format!("du-{i:03}"), "acme")).unwrap();
    }
}

struct Replica {
    shutdown: controller_kit::Shutdown,
    task: JoinHandle<Result<controller_kit::ShutdownReason, load_soothe_controller::Error>>,
    api: FakeApi,
}

/// Starts a replica as the controller's ServiceAccount with exactly the
/// RBAC rules of its generated manifests for the mode; a request they deny
/// fails the test when the replica stops.
fn start(api: &FakeApi, config: Config) -> Replica {
    let manifests = load_soothe_controller::manifests::manifest(config.mode, config.admission)
        .to_yaml()
        .unwrap();
    api.enforce_rbac(&manifests).unwrap();
    let shutdown = controller_kit::Shutdown::new();
    let task = tokio::spawn(load_soothe_controller::run(
        api.client_as(NS, load_soothe_controller::CONTROLLER_NAME),
        config,
        shutdown.clone(),
    ));
    Replica {
        shutdown,
        task,
        api: api.clone(),
    }
}

async fn stop(replicas: Vec<Replica>) {
    for r in &replicas {
        r.shutdown
            .trigger(controller_kit::ShutdownReason::Requested);
    }
    for r in replicas {
        tokio::time::timeout(Duration::from_secs(5), r.task)
            .await
            .expect("run() returns after shutdown")
            .unwrap()
            .unwrap();
        let denied = r.api.denied();
        assert!(
            denied.is_empty(),
            "the generated manifests do not grant what the controller did:\n{}",
            denied.join("\n")
        );
    }
}

fn phase(v: &serde_json::Value) -> &str {
    v["status"]["phase"].as_str().unwrap_or("")
}

fn dus(api: &FakeApi) -> Vec<serde_json::Value> {
    api.list_values(&id_of::<DataUpload>(), Some(NS))
}

fn count_phase(api: &FakeApi, p: &str) -> usize {
    dus(api).iter().filter(|v| phase(v) == p).count()
}

#[derive(Default)]
struct Stats {
    max_in_preparation: AtomicUsize,
    completed: AtomicUsize,
    accepted_ever: AtomicUsize,
}

/// The sampler and (if `step` is set) the data mover: Accepted → Prepared →
/// InProgress (label removed) → Completed, `step` apart.
fn data_mover(api: &FakeApi, stats: Arc<Stats>, step: Option<Duration>) -> JoinHandle<()> {
    let api = api.clone();
    tokio::spawn(async move {
        let dus: Api<DataUpload> = Api::namespaced(api.client(), NS);
        let mut stream =
            std::pin::pin!(watcher::watcher(dus, watcher::Config::default()).default_backoff());
        let mut in_prep: BTreeMap<String, bool> = BTreeMap::new();
        let mut started = BTreeSet::new();
        let mut completed = BTreeSet::new();
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Apply(du) | Event::InitApply(du)) => {
                    let name = du.metadata.name.clone().unwrap_or_default();
                    let p = du.phase();
                    let labelled = du
                        .metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(LABEL))
                        .is_some_and(|v| v == "true");
                    let preparing = labelled || matches!(p.as_str(), "Accepted" | "Prepared");
                    in_prep.insert(name.clone(), preparing);
                    if p.as_str() == "Accepted" && started.insert(name.clone()) {
                        stats.accepted_ever.fetch_add(1, Ordering::SeqCst);
                        if let Some(step) = step {
                            tokio::spawn(advance(api.clone(), name.clone(), step));
                        }
                    }
                    if p.as_str() == "Completed" && completed.insert(name) {
                        stats.completed.fetch_add(1, Ordering::SeqCst);
                    }
                }
                Ok(Event::Delete(du)) => {
                    in_prep.remove(&du.metadata.name.unwrap_or_default());
                }
                _ => {}
            }
            let n = in_prep.values().filter(|p| **p).count();
            stats.max_in_preparation.fetch_max(n, Ordering::SeqCst);
        }
    })
}

async fn advance(api: FakeApi, name: String, step: Duration) {
    let id = id_of::<DataUpload>();
    tokio::time::sleep(step).await;
    api.modify_value(&id, Some(NS), &name, |v| {
        v["status"]["phase"] = json!("Prepared")
    });
    tokio::time::sleep(step).await;
    api.modify_value(&id, Some(NS), &name, |v| {
        v["status"]["phase"] = json!("InProgress");
        if let Some(labels) = v["metadata"]["labels"].as_object_mut() {
            labels.remove(LABEL);
        }
    });
    tokio::time::sleep(step).await;
    api.modify_value(&id, Some(NS), &name, |v| {
        v["status"]["phase"] = json!("Completed")
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exact_mode_never_has_more_than_the_limit_in_preparation_with_five_replicas_racing() {
    let api = FakeApi::new();
    api.seed(&node_agent_cm(10)).unwrap();
    let stats = Arc::new(Stats::default());
    let mover = data_mover(&api, stats.clone(), Some(Duration::from_millis(5)));
    let replicas: Vec<Replica> = (0..5)
        .map(|i| start(&api, config(&format!("replica-{i}"), GateMode::Exact)))
        .collect();
    seed_burst(&api, 200);
    eventually("all 200 loads completed", Duration::from_secs(50), || {
        stats.completed.load(Ordering::SeqCst) == 200
    })
    .await;
    let max = stats.max_in_preparation.load(Ordering::SeqCst);
    assert!(
        max <= 10,
        "{max} loads in preparation with prepareQueueLength 10"
    );
    assert!(
        max >= 2,
        "the gate admitted loads one at a time only (max {max})"
    );
    // Every load was accepted exactly once, by one of the replicas.
    let by: BTreeSet<String> = dus(&api)
        .iter()
        .map(|v| v["status"]["acceptedByNode"].as_str().unwrap().to_owned())
        .collect();
    assert!(by.iter().all(|n| n.starts_with("replica-")), "{by:?}");
    assert_eq!(stats.accepted_ever.load(Ordering::SeqCst), 200);
    let ledger: Option<ConfigMap> = api.get(Some(NS), "velero-prepare-queue-ledger").unwrap();
    assert!(ledger.is_some(), "exact mode writes the ledger");
    stop(replicas).await;
    mover.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn optimistic_mode_one_replica_stays_within_the_limit() {
    let api = FakeApi::new();
    api.seed(&node_agent_cm(5)).unwrap();
    let stats = Arc::new(Stats::default());
    let mover = data_mover(&api, stats.clone(), Some(Duration::from_millis(5)));
    let replicas = vec![start(&api, config("only", GateMode::Optimistic))];
    seed_burst(&api, 60);
    eventually("all 60 loads completed", Duration::from_secs(30), || {
        stats.completed.load(Ordering::SeqCst) == 60
    })
    .await;
    let max = stats.max_in_preparation.load(Ordering::SeqCst);
    assert!(
        (2..=5).contains(&max),
        "max {max} with prepareQueueLength 5"
    );
    stop(replicas).await;
    mover.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn optimistic_mode_with_three_replicas_stays_within_replicas_times_limit() {
    let api = FakeApi::new();
    api.seed(&node_agent_cm(4)).unwrap();
    let stats = Arc::new(Stats::default());
    let mover = data_mover(&api, stats.clone(), Some(Duration::from_millis(5)));
    let replicas: Vec<Replica> = (0..3)
        .map(|i| start(&api, config(&format!("replica-{i}"), GateMode::Optimistic)))
        .collect();
    seed_burst(&api, 60);
    eventually("all 60 loads completed", Duration::from_secs(30), || {
        stats.completed.load(Ordering::SeqCst) == 60
    })
    .await;
    let max = stats.max_in_preparation.load(Ordering::SeqCst);
    assert!(
        max <= 3 * 4,
        "max {max} above the documented bound replicas × limit = 12"
    );
    assert_eq!(stats.accepted_ever.load(Ordering::SeqCst), 60);
    stop(replicas).await;
    mover.abort();
}

fn events_for(api: &FakeApi, name: &str, reason: &str) -> Vec<serde_json::Value> {
    api.list_values(&ResourceId::new("events.k8s.io", "v1", "events"), Some(NS))
        .into_iter()
        .filter(|e| e["regarding"]["name"] == name && e["reason"] == reason)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_config_map_edit_changes_the_limit_live_and_held_loads_get_one_event_per_reason() {
    for mode in [GateMode::Exact, GateMode::Optimistic] {
        let api = FakeApi::new();
        api.seed(&node_agent_cm(2)).unwrap();
        let replicas = vec![start(&api, config("n1", mode))];
        seed_burst(&api, 12);
        eventually("2 accepted", Duration::from_secs(10), || {
            count_phase(&api, "Accepted") == 2
        })
        .await;
        // Many requeue periods later: still 2, and the FIFO head went first.
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(count_phase(&api, "Accepted"), 2, "{mode:?}");
        let accepted: BTreeSet<String> = dus(&api)
            .iter()
            .filter(|v| phase(v) == "Accepted")
            .map(|v| v["metadata"]["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(accepted, BTreeSet::from(["du-000".into(), "du-001".into()]));
        eventually("hold event published", Duration::from_secs(5), || {
            !events_for(&api, "du-011", "PrepareQueueHold").is_empty()
        })
        .await;
        let held = events_for(&api, "du-011", "PrepareQueueHold");
        assert_eq!(held.len(), 1, "rate-limited to reason changes: {held:#?}");
        let note = held[0]["note"].as_str().unwrap();
        assert!(note.contains("prepare queue full"), "{note}");
        assert!(note.contains("9 earlier load(s) waiting ahead"), "{note}");

        set_limit(&api, 5);
        eventually("5 accepted after the edit", Duration::from_secs(10), || {
            count_phase(&api, "Accepted") == 5
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(count_phase(&api, "Accepted"), 5, "{mode:?}");
        assert!(!events_for(&api, "du-000", "PrepareQueueAdmitted").is_empty());
        stop(replicas).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleted_loads_free_their_slots() {
    for mode in [GateMode::Exact, GateMode::Optimistic] {
        let api = FakeApi::new();
        api.seed(&node_agent_cm(2)).unwrap();
        let replicas = vec![start(&api, config("n1", mode))];
        seed_burst(&api, 6);
        eventually("2 accepted", Duration::from_secs(10), || {
            count_phase(&api, "Accepted") == 2
        })
        .await;
        api.remove_value(&id_of::<DataUpload>(), Some(NS), "du-000")
            .unwrap();
        eventually(
            "the next load takes the freed slot",
            Duration::from_secs(10),
            || {
                dus(&api)
                    .iter()
                    .any(|v| v["metadata"]["name"] == "du-002" && phase(v) == "Accepted")
            },
        )
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(count_phase(&api, "Accepted"), 2, "{mode:?}");
        stop(replicas).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exact_mode_frees_ledger_slots_of_loads_deleted_before_it_started() {
    let api = FakeApi::new();
    api.seed(&node_agent_cm(2)).unwrap();
    // A ledger listing two loads that no longer exist.
    let ledger = json!({"version": 1, "admitted": [
        {"kind": "DataUpload", "namespace": NS, "name": "gone-1", "uid": "u-gone-1", "admittedAt": "2026-01-01T00:00:00Z", "admittedBy": "old"},
        {"kind": "DataUpload", "namespace": NS, "name": "gone-2", "uid": "u-gone-2", "admittedAt": "2026-01-01T00:00:00Z", "admittedBy": "old"},
    ]});
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("velero-prepare-queue-ledger".into());
    cm.metadata.namespace = Some(NS.into());
    cm.data = Some(BTreeMap::from([(
        "ledger.json".to_owned(),
        ledger.to_string(),
    )]));
    api.seed(&cm).unwrap();
    seed_burst(&api, 3);
    let replicas = vec![start(&api, config("n1", GateMode::Exact))];
    eventually(
        "2 accepted once the stale entries are confirmed gone",
        Duration::from_secs(10),
        || count_phase(&api, "Accepted") == 2,
    )
    .await;
    stop(replicas).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pod_volume_loads_count_and_foreign_data_movers_are_left_alone() {
    let api = FakeApi::new();
    api.seed(&node_agent_cm(2)).unwrap();
    let mut pvb = PodVolumeBackup::new("pvb-1", Default::default());
    pvb.metadata.namespace = Some(NS.into());
    pvb.metadata.labels = Some(BTreeMap::from([(LABEL.to_owned(), "true".to_owned())]));
    let mut pvb = serde_json::to_value(pvb).unwrap();
    pvb["status"] = json!({"phase": "Accepted"});
    api.seed_value(&id_of::<PodVolumeBackup>(), pvb).unwrap();
    api.seed(&du("foreign", "other-mover")).unwrap();
    seed_burst(&api, 3);
    let replicas = vec![start(&api, config("n1", GateMode::Exact))];
    eventually("1 accepted", Duration::from_secs(10), || {
        count_phase(&api, "Accepted") == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(count_phase(&api, "Accepted"), 1);
    let foreign = api
        .get_value(&id_of::<DataUpload>(), Some(NS), "foreign")
        .unwrap();
    assert_eq!(phase(&foreign), "");
    stop(replicas).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dry_run_writes_nothing() {
    for mode in [GateMode::Exact, GateMode::Optimistic] {
        let api = FakeApi::new();
        api.seed(&node_agent_cm(2)).unwrap();
        seed_burst(&api, 5);
        let mut c = config("n1", mode);
        c.dry_run = true;
        let replicas = vec![start(&api, c)];
        eventually("watches started", Duration::from_secs(10), || {
            api.requests()
                .iter()
                .filter(|r| r.verb == Some(kube_fake_api::Verb::Watch))
                .count()
                >= 5
        })
        .await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let writes: Vec<_> = api
            .requests()
            .into_iter()
            .filter(|r| r.is_write())
            .collect();
        assert!(writes.is_empty(), "{mode:?} wrote: {writes:#?}");
        assert_eq!(count_phase(&api, ""), 5);
        stop(replicas).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exact_mode_keeps_the_limit_through_conflicts_server_errors_and_dropped_watches() {
    use kube_fake_api::{Fault, Verb};
    let api = FakeApi::new();
    api.seed(&node_agent_cm(5)).unwrap();
    // Accepts and ledger writes fail now and then; watches are cut.
    api.inject(
        Fault::conflict()
            .on_verb(Verb::Patch)
            .on_resource("datauploads")
            .times(15),
    );
    api.inject(
        Fault::internal_error()
            .on_verb(Verb::Patch)
            .on_resource("configmaps")
            .times(10),
    );
    api.inject(
        Fault::internal_error()
            .on_verb(Verb::Patch)
            .on_resource("datauploads")
            .times(10),
    );
    let stats = Arc::new(Stats::default());
    let mover = data_mover(&api, stats.clone(), Some(Duration::from_millis(5)));
    let replicas: Vec<Replica> = (0..3)
        .map(|i| start(&api, config(&format!("replica-{i}"), GateMode::Exact)))
        .collect();
    seed_burst(&api, 60);
    eventually("20 loads completed", Duration::from_secs(30), || {
        stats.completed.load(Ordering::SeqCst) >= 20
    })
    .await;
    api.drop_watches();
    eventually("all 60 loads completed", Duration::from_secs(30), || {
        stats.completed.load(Ordering::SeqCst) == 60
    })
    .await;
    let max = stats.max_in_preparation.load(Ordering::SeqCst);
    assert!(
        max <= 5,
        "{max} loads in preparation with prepareQueueLength 5"
    );
    assert!(
        api.requests()
            .iter()
            .any(|r| r.injected && r.is(Verb::Patch, "datauploads")),
        "faults were exercised"
    );
    stop(replicas).await;
    mover.abort();
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: test\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metrics_report_preparation_admissions_holds_and_the_limit() {
    let api = FakeApi::new();
    api.seed(&node_agent_cm(2)).unwrap();
    seed_burst(&api, 5);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let mut c = config("n1", GateMode::Exact);
    c.metrics_addr = Some(addr);
    let replicas = vec![start(&api, c)];
    eventually("2 accepted", Duration::from_secs(10), || {
        count_phase(&api, "Accepted") == 2
    })
    .await;
    // Let a pass see its own accepts in the gauges.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(http_get(addr, "/readyz").await.starts_with("HTTP/1.0 200"));
    let metrics = http_get(addr, "/metrics").await;
    for needle in [
        "load_soothe_controller_admitted_total{kind=\"DataUpload\"} 2",
        "load_soothe_controller_loads_in_preparation 2",
        "load_soothe_controller_prepare_queue_limit 2",
        "load_soothe_controller_held_loads 3",
        "load_soothe_controller_holds_total{reason=\"LedgerFull\"} 3",
        "load_soothe_controller_wait_seconds_count 2",
        "load_soothe_controller_queue_depth 3",
    ] {
        assert!(metrics.contains(needle), "{needle} missing in\n{metrics}");
    }
    assert!(
        !metrics.contains("load_soothe_controller_ledger_writes_total 0"),
        "{metrics}"
    );
    stop(replicas).await;
}
