//! The built binary on the real kube-apiserver (the test bed), as users
//! deploy it: the generated namespaced manifests applied with kubectl
//! (all but the Deployment: the bed has no kubelet), Velero's own Backup
//! CRD, and the binary run with the Deployment's arguments and
//! environment under its ServiceAccount's token, so that the real RBAC
//! authorizer judges every request. Each test ends with SIGTERM and
//! expects exit 0.
//!
//! Tests that do not break their bed share one (a namespace each); the
//! restart, compaction, namespace deletion and CRD upgrade tests start
//! beds of their own.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use backup_queue_controller::REASON_ANNOTATION;
use backup_queue_controller::manifests::{DEFAULT_IMAGE, ManifestScope, render};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_testbed::deploy::{
    self, ControllerProcess, Deployed, Launch, Pod, Relay, metric, seen, watch_from,
};
use kube_testbed::{Component, Testbed};
use serde_json::json;
use support::InvariantChecker;
use velero_api::Backup;

const BINARY: &str = env!("CARGO_BIN_EXE_backup-queue-controller");
const POD: Pod<'static> = Pod {
    name: "backup-queue-controller-5d8f7c9b4-x2x7k",
    node: "node-1",
};

fn velero_crd(bed: &Testbed, product: &str, version: &str) -> PathBuf {
    bed.layout()
        .crds(product, version)
        .unwrap()
        .join("velero.io_backups.yaml")
}

/// Velero 1.18's Backup CRD, as the bed built it from Velero's module.
fn backup_crd(bed: &Testbed) -> PathBuf {
    velero_crd(bed, "velero", &bed.versions().velero)
}

/// The previous release's (1.17) Backup CRD.
fn backup_crd_1_17(bed: &Testbed) -> PathBuf {
    velero_crd(bed, "velero-crds", &bed.versions().velero_previous)
}

async fn start_bed(builder: kube_testbed::Builder) -> Testbed {
    builder
        .start()
        .await
        .unwrap_or_else(|e| panic!("the test bed did not start: {e}"))
}

/// A Velero namespace with the controller's manifests in it.
struct Velero {
    namespace: String,
    backups: Api<Backup>,
    events: Api<Event>,
    deployed: Deployed,
    manifests: String,
}

/// Creates a namespace and applies the generated manifests there (the
/// Backup CRD must be installed).
async fn velero_namespace(bed: &Testbed, prefix: &str) -> Velero {
    let namespace = bed.namespace(prefix).await.unwrap();
    let manifests = render(ManifestScope::Namespaced, &namespace, DEFAULT_IMAGE).unwrap();
    let deployed = deploy::deploy_manifests(bed, &manifests, Some(&namespace))
        .await
        .unwrap();
    let client = bed.client();
    Velero {
        backups: Api::namespaced(client.clone(), &namespace),
        events: Api::namespaced(client, &namespace),
        namespace,
        deployed,
        manifests,
    }
}

impl Velero {
    /// Prepares the controller as the Deployment would run it.
    async fn launch(&self, bed: &Testbed) -> Launch {
        self.deployed
            .launch(bed, Path::new(BINARY), &POD)
            .await
            .unwrap()
    }

    async fn create(&self, name: &str, namespaces: &[&str], phase: &str) {
        let mut value = json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": {"name": name},
            "spec": {"includedNamespaces": namespaces, "storageLocation": "default"},
        });
        if !phase.is_empty() {
            // Velero's CRD has no status subresource: status is written
            // with the object.
            value["status"] = json!({"phase": phase});
        }
        let backup: Backup = serde_json::from_value(value).unwrap();
        self.backups
            .create(&PostParams::default(), &backup)
            .await
            .unwrap();
    }

    /// Sets a Backup's phase as Velero's backup controller would.
    async fn set_phase(&self, name: &str, phase: &str) {
        self.backups
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"phase": phase}})),
            )
            .await
            .unwrap();
    }

    async fn phases(&self) -> BTreeMap<String, (String, i64)> {
        self.backups
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|b| {
                (
                    b.metadata.name.clone().unwrap_or_default(),
                    (b.phase().as_str().to_owned(), b.queue_position()),
                )
            })
            .collect()
    }

    async fn annotation(&self, name: &str) -> Option<String> {
        self.backups
            .get(name)
            .await
            .unwrap()
            .metadata
            .annotations
            .and_then(|a| a.get(REASON_ANNOTATION).cloned())
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

    fn checker(&self, limit: usize) -> InvariantChecker {
        InvariantChecker::watching(self.backups.clone(), limit)
    }
}

fn expect(pairs: &[(&str, &str, i64)]) -> BTreeMap<String, (String, i64)> {
    pairs
        .iter()
        .map(|(n, p, q)| ((*n).to_owned(), ((*p).to_owned(), *q)))
        .collect()
}

