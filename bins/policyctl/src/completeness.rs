//! Completeness: which kinds a command needed, how each was read, and which
//! answers depend on a kind that could not be read.
//!
//! Every command that reads objects declares its kinds ([`kinds::needs`]);
//! the same declaration serves live mode (what to list) and this module
//! (what to state). Each needed kind gets a [`Status`], stated in every
//! output: `-o json` under `inputs` (and `complete`, `incomplete`), `-o
//! table` in a closing `Inputs` block and, when something a verdict depends
//! on could not be read, an `INCOMPLETE` block before the answer.
//!
//! A kind is *missing* when it was forbidden (403) or failed to list: the
//! cluster may hold objects of it that the answer does not see. A kind the
//! server does not serve (404, its CustomResourceDefinition is not
//! installed) has no objects, and a kind a `-f` input lacks is taken as
//! none, as ever: both are stated, neither is missing. A missing kind makes
//! the run exit 3 ([`crate::Exit::Incomplete`]) unless `--allow-partial`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::cli::{Command, ConfigAction, GlobalArgs, SootheMode};
use crate::live::kinds::{
    self, CLUSTER_API, CONFIG, DATA_PATH, DEVICES, Kind, Needs, SCHEDULING, STORAGE, VOLUMES,
    WORKLOADS,
};
use crate::manifest::Inventory;
use crate::output::Output;
pub use crate::reading::{Reading, Status, Unread};

/// The number of objects of `kind` in the inventory.
pub fn count(inventory: &Inventory, kind: Kind) -> usize {
    let capi = |name: &str| {
        inventory
            .cluster_api
            .counts()
            .into_iter()
            .find(|(kind, _)| *kind == name)
            .map_or(0, |(_, count)| count)
    };
    match kind {
        Kind::ConfigMap => inventory.config_maps.len(),
        Kind::Node => inventory.nodes.len(),
        Kind::Namespace => inventory.namespaces.len(),
        Kind::Pod => inventory.pods.len(),
        Kind::Service => inventory.services.len(),
        Kind::ReplicationController => inventory.replication_controllers.len(),
        Kind::ReplicaSet => inventory.replica_sets.len(),
        Kind::StatefulSet => inventory.stateful_sets.len(),
        Kind::PersistentVolumeClaim => inventory.persistent_volume_claims.len(),
        Kind::PersistentVolume => inventory.persistent_volumes.len(),
        Kind::StorageClass => inventory.storage_classes.len(),
        Kind::VolumeAttachment => inventory.volume_attachments.len(),
        Kind::CSINode => inventory.csi_nodes.len(),
        Kind::DeviceClass => inventory.device_classes.len(),
        Kind::ResourceClaim => inventory.resource_claims.len(),
        Kind::ResourceClaimTemplate => inventory.resource_claim_templates.len(),
        Kind::ResourceSlice => inventory.resource_slices.len(),
        Kind::Backup => inventory.backups.len(),
        Kind::BackupRepository => inventory.backup_repositories.len(),
        Kind::PriorityClass => inventory.priority_classes.len(),
        Kind::PodVolumeBackup => inventory.pod_volume_backups.len(),
        Kind::PodVolumeRestore => inventory.pod_volume_restores.len(),
        Kind::DataUpload => inventory.data_uploads.len(),
        Kind::DataDownload => inventory.data_downloads.len(),
        Kind::Deployment => inventory.deployments.len(),
        Kind::DaemonSet => inventory.daemon_sets.len(),
        Kind::Machine => inventory.machines.len(),
        other => capi(other.resource().kind),
    }
}

/// The status of `kind` in the inventory.
pub fn status(inventory: &Inventory, kind: Kind) -> Status {
    if let Some(unread) = inventory.reading.unread(kind.reading_key()) {
        return unread.status.clone();
    }
    match count(inventory, kind) {
        0 if inventory.reading.live => Status::Empty,
        0 => Status::NotInInput,
        count => Status::Read(count),
    }
}

/// One answer of a command and the kinds it depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// Its key: the command (`queue`), or for `report` the key of its
    /// section in `-o json` (`queue`, `soothe`, ...).
    pub key: &'static str,
    /// How the table names it (`report`: the start of its section title).
    pub title: &'static str,
    /// The kinds it depends on.
    pub kinds: Vec<Kind>,
}

