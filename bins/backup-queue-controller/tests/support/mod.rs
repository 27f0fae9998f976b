//! Test harness: seeding the API stand-in, running the real `run()`,
//! polling with deadlines, and an independent invariant checker.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use backup_queue_controller::{Config, StatusSubresource, Telemetry};
use controller_kit::{Shutdown, ShutdownReason};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use kube_fake_api::{FakeApi, id_of};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use velero_api::Backup;

pub const NS: &str = "velero";

/// A Backup including `namespaces`, created `minute` minutes after a fixed
/// instant, with the given phase and position.
pub fn backup(name: &str, namespaces: &[&str], minute: i64, phase: &str, position: i64) -> Value {
    let created = jiff::Timestamp::from_second(1_700_000_000 + 60 * minute).unwrap();
    let mut status = json!({});
    if !phase.is_empty() {
        status["phase"] = json!(phase);
    }
    if position > 0 {
        status["queuePosition"] = json!(position);
    }
    json!({
        "apiVersion": "velero.io/v1", "kind": "Backup",
        "metadata": {"name": name, "namespace": NS, "creationTimestamp": created.to_string()},
        "spec": {"includedNamespaces": namespaces, "storageLocation": "default"},
        "status": status,
    })
}

pub fn seed_backup(fake: &FakeApi, value: Value) {
    fake.seed_value(&id_of::<Backup>(), value).unwrap();
}

