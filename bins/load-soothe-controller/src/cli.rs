//! Command-line arguments (every flag also settable by environment variable).

use std::time::Duration;

use controller_kit::ControllerArgs;

use crate::config::{
    Admission, Config, DEFAULT_NODE_AGENT_CONFIG_MAP, GateMode, refused_datamover,
};
use crate::error::Error;

/// `load-soothe-controller [FLAGS]` runs the controller;
/// `load-soothe-controller manifests` prints its deployment manifests.
/// Parse with [`command`] (or [`parse`]), which hides the leader-election
/// flags this controller refuses.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "load-soothe-controller",
    version,
    about = "Admits New DataUploads/DataDownloads of the configured data movers while fewer than loadConcurrency.prepareQueueLength loads are in preparation",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    mut_arg("namespace", |arg| arg.help(
        "Velero's namespace: its DataUploads, DataDownloads and node-agent ConfigMap, and the ledger ConfigMap (default: velero)"
    ))
)]
pub struct Cli {
    /// What to do (default: run the controller).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Data mover whose loads to accept (`spec.datamover`) — a third-party
    /// data mover: `velero` (Velero's built-in one, also an empty value)
    /// is refused, since Velero's node-agent admits its own loads.
    /// Repeatable; the variable takes a comma list.
    #[arg(
        long = "datamover",
        env = "DATAMOVERS",
        hide_env_values = true,
        value_delimiter = ',',
        required = true,
        value_name = "NAME"
    )]
    pub datamovers: Vec<String>,
    /// `exact`: shared ledger, never above the limit, any number of
    /// replicas; `optimistic`: no ledger, soft limit (replicas × limit).
    #[arg(long, env = "SOOTHE_MODE", hide_env_values = true, value_enum, default_value_t = GateMode::Exact)]
    pub mode: GateMode,
    /// This instance's identity (status.acceptedByNode, ledger admittedBy);
    /// default: POD_NAME, else HOSTNAME plus the process id.
    #[arg(long, env = "NODE_NAME", hide_env_values = true, value_name = "NAME")]
    pub node: Option<String>,
    /// Velero's node-agent ConfigMap (holds loadConcurrency.prepareQueueLength).
    #[arg(long, env = "NODE_AGENT_CONFIGMAP", hide_env_values = true, default_value = DEFAULT_NODE_AGENT_CONFIG_MAP, value_name = "NAME")]
    pub node_agent_configmap: String,
    /// Ledger ConfigMap of exact mode.
    #[arg(long, env = "LEDGER_CONFIGMAP", hide_env_values = true, default_value = load_soothe::DEFAULT_LEDGER_NAME, value_name = "NAME")]
    pub ledger_configmap: String,
    /// `pod-gates`: gate the movers' pods with a webhook and lift the gates
    /// first in first out; `accept`: accept loads on the data mover's
    /// behalf (breaks movers that expose only the loads they accept, as
    /// Velero's does; a warning is logged).
    #[arg(long, env = "SOOTHE_ADMISSION", hide_env_values = true, value_enum, default_value_t = Admission::PodGates)]
    pub admission: Admission,
    /// `pod-gates`: the webhook's HTTPS address.
    #[arg(
        long,
        env = "WEBHOOK_ADDR",
        hide_env_values = true,
        default_value = "0.0.0.0:9443",
        value_name = "ADDR"
    )]
    pub webhook_addr: std::net::SocketAddr,
    /// `pod-gates`: the Service in front of the webhook.
    #[arg(long, env = "WEBHOOK_SERVICE", hide_env_values = true, default_value = crate::config::CONTROLLER_NAME, value_name = "NAME")]
    pub webhook_service: String,
    /// `pod-gates`: an existing TLS Secret to serve the webhook with
    /// (cert-manager's `kubernetes.io/tls` Secret: PEM `tls.crt`,
    /// `tls.key`, optional `ca.crt`, written as the `caBundle`), never
    /// created here; default: `<webhook-service>-webhook-tls`, made by the
    /// first replica when absent.
    #[arg(
        long,
        env = "WEBHOOK_TLS_SECRET",
        hide_env_values = true,
        value_name = "NAME"
    )]
    pub webhook_tls_secret: Option<String>,
    /// Seconds before held loads are decided again when nothing changes.
    #[arg(
        long,
        env = "REQUEUE_SECONDS",
        hide_env_values = true,
        default_value_t = 5,
        value_name = "SECONDS"
    )]
    pub requeue_seconds: u64,
    /// The common controller flags.
    #[command(flatten)]
    pub common: ControllerArgs,
}

/// Subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Print the ServiceAccount, RBAC and workload manifests as YAML.
    Manifests(ManifestArgs),
}

/// Flags of `manifests`.
#[derive(Debug, Clone, clap::Args)]
pub struct ManifestArgs {
    /// Gate mode of the generated workload (exact: a 2-replica Deployment;
    /// optimistic: a DaemonSet).
    #[arg(long, value_enum, default_value_t = GateMode::Exact)]
    pub mode: GateMode,
    /// Admission of the generated workload (the controller's own default,
    /// `pod-gates`, brings the webhook's Service, configuration, container
    /// port, Secret and ClusterRole permissions; `accept` has none of them).
    #[arg(long, value_enum, default_value_t = Admission::PodGates)]
    pub admission: Admission,
    /// Velero's namespace (the controller runs there too).
    #[arg(long, default_value = "velero", value_name = "NAMESPACE")]
    pub namespace: String,
    /// Container image.
    #[arg(long, default_value = crate::manifests::IMAGE, value_name = "IMAGE")]
    pub image: String,
    /// Data mover(s) the generated workload admits (`spec.datamover` of its
    /// loads); required. Repeatable.
    #[arg(long = "datamover", value_name = "NAME")]
    pub datamovers: Vec<String>,
    /// `pod-gates`: serve the webhook with this existing Secret
    /// (cert-manager's): passes `--webhook-tls-secret` and grants `get` on
    /// it by name instead of the Secret the controller would make.
    #[arg(long, value_name = "NAME")]
    pub webhook_tls_secret: Option<String>,
}

/// The command line as parsed: [`Cli`]'s command with the leader-election
/// flags hidden (this controller does not elect a leader; see
/// [`Cli::to_config`]).
pub fn command() -> clap::Command {
    controller_kit::args::hide_leader_election(<Cli as clap::CommandFactory>::command())
}

/// Parses `args` with [`command`].
pub fn try_parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = command().try_get_matches_from(args)?;
    <Cli as clap::FromArgMatches>::from_arg_matches(&matches)
}

/// Parses the process's arguments with [`command`]; prints the usage error
/// and exits 2 (or prints help/version and exits 0) like `clap::Parser::parse`.
pub fn parse() -> Cli {
    try_parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
}

