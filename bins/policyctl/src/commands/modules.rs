//! `modules [--cluster NAMESPACE/NAME]`: CAPV's vSphere cluster modules of
//! one cluster — the version gate, which modules CAPV creates, deletes and
//! keeps, each Machine's group and module, which members share an ESXi host
//! and the vMotions that would spread them (anti-affinity-placement's
//! `cluster_modules`, rules A.1–A.5, A.15, A.16).
//!
//! Reads Cluster, VSphereCluster, KubeadmControlPlane, MachineDeployment,
//! MachineSet, Machine, VSphereVM and VSphereMachineTemplate objects
//! (`v1beta1` or `v1beta2`) and, when the input has exactly one, a
//! HostInventory for host capacities and maintenance flags.

use anti_affinity_placement::cluster_modules::{
    ClusterModulesReport, DeleteReason, Membership, ReconcileStatus,
};
use capi_api::VSphereCluster;
use kube_adapters::capi::ClusterApiObjects;
use kube_adapters::meta::namespace_or_default;
use serde_json::{Value, json};

use crate::cli::ObjectRef;
use crate::commands::CommandError;
use crate::manifest::Inventory;
use crate::output::{Output, fitted_table, or_dash, section};

/// One VSphereCluster's report, with the names it is known by.
pub struct ClusterView {
    /// `namespace/name` of the VSphereCluster.
    pub vsphere_cluster: String,
    /// The Cluster API cluster's name, when known.
    pub cluster: Option<String>,
    /// The report.
    pub report: ClusterModulesReport,
}

fn id(cluster: &VSphereCluster) -> (String, String) {
    (
        namespace_or_default(cluster.metadata.namespace.as_deref()).to_owned(),
        cluster.metadata.name.clone().unwrap_or_default(),
    )
}

/// The reports of every VSphereCluster of the input (sorted by
/// `namespace/name`), or of the one `--cluster` names.
pub fn views(
    inventory: &Inventory,
    cluster: Option<&ObjectRef>,
) -> Result<Vec<ClusterView>, CommandError> {
    let objects: ClusterApiObjects<'_> = inventory.cluster_api.view(&inventory.machines);
    let host_inventory = match inventory.host_inventories.len() {
        1 => inventory
            .host_inventories
            .values()
            .next()
            .map(|l| l.object.clone()),
        _ => None,
    };
    let mut views: Vec<ClusterView> = objects
        .vsphere_clusters
        .iter()
        .filter(|vc| {
            cluster.is_none_or(|wanted| {
                let (namespace, name) = id(vc);
                namespace == wanted.namespace
                    && (objects.cluster_name_of(vc).as_deref() == Some(wanted.name.as_str())
                        || name == wanted.name)
            })
        })
        .map(|vc| {
            let (namespace, name) = id(vc);
            ClusterView {
                vsphere_cluster: format!("{namespace}/{name}"),
                cluster: objects.cluster_name_of(vc),
                report: objects
                    .cluster_modules_input(vc, host_inventory.clone())
                    .report(),
            }
        })
        .collect();
    views.sort_by(|a, b| a.vsphere_cluster.cmp(&b.vsphere_cluster));
    if views.is_empty() {
        return Err(CommandError::Input(match cluster {
            None => "no VSphereCluster (infrastructure.cluster.x-k8s.io) in the input; give the management cluster's Cluster API objects with -f (see examples/management-cluster/)".to_owned(),
            Some(wanted) => format!(
                "--cluster {wanted}: no VSphereCluster in namespace {} for a Cluster (or VSphereCluster) named {}; the input has: {}",
                wanted.namespace,
                wanted.name,
                list(&objects)
            ),
        }));
    }
    Ok(views)
}

fn list(objects: &ClusterApiObjects<'_>) -> String {
    let mut names: Vec<String> = objects
        .vsphere_clusters
        .iter()
        .map(|vc| {
            let (namespace, name) = id(vc);
            match objects.cluster_name_of(vc) {
                Some(cluster) => format!("{namespace}/{cluster}"),
                None => format!("{namespace}/{name} (VSphereCluster without a Cluster)"),
            }
        })
        .collect();
    names.sort();
    if names.is_empty() {
        "no VSphereCluster".to_owned()
    } else {
        names.join(", ")
    }
}

