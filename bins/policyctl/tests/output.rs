//! Well-behaved output: a closed standard output, table layout, help.

mod common;

use std::io::Write;

use clap::{FromArgMatches, Parser};
use policyctl::{Cli, Exit, OutputFormat};

/// A standard output whose reader has gone away.
struct ClosedPipe;

impl Write for ClosedPipe {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
}

#[test]
fn a_closed_standard_output_ends_the_run_quietly_with_the_commands_exit() {
    for args in [&["report"][..], &["report", "-o", "json"], &["rbac"]] {
        let cli = Cli::try_parse_from(std::iter::once("policyctl").chain(args.iter().copied()))
            .expect("valid arguments");
        let mut stderr = Vec::new();
        let exit = policyctl::run(cli, &mut &b""[..], &mut ClosedPipe, &mut stderr);
        let stderr = String::from_utf8(stderr).expect("UTF-8");
        assert_eq!(exit, Exit::Success, "{args:?}: {stderr}");
        assert!(!stderr.contains("error"), "{args:?}: {stderr}");
    }
}

#[test]
fn report_piped_into_a_reader_that_stops_exits_0_without_a_message() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_policyctl"))
        .arg("report")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("policyctl starts");
    // The reader goes away before policyctl writes anything (`| head -0`).
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("policyctl ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
}

/// The long help of the subcommand at `path` of the program named `argv0`.
fn help_of(argv0: &str, path: &[&str]) -> String {
    let mut command = Cli::command_line(Some(std::ffi::OsStr::new(argv0)));
    let mut current = &mut command;
    for name in path {
        current = current
            .find_subcommand_mut(name)
            .unwrap_or_else(|| panic!("no subcommand {name}"));
    }
    current.render_long_help().to_string()
}

#[test]
fn the_adjusted_command_line_is_consistent() {
    Cli::command_line(None).debug_assert();
    Cli::command_line(Some(std::ffi::OsStr::new("kubectl-policy"))).debug_assert();
}

#[test]
fn each_command_lists_only_the_options_it_reads() {
    let flags = [
        "--filename",
        "--config ",
        "--config-map",
        "--live",
        "--kubeconfig",
        "--inventory-config-map <",
        "--inventory-key <KEY>",
        "--allow-partial",
        "--request-timeout",
    ];
    // Each command path with the flags of `flags` its help lists: `rbac`
    // reads where the named ConfigMaps live, `hosts` reads objects (its
    // inventory's ConfigMap among them) but no node-agent configuration,
    // and only the commands reading a HostInventory take its flags.
    let listed: &[(&[&str], &[&str])] = &[
        (&["host-labels", "sanitize"], &[]),
        (&["rbac"], &["--config-map", "--inventory-config-map <"]),
        (
            &["hosts", "plan"],
            &[
                "--filename",
                "--live",
                "--kubeconfig",
                "--inventory-config-map <",
                "--inventory-key <KEY>",
                "--allow-partial",
                "--request-timeout",
            ],
        ),
        (
            &["hosts", "rebalance"],
            &[
                "--filename",
                "--live",
                "--kubeconfig",
                "--inventory-config-map <",
                "--inventory-key <KEY>",
                "--allow-partial",
                "--request-timeout",
            ],
        ),
        (
            &["affinity"],
            &[
                "--filename",
                "--config ",
                "--config-map",
                "--live",
                "--kubeconfig",
                "--allow-partial",
                "--request-timeout",
            ],
        ),
        (
            &["schedule"],
            &[
                "--filename",
                "--live",
                "--kubeconfig",
                "--allow-partial",
                "--request-timeout",
            ],
        ),
        (&["report"], &flags),
        // `vnf` reads files of its own; only `vnf plan` reads Nodes (-f).
        (&["vnf", "translate"], &[]),
        (&["vnf", "plan"], &["--filename"]),
    ];
    for (path, expected) in listed {
        let help = help_of("policyctl", path);
        for flag in flags {
            assert_eq!(
                help.contains(flag),
                expected.contains(&flag),
                "{path:?} and {flag}:\n{help}"
            );
        }
        assert!(help.contains("--output"), "{path:?}:\n{help}");
    }
    assert!(help_of("policyctl", &["rbac"]).contains("--namespace"));
    // Hidden from help, still accepted (as kubectl's global flags are),
    // and every flag still means what it says.
    for (args, format, files) in [
        (
            &["policyctl", "rbac", "-f", "x.yaml"][..],
            OutputFormat::Table,
            &["x.yaml"][..],
        ),
        (
            &["policyctl", "rbac", "-o", "json"],
            OutputFormat::Json,
            &[],
        ),
        (
            &["policyctl", "hosts", "plan", "-o", "yaml", "-f", "h.yaml"],
            OutputFormat::Yaml,
            &["h.yaml"],
        ),
        (
            &[
                "policyctl",
                "host-labels",
                "sanitize",
                "-o",
                "json",
                "esx-01",
            ],
            OutputFormat::Json,
            &[],
        ),
    ] {
        let matches = Cli::command_line(None)
            .try_get_matches_from(args)
            .expect("accepted");
        let cli = Cli::from_arg_matches(&matches).expect("accepted");
        assert_eq!(cli.global.output, format, "{args:?}");
        assert_eq!(cli.global.filenames, files, "{args:?}");
    }
}

