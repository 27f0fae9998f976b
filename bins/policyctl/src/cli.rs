//! Command-line shape (a stable interface): global input and output
//! options plus one subcommand per policy.

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::byte_size::ByteSize;
use crate::output::OutputFormat;

/// Every placement and admission policy, offline, over `kubectl get -o yaml`
/// output.
#[derive(Debug, Parser)]
#[command(name = "policyctl", version, about, long_about = None)]
pub struct Cli {
    /// Input and output options shared by every command.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to compute.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The command line as users see it: [`Cli`]'s definition, named
    /// `kubectl policy` when the program file is the kubectl plugin's
    /// (`argv0`), with the global options a command does not read left out
    /// of its help (`UNREAD_OPTIONS`; they are still accepted, as
    /// kubectl accepts its global flags everywhere).
    pub fn command_line(argv0: Option<&std::ffi::OsStr>) -> clap::Command {
        let mut command = Self::command();
        if crate::plugin::is_kubectl_plugin(argv0) {
            command = command
                .bin_name(KUBECTL_PLUGIN_USAGE_NAME)
                .display_name(KUBECTL_PLUGIN_USAGE_NAME);
        }
        command.build();
        for (path, unread) in UNREAD_OPTIONS {
            hide_options(&mut command, path, unread);
        }
        command
    }

    /// Parses the program's arguments with [`Cli::command_line`], exiting
    /// as clap does on `--help`, `--version` and usage errors.
    pub fn from_program_args() -> Self {
        let argv0 = std::env::args_os().next();
        let matches = Self::command_line(argv0.as_deref()).get_matches();
        Self::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
    }
}

/// How the usage lines name the program run as the kubectl plugin.
pub const KUBECTL_PLUGIN_USAGE_NAME: &str = "kubectl policy";

/// The input options: `-f` and the node-agent configuration.
const INPUT_OPTIONS: &[&str] = &[
    "filenames",
    "recursive",
    "max_input_bytes",
    "config",
    "config_map",
    "velero_version",
    "inventory_config_map",
    "inventory_key",
    "maintenance_config_map",
];

/// The input options `rbac` does not read: it reads only where the named
/// ConfigMaps live.
const RBAC_UNREAD_INPUT_OPTIONS: &[&str] = &[
    "filenames",
    "recursive",
    "max_input_bytes",
    "config",
    "velero_version",
    "inventory_key",
    "maintenance_config_map",
];

/// The options of the node-agent configuration.
const CONFIG_OPTIONS: &[&str] = &["config", "config_map", "velero_version"];

/// The option of the repository-maintenance job configuration.
const MAINTENANCE_OPTIONS: &[&str] = &["maintenance_config_map"];

/// The option choosing the kube-scheduler release the simulator follows.
const SCHEDULER_OPTIONS: &[&str] = &["kubernetes_version"];

/// The options naming a HostInventory ConfigMap.
const INVENTORY_OPTIONS: &[&str] = &["inventory_config_map", "inventory_key"];

/// The options of live mode.
const LIVE_OPTIONS: &[&str] = &[
    "kubeconfig",
    "context",
    "live",
    "namespace",
    "chunk_size",
    "request_timeout",
];