/// `modules`: exactly one cluster.
pub fn run(inventory: &Inventory, cluster: Option<&ObjectRef>) -> Result<Output, CommandError> {
    let mut views = views(inventory, cluster)?;
    if views.len() > 1 {
        let objects = inventory.cluster_api.view(&inventory.machines);
        return Err(CommandError::Input(format!(
            "the input has {} clusters with a VSphereCluster ({}); choose one with --cluster NAMESPACE/NAME",
            views.len(),
            list(&objects)
        )));
    }
    let Some(view) = views.pop() else {
        return Err(CommandError::Input(
            "no VSphereCluster in the input".to_owned(),
        ));
    };
    Ok(Output {
        document: document(&view.report)?,
        table: table_text(&view),
    })
}

/// The JSON document of a report.
pub fn document(report: &ClusterModulesReport) -> Result<Value, CommandError> {
    serde_json::to_value(report).map_err(|error| CommandError::Input(error.to_string()))
}

fn gate(view: &ClusterView) -> String {
    let report = &view.report;
    let version = if report.vcenter_version.is_empty() {
        "no vCenter version recorded".to_owned()
    } else {
        format!("vCenter {}", report.vcenter_version)
    };
    let cluster = view
        .cluster
        .as_deref()
        .map_or_else(String::new, |c| format!("cluster {c}, "));
    let verdict = match &report.modules.status {
        _ if report.disabled => "cluster modules disabled (spec.disableClusterModule)".to_owned(),
        ReconcileStatus::VersionUnsupported => {
            "cluster modules not supported (vCenter >= 7 and a MAJOR.MINOR.PATCH version required): nothing changes".to_owned()
        }
        ReconcileStatus::Failed(error) => format!("reconciliation fails: {error}"),
        _ => "cluster modules supported".to_owned(),
    };
    format!(
        "VSphereCluster {} ({cluster}{version}): {verdict}\n",
        view.vsphere_cluster
    )
}

