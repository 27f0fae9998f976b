//! Round trips of realistic objects, as `kubectl get -o yaml` prints them.

use kube::core::Resource;
use serde_json::json;

use super::*;

const BACKUP_YAML: &str = r#"
apiVersion: velero.io/v1
kind: Backup
metadata:
  creationTimestamp: "2026-05-20T10:00:00Z"
  generation: 3
  labels:
    velero.io/storage-location: default
  name: nightly-apps
  namespace: velero
  resourceVersion: "48211"
  uid: 0b6c1f5e-1d1c-4a53-9a3a-8f9b8c2f0a11
spec:
  csiSnapshotTimeout: 10m0s
  defaultVolumesToFsBackup: false
  includedNamespaces:
  - shop
  - "team-*"
  excludedNamespaces:
  - team-scratch
  labelSelector:
    matchLabels:
      app: web
  orLabelSelectors:
  - matchExpressions:
    - key: tier
      operator: In
      values: [db]
  storageLocation: default
  ttl: 720h0m0s
status:
  expiration: "2026-06-19T10:00:00Z"
  formatVersion: 1.1.0
  phase: Queued
  queuePosition: 2
"#;

#[test]
fn backup_reads_the_fields_the_queue_needs() {
    let backup: Backup = serde_saphyr::from_str(BACKUP_YAML).expect("valid backup");
    assert_eq!(backup.metadata.name.as_deref(), Some("nightly-apps"));
    assert_eq!(
        backup.spec.included_namespaces,
        Some(vec!["shop".to_owned(), "team-*".to_owned()])
    );
    assert_eq!(
        backup.spec.excluded_namespaces,
        Some(vec!["team-scratch".to_owned()])
    );
    assert_eq!(backup.phase(), BackupPhase::Queued);
    assert_eq!(backup.queue_position(), 2);
    assert!(backup.phase().is_active());
    assert_eq!(Backup::kind(&()), "Backup");
    assert_eq!(Backup::api_version(&()), "velero.io/v1");
}

#[test]
fn backup_round_trip_keeps_modelled_fields_and_drops_unknown_ones() {
    let backup: Backup = serde_saphyr::from_str(BACKUP_YAML).expect("valid backup");
    let value = serde_json::to_value(&backup).expect("serialisable");
    assert_eq!(
        value["spec"]["includedNamespaces"],
        json!(["shop", "team-*"])
    );
    assert_eq!(value["status"]["queuePosition"], json!(2));
    assert_eq!(value["status"]["phase"], json!("Queued"));
    // Unknown fields are tolerated on input and not written back: this is
    // why these objects must never be replace()d.
    assert!(value["spec"].get("ttl").is_none());
    let again: Backup = serde_json::from_value(value).expect("round trip");
    assert_eq!(again, backup);
}

#[test]
fn backup_without_spec_or_status_is_new() {
    let backup: Backup = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1",
        "kind": "Backup",
        "metadata": {"name": "b", "namespace": "velero"},
        "spec": {}
    }))
    .expect("minimal backup");
    assert_eq!(backup.phase(), BackupPhase::New);
    assert_eq!(backup.queue_position(), 0);
    assert!(backup.phase().is_new());
}

#[test]
fn unknown_phases_are_kept_verbatim() {
    let status: BackupStatus =
        serde_json::from_value(json!({"phase": "SomethingNew"})).expect("any phase string");
    assert_eq!(
        status.phase,
        Some(BackupPhase::Other("SomethingNew".into()))
    );
    assert_eq!(
        serde_json::to_value(&status).expect("serialisable"),
        json!({"phase": "SomethingNew"})
    );
    let empty: BackupStatus = serde_json::from_value(json!({"phase": ""})).expect("empty phase");
    assert!(empty.phase.as_ref().is_some_and(BackupPhase::is_new));
}

