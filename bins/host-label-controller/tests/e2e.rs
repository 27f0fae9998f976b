//! End to end: the real `run()` against the in-process API stand-in.

mod support;

use std::time::Duration;

use anti_affinity_placement::labels::sanitize_label_value;
use host_label_controller::{HostSource, ObjectName};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube_fake_api::{FakeApi, Fault, Verb, eventually};
use serde_json::json;
use support::*;

fn events(fake: &FakeApi, namespace: &str, reason: &str) -> Vec<K8sEvent> {
    fake.list::<K8sEvent>(Some(namespace))
        .unwrap()
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .collect()
}

#[tokio::test]
async fn labels_appear_with_sanitised_values_and_foreign_labels_are_never_touched() {
    let fake = FakeApi::new();
    seed_node(
        &fake,
        "n1",
        &[("team", "storage"), ("kubernetes.io/hostname", "n1")],
    );
    seed_node(&fake, "n2", &[]);
    seed_machine(&fake, "m1", "n1", "esx-01.lab");
    seed_machine(&fake, "m2", "n2", "::1");
    let run = start(&fake, config(&[CAPV_KEY, NR_KEY], HostSource::Machines));

    eventually("both nodes labelled", SOON, || {
        label(&fake, "n1", NR_KEY).is_some() && label(&fake, "n2", NR_KEY).is_some()
    })
    .await;
    for key in [CAPV_KEY, NR_KEY] {
        assert_eq!(label(&fake, "n1", key).as_deref(), Some("esx-01.lab"));
        // B.3: CAPV would refuse `--1.ipv6-literal`; the crate repairs it.
        assert_eq!(label(&fake, "n2", key), Some(sanitize_label_value("::1")));
    }
    assert_eq!(
        annotation(&fake, "n1").as_deref(),
        Some("node-restriction.kubernetes.io/esxi-host,node.cluster.x-k8s.io/esxi-host")
    );
    assert_eq!(label(&fake, "n1", "team").as_deref(), Some("storage"));
    assert_eq!(
        label(&fake, "n1", "kubernetes.io/hostname").as_deref(),
        Some("n1")
    );
    // Node writes are merge patches by our field manager, nothing else.
    let node_writes: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.is_write() && r.resource.as_ref().is_some_and(|x| x.plural == "nodes"))
        .collect();
    assert!(!node_writes.is_empty());
    for w in &node_writes {
        assert_eq!(w.verb, Some(Verb::Patch), "{w:?}");
        assert_eq!(
            w.content_type.as_deref(),
            Some("application/merge-patch+json")
        );
        assert_eq!(w.field_manager.as_deref(), Some("host-label-controller"));
        assert_eq!(w.subresource, None);
    }
    // Machines are never written.
    assert!(
        !fake
            .requests()
            .iter()
            .any(|r| r.is_write() && r.resource.as_ref().is_some_and(|x| x.plural == "machines"))
    );
    run.stop().await;
}

#[tokio::test]
async fn a_vmotion_moves_the_label_within_seconds_without_a_resync() {
    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[]);
    seed_machine(&fake, "m1", "n1", "esx-01");
    let mut cfg = config(&[CAPV_KEY], HostSource::Machines);
    cfg.resync = Duration::from_secs(3600);
    let run = start(&fake, cfg);
    eventually("n1 labelled", SOON, || {
        label(&fake, "n1", CAPV_KEY).as_deref() == Some("esx-01")
    })
    .await;

    let moved_at = tokio::time::Instant::now();
    move_machine(&fake, "m1", "esx-07");
    eventually("n1 follows the vMotion", SOON, || {
        label(&fake, "n1", CAPV_KEY).as_deref() == Some("esx-07")
    })
    .await;
    assert!(moved_at.elapsed() < SOON);
    // A second move also follows (the watch keeps running).
    move_machine(&fake, "m1", "esx-02");
    eventually("n1 follows the second move", SOON, || {
        label(&fake, "n1", CAPV_KEY).as_deref() == Some("esx-02")
    })
    .await;
    run.stop().await;
}