async fn until_phases(velero: &Velero, controller: &ControllerProcess, want: &[(&str, &str, i64)]) {
    let want = expect(want);
    let started = Instant::now();
    controller
        .until(
            &format!("the phases {want:?}"),
            Duration::from_secs(60),
            || async {
                let phases = velero.phases().await;
                seen(phases == want, phases)
            },
        )
        .await;
    eprintln!("phases {want:?} after {:?}", started.elapsed());
}

#[tokio::test]
async fn queues_starts_and_advances_backups_under_its_generated_rbac() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    bed.install_crd_files(&[backup_crd(bed)]).await.unwrap();
    let velero = velero_namespace(bed, "bqc-queue").await;
    let checker = velero.checker(2);
    let controller = velero
        .launch(bed)
        .await
        .arg("--concurrent-backups", "2")
        .spawn()
        .unwrap();

    // Created in name order: creation time, then name, orders the queue.
    velero.create("b1", &["app-a"], "").await;
    velero.create("b2", &["app-a", "app-b"], "").await;
    velero.create("b3", &["app-c"], "New").await;
    velero.create("b4", &["app-b"], "").await;
    until_phases(
        &velero,
        &controller,
        &[
            ("b1", "ReadyToStart", 0),
            ("b2", "Queued", 1),
            ("b3", "ReadyToStart", 0),
            ("b4", "Queued", 2),
        ],
    )
    .await;
    controller
        .until("b2's reason", Duration::from_secs(30), || async {
            let reason = velero.annotation("b2").await;
            seen(
                reason
                    .as_deref()
                    .is_some_and(|r| r.contains("overlaps backup b1 (ReadyToStart)")),
                reason,
            )
        })
        .await;
    controller
        .until("a Queued event on b2", Duration::from_secs(30), || async {
            let events = velero.events().await;
            seen(
                events
                    .iter()
                    .any(|(o, r, n)| o == "b2" && r == "Queued" && n == "queued at position 1"),
                events,
            )
        })
        .await;

    // Velero finishes b1: b2 starts; b4 (overlapping b2) stays queued.
    velero.set_phase("b1", "InProgress").await;
    velero.set_phase("b1", "Completed").await;
    until_phases(
        &velero,
        &controller,
        &[
            ("b1", "Completed", 0),
            ("b2", "ReadyToStart", 0),
            ("b3", "ReadyToStart", 0),
            ("b4", "Queued", 1),
        ],
    )
    .await;
    // Leader election ran through the generated Role.
    let leases: Api<Lease> = Api::namespaced(bed.client(), &velero.namespace);
    let lease = leases.get("backup-queue-controller").await.unwrap();
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity).as_deref(),
        Some(POD.name)
    );
    let (code, body) = controller.http_get("/metrics").await.unwrap();
    assert_eq!(code, 200);
    assert!(
        metric(&body, "backup_queue_controller_dequeues_total") >= 1.0,
        "{body}"
    );
    controller.stop_cleanly().await;
    checker.assert_clean();
}

#[tokio::test]
async fn dry_run_plans_and_writes_nothing() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    bed.install_crd_files(&[backup_crd(bed)]).await.unwrap();
    let velero = velero_namespace(bed, "bqc-dry").await;
    velero.create("b1", &["x"], "").await;
    velero.create("b2", &["x"], "New").await;
    let versions = |list: Vec<Backup>| -> BTreeMap<String, String> {
        list.into_iter()
            .map(|b| {
                (
                    b.metadata.name.unwrap_or_default(),
                    b.metadata.resource_version.unwrap_or_default(),
                )
            })
            .collect()
    };
    let before = versions(
        velero
            .backups
            .list(&ListParams::default())
            .await
            .unwrap()
            .items,
    );
    let controller = velero
        .launch(bed)
        .await
        .switch("--dry-run")
        .spawn()
        .unwrap();
    controller
        .until("a planned dequeue", Duration::from_secs(30), || async {
            let dequeues = controller_metrics(&controller)
                .await
                .map(|body| metric(&body, "backup_queue_controller_dequeues_total"));
            seen(dequeues.is_some_and(|d| d >= 1.0), dequeues)
        })
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    controller.stop_cleanly().await;
    let after = versions(
        velero
            .backups
            .list(&ListParams::default())
            .await
            .unwrap()
            .items,
    );
    assert_eq!(after, before, "dry run changed a Backup");
    assert_eq!(velero.events().await, vec![], "dry run recorded Events");
    let leases: Api<Lease> = Api::namespaced(bed.client(), &velero.namespace);
    let held = leases.list(&ListParams::default()).await.unwrap().items;
    assert!(held.is_empty(), "dry run took a Lease: {held:?}");
}

async fn controller_metrics(controller: &ControllerProcess) -> Option<String> {
    match controller.http_get("/metrics").await {
        Ok((200, body)) => Some(body),
        _ => None,
    }
}

