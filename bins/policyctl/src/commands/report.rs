//! `report`: the whole picture in tables — configuration findings,
//! per-node concurrency, data-mover pod placement for pending loads, the
//! backup queue, load admission, host labels and the host anti-affinity audit,
//! repository-maintenance jobs, VM placement — after a summary of the input.

use std::io::Write;

use affinity_translate::{BackupVolume, NodeAgentConfig, NodeOs, backup_fragment, diagnose};
use k8s_openapi::api::core::v1::Node;
use serde_json::{Map, Value, json};

use crate::cli::{HostsAction, SootheMode};
use crate::commands::affinity::{
    Direction, fragment_for_pvc, no_node_with_os, node_agent_tolerations,
};
use crate::commands::config_source::ConfigInput;
use crate::commands::queue::ConcurrentBackups;
use crate::commands::soothe::DataMovers;
use crate::commands::{
    CommandError, capacity, concurrency, config_check, devices, host_labels, hosts, maintenance,
    modules, placement, queue, scheduling, soothe,
};
use crate::manifest::{Inventory, ObjectKey};
use crate::output::{Output, fitted_table, section};

/// The values `report` computes with (its flags), shown in its header.
#[derive(Clone, Debug)]
pub struct Options {
    /// `--concurrent-backups` for the backup queue section.
    pub concurrent_backups: ConcurrentBackups,
    /// `--soothe-mode` for the load admission section.
    pub soothe_mode: SootheMode,
    /// `--datamover` for the load admission section.
    pub data_movers: DataMovers,
    /// `--maintenance-config-map` for the repository-maintenance section.
    pub maintenance_config_map: Option<crate::cli::ConfigMapRef>,
    /// `--vnfd` and its files for the `vnf` section.
    pub vnf: Option<crate::cli::VnfPlanArgs>,
}

fn mode_name(mode: SootheMode) -> &'static str {
    match mode {
        SootheMode::Optimistic => "optimistic",
        SootheMode::Exact => "exact",
    }
}

