//! The same object gives the same policy input whoever reads it: a
//! controller gets it as JSON from the API server (kube decodes the bytes
//! with `serde_json`), `policyctl` as YAML or JSON text from `kubectl get`
//! (decoded to a JSON value first, then to the type). Each property also
//! checks the input against an oracle that reads the JSON value directly,
//! without the typed objects.

use std::collections::BTreeSet;

use backup_queue::{BackupInput, NamespaceFilter, Phase as QueuePhase};
use capi_api::Machine;
use jiff::Timestamp;
use kube_adapters::capi::host_map;
use kube_adapters::velero::{GateScope, LoadObject, backup_input, load};
use load_soothe::{Load, LoadKind, Phase as LoadPhase};
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use velero_api::{Backup, DataDownload, DataUpload, PodVolumeBackup, PodVolumeRestore};

/// The three ways an object reaches a converter.
fn readings<T: DeserializeOwned>(object: &Value) -> [T; 3] {
    let json_text = serde_json::to_vec(object).unwrap();
    let yaml_text = serde_saphyr::to_string(object).unwrap();
    let from_yaml_value: Value = serde_saphyr::from_str(&yaml_text).unwrap();
    [
        // A controller: the API server's response body.
        serde_json::from_slice(&json_text).unwrap(),
        // policyctl, JSON input: text → value → type.
        serde_json::from_value(serde_json::from_slice(&json_text).unwrap()).unwrap(),
        // policyctl, YAML input: text → value → type.
        serde_json::from_value(from_yaml_value).unwrap(),
    ]
}

fn optional<T: Strategy>(strategy: T) -> impl Strategy<Value = Option<T::Value>> {
    prop::option::of(strategy)
}

fn timestamp() -> impl Strategy<Value = String> {
    (0i64..4_000_000_000).prop_map(|seconds| {
        Timestamp::from_second(seconds)
            .unwrap()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    })
}

fn metadata() -> impl Strategy<Value = Value> {
    (
        "[a-z][a-z0-9-]{0,8}",
        optional(prop::sample::select(vec!["", "velero", "default", "ns-1"])),
        optional("[0-9]{1,4}"),
        optional("[a-f0-9]{4}"),
        optional(timestamp()),
        optional(prop::sample::select(vec!["true", "false", "True", ""])),
    )
        .prop_map(|(name, namespace, rv, uid, created, expose)| {
            let mut meta = json!({"name": name});
            let mut set = |key: &str, value: Option<Value>| {
                if let Some(value) = value {
                    meta[key] = value;
                }
            };
            set("namespace", namespace.map(Value::from));
            set("resourceVersion", rv.map(Value::from));
            set("uid", uid.map(Value::from));
            set("creationTimestamp", created.map(Value::from));
            set(
                "labels",
                expose.map(|value| json!({"velero.io/expose-on-going": value, "other": "x"})),
            );
            meta
        })
}

fn backup_object() -> impl Strategy<Value = Value> {
    let phases = vec![
        "",
        "New",
        "Queued",
        "ReadyToStart",
        "InProgress",
        "Completed",
        "Finalizing",
        "Bogus",
    ];
    let positions = prop_oneof![
        -3i64..10,
        Just(i64::from(u32::MAX)),
        Just(i64::from(u32::MAX) + 1),
        Just(i64::MAX),
        Just(i64::MIN),
    ];
    let namespaces = || optional(prop::collection::vec("[a-z*?]{0,4}", 0..3));
    (
        metadata(),
        namespaces(),
        namespaces(),
        optional((optional(prop::sample::select(phases)), optional(positions))),
    )
        .prop_map(|(metadata, included, excluded, status)| {
            let mut spec = json!({});
            if let Some(included) = included {
                spec["includedNamespaces"] = json!(included);
            }
            if let Some(excluded) = excluded {
                spec["excludedNamespaces"] = json!(excluded);
            }
            let mut backup = json!({"apiVersion": "velero.io/v1", "kind": "Backup",
                "metadata": metadata, "spec": spec});
            if let Some((phase, position)) = status {
                let mut status = json!({});
                if let Some(phase) = phase {
                    status["phase"] = json!(phase);
                }
                if let Some(position) = position {
                    status["queuePosition"] = json!(position);
                }
                backup["status"] = status;
            }
            backup
        })
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(value, |value, key| value.get(key))?
        .as_str()
}

