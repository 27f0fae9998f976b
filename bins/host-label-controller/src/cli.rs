//! Command-line arguments (every flag also has an environment variable) and
//! their resolution into a [`Config`].

use std::time::Duration;

use anti_affinity_placement::labels::{
    DEFAULT_HOST_LABEL_KEY, HostLabelConfig, LabelKey, MachineLabelSync,
};
use controller_kit::ControllerArgs;

use crate::config::{
    CONTROLLER_NAME, Config, DEFAULT_NAMESPACE, DEFAULT_STATUS_CONFIGMAP, HostSource, ObjectName,
};
use crate::error::Error;

/// `host-label-controller [FLAGS]` runs the controller;
/// `host-label-controller manifests` prints its deployment manifests.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = CONTROLLER_NAME,
    version,
    about,
    args_conflicts_with_subcommands = true,
    mut_arg("namespace", |arg| arg.help(
        "Namespace of the status and inventory ConfigMaps not given as NAMESPACE/NAME (default: the pod's own, POD_NAMESPACE, else host-label-controller)"
    ))
)]
pub struct Cli {
    /// What to do (default: run the controller).
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Controller settings.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Print the ServiceAccount, RBAC and Deployment manifests as YAML.
    Manifests(ManifestArgs),
}

/// Flags of `manifests`.
#[derive(Debug, Clone, clap::Args)]
pub struct ManifestArgs {
    /// Namespace the controller runs in (its ConfigMaps live there too).
    #[arg(long, default_value = DEFAULT_NAMESPACE, value_name = "NAMESPACE")]
    pub namespace: String,
    /// Container image.
    #[arg(long, default_value = crate::manifests::DEFAULT_IMAGE, value_name = "IMAGE")]
    pub image: String,
    /// Run with `--all-clusters`, in the management cluster: grant watching
    /// Clusters and Machines and reading Secrets (the `<cluster>-kubeconfig`
    /// ones), and nothing on Nodes, Pods, ConfigMaps or Events (those are
    /// in the workload clusters).
    #[arg(long)]
    pub all_clusters: bool,
    /// Run with `--sync-machine-labels` (no further permission needed).
    #[arg(long)]
    pub sync_machine_labels: bool,
    /// Run with `--audit-cluster-modules`, and grant read access to the
    /// Cluster API and CAPV kinds it watches.
    #[arg(long)]
    pub audit_cluster_modules: bool,
}

