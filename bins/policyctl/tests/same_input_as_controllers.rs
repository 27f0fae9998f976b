//! `policyctl` gives the policies the same input a controller does: an
//! object read by policyctl's manifest reader (YAML documents or a JSON
//! `List`, as `kubectl get -o yaml|json` prints them) converts to the same
//! backup-queue and prepare-queue inputs and the same host map as the object
//! a controller decodes from the API server's JSON. And the key policyctl
//! files an object under names the namespace the converted input carries.

use capi_api::Machine;
use kube_adapters::capi::host_map;
use kube_adapters::velero::{GateScope, LoadObject, backup_input, load};
use policyctl::manifest::{Inventory, Objects, read_str};
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use velero_api::{Backup, DataUpload, PodVolumeRestore};

/// How a controller gets the object: the API server's JSON bytes.
fn from_api<T: DeserializeOwned>(object: &Value) -> T {
    serde_json::from_slice(&serde_json::to_vec(object).unwrap()).unwrap()
}

/// The objects as one YAML stream and as one JSON `List`, both read by
/// policyctl.
fn policyctl_readings(objects: &[Value]) -> [Inventory; 2] {
    let yaml: String = objects
        .iter()
        .map(|object| format!("---\n{}", serde_saphyr::to_string(object).unwrap()))
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    // A stream without any document is refused (what a failed `kubectl get
    // > FILE` leaves); the List of no items is an answer.
    let from_yaml = if objects.is_empty() {
        assert!(matches!(
            read_str("objects.yaml", &yaml),
            Err(policyctl::manifest::ManifestError::Empty { .. })
        ));
        Inventory::default()
    } else {
        read_str("objects.yaml", &yaml).unwrap()
    };
    [
        from_yaml,
        read_str("objects.json", &list.to_string()).unwrap(),
    ]
}

fn namespace() -> impl Strategy<Value = Option<&'static str>> {
    prop::option::of(prop::sample::select(vec!["", "velero", "ns-1"]))
}

fn metadata(name: String, namespace: Option<&str>, extra: Value) -> Value {
    let mut meta = json!({"name": name});
    if let Some(namespace) = namespace {
        meta["namespace"] = json!(namespace);
    }
    if let (Some(meta), Some(extra)) = (meta.as_object_mut(), extra.as_object()) {
        meta.extend(extra.clone());
    }
    meta
}

fn backups() -> impl Strategy<Value = Vec<Value>> {
    let backup = (
        namespace(),
        prop::option::of(prop::sample::select(vec![
            "",
            "New",
            "Queued",
            "InProgress",
            "Failed",
        ])),
        prop_oneof![Just(None), (-2i64..5).prop_map(Some), Just(Some(i64::MAX))],
        prop::option::of(prop::collection::vec("[a-z*]{1,3}", 0..3)),
        prop::option::of(0i64..2_000_000_000),
    );
    prop::collection::vec(backup, 0..6).prop_map(|specs| {
        specs
            .into_iter()
            .enumerate()
            .map(|(i, (namespace, phase, position, included, created))| {
                let extra = created.map_or(json!({}), |seconds| {
                    json!({"creationTimestamp": jiff::Timestamp::from_second(seconds).unwrap().to_string()})
                });
                let mut backup = json!({"apiVersion": "velero.io/v1", "kind": "Backup",
                    "metadata": metadata(format!("b{i}"), namespace, extra), "spec": {}});
                if let Some(included) = included {
                    backup["spec"]["includedNamespaces"] = json!(included);
                }
                let mut status = json!({});
                if let Some(phase) = phase {
                    status["phase"] = json!(phase);
                }
                if let Some(position) = position {
                    status["queuePosition"] = json!(position);
                }
                backup["status"] = status;
                backup
            })
            .collect()
    })
}

