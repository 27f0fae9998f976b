//! The pickup nudge against a small simulation of Velero's backup
//! controller, which (like Velero's, `pkg/controller/backup_controller.go`
//! `SetupWithManager`) ignores Create events — including the ADDED events
//! of its initial list after a restart — and starts a Backup only on an
//! Update event whose new phase is `ReadyToStart`.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher;
use kube_fake_api::{FakeApi, crds};
use serde_json::json;
use support::*;
use tokio::task::JoinHandle;
use velero_api::{Backup, BackupPhase};

/// Velero's backup controller, reduced to its predicate and first step:
/// an Update to `ReadyToStart` → `InProgress`; `InProgress` backups it
/// started complete after `runtime`.
fn velero(client: kube::Client, runtime: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let api: Api<Backup> = Api::namespaced(client, NS);
        let mut seen = BTreeSet::new();
        let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
        while let Some(Ok(event)) = events.next().await {
            let backup = match event {
                // Creates, and everything the initial list shows, are not Updates.
                watcher::Event::InitApply(b) => {
                    seen.insert(b.name_any());
                    continue;
                }
                watcher::Event::Apply(b) => {
                    if seen.insert(b.name_any()) {
                        continue;
                    }
                    b
                }
                _ => continue,
            };
            if backup.phase() != BackupPhase::ReadyToStart {
                continue;
            }
            let name = backup.name_any();
            let params = PatchParams::default();
            let in_progress = json!({"status": {"phase": "InProgress"}});
            if api
                .patch(&name, &params, &Patch::Merge(&in_progress))
                .await
                .is_err()
            {
                continue;
            }
            let api = api.clone();
            tokio::spawn(async move {
                tokio::time::sleep(runtime).await;
                let done = json!({"status": {"phase": "Completed"}});
                let _ = api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&done))
                    .await;
            });
        }
    })
}

fn fake() -> FakeApi {
    let fake = FakeApi::new();
    fake.install_crds(crds::VELERO_1_18_BACKUP).unwrap();
    seed_namespaces(&fake, ["a", "b", "c"].map(String::from));
    fake
}

fn phase(fake: &FakeApi, name: &str) -> String {
    phases(fake)
        .get(name)
        .map(|(p, _)| p.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn ready_to_start_backups_left_by_a_velero_restart_are_nudged_until_velero_starts_them() {
    let fake = fake();
    // Velero is down while the queue controller makes backups ready.
    seed_backup(&fake, backup("b1", &["a"], 1, "New", 0));
    seed_backup(&fake, backup("b2", &["b"], 2, "New", 0));
    seed_backup(&fake, backup("b3", &["c"], 3, "New", 0));
    let mut cfg = config(2);
    cfg.pickup_timeout = Duration::from_millis(400);
    let ctl = start_sa(&fake, cfg);
    eventually("two ready, one queued", 10, || {
        phase(&fake, "b1") == "ReadyToStart"
            && phase(&fake, "b2") == "ReadyToStart"
            && phase(&fake, "b3") == "Queued"
    })
    .await;
    // Velero (re)starts: its initial list shows b1 and b2 ReadyToStart,
    // which its create predicate ignores. Only the nudge gets them going;
    // the freed slots then start b3 the ordinary way.
    let velero = velero(fake.client(), Duration::from_millis(200));
    eventually("all completed", 15, || {
        ["b1", "b2", "b3"]
            .iter()
            .all(|b| phase(&fake, b) == "Completed")
    })
    .await;
    let nudged = ctl.metrics.pickup_nudges.get();
    assert!(nudged >= 2, "nudges: {nudged}");
    for b in ["b1", "b2"] {
        assert!(
            events(&fake).iter().any(|(o, r, n)| o == b
                && r == "PickupNudged"
                && n.contains("not started by Velero")),
            "{b}: {:?}",
            events(&fake)
        );
        let stored = fake.get::<Backup>(Some(NS), b).unwrap().unwrap();
        assert!(
            stored
                .annotations()
                .contains_key(backup_queue_controller::pickup::PICKUP_ANNOTATION)
        );
    }
    // b3 was started by the ordinary Update of its dequeue, not nudged.
    assert!(
        !events(&fake)
            .iter()
            .any(|(o, r, _)| o == "b3" && r == "PickupNudged")
    );
    velero.abort();
    ctl.stop().await;
}

#[tokio::test]
async fn nudges_repeat_every_timeout_while_velero_stays_away_with_one_event() {
    let fake = fake();
    seed_backup(&fake, backup("b1", &["a"], 1, "New", 0));
    let mut cfg = config(1);
    cfg.pickup_timeout = Duration::from_millis(300);
    let ctl = start_sa(&fake, cfg);
    eventually("ready", 10, || phase(&fake, "b1") == "ReadyToStart").await;
    // One nudge per 300 ms (a pass every 75 ms): 5 or 6 in two seconds,
    // counting from readiness, never more than one per timeout.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let nudged = ctl.metrics.pickup_nudges.get();
    assert!((4..=7).contains(&nudged), "nudges in 2 s: {nudged}");
    let published = events(&fake)
        .iter()
        .filter(|(o, r, _)| o == "b1" && r == "PickupNudged")
        .count();
    assert_eq!(published, 1, "one Event per wait: {:?}", events(&fake));
    ctl.stop().await;
}

#[tokio::test]
async fn with_velero_running_nothing_is_nudged() {
    let fake = fake();
    let velero = velero(fake.client(), Duration::from_millis(100));
    // Let Velero's watch list the empty namespace first.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut cfg = config(1);
    cfg.pickup_timeout = Duration::from_millis(300);
    let ctl = start_sa(&fake, cfg);
    for (i, b) in ["b1", "b2", "b3"].iter().enumerate() {
        let mut value = backup(b, &["a"], i as i64, "New", 0);
        value["metadata"]["creationTimestamp"] = json!(jiff::Timestamp::now().to_string());
        seed_backup(&fake, value);
    }
    eventually("all completed", 15, || {
        ["b1", "b2", "b3"]
            .iter()
            .all(|b| phase(&fake, b) == "Completed")
    })
    .await;
    assert_eq!(ctl.metrics.pickup_nudges.get(), 0);
    velero.abort();
    ctl.stop().await;
}