/// backup1 runs on ns1, ns2; backup2..5 wait, with Velero's positions.
async fn design_scenario(velero: &Velero) {
    velero
        .create("backup1", &["ns1", "ns2"], "InProgress")
        .await;
    velero
        .create("backup2", &["ns2", "ns3", "ns5"], "New")
        .await;
    velero.create("backup3", &["ns4", "ns3"], "New").await;
    velero.create("backup4", &["ns5", "ns6"], "New").await;
    velero.create("backup5", &["ns8", "ns9"], "New").await;
}

const DESIGN_STEADY_STATE: &[(&str, &str, i64)] = &[
    ("backup1", "InProgress", 0),
    ("backup2", "Queued", 1),
    ("backup3", "Queued", 2),
    ("backup4", "Queued", 3),
    ("backup5", "ReadyToStart", 0),
];

#[tokio::test]
async fn a_second_writer_of_queue_positions_stops_the_controller_until_velero_s_queue_is_shown_off()
{
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    bed.install_crd_files(&[backup_crd(bed)]).await.unwrap();
    let velero = velero_namespace(bed, "bqc-writer").await;
    design_scenario(&velero).await;
    let checker = velero.checker(2);
    let controller = velero
        .launch(bed)
        .await
        .arg("--concurrent-backups", "2")
        .arg("--velero-queue-recheck", "3")
        .spawn()
        .unwrap();
    until_phases(&velero, &controller, DESIGN_STEADY_STATE).await;

    // Velero's own queue controller (not disabled) writes positions too,
    // concurrently with this one, for three seconds.
    let writer = PatchParams {
        field_manager: Some("velero-server".to_owned()),
        ..PatchParams::default()
    };
    let started = Instant::now();
    let mut writes = 0;
    while started.elapsed() < Duration::from_secs(3) {
        for (name, position) in [("backup2", 3), ("backup3", 1), ("backup4", 2)] {
            let patch = json!({"status": {"queuePosition": position + writes % 2}});
            match velero
                .backups
                .patch(name, &writer, &Patch::Merge(patch))
                .await
            {
                Ok(_) => writes += 1,
                Err(e) => panic!("the second writer's patch failed: {e}"),
            }
        }
    }
    eprintln!("the second writer patched {writes} times");
    controller
        .until(
            "ForeignQueueWriter events",
            Duration::from_secs(30),
            || async {
                let events = velero.events().await;
                seen(
                    events.iter().any(|(o, r, n)| {
                        o.starts_with("backup")
                            && r == "ForeignQueueWriter"
                            && n.contains("velero-server")
                            && n.contains("--disable-controllers=backup-queue")
                    }),
                    events,
                )
            },
        )
        .await;
    // Velero's queue runs (there is no Deployment to read): the controller
    // stops writing and is not ready, naming the flag.
    controller
        .until(
            "/readyz 503 naming the flag",
            Duration::from_secs(30),
            || async {
                let (status, body) = controller.http_get("/readyz").await.unwrap();
                seen(
                    status == 503
                        && body.contains("--disable-controllers=backup-queue")
                        && body.contains("velero-server"),
                    (status, body),
                )
            },
        )
        .await;
    let left = velero.phases().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        velero.phases().await,
        left,
        "no write while Velero's queue runs"
    );
    // A new Backup nobody queues for the re-check interval shows Velero's
    // queue is not running: the controller takes over again and makes the
    // queue whole (the new Backup overlaps backup1 and queues last).
    velero.create("backup6", &["ns1"], "").await;
    let whole = |phases: &BTreeMap<String, (String, i64)>| {
        let mut queued: Vec<i64> = phases
            .values()
            .filter(|(p, _)| p == "Queued")
            .map(|(_, q)| *q)
            .collect();
        queued.sort_unstable();
        queued == [1, 2, 3, 4]
            && phases["backup1"] == ("InProgress".to_owned(), 0)
            && phases["backup5"] == ("ReadyToStart".to_owned(), 0)
            && phases["backup6"] == ("Queued".to_owned(), 4)
    };
    controller
        .until(
            "a dense queue, unchanged for 2 s",
            Duration::from_secs(60),
            || async {
                let before = velero.phases().await;
                if !whole(&before) {
                    return seen(false, before);
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
                let after = velero.phases().await;
                seen(after == before, (before, after))
            },
        )
        .await;
    let (status, _) = controller.http_get("/readyz").await.unwrap();
    assert_eq!(status, 200);
    let (_, body) = controller.http_get("/metrics").await.unwrap();
    assert!(
        metric(&body, "backup_queue_controller_foreign_queue_writers_total") >= 1.0,
        "{body}"
    );
    controller.stop_cleanly().await;
    checker.assert_clean();
}

