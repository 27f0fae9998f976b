//! API semantics through an unmodified kube 5 `Client`: conflicts, 410,
//! finalizers, patches, the status subresource, selectors, faults, the log.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube_fake_api::{FakeApi, Fault, ResourceId, Verb};
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

fn api_error(err: kube::Error) -> (u16, String) {
    match err {
        kube::Error::Api(s) => (s.code, s.reason.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn create_conflicts_and_generate_name() {
    let fake = FakeApi::new();
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    let created = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());
    let err = cms
        .create(&PostParams::default(), &cm("a"))
        .await
        .unwrap_err();
    assert_eq!(api_error(err), (409, "AlreadyExists".into()));

    let mut gen_obj = ConfigMap::default();
    gen_obj.metadata.generate_name = Some("job-".into());
    let g1 = cms.create(&PostParams::default(), &gen_obj).await.unwrap();
    let g2 = cms.create(&PostParams::default(), &gen_obj).await.unwrap();
    let (n1, n2) = (g1.metadata.name.unwrap(), g2.metadata.name.unwrap());
    assert!(
        n1.starts_with("job-") && n2.starts_with("job-") && n1 != n2,
        "{n1} {n2}"
    );
}

/// An empty `metadata.namespace` is unset: kube-apiserver fills it from the
/// request (`k8s.io/apiserver/pkg/registry/rest/meta.go`,
/// `EnsureObjectNamespaceMatchesRequestNamespace`, Kubernetes v1.35.4), and
/// an object seeded without a namespace is in `default`
/// (`kube_validation::namespace_or_default`, the workspace's one rule).
#[tokio::test]
async fn an_empty_namespace_is_unset() {
    let fake = FakeApi::new();
    let mut blank = cm("blank");
    blank.metadata.namespace = Some(String::new());
    let created = Api::<ConfigMap>::namespaced(fake.client(), "x")
        .create(&PostParams::default(), &blank)
        .await
        .unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some("x"));
    let mut other = cm("other");
    other.metadata.namespace = Some("y".into());
    let err = Api::<ConfigMap>::namespaced(fake.client(), "x")
        .create(&PostParams::default(), &other)
        .await
        .unwrap_err();
    assert_eq!(api_error(err), (400, "BadRequest".into()));
    let seeded = fake.seed(&blank).unwrap();
    assert_eq!(seeded.metadata.namespace.as_deref(), Some("default"));
    assert!(
        fake.get::<ConfigMap>(Some("default"), "blank")
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn replace_and_patch_honour_resource_version_preconditions() {
    let fake = FakeApi::new();
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    let v1 = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let mut v2 = v1.clone();
    v2.data = Some([("k".to_string(), "v2".to_string())].into());
    let stored = cms.replace("a", &PostParams::default(), &v2).await.unwrap();
    assert_ne!(
        stored.metadata.resource_version,
        v1.metadata.resource_version
    );
    // Stale resourceVersion: 409 Conflict.
    let err = cms
        .replace("a", &PostParams::default(), &v2)
        .await
        .unwrap_err();
    assert_eq!(api_error(err), (409, "Conflict".into()));
    // A merge patch carrying a stale resourceVersion is conditional too.
    let stale =
        json!({"metadata": {"resourceVersion": v1.metadata.resource_version}, "data": {"k": "x"}});
    let err = cms
        .patch("a", &PatchParams::default(), &Patch::Merge(&stale))
        .await
        .unwrap_err();
    assert_eq!(api_error(err), (409, "Conflict".into()));
    let fresh = json!({"metadata": {"resourceVersion": stored.metadata.resource_version}, "data": {"k": "x"}});
    let patched = cms
        .patch("a", &PatchParams::default(), &Patch::Merge(&fresh))
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["k"], "x");
    // Unknown objects: 404.
    let err = cms
        .patch("zzz", &PatchParams::default(), &Patch::Merge(&json!({})))
        .await
        .unwrap_err();
    assert_eq!(api_error(err), (404, "NotFound".into()));
}

#[tokio::test]
async fn json_strategic_and_apply_patches() {
    let fake = FakeApi::new();
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let jp: json_patch_ops::Ops = serde_json::from_value(json!([
        {"op": "add", "path": "/data/j", "value": "1"},
        {"op": "remove", "path": "/data/k"}
    ]))
    .unwrap();
    let out = cms
        .patch("a", &PatchParams::default(), &Patch::Json::<()>(jp))
        .await
        .unwrap();
    assert_eq!(
        out.data.unwrap(),
        [("j".to_string(), "1".to_string())].into()
    );
    let out = cms
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(out.metadata.labels.unwrap()["x"], "y");

    // Server-side apply: creates, then conflicts with another manager unless forced.
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"owner": "one"}});
    let pp1 = PatchParams::apply("one");
    let created = cms.patch("s", &pp1, &Patch::Apply(&applied)).await.unwrap();
    assert_eq!(created.data.unwrap()["owner"], "one");
    let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"owner": "two"}});
    let err = cms
        .patch("s", &PatchParams::apply("two"), &Patch::Apply(&other))
        .await
        .unwrap_err();
    assert_eq!(api_error(err), (409, "Conflict".into()));
    let forced = cms
        .patch(
            "s",
            &PatchParams::apply("two").force(),
            &Patch::Apply(&other),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["owner"], "two");
    let managers: Vec<String> = forced
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(
        managers,
        ["two"],
        "a forced apply takes the field; empty entries disappear"
    );

    // Update writers show up in managedFields with the fields they set.
    let patched = cms
        .patch(
            "s",
            &PatchParams {
                field_manager: Some("queue".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"data": {"position": "3"}})),
        )
        .await
        .unwrap();
    let entry = patched
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .find(|m| m.manager.as_deref() == Some("queue"))
        .expect("queue entry");
    assert_eq!(entry.operation.as_deref(), Some("Update"));
    assert_eq!(
        serde_json::to_value(entry.fields_v1.unwrap()).unwrap(),
        json!({"f:data": {"f:position": {}}})
    );
}

