//! Where the stand-in is as strict as kube-apiserver, each behaviour beside
//! the apiserver code it follows (cited in the handler that implements it).

use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube_fake_api::{FakeApi, ResourceId};
use serde_json::{Value, json};

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

fn backups_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("velero.io", "v1", "Backup"),
        "backups",
    )
}

fn api_error(err: kube::Error) -> (u16, String, String) {
    match err {
        kube::Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Events a watch from `rv` receives within `wait`.
async fn events_since(cms: &Api<ConfigMap>, rv: &str, wait: Duration) -> Vec<String> {
    let stream = cms.watch(&WatchParams::default(), rv).await.unwrap();
    let mut stream = Box::pin(stream);
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + wait;
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, stream.try_next())
        .await
        .map(Result::unwrap)
    {
        match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                seen.push(o.metadata.resource_version.unwrap_or_default());
            }
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => {}
        }
    }
    seen
}

// GuaranteedUpdate (storage/etcd3/store.go) skips identical bytes;
// IgnoreManagedFieldsTimestampsTransformer makes a write whose only change
// is a managedFields timestamp identical.
#[tokio::test]
async fn a_write_that_changes_nothing_keeps_the_resource_version_and_sends_no_event() {
    let fake = FakeApi::new();
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    let created = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();
    let params = PatchParams {
        field_manager: Some("tester".into()),
        ..PatchParams::default()
    };
    // A patch that sets what is there takes no field: not even a new
    // manager's entry is recorded (managedFieldsUpdater.Update).
    let same = cms
        .patch("a", &params, &Patch::Merge(json!({"data": {"k": "v"}})))
        .await
        .unwrap();
    assert_eq!(same.metadata.resource_version.as_deref(), Some(rv.as_str()));
    assert_eq!(
        same.metadata.managed_fields,
        created.metadata.managed_fields
    );
    // The first patch that changes a value: a real change, with the manager.
    let first = cms
        .patch("a", &params, &Patch::Merge(json!({"data": {"k": "v1"}})))
        .await
        .unwrap();
    let rv1 = first.metadata.resource_version.clone().unwrap();
    assert_ne!(rv1, rv, "a changed value is a change");
    // Same patch again (a later timestamp only), a merge patch that sets
    // what is there, a PUT of the stored object, an apply of owned values.
    for _ in 0..2 {
        let again = cms
            .patch("a", &params, &Patch::Merge(json!({"data": {"k": "v1"}})))
            .await
            .unwrap();
        assert_eq!(
            again.metadata.resource_version.as_deref(),
            Some(rv1.as_str())
        );
    }
    let put = cms
        .replace(
            "a",
            &PostParams {
                field_manager: Some("tester".into()),
                ..PostParams::default()
            },
            &first,
        )
        .await
        .unwrap();
    assert_eq!(put.metadata.resource_version.as_deref(), Some(rv1.as_str()));
    assert_eq!(
        put.metadata.managed_fields, first.metadata.managed_fields,
        "the timestamps stay too"
    );
    let apply = PatchParams::apply("applier");
    let applied = cms
        .patch(
            "a",
            &apply,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "1"}})),
        )
        .await
        .unwrap();
    let rv2 = applied.metadata.resource_version.clone().unwrap();
    let reapplied = cms
        .patch(
            "a",
            &apply,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        reapplied.metadata.resource_version.as_deref(),
        Some(rv2.as_str())
    );
    // A real change after all that: exactly one event since rv2.
    let changed = cms
        .patch("a", &params, &Patch::Merge(json!({"data": {"k": "w"}})))
        .await
        .unwrap();
    let rv3 = changed.metadata.resource_version.clone().unwrap();
    assert_ne!(rv3, rv2);
    // Events since the creation: the three real changes, nothing for the no-ops.
    assert_eq!(
        events_since(&cms, &rv, Duration::from_millis(300)).await,
        vec![rv1, rv2, rv3]
    );
}