/// Flags of the controller itself.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct RunArgs {
    /// Shared controller flags (kubeconfig, namespace = where the status and
    /// inventory ConfigMaps live unless given as NS/NAME, dry run, logging,
    /// metrics, leader election).
    #[command(flatten)]
    pub common: ControllerArgs,

    /// Node label key(s) carrying the physical host; repeat the flag (or
    /// separate with commas) for several, e.g. also
    /// `node-restriction.kubernetes.io/esxi-host`, which kubelets cannot set.
    #[arg(
        long = "label-key",
        env = "HOST_LABEL_KEYS",
        hide_env_values = true,
        value_delimiter = ',',
        default_value = DEFAULT_HOST_LABEL_KEY,
        value_name = "KEY"
    )]
    pub label_keys: Vec<String>,

    /// Node annotation recording which label keys this controller manages
    /// (default: `policyctl/managed-host-labels`).
    #[arg(
        long,
        env = "MANAGED_ANNOTATION",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub managed_annotation: Option<String>,

    /// Take host information from this ConfigMap (`NAMESPACE/NAME` or `NAME`)
    /// instead of from Cluster API Machines: a HostInventory whose VM names
    /// are Node names, or OpenStack's `openstack server list --long -f json`
    /// (a Node is the server holding one of its addresses, else the server
    /// of its name), refreshed by whoever keeps the ConfigMap current.
    #[arg(
        long,
        env = "INVENTORY_CONFIGMAP",
        hide_env_values = true,
        value_name = "NS/NAME"
    )]
    pub inventory_configmap: Option<String>,

    /// Data key of the HostInventory (YAML or JSON) in the inventory ConfigMap.
    #[arg(
        long,
        env = "INVENTORY_KEY",
        hide_env_values = true,
        default_value = "inventory.yaml",
        value_name = "KEY"
    )]
    pub inventory_key: String,

    /// Also copy every Machine label in Cluster API's managed domains
    /// (`node-role.kubernetes.io`, `node-restriction.kubernetes.io` and
    /// `node.cluster.x-k8s.io`, the latter two with subdomains) to the
    /// Machine's Node, bookkept in `cluster.x-k8s.io/labels-from-machine`,
    /// as Cluster API ≥ 1.4 does; a Node that shows Cluster API's own sync
    /// is left to it.
    #[arg(long, env = "SYNC_MACHINE_LABELS", hide_env_values = true)]
    pub sync_machine_labels: bool,

    /// A regular expression: Machine labels whose key matches it (anywhere)
    /// are synced too. Repeatable; needs `--sync-machine-labels`.
    #[arg(
        long = "additional-sync-machine-labels",
        env = "ADDITIONAL_SYNC_MACHINE_LABELS",
        hide_env_values = true,
        requires = "sync_machine_labels",
        value_name = "REGEX"
    )]
    pub additional_sync_machine_labels: Vec<String>,

    /// Audit CAPV's vSphere cluster modules: report members of one module
    /// that share an ESXi host (Events on the Machines, `modules.json` in
    /// the status ConfigMap, `module_host_violations`). Needs read access to
    /// the Cluster API and CAPV kinds (`manifests --audit-cluster-modules`).
    #[arg(long, env = "AUDIT_CLUSTER_MODULES", hide_env_values = true)]
    pub audit_cluster_modules: bool,

    /// Read Machines (and the other Cluster API kinds) through this
    /// kubeconfig — the management cluster — while Nodes are labelled
    /// through `--kubeconfig` (default: in-cluster), the workload cluster.
    /// Needs `--cluster`.
    #[arg(
        long,
        env = "MACHINES_KUBECONFIG",
        hide_env_values = true,
        requires = "cluster",
        value_name = "PATH"
    )]
    pub machines_kubeconfig: Option<std::path::PathBuf>,

    /// Context of `--machines-kubeconfig` (default: its current context).
    #[arg(
        long,
        env = "MACHINES_CONTEXT",
        hide_env_values = true,
        requires = "machines_kubeconfig",
        value_name = "NAME"
    )]
    pub machines_context: Option<String>,

    /// Run in the management cluster and label the Nodes of every Cluster
    /// API Cluster's workload cluster, reached through the Cluster's
    /// `<name>-kubeconfig` Secret as Cluster API does (read again every
    /// 10 s and on 401/403; new credentials reconnect); Clusters are
    /// tracked as they come and go; the status goes into the management
    /// cluster, one entry per Cluster. Needs `manifests --all-clusters`.
    #[arg(
        long,
        env = "ALL_CLUSTERS",
        hide_env_values = true,
        conflicts_with_all = ["machines_kubeconfig", "cluster", "audit_cluster_modules"]
    )]
    pub all_clusters: bool,

    /// Only the Machines of this Cluster API Cluster (`NAMESPACE/NAME`,
    /// label `cluster.x-k8s.io/cluster-name`): the Cluster whose workload
    /// cluster's Nodes this controller labels. Node names are matched only
    /// against this Cluster's Machines.
    #[arg(
        long,
        env = "CAPI_CLUSTER",
        hide_env_values = true,
        value_name = "NS/NAME"
    )]
    pub cluster: Option<String>,

    /// ConfigMap (`NAMESPACE/NAME` or `NAME`) receiving the audit summary.
    #[arg(
        long,
        env = "STATUS_CONFIGMAP",
        hide_env_values = true,
        default_value = DEFAULT_STATUS_CONFIGMAP,
        value_name = "NS/NAME"
    )]
    pub status_configmap: String,

    /// Safety-net full resync interval in seconds (changes are picked up
    /// from watches within seconds; this only bounds the damage of a missed event).
    #[arg(
        long,
        env = "RESYNC_SECONDS",
        hide_env_values = true,
        default_value_t = 600,
        value_name = "SECONDS"
    )]
    pub resync_seconds: u64,
}