/// Tiny local JSON-patch op list (avoids depending on the json-patch crate in tests).
mod json_patch_ops {
    pub type Ops = json_patch::Patch;
}

#[tokio::test]
async fn status_subresource_splits_writes() {
    let fake = FakeApi::new();
    let pods: Api<Pod> = Api::default_namespaced(fake.client());
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": "Running"}
    }))
    .unwrap();
    let created = pods.create(&PostParams::default(), &pod).await.unwrap();
    assert!(
        created.status.is_none(),
        "create ignores .status when the type has a status subresource"
    );
    let g1 = created.metadata.generation;
    let st = pods
        .patch_status(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Pending"}, "spec": {"nodeName": "ignored"}})),
        )
        .await
        .unwrap();
    assert_eq!(st.status.unwrap().phase.as_deref(), Some("Pending"));
    assert!(
        st.spec.unwrap().node_name.is_none(),
        "status writes ignore the spec"
    );
    assert_eq!(
        st.metadata.generation, g1,
        "status writes do not bump generation"
    );
    let main = pods
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Failed"}, "spec": {"nodeName": "n1"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        main.status.unwrap().phase.as_deref(),
        Some("Pending"),
        "main writes ignore .status"
    );
    assert_eq!(main.metadata.generation, g1.map(|g| g + 1));

    // Velero Backups have no status subresource: /status is 404, status is written on the object.
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("velero.io", "v1", "Backup"),
        "backups",
    );
    let backups: Api<DynamicObject> = Api::namespaced_with(fake.client(), "velero", &ar);
    let b = DynamicObject::new("b1", &ar)
        .within("velero")
        .data(json!({"spec": {}, "status": {"phase": "New"}}));
    let created = backups.create(&PostParams::default(), &b).await.unwrap();
    assert_eq!(created.data["status"]["phase"], "New");
    let err = backups
        .patch_status(
            "b1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Queued"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(err).0, 404);
    let patched = backups
        .patch(
            "b1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Queued"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["status"]["phase"], "Queued");
}