/// Builds the report.
pub fn run(
    config: &ConfigInput,
    inventory: &Inventory,
    options: &Options,
    stderr: &mut dyn Write,
) -> Result<Output, CommandError> {
    let mut text = format!(
        "Report with {}, --soothe-mode {},\nload admission gating {}\n\n",
        options.concurrent_backups,
        mode_name(options.soothe_mode),
        options.data_movers.describe()
    );
    let mut document = Map::new();
    document.insert(
        "options".to_owned(),
        json!({
            "concurrentBackups": options.concurrent_backups.effective,
            "sootheMode": mode_name(options.soothe_mode),
            "dataMovers": options.data_movers.names(),
        }),
    );

    let counts = inventory.counts();
    text.push_str(&section(
        "Input objects",
        &fitted_table(
            &["kind", "count"],
            counts
                .iter()
                .map(|(kind, count)| [(*kind).to_owned(), count.to_string()]),
        ),
    ));
    document.insert(
        "objects".to_owned(),
        counts
            .iter()
            .map(|(kind, count)| ((*kind).to_owned(), json!(count)))
            .collect::<Map<_, _>>()
            .into(),
    );

    let checked = config_check::run(config, false)?;
    text.push_str(&section("Node-agent configuration", &checked.output.table));
    document.insert("config".to_owned(), checked.output.document);

    match &config.loaded {
        Ok(loaded) => {
            let numbers = concurrency::run(&loaded.config, inventory)?;
            text.push_str(&section("Data-path concurrency per node", &numbers.table));
            document.insert("concurrency".to_owned(), numbers.document);

            let (movers_table, movers) = data_movers(&loaded.config, inventory);
            text.push_str(&section(
                "Data-mover pods of pending loads (DataUpload, DataDownload)",
                &movers_table,
            ));
            document.insert("dataMovers".to_owned(), movers);
        }
        Err(_) => {
            text.push_str(&section(
                "Data-path concurrency and data-mover pods",
                "skipped: the node-agent configuration does not load (see above)\n",
            ));
        }
    }

    let outcome = queue::outcome(inventory, options.concurrent_backups);
    let rendered = queue::render(&outcome, options.concurrent_backups);
    text.push_str(&section(
        &format!("Backup queue ({})", options.concurrent_backups),
        &rendered.table,
    ));
    document.insert("queue".to_owned(), rendered.document);

    if let Ok(loaded) = &config.loaded {
        let admissions = soothe::admissions(
            &loaded.config,
            inventory,
            options.soothe_mode,
            &options.data_movers,
        )?;
        let rendered = soothe::render(&admissions, options.soothe_mode, &options.data_movers);
        text.push_str(&section("Load admission (prepare queue)", &rendered.table));
        document.insert("soothe".to_owned(), rendered.document);
    }

    let labels = host_labels::report(inventory, &[], stderr)?;
    text.push_str(&section(
        "Host labels and host anti-affinity audit",
        &host_labels::table_text(&labels),
    ));
    document.insert("hostLabels".to_owned(), host_labels::document(&labels));

    if let Some((body, section_document)) = capacity::report_section(inventory) {
        text.push_str(&section(
            "Spare replicas of Deployments with required host or zone anti-affinity",
            &body,
        ));
        document.insert("spareReplicas".to_owned(), section_document);
    }

    if let Some((body, section_document)) = devices::report_section(inventory) {
        text.push_str(&section(
            "Devices (Dynamic Resource Allocation): per node and per DeviceClass",
            &body,
        ));
        document.insert("devices".to_owned(), section_document);
    }

    if let Some((section_text, section_document)) = modules::report_section(inventory) {
        text.push_str(&section_text);
        document.insert("clusterModules".to_owned(), section_document);
    }

    if let Some((body, section_document)) =
        maintenance::report_section(options.maintenance_config_map.as_ref(), inventory, stderr)?
    {
        text.push_str(&section("Repository-maintenance jobs", &body));
        document.insert("maintenance".to_owned(), section_document);
    }

    document.insert("placement".to_owned(), placement::document(inventory));
    if let Some(section_document) = scheduling::document(inventory) {
        document.insert("scheduling".to_owned(), section_document);
    }

    if inventory.host_inventories.len() == 1 {
        let plan = hosts::run(inventory, &HostsAction::Plan)?;
        text.push_str(&section(
            "VM placement over physical hosts (HostInventory)",
            &plan.table,
        ));
        document.insert("hosts".to_owned(), plan.document);
    }

    if let Some(vnf) = &options.vnf {
        let plan = super::vnf::plan_with(vnf, Some(inventory))?;
        text.push_str(&section(
            "Tacker VNF: compute hosts, workers, Nodes and the CNF's pods",
            &plan.table,
        ));
        document.insert("vnf".to_owned(), plan.document);
    }

    text.truncate(text.trim_end().len());
    text.push('\n');
    Ok(Output {
        document: Value::Object(document),
        table: text,
    })
}

/// The fragment of a backup data-mover pod whose source PVC is not in the
/// input, from the DataUpload's own `spec.csiSnapshot.storageClass` (the
/// class Velero's data-upload controller selects the load-affinity entry
/// with): the StorageClass's binding mode if it is in the input; the source
/// PV's topology and attachments stay unknown.
fn backup_fragment_from_class(
    config: &NodeAgentConfig,
    inventory: &Inventory,
    class: &str,
) -> affinity_translate::PodFragment {
    let wait_for_first_consumer = inventory
        .storage_classes
        .get(&ObjectKey::cluster(class))
        .and_then(|located| located.object.volume_binding_mode.as_deref())
        == Some("WaitForFirstConsumer");
    backup_fragment(
        config,
        &BackupVolume {
            source_storage_class: class,
            wait_for_first_consumer,
            pv_node_affinity: None,
            attached_nodes: &[],
        },
        NodeOs::Linux,
    )
}

