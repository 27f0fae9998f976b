//! The checks every controller binary passes, each a function a binary's
//! `tests/process.rs` calls from a test of the same name.

use std::process::Stdio;

use crate::{Controller, closed_pipe, stderr_lines};

/// `NAME manifests ARGS` into a closed pipe exits 0 without a word on
/// standard error (a closed stdout is success, as for `| head`).
pub fn manifests_into_a_closed_pipe_exit_zero_without_a_word(c: &Controller, args: &[&str]) {
    let out = c
        .command()
        .arg("manifests")
        .args(args)
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", c.bin));
    assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
    assert!(out.stderr.is_empty(), "{:?}", stderr_lines(&out));
}

/// `manifests` refuses an invalid `--namespace` or `--image` with exit 2
/// and one line `NAME: error: …` naming the flag and the value, and takes
/// a valid namespace and an image with a registry port.
pub fn manifests_refuse_an_invalid_namespace_or_image_in_one_line_with_exit_2(c: &Controller) {
    let name = c.name;
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
        let out = c
            .command()
            .arg("manifests")
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let lines = stderr_lines(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {lines:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
        assert!(
            lines[0].starts_with(&format!("{name}: error: ")),
            "{lines:?}"
        );
        assert!(lines[0].contains(needle), "{args:?}: {lines:?}");
    }
    let out = c
        .command()
        .args([
            "manifests",
            "--namespace",
            "ops",
            "--image",
            "registry.example:5000/team/controller:1.2",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(0), "{:?}", stderr_lines(&out));
    let yaml = String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert!(yaml.contains("namespace: ops\n"), "{yaml}");
    assert!(
        yaml.contains("image: registry.example:5000/team/controller:1.2\n"),
        "{yaml}"
    );
}

/// A start-up error (a kubeconfig that does not exist) is one line
/// `NAME: error: cannot read kubeconfig …`, exit 1, its cause once, no
/// terminal escapes; with `RUST_BACKTRACE=1` the error chain follows.
pub fn a_start_up_error_is_one_line_without_backtrace_unless_rust_backtrace_asks(c: &Controller) {
    let name = c.name;
    let missing =
        std::env::temp_dir().join(format!("{name}-no-such-kubeconfig-{}", std::process::id()));
    let run = |backtrace: bool| {
        let mut command = c.command();
        if backtrace {
            command.env("RUST_BACKTRACE", "1");
        }
        command
            .args(c.run_args)
            .args(["--metrics-addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(&missing)
            .stderr(Stdio::piped())
            .output()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let out = run(false);
    let lines = stderr_lines(&out);
    assert_eq!(out.status.code(), Some(1), "{lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!("{name}: error: cannot read kubeconfig")),
        "{lines:?}"
    );
    // The cause appears once, not once per level of the error chain.
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
