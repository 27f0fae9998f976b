//! End to end: the real `run()` against the in-process API stand-in
//! (`kube-fake-api`). Outcomes are asserted on object state.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use backup_queue_controller::StatusSubresource;
use controller_kit::LeaderElectionConfig;
use kube_fake_api::{FakeApi, Fault, ResourceInfo, Verb, id_of};
use serde_json::json;
use support::*;
use velero_api::Backup;

/// A stand-in with Velero 1.18's Backup CRD (schema-checked writes).
fn velero_1_18() -> FakeApi {
    let fake = FakeApi::new();
    fake.install_crds(kube_fake_api::crds::VELERO_1_18_BACKUP)
        .unwrap();
    fake
}

fn design_steady_state() -> std::collections::BTreeMap<String, (String, i64)> {
    expect(&[
        ("backup1", "InProgress", 0),
        ("backup2", "Queued", 1),
        ("backup3", "Queued", 2),
        ("backup4", "Queued", 3),
        ("backup5", "ReadyToStart", 0),
    ])
}

#[tokio::test]
async fn design_scenario_with_concurrency_2_converges_to_the_expected_phases_and_positions() {
    let fake = velero_1_18();
    seed_design_scenario(&fake);
    let checker = InvariantChecker::start(&fake, 2);
    let ctl = start_sa(&fake, config(2));
    eventually("design steady state", 10, || {
        phases(&fake) == design_steady_state()
    })
    .await;
    eventually("reasons written", 10, || {
        annotation(&fake, "backup4").is_some()
    })
    .await;
    assert_eq!(
        annotation(&fake, "backup2").as_deref(),
        Some("waiting because it overlaps backup backup1 (InProgress) on namespaces [ns2]")
    );
    assert_eq!(
        annotation(&fake, "backup3").as_deref(),
        Some(
            "waiting because it overlaps backup backup2, queued ahead of it at position 1, on namespaces [ns3]"
        )
    );
    assert_eq!(annotation(&fake, "backup5"), None);
    eventually("events published", 10, || {
        let ev = events(&fake);
        ev.iter().any(|(o, r, n)| {
            o == "backup5" && r == "Started" && n.starts_with("started after waiting ")
        }) && ev
            .iter()
            .any(|(o, r, n)| o == "backup2" && r == "Waiting" && n.contains("backup1"))
    })
    .await;
    assert_eq!(ctl.metrics.dequeues.get(), 1);
    assert_eq!(ctl.metrics.conflicts.get(), 0);
    assert_eq!(ctl.metrics.active_backups.get(), 2);
    assert_eq!(ctl.metrics.controller.queue_depth.get(), 3);
    // Only status and our annotation were written: the spec is intact.
    let b2 = fake.get::<Backup>(Some(NS), "backup2").unwrap().unwrap();
    assert_eq!(b2.spec.storage_location.as_deref(), Some("default"));
    assert!(
        fake.requests()
            .iter()
            .all(|r| !r.is(Verb::Update, "backups")),
        "never replace()"
    );
    ctl.stop().await;
    checker.assert_clean();
}

#[tokio::test]
async fn new_backups_are_queued_and_started_in_creation_order() {
    let fake = velero_1_18();
    seed_namespaces(&fake, ["a", "b", "c"].map(String::from));
    seed_backup(&fake, backup("first", &["a"], 1, "", 0));
    seed_backup(&fake, backup("second", &["a", "b"], 2, "New", 0));
    seed_backup(&fake, backup("third", &["c"], 3, "", 0));
    let checker = InvariantChecker::start(&fake, 1);
    let ctl = start_sa(&fake, config(1));
    eventually("first starts, the others queue", 10, || {
        phases(&fake)
            == expect(&[
                ("first", "ReadyToStart", 0),
                ("second", "Queued", 1),
                ("third", "Queued", 2),
            ])
    })
    .await;
    eventually("queued events", 10, || {
        events(&fake)
            .iter()
            .any(|(o, r, n)| o == "second" && r == "Queued" && n == "queued at position 1")
    })
    .await;
    ctl.stop().await;
    checker.assert_clean();
}

