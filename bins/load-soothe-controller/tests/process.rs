//! The built binary as a user runs it: exit codes, what reaches stdout and
//! stderr, and behaviour when either is closed.

use std::io::Read as _;
use std::process::Stdio;
use std::time::{Duration, Instant};

use process_testkit::{
    Controller, checks, closed_pipe, sigterm, stderr_lines, temp_dir, unreachable_kubeconfig,
    wait_with_deadline,
};

const CONTROLLER: Controller = Controller {
    bin: env!("CARGO_BIN_EXE_load-soothe-controller"),
    name: "load-soothe-controller",
    cleared_env: &["DATAMOVERS", "LEADER_ELECT"],
    run_args: &["--datamover", "acme"],
};

fn command() -> std::process::Command {
    CONTROLLER.command()
}

#[test]
fn manifests_into_a_closed_pipe_exit_zero_without_a_word() {
    checks::manifests_into_a_closed_pipe_exit_zero_without_a_word(
        &CONTROLLER,
        &["--datamover", "acme"],
    );
}

#[test]
fn help_and_version_into_a_closed_pipe_exit_zero() {
    for flag in ["--help", "--version"] {
        let out = command()
            .arg(flag)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{flag}: {:?}",
            stderr_lines(&out)
        );
        assert!(out.stderr.is_empty(), "{flag}: {:?}", stderr_lines(&out));
    }
}

#[test]
fn manifests_refuse_an_invalid_namespace_image_or_data_mover_in_one_line_with_exit_2() {
    for (args, needle) in [
        (
            &["--namespace", "Velero_NS"][..],
            "invalid --namespace \"Velero_NS\": a lowercase RFC 1123 label",
        ),
        (
            &["--image", "Example/Controller:1"],
            "invalid --image \"Example/Controller:1\": repository name must be lowercase",
        ),
        (
            &["--image", "repo:-bad"],
            "invalid --image \"repo:-bad\": invalid tag",
        ),
        (
            &["--datamover", "velero"],
            "--datamover \"velero\" is refused",
        ),
        (
            &[][..],
            "invalid --datamover \"\": a data mover is required",
        ),
    ] {
        let out = command().arg("manifests").args(args).output().unwrap();
        let lines = stderr_lines(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {lines:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
        assert!(
            lines[0].starts_with("load-soothe-controller: error: "),
            "{lines:?}"
        );
        assert!(lines[0].contains(needle), "{args:?}: {lines:?}");
    }
    let out = command()
        .args(["manifests", "--namespace", "backup", "--image", "registry.example:5000/lsc@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "--datamover", "acme"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
    let yaml = String::from_utf8(out.stdout).unwrap();
    assert!(
        yaml.contains("namespace: backup\n") && yaml.contains("- --datamover=acme\n"),
        "{yaml}"
    );
}

#[test]
fn built_in_or_empty_data_mover_exits_2_with_the_reason() {
    for value in ["velero", ""] {
        let out = command()
            .args(["--datamover", value, "--metrics-addr", "127.0.0.1:0"])
            .output()
            .unwrap();
        let lines = stderr_lines(&out);
        assert_eq!(out.status.code(), Some(2), "{value:?}: {lines:?}");
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("Velero's node-agent accepts itself"),
            "{lines:?}"
        );
    }
}

#[test]
fn help_does_not_list_the_refused_leader_election_flags_and_refuses_them_with_exit_2() {
    let out = command().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("--datamover"), "{help}");
    for flag in ["--leader-elect", "--lease-name", "--lease-duration-seconds"] {
        assert!(!help.contains(flag), "{flag} listed:\n{help}");
    }
    let out = command()
        .args(["--datamover", "acme", "--leader-elect"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--leader-elect is not supported"));
}

#[test]
fn a_start_up_error_is_one_line_without_backtrace_unless_rust_backtrace_asks() {
    checks::a_start_up_error_is_one_line_without_backtrace_unless_rust_backtrace_asks(&CONTROLLER);
}

#[test]
fn logs_into_a_pipe_carry_no_colour_and_a_closed_stderr_does_not_panic() {
    let dir = temp_dir("lsc-process", "logs");
    let kubeconfig = unreachable_kubeconfig(&dir);
    let args = [
        "--admission",
        "accept",
        "--datamover",
        "acme",
        "--metrics-addr",
        "127.0.0.1:0",
        "--kubeconfig",
    ];

    // stderr is a pipe, not a terminal: plain text.
    let mut child = command()
        .args(args)
        .arg(&kubeconfig)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("watch failed") {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{}",
            String::from_utf8_lossy(&seen)
        );
        let n = stderr.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "stderr closed early: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    sigterm(&child);
    let code = wait_with_deadline(&mut child, Duration::from_secs(10));
    stderr.read_to_end(&mut seen).unwrap();
    let text = String::from_utf8_lossy(&seen);
    assert!(
        !text.contains('\u{1b}'),
        "ANSI escape in piped logs:\n{text}"
    );
    assert_eq!(code, Some(0), "{text}");

    // stderr closed: the controller keeps running (its log lines are
    // dropped) and stops cleanly on SIGTERM.
    let mut child = command()
        .args(args)
        .arg(&kubeconfig)
        .stderr(closed_pipe())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "exited early: {:?}",
        child.try_wait()
    );
    sigterm(&child);
    assert_eq!(
        wait_with_deadline(&mut child, Duration::from_secs(10)),
        Some(0)
    );
}