impl Config {
    /// Resolves the arguments; `pod_namespace` (the `POD_NAMESPACE` value)
    /// and `identity` are passed in by `main`.
    pub fn from_args(
        args: &RunArgs,
        pod_namespace: Option<&str>,
        identity: &str,
    ) -> Result<Self, Error> {
        let namespace = args
            .common
            .namespace
            .as_deref()
            .or(pod_namespace)
            .unwrap_or(DEFAULT_NAMESPACE);
        let labels = label_config(&args.label_keys, args.managed_annotation.as_deref())?;
        let source = match &args.inventory_configmap {
            Some(cm) => HostSource::Inventory {
                configmap: ObjectName::parse("--inventory-configmap", cm, namespace)?,
                key: args.inventory_key.clone(),
            },
            None => HostSource::Machines,
        };
        let leader = if args.common.leader.leader_elect {
            Some(
                args.common
                    .leader
                    .resolve(CONTROLLER_NAME, pod_namespace, identity)?,
            )
        } else {
            None
        };
        let machine_sync = if args.sync_machine_labels {
            Some(
                MachineLabelSync::new(&args.additional_sync_machine_labels).map_err(|error| {
                    Error::InvalidArgument {
                        flag: "--additional-sync-machine-labels".into(),
                        value: args.additional_sync_machine_labels.join(" "),
                        problem: error.to_string(),
                    }
                })?,
            )
        } else {
            None
        };
        let cluster = match &args.cluster {
            Some(value) => match value.split_once('/') {
                Some((ns, name)) if kube_validation::is_namespace_name(ns) && !name.is_empty() => {
                    Some(ObjectName {
                        namespace: ns.to_owned(),
                        name: name.to_owned(),
                    })
                }
                _ => {
                    return Err(Error::InvalidArgument {
                        flag: "--cluster".into(),
                        value: value.clone(),
                        problem: "expected NAMESPACE/NAME of a Cluster API Cluster".into(),
                    });
                }
            },
            None => None,
        };
        if args.machines_kubeconfig.is_some() && args.audit_cluster_modules {
            return Err(Error::InvalidArgument {
                flag: "--audit-cluster-modules".into(),
                value: "true".into(),
                problem: "not supported with --machines-kubeconfig yet: its Events on Machines would be recorded in the workload cluster".into(),
            });
        }
        Ok(Self {
            cluster,
            labels,
            source,
            machine_sync,
            audit_cluster_modules: args.audit_cluster_modules,
            status_configmap: ObjectName::parse(
                "--status-configmap",
                &args.status_configmap,
                namespace,
            )?,
            dry_run: args.common.dry_run,
            leader,
            metrics_addr: Some(args.common.metrics_addr),
            resync: Duration::from_secs(args.resync_seconds.max(1)),
            debounce: Duration::from_millis(50),
            audit_debounce: Duration::from_secs(1),
            instance: Some(identity.to_owned()),
        })
    }
}

/// Builds the [`HostLabelConfig`] from `--label-key` values (first = primary)
/// and `--managed-annotation`.
pub fn label_config(keys: &[String], annotation: Option<&str>) -> Result<HostLabelConfig, Error> {
    let mut parsed = keys
        .iter()
        .map(|k| k.trim())
        .filter(|k| !k.is_empty())
        .map(|k| LabelKey::new("--label-key", k));
    let first = parsed.next().ok_or_else(|| Error::InvalidArgument {
        flag: "--label-key".into(),
        value: keys.join(","),
        problem: "at least one label key is required".into(),
    })??;
    let mut config = HostLabelConfig::new(first);
    for key in parsed {
        config = config.with_additional_key(key?);
    }
    if let Some(annotation) = annotation {
        config = config.with_managed_annotation(LabelKey::new("--managed-annotation", annotation)?);
    }
    Ok(config)
}