#[test]
fn as_the_kubectl_plugin_usage_says_kubectl_policy() {
    let help = help_of("kubectl-policy", &[]);
    assert!(
        help.contains("Usage: kubectl policy [OPTIONS] <COMMAND>"),
        "{help}"
    );
    let report = help_of("kubectl-policy", &["report"]);
    assert!(report.contains("Usage: kubectl policy report"), "{report}");
    assert!(help_of("/usr/local/bin/policyctl", &[]).contains("Usage: policyctl "));
}

#[test]
fn config_check_with_config_alone_reads_no_example_objects_and_says_nothing_of_them() {
    let dir = std::env::temp_dir().join(format!("policyctl-config-alone-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("config.json");
    std::fs::write(&file, r#"{"loadConcurrency": {"globalConfig": 5}}"#).expect("write");
    let path = file.to_str().expect("UTF-8 path");
    let run = common::run(&["--config", path, "config", "check"]);
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    assert!(!run.stderr.contains("example cluster"), "{}", run.stderr);
    // Commands that read objects still use the example cluster, and the
    // note says where the configuration comes from.
    let run = common::run(&["--config", path, "concurrency"]);
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "the node-agent configuration is {path}'s; give -f to read your cluster's objects"
        )),
        "{}",
        run.stderr
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn yaml_cut_in_the_middle_of_a_line_asks_whether_it_was_cut_short() {
    let cut = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labe";
    let run = common::run_with_stdin(&["-f", "-", "concurrency"], cut);
    assert_eq!(run.exit, Exit::Failure);
    assert!(run.stderr.contains("was it cut short?"), "{}", run.stderr);
    // The same text ending in a newline was not cut mid-line.
    let run = common::run_with_stdin(&["-f", "-", "concurrency"], &format!("{cut}\n"));
    assert!(!run.stderr.contains("cut short"), "{}", run.stderr);
}

#[test]
fn a_number_of_the_wrong_kind_is_described_in_words_not_rust_types() {
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  replicas: 1e+20\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n";
    let run = common::run_with_stdin(&["-f", "-", "report"], deployment);
    assert_eq!(run.exit, Exit::Failure, "{}", run.stdout);
    for rust in ["i32", "i64", "floating point"] {
        assert!(!run.stderr.contains(rust), "{}", run.stderr);
    }
    assert!(
        run.stderr.contains("expected a whole number from"),
        "{}",
        run.stderr
    );
}

/// A kubeconfig file with `text`, in a directory of its own.
fn kubeconfig_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("policyctl-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("kubeconfig");
    std::fs::write(&file, text).expect("write");
    file
}

const TWO_CONTEXTS: &str = "apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: 'https://127.0.0.1:1'}
users:
- name: u
  user: {token: t}
contexts:
- name: staging
  context: {cluster: c, user: u}
- name: production
  context: {cluster: c, user: u}
current-context: staging
";

#[test]
fn a_wrong_context_lists_the_contexts_that_exist() {
    let file = kubeconfig_file("contexts", TWO_CONTEXTS);
    let path = file.to_str().expect("UTF-8 path");
    let run = common::run(&["--kubeconfig", path, "--context", "prod", "queue"]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr.contains(
            "there is no context \"prod\": the kubeconfig's contexts are staging, production"
        ),
        "{}",
        run.stderr
    );
    std::fs::remove_file(&file).ok();
}

#[test]
fn a_broken_kubeconfig_keeps_the_parsers_excerpt_on_its_lines() {
    let broken = TWO_CONTEXTS.replace("- name: staging\n", "- name: staging\n\t");
    let file = kubeconfig_file("broken", &broken);
    let path = file.to_str().expect("UTF-8 path");
    let run = common::run(&["--kubeconfig", path, "queue"]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr.contains("cannot read the kubeconfig"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.trim_end().lines().count() > 1, "{}", run.stderr);
    std::fs::remove_file(&file).ok();
}