/// Global options (argument ids) that commands do not read, by command
/// path: `queue`, `schedule`, `capacity`, `host-labels`, `modules`, `hosts`
/// and `maintenance` read no node-agent configuration, only `config
/// check`, `maintenance` and `report` read the repository-maintenance
/// configuration, `host-labels sanitize` reads no objects, `rbac` only
/// where the named ConfigMaps live, and only `hosts`, `host-labels`,
/// `modules` and `report` read a HostInventory, and only `schedule`,
/// `diagnose`, `capacity`, `maintenance` and `report` simulate
/// kube-scheduler.
pub const UNREAD_OPTIONS: &[(&[&str], &[&str])] = &[
    (&["config", "check"], SCHEDULER_OPTIONS),
    (&["concurrency"], SCHEDULER_OPTIONS),
    (&["affinity"], SCHEDULER_OPTIONS),
    (&["queue"], SCHEDULER_OPTIONS),
    (&["soothe"], SCHEDULER_OPTIONS),
    (&["host-labels"], SCHEDULER_OPTIONS),
    (&["host-labels", "sanitize"], SCHEDULER_OPTIONS),
    (&["modules"], SCHEDULER_OPTIONS),
    (&["hosts"], SCHEDULER_OPTIONS),
    (&["hosts", "plan"], SCHEDULER_OPTIONS),
    (&["hosts", "rebalance"], SCHEDULER_OPTIONS),
    (&["hosts", "scale-down"], SCHEDULER_OPTIONS),
    (&["rbac"], SCHEDULER_OPTIONS),
    (&["config", "check"], INVENTORY_OPTIONS),
    (&["concurrency"], INVENTORY_OPTIONS),
    (&["concurrency"], MAINTENANCE_OPTIONS),
    (&["affinity"], INVENTORY_OPTIONS),
    (&["affinity"], MAINTENANCE_OPTIONS),
    (&["queue"], INVENTORY_OPTIONS),
    (&["queue"], CONFIG_OPTIONS),
    (&["queue"], MAINTENANCE_OPTIONS),
    (&["soothe"], INVENTORY_OPTIONS),
    (&["soothe"], MAINTENANCE_OPTIONS),
    (&["schedule"], INVENTORY_OPTIONS),
    (&["schedule"], CONFIG_OPTIONS),
    (&["schedule"], MAINTENANCE_OPTIONS),
    (&["capacity"], INVENTORY_OPTIONS),
    (&["capacity"], CONFIG_OPTIONS),
    (&["capacity"], MAINTENANCE_OPTIONS),
    (&["diagnose"], INVENTORY_OPTIONS),
    (&["diagnose"], MAINTENANCE_OPTIONS),
    (&["host-labels"], CONFIG_OPTIONS),
    (&["host-labels"], MAINTENANCE_OPTIONS),
    (&["modules"], CONFIG_OPTIONS),
    (&["modules"], MAINTENANCE_OPTIONS),
    (&["host-labels", "sanitize"], INPUT_OPTIONS),
    (&["host-labels", "sanitize"], LIVE_OPTIONS),
    (&["host-labels", "sanitize"], &["allow_partial"]),
    (&["rbac"], RBAC_UNREAD_INPUT_OPTIONS),
    (
        &["rbac"],
        &[
            "kubeconfig",
            "context",
            "live",
            "chunk_size",
            "request_timeout",
            "allow_partial",
        ],
    ),
    (&["hosts"], CONFIG_OPTIONS),
    (&["hosts"], MAINTENANCE_OPTIONS),
    (&["hosts", "plan"], CONFIG_OPTIONS),
    (&["hosts", "plan"], MAINTENANCE_OPTIONS),
    (&["hosts", "rebalance"], CONFIG_OPTIONS),
    (&["hosts", "rebalance"], MAINTENANCE_OPTIONS),
    (&["hosts", "scale-down"], CONFIG_OPTIONS),
    (&["hosts", "scale-down"], MAINTENANCE_OPTIONS),
    (&["maintenance"], CONFIG_OPTIONS),
    (&["maintenance"], INVENTORY_OPTIONS),
    (&["vnf"], VNF_UNREAD_OPTIONS),
    (&["vnf"], INPUT_OPTIONS),
    (&["vnf", "translate"], VNF_UNREAD_OPTIONS),
    (&["vnf", "translate"], INPUT_OPTIONS),
    (&["vnf", "plan"], VNF_UNREAD_OPTIONS),
    (&["vnf", "plan"], VNF_PLAN_UNREAD_INPUT_OPTIONS),
];

/// The options no `vnf` command reads: live mode and partial answers.
const VNF_UNREAD_OPTIONS: &[&str] = &[
    "kubeconfig",
    "context",
    "live",
    "namespace",
    "chunk_size",
    "request_timeout",
    "allow_partial",
];

/// The input options `vnf plan` does not read: it reads Nodes from `-f`.
const VNF_PLAN_UNREAD_INPUT_OPTIONS: &[&str] = &[
    "config",
    "config_map",
    "velero_version",
    "inventory_config_map",
    "inventory_key",
    "maintenance_config_map",
];

/// Hides the options `ids` of the subcommand of `command` at `path` from
/// help. `command` must be built, so that global options have reached its
/// subcommands; arguments and subcommands keep their places (the parser's
/// index of flags refers to them by position).
fn hide_options(command: &mut clap::Command, path: &[&str], ids: &[&str]) {
    match path.split_first() {
        None => {
            let mut arguments = std::mem::take(command);
            arguments = arguments.mut_args(|arg| {
                if ids.contains(&arg.get_id().as_str()) {
                    arg.hide(true)
                } else {
                    arg
                }
            });
            *command = arguments;
        }
        Some((name, rest)) => {
            if let Some(sub) = command.find_subcommand_mut(name) {
                hide_options(sub, rest, ids);
            }
        }
    }
}