#[tokio::test]
async fn delete_honours_finalizers() {
    let fake = FakeApi::new();
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    let mut obj = cm("f");
    obj.metadata.finalizers = Some(vec!["example.com/keep".into()]);
    cms.create(&PostParams::default(), &obj).await.unwrap();
    let mut events = cms
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(
        events.try_next().await.unwrap(),
        Some(WatchEvent::Added(_))
    ));

    cms.delete("f", &DeleteParams::default()).await.unwrap();
    let still = cms.get("f").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());
    assert!(matches!(
        events.try_next().await.unwrap(),
        Some(WatchEvent::Modified(_))
    ));
    // No new finalizers while deleting.
    let err = cms
        .patch(
            "f",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/keep", "x/y"]}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(err).0, 422);
    cms.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(api_error(cms.get("f").await.unwrap_err()).0, 404);
    assert!(matches!(
        events.try_next().await.unwrap(),
        Some(WatchEvent::Deleted(_))
    ));
}

#[tokio::test]
async fn stale_watch_gets_410_after_compaction() {
    let fake = FakeApi::new();
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    let a = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let rv_a = a.metadata.resource_version.unwrap();
    cms.create(&PostParams::default(), &cm("b")).await.unwrap();
    // Before compaction, history replays from rv_a.
    let mut s = cms
        .watch(&WatchParams::default(), &rv_a)
        .await
        .unwrap()
        .boxed();
    match s.try_next().await.unwrap() {
        Some(WatchEvent::Added(o)) => assert_eq!(o.metadata.name.as_deref(), Some("b")),
        other => panic!("{other:?}"),
    }
    fake.compact();
    let mut s = cms
        .watch(&WatchParams::default(), &rv_a)
        .await
        .unwrap()
        .boxed();
    match s.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!(e.code, 410),
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}

#[tokio::test]
async fn watches_honour_timeouts_bookmarks_selectors_and_drops() {
    let fake = FakeApi::new();
    fake.set_bookmark_interval(Duration::from_millis(50));
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    // timeoutSeconds ends the stream.
    let started = std::time::Instant::now();
    let s = cms
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap();
    let all: Vec<_> = s.collect().await;
    assert!(
        all.iter().all(|e| matches!(e, Ok(WatchEvent::Bookmark(_)))),
        "only bookmarks on an empty collection"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // Bookmarks.
    let mut s = cms
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(
        s.try_next().await.unwrap(),
        Some(WatchEvent::Bookmark(_))
    ));
    // Label selectors turn objects leaving the selection into DELETED.
    let mut sel = cms
        .watch(&WatchParams::default().labels("app in (web)"), "0")
        .await
        .unwrap()
        .boxed();
    let mut labelled = cm("l");
    labelled.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    cms.create(&PostParams::default(), &cm("unlabelled"))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &labelled).await.unwrap();
    assert!(
        matches!(sel.try_next().await.unwrap(), Some(WatchEvent::Added(o)) if o.metadata.name.as_deref() == Some("l"))
    );
    cms.patch(
        "l",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "db"}}})),
    )
    .await
    .unwrap();
    assert!(matches!(
        sel.try_next().await.unwrap(),
        Some(WatchEvent::Deleted(_))
    ));
    // drop_watches closes open streams.
    fake.drop_watches();
    assert!(sel.try_next().await.unwrap().is_none());
    // Injected drops close new streams.
    fake.inject(Fault::drop_watch_after(Duration::ZERO).times(1));
    let s = cms
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap();
    assert_eq!(
        s.collect::<Vec<_>>().await.len(),
        2,
        "the two initial ADDED events, then closed"
    );
}

