//! `policyctl concurrency` on a generated `kubectl get nodes,pods -A` dump of
//! a large cluster, next to the baselines of the same run: CPython's
//! `json.load` on the JSON file and PyYAML's C loader (`CSafeLoader`) on the
//! YAML file. Reports wall time (median of the runs), the ratio to the
//! baseline and the peak resident memory of each process.
//!
//! `cargo bench -p policyctl --bench read_dump [-- PODS NODES RUNS]`
//! (default 10,000 pods on 500 nodes, 3 runs; needs `python3`, and PyYAML
//! with its C loader for the YAML baseline, which is skipped otherwise).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use testkit::cluster_dump::{DumpFormat, DumpShape, write_dump};

/// One finished process: wall time and peak resident memory.
struct Measured {
    wall: Duration,
    max_rss_bytes: u64,
}

/// Runs `program args...` to completion with its output discarded, under a
/// small Python wrapper that times it and reads the child's peak resident
/// memory from `getrusage` (so this file needs no unsafe code).
fn measure(program: &str, args: &[String]) -> Result<Measured, String> {
    const WRAPPER: &str = "import resource, subprocess, sys, time\n\
        t = time.perf_counter()\n\
        code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n\
        wall = time.perf_counter() - t\n\
        print(code, wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)";
    let output = Command::new("python3")
        .arg("-c")
        .arg(WRAPPER)
        .arg(program)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|error| format!("python3: {error}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let fields: Vec<&str> = text.split_whitespace().collect();
    let [code, wall, rss_kib] = fields[..] else {
        return Err(format!("{program}: unexpected measurement {text:?}"));
    };
    if code != "0" {
        return Err(format!("{program} {args:?} exited with {code}"));
    }
    let wall: f64 = wall.parse().map_err(|_| format!("bad time {wall:?}"))?;
    let rss_kib: u64 = rss_kib
        .parse()
        .map_err(|_| format!("bad RSS {rss_kib:?}"))?;
    Ok(Measured {
        wall: Duration::from_secs_f64(wall),
        max_rss_bytes: rss_kib * 1024,
    })
}

/// The median run of `runs`.
fn median_of(runs: usize, program: &str, args: &[String]) -> Result<Measured, String> {
    let mut all = Vec::new();
    for _ in 0..runs {
        all.push(measure(program, args)?);
    }
    all.sort_by_key(|m| m.wall);
    Ok(all.swap_remove(all.len() / 2))
}

fn python(code: &str, file: &Path) -> (&'static str, Vec<String>) {
    (
        "python3",
        vec!["-c".to_owned(), code.to_owned(), file.display().to_string()],
    )
}

fn policyctl(file: &Path) -> (&'static str, Vec<String>) {
    let args = ["concurrency", "-o", "json", "-f"]
        .into_iter()
        .map(str::to_owned)
        .chain([file.display().to_string()])
        .collect();
    (env!("CARGO_BIN_EXE_policyctl"), args)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn report(what: &str, file_bytes: u64, ours: &Measured, baseline: &Measured, baseline_name: &str) {
    println!(
        "{what}: file {:.0} MiB; policyctl {:.2} s, max RSS {:.0} MiB ({:.2}x the file); {baseline_name} {:.2} s, max RSS {:.0} MiB; time ratio policyctl/{baseline_name} = {:.3}",
        mib(file_bytes),
        ours.wall.as_secs_f64(),
        mib(ours.max_rss_bytes),
        ours.max_rss_bytes as f64 / file_bytes as f64,
        baseline.wall.as_secs_f64(),
        mib(baseline.max_rss_bytes),
        ours.wall.as_secs_f64() / baseline.wall.as_secs_f64(),
    );
}

fn write(path: &Path, shape: DumpShape, format: DumpFormat) -> Result<u64, String> {
    let file =
        std::fs::File::create(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    write_dump(shape, format, &mut out).map_err(|error| error.to_string())?;
    drop(out);
    Ok(std::fs::metadata(path)
        .map_err(|error| error.to_string())?
        .len())
}

fn run() -> Result<(), String> {
    // `cargo bench` passes `--bench`; the numbers are ours.
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|arg| arg.parse().ok())
        .collect();
    let pods = numbers.first().copied().unwrap_or(10_000);
    let nodes = numbers.get(1).copied().unwrap_or(500);
    let runs = numbers.get(2).copied().unwrap_or(3).max(1);
    let shape = DumpShape::new(pods, nodes);
    let directory =
        std::env::temp_dir().join(format!("policyctl-read-dump-{}", std::process::id()));
    std::fs::create_dir_all(&directory).map_err(|error| error.to_string())?;
    let json = directory.join("cluster.json");
    let yaml = directory.join("cluster.yaml");
    println!("{pods} pods on {nodes} nodes, median of {runs} run(s)");

    let json_bytes = write(&json, shape, DumpFormat::Json)?;
    let (program, args) = policyctl(&json);
    let ours = median_of(runs, program, &args)?;
    let (program, args) = python(
        "import json, sys; json.load(open(sys.argv[1], 'rb'))",
        &json,
    );
    let baseline = median_of(runs, program, &args)?;
    report("JSON", json_bytes, &ours, &baseline, "CPython json.load");
    std::fs::remove_file(&json).map_err(|error| error.to_string())?;

    let yaml_bytes = write(&yaml, shape, DumpFormat::Yaml)?;
    let (program, args) = policyctl(&yaml);
    let ours = median_of(runs, program, &args)?;
    let has_c_loader = Command::new("python3")
        .args(["-c", "import yaml; yaml.CSafeLoader"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if has_c_loader {
        // PyYAML's C loader takes minutes on this size: one run.
        let (program, args) = python(
            "import sys, yaml; yaml.load(open(sys.argv[1], 'rb'), Loader=yaml.CSafeLoader)",
            &yaml,
        );
        let baseline = measure(program, &args)?;
        report("YAML", yaml_bytes, &ours, &baseline, "PyYAML CSafeLoader");
    } else {
        println!(
            "YAML: file {:.0} MiB; policyctl {:.2} s, max RSS {:.0} MiB; PyYAML with its C loader is not installed: no baseline",
            mib(yaml_bytes),
            ours.wall.as_secs_f64(),
            mib(ours.max_rss_bytes)
        );
    }
    std::fs::remove_dir_all(&directory).map_err(|error| error.to_string())?;
    Ok(())
}

fn main() {
    if let Err(error) = run() {
        eprintln!("read_dump: {error}");
        std::process::exit(1);
    }
}
