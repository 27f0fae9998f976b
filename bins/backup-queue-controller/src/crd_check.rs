//! The start-up check of Velero's Backup CRD: this controller writes the
//! `Queued` and `ReadyToStart` phases and `status.queuePosition`, which
//! only Velero 1.18's CRD accepts. Against an older CRD every write would
//! be refused (422) or silently pruned, so the controller refuses to start
//! instead, naming the Velero version it needs. The check is a
//! [`controller_kit::precondition`]: a CRD that cannot be read keeps
//! `/readyz` failing while it is read again.

use controller_kit::precondition::Probe;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use serde_json::Value;

/// The CRD read at start-up (`get` on this one name is all the RBAC needed).
pub const BACKUP_CRD: &str = "backups.velero.io";

/// The oldest Velero whose Backup CRD has the queue fields.
pub const REQUIRED_VELERO: &str = "1.18";

/// The readiness key under which an unreadable CRD keeps `/readyz` failing.
pub const READINESS_KEY: &str = "backup-crd";

/// What the Backup CRD's `v1` schema lacks, if anything: phases missing
/// from the `status.phase` enum (no enum accepts every phase), and whether
/// `status.queuePosition` is absent. `None` when it has everything.
pub fn missing_queue_fields(crd: &CustomResourceDefinition) -> Option<String> {
    let version = crd.spec.versions.iter().find(|v| v.name == "v1")?;
    let schema = serde_json::to_value(version.schema.as_ref()?.open_api_v3_schema.as_ref()?)
        .unwrap_or(Value::Null);
    let status = &schema["properties"]["status"]["properties"];
    let mut missing = Vec::new();
    if let Some(allowed) = status["phase"]["enum"].as_array() {
        for phase in ["Queued", "ReadyToStart"] {
            if !allowed.iter().any(|v| v == phase) {
                missing.push(format!("phase {phase}"));
            }
        }
    }
    let preserves = status.is_null()
        || schema["properties"]["status"]["x-kubernetes-preserve-unknown-fields"]
            == Value::Bool(true);
    if status["queuePosition"].is_null() && !preserves {
        missing.push("status.queuePosition".to_owned());
    }
    (!missing.is_empty()).then(|| missing.join(", "))
}

/// The message of a CRD too old for this controller.
pub fn too_old_message(missing: &str) -> String {
    format!(
        "the Backup CRD ({BACKUP_CRD}) lacks {missing}: backup-queue-controller needs Velero {REQUIRED_VELERO} or later \
         (its CRD has the Queued and ReadyToStart phases and status.queuePosition); upgrade Velero and its CRDs first"
    )
}

/// Why the CRD could not be read, for `/readyz`.
pub fn unreadable_message(error: &kube::Error) -> String {
    format!(
        "cannot read CustomResourceDefinition {BACKUP_CRD} to check for Velero {REQUIRED_VELERO} or later ({error}); \
         the manifests grant get on it by name"
    )
}

/// Reads the CRD: met when it has the queue fields, unmet (naming the
/// Velero version needed) when it is too old, unknown when it cannot be
/// read.
pub async fn probe(client: &kube::Client) -> Probe {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    match api.get(BACKUP_CRD).await {
        Ok(crd) => match missing_queue_fields(&crd) {
            Some(missing) => Probe::Unmet(too_old_message(&missing)),
            None => Probe::Met,
        },
        Err(error) => Probe::Unknown(unreadable_message(&error)),
    }
}
