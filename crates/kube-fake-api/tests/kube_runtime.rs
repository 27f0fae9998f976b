//! kube 5's `watcher`, `reflector`, `Controller`, `events::Recorder` and
//! kube-lease-manager running unmodified against the stand-in.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::{Controller, WatchStreamExt, reflector, watcher};
use kube::{Resource, ResourceExt};
use kube_fake_api::{FakeApi, Fault, ResourceId, Verb};
use kube_lease_manager::LeaseManagerBuilder;
use serde_json::json;
use tokio::time::timeout;

fn cm(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "demo"}},
        "data": {"value": value}
    }))
    .unwrap()
}

async fn eventually<F: FnMut() -> bool>(what: &str, mut cond: F) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn watcher_streams_changes_and_relists_after_410() {
    let fake = FakeApi::new();
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    fake.seed(&cm("a", "1")).unwrap();
    let events = watcher(cms.clone(), watcher::Config::default()).default_backoff();
    let mut events = events.boxed();
    let mut next = async || {
        timeout(Duration::from_secs(10), events.next())
            .await
            .expect("watcher event")
            .expect("stream open")
    };
    assert!(matches!(next().await, Ok(watcher::Event::Init)));
    assert!(matches!(next().await, Ok(watcher::Event::InitApply(o)) if o.name_any() == "a"));
    assert!(matches!(next().await, Ok(watcher::Event::InitDone)));
    cms.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"value": "2"}})),
    )
    .await
    .unwrap();
    assert!(
        matches!(next().await, Ok(watcher::Event::Apply(o)) if o.data.as_ref().unwrap()["value"] == "2")
    );
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    assert!(matches!(next().await, Ok(watcher::Event::Delete(o)) if o.name_any() == "a"));

    // Make the re-watch slow, drop the stream, change and compact meanwhile:
    // the re-watch from the old resourceVersion gets 410 and the watcher relists.
    fake.inject(
        Fault::latency(Duration::from_millis(300))
            .on_verb(Verb::Watch)
            .times(1),
    );
    fake.drop_watches();
    tokio::time::sleep(Duration::from_millis(50)).await;
    fake.seed(&cm("b", "1")).unwrap();
    fake.compact();
    let mut saw_init = false;
    let mut saw_410 = false;
    loop {
        match next().await {
            Ok(watcher::Event::Init) => saw_init = true,
            Ok(watcher::Event::InitApply(o)) if o.name_any() == "b" => {}
            Ok(watcher::Event::InitDone) => break,
            Err(watcher::Error::WatchError(e)) if e.code == 410 => saw_410 = true,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(saw_init && saw_410);
}

#[tokio::test]
async fn reflector_store_follows_the_cluster() {
    let fake = FakeApi::new();
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    for n in ["a", "b", "c"] {
        fake.seed(&cm(n, "1")).unwrap();
    }
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(cms.clone(), watcher::Config::default()))
        .default_backoff()
        .touched_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    timeout(Duration::from_secs(10), reader.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reader.state().len(), 3);
    cms.delete("b", &DeleteParams::default()).await.unwrap();
    cms.create(&PostParams::default(), &cm("d", "1"))
        .await
        .unwrap();
    eventually("reflector sees delete and create", || {
        let mut names: Vec<String> = reader.state().iter().map(|o| o.name_any()).collect();
        names.sort();
        names == ["a", "c", "d"]
    })
    .await;
    // Survives dropped watches.
    fake.drop_watches();
    cms.create(&PostParams::default(), &cm("e", "1"))
        .await
        .unwrap();
    eventually("reflector sees objects after a dropped watch", || {
        reader.state().len() == 4
    })
    .await;
    task.abort();
}

#[derive(Debug, thiserror::Error)]
#[error("reconcile failed: {0}")]
struct ReconcileError(#[from] kube::Error);

struct Ctx {
    client: kube::Client,
}

/// The tiny controller: every ConfigMap labelled `app=demo` gets a copy
/// `<name>-copy` (unlabelled) with the same data, written by server-side apply.
async fn reconcile(obj: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let ns = obj.namespace().unwrap_or_default();
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    let copy = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": format!("{}-copy", obj.name_any()), "ownerReferences": [obj.controller_owner_ref(&()).unwrap()]},
        "data": obj.data.clone().unwrap_or_default(),
    });
    api.patch(
        &format!("{}-copy", obj.name_any()),
        &PatchParams::apply("demo-controller").force(),
        &Patch::Apply(&copy),
    )
    .await?;
    Ok(Action::await_change())
}