#[tokio::test]
async fn changing_the_configured_key_removes_the_stale_key_and_only_it() {
    let fake = FakeApi::new();
    // `other/host` was set by someone else: never recorded, never removed.
    seed_node(&fake, "n1", &[("team", "db"), ("other/host", "x")]);
    seed_machine(&fake, "m1", "n1", "esx-01");
    let run = start(&fake, config(&[CAPV_KEY], HostSource::Machines));
    eventually("old key set", SOON, || {
        label(&fake, "n1", CAPV_KEY).is_some()
    })
    .await;
    run.stop().await;

    let run = start(&fake, config(&[NR_KEY], HostSource::Machines));
    eventually("new key set and old key removed", SOON, || {
        label(&fake, "n1", NR_KEY).is_some() && label(&fake, "n1", CAPV_KEY).is_none()
    })
    .await;
    assert_eq!(annotation(&fake, "n1").as_deref(), Some(NR_KEY));
    assert_eq!(label(&fake, "n1", "team").as_deref(), Some("db"));
    assert_eq!(label(&fake, "n1", "other/host").as_deref(), Some("x"));
    run.stop().await;
}

fn seed_violation(fake: &FakeApi) {
    // n1 and n2 are VMs on the same ESXi host; n3 has no host information.
    for n in ["n1", "n2", "n3"] {
        seed_node(fake, n, &[]);
    }
    seed_machine(fake, "m1", "n1", "esx-01");
    seed_machine(fake, "m2", "n2", "esx-01");
    seed_replica(fake, "web-7f-a", "web-7f", "n1", CAPV_KEY);
    seed_replica(fake, "web-7f-b", "web-7f", "n2", CAPV_KEY);
}

#[tokio::test]
async fn replicas_sharing_a_host_are_reported_on_their_owner_in_events_metrics_and_status() {
    let fake = FakeApi::new();
    seed_violation(&fake);
    let run = start(&fake, config(&[CAPV_KEY], HostSource::Machines));

    eventually("ReplicasShareHost event", SOON, || {
        !events(&fake, "app", "ReplicasShareHost").is_empty()
    })
    .await;
    let event = &events(&fake, "app", "ReplicasShareHost")[0];
    let regarding = event.regarding.as_ref().unwrap();
    assert_eq!(regarding.kind.as_deref(), Some("ReplicaSet"));
    assert_eq!(regarding.name.as_deref(), Some("web-7f"));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert!(
        event
            .note
            .as_deref()
            .unwrap()
            .contains("app/web-7f-a, app/web-7f-b"),
        "{event:?}"
    );

    eventually("HostLabelMissing event on n3", SOON, || {
        events(&fake, "default", "HostLabelMissing")
            .iter()
            .any(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("n3"))
    })
    .await;
    eventually("status summary written", SOON, || {
        status_summary(&fake).is_some_and(|s| s.contains("web-7f-b"))
    })
    .await;
    insta::assert_snapshot!(status_summary(&fake).unwrap());
    assert_eq!(run.metrics.gauges("").shared_host_violations.get(), 1);
    assert_eq!(run.metrics.gauges("").unlabelled_nodes.get(), 1);

    // Reported once, not on every pass.
    move_machine(&fake, "m1", "esx-01"); // no-op change, triggers a pass
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(events(&fake, "app", "ReplicasShareHost").len(), 1);

    // Fix: vMotion one VM away; the summary and the gauge follow.
    move_machine(&fake, "m2", "esx-02");
    eventually("violation cleared", SOON, || {
        status_summary(&fake).is_some_and(|s| !s.contains("web-7f-b"))
    })
    .await;
    assert_eq!(run.metrics.gauges("").shared_host_violations.get(), 0);
    run.stop().await;
}

