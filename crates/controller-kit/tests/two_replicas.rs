//! Two replicas of a tiny controller built from controller-kit pieces and
//! run by `run_controller`, against kube-fake-api: only the leader acts; a
//! crashed leader is replaced after the Lease expires; dry-run writes
//! nothing, not even the Lease.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use controller_kit::events::EventPublisher;
use controller_kit::metrics::{ControllerMetrics, ErrorKind};
use controller_kit::runner::{RunSettings, run_controller};
use controller_kit::server::Readiness;
use controller_kit::{LeaderElectionConfig, Shutdown, ShutdownReason};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::runtime::{Controller, watcher};
use kube::{Resource, ResourceExt};
use kube_fake_api::{FakeApi, Verb};
use prometheus_client::registry::Registry;
use serde_json::json;

#[derive(Debug)]
struct Failed(kube::Error);
impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl std::error::Error for Failed {}
impl From<controller_kit::Error> for Failed {
    fn from(e: controller_kit::Error) -> Self {
        match e {
            controller_kit::Error::Kube(k) => Failed(k),
            other => Failed(kube::Error::Service(other.to_string().into())),
        }
    }
}
impl ErrorKind for Failed {
    fn kind(&self) -> &'static str {
        "kube_api"
    }
}

struct Ctx {
    client: kube::Client,
    identity: String,
    dry_run: bool,
    events: EventPublisher,
    metrics: ControllerMetrics,
    reconciled: Arc<AtomicUsize>,
}

/// Marks every ConfigMap with the identity of the replica that handled it.
async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Failed> {
    let _timer = ctx.metrics.reconcile_started();
    ctx.reconciled.fetch_add(1, Ordering::SeqCst);
    if cm.labels().get("handled-by").is_some() {
        return Ok(Action::await_change());
    }
    if !ctx.dry_run {
        let api: Api<ConfigMap> =
            Api::namespaced(ctx.client.clone(), &cm.namespace().unwrap_or_default());
        let patch = json!({"metadata": {"labels": {"handled-by": ctx.identity}}});
        api.patch(
            &cm.name_any(),
            &PatchParams {
                field_manager: Some(ctx.identity.clone()),
                ..PatchParams::default()
            },
            &Patch::Merge(&patch),
        )
        .await
        .map_err(Failed)?;
    }
    let ev = Event {
        type_: EventType::Normal,
        reason: "Handled".into(),
        note: None,
        action: "Label".into(),
        secondary: None,
    };
    ctx.events
        .publish(&ev, &cm.object_ref(&()))
        .await
        .map_err(Failed::from)?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<ConfigMap>, err: &Failed, ctx: Arc<Ctx>) -> Action {
    ctx.metrics.record_error(err);
    Action::requeue(Duration::from_millis(100))
}

fn election(identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_name: "demo".into(),
        lease_namespace: "default".into(),
        identity: identity.into(),
        duration: Duration::from_secs(2),
        renew_before_expiry: Duration::from_secs(1),
    }
}

struct Replica {
    shutdown: Shutdown,
    task: tokio::task::JoinHandle<ShutdownReason>,
    reconciled: Arc<AtomicUsize>,
}

fn replica(fake: &FakeApi, identity: &str, dry_run: bool) -> Replica {
    let shutdown = Shutdown::new();
    let client = fake.client();
    let reconciled = Arc::new(AtomicUsize::new(0));
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        identity: identity.into(),
        dry_run,
        events: EventPublisher::new(client.clone(), "demo", Some(identity.into()), dry_run),
        metrics: ControllerMetrics::register(&mut Registry::default(), "demo"),
        reconciled: reconciled.clone(),
    });
    let settings = RunSettings {
        metrics_addr: None,
        leader: Some(election(identity)),
        dry_run,
        registry: Registry::default(),
        readiness: Readiness::new(),
        fence: controller_kit::WriteFence::new(),
    };
    let task = tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
            let signalled = shutdown.signalled();
            let work = move || async move {
                Controller::new(cms, watcher::Config::default())
                    .graceful_shutdown_on(signalled)
                    .run(reconcile, error_policy, ctx)
                    .for_each(|_| async {})
                    .await;
                Ok::<(), Failed>(())
            };
            run_controller(client, settings, shutdown, work)
                .await
                .unwrap()
        }
    });
    Replica {
        shutdown,
        task,
        reconciled,
    }
}

fn handlers(fake: &FakeApi) -> Vec<String> {
    let mut ids: Vec<String> = fake
        .list::<ConfigMap>(Some("default"))
        .unwrap()
        .iter()
        .filter_map(|c| c.labels().get("handled-by").cloned())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn create(fake: &FakeApi, name: &str) {
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<ConfigMap>::namespaced(fake.client(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
}

#[tokio::test]
async fn only_the_leader_acts_and_a_crashed_leader_is_replaced() {
    let fake = FakeApi::new();
    for n in ["a", "b", "c"] {
        create(&fake, n).await;
    }
    let a = replica(&fake, "replica-a", false);
    let b = replica(&fake, "replica-b", false);
    eventually("all handled", || {
        fake.list::<ConfigMap>(Some("default"))
            .unwrap()
            .iter()
            .all(|c| c.labels().contains_key("handled-by"))
    })
    .await;
    let first = handlers(&fake);
    assert_eq!(first.len(), 1, "one replica acted: {first:?}");
    let (leader_task, follower_shutdown, follower_task) = if first[0] == "replica-a" {
        (a.task, b.shutdown, b.task)
    } else {
        (b.task, a.shutdown, a.task)
    };

    // Crash the leader (no release): the follower takes over after expiry.
    leader_task.abort();
    create(&fake, "d").await;
    eventually("follower handles new objects", || {
        handlers(&fake).len() == 2
    })
    .await;
    let writers: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.is(Verb::Patch, "configmaps"))
        .filter_map(|r| r.field_manager.clone())
        .collect();
    assert!(
        writers.iter().filter(|w| **w != first[0]).count() == 1,
        "the new leader only handled the new object: {writers:?}"
    );

    follower_shutdown.trigger(ShutdownReason::Signal("SIGTERM"));
    let reason = tokio::time::timeout(Duration::from_secs(10), follower_task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reason.exit_code(), 0);
}

#[tokio::test]
async fn dry_run_replica_writes_nothing() {
    let fake = FakeApi::new();
    create(&fake, "a").await;
    fake.clear_requests();
    let r = replica(&fake, "replica-a", true);
    eventually("reconciled", || r.reconciled.load(Ordering::SeqCst) > 0).await;
    r.shutdown.trigger(ShutdownReason::Requested);
    tokio::time::timeout(Duration::from_secs(10), r.task)
        .await
        .unwrap()
        .unwrap();
    let writes: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.is_write())
        .collect();
    assert!(writes.is_empty(), "dry-run wrote {writes:?}");
    assert!(handlers(&fake).is_empty());
}