fn error_policy(_obj: Arc<ConfigMap>, _err: &ReconcileError, _ctx: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(50))
}

#[tokio::test]
async fn controller_reconciles_configmaps_despite_faults() {
    let fake = FakeApi::new();
    let client = fake.client();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    fake.seed(&cm("a", "1")).unwrap();
    fake.seed(&cm("b", "1")).unwrap();
    // The first two writes fail; error_policy requeues.
    fake.inject(Fault::internal_error().on_verb(Verb::Patch).times(2));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let controller = Controller::new(cms.clone(), watcher::Config::default().labels("app=demo"))
        .owns(cms.clone(), watcher::Config::default())
        .graceful_shutdown_on(async move {
            let _ = stop_rx.await;
        })
        .run(
            reconcile,
            error_policy,
            Arc::new(Ctx {
                client: client.clone(),
            }),
        )
        .for_each(|_| async {});
    let task = tokio::spawn(controller);
    let copy_value = |name: &str| {
        fake.get::<ConfigMap>(Some("default"), name)
            .unwrap()
            .and_then(|c| c.data)
            .and_then(|d| d.get("value").cloned())
    };
    eventually("copies exist", || {
        copy_value("a-copy").as_deref() == Some("1") && copy_value("b-copy").as_deref() == Some("1")
    })
    .await;
    cms.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"value": "2"}})),
    )
    .await
    .unwrap();
    eventually("copy follows the source", || {
        copy_value("a-copy").as_deref() == Some("2")
    })
    .await;
    // A manual edit of the copy is reverted (the controller owns the copies).
    cms.patch(
        "b-copy",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"value": "tampered"}})),
    )
    .await
    .unwrap();
    eventually("tampered copy reverted", || {
        copy_value("b-copy").as_deref() == Some("1")
    })
    .await;
    assert!(fake.requests().iter().filter(|r| r.injected).count() == 2);
    stop_tx.send(()).unwrap();
    timeout(Duration::from_secs(10), task)
        .await
        .expect("controller stops on graceful shutdown")
        .unwrap();
}

#[tokio::test]
async fn events_recorder_publishes_events() {
    let fake = FakeApi::new();
    let client = fake.client();
    let obj = fake.seed(&cm("a", "1")).unwrap();
    let recorder = Recorder::new(
        client,
        Reporter {
            controller: "demo".into(),
            instance: None,
        },
    );
    let ev = Event {
        type_: EventType::Normal,
        reason: "Tested".into(),
        note: Some("hello".into()),
        action: "Test".into(),
        secondary: None,
    };
    recorder.publish(&ev, &obj.object_ref(&())).await.unwrap();
    recorder.publish(&ev, &obj.object_ref(&())).await.unwrap();
    let events: Vec<K8sEvent> = fake.list(Some("default")).unwrap();
    assert_eq!(events.len(), 1, "the second publish patches the series");
    assert_eq!(events[0].reason.as_deref(), Some("Tested"));
    assert_eq!(events[0].series.as_ref().map(|s| s.count), Some(2));
}

async fn holder(fake: &FakeApi) -> Option<String> {
    fake.get::<Lease>(Some("default"), "leader")
        .unwrap()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
}