#[tokio::test]
async fn sharing_under_a_preferred_rule_is_summarised_not_a_violation() {
    let fake = FakeApi::new();
    seed_violation(&fake);
    // A cache whose anti-affinity is only preferred: three replicas on two
    // VMs of one ESXi host, which the rule allows.
    seed_replica_with(&fake, "cache-a", "cache-5d", "n1", CAPV_KEY, false);
    seed_replica_with(&fake, "cache-b", "cache-5d", "n2", CAPV_KEY, false);
    seed_replica_with(&fake, "cache-c", "cache-5d", "n2", CAPV_KEY, false);
    let run = start(&fake, config(&[CAPV_KEY], HostSource::Machines));
    eventually("the preferred sharing is summarised", SOON, || {
        status_summary(&fake).is_some_and(|s| s.contains("cache-5d"))
    })
    .await;
    let summary: serde_json::Value = serde_json::from_str(&status_summary(&fake).unwrap()).unwrap();
    assert_eq!(
        summary["preferredSharing"],
        json!([{"group": "app owner ReplicaSet/cache-5d", "hosts": 1, "pods": 3}])
    );
    let shared: Vec<&str> = summary["sharedHosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["owner"].as_str().unwrap())
        .collect();
    assert_eq!(shared, ["ReplicaSet app/web-7f"], "only the required group");
    assert_eq!(run.metrics.gauges("").shared_host_violations.get(), 1);
    assert_eq!(run.metrics.gauges("").preferred_shared_hosts.get(), 1);
    let warned: Vec<_> = events(&fake, "app", "ReplicasShareHost")
        .into_iter()
        .filter_map(|event| event.regarding.and_then(|r| r.name))
        .collect();
    assert_eq!(warned, ["web-7f"], "no Warning for the cache");
    run.stop().await;
}

#[tokio::test]
async fn dry_run_writes_nothing() {
    let logs = controller_kit::telemetry::CapturedLogs::start();
    let fake = FakeApi::new();
    seed_violation(&fake);
    let mut cfg = config(&[CAPV_KEY], HostSource::Machines);
    cfg.dry_run = true;
    let run = start(&fake, cfg);
    eventually("a full pass was made", SOON, || {
        run.metrics.node_patches.get() >= 2
            && run.metrics.gauges("").shared_host_violations.get() == 1
    })
    .await;
    // A host change is planned too, still without writes.
    move_machine(&fake, "m1", "esx-09");
    eventually("the change was planned", SOON, || {
        run.metrics.node_patches.get() >= 3
    })
    .await;
    let writes: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.is_write())
        .collect();
    assert!(writes.is_empty(), "dry-run wrote: {writes:?}");
    assert_eq!(label(&fake, "n1", CAPV_KEY), None);
    assert!(status_summary(&fake).is_none());
    run.stop().await;
    assert_dry_run_logs(
        &logs.lines(),
        "would label Node (--dry-run)",
        "labelled Node",
    );
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
async fn a_conflict_on_a_node_patch_is_retried_from_a_fresh_read() {
    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[("team", "a")]);
    seed_machine(&fake, "m1", "n1", "esx-01");
    fake.inject(
        Fault::conflict()
            .on_verb(Verb::Patch)
            .on_resource("nodes")
            .times(2),
    );
    let run = start(&fake, config(&[CAPV_KEY], HostSource::Machines));
    eventually("n1 labelled despite two 409s", SOON, || {
        label(&fake, "n1", CAPV_KEY).as_deref() == Some("esx-01")
    })
    .await;
    let injected = fake
        .requests()
        .iter()
        .filter(|r| r.injected && r.is(Verb::Patch, "nodes"))
        .count();
    assert_eq!(injected, 2);
    assert!(run.metrics.node_patch_conflicts.get() >= 2);
    // Re-read after a 409: a GET of the node follows.
    assert!(fake.requests().iter().any(|r| r.is(Verb::Get, "nodes")));
    run.stop().await;
}