const DATA_UPLOAD_YAML: &str = r#"
apiVersion: velero.io/v2alpha1
kind: DataUpload
metadata:
  generateName: nightly-apps-
  labels:
    velero.io/accepted-by: worker-a1
    velero.io/backup-name: nightly-apps
    velero.io/expose-on-going: "true"
  name: nightly-apps-x7k2p
  namespace: velero
  ownerReferences:
  - apiVersion: velero.io/v1
    controller: true
    kind: Backup
    name: nightly-apps
    uid: 0b6c1f5e-1d1c-4a53-9a3a-8f9b8c2f0a11
spec:
  backupStorageLocation: default
  csiSnapshot:
    snapshotClass: csi-rbd-snapclass
    storageClass: ceph-rbd
    volumeSnapshot: velero-data-shop-0-5gq7d
  datamover: velero
  operationTimeout: 10m0s
  snapshotType: CSI
  sourceNamespace: shop
  sourcePVC: data-shop-0
status:
  acceptedByNode: worker-a1
  acceptedTimestamp: "2026-05-20T10:01:00Z"
  node: worker-a1
  nodeOS: linux
  phase: Accepted
  progress: {}
"#;

#[test]
fn data_upload_round_trip() {
    let upload: DataUpload = serde_saphyr::from_str(DATA_UPLOAD_YAML).expect("valid upload");
    assert_eq!(upload.spec.source_pvc.as_deref(), Some("data-shop-0"));
    assert_eq!(upload.spec.data_mover.as_deref(), Some("velero"));
    assert_eq!(
        upload
            .spec
            .csi_snapshot
            .as_ref()
            .and_then(|csi| csi.storage_class.as_deref()),
        Some("ceph-rbd")
    );
    assert_eq!(upload.phase(), LoadPhase::Accepted);
    let status = upload.status.clone().unwrap_or_default();
    assert_eq!(status.accepted_by_node.as_deref(), Some("worker-a1"));
    assert_eq!(status.node_os.as_deref(), Some("linux"));
    let value = serde_json::to_value(&upload).expect("serialisable");
    assert_eq!(value["spec"]["sourcePVC"], json!("data-shop-0"));
    assert_eq!(value["spec"]["datamover"], json!("velero"));
    assert_eq!(value["status"]["nodeOS"], json!("linux"));
    let again: DataUpload = serde_json::from_value(value).expect("round trip");
    assert_eq!(again, upload);
    assert_eq!(DataUpload::api_version(&()), "velero.io/v2alpha1");
}

#[test]
fn data_download_round_trip() {
    let download: DataDownload = serde_saphyr::from_str(
        r#"
apiVersion: velero.io/v2alpha1
kind: DataDownload
metadata: {name: restore-1-abcde, namespace: velero}
spec:
  targetVolume: {namespace: shop, pvc: data-shop-0, pv: ""}
  snapshotID: 6f1c2d
  sourceNamespace: shop
  nodeOS: linux
  someFutureField: [1, 2, 3]
status:
  phase: InProgress
  node: worker-b1
  progress: {totalBytes: 1000, bytesDone: 250}
"#,
    )
    .expect("valid download");
    let target = download.spec.target_volume.clone().unwrap_or_default();
    assert_eq!(target.pvc.as_deref(), Some("data-shop-0"));
    assert_eq!(download.spec.snapshot_id.as_deref(), Some("6f1c2d"));
    assert_eq!(download.phase(), LoadPhase::InProgress);
    let value = serde_json::to_value(&download).expect("serialisable");
    assert_eq!(value["status"]["progress"]["bytesDone"], json!(250));
    let again: DataDownload = serde_json::from_value(value).expect("round trip");
    assert_eq!(again, download);
}

