//! Real faults, each on a bed of its own: etcd compaction and a
//! kube-apiserver restart.

mod common;

use std::collections::BTreeMap;

use common::{start, watch_from};
use k8s_openapi::api::core::v1::{ConfigMap, Event, ObjectReference};
use kube::api::{Api, ObjectMeta, PostParams};
use kube_testbed::{Component, Testbed};

async fn config_map(api: &Api<ConfigMap>, name: &str) -> String {
    let object = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("name".to_owned(), name.to_owned())])),
        ..Default::default()
    };
    let created = api.create(&PostParams::default(), &object).await.unwrap();
    created.metadata.resource_version.unwrap()
}

async fn event(api: &Api<Event>, namespace: &str, name: &str) -> String {
    let object = Event {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        involved_object: ObjectReference {
            kind: Some("ConfigMap".to_owned()),
            name: Some("subject".to_owned()),
            namespace: Some(namespace.to_owned()),
            ..Default::default()
        },
        reason: Some("Testing".to_owned()),
        message: Some(name.to_owned()),
        ..Default::default()
    };
    let created = api.create(&PostParams::default(), &object).await.unwrap();
    created.metadata.resource_version.unwrap()
}

#[tokio::test]
async fn after_compaction_a_watch_from_an_old_resource_version_is_gone() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = start(Testbed::builder()).await;
    let namespace = bed.namespace("compaction").await.unwrap();
    let events: Api<Event> = Api::namespaced(bed.client(), &namespace);
    let config_maps: Api<ConfigMap> = Api::namespaced(bed.client(), &namespace);
    let old_event = event(&events, &namespace, "first").await;
    let old_config_map = config_map(&config_maps, "first").await;
    event(&events, &namespace, "second").await;
    config_map(&config_maps, "second").await;

    // Before: both watches start.
    assert_eq!(watch_from(&events, &old_event).await, Ok(()));
    let revision = bed.compact_etcd().await.unwrap();
    assert!(revision >= old_event.parse::<i64>().unwrap());

    // Events have no watch cache: etcd answers, and it has compacted.
    assert_eq!(watch_from(&events, &old_event).await, Err(410));
    // A cached resource is still served from the cache's history, as in
    // any cluster, until kube-apiserver restarts.
    assert_eq!(watch_from(&config_maps, &old_config_map).await, Ok(()));
}

#[tokio::test]
async fn without_the_watch_cache_every_old_watch_is_gone_after_compaction() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = start(Testbed::builder().watch_cache(false)).await;
    let namespace = bed.namespace("no-cache").await.unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(bed.client(), &namespace);
    let old = config_map(&config_maps, "first").await;
    config_map(&config_maps, "second").await;
    assert_eq!(watch_from(&config_maps, &old).await, Ok(()));
    bed.compact_etcd().await.unwrap();
    assert_eq!(watch_from(&config_maps, &old).await, Err(410));
}

#[tokio::test]
async fn a_restarted_apiserver_keeps_the_data_and_forgets_old_watches() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = start(Testbed::builder()).await;
    let namespace = bed.namespace("restart").await.unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(bed.client(), &namespace);
    let old = config_map(&config_maps, "kept").await;
    config_map(&config_maps, "later").await;
    let pid = bed.pid(Component::KubeApiserver).unwrap();

    bed.restart_apiserver().await.unwrap();

    assert_ne!(bed.pid(Component::KubeApiserver), Some(pid));
    assert!(!kube_testbed::process_alive(pid));
    // A client made before the restart reconnects.
    let kept = config_maps.get("kept").await.unwrap();
    assert_eq!(
        kept.data
            .unwrap_or_default()
            .get("name")
            .map(String::as_str),
        Some("kept")
    );
    // The watch cache started afresh at a newer revision.
    assert_eq!(watch_from(&config_maps, &old).await, Err(410));
}