/// The sections of `report`, in order: their `-o json` key, the start of
/// their title, and the kinds each is computed from. `ConfigMap` stands
/// for the node-agent configuration (and the ledger of `--soothe-mode
/// exact`, and the HostInventory of the host sections).
const REPORT_SECTIONS: &[(&str, &str, &[&[Kind]])] = &[
    ("config", "Node-agent configuration", &[CONFIG]),
    (
        "concurrency",
        "Data-path concurrency",
        &[CONFIG, &[Kind::Node]],
    ),
    (
        "dataMovers",
        "Data-mover pods of pending loads",
        &[
            CONFIG,
            SCHEDULING,
            STORAGE,
            VOLUMES,
            &[Kind::DataUpload, Kind::DataDownload, Kind::DaemonSet],
        ],
    ),
    ("queue", "Backup queue", &[&[Kind::Backup, Kind::Namespace]]),
    (
        "soothe",
        "Load admission",
        &[CONFIG, DATA_PATH, &[Kind::Node, Kind::Pod]],
    ),
    (
        "hostLabels",
        "Host labels and host anti-affinity audit",
        &[CONFIG, SCHEDULING, &[Kind::Machine]],
    ),
    (
        "spareReplicas",
        "Spare replicas",
        &[
            SCHEDULING,
            WORKLOADS,
            STORAGE,
            VOLUMES,
            DEVICES,
            &[Kind::Deployment],
        ],
    ),
    (
        "devices",
        "Devices (Dynamic Resource Allocation)",
        &[DEVICES, &[Kind::Node]],
    ),
    (
        "clusterModules",
        "Cluster modules",
        &[CONFIG, CLUSTER_API, &[Kind::Node]],
    ),
    (
        "placement",
        "Placement",
        &[CONFIG, SCHEDULING, &[Kind::Machine]],
    ),
    (
        "scheduling",
        "Scheduling",
        &[SCHEDULING, WORKLOADS, VOLUMES, DEVICES],
    ),
    (
        "maintenance",
        "Repository-maintenance jobs",
        &[
            CONFIG,
            SCHEDULING,
            VOLUMES,
            &[
                Kind::BackupRepository,
                Kind::PriorityClass,
                Kind::Deployment,
            ],
        ],
    ),
    (
        "vnf",
        "Tacker VNF",
        &[&[Kind::Node, Kind::Pod, Kind::Deployment, Kind::StatefulSet]],
    ),
];

fn flatten(groups: &[&[Kind]]) -> Vec<Kind> {
    let mut kinds: Vec<Kind> = groups.iter().flat_map(|g| g.iter().copied()).collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The answers of `command` and the kinds each depends on; empty for the
/// commands that read no cluster objects. The node-agent ConfigMap is no
/// dependency when `--config FILE` gives the configuration (but the
/// ledger of an exact-mode simulation and a HostInventory ConfigMap still
/// are).
pub fn answers(command: &Command, global: &GlobalArgs) -> Vec<Answer> {
    let Needs::Kinds(needed) = kinds::needs(command) else {
        return Vec::new();
    };
    let config_file = global.config.is_some();
    let exact = match command {
        Command::Soothe(args) => args.mode == SootheMode::Exact,
        Command::Report(args) => args.soothe_mode == SootheMode::Exact,
        _ => false,
    };
    // `other_config_maps`: the answer reads a ConfigMap other than the
    // node-agent configuration (the ledger, a HostInventory).
    let keep = |kinds: Vec<Kind>, other_config_maps: bool| -> Vec<Kind> {
        kinds
            .into_iter()
            .filter(|kind| *kind != Kind::ConfigMap || !config_file || other_config_maps)
            .collect()
    };
    let reads_host_inventory = kinds::reads_host_inventory(command);
    if let Command::Report(args) = command {
        return REPORT_SECTIONS
            .iter()
            // The `vnf` section is there only with `--vnfd`.
            .filter(|&&(key, ..)| key != "vnf" || args.vnfd.is_some())
            .map(|&(key, title, groups)| Answer {
                key,
                title,
                kinds: keep(
                    flatten(groups),
                    (key == "soothe" && exact)
                        || matches!(
                            key,
                            "hostLabels" | "clusterModules" | "maintenance" | "placement"
                        ),
                ),
            })
            .collect();
    }
    // The repository-maintenance ConfigMap is read from the input even
    // with `--config FILE`.
    let maintenance = matches!(command, Command::Maintenance);
    vec![Answer {
        key: command_name(command),
        title: command_name(command),
        kinds: keep(needed, exact || reads_host_inventory || maintenance),
    }]
}

/// The command's name as typed.
fn command_name(command: &Command) -> &'static str {
    match command {
        Command::Config {
            action: ConfigAction::Check { .. },
        } => "config check",
        Command::Concurrency => "concurrency",
        Command::Affinity(_) => "affinity",
        Command::Queue(_) => "queue",
        Command::Soothe(_) => "soothe",
        Command::Schedule(_) => "schedule",
        Command::Capacity(_) => "capacity",
        Command::Hosts { .. } => "hosts",
        Command::HostLabels(_) => "host-labels",
        Command::Diagnose(_) => "diagnose",
        Command::Maintenance => "maintenance",
        Command::Modules(_) => "modules",
        Command::Report(_) => "report",
        Command::Rbac(_) => "rbac",
        Command::Vnf { .. } => "vnf",
    }
}