/// The resource requests the controller's ServiceAccount made, from the
/// audit log: none refused, Backups only patched (never replaced), and
/// what the generated rules grant that this run did not use.
///
/// A restarted kube-apiserver answers 403 until its RBAC caches have
/// synced (it serves before it is ready); refusals during `restart` (from
/// the stop until ready again) are its, not the rules'.
fn check_audit(log: &Path, velero: &Velero, restart: (jiff::Timestamp, jiff::Timestamp)) {
    let user = format!(
        "system:serviceaccount:{}:backup-queue-controller",
        velero.namespace
    );
    let requests = deploy::audited_requests(log, &user).unwrap();
    assert!(!requests.is_empty(), "no request by {user} was audited");
    let during_restart = |time: &str| {
        time.parse::<jiff::Timestamp>()
            .is_ok_and(|t| restart.0 <= t && t <= restart.1)
    };
    let starting: Vec<_> = requests
        .iter()
        .filter(|r| r.code == 403 && during_restart(&r.time))
        .collect();
    eprintln!(
        "refused while kube-apiserver started: {:?}",
        starting
            .iter()
            .map(|r| format!("{} {}/{}", r.verb, r.group, r.resource))
            .collect::<Vec<_>>()
    );
    let refused: Vec<_> = requests
        .iter()
        .filter(|r| r.code == 403 && !during_restart(&r.time))
        .collect();
    assert!(
        refused.is_empty(),
        "the generated RBAC refused: {refused:#?}"
    );
    assert!(
        !requests
            .iter()
            .any(|r| r.resource == "backups" && matches!(r.verb.as_str(), "update" | "delete")),
        "Backups are only patched"
    );
    deploy::assert_least_privilege(
        &velero.manifests,
        &requests,
        &[
            (
                "get velero.io/backups",
                "re-reads a Backup after a 409; no conflict in this run",
            ),
            (
                "patch velero.io/backups/status",
                "used when the Backup CRD serves /status; Velero's does not",
            ),
            (
                "patch events.k8s.io/events",
                "an Event repeated within its series; none in this run",
            ),
            (
                "get apps/deployments",
                "reads the Velero server's Deployment; this bed has none (404)",
            ),
        ],
        "backup-queue-controller",
    );
}

#[tokio::test]
async fn keeps_the_queue_through_a_kube_apiserver_restart() {
    if kube_testbed::skip_requested() {
        return;
    }
    let audit = tempfile::tempdir().unwrap();
    let (args, audit_log) = deploy::audit_args(audit.path()).unwrap();
    let bed = start_bed(Testbed::builder().apiserver_args(args)).await;
    bed.install_crd_files(&[backup_crd(&bed)]).await.unwrap();
    let velero = velero_namespace(&bed, "bqc-restart").await;
    velero.create("b1", &["a"], "").await;
    velero.create("b2", &["a"], "").await;
    // With the Deployment's 15-second Lease, a leader that cannot renew
    // for 12.5 s steps down (exit 2, and the kubelet restarts it), and a
    // restart can take that long here; a longer Lease keeps this test
    // about the watches (stepping down is the namespace deletion test's).
    let controller = velero
        .launch(&bed)
        .await
        .arg("--lease-duration-seconds", "60")
        .arg("--lease-renew-seconds", "20")
        .spawn()
        .unwrap();
    until_phases(
        &velero,
        &controller,
        &[("b1", "ReadyToStart", 0), ("b2", "Queued", 1)],
    )
    .await;

    let started = Instant::now();
    let stopped_at = jiff::Timestamp::now();
    bed.restart_apiserver().await.unwrap();
    let ready_at = jiff::Timestamp::now();
    eprintln!("kube-apiserver restarted in {:?}", started.elapsed());
    // Changes after the restart reach the controller through new watches.
    velero.set_phase("b1", "Completed").await;
    velero.create("b3", &["a", "b"], "").await;
    until_phases(
        &velero,
        &controller,
        &[
            ("b1", "Completed", 0),
            ("b2", "ReadyToStart", 0),
            ("b3", "Queued", 1),
        ],
    )
    .await;
    controller.stop_cleanly().await;
    check_audit(&audit_log, &velero, (stopped_at, ready_at));
}

