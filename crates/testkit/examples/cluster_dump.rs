//! Writes a generated `kubectl get nodes,pods -A -o json|yaml` dump to
//! stdout.
//!
//! `cargo run --release -p testkit --example cluster_dump -- json|yaml [PODS [NODES]]`
//! (default 10,000 pods on 500 nodes).

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use testkit::cluster_dump::{DumpFormat, DumpShape, write_dump};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let format = match args.first().map(String::as_str) {
        Some("json") => DumpFormat::Json,
        Some("yaml") => DumpFormat::Yaml,
        _ => {
            eprintln!("usage: cluster_dump json|yaml [PODS [NODES]]");
            return ExitCode::from(2);
        }
    };
    let number = |index: usize, default: usize| match args.get(index) {
        None => Some(default),
        Some(text) => text.parse().ok(),
    };
    let (Some(pods), Some(nodes)) = (number(1, 10_000), number(2, 500)) else {
        eprintln!("cluster_dump: PODS and NODES are whole numbers");
        return ExitCode::from(2);
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match write_dump(DumpShape::new(pods, nodes), format, &mut out).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cluster_dump: {error}");
            ExitCode::FAILURE
        }
    }
}
