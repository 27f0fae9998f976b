//! The controller against the Backup CRDs of Velero 1.17 (no queue phases,
//! no `queuePosition`) and 1.18 on the schema-checking stand-in: it refuses
//! to start on 1.17, keeps `/readyz` failing while the CRD cannot be read,
//! and reports a write the schema refuses on `/readyz`, naming the field.

mod support;

use std::time::Duration;

use backup_queue_controller::Telemetry;
use controller_kit::Shutdown;
use kube_fake_api::{FakeApi, Fault, Verb, crds};
use support::*;

fn with_crd(yaml: &str) -> FakeApi {
    let fake = FakeApi::new();
    fake.install_crds(yaml).unwrap();
    fake
}

#[tokio::test]
async fn velero_1_17_stops_the_controller_naming_velero_1_18() {
    let fake = with_crd(crds::VELERO_1_17_BACKUP);
    // (1.17's schema would refuse the queue phases even as seeds.)
    seed_backup(&fake, backup("b1", &["app"], 0, "New", 0));
    let shutdown = Shutdown::new();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        backup_queue_controller::run(fake.client(), config(2), shutdown),
    )
    .await
    .expect("stops at once");
    let error = result.expect_err("refuses to run").to_string();
    assert_eq!(
        error,
        "the Backup CRD (backups.velero.io) lacks phase Queued, phase ReadyToStart, status.queuePosition: backup-queue-controller needs Velero 1.18 or later (its CRD has the Queued and ReadyToStart phases and status.queuePosition); upgrade Velero and its CRDs first"
    );
    assert!(
        fake.requests().iter().all(|r| !r.is_write()),
        "wrote nothing"
    );
}

#[tokio::test]
async fn an_unreadable_crd_keeps_readyz_failing_with_the_reason_until_it_can_be_read() {
    let fake = with_crd(crds::VELERO_1_18_BACKUP);
    seed_design_scenario(&fake);
    let denied = fake.inject(
        Fault::error(
            403,
            "Forbidden",
            "customresourcedefinitions.apiextensions.k8s.io \"backups.velero.io\" is forbidden",
        )
        .on_verb(Verb::Get)
        .on_resource("customresourcedefinitions"),
    );
    let telemetry = Telemetry::default();
    let readiness = telemetry.readiness.clone();
    let mut cfg = config(2);
    cfg.crd_retry = Duration::from_millis(50);
    let shutdown = Shutdown::new();
    let task = tokio::spawn(backup_queue_controller::run_with(
        fake.client(),
        cfg,
        shutdown.clone(),
        telemetry,
    ));
    // The queue still works; only readiness says what is wrong.
    eventually("queue settled", 10, || queue_settled(&fake, 2)).await;
    assert!(!readiness.is_ready());
    let reasons = readiness.reasons();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(
        reasons[0].starts_with("cannot read CustomResourceDefinition backups.velero.io to check for Velero 1.18 or later")
            && reasons[0].contains("forbidden"),
        "{reasons:?}"
    );
    fake.remove_fault(denied);
    eventually("ready once the CRD is readable", 10, || {
        readiness.is_ready()
    })
    .await;
    shutdown.trigger(controller_kit::ShutdownReason::Requested);
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_write_the_schema_refuses_makes_the_controller_not_ready_naming_the_field() {
    let fake = with_crd(crds::VELERO_1_18_BACKUP);
    let telemetry = Telemetry::default();
    let readiness = telemetry.readiness.clone();
    let shutdown = Shutdown::new();
    let task = tokio::spawn(backup_queue_controller::run_with(
        fake.client(),
        config(1),
        shutdown.clone(),
        telemetry,
    ));
    eventually("ready", 10, || readiness.is_ready()).await;
    // Velero is downgraded behind the controller's back: its CRD loses the
    // queue phases; the next write is refused with 422.
    fake.install_crds(crds::VELERO_1_17_BACKUP).unwrap();
    seed_backup(&fake, backup("b1", &["app"], 0, "New", 0));
    eventually("not ready", 10, || !readiness.is_ready()).await;
    let reasons = readiness.reasons();
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("refused as invalid (422)")
                && r.contains("status.phase: Unsupported value: \"ReadyToStart\"")),
        "{reasons:?}"
    );
    // The CRD is upgraded again: the retried write succeeds, ready again.
    fake.install_crds(crds::VELERO_1_18_BACKUP).unwrap();
    eventually("ready again", 10, || readiness.is_ready()).await;
    eventually("b1 started", 10, || {
        phases(&fake)
            .get("b1")
            .is_some_and(|(p, _)| p == "ReadyToStart")
    })
    .await;
    shutdown.trigger(controller_kit::ShutdownReason::Requested);
    task.await.unwrap().unwrap();
}