fn loads() -> impl Strategy<Value = Vec<Value>> {
    let one = (
        any::<bool>(),
        namespace(),
        prop::option::of(prop::sample::select(vec![
            "", "New", "Accepted", "Prepared",
        ])),
        prop::option::of(prop::sample::select(vec!["true", "false"])),
        prop::option::of(prop::sample::select(vec!["", "velero", "acme"])),
    );
    prop::collection::vec(one, 0..6).prop_map(|specs| {
        specs
            .into_iter()
            .enumerate()
            .map(|(i, (upload, namespace, phase, expose, mover))| {
                let extra = expose.map_or(json!({}), |value| {
                    json!({"labels": {"velero.io/expose-on-going": value}, "uid": format!("u{i}")})
                });
                let (api_version, kind) = if upload {
                    ("velero.io/v2alpha1", "DataUpload")
                } else {
                    ("velero.io/v1", "PodVolumeRestore")
                };
                let mut object = json!({"apiVersion": api_version, "kind": kind,
                    "metadata": metadata(format!("l{i}"), namespace, extra), "spec": {}});
                if let (true, Some(mover)) = (upload, mover) {
                    object["spec"]["datamover"] = json!(mover);
                }
                if let Some(phase) = phase {
                    object["status"] = json!({"phase": phase});
                }
                object
            })
            .collect()
    })
}

fn machines() -> impl Strategy<Value = Vec<Value>> {
    let one = (
        prop::sample::select(vec!["v1beta1", "v1beta2"]),
        namespace(),
        prop::option::of(prop::sample::select(vec!["", "n1", "n2"])),
        prop::option::of(prop::sample::select(vec!["", "esx-1", "esx-2"])),
    );
    prop::collection::vec(one, 0..6).prop_map(|specs| {
        specs
            .into_iter()
            .enumerate()
            .map(|(i, (version, namespace, node, host))| {
                let extra = host.map_or(
                    json!({}),
                    |host| json!({"labels": {"node.cluster.x-k8s.io/esxi-host": host}}),
                );
                let mut machine = json!({"apiVersion": format!("cluster.x-k8s.io/{version}"),
                    "kind": "Machine", "metadata": metadata(format!("m{i}"), namespace, extra)});
                if let Some(node) = node {
                    machine["status"] = json!({"nodeRef": {"name": node}});
                }
                machine
            })
            .collect()
    })
}

/// Each load policyctl read converts like the controller's decoding of the
/// same object, and sits under the key of the namespace it converts to.
fn loads_agree<K: LoadObject>(
    read: &Objects<K>,
    objects: &[Value],
    kind: &str,
) -> Result<(), TestCaseError> {
    let wanted: Vec<&Value> = objects.iter().filter(|o| o["kind"] == kind).collect();
    prop_assert_eq!(read.len(), wanted.len());
    for (key, located) in read {
        let object = wanted
            .iter()
            .find(|o| o["metadata"]["name"] == json!(key.name))
            .unwrap();
        let controller: K = from_api(object);
        let got = load(&located.object, GateScope::Everything);
        prop_assert_eq!(&got, &load(&controller, GateScope::Everything));
        prop_assert_eq!(&got.id.namespace, &key.namespace);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn policyctl_reads_backups_loads_and_machines_into_the_inputs_a_controller_computes(
        backups in backups(),
        loads in loads(),
        machines in machines(),
    ) {
        let objects: Vec<Value> =
            backups.iter().chain(&loads).chain(&machines).cloned().collect();
        for inventory in policyctl_readings(&objects) {
            // Backups: one input per object, equal to the controller's.
            prop_assert_eq!(inventory.backups.len(), backups.len());
            for (key, located) in &inventory.backups {
                let object = backups
                    .iter()
                    .find(|o| o["metadata"]["name"] == json!(key.name))
                    .unwrap();
                let controller: Backup = from_api(object);
                prop_assert_eq!(backup_input(&located.object), backup_input(&controller));
            }
            loads_agree::<DataUpload>(&inventory.data_uploads, &loads, "DataUpload")?;
            loads_agree::<PodVolumeRestore>(
                &inventory.pod_volume_restores,
                &loads,
                "PodVolumeRestore",
            )?;
            // Machines: the same host map.
            let read: Vec<&Machine> =
                inventory.machines.values().map(|located| &located.object).collect();
            let controller: Vec<Machine> = machines.iter().map(from_api).collect();
            prop_assert_eq!(host_map(read), host_map(&controller));
        }
    }
}