#[tokio::test]
async fn a_backup_finishing_starts_the_next_one() {
    let fake = velero_1_18();
    seed_design_scenario(&fake);
    let checker = InvariantChecker::start(&fake, 2);
    let ctl = start_sa(&fake, config(2));
    eventually("design steady state", 10, || {
        phases(&fake) == design_steady_state()
    })
    .await;
    set_phase(&fake, "backup1", "Completed");
    eventually("backup2 starts; 3 and 4 move up", 10, || {
        phases(&fake)
            == expect(&[
                ("backup1", "Completed", 0),
                ("backup2", "ReadyToStart", 0),
                ("backup3", "Queued", 1),
                ("backup4", "Queued", 2),
                ("backup5", "ReadyToStart", 0),
            ])
    })
    .await;
    eventually("reason removed on start", 10, || {
        annotation(&fake, "backup2").is_none()
    })
    .await;
    // Velero runs backup2 and backup5 to completion: 3 and 4 both start.
    set_phase(&fake, "backup2", "Completed");
    set_phase(&fake, "backup5", "Completed");
    eventually("backup3 and backup4 start", 10, || {
        let p = phases(&fake);
        p["backup3"].0 == "ReadyToStart" && p["backup4"].0 == "ReadyToStart"
    })
    .await;
    assert_eq!(ctl.metrics.dequeues.get(), 4);
    ctl.stop().await;
    checker.assert_clean();
}

/// 16 backups over 4 namespaces, all `New`, concurrency 2.
fn seed_many(fake: &FakeApi) {
    seed_namespaces(fake, ["a", "b", "c", "d"].map(String::from));
    let sets: [&[&str]; 4] = [&["a", "b"], &["b", "c"], &["c", "d"], &["d"]];
    for i in 0..16 {
        seed_backup(
            fake,
            backup(&format!("b{i:02}"), sets[i % 4], i as i64, "", 0),
        );
    }
}

#[tokio::test]
async fn killed_and_restarted_mid_renumbering_loses_nothing_and_never_overlaps() {
    let fake = velero_1_18();
    seed_many(&fake);
    let checker = InvariantChecker::start(&fake, 2);
    // Slow writes, so the kill lands in the middle of a plan.
    fake.inject(
        Fault::latency(Duration::from_millis(15))
            .on_verb(Verb::Patch)
            .on_resource("backups"),
    );
    for round in 0..6 {
        let ctl = start_sa(&fake, config(2));
        // Let it write part of the plan, then crash it.
        let before = fake
            .requests()
            .iter()
            .filter(|r| r.is(Verb::Patch, "backups"))
            .count();
        eventually("some progress", 10, || {
            fake.requests()
                .iter()
                .filter(|r| r.is(Verb::Patch, "backups"))
                .count()
                >= before + 3
                || queue_settled(&fake, 2)
        })
        .await;
        ctl.kill().await;
        // Velero finishes whatever runs, so renumbering continues next round.
        if round % 2 == 1 {
            for (name, (phase, _)) in phases(&fake) {
                if phase == "ReadyToStart" {
                    set_phase(&fake, &name, "Completed");
                }
            }
        }
    }
    fake.clear_faults();
    let ctl = start_sa(&fake, config(2));
    eventually(
        "queue settles with dense positions and full slots",
        10,
        || {
            let p = phases(&fake);
            let active = p.values().filter(|(ph, _)| ph == "ReadyToStart").count();
            let new = p
                .values()
                .filter(|(ph, _)| ph == "New" || ph.is_empty())
                .count();
            new == 0 && active >= 1 && positions_are_dense(&fake)
        },
    )
    .await;
    // Nothing lost: every backup is accounted for.
    assert_eq!(phases(&fake).len(), 16);
    // Drain: complete every started backup until none is left.
    eventually("all backups ran", 20, || {
        for (name, (phase, _)) in phases(&fake) {
            if phase == "ReadyToStart" {
                set_phase(&fake, &name, "Completed");
            }
        }
        phases(&fake).values().all(|(p, _)| p == "Completed")
    })
    .await;
    ctl.stop().await;
    checker.assert_clean();
}