#[tokio::test]
async fn a_stale_resource_version_is_refused_and_replanned() {
    // A real (not injected) conflict: someone changes the Node between our
    // read and our patch. The patch carries the resourceVersion it was
    // planned from, so it fails with 409 and the controller re-reads.
    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[]);
    seed_machine(&fake, "m1", "n1", "esx-01");
    // Slow down node patches so a concurrent change can slip in.
    fake.inject(
        Fault::latency(Duration::from_millis(300))
            .on_verb(Verb::Patch)
            .on_resource("nodes")
            .times(1),
    );
    let run = start(&fake, config(&[CAPV_KEY], HostSource::Machines));
    eventually("first patch in flight", SOON, || {
        fake.requests().iter().any(|r| r.is(Verb::Patch, "nodes"))
            || run.metrics.node_patches.get() >= 1
    })
    .await;
    fake.modify_value(
        &kube_fake_api::id_of::<k8s_openapi::api::core::v1::Node>(),
        None,
        "n1",
        |n| {
            n["metadata"]["labels"]["team"] = json!("b");
        },
    )
    .unwrap();
    eventually("n1 labelled after the conflict", SOON, || {
        label(&fake, "n1", CAPV_KEY).as_deref() == Some("esx-01")
    })
    .await;
    assert_eq!(label(&fake, "n1", "team").as_deref(), Some("b"));
    assert!(run.metrics.node_patch_conflicts.get() >= 1);
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.is(Verb::Patch, "nodes") && r.status == 409 && !r.injected)
    );
    run.stop().await;
}

#[tokio::test]
async fn inventory_configmap_is_a_host_source_and_edits_apply_live() {
    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[]);
    seed_node(&fake, "n2", &[]);
    let inventory = |h1: &str| {
        format!(
            "apiVersion: policyctl/v1alpha1\nkind: HostInventory\nhosts:\n- name: esx1\n- name: esx2\nvms:\n- name: n1\n  group: w\n  host: {h1}\n- name: n2\n  group: w\n  host: esx2\n"
        )
    };
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "hosts", "namespace": OPS_NS},
        "data": {"inventory.yaml": inventory("esx1")},
    }))
    .unwrap();
    fake.seed(&cm).unwrap();
    let source = HostSource::Inventory {
        configmap: ObjectName {
            namespace: OPS_NS.into(),
            name: "hosts".into(),
        },
        key: "inventory.yaml".into(),
    };
    let run = start(&fake, config(&[CAPV_KEY], source));
    eventually("labels from the inventory", SOON, || {
        label(&fake, "n1", CAPV_KEY).as_deref() == Some("esx1")
            && label(&fake, "n2", CAPV_KEY).as_deref() == Some("esx2")
    })
    .await;

    let cm_id = kube_fake_api::id_of::<ConfigMap>();
    fake.modify_value(&cm_id, Some(OPS_NS), "hosts", |v| {
        v["data"]["inventory.yaml"] = json!(inventory("esx2"));
    })
    .unwrap();
    eventually("n1 follows the inventory edit", SOON, || {
        label(&fake, "n1", CAPV_KEY).as_deref() == Some("esx2")
    })
    .await;

    // A broken edit keeps the last good inventory (labels stay).
    fake.modify_value(&cm_id, Some(OPS_NS), "hosts", |v| {
        v["data"]["inventory.yaml"] = json!("vms: [");
    })
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(label(&fake, "n1", CAPV_KEY).as_deref(), Some("esx2"));
    run.stop().await;
}

/// OpenStack's server list in the ConfigMap (a Tacker VNF's workers): a
/// Node is the server holding its address (Tacker's guessed name and the
/// Node's own name differ), else the server of its name, and its
/// `CIS-node` label follows a live migration when the list is refreshed.
#[tokio::test]
async fn a_server_list_configmap_labels_nodes_by_address_and_follows_a_migration() {
    const CIS_NODE: &str = "CIS-node";
    let fake = FakeApi::new();
    let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(json!({
        "metadata": {"name": "k8s-worker-1"},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.10.0.45"}]},
    }))
    .unwrap();
    fake.seed(&node).unwrap();
    seed_node(&fake, "workerNode-1", &[]);
    let listing = |host: &str| {
        format!(
            r#"[{{"Name": "workerNode-0", "Host": "{host}", "Networks": {{"net0": ["10.10.0.45"]}}}},
               {{"Name": "workerNode-1", "Host": "compute-c", "Networks": "net0=10.10.0.46"}}]"#
        )
    };
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "servers", "namespace": OPS_NS},
        "data": {"servers.json": listing("compute-a")},
    }))
    .unwrap();
    fake.seed(&cm).unwrap();
    let source = HostSource::Inventory {
        configmap: ObjectName {
            namespace: OPS_NS.into(),
            name: "servers".into(),
        },
        key: "servers.json".into(),
    };
    let run = start(&fake, config(&[CIS_NODE], source));
    eventually("labels from the server list", SOON, || {
        label(&fake, "k8s-worker-1", CIS_NODE).as_deref() == Some("compute-a")
            && label(&fake, "workerNode-1", CIS_NODE).as_deref() == Some("compute-c")
    })
    .await;
    let cm_id = kube_fake_api::id_of::<ConfigMap>();
    fake.modify_value(&cm_id, Some(OPS_NS), "servers", |v| {
        v["data"]["servers.json"] = json!(listing("compute-b"));
    })
    .unwrap();
    eventually("the label follows the live migration", SOON, || {
        label(&fake, "k8s-worker-1", CIS_NODE).as_deref() == Some("compute-b")
    })
    .await;
    run.stop().await;
}

