//! Prints the load-soothe simulation table (docs/performance.md, `## load-soothe`).
//!
//! `cargo run --release -p load-soothe-sim --example soothe_sim`
//!
//! Wall-clock time per run goes to stderr (the table itself is deterministic).

use load_soothe_sim::{RUNS, run_with, standard_scenarios, table};

fn main() {
    let mut reports = Vec::new();
    for scenario in standard_scenarios() {
        for (mode, style) in RUNS {
            let started = std::time::Instant::now();
            reports.push(run_with(&scenario, mode, style));
            eprintln!(
                "{} {mode:?} {}: {:.1?}",
                scenario.name,
                style.label(),
                started.elapsed()
            );
        }
    }
    print!("{}", table(&reports));
}