#[tokio::test]
async fn relists_when_etcd_compaction_answers_its_rewatch_with_410_gone() {
    if kube_testbed::skip_requested() {
        return;
    }
    // Without the watch cache, watches are served by etcd, which refuses
    // a compacted revision.
    let bed = start_bed(Testbed::builder().watch_cache(false)).await;
    bed.install_crd_files(&[backup_crd(&bed)]).await.unwrap();
    let velero = velero_namespace(&bed, "bqc-compact").await;
    velero.create("b1", &["a"], "").await;
    velero.create("b2", &["a"], "").await;
    let relay = Relay::start(bed.server_url().trim_start_matches("https://")).unwrap();
    let launch = velero.launch(&bed).await;
    let through_relay = relay.kubeconfig(launch.kubeconfig_path()).unwrap();
    let controller = launch.kubeconfig(&through_relay).spawn().unwrap();
    until_phases(
        &velero,
        &controller,
        &[("b1", "ReadyToStart", 0), ("b2", "Queued", 1)],
    )
    .await;

    // Everything the controller has seen is older than `seen`; later
    // writes elsewhere move etcd on, then it compacts.
    let seen = velero
        .backups
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let other = bed.namespace("bqc-compact-other").await.unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(bed.client(), &other);
    for i in 0..3 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("cm-{i}")}})).unwrap();
        config_maps
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
    }
    let revision = bed.compact_etcd().await.unwrap();
    assert!(revision > seen.parse::<i64>().unwrap());
    assert_eq!(watch_from(&velero.backups, &seen).await, Err(410));

    // The controller's connections drop: it re-watches from what it has
    // seen, is answered 410 Gone, and must list again.
    let cut = relay.cut();
    assert!(cut > 0, "the controller had no open connection");
    velero.set_phase("b1", "Completed").await;
    velero.create("b3", &["a", "b"], "").await;
    until_phases(
        &velero,
        &controller,
        &[
            ("b1", "Completed", 0),
            ("b2", "ReadyToStart", 0),
            ("b3", "Queued", 1),
        ],
    )
    .await;
    controller.stop_cleanly().await;
}

#[tokio::test]
async fn its_namespace_deleted_under_it_finishes_deleting_and_it_steps_down() {
    if kube_testbed::skip_requested() {
        return;
    }
    // kube-controller-manager's namespace controller empties and removes
    // deleted namespaces.
    let bed = start_bed(Testbed::builder().with_controller_manager()).await;
    bed.install_crd_files(&[backup_crd(&bed)]).await.unwrap();
    let velero = velero_namespace(&bed, "bqc-gone").await;
    velero.create("b1", &["a"], "").await;
    velero.create("b2", &["a"], "").await;
    let controller = velero.launch(&bed).await.spawn().unwrap();
    until_phases(
        &velero,
        &controller,
        &[("b1", "ReadyToStart", 0), ("b2", "Queued", 1)],
    )
    .await;

    // Velero's namespace is deleted, with the Backups, the Lease, the
    // controller's RBAC and its ServiceAccount (so its token).
    let namespaces: Api<Namespace> = Api::all(bed.client());
    namespaces
        .delete(&velero.namespace, &DeleteParams::default())
        .await
        .unwrap();
    let started = Instant::now();
    controller
        .until(
            "the namespace to finish deleting",
            Duration::from_secs(90),
            || async {
                let left = namespaces.get_opt(&velero.namespace).await.unwrap();
                seen(left.is_none(), left.map(|ns| ns.status))
            },
        )
        .await;
    eprintln!("namespace deleted in {:?}", started.elapsed());
    // Nothing it does recreates anything there, and it cannot renew its
    // Lease any more: it steps down before the Lease it last wrote can
    // expire, with the lease-lost exit code (2), instead of leading on.
    let status = controller
        .wait(Duration::from_secs(30))
        .await
        .unwrap_or_else(|e| panic!("{e}; the log:\n{}", controller.log_tail(40)));
    let log = controller.log();
    assert_eq!(status.code(), Some(2), "{log}");
    assert!(
        log.contains("could not renew the leader Lease in time"),
        "{log}"
    );
    assert!(
        namespaces
            .get_opt(&velero.namespace)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn refuses_velero_1_17_and_follows_the_crd_upgraded_to_1_18_while_running() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = start_bed(Testbed::builder()).await;
    bed.install_crd_files(&[backup_crd_1_17(&bed)])
        .await
        .unwrap();
    let velero = velero_namespace(&bed, "bqc-upgrade").await;
    velero.create("b1", &["a"], "New").await;

    // On Velero 1.17's CRD the controller refuses to start, in one line.
    let refused = velero.launch(&bed).await.spawn().unwrap();
    let status = refused.wait(Duration::from_secs(30)).await.unwrap();
    let log = refused.log();
    assert_eq!(status.code(), Some(1), "{log}");
    let errors: Vec<&str> = log.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{log}");
    let message = errors[0];
    assert!(
        message.starts_with(
            "backup-queue-controller: error: the Backup CRD (backups.velero.io) lacks phase Queued"
        ) && message.contains("needs Velero 1.18 or later"),
        "{log}"
    );
    assert_eq!(velero.phases().await, expect(&[("b1", "New", 0)]));

    // Velero is upgraded: its 1.18 CRD; the controller starts.
    bed.install_crd_files(&[backup_crd(&bed)]).await.unwrap();
    let controller = velero.launch(&bed).await.spawn().unwrap();
    until_phases(&velero, &controller, &[("b1", "ReadyToStart", 0)]).await;
    controller
        .until("ready", Duration::from_secs(30), || async {
            let ready = controller_ready(&controller).await;
            seen(matches!(ready, Some((200, _))), ready)
        })
        .await;

    // Velero is rolled back to 1.17 behind the controller's back: the
    // next status write is refused (422), and /readyz says which field.
    bed.install_crd_files(&[backup_crd_1_17(&bed)])
        .await
        .unwrap();
    velero.set_phase("b1", "Completed").await;
    velero.create("b2", &["a"], "New").await;
    velero.create("b3", &["a"], "New").await;
    controller
        .until(
            "not ready, naming the refused field",
            Duration::from_secs(60),
            || async {
                let ready = controller_ready(&controller).await;
                seen(
                    ready.as_ref().is_some_and(|(code, body)| {
                        *code == 503
                            && body.contains("refused as invalid (422)")
                            && body.contains("status.phase: Unsupported value: \"ReadyToStart\"")
                    }),
                    ready,
                )
            },
        )
        .await;
    eprintln!("/readyz on 1.17: {:?}", controller_ready(&controller).await);
    assert_eq!(velero.phases().await["b2"], ("New".to_owned(), 0));

    // Upgraded to 1.18 again while it runs: the retried writes go through.
    bed.install_crd_files(&[backup_crd(&bed)]).await.unwrap();
    until_phases(
        &velero,
        &controller,
        &[
            ("b1", "Completed", 0),
            ("b2", "ReadyToStart", 0),
            ("b3", "Queued", 1),
        ],
    )
    .await;
    controller
        .until("ready again", Duration::from_secs(30), || async {
            let ready = controller_ready(&controller).await;
            seen(matches!(ready, Some((200, _))), ready)
        })
        .await;
    controller.stop_cleanly().await;
}

async fn controller_ready(controller: &ControllerProcess) -> Option<(u16, String)> {
    controller.http_get("/readyz").await.ok()
}

/// The Velero server's metrics server always binds :8080, so one bed with
/// Velero runs at a time.
static VELERO_BED: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A bed running the real Velero 1.18 server with `velero_args` added to
/// its arguments, and the controller's manifests applied in Velero's
/// namespace `velero`. The bed has no kubelet, so a Deployment `velero`
/// describing that server (its arguments, a finished rollout) is created
/// for the controller to read.
async fn velero_bed(velero_args: &[&str]) -> (Testbed, Velero) {
    let bed = start_bed(
        Testbed::builder()
            .with_velero()
            .velero_args(velero_args.iter().copied()),
    )
    .await;
    let namespace = "velero".to_owned();
    let manifests = render(ManifestScope::Namespaced, &namespace, DEFAULT_IMAGE).unwrap();
    let deployed = deploy::deploy_manifests(&bed, &manifests, Some(&namespace))
        .await
        .unwrap();
    let mut args = vec!["server", "--namespace=velero", "--log-level=info"];
    args.extend_from_slice(velero_args);
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(bed.client(), &namespace);
    let deployment = velero_deployment("velero/velero:v1.18.3", &args);
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    deployments
        .patch_status(
            "velero",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1}}),
            ),
        )
        .await
        .unwrap();
    let client = bed.client();
    let velero = Velero {
        backups: Api::namespaced(client.clone(), &namespace),
        events: Api::namespaced(client, &namespace),
        namespace,
        deployed,
        manifests,
    };
    (bed, velero)
}