#[tokio::test]
async fn dropped_watches_are_resumed_and_changes_still_followed() {
    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[]);
    seed_machine(&fake, "m1", "n1", "esx-01");
    let run = start(&fake, config(&[CAPV_KEY], HostSource::Machines));
    eventually("n1 labelled", SOON, || {
        label(&fake, "n1", CAPV_KEY).is_some()
    })
    .await;
    fake.drop_watches();
    move_machine(&fake, "m1", "esx-03");
    eventually("n1 follows after the re-watch", SOON, || {
        label(&fake, "n1", CAPV_KEY).as_deref() == Some("esx-03")
    })
    .await;
    run.stop().await;
}

#[tokio::test]
async fn only_the_leader_acts_and_a_follower_takes_over() {
    use controller_kit::LeaderElectionConfig;
    use k8s_openapi::api::coordination::v1::Lease;

    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[]);
    seed_machine(&fake, "m1", "n1", "esx-01");
    let replica = |id: &str| {
        let mut cfg = config(&[CAPV_KEY], HostSource::Machines);
        cfg.leader = Some(LeaderElectionConfig {
            lease_name: "host-label-controller".into(),
            lease_namespace: OPS_NS.into(),
            identity: id.into(),
            duration: Duration::from_secs(2),
            renew_before_expiry: Duration::from_secs(1),
        });
        cfg
    };
    let holder = |fake: &FakeApi| {
        fake.get::<Lease>(Some(OPS_NS), "host-label-controller")
            .unwrap()
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
    };
    let a = start(&fake, replica("a"));
    eventually("a leads and labels", SOON, || {
        holder(&fake).as_deref() == Some("a") && label(&fake, "n1", CAPV_KEY).is_some()
    })
    .await;
    let b = start(&fake, replica("b"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(b.metrics.controller.reconciles.get(), 0, "follower acted");

    a.stop().await;
    move_machine(&fake, "m1", "esx-04");
    eventually("b took over and follows", Duration::from_secs(10), || {
        label(&fake, "n1", CAPV_KEY).as_deref() == Some("esx-04")
    })
    .await;
    assert_eq!(holder(&fake).as_deref(), Some("b"));
    b.stop().await;
}

#[tokio::test]
async fn a_violation_created_while_running_is_reported() {
    let fake = FakeApi::new();
    for n in ["n1", "n2"] {
        seed_node(&fake, n, &[]);
    }
    seed_machine(&fake, "m1", "n1", "esx-01");
    seed_machine(&fake, "m2", "n2", "esx-01");
    // Topology spread (not anti-affinity) on the node-restriction key counts too.
    let run = start(&fake, config(&[NR_KEY], HostSource::Machines));
    eventually("labelled", SOON, || label(&fake, "n2", NR_KEY).is_some()).await;
    assert!(events(&fake, "app", "ReplicasShareHost").is_empty());
    for (name, node) in [("db-0", "n1"), ("db-1", "n2")] {
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
            "metadata": {
                "name": name, "namespace": "app", "labels": {"app": "db"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "uid-db", "controller": true}],
            },
            "spec": {
                "nodeName": node,
                "containers": [{"name": "c", "image": "postgres"}],
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": NR_KEY, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "db"}}}],
            },
        }))
        .unwrap();
        fake.seed(&pod).unwrap();
    }
    eventually("ReplicasShareHost on the StatefulSet", SOON, || {
        events(&fake, "app", "ReplicasShareHost").iter().any(|e| {
            e.regarding
                .as_ref()
                .is_some_and(|r| r.kind.as_deref() == Some("StatefulSet"))
        })
    })
    .await;
    eventually("gauge follows", SOON, || {
        run.metrics.gauges("").shared_host_violations.get() == 1
    })
    .await;
    run.stop().await;
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
            .unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).unwrap();
        out
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn metrics_and_health_are_served() {
    let fake = FakeApi::new();
    seed_violation(&fake);
    // A free port (tiny race with other processes; acceptable in tests).
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut cfg = config(&[CAPV_KEY], HostSource::Machines);
    cfg.metrics_addr = Some(addr);
    let run = start(&fake, cfg);
    eventually("audit done", SOON, || {
        run.metrics.gauges("").shared_host_violations.get() == 1
    })
    .await;
    let metrics = http_get(addr, "/metrics").await;
    for line in [
        "host_label_controller_shared_host_violations{cluster=\"\"} 1",
        "host_label_controller_unlabelled_nodes{cluster=\"\"} 1",
        "host_label_controller_nodes_without_host_information{cluster=\"\"} 1",
        "host_label_controller_node_patches_total ",
        "host_label_controller_reconciles_total ",
    ] {
        assert!(metrics.contains(line), "missing {line:?} in\n{metrics}");
    }
    assert!(http_get(addr, "/healthz").await.starts_with("HTTP/1.0 200"));
    assert!(http_get(addr, "/readyz").await.starts_with("HTTP/1.0 200"));
    run.stop().await;
}

