//! The page of `report -o html` for a large cluster: a 10,000-pod,
//! 500-node dump (with the bundled example's objects), built by the
//! release `policyctl`, then loaded five times in headless Chromium.
//! Targets: under 5 MB, and under 2 s to load (the best of five: the
//! machine may be shared).
//!
//! ```text
//! bash .ci/browser-deps.sh && cargo bench -p policyctl --bench html_page
//! ```

#[path = "../tests/browser_support/mod.rs"]
mod browser_support;

use browser_support::{node, policyctl, require_browser, scratch};
use testkit::cluster_dump::{DumpFormat, DumpShape, write_dump};

/// The file size target, bytes.
const SIZE_TARGET: u64 = 5_000_000;
/// The load time target, milliseconds.
const LOAD_TARGET_MS: u64 = 2_000;

fn main() {
    require_browser();
    let dir = scratch("large");
    let dump = dir.join("dump.json");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&dump).expect("dump file"));
        write_dump(DumpShape::new(10_000, 500), DumpFormat::Json, &mut file).expect("dump written");
    }
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/cluster");
    let page = dir.join("report.html");
    policyctl(
        &[
            "-f",
            examples,
            "-f",
            dump.to_str().expect("UTF-8 path"),
            "report",
            "-o",
            "html",
        ],
        &page,
    );
    let bytes = std::fs::metadata(&page).expect("page written").len();
    let out = node(&["timing", page.to_str().expect("UTF-8 path")]);
    let timing: serde_json::Value = serde_json::from_str(out.trim()).expect("timing JSON");
    let runs: Vec<u64> = timing["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter_map(|run| run["wallMs"].as_u64())
        .collect();
    let best = runs.iter().copied().min().expect("a run");
    let verdict = |ok: bool| if ok { "meets" } else { "MISSES" };
    println!("| measure | value | target |");
    println!("|---|--:|---|");
    println!(
        "| page size, 10,000 pods / 500 nodes | {bytes} bytes | < {SIZE_TARGET} ({}) |",
        verdict(bytes < SIZE_TARGET)
    );
    println!(
        "| load in headless Chromium, best of {} (all: {runs:?} ms) | {best} ms | < {LOAD_TARGET_MS} ms ({}) |",
        runs.len(),
        verdict(best < LOAD_TARGET_MS)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