/// A Deployment `velero` describing a Velero server: its container
/// `velero` runs `image` with `/velero` and `args` (the bed has no
/// kubelet, so nothing runs it; controllers read it).
fn velero_deployment(image: &str, args: &[&str]) -> k8s_openapi::api::apps::v1::Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "velero"},
        "spec": {
            "selector": {"matchLabels": {"deploy": "velero"}},
            "template": {
                "metadata": {"labels": {"deploy": "velero"}},
                "spec": {"containers": [{"name": "velero", "image": image,
                                         "command": ["/velero"], "args": args}]}
            }
        }
    }))
    .unwrap()
}

/// The field managers in a Backup's `managedFields`.
async fn managers(velero: &Velero, name: &str) -> Vec<String> {
    velero
        .backups
        .get(name)
        .await
        .unwrap()
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| e.manager)
        .collect()
}

#[tokio::test]
async fn with_velero_s_queue_enabled_the_controller_writes_nothing_and_names_the_flag() {
    if kube_testbed::skip_requested() {
        return;
    }
    let _one_velero = VELERO_BED.lock().await;
    let (bed, velero) = velero_bed(&[]).await;
    let controller = velero
        .launch(&bed)
        .await
        .arg("--velero-queue-recheck", "2")
        .spawn()
        .unwrap();
    // Velero's queue controller queues and starts the Backup, its backup
    // controller then fails it (the bed has no backup storage location).
    velero.create("b1", &["default"], "").await;
    controller
        .until(
            "/readyz 503 naming the flag",
            Duration::from_secs(30),
            || async {
                let Ok((status, body)) = controller.http_get("/readyz").await else {
                    return seen(false, "/readyz does not answer yet");
                };
                seen(
                    status == 503
                        && body.contains("--disable-controllers=backup-queue")
                        && body.contains("Deployment velero/velero"),
                    (status, body),
                )
            },
        )
        .await;
    controller
        .until(
            "Velero failed b1's validation",
            Duration::from_secs(30),
            || async {
                let phases = velero.phases().await;
                seen(phases["b1"].0 == "FailedValidation", phases)
            },
        )
        .await;
    let written_by = managers(&velero, "b1").await;
    assert!(
        written_by.iter().any(|m| m == "velero-server"),
        "Velero's server writes as velero-server: {written_by:?}"
    );
    assert!(
        !written_by.iter().any(|m| m == "backup-queue-controller"),
        "the controller wrote b1: {written_by:?}"
    );
    let events = velero.events().await;
    assert!(
        events.iter().any(|(o, r, n)| o == "velero"
            && r == "VeleroQueueEnabled"
            && n.contains("--disable-controllers=backup-queue")),
        "{events:?}"
    );
    let (_, body) = controller.http_get("/metrics").await.unwrap();
    assert_eq!(
        metric(&body, "backup_queue_controller_velero_queue_running"),
        1.0,
        "{body}"
    );
    // Without the Deployment, Velero's own writes (seen on b1's way through
    // its queue) keep the controller stopped.
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(bed.client(), "velero");
    deployments
        .delete("velero", &DeleteParams::default())
        .await
        .unwrap();
    controller
        .until(
            "/readyz 503 naming Velero's manager",
            Duration::from_secs(30),
            || async {
                let Ok((status, body)) = controller.http_get("/readyz").await else {
                    return seen(false, "/readyz does not answer yet");
                };
                seen(
                    status == 503
                        && body.contains("velero-server")
                        && body.contains("--disable-controllers=backup-queue"),
                    (status, body),
                )
            },
        )
        .await;
    controller.stop_cleanly().await;
}

