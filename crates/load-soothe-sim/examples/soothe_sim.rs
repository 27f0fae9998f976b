//! Prints the load-soothe simulation table (docs/performance.md, `## load-soothe`).
//!
//! `cargo run --release -p load-soothe-sim --example soothe_sim`
//!
//! Wall-clock time per run goes to stderr (the table itself is deterministic).

use load_soothe::Mode;
use load_soothe_sim::{run, standard_scenarios, table};

fn main() {
    let mut reports = Vec::new();
    for scenario in standard_scenarios() {
        for mode in [Mode::Velero, Mode::Optimistic, Mode::Exact] {
            let started = std::time::Instant::now();
            reports.push(run(&scenario, mode));
            eprintln!("{} {mode:?}: {:.1?}", scenario.name, started.elapsed());
        }
    }
    print!("{}", table(&reports));
}