impl Cli {
    /// The run configuration. `pod_name` and `fallback_identity` supply the
    /// default `--node` (passed in so that this stays free of environment
    /// reads).
    pub fn to_config(
        &self,
        pod_name: Option<&str>,
        fallback_identity: &str,
    ) -> Result<Config, Error> {
        if self.common.leader.leader_elect {
            return Err(Error::Config(
                "--leader-elect is not supported: every replica admits loads (use --mode exact for several replicas)".into(),
            ));
        }
        if self.requeue_seconds == 0 {
            return Err(Error::Config("--requeue-seconds must be at least 1".into()));
        }
        if let Some(reason) = self.datamovers.iter().find_map(|d| refused_datamover(d)) {
            return Err(Error::Config(reason));
        }
        let datamovers: Vec<&str> = self.datamovers.iter().map(|s| s.trim()).collect();
        if datamovers.is_empty() {
            return Err(Error::Config(
                "--datamover needs at least one data mover name".into(),
            ));
        }
        let node = self
            .node
            .as_deref()
            .or(pod_name)
            .unwrap_or(fallback_identity);
        let namespace = self.common.namespace.as_deref().unwrap_or("velero");
        let mut config = Config::new(namespace, node, &datamovers, self.mode);
        config
            .node_agent_config_map
            .clone_from(&self.node_agent_configmap);
        config.ledger_config_map.clone_from(&self.ledger_configmap);
        config.dry_run = self.common.dry_run;
        config.requeue_after = Duration::from_secs(self.requeue_seconds);
        config.metrics_addr = Some(self.common.metrics_addr);
        config.admission = self.admission;
        config.webhook_addr = self.webhook_addr;
        config.webhook_service.clone_from(&self.webhook_service);
        if let Some(name) = &self.webhook_tls_secret {
            if name.trim().is_empty() {
                return Err(Error::Config(
                    "--webhook-tls-secret needs a Secret name (leave the flag out to have the controller make its own Secret)".into(),
                ));
            }
            config.webhook_tls_secret = Some(name.clone());
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_is_well_formed() {
        command().debug_assert();
    }

    #[test]
    fn flags_resolve_to_a_config() {
        let cli = try_parse_from([
            "load-soothe-controller",
            "--datamover",
            "acme",
            "--datamover=other",
            "--mode",
            "optimistic",
            "--dry-run",
            "-n",
            "backup",
        ])
        .unwrap();
        let c = cli.to_config(Some("pod-1"), "host-1").unwrap();
        assert_eq!(c.node, "pod-1");
        assert_eq!(c.namespace, "backup");
        assert_eq!(c.mode, GateMode::Optimistic);
        assert!(c.dry_run);
        assert_eq!(
            c.datamovers.iter().cloned().collect::<Vec<_>>(),
            vec!["acme".to_owned(), "other".to_owned()]
        );
        let c = cli.to_config(None, "host-1").unwrap();
        assert_eq!(c.node, "host-1");
    }

    #[test]
    fn datamover_is_required_and_leader_election_rejected() {
        assert!(try_parse_from(["load-soothe-controller"]).is_err());
        let cli =
            try_parse_from(["load-soothe-controller", "--datamover=a", "--leader-elect"]).unwrap();
        let err = cli.to_config(None, "h").unwrap_err();
        insta::assert_snapshot!(err.to_string(), @"invalid configuration: --leader-elect is not supported: every replica admits loads (use --mode exact for several replicas)");
    }

    #[test]
    fn manifests_default_to_the_controllers_own_admission_and_webhook_names() {
        let run = try_parse_from(["load-soothe-controller", "--datamover=acme"]).unwrap();
        let Some(Command::Manifests(m)) = try_parse_from(["load-soothe-controller", "manifests"])
            .unwrap()
            .command
        else {
            panic!("manifests did not parse");
        };
        assert_eq!(m.admission, run.admission);
        assert_eq!(run.webhook_addr.port(), crate::config::DEFAULT_WEBHOOK_PORT);
        assert_eq!(run.webhook_service, crate::config::CONTROLLER_NAME);
        assert_eq!(
            crate::config::webhook_tls_secret_name(&run.webhook_service),
            crate::config::DEFAULT_WEBHOOK_TLS_SECRET
        );
    }

    #[test]
    fn webhook_tls_secret_names_an_existing_secret_else_the_default_is_made() {
        let given = try_parse_from([
            "load-soothe-controller",
            "--datamover=acme",
            "--webhook-tls-secret=webhook-cert",
        ])
        .unwrap()
        .to_config(None, "h")
        .unwrap();
        assert_eq!(given.webhook_tls_secret.as_deref(), Some("webhook-cert"));
        assert_eq!(given.webhook_tls_secret(), "webhook-cert");
        let default = try_parse_from(["load-soothe-controller", "--datamover=acme"])
            .unwrap()
            .to_config(None, "h")
            .unwrap();
        assert_eq!(default.webhook_tls_secret, None);
        assert_eq!(
            default.webhook_tls_secret(),
            "load-soothe-controller-webhook-tls"
        );
        let empty = try_parse_from([
            "load-soothe-controller",
            "--datamover=acme",
            "--webhook-tls-secret= ",
        ])
        .unwrap()
        .to_config(None, "h")
        .unwrap_err();
        insta::assert_snapshot!(empty.to_string(), @"invalid configuration: --webhook-tls-secret needs a Secret name (leave the flag out to have the controller make its own Secret)");
    }

    #[test]
    fn help_output() {
        let help = command().term_width(100).render_long_help().to_string();
        insta::assert_snapshot!(help);
        for hidden in [
            "--leader-elect",
            "--lease-name",
            "--lease-namespace",
            "--leader-identity",
        ] {
            assert!(!help.contains(hidden), "{hidden} is listed: {help}");
        }
    }

    #[test]
    fn built_in_and_empty_data_movers_are_refused_with_the_reason() {
        for argv in [
            &["load-soothe-controller", "--datamover=velero"][..],
            &["load-soothe-controller", "--datamover="],
            &["load-soothe-controller", "--datamover=acme,velero"],
            &["load-soothe-controller", "--datamover=acme,"],
        ] {
            let cli = try_parse_from(argv).unwrap();
            let err = cli.to_config(None, "h").unwrap_err().to_string();
            assert!(
                err.contains("Velero's node-agent accepts itself"),
                "{argv:?}: {err}"
            );
        }
        let cli = try_parse_from(["load-soothe-controller", "--datamover=velero"]).unwrap();
        insta::assert_snapshot!(cli.to_config(None, "h").unwrap_err().to_string());
    }
}