#[tokio::test]
async fn api_errors_on_node_patches_are_retried_with_backoff() {
    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[]);
    seed_machine(&fake, "m1", "n1", "esx-01");
    fake.inject(
        Fault::internal_error()
            .on_verb(Verb::Patch)
            .on_resource("nodes")
            .times(2),
    );
    let run = start(&fake, config(&[CAPV_KEY], HostSource::Machines));
    eventually(
        "n1 labelled after two 500s",
        Duration::from_secs(10),
        || label(&fake, "n1", CAPV_KEY).as_deref() == Some("esx-01"),
    )
    .await;
    let errors = run
        .metrics
        .controller
        .errors
        .get_or_create(&controller_kit::metrics::ErrorLabels { kind: "kube_api" })
        .get();
    assert_eq!(errors, 2);
    run.stop().await;
}

#[tokio::test]
async fn nodes_and_machines_that_appear_later_are_labelled() {
    let fake = FakeApi::new();
    seed_node(&fake, "n1", &[]);
    let run = start(&fake, config(&[CAPV_KEY], HostSource::Machines));
    eventually("n1 reported unlabelled", SOON, || {
        run.metrics.gauges("").unlabelled_nodes.get() == 1
    })
    .await;
    // The Machine gets its nodeRef after the Node exists (normal CAPI order).
    seed_machine(&fake, "m1", "n1", "esx-01");
    eventually("n1 labelled", SOON, || {
        label(&fake, "n1", CAPV_KEY).as_deref() == Some("esx-01")
    })
    .await;
    // A Node joining after its Machine.
    seed_machine(&fake, "m2", "n2", "esx-02");
    seed_node(&fake, "n2", &[]);
    eventually("n2 labelled", SOON, || {
        fake.get::<k8s_openapi::api::core::v1::Node>(None, "n2")
            .unwrap()
            .is_some()
            && label(&fake, "n2", CAPV_KEY).as_deref() == Some("esx-02")
    })
    .await;
    eventually("nothing unlabelled", SOON, || {
        run.metrics.gauges("").unlabelled_nodes.get() == 0
    })
    .await;
    run.stop().await;
}
