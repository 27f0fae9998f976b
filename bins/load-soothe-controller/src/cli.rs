//! Command-line arguments (every flag also settable by environment variable).

use std::time::Duration;

use controller_kit::ControllerArgs;

use crate::config::{Config, DEFAULT_NODE_AGENT_CONFIG_MAP, GateMode};
use crate::error::Error;

/// `load-soothe-controller` flags.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "load-soothe-controller",
    version,
    about = "Admits New DataUploads/DataDownloads of the configured data movers while fewer than loadConcurrency.prepareQueueLength loads are in preparation"
)]
pub struct Cli {
    /// Data mover whose loads to accept (`spec.datamover`; `velero` also
    /// matches an empty one). Repeatable; the variable takes a comma list.
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
        let datamovers: Vec<&str> = self
            .datamovers
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .collect();
        if datamovers.is_empty() {
            return Err(Error::Config(
                "--datamover needs at least one non-empty data mover name".into(),
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
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[test]
    fn command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn flags_resolve_to_a_config() {
        let cli = Cli::try_parse_from([
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
        assert!(Cli::try_parse_from(["load-soothe-controller"]).is_err());
        let cli =
            Cli::try_parse_from(["load-soothe-controller", "--datamover=a", "--leader-elect"])
                .unwrap();
        let err = cli.to_config(None, "h").unwrap_err();
        insta::assert_snapshot!(err.to_string(), @"invalid configuration: --leader-elect is not supported: every replica admits loads (use --mode exact for several replicas)");
    }

    #[test]
    fn help_output() {
        let help = Cli::command()
            .term_width(100)
            .render_long_help()
            .to_string();
        insta::assert_snapshot!(help);
    }
}
