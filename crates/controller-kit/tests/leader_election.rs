//! Leader election against the in-process API stand-in: one leader among
//! two contenders, hand-over on release, shutdown with a non-zero exit on
//! loss; and `run_controller`'s process life around it (standby readiness,
//! work outcome, dry-run without a Lease).

use std::time::Duration;

use controller_kit::leader::acquire_leadership;
use controller_kit::runner::{RunSettings, run_controller};
use controller_kit::server::Readiness;
use controller_kit::{LeaderElectionConfig, Shutdown, ShutdownReason};
use k8s_openapi::api::coordination::v1::Lease;
use kube_fake_api::{FakeApi, Fault, ResourceId};
use prometheus_client::registry::Registry;
use serde_json::json;

fn config(identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_name: "demo".into(),
        lease_namespace: "default".into(),
        identity: identity.into(),
        duration: Duration::from_secs(2),
        renew_before_expiry: Duration::from_secs(1),
    }
}

fn holder(fake: &FakeApi) -> Option<String> {
    fake.get::<Lease>(Some("default"), "demo")
        .unwrap()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
}

#[tokio::test]
async fn two_contenders_one_leader_and_hand_over_on_release() {
    let fake = FakeApi::new();
    let (sa, sb) = (Shutdown::new(), Shutdown::new());
    let mut a = tokio::spawn({
        let (c, s) = (fake.client(), sa.clone());
        async move { acquire_leadership(c, &config("a"), &s).await }
    });
    let mut b = tokio::spawn({
        let (c, s) = (fake.client(), sb.clone());
        async move { acquire_leadership(c, &config("b"), &s).await }
    });
    // Exactly one finishes: whichever holds the Lease.
    let (first, other, other_shutdown, first_id) = tokio::select! {
        r = &mut a => (r.unwrap().unwrap().unwrap(), b, sb.clone(), "a"),
        r = &mut b => (r.unwrap().unwrap().unwrap(), a, sa.clone(), "b"),
    };
    assert_eq!(holder(&fake).as_deref(), Some(first_id));
    // The other keeps waiting across several renewals.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!other.is_finished(), "two leaders at once");
    assert_eq!(holder(&fake).as_deref(), Some(first_id));
    // Releasing hands over.
    first.release().await.unwrap();
    let second = tokio::time::timeout(Duration::from_secs(10), other)
        .await
        .unwrap()
        .unwrap()
        .unwrap()
        .unwrap();
    assert_ne!(holder(&fake).as_deref(), Some(first_id));
    assert!(
        !sa.is_triggered() && !other_shutdown.is_triggered(),
        "a clean hand-over shuts nobody down"
    );
    second.release().await.unwrap();
}

#[tokio::test]
async fn losing_the_lease_triggers_shutdown_with_non_zero_exit() {
    let fake = FakeApi::new();
    let shutdown = Shutdown::new();
    let guard = acquire_leadership(fake.client(), &config("a"), &shutdown)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(holder(&fake).as_deref(), Some("a"));
    // Another replica takes the Lease over (e.g. after a long pause of ours).
    fake.modify_value(
        &ResourceId::new("coordination.k8s.io", "v1", "leases"),
        Some("default"),
        "demo",
        |l| {
            l["spec"]["holderIdentity"] = json!("intruder");
            l["spec"]["renewTime"] = json!(jiff::Timestamp::now().to_string());
        },
    )
    .unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(10), shutdown.triggered())
        .await
        .expect("loss noticed");
    assert_eq!(reason, ShutdownReason::LeaseLost);
    assert_ne!(reason.exit_code(), 0);
    let _ = guard.release().await;
}