/// Options shared by every command.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Manifest file to read (YAML with one or many documents, JSON, or a
    /// `kind: List`); `-` reads standard input; a directory is read as its
    /// `.yaml`, `.yml` and `.json` files in name order. Repeatable. Without
    /// any, the example cluster bundled in the binary is used.
    #[arg(
        short = 'f',
        long = "filename",
        global = true,
        env = "POLICYCTL_FILENAME",
        value_delimiter = ',',
        value_name = "FILE"
    )]
    pub filenames: Vec<String>,

    /// Also read the subdirectories of `-f` directories, as `kubectl -R`.
    #[arg(
        short = 'R',
        long = "recursive",
        global = true,
        env = "POLICYCTL_RECURSIVE"
    )]
    pub recursive: bool,

    /// Most bytes to read from all `-f` inputs together (`4GiB`, `512Mi`,
    /// `100M` or a number of bytes); reading stops with an error past it.
    #[arg(
        long = "max-input-bytes",
        global = true,
        env = "POLICYCTL_MAX_INPUT_BYTES",
        default_value = "4GiB",
        value_name = "BYTES"
    )]
    pub max_input_bytes: ByteSize,

    /// Output format.
    #[arg(
        short = 'o',
        long = "output",
        global = true,
        env = "POLICYCTL_OUTPUT",
        value_enum,
        default_value_t = OutputFormat::Table
    )]
    pub output: OutputFormat,

    /// Node-agent configuration: a ConfigMap manifest, or a file holding just
    /// the configuration JSON. Takes precedence over `--config-map`.
    #[arg(long, global = true, env = "POLICYCTL_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// The node-agent ConfigMap among the input objects (or in a `--config`
    /// file holding several): `NAME` in any namespace, or
    /// `NAMESPACE/NAME`. Default `node-agent-config`, and Velero's defaults
    /// when there is none; a ConfigMap named here must exist.
    #[arg(
        long = "config-map",
        global = true,
        env = "POLICYCTL_CONFIG_MAP",
        value_name = "[NAMESPACE/]NAME"
    )]
    pub config_map: Option<ConfigMapRef>,

    /// The Velero version whose behaviour the answers follow: which
    /// node-agent configuration keys are read (a key a later release reads
    /// is reported as such and ignored, as that release ignores it). One of
    /// 1.17.0–1.17.2, 1.18.0–1.18.3 (`1.17`, `1.18`: the newest patch) or
    /// `main`. Default: the release tag of the Velero Deployment's image in
    /// the input, else the newest release.
    #[arg(
        long = "velero-version",
        global = true,
        env = "POLICYCTL_VELERO_VERSION",
        value_name = "VERSION"
    )]
    pub velero_version: Option<affinity_translate::VeleroVersion>,

    /// The Kubernetes release whose kube-scheduler the scheduling answers
    /// follow (its default profile, scores and messages): 1.34, 1.35, 1.36
    /// or 1.37 (a patch such as `v1.37.2` is accepted). Default: in live
    /// mode the API server's own release (`/version`), else the newest.
    #[arg(
        long = "kubernetes-version",
        global = true,
        env = "POLICYCTL_KUBERNETES_VERSION",
        value_name = "VERSION"
    )]
    pub kubernetes_version: Option<kube_scheduler_sim::KubernetesVersion>,

    /// The ConfigMap holding the HostInventory (`NAME` in any namespace, or
    /// `NAMESPACE/NAME`; in live mode give the namespace, so that it is
    /// listed), as host-label-controller's `--inventory-configmap`. Without
    /// it, every input ConfigMap whose `--inventory-key` entry is a
    /// HostInventory is read; a ConfigMap named here must hold one.
    #[arg(
        long = "inventory-config-map",
        alias = "inventory-configmap",
        global = true,
        env = "POLICYCTL_INVENTORY_CONFIG_MAP",
        value_name = "[NAMESPACE/]NAME"
    )]
    pub inventory_config_map: Option<ConfigMapRef>,

    /// The data key of the HostInventory (YAML or JSON) in its ConfigMap.
    #[arg(
        long = "inventory-key",
        global = true,
        env = "POLICYCTL_INVENTORY_KEY",
        default_value = DEFAULT_INVENTORY_KEY,
        value_name = "KEY"
    )]
    pub inventory_key: String,

    /// The repository-maintenance job ConfigMap among the input objects
    /// (Velero's `--repo-maintenance-job-configmap`): `NAME` in any
    /// namespace, or `NAMESPACE/NAME`. Default `repo-maintenance-job-config`
    /// (the name Velero's documentation uses), and Velero's defaults when
    /// there is none; a ConfigMap named here must exist.
    #[arg(
        long = "maintenance-config-map",
        global = true,
        env = "POLICYCTL_MAINTENANCE_CONFIG_MAP",
        value_name = "[NAMESPACE/]NAME"
    )]
    pub maintenance_config_map: Option<ConfigMapRef>,

    /// Accept an answer built without a kind it depends on (one the user
    /// may not list, or whose listing failed): exit 0 instead of 3. The
    /// output states what is missing either way.
    #[arg(long, global = true, env = "POLICYCTL_ALLOW_PARTIAL")]
    pub allow_partial: bool,

    /// Live mode: read the objects from a cluster instead (see
    /// [`crate::live`]).
    #[command(flatten)]
    pub live: LiveArgs,
}

/// The default `--inventory-key`, as host-label-controller's.
pub const DEFAULT_INVENTORY_KEY: &str = "inventory.yaml";

/// The default `--config-map` name (Velero's Helm chart and docs).
pub const DEFAULT_CONFIG_MAP: &str = "node-agent-config";