#[tokio::test]
async fn lease_manager_acquires_renews_and_detects_loss() {
    let fake = FakeApi::new();
    let mut contenders = Vec::new();
    for id in ["one", "two"] {
        let manager = LeaseManagerBuilder::new(fake.client(), "leader")
            .with_namespace("default")
            .with_identity(id)
            .with_duration(2)
            .with_grace(1)
            .build()
            .await
            .unwrap();
        let (rx, handle) = manager.watch().await;
        contenders.push((id, rx, handle));
    }
    let leaders = |c: &Vec<(&str, tokio::sync::watch::Receiver<bool>, _)>| {
        c.iter()
            .filter(|(_, rx, _)| *rx.borrow())
            .map(|(id, _, _)| id.to_string())
            .collect::<Vec<_>>()
    };
    eventually("one leader", || leaders(&contenders).len() == 1).await;
    let leader = leaders(&contenders)[0].clone();
    assert_eq!(holder(&fake).await.as_deref(), Some(leader.as_str()));
    let renew_before = fake
        .get::<Lease>(Some("default"), "leader")
        .unwrap()
        .unwrap()
        .spec
        .unwrap()
        .renew_time;

    // Renewal: after more than a lease duration the same contender still leads, exactly one leader.
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            leaders(&contenders),
            std::slice::from_ref(&leader),
            "never two leaders"
        );
    }
    let renew_after = fake
        .get::<Lease>(Some("default"), "leader")
        .unwrap()
        .unwrap()
        .spec
        .unwrap()
        .renew_time;
    assert!(renew_after > renew_before, "lease renewed");

    // Loss: someone else takes the lease; the leader notices.
    let id = ResourceId::new("coordination.k8s.io", "v1", "leases");
    fake.modify_value(&id, Some("default"), "leader", |l| {
        l["spec"]["holderIdentity"] = json!("intruder");
        l["spec"]["renewTime"] = json!(jiff::Timestamp::now().to_string());
    });
    eventually("leader notices the loss", || {
        !leaders(&contenders).contains(&leader)
    })
    .await;
    // The intruder never renews, so a contender takes over again.
    eventually("re-acquired", || leaders(&contenders).len() == 1).await;
    for (_, rx, handle) in contenders {
        drop(rx);
        let _ = timeout(Duration::from_secs(5), handle).await;
    }
}

#[tokio::test]
async fn streaming_list_watcher_gets_initial_events_end_bookmark() {
    let fake = FakeApi::new();
    fake.seed(&cm("a", "1")).unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    let mut events = watcher(cms, watcher::Config::default().streaming_lists()).boxed();
    let mut next = async || {
        timeout(Duration::from_secs(10), events.next())
            .await
            .expect("watcher event")
            .expect("stream open")
    };
    assert!(matches!(next().await, Ok(watcher::Event::Init)));
    assert!(matches!(next().await, Ok(watcher::Event::InitApply(o)) if o.name_any() == "a"));
    assert!(matches!(next().await, Ok(watcher::Event::InitDone)));
    assert!(
        fake.requests()
            .iter()
            .all(|r| !r.is(Verb::List, "configmaps")),
        "no list call with streaming lists"
    );
}

mod custom {
    use kube::CustomResource;
    use serde::{Deserialize, Serialize};

    /// A custom resource registered at run time.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
    #[kube(
        group = "example.com",
        version = "v1",
        kind = "Widget",
        namespaced,
        status = "WidgetStatus",
        schema = "disabled"
    )]
    pub struct WidgetSpec {
        pub size: Option<u32>,
    }

    /// Its status.
    #[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
    pub struct WidgetStatus {
        pub ready: Option<bool>,
    }
}

#[tokio::test]
async fn registered_custom_resources_work_like_built_in_ones() {
    use custom::{Widget, WidgetSpec};
    let fake = FakeApi::new();
    fake.register(kube_fake_api::ResourceInfo::of::<Widget>(true).with_status_subresource(true));
    let widgets: Api<Widget> = Api::namespaced(fake.client(), "ns");
    let w = Widget::new("w1", WidgetSpec { size: Some(3) });
    widgets.create(&PostParams::default(), &w).await.unwrap();
    let st = widgets
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(st.status.and_then(|s| s.ready), Some(true));
    let stored: Widget = fake.get(Some("ns"), "w1").unwrap().unwrap();
    assert_eq!(stored.spec.size, Some(3));
    // Unregistered types are a 404 from the server and an error from the helpers.
    let fake2 = FakeApi::with_registry(kube_fake_api::Registry::empty());
    let err = Api::<Widget>::namespaced(fake2.client(), "ns")
        .get("w1")
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 404));
    assert!(fake2.seed(&w).is_err());
}