#[tokio::test]
async fn a_leader_that_cannot_renew_steps_down_before_its_lease_can_expire() {
    let fake = FakeApi::new();
    let shutdown = Shutdown::new();
    let config = config("a");
    let guard = acquire_leadership(fake.client(), &config, &shutdown)
        .await
        .unwrap()
        .unwrap();
    let acquired = std::time::Instant::now();
    // Its token is revoked (or its namespace deleted): every request about
    // the Lease is refused from now on. Nobody else takes the Lease over.
    fake.inject(Fault::error(401, "Unauthorized", "Unauthorized").on_resource("leases"));
    let reason = tokio::time::timeout(Duration::from_secs(10), shutdown.triggered())
        .await
        .expect("the failed renewals are noticed");
    assert_eq!(reason, ShutdownReason::LeaseLost);
    let after = acquired.elapsed();
    let deadline = controller_kit::leader::renewal_deadline(&config);
    assert_eq!(deadline, Duration::from_millis(1500));
    assert!(
        after >= deadline && after < config.duration + Duration::from_millis(500),
        "stepped down after {after:?}"
    );
    assert_eq!(holder(&fake).as_deref(), Some("a"), "nobody took it over");
    drop(guard);
}

#[test]
fn the_renewal_deadline_leaves_half_the_renewal_margin_before_expiry() {
    let config = LeaderElectionConfig {
        duration: Duration::from_secs(15),
        renew_before_expiry: Duration::from_secs(5),
        ..config("a")
    };
    assert_eq!(
        controller_kit::leader::renewal_deadline(&config),
        Duration::from_millis(12_500)
    );
}

#[tokio::test]
async fn shutdown_while_waiting_returns_none() {
    let fake = FakeApi::new();
    let leader_shutdown = Shutdown::new();
    let guard = acquire_leadership(fake.client(), &config("a"), &leader_shutdown)
        .await
        .unwrap()
        .unwrap();
    let follower_shutdown = Shutdown::new();
    let waiting = tokio::spawn({
        let (c, s) = (fake.client(), follower_shutdown.clone());
        async move { acquire_leadership(c, &config("b"), &s).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    follower_shutdown.trigger(ShutdownReason::Signal("SIGTERM"));
    let r = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(r.is_none());
    assert_eq!(holder(&fake).as_deref(), Some("a"));
    guard.release().await.unwrap();
}

#[derive(Debug, PartialEq)]
enum WorkFailed {
    Work,
    Kit(String),
}
impl std::fmt::Display for WorkFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Work => f.write_str("work failed"),
            Self::Kit(e) => write!(f, "controller-kit: {e}"),
        }
    }
}
impl From<controller_kit::Error> for WorkFailed {
    fn from(e: controller_kit::Error) -> Self {
        Self::Kit(e.to_string())
    }
}

/// Settings for `run_controller` without an HTTP server.
fn settings(leader: Option<LeaderElectionConfig>, dry_run: bool) -> (RunSettings, Readiness) {
    let readiness = Readiness::new();
    let settings = RunSettings {
        metrics_addr: None,
        leader,
        dry_run,
        registry: Registry::default(),
        readiness: readiness.clone(),
        fence: controller_kit::WriteFence::new(),
    };
    (settings, readiness)
}

/// Waits up to 10 s for `cond`, failing with `what`.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What a spawned `run_controller` returned, within 10 s.
async fn finished(
    task: tokio::task::JoinHandle<Result<ShutdownReason, WorkFailed>>,
) -> Result<ShutdownReason, WorkFailed> {
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("run_controller did not return within 10 s")
        .expect("run_controller task panicked")
}

#[tokio::test]
async fn run_controller_stops_work_on_loss_and_reports_exit_code() {
    let fake = FakeApi::new();
    let shutdown = Shutdown::new();
    let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let work = {
        let (s, stopped) = (shutdown.clone(), stopped.clone());
        move || async move {
            s.signalled().await;
            stopped.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok::<(), WorkFailed>(())
        }
    };
    let (settings, readiness) = settings(Some(config("a")), false);
    let runner = tokio::spawn({
        let (c, s) = (fake.client(), shutdown.clone());
        async move { run_controller(c, settings, s, work).await }
    });
    eventually("never became leader", || {
        holder(&fake).as_deref() == Some("a")
    })
    .await;
    // Ready while standing by; not ready once leading, until the work says so.
    eventually(
        "a leader stays not ready until its work marks itself ready",
        || !readiness.is_ready(),
    )
    .await;
    fake.modify_value(
        &ResourceId::new("coordination.k8s.io", "v1", "leases"),
        Some("default"),
        "demo",
        |l| {
            l["spec"]["holderIdentity"] = json!("intruder");
            l["spec"]["renewTime"] = json!(jiff::Timestamp::now().to_string());
        },
    )
    .unwrap();
    let reason = finished(runner).await.unwrap();
    assert_eq!(reason, ShutdownReason::LeaseLost);
    assert_eq!(reason.exit_code(), 2);
    assert!(
        stopped.load(std::sync::atomic::Ordering::SeqCst),
        "work observed the shutdown"
    );
    assert_eq!(
        holder(&fake).as_deref(),
        Some("intruder"),
        "a lost Lease is not released over the new holder"
    );
}