#[tokio::test]
async fn with_velero_s_queue_disabled_the_controller_runs_the_queue() {
    if kube_testbed::skip_requested() {
        return;
    }
    let _one_velero = VELERO_BED.lock().await;
    let (bed, velero) = velero_bed(&["--disable-controllers=backup-queue"]).await;
    let controller = velero
        .launch(&bed)
        .await
        .arg("--velero-queue-recheck", "2")
        .spawn()
        .unwrap();
    velero.create("b1", &["default"], "").await;
    // The controller starts b1; Velero's backup controller picks it up and
    // fails it (no backup storage location).
    controller
        .until(
            "Velero failed b1's validation",
            Duration::from_secs(30),
            || async {
                let phases = velero.phases().await;
                seen(phases["b1"].0 == "FailedValidation", phases)
            },
        )
        .await;
    let events = velero.events().await;
    assert!(
        events.iter().any(|(o, r, _)| o == "b1" && r == "Started"),
        "{events:?}"
    );
    assert!(
        !events.iter().any(|(_, r, _)| r == "VeleroQueueEnabled"),
        "{events:?}"
    );
    let (status, body) = controller.http_get("/readyz").await.unwrap();
    assert_eq!(status, 200, "{body}");
    controller.stop_cleanly().await;
}

#[tokio::test]
async fn a_backup_left_ready_to_start_across_a_velero_restart_is_started_within_the_pickup_timeout()
{
    if kube_testbed::skip_requested() {
        return;
    }
    let _one_velero = VELERO_BED.lock().await;
    let (bed, velero) = velero_bed(&["--disable-controllers=backup-queue"]).await;
    let pickup = Duration::from_secs(2);
    // Velero goes down; the controller makes b1 ReadyToStart meanwhile, and
    // its nudges go unanswered.
    bed.stop_component(Component::Velero).await.unwrap();
    let controller = velero
        .launch(&bed)
        .await
        .arg("--velero-queue-recheck", "2")
        .arg("--pickup-timeout", &pickup.as_secs().to_string())
        .spawn()
        .unwrap();
    velero.create("b1", &["default"], "").await;
    controller
        .until(
            "b1 ReadyToStart and nudged while Velero is down",
            Duration::from_secs(30),
            || async {
                let b1 = velero.backups.get("b1").await.unwrap();
                let nudged = b1
                    .annotations()
                    .contains_key(backup_queue_controller::pickup::PICKUP_ANNOTATION);
                seen(
                    b1.phase().as_str() == "ReadyToStart" && nudged,
                    (b1.phase().as_str().to_owned(), nudged),
                )
            },
        )
        .await;
    // Velero stays away for a few nudges (a backoff would now wait 16 s).
    controller
        .until(
            "three unanswered nudges",
            Duration::from_secs(30),
            || async {
                let nudges = controller_metrics(&controller)
                    .await
                    .map(|m| metric(&m, "backup_queue_controller_pickup_nudges_total"));
                seen(nudges.is_some_and(|n| n >= 3.0), nudges)
            },
        )
        .await;
    assert_eq!(velero.phases().await["b1"].0, "ReadyToStart");
    // Velero comes back: its informers list b1 as ReadyToStart, which its
    // backup controller's create predicate ignores; only a nudge starts it
    // (and, without storage, fails its validation).
    bed.start_component(Component::Velero).await.unwrap();
    let restarted = Instant::now();
    controller
        .until("Velero to act on b1", Duration::from_secs(30), || async {
            let phases = velero.phases().await;
            seen(phases["b1"].0 != "ReadyToStart", phases)
        })
        .await;
    let waited = restarted.elapsed();
    eprintln!("Velero acted on b1 {waited:?} after its restart");
    assert!(
        waited <= pickup + Duration::from_secs(1),
        "Velero acted on b1 {waited:?} after its restart; the pickup timeout is {pickup:?}"
    );
    assert_eq!(velero.phases().await["b1"].0, "FailedValidation");
    let nudge_events = velero
        .events()
        .await
        .into_iter()
        .filter(|(o, r, _)| o == "b1" && r == "PickupNudged")
        .count();
    assert_eq!(nudge_events, 1, "one Event for the wait");
    controller.stop_cleanly().await;
}