pub fn seed_namespaces(fake: &FakeApi, names: impl IntoIterator<Item = String>) {
    for name in names {
        fake.seed_value(
            &id_of::<Namespace>(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        )
        .unwrap();
    }
}

/// The design document's five backups, `--concurrent-backups=2`:
/// backup1 runs on ns1, ns2; backup2..5 are queued.
pub fn seed_design_scenario(fake: &FakeApi) {
    seed_namespaces(fake, (1..=9).map(|i| format!("ns{i}")));
    seed_backup(fake, backup("backup1", &["ns1", "ns2"], 1, "InProgress", 0));
    seed_backup(
        fake,
        backup("backup2", &["ns2", "ns3", "ns5"], 2, "Queued", 1),
    );
    seed_backup(fake, backup("backup3", &["ns4", "ns3"], 3, "Queued", 2));
    seed_backup(fake, backup("backup4", &["ns5", "ns6"], 4, "Queued", 2));
    seed_backup(fake, backup("backup5", &["ns8", "ns9"], 5, "Queued", 3));
}

/// Test settings: short backoffs, no metrics server.
pub fn config(concurrent_backups: u32) -> Config {
    Config {
        concurrent_backups,
        status_subresource: StatusSubresource::Auto,
        retry_backoff: Duration::from_millis(20),
        max_retry_backoff: Duration::from_millis(300),
        ..Config::new(NS)
    }
}

/// A running controller.
pub struct Running {
    /// The stand-in whose RBAC denials fail the test when it stops.
    pub checked: Option<FakeApi>,
    pub shutdown: Shutdown,
    pub task: JoinHandle<Result<ShutdownReason, backup_queue_controller::Error>>,
    pub metrics: backup_queue_controller::Metrics,
}

impl Running {
    /// Graceful stop; returns the reason.
    pub async fn stop(self) -> ShutdownReason {
        self.shutdown.trigger(ShutdownReason::Requested);
        let reason = tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("controller stops within 10 s")
            .unwrap()
            .unwrap();
        assert_no_denials(self.checked.as_ref());
        reason
    }

    /// A crash: the task is aborted wherever it is.
    pub async fn kill(self) {
        self.task.abort();
        let _ = self.task.await;
        assert_no_denials(self.checked.as_ref());
    }
}

fn assert_no_denials(fake: Option<&FakeApi>) {
    if let Some(fake) = fake {
        let denied = fake.denied();
        assert!(
            denied.is_empty(),
            "the generated manifests do not grant what the controller did:\n{}",
            denied.join("\n")
        );
    }
}

/// Starts the controller as its ServiceAccount with exactly the RBAC rules
/// of its generated manifests (namespaced variant); any request they deny
/// fails the test when the controller stops.
pub fn start_sa(fake: &FakeApi, config: Config) -> Running {
    let manifests = backup_queue_controller::manifests::render(
        backup_queue_controller::manifests::ManifestScope::Namespaced,
        NS,
        backup_queue_controller::manifests::DEFAULT_IMAGE,
    )
    .unwrap();
    fake.enforce_rbac(&manifests).unwrap();
    let mut running = start(
        fake.client_as(NS, backup_queue_controller::CONTROLLER_NAME),
        config,
    );
    running.checked = Some(fake.clone());
    running
}

pub fn start(client: kube::Client, config: Config) -> Running {
    let shutdown = Shutdown::new();
    let telemetry = Telemetry::default();
    let metrics = telemetry.metrics.clone();
    let task = tokio::spawn(backup_queue_controller::run_with(
        client,
        config,
        shutdown.clone(),
        telemetry,
    ));
    Running {
        checked: None,
        shutdown,
        task,
        metrics,
    }
}

/// Polls `cond` every 10 ms for up to `secs` seconds.
pub async fn eventually(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {secs} s waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// name → (phase, queuePosition) of every stored Backup.
pub fn phases(fake: &FakeApi) -> BTreeMap<String, (String, i64)> {
    fake.list::<Backup>(Some(NS))
        .unwrap()
        .into_iter()
        .map(|b| {
            let name = b.metadata.name.clone().unwrap();
            (name, (b.phase().as_str().to_owned(), b.queue_position()))
        })
        .collect()
}

pub fn expect(pairs: &[(&str, &str, i64)]) -> BTreeMap<String, (String, i64)> {
    pairs
        .iter()
        .map(|(n, p, q)| ((*n).to_owned(), ((*p).to_owned(), *q)))
        .collect()
}

pub fn annotation(fake: &FakeApi, name: &str) -> Option<String> {
    fake.get::<Backup>(Some(NS), name)
        .unwrap()
        .and_then(|b| b.metadata.annotations)
        .and_then(|a| a.get(backup_queue_controller::REASON_ANNOTATION).cloned())
}

/// (object name, reason, note) of the Events in the Velero namespace.
pub fn events(fake: &FakeApi) -> Vec<(String, String, String)> {
    fake.list::<K8sEvent>(Some(NS))
        .unwrap()
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

/// Sets a Backup's phase directly, as Velero's backup controller would.
pub fn set_phase(fake: &FakeApi, name: &str, phase: &str) {
    fake.modify_value(&id_of::<Backup>(), Some(NS), name, |v| {
        v["status"]["phase"] = json!(phase);
    })
    .unwrap();
}

/// Independent invariant checker: follows every Backup change through its
/// own watch and records violations of "active backups (ReadyToStart or
/// InProgress) never share a namespace and never exceed the limit". Test
/// backups name their namespaces literally, so overlap is set intersection.
pub struct InvariantChecker {
    pub violations: Arc<Mutex<Vec<String>>>,
    pub seen_events: Arc<Mutex<usize>>,
    task: JoinHandle<()>,
}

impl InvariantChecker {
    pub fn start(fake: &FakeApi, limit: usize) -> Self {
        Self::watching(Api::namespaced(fake.client(), NS), limit)
    }

    /// Follows the Backups of `api` (any server).
    pub fn watching(api: Api<Backup>, limit: usize) -> Self {
        let violations = Arc::new(Mutex::new(Vec::new()));
        let seen_events = Arc::new(Mutex::new(0));
        let task = tokio::spawn({
            let violations = violations.clone();
            let seen_events = seen_events.clone();
            async move {
                let mut state: BTreeMap<String, Backup> = BTreeMap::new();
                let mut relist: Option<BTreeMap<String, Backup>> = None;
                let mut stream = watcher(api, watcher::Config::default())
                    .default_backoff()
                    .boxed();
                while let Some(event) = stream.next().await {
                    match event {
                        Ok(watcher::Event::Init) => {
                            relist = Some(BTreeMap::new());
                            continue;
                        }
                        Ok(watcher::Event::InitApply(b)) => {
                            if let Some(r) = relist.as_mut() {
                                r.insert(b.metadata.name.clone().unwrap(), b);
                            }
                            continue;
                        }
                        Ok(watcher::Event::InitDone) => {
                            state = relist.take().unwrap_or_default();
                        }
                        Ok(watcher::Event::Apply(b)) => {
                            state.insert(b.metadata.name.clone().unwrap(), b);
                        }
                        Ok(watcher::Event::Delete(b)) => {
                            state.remove(b.metadata.name.as_deref().unwrap());
                        }
                        Err(_) => continue,
                    }
                    *seen_events.lock().unwrap() += 1;
                    if let Some(v) = check(&state, limit) {
                        violations.lock().unwrap().push(v);
                    }
                }
            }
        });
        Self {
            violations,
            seen_events,
            task,
        }
    }

    pub fn assert_clean(&self) {
        let v = self.violations.lock().unwrap();
        assert!(v.is_empty(), "invariant violations: {v:#?}");
        assert!(
            *self.seen_events.lock().unwrap() > 0,
            "the checker saw nothing"
        );
    }
}

impl Drop for InvariantChecker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn check(state: &BTreeMap<String, Backup>, limit: usize) -> Option<String> {
    let active: Vec<(&String, BTreeSet<&str>)> = state
        .iter()
        .filter(|(_, b)| matches!(b.phase().as_str(), "ReadyToStart" | "InProgress"))
        .map(|(n, b)| {
            let set = b
                .spec
                .included_namespaces
                .iter()
                .flatten()
                .map(String::as_str)
                .collect();
            (n, set)
        })
        .collect();
    if active.len() > limit {
        return Some(format!(
            "{} active backups, limit {limit}: {:?}",
            active.len(),
            active.iter().map(|a| a.0).collect::<Vec<_>>()
        ));
    }
    for (i, (a, sa)) in active.iter().enumerate() {
        for (b, sb) in &active[i + 1..] {
            if !sa.is_disjoint(sb) {
                return Some(format!("{a} and {b} are both active and share namespaces"));
            }
        }
    }
    None
}

/// No backup is `New`, positions are dense and no queued backup could
/// start (all `limit` slots are taken or nothing is queued).
pub fn queue_settled(fake: &FakeApi, limit: usize) -> bool {
    let p = phases(fake);
    let new = p.values().any(|(ph, _)| ph == "New");
    let active = p
        .values()
        .filter(|(ph, _)| ph == "ReadyToStart" || ph == "InProgress")
        .count();
    let queued = p.values().any(|(ph, _)| ph == "Queued");
    !new && positions_are_dense(fake) && (active == limit || !queued)
}

/// Queued backups have dense, distinct positions 1..n.
pub fn positions_are_dense(fake: &FakeApi) -> bool {
    let mut positions: Vec<i64> = phases(fake)
        .values()
        .filter(|(p, _)| p == "Queued")
        .map(|(_, q)| *q)
        .collect();
    positions.sort_unstable();
    positions
        .iter()
        .enumerate()
        .all(|(i, &q)| q == i as i64 + 1)
}

/// A client whose Backup PATCH requests are logged with a replica tag, to
/// tell which replica acted when.
#[derive(Clone)]
pub struct Tagged {
    pub inner: FakeApi,
    pub tag: &'static str,
    pub log: Arc<Mutex<Vec<(&'static str, tokio::time::Instant)>>>,
}

impl tower::Service<http::Request<kube::client::Body>> for Tagged {
    type Response = http::Response<kube_fake_api::ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<kube::client::Body>) -> Self::Future {
        if req.method() == http::Method::PATCH && req.uri().path().contains("/backups/") {
            self.log
                .lock()
                .unwrap()
                .push((self.tag, tokio::time::Instant::now()));
        }
        let mut inner = self.inner.clone();
        Box::pin(async move { tower::Service::call(&mut inner, req).await })
    }
}

impl Tagged {
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.clone(), "default")
    }
}