/// Objects per list request when `--chunk-size` is not given (as
/// `kubectl get`).
pub const DEFAULT_CHUNK_SIZE: u32 = 500;

/// Options of live mode (global: they go before or after the command).
#[derive(Clone, Debug, Default, Args)]
pub struct LiveArgs {
    /// Live mode: read the objects from the cluster of this kubeconfig file
    /// (read-only: list requests only) instead of -f files. The KUBECONFIG
    /// environment variable is honoured by --live and --context; it does not
    /// switch to live mode by itself.
    #[arg(
        long,
        global = true,
        env = "POLICYCTL_KUBECONFIG",
        value_name = "FILE",
        conflicts_with = "filenames"
    )]
    pub kubeconfig: Option<PathBuf>,

    /// Live mode: the kubeconfig context to use (default: the current
    /// context).
    #[arg(
        long,
        global = true,
        env = "POLICYCTL_CONTEXT",
        value_name = "NAME",
        conflicts_with = "filenames"
    )]
    pub context: Option<String>,

    /// Live mode with the default kubeconfig (KUBECONFIG, else
    /// ~/.kube/config), else the in-cluster service account.
    #[arg(
        long,
        global = true,
        env = "POLICYCTL_LIVE",
        conflicts_with = "filenames"
    )]
    pub live: bool,

    /// Live mode: Velero's namespace, where the Velero kinds and the
    /// node-agent ConfigMap are listed [default: velero].
    #[arg(
        short = 'n',
        long,
        global = true,
        env = "POLICYCTL_NAMESPACE",
        value_name = "NAMESPACE"
    )]
    pub namespace: Option<String>,

    /// Live mode: objects per list request (the rest follows in further
    /// pages, as kubectl get --chunk-size).
    #[arg(
        long,
        global = true,
        env = "POLICYCTL_CHUNK_SIZE",
        default_value_t = DEFAULT_CHUNK_SIZE,
        value_parser = clap::value_parser!(u32).range(1..),
        value_name = "N"
    )]
    pub chunk_size: u32,

    /// Live mode: how long to wait for each request to the server
    /// (connecting, TLS, the response headers and the whole body of each
    /// page) before giving up, as kubectl's --request-timeout: `30s`, `1m`,
    /// `1h30m`, a bare number of seconds, or `0` for no limit.
    #[arg(
        long,
        global = true,
        env = "POLICYCTL_REQUEST_TIMEOUT",
        default_value = crate::timeout::DEFAULT_REQUEST_TIMEOUT,
        value_name = "DURATION"
    )]
    pub request_timeout: crate::timeout::RequestTimeout,

    /// Set by `main` when the binary runs as the `kubectl-policy` plugin:
    /// live mode is then the default.
    #[arg(skip)]
    pub kubectl_plugin: bool,
}

/// `--config-map`: a name, optionally with its namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigMapRef {
    /// The namespace, when given.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl ConfigMapRef {
    /// Whether a ConfigMap `namespace/name` is the one meant.
    pub fn matches(&self, namespace: &str, name: &str) -> bool {
        self.name == name && self.namespace.as_deref().is_none_or(|ns| ns == namespace)
    }
}

impl std::fmt::Display for ConfigMapRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

