//! The two loops a controller may run beside its snapshot runtime: one
//! child loop per watched object (`fleet`), and a start-up condition
//! probed again while it cannot be decided (`precondition`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use controller_kit::fleet::{self, Fleet, Member};
use controller_kit::precondition::{self, Precondition, Probe};
use controller_kit::server::Readiness;
use controller_kit::{Shutdown, ShutdownReason};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta};
use kube::runtime::watcher;
use kube_fake_api::{FakeApi, ResourceId, eventually};

const WAIT: Duration = Duration::from_secs(10);

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("ns".to_owned()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// What the children did, in order: `start ns/a`, `stop ns/a`, ...
#[derive(Clone, Default)]
struct Journal(Arc<Mutex<Vec<String>>>);

impl Journal {
    fn push(&self, entry: String) {
        self.0.lock().unwrap().push(entry);
    }

    fn count(&self, entry: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|e| *e == entry)
            .count()
    }

    fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

#[tokio::test]
async fn a_loop_runs_per_object_from_its_arrival_to_its_deletion_and_shutdown_stops_every_loop() {
    let fake = FakeApi::new();
    fake.seed(&config_map("a")).unwrap();
    fake.seed(&config_map("b")).unwrap();
    let journal = Journal::default();
    let readiness = Readiness::new();
    let shutdown = Shutdown::new();
    let fleet = Fleet {
        api: Api::<ConfigMap>::namespaced(fake.client(), "ns"),
        config: watcher::Config::default(),
        recheck: Duration::from_millis(50),
    };
    let start = {
        let journal = journal.clone();
        move |member: Member, stop: Shutdown| {
            let journal = journal.clone();
            async move {
                journal.push(format!("start {member}"));
                Ok::<_, String>(async move {
                    stop.triggered().await;
                    journal.push(format!("stop {member}"));
                })
            }
        }
    };
    let task = tokio::spawn({
        let (readiness, shutdown) = (readiness.clone(), shutdown.clone());
        async move { fleet::supervise(fleet, &readiness, &shutdown, start).await }
    });

    eventually("a and b started", WAIT, || {
        journal.count("start ns/a") == 1 && journal.count("start ns/b") == 1
    })
    .await;
    assert!(readiness.is_ready());

    let id = ResourceId::new("", "v1", "configmaps");
    fake.remove_value(&id, Some("ns"), "a").unwrap();
    eventually("a stopped", WAIT, || journal.count("stop ns/a") == 1).await;
    fake.seed(&config_map("c")).unwrap();
    eventually("c started", WAIT, || journal.count("start ns/c") == 1).await;

    shutdown.trigger(ShutdownReason::Requested);
    task.await.unwrap().unwrap();
    let entries = journal.entries();
    for member in ["ns/b", "ns/c"] {
        assert_eq!(journal.count(&format!("stop {member}")), 1, "{entries:?}");
    }
    // Nothing was started twice: no loop ended on its own.
    assert_eq!(journal.count("start ns/a"), 1, "{entries:?}");
    assert_eq!(journal.count("start ns/b"), 1, "{entries:?}");
}

#[tokio::test]
async fn a_member_that_cannot_start_or_whose_loop_ends_is_started_again_from_scratch() {
    let fake = FakeApi::new();
    fake.seed(&config_map("flaky")).unwrap();
    let journal = Journal::default();
    let attempts = Arc::new(Mutex::new(0_u32));
    let shutdown = Shutdown::new();
    let fleet = Fleet {
        api: Api::<ConfigMap>::namespaced(fake.client(), "ns"),
        config: watcher::Config::default(),
        recheck: Duration::from_millis(30),
    };
    let start = {
        let (journal, attempts) = (journal.clone(), attempts.clone());
        move |member: Member, _stop: Shutdown| {
            let (journal, attempts) = (journal.clone(), attempts.clone());
            async move {
                let attempt = {
                    let mut attempts = attempts.lock().unwrap();
                    *attempts += 1;
                    *attempts
                };
                // The first two preparations fail (a Secret not there yet).
                if attempt <= 2 {
                    return Err(format!("attempt {attempt}: not yet"));
                }
                journal.push(format!("start {member}"));
                // The loop ends on its own (its credentials stopped working).
                Ok(async {})
            }
        }
    };
    let task = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { fleet::supervise(fleet, &Readiness::new(), &shutdown, start).await }
    });
    eventually("the loop started three times", WAIT, || {
        journal.count("start ns/flaky") >= 3
    })
    .await;
    shutdown.trigger(ShutdownReason::Requested);
    task.await.unwrap().unwrap();
    assert!(*attempts.lock().unwrap() >= 5);
}

/// A probe answering from a script, then `Met` for ever.
fn scripted(answers: &[Probe]) -> impl FnMut() -> std::future::Ready<Probe> + Send + 'static {
    let answers = Arc::new(Mutex::new(answers.iter().cloned().collect::<VecDeque<_>>()));
    move || std::future::ready(answers.lock().unwrap().pop_front().unwrap_or(Probe::Met))
}

const CRD_CHECK: Precondition = Precondition {
    key: "crd",
    retry: Duration::from_millis(10),
    max_retry: Duration::from_millis(40),
};

#[tokio::test]
async fn a_met_precondition_lets_the_controller_go_on_and_an_unmet_one_stops_it_at_once() {
    let (readiness, shutdown) = (Readiness::new(), Shutdown::new());
    readiness.set_ready(true);
    precondition::require(CRD_CHECK, &readiness, &shutdown, scripted(&[Probe::Met]))
        .await
        .unwrap();
    assert!(readiness.is_ready());

    let unmet = precondition::require(
        CRD_CHECK,
        &readiness,
        &shutdown,
        scripted(&[Probe::Unmet("too old".to_owned())]),
    )
    .await;
    assert_eq!(unmet, Err("too old".to_owned()));
    assert!(!shutdown.is_triggered());
}

#[tokio::test]
async fn an_undecided_precondition_holds_readiness_down_until_it_is_met() {
    let (readiness, shutdown) = (Readiness::new(), Shutdown::new());
    readiness.set_ready(true);
    let unknown = |n: u32| Probe::Unknown(format!("forbidden ({n})"));
    precondition::require(
        CRD_CHECK,
        &readiness,
        &shutdown,
        scripted(&[unknown(1), unknown(2), unknown(3)]),
    )
    .await
    .unwrap();
    assert!(!readiness.is_ready());
    let reasons = readiness.reasons();
    assert!(
        reasons.len() == 1 && reasons[0].starts_with("forbidden ("),
        "{reasons:?}"
    );
    eventually("ready once met", WAIT, || readiness.is_ready()).await;
    assert!(readiness.reasons().is_empty());
    assert!(!shutdown.is_triggered());
}

#[tokio::test]
async fn an_undecided_precondition_found_unmet_later_stops_the_controller() {
    let (readiness, shutdown) = (Readiness::new(), Shutdown::new());
    precondition::require(
        CRD_CHECK,
        &readiness,
        &shutdown,
        scripted(&[
            Probe::Unknown("forbidden".to_owned()),
            Probe::Unmet("too old".to_owned()),
        ]),
    )
    .await
    .unwrap();
    let reason = tokio::time::timeout(WAIT, shutdown.triggered())
        .await
        .unwrap();
    assert_eq!(reason, ShutdownReason::Fatal("too old".to_owned()));
}