/// The people's view of one cluster's report.
pub fn table_text(view: &ClusterView) -> String {
    let report = &view.report;
    let mut text = gate(view);
    text.push('\n');

    let plan = &report.modules;
    let mut rows: Vec<[String; 4]> = Vec::new();
    for entry in &plan.keep {
        let failure = plan
            .check_failures
            .iter()
            .find(|(failed, _)| failed == entry)
            .map(|(_, message)| format!(" (check failed: {message})"))
            .unwrap_or_default();
        rows.push([
            "keep".into(),
            entry.kind().to_string(),
            entry.target_object_name.clone(),
            format!("{}{failure}", entry.module_uuid),
        ]);
    }
    for create in &plan.create {
        let kind = if create.control_plane {
            "KubeadmControlPlane"
        } else {
            "MachineDeployment"
        };
        rows.push([
            "create".into(),
            kind.into(),
            create.target_object_name.clone(),
            create.replaces.as_ref().map_or_else(
                || "(new module)".to_owned(),
                |old| format!("(new module; {old} is gone from vCenter)"),
            ),
        ]);
    }
    for delete in &plan.delete {
        let why = match delete.reason {
            DeleteReason::OwnerGone => "owner gone",
            DeleteReason::OwnerDeleting => "owner being deleted",
            DeleteReason::Duplicate => "second entry for one owner",
        };
        rows.push([
            "delete".into(),
            "-".into(),
            delete.target_object_name.clone(),
            format!("{} ({why})", delete.module_uuid),
        ]);
    }
    for skipped in &plan.skipped {
        rows.push([
            "skip".into(),
            skipped.kind.to_string(),
            skipped.name.clone(),
            format!("(no module: {})", skipped.reason),
        ]);
    }
    text.push_str("Cluster modules (VSphereCluster spec.clusterModules):\n\n");
    if rows.is_empty() {
        text.push_str("No module recorded and none to create.\n");
    } else {
        text.push_str(&fitted_table(&["action", "kind", "owner", "module"], rows));
    }

    text.push_str("\nMembership (the module each Machine's VM joins):\n\n");
    if report.membership.is_empty() {
        text.push_str("No Machine of this cluster in the input.\n");
    } else {
        text.push_str(&fitted_table(
            &["machine", "group", "module", "note"],
            report.membership.iter().map(|(machine, membership)| {
                let group = membership.group().map_or_else(
                    || format!("{} ?", membership.kind()),
                    |g| format!("{} {g}", membership.kind()),
                );
                let note = match membership {
                    Membership::Member {
                        module_uuid: None, ..
                    } if report.disabled => "cluster modules disabled".to_owned(),
                    Membership::Member {
                        module_uuid: None,
                        group,
                        kind,
                    } if report.modules.create.iter().any(|c| {
                        c.target_object_name == *group && c.control_plane == kind.is_control_plane()
                    }) =>
                    {
                        "no module recorded yet (CAPV creates it, see above)".to_owned()
                    }
                    Membership::Member {
                        module_uuid: None, ..
                    } => "no module recorded for the group".to_owned(),
                    Membership::Member { .. } => String::new(),
                    Membership::OwnerNotFound { missing, .. } => format!(
                        "{} {} not found: no module (CAPV takes it for deleted)",
                        missing.kind, missing.name
                    ),
                    Membership::Failed { error, .. } => format!("error: {error}"),
                    Membership::NotLookedUp { would_fail, .. } => format!(
                        "cluster modules disabled, so CAPV does not look the group up (it would fail: {would_fail})"
                    ),
                };
                [
                    machine.clone(),
                    group,
                    or_dash(membership.module_uuid()),
                    note,
                ]
            }),
        ));
    }

    text.push_str("\nHost audit (members per ESXi host):\n\n");
    let mut rows: Vec<[String; 4]> = Vec::new();
    for (group, audit) in &report.audit {
        let verdict = match (audit.violations, audit.forced) {
            (0, _) => "spread".to_owned(),
            (n, true) => format!("{n} violation(s), forced (more members than hosts)"),
            (n, false) => format!("{n} violation(s), {} fixable", audit.fixable()),
        };
        if audit.hosts.is_empty() && audit.without_host.is_empty() {
            rows.push([group.clone(), "-".into(), "-".into(), verdict]);
            continue;
        }
        for (i, (host, machines)) in audit.hosts.iter().enumerate() {
            rows.push([
                if i == 0 { group.clone() } else { String::new() },
                host.clone(),
                machines.join(", "),
                if i == 0 {
                    verdict.clone()
                } else {
                    String::new()
                },
            ]);
        }
        if !audit.without_host.is_empty() {
            rows.push([
                if audit.hosts.is_empty() {
                    group.clone()
                } else {
                    String::new()
                },
                "(host unknown)".into(),
                audit.without_host.join(", "),
                if audit.hosts.is_empty() {
                    verdict
                } else {
                    String::new()
                },
            ]);
        }
    }
    if rows.is_empty() {
        text.push_str("No group.\n");
    } else {
        text.push_str(&fitted_table(
            &["group", "host", "machines", "verdict"],
            rows,
        ));
    }

    text.push_str("\nPlanned vMotions (fixable violations only):\n\n");
    if report.moves.is_empty() {
        text.push_str("None.\n");
    } else {
        text.push_str(&fitted_table(
            &["vm", "from", "to"],
            report
                .moves
                .iter()
                .map(|m| [m.vm.clone(), m.from.clone(), m.to.clone()]),
        ));
    }
    for (group, missing) in &report.move_plan.incomplete {
        text.push_str(&format!(
            "note: {group}: {missing} more move(s) needed, but no eligible host has room (capacities of the HostInventory)\n"
        ));
    }
    if let Some(error) = &report.move_plan.error {
        text.push_str(&format!("note: no vMotion plan: {error}\n"));
    }
    text
}

/// The report section: every VSphereCluster of the input. With
/// KubeadmControlPlanes or MachineDeployments (the groups modules are made
/// for) but no VSphereCluster, one line says why there is nothing to audit;
/// without them (Machines alone only map Nodes to hosts), no section.
pub fn report_section(inventory: &Inventory) -> Option<(String, Value)> {
    if inventory.cluster_api.vsphere_clusters.is_empty() {
        let capi = &inventory.cluster_api;
        let groups = capi.kubeadm_control_planes.len() + capi.machine_deployments.len();
        if groups == 0 {
            return None;
        }
        let note = format!(
            "{} Machine(s) and {groups} KubeadmControlPlane/MachineDeployment group(s), but no VSphereCluster (infrastructure.cluster.x-k8s.io): cluster modules belong to a VSphereCluster, so there are none to reconcile or audit; add the management cluster's VSphereClusters to the input",
            inventory.machines.len()
        );
        return Some((
            section(
                "Cluster modules (CAPV) and their host audit",
                &format!("note: {note}\n"),
            ),
            json!({ "note": note }),
        ));
    }
    let views = views(inventory, None).ok()?;
    let mut text = String::new();
    let mut document = serde_json::Map::new();
    for view in &views {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&table_text(view));
        if let Ok(value) = self::document(&view.report) {
            document.insert(view.vsphere_cluster.clone(), value);
        }
    }
    Some((
        section("Cluster modules (CAPV) and their host audit", &text),
        Value::Object(document),
    ))
}
