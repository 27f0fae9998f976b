//! CLI arguments: clap consistency, defaults, env vars, leader-election validation.

use clap::{CommandFactory, Parser};
use controller_kit::{ControllerArgs, LogFormat};

/// Demo controller (a binary flattening the shared arguments).
#[derive(Debug, Parser)]
#[command(name = "demo-controller")]
struct Cli {
    #[command(flatten)]
    common: ControllerArgs,
    /// A binary-specific flag, to show flattening works.
    #[arg(
        long,
        env = "CONCURRENT_BACKUPS",
        hide_env_values = true,
        default_value_t = 1
    )]
    concurrent_backups: u32,
}

#[test]
fn command_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn defaults_and_flags_parse() {
    let cli = Cli::try_parse_from(["demo"]).unwrap();
    assert!(!cli.common.dry_run);
    assert_eq!(cli.common.log_format, LogFormat::Text);
    assert_eq!(cli.common.metrics_addr.to_string(), "0.0.0.0:8080");
    assert!(!cli.common.leader.leader_elect);
    assert_eq!(cli.common.leader.lease_duration_seconds, 15);

    let cli = Cli::try_parse_from([
        "demo",
        "--dry-run",
        "--log-format",
        "json",
        "--metrics-addr",
        "127.0.0.1:9000",
        "-n",
        "velero",
        "--kubeconfig",
        "/tmp/kc",
        "--context",
        "kind",
        "--leader-elect",
        "--lease-name",
        "bq",
        "--lease-namespace",
        "velero",
        "--lease-duration-seconds",
        "4",
        "--lease-renew-seconds",
        "1",
        "--leader-identity",
        "pod-a",
        "--concurrent-backups",
        "2",
    ])
    .unwrap();
    assert!(cli.common.dry_run && cli.common.leader.leader_elect);
    assert_eq!(cli.common.log_format, LogFormat::Json);
    assert_eq!(cli.common.namespace.as_deref(), Some("velero"));
    assert_eq!(cli.common.context.as_deref(), Some("kind"));
    assert_eq!(cli.concurrent_backups, 2);
    let le = cli.common.leader.resolve("demo", None, "fallback").unwrap();
    assert_eq!(
        (
            le.lease_name.as_str(),
            le.lease_namespace.as_str(),
            le.identity.as_str()
        ),
        ("bq", "velero", "pod-a")
    );
    assert_eq!(le.duration.as_secs(), 4);
}

#[test]
fn every_flag_has_an_env_var() {
    let cmd = Cli::command();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if matches!(id, "help" | "version") {
            continue;
        }
        assert!(
            arg.get_env().is_some(),
            "--{id} has no environment variable"
        );
    }
}

#[test]
fn invalid_values_are_rejected_with_the_flag_name() {
    let err = Cli::try_parse_from(["demo", "--log-format", "xml"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("--log-format"), "{err}");
    let err = Cli::try_parse_from(["demo", "--metrics-addr", "nope"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("--metrics-addr"), "{err}");
    let cli = Cli::try_parse_from([
        "demo",
        "--lease-duration-seconds",
        "5",
        "--lease-renew-seconds",
        "5",
    ])
    .unwrap();
    let err = cli
        .common
        .leader
        .resolve("demo", None, "x")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--lease-renew-seconds (5) must be below --lease-duration-seconds (5)"),
        "{err}"
    );
}

#[test]
fn lease_defaults_come_from_the_controller_name_and_pod_namespace() {
    let cli = Cli::try_parse_from(["demo"]).unwrap();
    let le = cli
        .common
        .leader
        .resolve("demo-controller", Some("velero"), "host-1")
        .unwrap();
    assert_eq!(
        (
            le.lease_name.as_str(),
            le.lease_namespace.as_str(),
            le.identity.as_str()
        ),
        ("demo-controller", "velero", "host-1")
    );
    let le = cli
        .common
        .leader
        .resolve("demo-controller", None, "host-1")
        .unwrap();
    assert_eq!(le.lease_namespace, "default");
}

/// An empty `POD_NAMESPACE` or `--lease-namespace` counts as absent (the
/// workspace's one namespace default, `kube_validation::namespace_or_default`):
/// the Lease goes to the next source, then to `default`, never to the
/// namespace `""`, which the API server reads as cluster scope.
#[test]
fn empty_lease_namespaces_count_as_absent() {
    let cli = Cli::try_parse_from(["demo"]).unwrap();
    let le = cli
        .common
        .leader
        .resolve("demo-controller", Some(""), "host-1")
        .unwrap();
    assert_eq!(le.lease_namespace, "default");
    let cli = Cli::try_parse_from(["demo", "--lease-namespace", ""]).unwrap();
    let le = cli
        .common
        .leader
        .resolve("demo-controller", Some("velero"), "host-1")
        .unwrap();
    assert_eq!(le.lease_namespace, "velero");
}

#[test]
fn help_output_is_stable() {
    let help = Cli::command()
        .term_width(100)
        .render_long_help()
        .to_string();
    insta::assert_snapshot!(help);
}
