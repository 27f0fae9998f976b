//! `affinity --pvc NAMESPACE/NAME [--restore] [--node-os linux|windows]`:
//! the scheduling fragment of the data-mover pod that would serve a PVC.

use affinity_translate::{
    FragmentError, INHERITED_TOLERATION_KEYS, NodeAgentConfig, NodeOs, PodFragment,
    backup_fragment_for, node_agent_daemon_set_name, restore_fragment_for,
};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Toleration};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use serde_json::{Value, json};

use crate::cli::{NodeOsArg, ObjectRef};
use crate::commands::{CommandError, render, restore_cache};
use crate::manifest::{Inventory, ObjectKey};
use crate::output::{Output, or_dash, table};

/// Which data-mover pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// A DataUpload's backup pod: source PVC, its class, PV and attachments.
    Backup,
    /// A DataDownload's restore pod: target PVC and its class.
    Restore,
}

/// Node label carrying the OS (Velero's `NodeOSLabel`).
const NODE_OS_LABEL: &str = "kubernetes.io/os";

fn os_name(os: NodeOs) -> &'static str {
    match os {
        NodeOs::Linux => "linux",
        NodeOs::Windows => "windows",
    }
}

/// Velero's check before it exposes a data mover (A2.26): some Node is
/// labelled `kubernetes.io/os` with this OS. Unlabelled Nodes do not count;
/// a label value other than `linux` or `windows` counts as Linux.
pub fn has_node_with_os(inventory: &Inventory, os: NodeOs) -> bool {
    inventory.nodes.values().any(|located| {
        located
            .object
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(NODE_OS_LABEL))
            .is_some_and(|label| {
                let real = if label == "windows" {
                    NodeOs::Windows
                } else {
                    NodeOs::Linux
                };
                real == os
            })
    })
}

/// The error Velero fails the load with when [`has_node_with_os`] is false,
/// `None` otherwise.
pub fn no_node_with_os(inventory: &Inventory, os: NodeOs) -> Option<String> {
    (!has_node_with_os(inventory, os)).then(|| {
        let os = os_name(os);
        let read = match inventory.nodes.len() {
            0 => "the input has no Node: add `kubectl get nodes -o yaml` to it".to_owned(),
            n => format!("{n} Node(s) read, none labelled {NODE_OS_LABEL}={os}"),
        };
        format!(
            "no appropriate node to run the data mover: no node with OS {os} ({read}); Velero fails the load before creating the pod (A2.26)"
        )
    })
}

/// The tolerations of the node-agent DaemonSet Velero copies from onto a
/// data-mover pod on `os` nodes (A2.27): `apps/v1` DaemonSet `node-agent`
/// (`node-agent-windows` for Windows) in `namespace`, or, with no
/// namespace, in the one namespace of the input that has one.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeAgentTolerations {
    /// The DaemonSet pod template's tolerations (empty when not known).
    pub tolerations: Vec<Toleration>,
    /// Why they are not known, when they are not.
    pub note: Option<String>,
}