#[tokio::test]
async fn a_standby_replica_is_ready_while_it_waits_for_the_lease() {
    let fake = FakeApi::new();
    let (leader_shutdown, standby_shutdown) = (Shutdown::new(), Shutdown::new());
    let (leader_settings, _) = settings(Some(config("a")), false);
    let leader = tokio::spawn({
        let (c, s) = (fake.client(), leader_shutdown.clone());
        let signalled = s.clone();
        async move {
            run_controller(c, leader_settings, s, move || async move {
                signalled.signalled().await;
                Ok::<(), WorkFailed>(())
            })
            .await
        }
    });
    eventually("never became leader", || {
        holder(&fake).as_deref() == Some("a")
    })
    .await;
    let (standby_settings, standby_ready) = settings(Some(config("b")), false);
    let worked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let standby = tokio::spawn({
        let (c, s, worked) = (fake.client(), standby_shutdown.clone(), worked.clone());
        async move {
            run_controller(c, standby_settings, s, move || async move {
                worked.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok::<(), WorkFailed>(())
            })
            .await
        }
    });
    eventually("standby never ready", || standby_ready.is_ready()).await;
    standby_shutdown.trigger(ShutdownReason::Signal("SIGTERM"));
    let reason = finished(standby).await.unwrap();
    assert_eq!(reason.exit_code(), 0);
    assert!(
        !worked.load(std::sync::atomic::Ordering::SeqCst),
        "a standby never runs the work"
    );
    assert_eq!(holder(&fake).as_deref(), Some("a"));
    leader_shutdown.trigger(ShutdownReason::Requested);
    let reason = finished(leader).await.unwrap();
    assert_eq!(reason, ShutdownReason::Requested);
}

#[tokio::test]
async fn run_controller_without_election_reports_work_outcome() {
    let fake = FakeApi::new();
    let ok = run_controller(
        fake.client(),
        settings(None, false).0,
        Shutdown::new(),
        || async { Ok::<(), WorkFailed>(()) },
    )
    .await
    .unwrap();
    assert_eq!(ok, ShutdownReason::Requested);
    let shutdown = Shutdown::new();
    let failed = run_controller(
        fake.client(),
        settings(None, false).0,
        shutdown.clone(),
        || async { Err::<(), _>(WorkFailed::Work) },
    )
    .await;
    assert_eq!(failed, Err(WorkFailed::Work));
    assert_eq!(
        shutdown.reason(),
        Some(ShutdownReason::Fatal("work failed".into()))
    );
    assert_eq!(shutdown.reason().map(|r| r.exit_code()), Some(1));
    // A signal that came first wins over the work's own outcome.
    let s = Shutdown::new();
    s.trigger(ShutdownReason::Signal("SIGTERM"));
    let r = run_controller(fake.client(), settings(None, false).0, s, || async {
        Ok::<(), WorkFailed>(())
    })
    .await
    .unwrap();
    assert_eq!(r.exit_code(), 0);
    assert!(
        fake.requests().is_empty(),
        "no Lease traffic without election"
    );
}

#[tokio::test]
async fn dry_run_skips_leader_election() {
    let fake = FakeApi::new();
    let worked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reason = run_controller(
        fake.client(),
        settings(Some(config("a")), true).0,
        Shutdown::new(),
        {
            let worked = worked.clone();
            move || async move {
                worked.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok::<(), WorkFailed>(())
            }
        },
    )
    .await
    .unwrap();
    assert_eq!(reason, ShutdownReason::Requested);
    assert!(worked.load(std::sync::atomic::Ordering::SeqCst));
    assert!(
        fake.requests().is_empty(),
        "--dry-run takes no Lease: {:?}",
        fake.requests()
    );
}
