//! The built binary as a user runs it: exit codes, what reaches stdout and
//! stderr, and behaviour when stdout is closed.

use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_host-label-controller");
const NAME: &str = "host-label-controller";

fn command() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .env_remove("RUST_LOG")
        .env_remove("KUBECONFIG")
        .env_remove("NO_COLOR");
    c
}

/// The write end of a pipe whose read end is already closed: every write
/// fails with `EPIPE`, as when `| head` has exited.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Stdio::from(writer)
}

fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn manifests_into_a_closed_pipe_exit_zero_without_a_word() {
    let out = command()
        .arg("manifests")
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
    assert!(out.stderr.is_empty(), "{:?}", stderr_lines(&out));
}

#[test]
fn manifests_refuse_an_invalid_namespace_or_image_in_one_line_with_exit_2() {
    for (args, needle) in [
        (
            &["--namespace", "Velero_NS"][..],
            "invalid --namespace \"Velero_NS\": a lowercase RFC 1123 label",
        ),
        (&["--namespace", ""], "invalid --namespace \"\""),
        (
            &["--image", "Example/Controller:1"],
            "invalid --image \"Example/Controller:1\": repository name must be lowercase",
        ),
        (
            &["--image", "repo@sha256:abc"],
            "invalid --image \"repo@sha256:abc\": invalid digest",
        ),
    ] {
        let out = command().arg("manifests").args(args).output().unwrap();
        let lines = stderr_lines(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {lines:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
        assert!(
            lines[0].starts_with(&format!("{NAME}: error: ")),
            "{lines:?}"
        );
        assert!(lines[0].contains(needle), "{args:?}: {lines:?}");
    }
    let out = command()
        .args([
            "manifests",
            "--namespace",
            "ops",
            "--image",
            "registry.example:5000/team/controller:1.2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
    let yaml = String::from_utf8(out.stdout).unwrap();
    assert!(yaml.contains("namespace: ops\n"), "{yaml}");
    assert!(
        yaml.contains("image: registry.example:5000/team/controller:1.2\n"),
        "{yaml}"
    );
}

#[test]
fn a_start_up_error_is_one_line_without_backtrace_unless_rust_backtrace_asks() {
    let missing =
        std::env::temp_dir().join(format!("{NAME}-no-such-kubeconfig-{}", std::process::id()));
    let run = |backtrace: bool| {
        let mut c = command();
        if backtrace {
            c.env("RUST_BACKTRACE", "1");
        }
        c.args(["--metrics-addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(&missing)
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    };
    let out = run(false);
    let lines = stderr_lines(&out);
    assert_eq!(out.status.code(), Some(1), "{lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!("{NAME}: error: cannot read kubeconfig")),
        "{lines:?}"
    );
    assert_eq!(
        lines[0].matches("No such file or directory").count(),
        1,
        "{lines:?}"
    );
    assert!(!lines[0].contains('\u{1b}'), "{lines:?}");
    let out = run(true);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_lines(&out).len() > 1,
        "RUST_BACKTRACE=1 shows the error chain"
    );
}