fn created(object: &Value) -> Timestamp {
    str_at(object, &["metadata", "creationTimestamp"])
        .map_or(Timestamp::UNIX_EPOCH, |text| text.parse().unwrap())
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| item.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Reads the JSON value directly.
fn backup_oracle(object: &Value) -> BackupInput {
    let phase = match str_at(object, &["status", "phase"]).unwrap_or("") {
        "" | "New" => QueuePhase::New,
        "Queued" => QueuePhase::Queued,
        "ReadyToStart" => QueuePhase::ReadyToStart,
        "InProgress" => QueuePhase::InProgress,
        _ => QueuePhase::Other,
    };
    let position = object
        .pointer("/status/queuePosition")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let queue_position = if position <= 0 {
        0
    } else if position >= i64::from(u32::MAX) {
        u32::MAX
    } else {
        u32::try_from(position).unwrap()
    };
    BackupInput {
        name: str_at(object, &["metadata", "name"]).unwrap().to_owned(),
        resource_version: str_at(object, &["metadata", "resourceVersion"]).map(str::to_owned),
        phase,
        queue_position,
        created: created(object),
        namespaces: NamespaceFilter {
            included: strings(object.pointer("/spec/includedNamespaces")),
            excluded: strings(object.pointer("/spec/excludedNamespaces")),
        },
    }
}

fn load_object(kind: LoadKind) -> impl Strategy<Value = Value> {
    let phases = vec![
        "",
        "New",
        "Accepted",
        "Prepared",
        "InProgress",
        "Canceling",
        "Canceled",
        "Completed",
        "Failed",
        "Paused",
    ];
    (
        metadata(),
        optional(prop::sample::select(vec!["", "velero", "acme"])),
        optional(any::<bool>()),
        optional(prop::sample::select(phases)),
    )
        .prop_map(move |(metadata, mover, cancel, phase)| {
            let (api_version, has_mover) = match kind {
                LoadKind::DataUpload | LoadKind::DataDownload => ("velero.io/v2alpha1", true),
                LoadKind::PodVolumeBackup | LoadKind::PodVolumeRestore => ("velero.io/v1", false),
            };
            let mut object = json!({"apiVersion": api_version, "kind": kind.as_str(),
                "metadata": metadata, "spec": {}});
            if let (Some(mover), true) = (mover, has_mover) {
                object["spec"]["datamover"] = json!(mover);
            }
            if let Some(cancel) = cancel {
                object["spec"]["cancel"] = json!(cancel);
            }
            if let Some(phase) = phase {
                object["status"] = json!({"phase": phase});
            }
            object
        })
}

/// Reads the JSON value directly; `movers` as `GateScope::DataMovers`.
fn load_oracle(kind: LoadKind, object: &Value, movers: Option<&BTreeSet<String>>) -> Load {
    let namespace = match str_at(object, &["metadata", "namespace"]) {
        None | Some("") => "default",
        Some(namespace) => namespace,
    };
    let mover = match str_at(object, &["spec", "datamover"]) {
        None | Some("") => "velero",
        Some(mover) => mover,
    };
    let handled_here = match movers {
        None => true,
        Some(movers) => {
            matches!(kind, LoadKind::DataUpload | LoadKind::DataDownload) && movers.contains(mover)
        }
    };
    Load {
        id: load_soothe::LoadId::new(
            kind,
            namespace,
            str_at(object, &["metadata", "name"]).unwrap(),
            str_at(object, &["metadata", "uid"]).unwrap_or(""),
        ),
        phase: match str_at(object, &["status", "phase"]).unwrap_or("") {
            "" | "New" => LoadPhase::New,
            "Accepted" => LoadPhase::Accepted,
            "Prepared" => LoadPhase::Prepared,
            "InProgress" => LoadPhase::InProgress,
            "Canceling" => LoadPhase::Canceling,
            "Canceled" => LoadPhase::Canceled,
            "Completed" => LoadPhase::Completed,
            "Failed" => LoadPhase::Failed,
            _ => LoadPhase::Unrecognized,
        },
        expose_on_going: str_at(object, &["metadata", "labels", "velero.io/expose-on-going"])
            == Some("true"),
        cancel_requested: object.pointer("/spec/cancel") == Some(&json!(true)),
        created: created(object),
        resource_version: str_at(object, &["metadata", "resourceVersion"]).map(str::to_owned),
        handled_here,
    }
}

fn check_load<K: LoadObject>(object: &Value) -> Result<(), TestCaseError> {
    let movers: BTreeSet<String> = ["velero".to_owned()].into();
    for scope in [GateScope::Everything, GateScope::DataMovers(&movers)] {
        let oracle = load_oracle(
            K::KIND,
            object,
            match scope {
                GateScope::Everything => None,
                GateScope::DataMovers(movers) => Some(movers),
            },
        );
        for typed in readings::<K>(object) {
            prop_assert_eq!(&load(&typed, scope), &oracle);
        }
    }
    Ok(())
}

fn machine_object() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["cluster.x-k8s.io/v1beta1", "cluster.x-k8s.io/v1beta2"]),
        prop::sample::select(vec!["a", "b"]),
        "[a-z]{1,3}",
        optional(prop::sample::select(vec!["", "n1", "n2"])),
        optional(prop::sample::select(vec!["", "esx-1", "esx-2"])),
    )
        .prop_map(|(api_version, namespace, name, node, host)| {
            let mut machine = json!({"apiVersion": api_version, "kind": "Machine",
                "metadata": {"name": name, "namespace": namespace}});
            if let Some(host) = host {
                machine["metadata"]["labels"] = json!({"node.cluster.x-k8s.io/esxi-host": host});
            }
            if let Some(node) = node {
                machine["status"] = if api_version.ends_with("v1beta1") {
                    json!({"nodeRef": {"apiVersion": "v1", "kind": "Node", "name": node}})
                } else {
                    json!({"nodeRef": {"name": node}})
                };
            }
            machine
        })
}