#[tokio::test]
async fn injected_409s_500s_and_dropped_watches_leave_the_invariants_intact() {
    let fake = velero_1_18();
    seed_many(&fake);
    let checker = InvariantChecker::start(&fake, 2);
    fake.inject(
        Fault::conflict()
            .on_verb(Verb::Patch)
            .on_resource("backups")
            .times(6),
    );
    fake.inject(
        Fault::internal_error()
            .on_verb(Verb::Patch)
            .on_resource("backups")
            .times(4),
    );
    fake.inject(Fault::internal_error().on_verb(Verb::List).times(2));
    fake.inject(
        Fault::drop_watch_after(Duration::from_millis(150))
            .on_resource("backups")
            .times(5),
    );
    let ctl = start_sa(&fake, config(2));
    // A concurrent writer bumps resourceVersions under the controller's feet.
    let bumper = tokio::spawn({
        let fake = fake.clone();
        async move {
            for i in 0..40 {
                let name = format!("b{:02}", i % 16);
                fake.modify_value(&id_of::<Backup>(), Some(NS), &name, |v| {
                    v["metadata"]["labels"] = json!({"touched": i.to_string()});
                });
                if i % 10 == 0 {
                    fake.drop_watches();
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });
    eventually("all backups ran", 20, || {
        for (name, (phase, _)) in phases(&fake) {
            if phase == "ReadyToStart" {
                set_phase(&fake, &name, "Completed");
            }
        }
        phases(&fake).values().all(|(p, _)| p == "Completed")
    })
    .await;
    bumper.await.unwrap();
    assert!(
        ctl.metrics.conflicts.get() >= 1,
        "409s were seen and survived"
    );
    ctl.stop().await;
    checker.assert_clean();
}

fn lease(identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_name: "backup-queue-controller".into(),
        lease_namespace: NS.into(),
        identity: identity.into(),
        duration: Duration::from_secs(2),
        renew_before_expiry: Duration::from_secs(1),
    }
}

#[tokio::test]
async fn two_replicas_with_leader_election_never_both_act() {
    let fake = velero_1_18();
    seed_design_scenario(&fake);
    let checker = InvariantChecker::start(&fake, 2);
    let log = Arc::new(Mutex::new(Vec::new()));
    let tagged = |tag| Tagged {
        inner: fake.clone(),
        tag,
        log: log.clone(),
    };
    let mut cfg_a = config(2);
    cfg_a.leader = Some(lease("replica-a"));
    let mut cfg_b = config(2);
    cfg_b.leader = Some(lease("replica-b"));
    let a = start(tagged("a").client(), cfg_a);
    let b = start(tagged("b").client(), cfg_b);
    eventually("design steady state", 10, || {
        phases(&fake) == design_steady_state()
    })
    .await;
    let leader = log.lock().unwrap()[0].0;
    // The leader stops (rolling update); the standby takes over and acts.
    let (stopping, standby) = if leader == "a" { (a, b) } else { (b, a) };
    stopping.stop().await;
    set_phase(&fake, "backup1", "Completed");
    eventually("the standby starts backup2", 15, || {
        phases(&fake)["backup2"].0 == "ReadyToStart"
    })
    .await;
    // Never both: every write of the first leader precedes every write of
    // the standby.
    let log = log.lock().unwrap().clone();
    let last_of_leader = log
        .iter()
        .filter(|(t, _)| *t == leader)
        .map(|(_, at)| *at)
        .max();
    let first_of_standby = log
        .iter()
        .filter(|(t, _)| *t != leader)
        .map(|(_, at)| *at)
        .min();
    let last_of_leader = last_of_leader.expect("the leader acted");
    let first_of_standby = first_of_standby.expect("the standby acted after the hand-over");
    assert!(
        last_of_leader < first_of_standby,
        "both replicas acted in overlapping periods: {log:?}"
    );
    standby.stop().await;
    checker.assert_clean();
}

#[tokio::test]
async fn dry_run_writes_nothing() {
    let logs = controller_kit::telemetry::CapturedLogs::start();
    let fake = velero_1_18();
    seed_design_scenario(&fake);
    seed_backup(&fake, backup("fresh", &["ns7"], 9, "", 0));
    let before = phases(&fake);
    let mut cfg = config(2);
    cfg.dry_run = true;
    cfg.leader = Some(lease("dry"));
    let ctl = start_sa(&fake, cfg);
    eventually("a plan was made", 10, || {
        ctl.metrics.controller.reconciles.get() >= 1 && ctl.metrics.dequeues.get() >= 1
    })
    .await;
    // A changed object re-plans; still nothing is written.
    fake.modify_value(&id_of::<Backup>(), Some(NS), "backup3", |v| {
        v["metadata"]["labels"] = json!({"x": "y"});
    });
    eventually("re-planned", 10, || {
        ctl.metrics.controller.reconciles.get() >= 2
    })
    .await;
    ctl.stop().await;
    let writes: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.is_write())
        .collect();
    assert!(writes.is_empty(), "dry run wrote: {writes:?}");
    let mut after = phases(&fake);
    after.retain(|k, _| before.contains_key(k));
    assert_eq!(after, before);
    assert_dry_run_logs(&logs.lines(), "would write (--dry-run)", "wrote");
}

/// Checks the JSON log lines of a dry run: each is one JSON object with
/// each key once, no value in Rust debug form, and at least one line says
/// what would be written (`would`) while none claims `done`.
fn assert_dry_run_logs(lines: &[String], would: &str, done: &str) {
    for line in lines {
        let value: serde_json::Value = serde_json::from_str(line).expect("a JSON log line");
        let keys = value.as_object().map_or(0, |object| object.len());
        assert_eq!(
            controller_kit::telemetry::top_level_key_count(line),
            keys,
            "a key appears twice: {line}"
        );
        assert_ne!(value["message"], done, "a dry run claims a write: {line}");
        for debug in ["Some(", "None", " { "] {
            assert!(
                !line.contains(debug),
                "Rust debug text in a log line: {line}"
            );
        }
    }
    assert!(
        lines
            .iter()
            .any(|line| line.contains(&format!("\"message\":\"{would}\""))),
        "no line says {would:?}:\n{}",
        lines.join("\n")
    );
}

#[tokio::test]
async fn with_a_status_subresource_status_goes_to_status_and_the_reason_to_the_object() {
    let fake = velero_1_18();
    fake.register(ResourceInfo::of::<Backup>(true).with_status_subresource(true));
    seed_design_scenario(&fake);
    let ctl = start_sa(&fake, config(2));
    eventually("design steady state", 10, || {
        phases(&fake) == design_steady_state()
    })
    .await;
    eventually("reason written", 10, || {
        annotation(&fake, "backup4").is_some()
    })
    .await;
    let patches: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.is(Verb::Patch, "backups") && r.status == 200)
        .collect();
    assert!(
        patches
            .iter()
            .any(|r| r.subresource.as_deref() == Some("status"))
    );
    assert!(patches.iter().any(|r| r.subresource.is_none()));
    assert!(
        patches
            .iter()
            .all(|r| r.field_manager.as_deref() == Some("backup-queue-controller"))
    );
    // It plans only from what the watch showed after its own writes: no 409s.
    assert_eq!(ctl.metrics.conflicts.get(), 0);
    ctl.stop().await;

    // Forcing the object mode on such a CRD would lose the status; `auto`
    // found the subresource, and `disabled` is honoured as given.
    assert!(
        backup_queue_controller::status_subresource(&fake.client(), StatusSubresource::Auto)
            .await
            .unwrap()
    );
    let plain = FakeApi::new();
    assert!(
        !backup_queue_controller::status_subresource(&plain.client(), StatusSubresource::Auto)
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn another_writer_of_queue_positions_is_reported_loudly() {
    let fake = velero_1_18();
    seed_design_scenario(&fake);
    fake.modify_value(&id_of::<Backup>(), Some(NS), "backup3", |v| {
        v["metadata"]["managedFields"] = json!([backup_queue_controller::queue_position_entry(
            "velero-server"
        )]);
    });
    let ctl = start_sa(&fake, config(2));
    eventually("warning event", 10, || {
        events(&fake).iter().any(|(o, r, n)| {
            o == "backup3"
                && r == "ForeignQueueWriter"
                && n.contains("velero-server")
                && n.contains("--disable-controllers=backup-queue")
        })
    })
    .await;
    assert_eq!(ctl.metrics.foreign_queue_writers.get(), 1);
    // Velero's queue controller writing while this one runs: a patch
    // without fieldManager, recorded under its User-Agent's first segment.
    let uri: http::Uri = format!("/apis/velero.io/v1/namespaces/{NS}/backups/backup4")
        .parse()
        .unwrap();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "content-type",
        "application/merge-patch+json".parse().unwrap(),
    );
    headers.insert(
        "user-agent",
        "velero-server/v1.18.0 (linux/amd64)".parse().unwrap(),
    );
    let response = fake
        .handle_request(
            http::Method::PATCH,
            &uri,
            &headers,
            bytes::Bytes::from(r#"{"status":{"queuePosition":9}}"#),
        )
        .await;
    assert_eq!(response.status(), 200);
    eventually("second warning", 10, || {
        events(&fake).iter().any(|(o, r, n)| {
            o == "backup4" && r == "ForeignQueueWriter" && n.contains("\"velero-server\"")
        })
    })
    .await;
    ctl.stop().await;
}

#[tokio::test]
async fn a_dequeue_planned_from_a_stale_version_is_refused_and_replanned() {
    let fake = velero_1_18();
    seed_namespaces(&fake, ["a", "b"].map(String::from));
    seed_backup(&fake, backup("running", &["a"], 1, "InProgress", 0));
    seed_backup(&fake, backup("queued", &["b"], 2, "Queued", 1));
    let checker = InvariantChecker::start(&fake, 2);
    // Hold the dequeue of `queued` in flight long enough to change it.
    fake.inject(
        Fault::latency(Duration::from_millis(400))
            .on_verb(Verb::Patch)
            .on_name("queued")
            .times(1),
    );
    let ctl = start_sa(&fake, config(2));
    eventually("the dequeue is planned", 10, || {
        ctl.metrics.controller.reconciles.get() >= 1
    })
    .await;
    // Meanwhile the user widens the backup so that it overlaps `running`.
    fake.modify_value(&id_of::<Backup>(), Some(NS), "queued", |v| {
        v["spec"]["includedNamespaces"] = json!(["a", "b"]);
    })
    .unwrap();
    eventually("re-planned: it waits for `running`", 10, || {
        annotation(&fake, "queued").is_some_and(|r| r.contains("backup running"))
    })
    .await;
    assert_eq!(phases(&fake)["queued"], ("Queued".to_owned(), 1));
    assert!(ctl.metrics.conflicts.get() >= 1);
    ctl.stop().await;
    checker.assert_clean();
}

#[tokio::test]
async fn losing_the_lease_stops_the_controller_with_a_non_zero_exit() {
    use k8s_openapi::api::coordination::v1::Lease;
    let fake = velero_1_18();
    seed_design_scenario(&fake);
    let mut cfg = config(2);
    cfg.leader = Some(lease("replica-a"));
    let ctl = start_sa(&fake, cfg);
    eventually("design steady state", 10, || {
        phases(&fake) == design_steady_state()
    })
    .await;
    // Another replica takes the Lease over (e.g. after a long GC pause).
    fake.modify_value(
        &id_of::<Lease>(),
        Some(NS),
        "backup-queue-controller",
        |v| {
            v["spec"]["holderIdentity"] = json!("replica-b");
            v["spec"]["renewTime"] = json!(jiff::Timestamp::now().to_string());
            v["spec"]["leaseDurationSeconds"] = json!(30);
        },
    )
    .expect("the Lease exists");
    let reason = tokio::time::timeout(Duration::from_secs(15), ctl.task)
        .await
        .expect("stops after losing the Lease")
        .unwrap()
        .unwrap();
    assert_eq!(reason, controller_kit::ShutdownReason::LeaseLost);
    assert_eq!(reason.exit_code(), 2);
}

#[tokio::test]
async fn an_invalid_namespace_filter_is_reported_and_queued_as_covering_everything() {
    let fake = velero_1_18();
    seed_namespaces(&fake, ["a", "b"].map(String::from));
    seed_backup(&fake, backup("running", &["a"], 1, "InProgress", 0));
    seed_backup(&fake, backup("broken", &["b{x,y}"], 2, "", 0));
    let ctl = start_sa(&fake, config(2));
    eventually(
        "queued behind the running backup, with a warning",
        10,
        || {
            phases(&fake)["broken"] == ("Queued".to_owned(), 1)
                && events(&fake).iter().any(|(o, r, n)| {
                    o == "broken"
                        && r == "InvalidNamespaceFilter"
                        && n.contains("spec.includedNamespaces[0]")
                })
        },
    )
    .await;
    assert!(annotation(&fake, "broken").is_some_and(|r| r.contains("backup running")));
    ctl.stop().await;
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    (status, response)
}

#[tokio::test]
async fn serves_metrics_health_and_readiness() {
    let fake = velero_1_18();
    seed_design_scenario(&fake);
    // Find a free port (the server binds it again right away).
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut cfg = config(2);
    cfg.metrics_addr = Some(addr);
    // Keep the watches from listing until the test has seen /readyz say no.
    let slow = fake.inject(Fault::latency(Duration::from_millis(1500)).on_verb(Verb::List));
    let ctl = start_sa(&fake, cfg);
    let mut health = None;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            health = Some(http_get(addr, "/healthz").await);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(health.expect("server up").0, 200);
    assert_eq!(
        http_get(addr, "/readyz").await.0,
        503,
        "not ready before the lists"
    );
    fake.remove_fault(slow);
    eventually("design steady state", 10, || {
        phases(&fake) == design_steady_state()
    })
    .await;
    assert_eq!(http_get(addr, "/readyz").await.0, 200);
    let (status, body) = http_get(addr, "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        body.contains("backup_queue_controller_dequeues_total 1"),
        "{body}"
    );
    assert!(
        body.contains("backup_queue_controller_active_backups 2"),
        "{body}"
    );
    ctl.stop().await;
}

/// The controller with a handle on its `/readyz` flag.
fn start_with_readiness(
    fake: &FakeApi,
    cfg: backup_queue_controller::Config,
) -> (Running, controller_kit::server::Readiness) {
    let manifests = backup_queue_controller::manifests::render(
        backup_queue_controller::manifests::ManifestScope::Namespaced,
        NS,
        backup_queue_controller::manifests::DEFAULT_IMAGE,
    )
    .unwrap();
    fake.enforce_rbac(&manifests).unwrap();
    let shutdown = controller_kit::Shutdown::new();
    let telemetry = backup_queue_controller::Telemetry::default();
    let readiness = telemetry.readiness.clone();
    let metrics = telemetry.metrics.clone();
    let task = tokio::spawn(backup_queue_controller::run_with(
        fake.client_as(NS, backup_queue_controller::CONTROLLER_NAME),
        cfg,
        shutdown.clone(),
        telemetry,
    ));
    let running = Running {
        checked: Some(fake.clone()),
        shutdown,
        task,
        metrics,
    };
    (running, readiness)
}

/// Backup writes this controller made.
fn own_backup_writes(fake: &FakeApi) -> usize {
    fake.requests()
        .iter()
        .filter(|r| {
            r.is_write()
                && r.field_manager.as_deref() == Some(backup_queue_controller::CONTROLLER_NAME)
                && r.resource.as_ref().is_some_and(|id| id.plural == "backups")
        })
        .count()
}

/// The Velero server's Deployment, as `velero install` makes it, with
/// `args` for its `velero` container and a finished rollout.
fn velero_deployment(args: &[&str]) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "velero", "namespace": NS, "generation": 1},
        "spec": {
            "selector": {"matchLabels": {"deploy": "velero"}},
            "template": {
                "metadata": {"labels": {"deploy": "velero"}},
                "spec": {"containers": [{"name": "velero", "image": "velero/velero:v1.18.3",
                                         "command": ["/velero"], "args": args}]}
            }
        },
        "status": {"observedGeneration": 100, "replicas": 1, "updatedReplicas": 1}
    })
}