impl std::str::FromStr for ConfigMapRef {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (namespace, name) = match text.split_once('/') {
            Some((namespace, name)) => (Some(namespace), name),
            None => (None, text),
        };
        if name.is_empty() || name.contains('/') || namespace.is_some_and(str::is_empty) {
            return Err(format!(
                "expected NAME or NAMESPACE/NAME (for example velero/node-agent-config), got {text:?}"
            ));
        }
        Ok(Self {
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        })
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Node-agent configuration commands.
    Config {
        /// What to do with the configuration.
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Data-path concurrency of every Node (`loadConcurrency`).
    Concurrency,
    /// Scheduling fragment of the data-mover pod that would serve a PVC.
    Affinity(AffinityArgs),
    /// Steady state of the concurrent backup queue with no backup finishing.
    Queue(QueueArgs),
    /// Which New loads one prepare-queue gate would admit now.
    Soothe(SootheArgs),
    /// kube-scheduler's verdict for a pod, or placement of every unbound pod.
    Schedule(ScheduleArgs),
    /// How many more pods like one pod (or a workload's pod template) fit:
    /// copies placed one by one with kube-scheduler's default profile until
    /// one fits nowhere.
    Capacity(CapacityArgs),
    /// VM placement over physical hosts from a HostInventory.
    Hosts {
        /// What to plan.
        #[command(subcommand)]
        action: HostsAction,
    },
    /// Physical-host labels of the Nodes, and an audit of replicas sharing a
    /// host.
    HostLabels(HostLabelsArgs),
    /// Why a Pending pod (a data-mover pod especially) does not schedule.
    Diagnose(DiagnoseArgs),
    /// Velero's repository-maintenance jobs: for every BackupRepository, the
    /// configuration entries it reads, the job's affinity, resources,
    /// priority class, labels and annotations, the nodes it can run on, and
    /// why not on the others when none can.
    Maintenance,
    /// CAPV's vSphere cluster modules of a cluster: which CAPV creates,
    /// deletes and keeps, each Machine's module, which members share an ESXi
    /// host, and the vMotions that would spread them.
    Modules(ModulesArgs),
    /// The whole picture in tables: everything the other commands compute.
    ///
    /// The VELERO column of the configuration findings says what Velero does
    /// with each one and cites the rule by its identifier (`C1.14`, `A2.15`,
    /// …). Every identifier is a heading of docs/behaviour/velero.md in the
    /// source repository; its anchor is the identifier in lower case with the
    /// dot as a dash: A2.15 is docs/behaviour/velero.md#a2-15. The table's
    /// footer lists the rules it cites with their anchors.
    Report(ReportArgs),
    /// The read-only RBAC live mode needs (a ClusterRole and a Role in
    /// Velero's namespace, list only), with bindings for the subjects given:
    /// pipe it to `kubectl apply -f -`.
    Rbac(RbacArgs),
    /// OpenStack Tacker: what a VNFD's affinity rules become (as
    /// heat-translator translates them) and how its VDUs spread over the
    /// compute hosts.
    Vnf {
        /// What to compute.
        #[command(subcommand)]
        action: VnfAction,
    },
}

/// `vnf` subcommands.
#[derive(Debug, Subcommand)]
pub enum VnfAction {
    /// The server-group part of the Heat template heat-translator makes of
    /// the VNFD (`-o yaml` writes it as heat-translator does), and a finding
    /// for every affinity rule, target or hint it drops.
    Translate(VnfdArgs),
    /// For each VDU: its server group and policy, its instances at each
    /// instantiation and scale level, whether each level fits the compute
    /// hosts (the first that fails with NoValidHost), and the `CIS-node`
    /// labels Tacker's management driver writes on the workers. Nodes
    /// given with `-f` check Tacker's node-name guess.
    Plan(VnfPlanArgs),
}

/// The VNFD options.
#[derive(Clone, Debug, Args)]
pub struct VnfdArgs {
    /// The VNFD: a TOSCA YAML file (its imports are read next to it), or a
    /// CSAR's `Definitions` directory.
    #[arg(long, value_name = "FILE|DIR", env = "POLICYCTL_VNFD")]
    pub vnfd: PathBuf,
    /// The deployment flavour (`flavour_id`) when the VNFD has several.
    #[arg(long, value_name = "ID", env = "POLICYCTL_VNF_FLAVOUR")]
    pub flavour: Option<String>,
}

/// Options of `vnf plan`.
#[derive(Clone, Debug, Args)]
pub struct VnfPlanArgs {
    /// The VNFD.
    #[command(flatten)]
    pub vnfd: VnfdArgs,
    /// The compute hosts: `openstack hypervisor list -f json` (hosts whose
    /// State is not `up` are never chosen).
    #[arg(long, value_name = "FILE", env = "POLICYCTL_HYPERVISORS")]
    pub hypervisors: Option<PathBuf>,
    /// The servers: `openstack server list --long -f json` (the workers, and
    /// the compute hosts when `--hypervisors` is not given).
    #[arg(long, value_name = "FILE", env = "POLICYCTL_SERVERS")]
    pub servers: Option<PathBuf>,
    /// The package's BaseHOT top template (nested templates are read next
    /// to it or from its `nested/` directory). Its server groups replace
    /// heat-translator's translation of the VNFD's rules, as in Tacker when
    /// a package has a BaseHOT.
    #[arg(long, value_name = "FILE", env = "POLICYCTL_BASE_HOT")]
    pub base_hot: Option<PathBuf>,
}

/// Options of `rbac`.
#[derive(Debug, Args)]
pub struct RbacArgs {
    /// Bind the roles to this ServiceAccount. Repeatable.
    #[arg(
        long,
        value_name = "NAMESPACE/NAME",
        env = "POLICYCTL_RBAC_SERVICE_ACCOUNT"
    )]
    pub service_account: Vec<ObjectRef>,
    /// Bind the roles to this user. Repeatable.
    #[arg(long, value_name = "NAME", env = "POLICYCTL_RBAC_USER")]
    pub user: Vec<String>,
    /// Bind the roles to this group. Repeatable.
    #[arg(long, value_name = "NAME", env = "POLICYCTL_RBAC_GROUP")]
    pub group: Vec<String>,
}