#[tokio::test]
async fn list_selectors_and_cluster_scope() {
    let fake = FakeApi::new();
    let client = fake.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "ns1");
    for (name, labels) in [
        ("a", json!({"tier": "x"})),
        ("b", json!({"tier": "y", "b": "1"})),
        ("c", json!({})),
    ] {
        let o: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
        cms.create(&PostParams::default(), &o).await.unwrap();
    }
    Api::<ConfigMap>::namespaced(client.clone(), "ns2")
        .create(&PostParams::default(), &cm("d"))
        .await
        .unwrap();
    let names = |l: kube::api::ObjectList<ConfigMap>| {
        l.items
            .into_iter()
            .map(|o| o.metadata.name.unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(
            cms.list(&ListParams::default().labels("tier in (x,y),!b"))
                .await
                .unwrap()
        ),
        ["a"]
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().labels("tier notin (x)"))
                .await
                .unwrap()
        ),
        ["b", "c"]
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().labels("tier!=y,tier"))
                .await
                .unwrap()
        ),
        ["a"]
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().fields("metadata.name=c"))
                .await
                .unwrap()
        ),
        ["c"]
    );
    let all: Api<ConfigMap> = Api::all(client.clone());
    assert_eq!(
        names(all.list(&ListParams::default()).await.unwrap()),
        ["a", "b", "c", "d"]
    );
    assert_eq!(
        names(
            all.list(&ListParams::default().fields("metadata.namespace!=ns1"))
                .await
                .unwrap()
        ),
        ["d"]
    );

    let nss: Api<Namespace> = Api::all(client);
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "velero"}})).unwrap();
    let created = nss.create(&PostParams::default(), &ns).await.unwrap();
    assert!(created.metadata.namespace.is_none());
    assert!(nss.get("velero").await.is_ok());
    let seeded: Option<Namespace> = fake.get(None, "velero").unwrap();
    assert!(seeded.is_some());
}

#[tokio::test]
async fn injected_faults_and_request_log() {
    let fake = FakeApi::new();
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    fake.inject(
        Fault::internal_error()
            .on_verb(Verb::Create)
            .on_resource("configmaps")
            .times(1),
    );
    let err = cms
        .create(&PostParams::default(), &cm("a"))
        .await
        .unwrap_err();
    assert_eq!(api_error(err), (500, "InternalError".into()));
    cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    fake.inject(Fault::conflict().on_verb(Verb::Patch).times(3));
    for _ in 0..3 {
        let err = cms
            .patch("a", &PatchParams::default(), &Patch::Merge(json!({})))
            .await
            .unwrap_err();
        assert_eq!(api_error(err).0, 409);
    }
    cms.patch("a", &PatchParams::default(), &Patch::Merge(json!({})))
        .await
        .unwrap();
    fake.inject(
        Fault::latency(Duration::from_millis(200))
            .on_verb(Verb::Get)
            .times(1),
    );
    let t = std::time::Instant::now();
    cms.get("a").await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(200));

    let log = fake.requests();
    assert_eq!(
        log.iter()
            .filter(|r| r.is(Verb::Create, "configmaps"))
            .count(),
        2
    );
    assert_eq!(log.iter().filter(|r| r.injected).count(), 4);
    assert_eq!(
        log.iter()
            .filter(|r| r.is(Verb::Patch, "configmaps") && r.status == 200)
            .count(),
        1
    );
    assert!(
        log.iter()
            .all(|r| r.namespace.as_deref() == Some("default"))
    );
}

#[tokio::test]
async fn dry_run_writes_nothing_and_seeding_helpers_round_trip() {
    let fake = FakeApi::new();
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    let rv = fake.resource_version();
    cms.create(
        &PostParams {
            dry_run: true,
            ..Default::default()
        },
        &cm("dry"),
    )
    .await
    .unwrap();
    assert_eq!(fake.resource_version(), rv);
    assert!(
        fake.get::<ConfigMap>(Some("default"), "dry")
            .unwrap()
            .is_none()
    );
    assert!(fake.requests().iter().any(|r| r.dry_run));

    let mut seeded = cm("s");
    seeded.metadata.namespace = Some("default".into());
    fake.seed(&seeded).unwrap();
    assert_eq!(cms.get("s").await.unwrap().data, seeded.data);
    let id = ResourceId::new("", "v1", "configmaps");
    fake.modify_value(&id, Some("default"), "s", |v| {
        v["data"]["k"] = json!("changed")
    })
    .unwrap();
    assert_eq!(cms.get("s").await.unwrap().data.unwrap()["k"], "changed");
    assert_eq!(fake.list::<ConfigMap>(Some("default")).unwrap().len(), 1);
    fake.remove_value(&id, Some("default"), "s").unwrap();
    assert!(fake.list_values(&id, None).is_empty());
}