proptest! {
    #[test]
    fn a_backup_gives_the_same_queue_input_whoever_reads_it(object in backup_object()) {
        let oracle = backup_oracle(&object);
        for typed in readings::<Backup>(&object) {
            prop_assert_eq!(&backup_input(&typed), &oracle);
        }
    }

    #[test]
    fn a_load_gives_the_same_gate_input_whoever_reads_it(
        upload in load_object(LoadKind::DataUpload),
        download in load_object(LoadKind::DataDownload),
        pvb in load_object(LoadKind::PodVolumeBackup),
        pvr in load_object(LoadKind::PodVolumeRestore),
    ) {
        check_load::<DataUpload>(&upload)?;
        check_load::<DataDownload>(&download)?;
        check_load::<PodVolumeBackup>(&pvb)?;
        check_load::<PodVolumeRestore>(&pvr)?;
    }

    #[test]
    fn machines_give_the_same_host_map_whoever_reads_them(
        objects in prop::collection::vec(machine_object(), 0..6),
    ) {
        let [from_api, from_json, from_yaml] = [0, 1, 2].map(|reader| {
            objects
                .iter()
                .map(|object| readings::<Machine>(object)[reader].clone())
                .collect::<Vec<_>>()
        });
        let expected = host_map(&from_api);
        prop_assert_eq!(&host_map(&from_json), &expected);
        prop_assert_eq!(&host_map(&from_yaml), &expected);
    }
}