/// Looks the node-agent DaemonSet up in the input ([`NodeAgentTolerations`]).
pub fn node_agent_tolerations(
    inventory: &Inventory,
    namespace: Option<&str>,
    os: NodeOs,
) -> NodeAgentTolerations {
    let name = node_agent_daemon_set_name(os);
    let found: Vec<_> = inventory
        .daemon_sets
        .iter()
        .filter(|(key, _)| key.name == name && namespace.is_none_or(|ns| key.namespace == ns))
        .collect();
    let keys = INHERITED_TOLERATION_KEYS.join(", ");
    match found.as_slice() {
        [(_, located)] => NodeAgentTolerations {
            tolerations: located
                .object
                .spec
                .as_ref()
                .and_then(|spec| spec.template.spec.as_ref())
                .and_then(|spec| spec.tolerations.clone())
                .unwrap_or_default(),
            note: None,
        },
        [] => {
            let (what, hint) = match namespace {
                Some(ns) => (format!("{ns}/{name}"), ns.to_owned()),
                None => (name.to_owned(), "velero".to_owned()),
            };
            NodeAgentTolerations {
                tolerations: Vec::new(),
                note: Some(format!(
                    "the input has no DaemonSet {what}, so the tolerations Velero (1.17 and later) copies from it onto data-mover pods (keys {keys}) are not known and are left out; add it (kubectl get daemonset -n {hint} {name} -o yaml)"
                )),
            }
        }
        several => NodeAgentTolerations {
            tolerations: Vec::new(),
            note: Some(format!(
                "the input has a DaemonSet {name} in several namespaces ({}), so which one Velero copies tolerations from (keys {keys}) is not known and they are left out; give only Velero's",
                several
                    .iter()
                    .map(|(key, _)| key.namespace.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        },
    }
}

/// Computes the fragment for one PVC.
pub fn fragment(
    config: &NodeAgentConfig,
    inventory: &Inventory,
    pvc_ref: &ObjectRef,
    direction: Direction,
    os: NodeOs,
) -> Result<PodFragment, CommandError> {
    let key = ObjectKey::namespaced(&pvc_ref.namespace, &pvc_ref.name);
    let pvc = &inventory
        .persistent_volume_claims
        .get(&key)
        .ok_or_else(|| {
            CommandError::Input(format!(
                "PersistentVolumeClaim {pvc_ref} is not in the input ({} PersistentVolumeClaims read)",
                inventory.persistent_volume_claims.len()
            ))
        })?
        .object;
    if let Some(error) = no_node_with_os(inventory, os) {
        return Err(CommandError::Input(format!(
            "cannot compute the data-mover pod for PersistentVolumeClaim {pvc_ref}: {error}"
        )));
    }
    fragment_for_pvc(config, inventory, pvc, direction, os).map_err(|error| {
        CommandError::Input(format!(
            "cannot compute the data-mover pod for PersistentVolumeClaim {pvc_ref}: {error}"
        ))
    })
}

/// Computes the fragment for a PVC object.
pub fn fragment_for_pvc(
    config: &NodeAgentConfig,
    inventory: &Inventory,
    pvc: &PersistentVolumeClaim,
    direction: Direction,
    os: NodeOs,
) -> Result<PodFragment, FragmentError> {
    let spec = pvc.spec.as_ref();
    let storage_class = spec
        .and_then(|s| s.storage_class_name.as_deref())
        .and_then(|name| inventory.storage_classes.get(&ObjectKey::cluster(name)))
        .map(|located| &located.object);
    match direction {
        Direction::Backup => {
            let pv = spec
                .and_then(|s| s.volume_name.as_deref())
                .and_then(|name| inventory.persistent_volumes.get(&ObjectKey::cluster(name)))
                .map(|located| &located.object);
            let attachments: Vec<VolumeAttachment> = inventory
                .volume_attachments
                .values()
                .map(|located| located.object.clone())
                .collect();
            backup_fragment_for(config, pvc, storage_class, pv, &attachments, os)
        }
        Direction::Restore => restore_fragment_for(config, pvc, storage_class, os),
    }
}

/// The contract's JSON for a fragment.
pub fn fragment_json(fragment: &PodFragment) -> Value {
    json!({
        "storageClass": fragment.storage_class,
        "selectedLoadAffinity": fragment.load_affinity_index,
        "affinity": fragment.affinity,
        "nodeSelector": fragment.node_selector,
        "tolerations": fragment.tolerations,
        "waitingForFirstConsumer": fragment.waiting_for_first_consumer,
    })
}

/// Maps the command-line OS.
pub fn node_os(arg: NodeOsArg) -> NodeOs {
    match arg {
        NodeOsArg::Linux => NodeOs::Linux,
        NodeOsArg::Windows => NodeOs::Windows,
    }
}

/// Runs the command.
pub fn run(
    config: &NodeAgentConfig,
    inventory: &Inventory,
    pvc_ref: &ObjectRef,
    direction: Direction,
    os: NodeOsArg,
) -> Result<Output, CommandError> {
    let os = node_os(os);
    // Live mode lists DaemonSets in Velero's namespace only; files may
    // hold them anywhere.
    let node_agent = node_agent_tolerations(inventory, None, os);
    let fragment = fragment(config, inventory, pvc_ref, direction, os)?
        .with_node_agent_tolerations(&node_agent.tolerations);
    let pod = match direction {
        Direction::Backup => "backup (DataUpload)",
        Direction::Restore => "restore (DataDownload)",
    };
    let mut rows = vec![
        ["data-mover pod".to_owned(), format!("{pod} for {pvc_ref}")],
        [
            "storage class for the loadAffinity lookup".to_owned(),
            fragment.storage_class.clone(),
        ],
        [
            "selected loadAffinity entry".to_owned(),
            fragment
                .load_affinity_index
                .map_or_else(|| "none".to_owned(), |i| format!("loadAffinity[{i}]")),
        ],
        [
            "waiting for first consumer".to_owned(),
            if fragment.waiting_for_first_consumer {
                "yes"
            } else {
                "no"
            }
            .to_owned(),
        ],
        [
            "node selector".to_owned(),
            or_dash(fragment.node_selector.as_ref().map(|selector| {
                selector
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })),
        ],
        [
            "tolerations".to_owned(),
            if fragment.tolerations.is_empty() {
                "-".to_owned()
            } else {
                fragment
                    .tolerations
                    .iter()
                    .map(render::toleration)
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ],
    ];
    let terms = render::required_terms(fragment.affinity.as_ref());
    if terms.is_empty() {
        rows.push(["required node affinity".to_owned(), "none".to_owned()]);
    }
    for (index, term) in terms.iter().enumerate() {
        let label = if index == 0 {
            "required node affinity (terms OR-ed)".to_owned()
        } else {
            String::new()
        };
        rows.push([label, format!("term {}: {term}", index + 1)]);
    }
    let mut notes: Vec<String> = node_agent.note.iter().cloned().collect();
    let cache = (direction == Direction::Restore)
        .then(|| {
            let key = ObjectKey::namespaced(&pvc_ref.namespace, &pvc_ref.name);
            inventory.persistent_volume_claims.get(&key)
        })
        .flatten()
        .map(|pvc| restore_cache::for_restore_into(config, inventory, &pvc.object));
    if let Some(cache) = &cache {
        rows.push(["cache volume".to_owned(), cache.row.clone()]);
        notes.extend(cache.notes.iter().cloned());
    }
    let mut document = fragment_json(&fragment);
    if let Some(cache) = cache {
        document["cacheVolume"] = cache.document;
    }
    let mut text = table(&["field", "value"], rows);
    if !notes.is_empty() {
        for note in &notes {
            text.push_str(&format!("\nNote: {note}.\n"));
        }
        document["notes"] = json!(notes);
    }
    Ok(Output {
        document,
        table: text,
    })
}
