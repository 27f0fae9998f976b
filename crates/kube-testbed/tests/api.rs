//! The shared bed's kube-apiserver: version, namespaces, identities, RBAC.

mod common;

use std::time::Duration;

use common::{eventually, status_code};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};

fn named<T: Default>(name: &str, build: impl FnOnce(ObjectMeta) -> T) -> T {
    build(ObjectMeta {
        name: Some(name.to_owned()),
        ..Default::default()
    })
}

/// A Role that may list pods, and its binding to `subject`.
async fn grant_pod_listing(client: kube::Client, namespace: &str, subject: Subject) {
    let roles: Api<Role> = Api::namespaced(client.clone(), namespace);
    let bindings: Api<RoleBinding> = Api::namespaced(client, namespace);
    let role = named("pod-reader", |metadata| Role {
        metadata,
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["pods".to_owned()]),
            verbs: vec!["list".to_owned()],
            ..Default::default()
        }]),
    });
    roles.create(&PostParams::default(), &role).await.unwrap();
    let binding = named("pod-reader", |metadata| RoleBinding {
        metadata,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "Role".to_owned(),
            name: "pod-reader".to_owned(),
        },
        subjects: Some(vec![subject]),
    });
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

/// Who the server says `client` is: (user name, groups).
async fn whoami(client: kube::Client) -> (String, Vec<String>) {
    let reviews: Api<SelfSubjectReview> = Api::all(client);
    let review = reviews
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    let user = review.status.and_then(|s| s.user_info).unwrap_or_default();
    (
        user.username.unwrap_or_default(),
        user.groups.unwrap_or_default(),
    )
}

#[tokio::test]
async fn the_server_is_the_pinned_kubernetes() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    let text = bed
        .client()
        .request_text(http::Request::get("/version").body(Vec::new()).unwrap())
        .await
        .unwrap();
    let version: serde_json::Value = serde_json::from_str(&text).unwrap();
    let pinned = &bed.versions().kubernetes;
    // The minor version compiled into the sources (what the server
    // emulates) is the pinned one whatever the build stamped.
    let emulated = format!(
        "v{}.{}.",
        version["emulationMajor"].as_str().unwrap_or_default(),
        version["emulationMinor"].as_str().unwrap_or_default()
    );
    assert!(
        pinned.starts_with(&emulated),
        "{pinned} is not {emulated}x: {text}"
    );
    assert_eq!(
        version["gitVersion"].as_str(),
        Some(pinned.as_str()),
        "kube-apiserver's /version does not report the pinned {pinned} (a binary built \
         without `-ldflags -X k8s.io/component-base/version.gitVersion=...` reports \
         v0.0.0-master): {text}"
    );
}

#[tokio::test]
async fn a_write_into_a_missing_namespace_is_not_found() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    let config_maps: Api<ConfigMap> = Api::namespaced(bed.client(), "no-such-namespace");
    let error = config_maps
        .create(
            &PostParams::default(),
            &named("orphan", |metadata| ConfigMap {
                metadata,
                ..Default::default()
            }),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&error), Some(404), "{error}");
}

#[tokio::test]
async fn a_service_account_is_denied_until_a_role_binding_allows_it() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    let namespace = bed.namespace("sa-rbac").await.unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(bed.client(), &namespace);
    accounts
        .create(
            &PostParams::default(),
            &named("controller", |metadata| ServiceAccount {
                metadata,
                ..Default::default()
            }),
        )
        .await
        .unwrap();
    let kubeconfig = bed
        .service_account_kubeconfig(&namespace, "controller")
        .await
        .unwrap();
    let client = bed.client_from_kubeconfig(&kubeconfig).await.unwrap();
    let (user, groups) = whoami(client.clone()).await;
    assert_eq!(
        user,
        format!("system:serviceaccount:{namespace}:controller")
    );
    assert!(
        groups.contains(&"system:serviceaccounts".to_owned()),
        "{groups:?}"
    );

    let pods: Api<Pod> = Api::namespaced(client, &namespace);
    let error = pods.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(status_code(&error), Some(403), "{error}");

    grant_pod_listing(
        bed.client(),
        &namespace,
        Subject {
            kind: "ServiceAccount".to_owned(),
            name: "controller".to_owned(),
            namespace: Some(namespace.clone()),
            ..Default::default()
        },
    )
    .await;
    // RBAC reads bindings from an informer: allowed within moments.
    eventually(
        "the RoleBinding to allow listing pods",
        Duration::from_secs(10),
        || async { pods.list(&ListParams::default()).await.ok() },
    )
    .await;
}

#[tokio::test]
async fn a_client_certificate_identity_is_its_user_and_group() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    let namespace = bed.namespace("user-cert").await.unwrap();
    let kubeconfig = bed.user_kubeconfig("alice", &["team-a", "team-b"]).unwrap();
    let client = bed.client_from_kubeconfig(&kubeconfig).await.unwrap();
    let (user, groups) = whoami(client.clone()).await;
    assert_eq!(user, "alice");
    assert!(groups.contains(&"team-a".to_owned()), "{groups:?}");
    assert!(groups.contains(&"team-b".to_owned()), "{groups:?}");
    assert!(
        groups.contains(&"system:authenticated".to_owned()),
        "{groups:?}"
    );

    let pods: Api<Pod> = Api::namespaced(client, &namespace);
    let error = pods.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(status_code(&error), Some(403), "{error}");
    grant_pod_listing(
        bed.client(),
        &namespace,
        Subject {
            kind: "Group".to_owned(),
            name: "team-b".to_owned(),
            api_group: Some("rbac.authorization.k8s.io".to_owned()),
            ..Default::default()
        },
    )
    .await;
    eventually(
        "the group's RoleBinding to allow listing pods",
        Duration::from_secs(10),
        || async { pods.list(&ListParams::default()).await.ok() },
    )
    .await;
}

#[tokio::test]
async fn the_admin_is_in_system_masters_by_certificate_and_by_token() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    let (user, groups) = whoami(bed.client()).await;
    assert_eq!(user, kube_testbed::ADMIN_USER);
    assert!(groups.contains(&"system:masters".to_owned()), "{groups:?}");

    let mut config = bed.client_config();
    config.auth_info = kube::config::AuthInfo {
        token: Some(bed.admin_token().to_owned().into()),
        ..Default::default()
    };
    let (user, groups) = whoami(kube::Client::try_from(config).unwrap()).await;
    assert_eq!(user, kube_testbed::ADMIN_USER);
    assert!(groups.contains(&"system:masters".to_owned()), "{groups:?}");
}

#[tokio::test]
async fn kubectl_applies_into_the_bed() {
    if kube_testbed::skip_requested() {
        return;
    }
    let bed = kube_testbed::shared();
    let namespace = bed.namespace("apply").await.unwrap();
    bed.apply_yaml(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: {namespace}\ndata:\n  key: value\n"
    ))
    .await
    .unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(bed.client(), &namespace);
    let applied = config_maps.get("applied").await.unwrap();
    assert_eq!(
        applied
            .data
            .unwrap_or_default()
            .get("key")
            .map(String::as_str),
        Some("value")
    );
    let output = bed
        .kubectl()
        .args([
            "get",
            "configmap",
            "applied",
            "-n",
            &namespace,
            "-o",
            "name",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "configmap/applied"
    );
}