/// `config` subcommands.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Normalised configuration and findings; exits 1 where Velero's
    /// node-agent would refuse to start.
    ///
    /// The VELERO column says what Velero does with each finding and cites
    /// the rule by its identifier (`C1.14`, `A2.15`, …). Every identifier is
    /// a heading of docs/behaviour/velero.md in the source repository; its
    /// anchor is the identifier in lower case with the dot as a dash: A2.15
    /// is docs/behaviour/velero.md#a2-15. The table's footer lists the rules
    /// it cites with their anchors.
    Check {
        /// Also exit 1 on warnings.
        #[arg(long, env = "POLICYCTL_STRICT")]
        strict: bool,
    },
}

/// Options of `affinity`.
#[derive(Debug, Args)]
pub struct AffinityArgs {
    /// The PVC: the source PVC of a backup, or the target PVC of a restore.
    #[arg(long, value_name = "NAMESPACE/NAME", env = "POLICYCTL_PVC")]
    pub pvc: ObjectRef,
    /// Compute the restore (DataDownload) pod instead of the backup pod.
    #[arg(long, env = "POLICYCTL_RESTORE")]
    pub restore: bool,
    /// OS of the nodes the data mover runs on.
    #[arg(long, value_enum, default_value_t = NodeOsArg::Linux, env = "POLICYCTL_NODE_OS")]
    pub node_os: NodeOsArg,
}

/// Node OS of `--node-os`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NodeOsArg {
    /// Linux nodes.
    Linux,
    /// Windows nodes.
    Windows,
}

/// Options of `queue`.
#[derive(Debug, Args)]
pub struct QueueArgs {
    /// Velero's `--concurrent-backups` (values below 1 mean 1, as in
    /// Velero).
    #[arg(
        long,
        default_value_t = 1,
        allow_negative_numbers = true,
        env = "POLICYCTL_CONCURRENT_BACKUPS"
    )]
    pub concurrent_backups: i64,
}

/// Options of `soothe`.
#[derive(Debug, Args)]
pub struct SootheArgs {
    /// How the gate decides.
    #[arg(long, value_enum, default_value_t = SootheMode::Optimistic, env = "POLICYCTL_SOOTHE_MODE")]
    pub mode: SootheMode,
    /// Gate the loads of this third-party data mover (`spec.datamover`), as
    /// `load-soothe-controller --datamover` does; repeatable. Without it the
    /// gate is Velero's node-agent gate: Velero's built-in data mover and
    /// the pod-volume loads. Loads of other data movers are listed as not
    /// gated here.
    #[arg(
        long = "datamover",
        value_name = "NAME",
        value_delimiter = ',',
        value_parser = datamover_name,
        env = "POLICYCTL_DATAMOVER"
    )]
    pub datamovers: Vec<String>,
}

/// Options of `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Velero's `--concurrent-backups` for the backup queue section (values
    /// below 1 mean 1, as in Velero).
    #[arg(
        long,
        default_value_t = 1,
        allow_negative_numbers = true,
        env = "POLICYCTL_CONCURRENT_BACKUPS"
    )]
    pub concurrent_backups: i64,
    /// How the load admission section's gate decides (as `soothe --mode`).
    #[arg(long, value_enum, default_value_t = SootheMode::Optimistic, env = "POLICYCTL_SOOTHE_MODE")]
    pub soothe_mode: SootheMode,
    /// Third-party data mover the load admission section's gate serves (as
    /// `soothe --datamover`); repeatable.
    #[arg(
        long = "datamover",
        value_name = "NAME",
        value_delimiter = ',',
        value_parser = datamover_name,
        env = "POLICYCTL_DATAMOVER"
    )]
    pub datamovers: Vec<String>,
    /// A Tacker VNFD (a file, or a CSAR's `Definitions` directory): adds
    /// the `vnf` section, `vnf plan` joined with this input's Nodes and CNF.
    #[arg(long, value_name = "FILE|DIR", env = "POLICYCTL_VNFD")]
    pub vnfd: Option<PathBuf>,
    /// With `--vnfd`: its deployment flavour, when it has several.
    #[arg(
        long,
        value_name = "ID",
        requires = "vnfd",
        env = "POLICYCTL_VNF_FLAVOUR"
    )]
    pub vnf_flavour: Option<String>,
    /// With `--vnfd`: the package's BaseHOT (as `vnf plan --base-hot`).
    #[arg(
        long,
        value_name = "FILE",
        requires = "vnfd",
        env = "POLICYCTL_BASE_HOT"
    )]
    pub base_hot: Option<PathBuf>,
    /// With `--vnfd`: `openstack hypervisor list -f json`.
    #[arg(
        long,
        value_name = "FILE",
        requires = "vnfd",
        env = "POLICYCTL_HYPERVISORS"
    )]
    pub hypervisors: Option<PathBuf>,
    /// With `--vnfd`: `openstack server list --long -f json`.
    #[arg(
        long,
        value_name = "FILE",
        requires = "vnfd",
        env = "POLICYCTL_SERVERS"
    )]
    pub servers: Option<PathBuf>,
}