/// A Velero server older than 1.18 beside the controller, on Velero 1.18's
/// CRD. First its own write shows it: Velero 1.17.2's backup controller
/// starts every `New` Backup itself with a merge patch of the phase (rule
/// Q4.24), simulated here by that patch, as field manager `velero-server`,
/// of a Backup the controller already holds `Queued` (the server's cache
/// still showing it `New`; the test bed builds only the 1.18 server). Then
/// the Velero Deployment's image shows it.
#[tokio::test]
async fn writes_nothing_beside_a_velero_server_older_than_1_18() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    bed.install_crd_files(&[backup_crd(bed)]).await.unwrap();
    let velero = velero_namespace(bed, "bqc-old-velero").await;
    let controller = velero
        .launch(bed)
        .await
        .arg("--velero-queue-recheck", "2")
        .spawn()
        .unwrap();
    velero.create("b0", &["a"], "InProgress").await;
    velero.create("b1", &["a"], "").await;
    until_phases(
        &velero,
        &controller,
        &[("b0", "InProgress", 0), ("b1", "Queued", 1)],
    )
    .await;
    let as_velero_1_17 = PatchParams {
        field_manager: Some("velero-server".into()),
        ..PatchParams::default()
    };
    velero
        .backups
        .patch(
            "b1",
            &as_velero_1_17,
            &Patch::Merge(json!({"status": {"phase": "InProgress"}})),
        )
        .await
        .unwrap();
    let not_ready = |needle: &'static str| {
        let controller = &controller;
        async move {
            let Ok((status, body)) = controller.http_get("/readyz").await else {
                return seen(false, "/readyz does not answer yet".to_owned());
            };
            seen(status == 503 && body.contains(needle), (status, body))
        }
    };
    controller
        .until(
            "/readyz 503: an old Velero server moved b1",
            Duration::from_secs(30),
            || not_ready("moved Backup b1 from Queued to InProgress"),
        )
        .await;
    let metrics = controller_metrics(&controller).await.unwrap();
    assert_eq!(
        metric(&metrics, "backup_queue_controller_velero_too_old"),
        1.0
    );
    controller
        .until(
            "a VeleroTooOld Event on b1",
            Duration::from_secs(30),
            || async {
                let events = velero.events().await;
                seen(
                    events
                        .iter()
                        .any(|(o, r, n)| o == "b1" && r == "VeleroTooOld" && n.contains("1.18")),
                    events,
                )
            },
        )
        .await;
    // b2 is left New; once it has waited the re-check interval no old
    // server runs, and the controller queues it.
    velero.create("b2", &["b"], "").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        velero.phases().await["b2"].0,
        "New",
        "written while stopped"
    );
    controller
        .until(
            "b2 written once the old server is gone",
            Duration::from_secs(30),
            || async {
                let phases = velero.phases().await;
                seen(phases["b2"].0 != "New", phases)
            },
        )
        .await;

    // The Deployment names a 1.17 image: stopped again, whatever its flags.
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(bed.client(), &velero.namespace);
    let deployment = velero_deployment(
        "velero/velero:v1.17.2",
        &["server", "--disable-controllers=backup-queue"],
    );
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    controller
        .until(
            "/readyz 503 naming the image",
            Duration::from_secs(30),
            || not_ready("velero/velero:v1.17.2, older than 1.18"),
        )
        .await;
    velero.create("b3", &["c"], "").await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(velero.phases().await["b3"].0, "New", "written beside 1.17");
    controller.stop_cleanly().await;
}