#[test]
fn pod_volume_round_trips() {
    let backup: PodVolumeBackup = serde_saphyr::from_str(
        r#"
apiVersion: velero.io/v1
kind: PodVolumeBackup
metadata: {name: nightly-apps-fs-1, namespace: velero}
spec:
  node: worker-b2
  pod: {kind: Pod, name: web-0, namespace: shop, uid: 1234}
  volume: cache
  uploaderType: kopia
  repoIdentifier: ""
status:
  phase: Prepared
"#,
    )
    .expect("valid pvb");
    assert_eq!(backup.spec.node.as_deref(), Some("worker-b2"));
    assert_eq!(backup.phase(), LoadPhase::Prepared);
    let again: PodVolumeBackup =
        serde_json::from_value(serde_json::to_value(&backup).expect("serialisable"))
            .expect("round trip");
    assert_eq!(again, backup);

    let restore: PodVolumeRestore = serde_saphyr::from_str(
        r#"
apiVersion: velero.io/v1
kind: PodVolumeRestore
metadata: {name: restore-1-fs-1, namespace: velero}
spec:
  pod: {kind: Pod, name: web-0, namespace: shop}
  volume: cache
  snapshotID: abc
"#,
    )
    .expect("valid pvr");
    assert_eq!(restore.phase(), LoadPhase::New);
    assert!(restore.phase().is_new());
    let again: PodVolumeRestore =
        serde_json::from_value(serde_json::to_value(&restore).expect("serialisable"))
            .expect("round trip");
    assert_eq!(again, restore);
}

#[test]
fn load_phase_classification() {
    assert!(LoadPhase::from("").is_new());
    assert!(LoadPhase::New.is_new());
    assert!(!LoadPhase::Accepted.is_new());
    for terminal in ["Completed", "Failed", "Canceled"] {
        assert!(LoadPhase::from(terminal).is_terminal(), "{terminal}");
    }
    assert!(!LoadPhase::Prepared.is_terminal());
    assert_eq!(LoadPhase::from("Prepared").to_string(), "Prepared");
}

/// Velero's `IsBuiltInUploader` (`pkg/datamover/util.go`, v1.18.1): an empty
/// name or exactly `velero`, compared as written. The one copy of the rule
/// (the gate's scope in `kube-adapters`, both `--datamover` checks and
/// `policyctl soothe` call it); the command lines trim a flag's value
/// before asking, an object's `spec.datamover` is never trimmed.
#[test]
fn the_built_in_data_mover_is_empty_or_velero_exactly() {
    assert!(crate::is_built_in_data_mover(None));
    assert!(crate::is_built_in_data_mover(Some("")));
    assert!(crate::is_built_in_data_mover(Some(
        crate::BUILT_IN_DATA_MOVER
    )));
    for other in ["acme", "Velero", " velero", "velero ", " "] {
        assert!(!crate::is_built_in_data_mover(Some(other)), "{other:?}");
    }
}

const BACKUP_REPOSITORY_YAML: &str = r#"
apiVersion: velero.io/v1
kind: BackupRepository
metadata:
  generateName: test-default-kopia-
  labels:
    velero.io/repository-type: kopia
    velero.io/storage-location: default
    velero.io/volume-namespace: test
  name: test-default-kopia-kgt6n
  namespace: velero
spec:
  backupStorageLocation: default
  maintenanceFrequency: 1h0m0s
  repositoryType: kopia
  resticIdentifier: gs:jxun:/restic/test
  volumeNamespace: test
status:
  phase: Ready
"#;

#[test]
fn backup_repository_reads_the_fields_of_its_maintenance_key() {
    let repository: BackupRepository =
        serde_saphyr::from_str(BACKUP_REPOSITORY_YAML).expect("valid repository");
    assert_eq!(repository.spec.volume_namespace.as_deref(), Some("test"));
    assert_eq!(
        repository.spec.backup_storage_location.as_deref(),
        Some("default")
    );
    assert_eq!(repository.spec.repository_type.as_deref(), Some("kopia"));
    assert_eq!(BackupRepository::kind(&()), "BackupRepository");
    assert_eq!(BackupRepository::plural(&()), "backuprepositories");
    // Unmodelled fields are dropped on output: never replace() it.
    let written = serde_json::to_value(&repository).expect("serialises");
    assert_eq!(written["spec"].get("resticIdentifier"), None);
    assert_eq!(
        written["spec"],
        json!({"backupStorageLocation": "default", "repositoryType": "kopia", "volumeNamespace": "test"})
    );
}