impl ReportArgs {
    /// The `vnf plan` arguments of the `vnf` section, when `--vnfd` is given.
    pub fn vnf_plan(&self) -> Option<VnfPlanArgs> {
        Some(VnfPlanArgs {
            vnfd: VnfdArgs {
                vnfd: self.vnfd.clone()?,
                flavour: self.vnf_flavour.clone(),
            },
            hypervisors: self.hypervisors.clone(),
            servers: self.servers.clone(),
            base_hot: self.base_hot.clone(),
        })
    }
}

/// Why a `--datamover` value is refused: Velero's built-in data mover
/// ([`velero_api::is_built_in_data_mover`], the value trimmed) is what `soothe` gates
/// without the flag.
pub fn refused_datamover(name: &str) -> Option<String> {
    velero_api::is_built_in_data_mover(Some(name.trim())).then(|| {
        format!(
            "{name:?} is Velero's built-in data mover, which the gate serves without --datamover (Velero's node-agent gate); --datamover selects third-party data movers, as load-soothe-controller --datamover does"
        )
    })
}

/// A `--datamover` value: a third-party data mover's name.
fn datamover_name(text: &str) -> Result<String, String> {
    match refused_datamover(text) {
        Some(reason) => Err(reason),
        None => Ok(text.trim().to_owned()),
    }
}

/// Gate modes of `soothe --mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SootheMode {
    /// Velero's soft limit, with exact counts and first-in first-out order.
    Optimistic,
    /// Admission through a shared ledger: never more than the limit.
    Exact,
}

/// Options of `schedule`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["pod", "all"])))]
pub struct ScheduleArgs {
    /// The incoming pod (its `nodeName` is ignored).
    #[arg(long, value_name = "NAMESPACE/NAME", env = "POLICYCTL_POD")]
    pub pod: Option<ObjectRef>,
    /// Place every unbound pod, in order of creation time, then name.
    #[arg(long, env = "POLICYCTL_ALL")]
    pub all: bool,
    /// Score every node, not only the feasible ones.
    #[arg(long, env = "POLICYCTL_SCORE_ALL_NODES")]
    pub score_all_nodes: bool,
    /// kube-scheduler's `hardPodAffinityWeight` (0–100).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i64).range(0..=100), env = "POLICYCTL_HARD_POD_AFFINITY_WEIGHT")]
    pub hard_pod_affinity_weight: i64,
    /// kube-scheduler's `ignorePreferredTermsOfExistingPods`.
    #[arg(long, env = "POLICYCTL_IGNORE_PREFERRED_TERMS_OF_EXISTING_PODS")]
    pub ignore_preferred_terms_of_existing_pods: bool,
    /// A NodeAffinity (YAML or JSON) that kube-scheduler's NodeAffinityArgs
    /// `addedAffinity` applies to every pod.
    #[arg(long, value_name = "FILE", env = "POLICYCTL_ADDED_AFFINITY")]
    pub added_affinity: Option<std::path::PathBuf>,
}

/// Options of `capacity`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["pod", "workload"])))]
pub struct CapacityArgs {
    /// The pod to copy (pending or bound; a bound pod stays where it is and
    /// the copies are new pods besides it).
    #[arg(long, value_name = "NAMESPACE/NAME", env = "POLICYCTL_POD")]
    pub pod: Option<ObjectRef>,
    /// Copy the pod template of this Deployment or StatefulSet instead
    /// (`deployment/shop/web`, `statefulset/db/pg`; `deploy` and `sts`
    /// work too).
    #[arg(long, value_name = "KIND/NAMESPACE/NAME", env = "POLICYCTL_WORKLOAD")]
    pub workload: Option<WorkloadRef>,
    /// Most copies to place (1–1,000,000): the run stops there even if
    /// more would fit, and says so.
    #[arg(
        long,
        default_value_t = kube_scheduler_sim::DEFAULT_MAX_COPIES,
        value_parser = max_copies,
        env = "POLICYCTL_MAX"
    )]
    pub max: usize,
}

/// The largest `capacity --max`.
pub const MAX_COPIES_LIMIT: usize = 1_000_000;

fn max_copies(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=MAX_COPIES_LIMIT).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a number of copies from 1 to {MAX_COPIES_LIMIT}, got {text:?}"
        )),
    }
}