/// What a command needed and got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completeness {
    /// Every kind the command needs, with how it was read.
    pub inputs: BTreeMap<Kind, Status>,
    /// Each answer that depends on a missing kind, with those kinds.
    pub incomplete: Vec<(Answer, Vec<Kind>)>,
}

impl Completeness {
    /// The completeness of `command` over `inventory`; `None` for the
    /// commands that read no cluster objects.
    pub fn of(command: &Command, global: &GlobalArgs, inventory: &Inventory) -> Option<Self> {
        let answers = answers(command, global);
        if answers.is_empty() {
            return None;
        }
        let mut inputs = BTreeMap::new();
        for answer in &answers {
            for kind in &answer.kinds {
                inputs
                    .entry(*kind)
                    .or_insert_with(|| status(inventory, *kind));
            }
        }
        let incomplete = answers
            .into_iter()
            .filter_map(|answer| {
                let missing: Vec<Kind> = answer
                    .kinds
                    .iter()
                    .copied()
                    .filter(|kind| inputs.get(kind).is_some_and(Status::is_missing))
                    .collect();
                (!missing.is_empty()).then_some((answer, missing))
            })
            .collect();
        Some(Self { inputs, incomplete })
    }

    /// Whether every answer had all it depends on.
    pub fn is_complete(&self) -> bool {
        self.incomplete.is_empty()
    }