#[tokio::test]
async fn velero_queue_enabled_in_its_deployment_keeps_the_controller_from_writing_until_disabled() {
    let fake = velero_1_18();
    seed_namespaces(&fake, ["a", "b"].map(String::from));
    let deployment = id_of::<k8s_openapi::api::apps::v1::Deployment>();
    fake.seed_value(
        &deployment,
        velero_deployment(&["server", "--uploader-type=kopia"]),
    )
    .unwrap();
    seed_backup(&fake, backup("b1", &["a"], 1, "New", 0));
    seed_backup(&fake, backup("b2", &["a"], 2, "New", 0));
    let mut cfg = config(1);
    cfg.velero_queue_recheck = Duration::from_millis(200);
    let (ctl, readiness) = start_with_readiness(&fake, cfg);
    eventually("not ready, naming the flag", 10, || {
        readiness.reasons().iter().any(|r| {
            r.contains("--disable-controllers=backup-queue")
                && r.contains("Deployment velero/velero")
        })
    })
    .await;
    eventually("a VeleroQueueEnabled event on the Deployment", 10, || {
        events(&fake).iter().any(|(o, r, n)| {
            o == "velero"
                && r == "VeleroQueueEnabled"
                && n.contains("--disable-controllers=backup-queue")
        })
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        own_backup_writes(&fake),
        0,
        "no write while Velero's queue runs"
    );
    assert!(!readiness.is_ready());
    assert_eq!(ctl.metrics.velero_queue_running.get(), 1);
    assert_eq!(phases(&fake)["b1"].0, "New");

    // The user adds the flag: the controller takes over.
    fake.modify_value(&deployment, Some(NS), "velero", |v| {
        v["spec"]["template"]["spec"]["containers"][0]["args"] = json!([
            "server",
            "--uploader-type=kopia",
            "--disable-controllers=backup-queue"
        ]);
    });
    eventually("b1 started, b2 queued", 10, || {
        phases(&fake) == expect(&[("b1", "ReadyToStart", 0), ("b2", "Queued", 1)])
    })
    .await;
    eventually("ready", 10, || readiness.is_ready()).await;
    assert_eq!(ctl.metrics.velero_queue_running.get(), 0);
    ctl.stop().await;
}

/// A merge patch as Velero's server sends it: no fieldManager, so the API
/// server records it under its User-Agent's first segment.
async fn velero_server_patch(fake: &FakeApi, name: &str, patch: &'static str) {
    let uri: http::Uri = format!("/apis/velero.io/v1/namespaces/{NS}/backups/{name}")
        .parse()
        .unwrap();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "content-type",
        "application/merge-patch+json".parse().unwrap(),
    );
    headers.insert(
        "user-agent",
        "velero-server/v1.18.3 (linux/amd64)".parse().unwrap(),
    );
    let response = fake
        .handle_request(
            http::Method::PATCH,
            &uri,
            &headers,
            bytes::Bytes::from(patch),
        )
        .await;
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn velero_queue_writes_stop_the_controller_until_a_new_backup_stays_new() {
    let fake = velero_1_18();
    seed_namespaces(&fake, ["a", "b"].map(String::from));
    // No Deployment to read: Velero's writes decide. Velero's queue
    // controller queued b1 before this controller started.
    seed_backup(&fake, backup("b1", &["a"], 1, "New", 0));
    velero_server_patch(
        &fake,
        "b1",
        r#"{"status":{"phase":"Queued","queuePosition":1}}"#,
    )
    .await;
    let mut cfg = config(1);
    cfg.velero_queue_recheck = Duration::from_millis(600);
    let (ctl, readiness) = start_with_readiness(&fake, cfg);
    eventually("not ready, naming the manager and the flag", 10, || {
        readiness.reasons().iter().any(|r| {
            r.contains("--disable-controllers=backup-queue") && r.contains("velero-server")
        })
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(own_backup_writes(&fake), 0, "b1 is Velero's: no write");

    // Velero's dequeue: position dropped (0 is omitted), phase ReadyToStart.
    velero_server_patch(
        &fake,
        "b1",
        r#"{"status":{"phase":"ReadyToStart","queuePosition":null}}"#,
    )
    .await;
    // A new backup Velero's queue does not touch: once it has stayed New
    // for the re-check interval, Velero's queue is taken as disabled.
    let mut b2 = backup("b2", &["a"], 2, "New", 0);
    b2["metadata"]["creationTimestamp"] = json!(jiff::Timestamp::now().to_string());
    seed_backup(&fake, b2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        own_backup_writes(&fake),
        0,
        "still within the re-check interval"
    );
    eventually("b2 queued behind b1", 10, || {
        phases(&fake).get("b2") == Some(&("Queued".to_owned(), 1))
    })
    .await;
    eventually("ready", 10, || readiness.is_ready()).await;
    ctl.stop().await;
}