/// The kinds `capacity --workload` reads a pod template from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WorkloadKind {
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` StatefulSet.
    StatefulSet,
}

impl std::fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Deployment => "Deployment",
            Self::StatefulSet => "StatefulSet",
        })
    }
}

/// `KIND/NAMESPACE/NAME` of a workload given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadRef {
    /// Its kind.
    pub kind: WorkloadKind,
    /// Namespace and name.
    pub object: ObjectRef,
}

impl std::fmt::Display for WorkloadRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.kind, self.object)
    }
}

impl std::str::FromStr for WorkloadRef {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let usage = || {
            format!(
                "expected KIND/NAMESPACE/NAME with KIND deployment or statefulset (for example deployment/shop/web), got {text:?}"
            )
        };
        let (kind, rest) = text.split_once('/').ok_or_else(usage)?;
        let kind = match kind.to_ascii_lowercase().as_str() {
            "deployment" | "deployments" | "deploy" => WorkloadKind::Deployment,
            "statefulset" | "statefulsets" | "sts" => WorkloadKind::StatefulSet,
            _ => return Err(usage()),
        };
        let object = rest.parse::<ObjectRef>().map_err(|_| usage())?;
        Ok(Self { kind, object })
    }
}

/// `hosts` subcommands.
#[derive(Debug, Subcommand)]
pub enum HostsAction {
    /// Place the VMs that have no host yet, in list order.
    Plan,
    /// Plan live migrations that even out a group (or anti-affinity set).
    Rebalance {
        /// The group or anti-affinity set.
        #[arg(long, env = "POLICYCTL_GROUP")]
        group: String,
        /// Most migrations to plan (default: as many as needed).
        #[arg(long, env = "POLICYCTL_BUDGET")]
        budget: Option<usize>,
    },
    /// Choose the VMs to delete when a group shrinks.
    ScaleDown {
        /// The group.
        #[arg(long, env = "POLICYCTL_GROUP")]
        group: String,
        /// How many VMs to remove.
        #[arg(long, env = "POLICYCTL_REMOVE")]
        remove: usize,
    },
}

/// Options of `host-labels`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HostLabelsArgs {
    /// Label key carrying the host (default
    /// `node.cluster.x-k8s.io/esxi-host`; a
    /// `node-restriction.kubernetes.io/` key cannot be forged by kubelets).
    /// Repeatable (or comma-separated): the first key is the primary one,
    /// every Node gets all of them with the same value, as
    /// `host-label-controller --label-key` writes them.
    #[arg(
        long = "key",
        value_name = "KEY",
        value_delimiter = ',',
        env = "POLICYCTL_HOST_LABEL_KEY"
    )]
    pub keys: Vec<String>,
    /// Also preview Cluster API's Machine → Node label sync: every Machine
    /// label in the managed domains (`node-role.kubernetes.io`,
    /// `node-restriction.kubernetes.io`, `node.cluster.x-k8s.io` and their
    /// subdomains) goes to the Machine's Node, bookkept in the annotation
    /// `cluster.x-k8s.io/labels-from-machine`.
    #[arg(long, env = "POLICYCTL_SYNC_MACHINE_LABELS")]
    pub sync_machine_labels: bool,
    /// A regular expression: Machine labels whose key matches it (anywhere)
    /// are synced too. Repeatable (one expression each: commas are part of
    /// the expression); needs `--sync-machine-labels`.
    #[arg(
        long = "additional-sync-machine-labels",
        value_name = "REGEX",
        requires = "sync_machine_labels",
        env = "POLICYCTL_ADDITIONAL_SYNC_MACHINE_LABELS"
    )]
    pub additional_sync_machine_labels: Vec<String>,
    /// `sanitize VALUE`: the label value a host name becomes.
    #[command(subcommand)]
    pub action: Option<HostLabelsAction>,
}

/// `host-labels` subcommands.
#[derive(Debug, Subcommand)]
pub enum HostLabelsAction {
    /// The always-valid label value for a host name (FQDN, IPv4 or IPv6).
    Sanitize {
        /// The host name (not empty).
        #[arg(value_parser = host_name)]
        value: String,
    },
}

/// A host name for `sanitize`: anything but empty.
fn host_name(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        Err("a host name is required: an empty name identifies no host".to_owned())
    } else {
        Ok(text.to_owned())
    }
}

/// Options of `modules`.
#[derive(Debug, Args)]
pub struct ModulesArgs {
    /// The cluster (Cluster API cluster name, or VSphereCluster name) when
    /// the input has several.
    #[arg(long, value_name = "NAMESPACE/NAME", env = "POLICYCTL_CLUSTER")]
    pub cluster: Option<ObjectRef>,
}

/// Options of `diagnose`.
#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    /// The Pending pod.
    #[arg(long, value_name = "NAMESPACE/NAME", env = "POLICYCTL_POD")]
    pub pod: ObjectRef,
    /// A NodeAffinity (YAML or JSON) that kube-scheduler's NodeAffinityArgs
    /// `addedAffinity` applies to every pod.
    #[arg(long, value_name = "FILE", env = "POLICYCTL_ADDED_AFFINITY")]
    pub added_affinity: Option<std::path::PathBuf>,
}

/// `NAMESPACE/NAME` of a namespaced object given on the command line.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl std::str::FromStr for ObjectRef {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.split_once('/') {
            Some((namespace, name))
                if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
            {
                Ok(Self {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                })
            }
            _ => Err(format!(
                "expected NAMESPACE/NAME (for example shop/web-0), got {text:?}"
            )),
        }
    }
}
