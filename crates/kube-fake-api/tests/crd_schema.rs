//! CustomResourceDefinitions installed from YAML: the stand-in prunes and
//! validates custom resources against their schema as the apiextensions
//! server does (pruning/algorithm.go; kube-openapi validate via
//! apiextensions-apiserver/pkg/apiserver/validation), and serves the
//! definitions themselves.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_fake_api::{FakeApi, crds};
use serde_json::json;

fn backups(fake: &FakeApi) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("velero.io", "v1", "Backup"),
        "backups",
    );
    Api::namespaced_with(fake.client(), "velero", &ar)
}

fn backup(name: &str) -> DynamicObject {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("velero.io", "v1", "Backup"),
        "backups",
    );
    DynamicObject::new(name, &ar)
        .within("velero")
        .data(json!({"spec": {"includedNamespaces": ["app"], "anyField": {"kept": true}}, "status": {"phase": "New"}}))
}

fn api_error(err: kube::Error) -> (u16, String) {
    match err {
        kube::Error::Api(s) => (s.code, s.message.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn with_crd(yaml: &str) -> FakeApi {
    let fake = FakeApi::new();
    assert_eq!(fake.install_crds(yaml).unwrap().len(), 1);
    fake
}

#[tokio::test]
async fn velero_1_18_takes_the_queue_fields_and_1_17_refuses_the_phase_and_prunes_the_position() {
    let queued = Patch::Merge(json!({"status": {"phase": "Queued", "queuePosition": 2}}));

    let fake = with_crd(crds::VELERO_1_18_BACKUP);
    let api = backups(&fake);
    api.create(&PostParams::default(), &backup("b1"))
        .await
        .unwrap();
    let stored = api
        .patch("b1", &PatchParams::default(), &queued)
        .await
        .unwrap();
    assert_eq!(
        stored.data["status"],
        json!({"phase": "Queued", "queuePosition": 2})
    );

    let fake = with_crd(crds::VELERO_1_17_BACKUP);
    let api = backups(&fake);
    api.create(&PostParams::default(), &backup("b1"))
        .await
        .unwrap();
    let (code, message) = api_error(
        api.patch("b1", &PatchParams::default(), &queued)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "Backup.velero.io \"b1\" is invalid: status.phase: Unsupported value: \"Queued\": supported values: \"New\", \"FailedValidation\", \"InProgress\", \"WaitingForPluginOperations\", \"WaitingForPluginOperationsPartiallyFailed\", \"Finalizing\", \"FinalizingPartiallyFailed\", \"Completed\", \"PartiallyFailed\", \"Failed\", \"Deleting\""
    );
    // The position alone is accepted and silently dropped: 1.17 does not know it.
    let stored = api
        .patch(
            "b1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"queuePosition": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(stored.data["status"], json!({"phase": "New"}));
}

#[tokio::test]
async fn unknown_fields_are_pruned_unless_preserved_and_types_are_checked() {
    let fake = with_crd(crds::VELERO_1_18_BACKUP);
    let api = backups(&fake);
    let mut b = backup("b1");
    b.data["status"]["notInTheSchema"] = json!("x");
    let created = api.create(&PostParams::default(), &b).await.unwrap();
    assert!(
        created.data["status"].get("notInTheSchema").is_none(),
        "{}",
        created.data
    );
    assert_eq!(
        created.data["spec"]["anyField"],
        json!({"kept": true}),
        "spec preserves unknown fields"
    );
    let (code, message) = api_error(
        api.patch(
            "b1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"errors": "many", "progress": {"totalItems": 1.5}}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "Backup.velero.io \"b1\" is invalid: [status.errors: Invalid value: \"string\": status.errors in body must be of type integer: \"string\", status.progress.totalItems: Invalid value: \"number\": status.progress.totalItems in body must be of type integer: \"number\"]"
    );
    // Refused writes change nothing.
    assert_eq!(
        api.get("b1").await.unwrap().data["status"],
        json!({"phase": "New"})
    );
}

#[tokio::test]
async fn required_fields_are_enforced_on_machines() {
    let fake = with_crd(crds::CLUSTER_API_1_12_MACHINE);
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta1", "Machine"),
        "machines",
    );
    let machines: Api<DynamicObject> = Api::namespaced_with(fake.client(), "capi", &ar);
    let m = DynamicObject::new("m1", &ar)
        .within("capi")
        .data(json!({"spec": {"bootstrap": {}, "infrastructureRef": {"kind": "VSphereMachine", "name": "m1"}}}));
    let (code, message) = api_error(
        machines
            .create(&PostParams::default(), &m)
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (code, message.as_str()),
        (
            422,
            "Machine.cluster.x-k8s.io \"m1\" is invalid: spec.clusterName: Required value"
        )
    );
    let m = m.data(json!({"spec": {"clusterName": "c1", "bootstrap": {}, "infrastructureRef": {"kind": "VSphereMachine", "name": "m1"}, "extra": 1}}));
    let created = machines.create(&PostParams::default(), &m).await.unwrap();
    assert_eq!(created.data["spec"]["extra"], json!(1));
}

#[tokio::test]
async fn definitions_are_served_and_load_from_a_directory() {
    let fake = FakeApi::new();
    let names = fake
        .install_crds_from_dir(&crds::dir().join("velero-1.18"))
        .unwrap();
    assert_eq!(names, ["backups.velero.io"]);
    let definitions: Api<CustomResourceDefinition> = Api::all(fake.client());
    let crd = definitions.get("backups.velero.io").await.unwrap();
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .unwrap()
        .open_api_v3_schema
        .as_ref()
        .unwrap();
    let status = &schema.properties.as_ref().unwrap()["status"];
    assert!(
        status
            .properties
            .as_ref()
            .unwrap()
            .contains_key("queuePosition")
    );
    // A CRD without a group is refused with the reason.
    let err = fake
        .install_crds("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\nspec:\n  names: {kind: X, plural: xs}\n  versions: []\n")
        .unwrap_err();
    assert!(err.to_string().contains("spec.group is missing"), "{err}");
}
