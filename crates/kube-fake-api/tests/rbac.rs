//! RBAC for requests made as a ServiceAccount (the apiserver's RBAC
//! authorizer, plugin/pkg/auth/authorizer/rbac/rbac.go): Role and
//! ClusterRole bindings, subresources, resourceNames (never for create;
//! list/watch only with a metadata.name field selector), 403 wording.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube_fake_api::FakeApi;
use serde_json::json;

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: team}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
  resourceNames: [allowed]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects:
- {kind: ServiceAccount, name: ctl, namespace: team}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ns-reader}
rules:
- apiGroups: [""]
  resources: [namespaces]
  verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ns-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ns-reader}
subjects:
- {kind: ServiceAccount, name: ctl, namespace: team}
"#;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "team"}})).unwrap()
}

fn code(err: kube::Error) -> (u16, String) {
    match err {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_service_account_gets_exactly_what_its_bindings_grant() {
    let fake = FakeApi::new();
    fake.enforce_rbac(RBAC).unwrap();
    fake.seed(&cm("allowed")).unwrap();
    fake.seed(&cm("other")).unwrap();
    let as_ctl: Api<ConfigMap> = Api::namespaced(fake.client_as("team", "ctl"), "team");
    // By name: allowed; another name: 403 with the apiserver's wording.
    as_ctl.get("allowed").await.unwrap();
    let (status, message) = code(as_ctl.get("other").await.unwrap_err());
    assert_eq!(status, 403);
    assert_eq!(
        message,
        "configmaps \"other\" is forbidden: User \"system:serviceaccount:team:ctl\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"team\""
    );
    // resourceNames restrict list to a metadata.name field selector.
    as_ctl
        .list(&ListParams::default().fields("metadata.name=allowed"))
        .await
        .unwrap();
    assert_eq!(
        code(as_ctl.list(&ListParams::default()).await.unwrap_err()).0,
        403
    );
    // create is granted by the unnamed rule; patch by none.
    as_ctl
        .create(&PostParams::default(), &cm("new"))
        .await
        .unwrap();
    assert_eq!(
        code(
            as_ctl
                .patch(
                    "allowed",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"data": {"a": "b"}}))
                )
                .await
                .unwrap_err()
        )
        .0,
        403
    );
    // A RoleBinding grants nothing in another namespace.
    let elsewhere: Api<ConfigMap> = Api::namespaced(fake.client_as("team", "ctl"), "other");
    assert_eq!(code(elsewhere.get("allowed").await.unwrap_err()).0, 403);
    // The ClusterRoleBinding grants cluster-scoped namespaces: list, not get.
    let namespaces: Api<Namespace> = Api::all(fake.client_as("team", "ctl"));
    namespaces.list(&ListParams::default()).await.unwrap();
    assert_eq!(code(namespaces.get("team").await.unwrap_err()).0, 403);
    // Another ServiceAccount has nothing; requests without identity are not checked.
    let stranger: Api<ConfigMap> = Api::namespaced(fake.client_as("team", "stranger"), "team");
    assert_eq!(code(stranger.get("allowed").await.unwrap_err()).0, 403);
    let admin: Api<ConfigMap> = Api::namespaced(fake.client(), "team");
    admin.get("other").await.unwrap();
    assert_eq!(fake.denied().len(), 6, "{:#?}", fake.denied());
}
