//! The measurement end to end at a tiny size (50 objects per controller,
//! one size), so that it keeps working: three beds, each controller
//! started, restarted and measured, every table printed.
//!
//! It runs the controller binaries the workspace built: those beside this
//! test's `controller-scale` (target/debug, which `cargo test --workspace`
//! builds), else target/release, or the directory in `SCALE_BIN_DIR`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const BINARY: &str = env!("CARGO_BIN_EXE_controller-scale");
const CONTROLLERS: [&str; 3] = [
    "backup-queue-controller",
    "load-soothe-controller",
    "host-label-controller",
];

fn has_controllers(dir: &Path) -> bool {
    CONTROLLERS.iter().all(|name| dir.join(name).is_file())
}

/// Where the controller binaries are.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SCALE_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let debug = Path::new(BINARY)
        .parent()
        .expect("the binary is in a directory")
        .to_owned();
    let release = debug.with_file_name("release");
    [debug, release]
        .into_iter()
        .find(|dir| has_controllers(dir))
        .unwrap_or_else(|| {
            panic!(
                "the controller binaries are not built: run `cargo build -p backup-queue-controller \
                 -p load-soothe-controller -p host-label-controller` (or set SCALE_BIN_DIR)"
            )
        })
}

#[test]
fn every_controller_is_measured_at_fifty_objects() {
    if kube_testbed::skip_requested() {
        return;
    }
    let began = Instant::now();
    let json = tempfile::NamedTempFile::new().unwrap();
    let output = Command::new(BINARY)
        .args([
            "--size=50",
            "--fractions=1",
            "--events=5",
            "--event-rate=50",
            "--slow-events=1",
            "--restart-changes=3",
            "--timeout-seconds=60",
        ])
        .arg("--bin-dir")
        .arg(bin_dir())
        .arg("--json")
        .arg(json.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "controller-scale failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    for name in CONTROLLERS {
        assert!(stdout.contains(&format!("### `{name}`")), "{stdout}");
    }
    let reports: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json.path()).unwrap()).unwrap();
    let reports = reports.as_array().unwrap();
    assert_eq!(reports.len(), 3);
    for report in reports {
        let sizes = report["sizes"].as_array().unwrap();
        assert_eq!(
            sizes
                .iter()
                .map(|s| s["size"].as_u64().unwrap())
                .collect::<Vec<_>>(),
            [50]
        );
        for size in sizes {
            // Every event's write was found in the audit log, the process
            // had a resident set, and no watch listed twice.
            for events in size["events"].as_array().unwrap() {
                assert_eq!(events["matched"], events["count"], "{report:#}");
            }
            assert!(size["memory"]["peak_kib"].as_u64().unwrap() > 0);
            assert_eq!(size["relists"], serde_json::json!({}), "{report:#}");
        }
    }
    eprintln!("{stdout}\nthe smoke run took {:?}", began.elapsed());
}
