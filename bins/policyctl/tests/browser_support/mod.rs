//! What the browser checks of `report -o html` share (the test
//! `html_browser` and the bench `html_page`): the browser's presence, a
//! scratch directory, the built `policyctl`, and `node check.mjs`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// How to install what the browser checks need.
pub const INSTALL: &str = "install them with `bash .ci/browser-deps.sh` (apt-get install -y chromium; npm ci --prefix bins/policyctl/tests/browser)";

/// The Node project that drives Chromium (`check.mjs`).
pub fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

/// Fails, naming the install command, when chromium or playwright-core is
/// missing.
pub fn require_browser() {
    let chromium =
        std::env::var("POLICYCTL_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(
        Path::new(&chromium).exists(),
        "chromium is not installed at {chromium}: {INSTALL}"
    );
    assert!(
        browser_dir().join("node_modules/playwright-core").is_dir(),
        "playwright-core is not installed in {}: {INSTALL}",
        browser_dir().display()
    );
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|o| o.status.success()),
        "node is not installed: apt-get install -y nodejs"
    );
}

/// A fresh directory for this test's files.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("policyctl-html-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir
}

/// Runs the built `policyctl` with `args`, writing standard output to `out`.
pub fn policyctl(args: &[&str], out: &Path) {
    let file = std::fs::File::create(out).expect("output file");
    let status = Command::new(env!("CARGO_BIN_EXE_policyctl"))
        .args(args)
        .stdout(file)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("policyctl runs");
    assert!(status.success(), "policyctl {args:?}: {status}");
}

/// Runs `node check.mjs ARGS`; returns its standard output.
pub fn node(args: &[&str]) -> String {
    let output = Command::new("node")
        .current_dir(browser_dir())
        .arg("check.mjs")
        .args(args)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "check.mjs {args:?} failed:\n{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}