/// For every DataUpload and DataDownload that has no running data mover yet
/// (phase New or Accepted), the data-mover pod's placement: the storage
/// class and load-affinity entry used, and the nodes that could run it. A
/// DataUpload whose PVC is not in the input is placed by its own
/// `spec.csiSnapshot.storageClass`.
fn data_movers(config: &NodeAgentConfig, inventory: &Inventory) -> (String, Value) {
    let nodes: Vec<Node> = inventory.nodes.values().map(|l| l.object.clone()).collect();
    let (running, agents_checked) =
        crate::commands::diagnose::node_agent_nodes_or_all(inventory, None);
    let mut rows = Vec::new();
    let mut causes: Vec<[String; 2]> = Vec::new();
    let mut document = Map::new();
    let mut add = |kind: &str,
                   key: &ObjectKey,
                   phase: String,
                   pvc: Option<ObjectKey>,
                   own_class: Option<&str>,
                   data_mover: Option<&str>,
                   direction| {
        let name = format!("{kind}/{key}");
        if !velero_api::is_built_in_data_mover(data_mover) {
            // Velero's node-agent leaves the load to the data mover it
            // names; that mover's controller creates (and places) its pods.
            let mover = data_mover.unwrap_or_default();
            let note = format!(
                "not Velero's data mover: spec.datamover is {mover:?}, whose own controller creates and places its pods (not simulated)"
            );
            rows.push([
                name.clone(),
                phase.clone(),
                pvc.as_ref()
                    .map_or_else(|| "-".to_owned(), ToString::to_string),
                "-".to_owned(),
                "-".to_owned(),
                note.clone(),
            ]);
            document.insert(
                name,
                json!({
                    "phase": phase,
                    "pvc": pvc.as_ref().map(ToString::to_string),
                    "dataMover": mover,
                    "storageClass": null,
                    "selectedLoadAffinity": null,
                    "schedulableNodes": null,
                    "error": null,
                    "note": note,
                }),
            );
            return;
        }
        let pvc_in_input = pvc
            .as_ref()
            .and_then(|pvc_key| inventory.persistent_volume_claims.get(pvc_key));
        let own_class = own_class
            .filter(|class| !class.is_empty())
            .filter(|_| pvc_in_input.is_none());
        let outcome = match (no_node_with_os(inventory, NodeOs::Linux), own_class) {
            (Some(error), _) => Err(error),
            (None, Some(class)) => Ok(backup_fragment_from_class(config, inventory, class)),
            (None, None) => pvc
                .as_ref()
                .ok_or_else(|| "the load names no PVC".to_owned())
                .and_then(|pvc_key| {
                    pvc_in_input.ok_or_else(|| {
                        format!("PersistentVolumeClaim {pvc_key} is not in the input")
                    })
                })
                .and_then(|pvc| {
                    fragment_for_pvc(config, inventory, &pvc.object, direction, NodeOs::Linux)
                        .map_err(|e| e.to_string())
                }),
        };
        let pvc_text = pvc
            .as_ref()
            .map_or_else(|| "-".to_owned(), ToString::to_string);
        let pvc_cell = if own_class.is_some() {
            format!("{pvc_text} (not in the input)")
        } else {
            pvc_text.clone()
        };
        // The tolerations Velero copies from the node-agent DaemonSet
        // (A2.27); without it in the input, the OS ones only.
        let outcome = outcome.map(|fragment| {
            let node_agent = node_agent_tolerations(inventory, Some(&key.namespace), NodeOs::Linux);
            fragment.with_node_agent_tolerations(&node_agent.tolerations)
        });
        match outcome {
            Ok(fragment) => {
                let diagnosis = diagnose(&fragment, &nodes, &running);
                let schedulable: Vec<String> = diagnosis
                    .schedulable()
                    .into_iter()
                    .map(str::to_owned)
                    .collect();
                let nodes_cell = if schedulable.is_empty() {
                    causes.push([name.clone(), no_node_cause(&diagnosis)]);
                    "NONE (why: below)".to_owned()
                } else if agents_checked {
                    schedulable.join(", ")
                } else {
                    format!(
                        "{} (if a node-agent runs there: the input has no node-agent pods)",
                        schedulable.join(", ")
                    )
                };
                rows.push([
                    name.clone(),
                    phase.clone(),
                    pvc_cell.clone(),
                    fragment.storage_class.clone(),
                    fragment
                        .load_affinity_index
                        .map_or_else(|| "none".to_owned(), |i| format!("loadAffinity[{i}]")),
                    nodes_cell,
                ]);
                let mut entry = json!({
                    "phase": phase,
                    "pvc": pvc_text,
                    "storageClass": fragment.storage_class,
                    "selectedLoadAffinity": fragment.load_affinity_index,
                    "schedulableNodes": schedulable,
                    "error": null,
                });
                if schedulable.is_empty() {
                    entry["cause"] = json!(no_node_cause(&diagnosis));
                }
                if !agents_checked {
                    entry["nodeAgents"] = json!("not in input");
                }
                if own_class.is_some() {
                    entry["storageClassFrom"] = json!("spec.csiSnapshot.storageClass");
                }
                document.insert(name, entry);
            }
            Err(error) => {
                rows.push([
                    name.clone(),
                    phase.clone(),
                    pvc_cell.clone(),
                    "-".to_owned(),
                    "-".to_owned(),
                    format!("error: {error}"),
                ]);
                document.insert(
                    name,
                    json!({
                        "phase": phase,
                        "pvc": pvc_text,
                        "storageClass": null,
                        "selectedLoadAffinity": null,
                        "schedulableNodes": [],
                        "error": error,
                    }),
                );
            }
        }
    };
    for (key, located) in &inventory.data_uploads {
        let phase = located.object.phase();
        if !(phase.is_new() || phase == velero_api::LoadPhase::Accepted) {
            continue;
        }
        let spec = &located.object.spec;
        let pvc = spec
            .source_namespace
            .clone()
            .zip(spec.source_pvc.clone().filter(|name| !name.is_empty()))
            .map(|(namespace, name)| ObjectKey::namespaced(namespace, name));
        let own_class = spec
            .csi_snapshot
            .as_ref()
            .and_then(|csi| csi.storage_class.as_deref());
        add(
            "DataUpload",
            key,
            phase.to_string(),
            pvc,
            own_class,
            spec.data_mover.as_deref(),
            Direction::Backup,
        );
    }
    for (key, located) in &inventory.data_downloads {
        let phase = located.object.phase();
        if !(phase.is_new() || phase == velero_api::LoadPhase::Accepted) {
            continue;
        }
        let pvc = located
            .object
            .spec
            .target_volume
            .as_ref()
            .and_then(|t| {
                t.namespace
                    .clone()
                    .zip(t.pvc.clone().filter(|name| !name.is_empty()))
            })
            .map(|(namespace, name)| ObjectKey::namespaced(namespace, name));
        add(
            "DataDownload",
            key,
            phase.to_string(),
            pvc,
            None,
            located.object.spec.data_mover.as_deref(),
            Direction::Restore,
        );
    }
    let mut note = String::new();
    if !causes.is_empty() {
        note.push('\n');
        note.push_str(&fitted_table(&["load", "why no node can run it"], causes));
    }
    if !agents_checked && !rows.is_empty() {
        note.push_str(&format!(
            "\nNote: {}.\n",
            crate::commands::diagnose::NO_NODE_AGENT_PODS
        ));
    }
    if !agents_checked && !rows.is_empty() {
        document.insert(
            "notes".to_owned(),
            json!([crate::commands::diagnose::NO_NODE_AGENT_PODS]),
        );
    }
    let text = if rows.is_empty() {
        "No DataUpload or DataDownload is waiting for a data-mover pod.\n".to_owned()
    } else {
        fitted_table(
            &[
                "load",
                "phase",
                "pvc",
                "storage class",
                "entry",
                "nodes that can run it",
            ],
            rows,
        ) + &note
    };
    (text, Value::Object(document))
}

/// Why no node can run a data-mover pod, in one phrase: the nodes that
/// fail only for a missing node-agent, or the first reason on the first
/// node.
fn no_node_cause(diagnosis: &affinity_translate::Diagnosis) -> String {
    let only_agent: Vec<&str> = diagnosis
        .nodes
        .iter()
        .filter(|n| {
            n.problems.len() == 1
                && n.problems[0] == affinity_translate::Problem::NodeAgentNotRunning
        })
        .map(|n| n.node.as_str())
        .collect();
    if !only_agent.is_empty() {
        return format!(
            "no node-agent pod is Running and Ready on {}, the node(s) that match otherwise",
            only_agent.join(", ")
        );
    }
    // The first reason other than a missing node-agent, on the first node.
    let first = diagnosis.nodes.iter().find_map(|n| {
        n.problems
            .iter()
            .find(|p| **p != affinity_translate::Problem::NodeAgentNotRunning)
            .map(|p| (n.node.as_str(), p))
    });
    match first {
        Some((node, problem)) => {
            format!("no node in the input matches its placement rules ({node}: {problem})")
        }
        None => "the input has no Node".to_owned(),
    }
}