/// Sends one request straight to the service with `headers`.
async fn send(
    fake: &FakeApi,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> (u16, Value) {
    let mut map = http::HeaderMap::new();
    for (k, v) in headers {
        map.insert(
            http::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            http::HeaderValue::from_str(v).unwrap(),
        );
    }
    let uri: http::Uri = uri.parse().unwrap();
    let body = if body.is_null() {
        Bytes::new()
    } else {
        Bytes::from(body.to_string())
    };
    let resp = fake
        .handle_request(method.parse().unwrap(), &uri, &map, body)
        .await;
    let status = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

// managerOrUserAgent / prefixFromUserAgent (endpoints/handlers/rest.go).
#[tokio::test]
async fn without_a_field_manager_the_user_agent_prefix_is_the_manager() {
    let fake = FakeApi::new();
    let (status, created) = send(
        &fake,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[
            ("content-type", "application/json"),
            ("user-agent", "kubectl/v1.33.0 (linux/amd64) kubernetes/abc"),
        ],
        json!({"metadata": {"name": "a"}, "data": {"k": "v"}}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(
        created["metadata"]["managedFields"][0]["manager"],
        json!("kubectl")
    );
    let (status, patched) = send(
        &fake,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/a",
        &[
            ("content-type", "application/merge-patch+json"),
            ("user-agent", "backup-queue-controller/0.1.0"),
        ],
        json!({"data": {"q": "1"}}),
    )
    .await;
    assert_eq!(status, 200, "{patched}");
    let managers: Vec<&str> = patched["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    // Sorted as kube-apiserver sorts them: by operation, time (seconds),
    // then manager; both updated within the same second here.
    let mut sorted = managers.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["backup-queue-controller", "kubectl"]);
    // An explicit fieldManager wins over the User-Agent.
    let (_, patched) = send(
        &fake,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/a?fieldManager=explicit",
        &[
            ("content-type", "application/merge-patch+json"),
            ("user-agent", "ignored/1"),
        ],
        json!({"data": {"r": "1"}}),
    )
    .await;
    let managers: Vec<&str> = patched["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert!(
        managers.contains(&"explicit") && !managers.contains(&"ignored"),
        "{managers:?}"
    );
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.field_manager.as_deref() == Some("backup-queue-controller"))
    );
}

// customresource_handler.go supportedTypes has no strategic merge patch.
#[tokio::test]
async fn strategic_merge_patch_on_a_custom_resource_is_415() {
    let fake = FakeApi::new();
    let ar = backups_resource();
    let backups: Api<DynamicObject> = Api::namespaced_with(fake.client(), "velero", &ar);
    let b = DynamicObject::new("b1", &ar)
        .within("velero")
        .data(json!({"spec": {}}));
    backups.create(&PostParams::default(), &b).await.unwrap();
    let err = backups
        .patch(
            "b1",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap_err();
    let (code, reason, _) = api_error(err);
    assert_eq!((code, reason.as_str()), (415, "UnsupportedMediaType"));
    // A merge patch works, and a built-in kind still takes strategic merge.
    backups
        .patch(
            "b1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    cms.create(&PostParams::default(), &cm("c")).await.unwrap();
    cms.patch(
        "c",
        &PatchParams::default(),
        &Patch::Strategic(json!({"data": {"x": "y"}})),
    )
    .await
    .unwrap();
}

// The apiextensions strategy's AllowUnconditionalUpdate is false; the
// generic registry's Store.Update then refuses a missing resourceVersion.
#[tokio::test]
async fn put_without_resource_version_on_a_custom_resource_is_422() {
    let fake = FakeApi::new();
    let ar = backups_resource();
    let backups: Api<DynamicObject> = Api::namespaced_with(fake.client(), "velero", &ar);
    let b = DynamicObject::new("b1", &ar)
        .within("velero")
        .data(json!({"spec": {}}));
    let created = backups.create(&PostParams::default(), &b).await.unwrap();
    let mut unconditional = created.clone();
    unconditional.metadata.resource_version = None;
    let err = backups
        .replace("b1", &PostParams::default(), &unconditional)
        .await
        .unwrap_err();
    let (code, reason, message) = api_error(err);
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        "backups.velero.io \"b1\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );
    let mut conditional = created.clone();
    conditional.data["spec"] = json!({"ttl": "1h"});
    backups
        .replace("b1", &PostParams::default(), &conditional)
        .await
        .unwrap();
    // Built-in kinds allow unconditional updates.
    let cms: Api<ConfigMap> = Api::default_namespaced(fake.client());
    cms.create(&PostParams::default(), &cm("c")).await.unwrap();
    let mut c = cm("c");
    c.data = Some([("k".to_owned(), "w".to_owned())].into());
    cms.replace("c", &PostParams::default(), &c).await.unwrap();
}

// limit/continue as storage/cacher and storage/etcd3 serve them (tokens:
// storage/continue.go).
#[tokio::test]
async fn lists_page_with_limit_and_continue() {
    let fake = FakeApi::new();
    for (ns, name) in [("a", "x"), ("a-b", "y"), ("a", "z"), ("b", "w"), ("a", "a")] {
        fake.seed(&{
            let mut c = cm(name);
            c.metadata.namespace = Some(ns.into());
            c
        })
        .unwrap();
    }
    let all: Api<ConfigMap> = Api::all(fake.client());
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(2);
    let mut pages = 0;
    let first_rv;
    {
        let page = all.list(&params).await.unwrap();
        first_rv = page.metadata.resource_version.clone();
        assert_eq!(page.metadata.remaining_item_count, Some(3));
        names.extend(page.items.iter().map(|c| {
            format!(
                "{}/{}",
                c.metadata.namespace.as_deref().unwrap(),
                c.metadata.name.as_deref().unwrap()
            )
        }));
        params = params.continue_token(page.metadata.continue_.as_deref().unwrap());
        pages += 1;
    }
    // A change between pages does not move the list's resourceVersion, nor
    // show in its pages: they are read at the first page's snapshot.
    fake.seed(&{
        let mut c = cm("late");
        c.metadata.namespace = Some("c".into());
        c
    })
    .unwrap();
    loop {
        let page = all.list(&params).await.unwrap();
        assert_eq!(page.metadata.resource_version, first_rv);
        pages += 1;
        names.extend(page.items.iter().map(|c| {
            format!(
                "{}/{}",
                c.metadata.namespace.as_deref().unwrap(),
                c.metadata.name.as_deref().unwrap()
            )
        }));
        match page.metadata.continue_.as_deref() {
            Some(token) if !token.is_empty() => params = params.continue_token(token),
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    // In storage-key order: "a-b/y" sorts before "a/a" ('-' < '/').
    assert_eq!(names, ["a-b/y", "a/a", "a/x", "a/z", "b/w"]);
    // Without a limit: everything at once, no token.
    let whole = all.list(&ListParams::default()).await.unwrap();
    assert_eq!(whole.items.len(), 6);
    assert!(
        whole
            .metadata
            .continue_
            .as_deref()
            .unwrap_or_default()
            .is_empty()
    );
    // A garbage token is 400; a token older than the compaction is 410.
    let err = all
        .list(&ListParams::default().continue_token("zz"))
        .await
        .unwrap_err();
    assert_eq!(api_error(err).0, 400);
    let page = all.list(&ListParams::default().limit(1)).await.unwrap();
    let token = page.metadata.continue_.clone().unwrap();
    fake.seed(&cm("newer")).unwrap();
    fake.compact();
    let err = all
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap_err();
    assert_eq!(api_error(err).0, 410);
    // kube-runtime's watcher pages its initial list and still sees everything.
    let cms: Api<ConfigMap> = Api::all(fake.client());
    let objects: Vec<ConfigMap> =
        kube::runtime::watcher(cms, kube::runtime::watcher::Config::default().page_size(2))
            .take_while(|e| {
                futures::future::ready(!matches!(e, Ok(kube::runtime::watcher::Event::InitDone)))
            })
            .filter_map(|e| async move {
                match e.unwrap() {
                    kube::runtime::watcher::Event::InitApply(o) => Some(o),
                    _ => None,
                }
            })
            .collect()
            .await;
    assert_eq!(objects.len(), 7);
}

#[tokio::test]
async fn independent_servers_share_nothing() {
    let management = FakeApi::new();
    let workload = FakeApi::new();
    let in_management: Api<ConfigMap> = Api::default_namespaced(management.client());
    let in_workload: Api<ConfigMap> = Api::default_namespaced(workload.client());
    in_management
        .create(&PostParams::default(), &cm("same-name"))
        .await
        .unwrap();
    in_workload
        .create(&PostParams::default(), &cm("same-name"))
        .await
        .unwrap();
    in_workload
        .create(&PostParams::default(), &cm("only-here"))
        .await
        .unwrap();
    assert!(in_management.get_opt("only-here").await.unwrap().is_none());
    assert_eq!(
        management
            .list_values(&ResourceId::new("", "v1", "configmaps"), None)
            .len(),
        1
    );
    assert_eq!(
        workload
            .list_values(&ResourceId::new("", "v1", "configmaps"), None)
            .len(),
        2
    );
    let writes = |api: &FakeApi| api.requests().iter().filter(|r| r.is_write()).count();
    assert_eq!((writes(&management), writes(&workload)), (1, 2));
    assert_ne!(management.resource_version(), workload.resource_version());
}