    /// The missing kinds, grouped by status, on one line (for error
    /// messages): `forbidden (403): Namespace, Pod; failed: Node`.
    pub fn missing_summary(&self) -> String {
        let mut groups: BTreeMap<&str, Vec<Kind>> = BTreeMap::new();
        for (kind, status) in &self.inputs {
            if status.is_missing() {
                let label = match status {
                    Status::Forbidden => "forbidden (403)",
                    _ => "failed",
                };
                groups.entry(label).or_default().push(*kind);
            }
        }
        groups
            .iter()
            .map(|(label, kinds)| format!("{label}: {}", names(kinds).join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The `-o json` fields: `inputs` (kind → status name), `complete`,
    /// and `incomplete` (answer → the missing kinds it depends on).
    pub fn document(&self) -> Map<String, Value> {
        let inputs: Map<String, Value> = self
            .inputs
            .iter()
            .map(|(kind, status)| (kind.resource().kind.to_owned(), json!(status.name())))
            .collect();
        let incomplete: Map<String, Value> = self
            .incomplete
            .iter()
            .map(|(answer, missing)| (answer.key.to_owned(), json!(names(missing))))
            .collect();
        let mut fields = Map::new();
        fields.insert("inputs".to_owned(), Value::Object(inputs));
        fields.insert("complete".to_owned(), json!(self.is_complete()));
        fields.insert("incomplete".to_owned(), Value::Object(incomplete));
        fields
    }

    /// The `INCOMPLETE` block that opens a table when an answer depends on
    /// a missing kind; empty otherwise.
    pub fn banner(&self, allow_partial: bool) -> String {
        if self.is_complete() {
            return String::new();
        }
        let mut text = String::from(
            "INCOMPLETE: these answers are built without kinds policyctl could not read.\n",
        );
        let mut groups: BTreeMap<String, Vec<Kind>> = BTreeMap::new();
        for (kind, status) in &self.inputs {
            if status.is_missing() {
                groups.entry(status.describe()).or_default().push(*kind);
            }
        }
        for (description, kinds) in groups {
            text.push_str(&wrap(
                &format!("{description}: {}", names(&kinds).join(", ")),
                "  ",
                "    ",
            ));
        }
        let report = self
            .incomplete
            .iter()
            .any(|(answer, _)| answer.key != answer.title);
        if report {
            let titles: Vec<&str> = self
                .incomplete
                .iter()
                .map(|(answer, _)| answer.title)
                .collect();
            text.push_str(&wrap(
                &format!("Sections that may be wrong: {}.", titles.join(", ")),
                "  ",
                "    ",
            ));
        }
        if self.inputs.values().any(|s| *s == Status::Forbidden) {
            text.push_str(
                "  policyctl rbac prints the read-only roles that let live mode list every kind.\n",
            );
        }
        if !allow_partial {
            text.push_str("  Exit status 3 (--allow-partial accepts a partial answer).\n");
        }
        text.push('\n');
        text
    }

    /// The closing `Inputs` block of a table: the kinds that were not read
    /// with objects, grouped by status; empty when every kind was.
    pub fn footer(&self) -> String {
        let mut groups: BTreeMap<(u8, String), Vec<&str>> = BTreeMap::new();
        for (kind, status) in &self.inputs {
            let order = match status {
                Status::Read(_) => continue,
                Status::Forbidden => 0,
                Status::Failed(_) => 1,
                Status::NotServed => 2,
                Status::Empty => 3,
                Status::NotInInput => 4,
            };
            groups
                .entry((order, status.describe()))
                .or_default()
                .push(kind.resource().kind);
        }
        for kinds in groups.values_mut() {
            kinds.sort_unstable();
        }
        if groups.is_empty() {
            return String::new();
        }
        let mut text = String::from("\nInputs not read with objects:\n");
        for ((_, description), kinds) in groups {
            text.push_str(&format!("  {description}:\n"));
            text.push_str(&wrap(&kinds.join(", "), "    ", "    "));
        }
        text
    }

    /// States the completeness in an output: the fields in the JSON
    /// document (when it is a mapping), the banner, the per-section notes
    /// of `report` and the closing block in the table.
    pub fn annotate(&self, output: &mut Output, allow_partial: bool) {
        if let Value::Object(document) = &mut output.document {
            document.extend(self.document());
        }
        let mut table = output.table.clone();
        for (answer, missing) in &self.incomplete {
            let mut kinds: Vec<String> = missing
                .iter()
                .map(|kind| {
                    let status = self.inputs.get(kind).map_or("missing", Status::name);
                    format!("{} ({status})", kind.resource().kind)
                })
                .collect();
            kinds.sort();
            let note = wrap(
                &format!(
                    "incomplete: {} could not be read; this section shows only what was read",
                    kinds.join(", ")
                ),
                "",
                "  ",
            );
            // `report`: under the section's title line.
            let heading = format!("== {}", answer.title);
            if let Some(start) = table.find(&heading) {
                let end = table[start..]
                    .find('\n')
                    .map_or(table.len(), |offset| start + offset + 1);
                table.insert_str(end, &note);
            }
        }
        output.table = format!("{}{table}{}", self.banner(allow_partial), self.footer());
    }
}

/// `text` wrapped at spaces to the width of tables, the first line
/// indented by `first`, the others by `rest`; ends with a newline.
fn wrap(text: &str, first: &str, rest: &str) -> String {
    let width = usize::from(crate::output::TABLE_WIDTH);
    let mut out = String::new();
    let mut line = String::from(first);
    let mut empty = true;
    for word in text.split(' ') {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = String::from(rest);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// The kinds' names, sorted.
fn names(kinds: &[Kind]) -> Vec<&'static str> {
    let mut names: Vec<&str> = kinds.iter().map(|kind| kind.resource().kind).collect();
    names.sort_unstable();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_forbidden_and_failed_kinds_are_missing() {
        assert!(Status::Forbidden.is_missing());
        assert!(Status::Failed("500".to_owned()).is_missing());
        for status in [
            Status::Read(1),
            Status::Empty,
            Status::NotInInput,
            Status::NotServed,
        ] {
            assert!(!status.is_missing(), "{status:?}");
        }
    }

    #[test]
    fn report_sections_depend_only_on_kinds_report_lists() {
        let Needs::Kinds(all) = kinds::needs(&Command::Report(crate::cli::ReportArgs {
            concurrent_backups: 1,
            soothe_mode: SootheMode::Optimistic,
            datamovers: Vec::new(),
            vnfd: None,
            vnf_flavour: None,
            base_hot: None,
            hypervisors: None,
            servers: None,
        })) else {
            panic!("report reads kinds");
        };
        for (key, _, groups) in REPORT_SECTIONS {
            for kind in flatten(groups) {
                assert!(all.contains(&kind), "{key}: {kind:?}");
            }
        }
    }
}
