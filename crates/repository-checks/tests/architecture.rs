//! The crate graph drawn in `docs/architecture.md` is the one Cargo builds:
//! every workspace crate appears, and its arrows are exactly the normal
//! (`[dependencies]`) dependencies between workspace crates that
//! `cargo metadata` reports. Dev-dependencies (test support) are not drawn.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

type Edges = BTreeSet<(String, String)>;

/// (crates, edges) as `cargo metadata` reports them.
fn cargo_graph() -> (BTreeSet<String>, Edges) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(repository_root())
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata is JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let crates: BTreeSet<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str())
        .map(str::to_owned)
        .collect();
    let mut edges = Edges::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default();
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let target = dependency["name"].as_str().unwrap_or_default();
            if dependency["kind"].is_null() && crates.contains(target) {
                edges.insert((name.to_owned(), target.to_owned()));
            }
        }
    }
    (crates, edges)
}

/// (crates, edges) of the first ```` ```mermaid ```` block of `text`:
/// nodes written `id[crate-name]`, arrows `id --> id`.
fn drawn_graph(text: &str) -> (BTreeSet<String>, Edges) {
    let block = text
        .split("```mermaid\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/architecture.md has a mermaid crate graph");
    let node = |token: &str| -> (String, Option<String>) {
        let token = token.trim();
        match token.split_once('[') {
            Some((id, label)) => (
                id.trim().to_owned(),
                Some(label.trim_end_matches(']').trim_matches('"').to_owned()),
            ),
            None => (token.to_owned(), None),
        }
    };
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let mut arrows: Vec<(String, String)> = Vec::new();
    for line in block.lines().map(str::trim) {
        let first = line.split_whitespace().next().unwrap_or_default();
        if line.is_empty()
            || line.starts_with("%%")
            || matches!(
                first,
                "graph" | "flowchart" | "subgraph" | "end" | "direction" | "classDef" | "class"
            )
        {
            continue;
        }
        let parts: Vec<&str> = line.split("-->").collect();
        for part in &parts {
            if let (id, Some(label)) = node(part) {
                labels.insert(id, label);
            }
        }
        for pair in parts.windows(2) {
            arrows.push((node(pair[0]).0, node(pair[1]).0));
        }
    }
    let name = |id: &str| -> String {
        labels
            .get(id)
            .cloned()
            .unwrap_or_else(|| panic!("node {id} of the crate graph has no [crate-name]"))
    };
    let crates = labels.values().cloned().collect();
    let edges = arrows.iter().map(|(a, b)| (name(a), name(b))).collect();
    (crates, edges)
}

#[test]
fn the_crate_graph_in_the_architecture_document_is_the_one_cargo_builds() {
    let path = repository_root().join("docs/architecture.md");
    let text = std::fs::read_to_string(&path).expect("docs/architecture.md");
    let (drawn_crates, drawn_edges) = drawn_graph(&text);
    let (crates, edges) = cargo_graph();
    let missing: Vec<_> = crates.difference(&drawn_crates).collect();
    let unknown: Vec<_> = drawn_crates.difference(&crates).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/architecture.md's crate graph: crates not drawn {missing:?}, drawn crates that do not exist {unknown:?}"
    );
    let undrawn: Vec<String> = edges
        .difference(&drawn_edges)
        .map(|(a, b)| format!("{a} --> {b}"))
        .collect();
    let wrong: Vec<String> = drawn_edges
        .difference(&edges)
        .map(|(a, b)| format!("{a} --> {b}"))
        .collect();
    assert!(
        undrawn.is_empty() && wrong.is_empty(),
        "docs/architecture.md's crate graph differs from cargo metadata: dependencies not drawn {undrawn:?}; arrows with no such dependency {wrong:?}"
    );
}

#[test]
fn the_graph_reader_sees_nodes_arrows_and_chains() {
    let text = "x\n```mermaid\ngraph TD\n  subgraph s[\"layer\"]\n  a[alpha] --> b[beta]\n  end\n  %% note\n  c[gamma] --> a --> b\n  d[delta]\n```\n";
    let (crates, edges) = drawn_graph(text);
    assert_eq!(
        crates,
        ["alpha", "beta", "delta", "gamma"]
            .map(str::to_owned)
            .into()
    );
    let pairs = |v: &[(&str, &str)]| -> Edges {
        v.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    };
    assert_eq!(edges, pairs(&[("alpha", "beta"), ("gamma", "alpha")]));
}

/// The crates the architecture document calls pure: the policy crates, the
/// simulator, the rules, the adapters and the API types.
const PURE: &[&str] = &[
    "affinity-translate",
    "anti-affinity-placement",
    "backup-queue",
    "kube-adapters",
    "kube-scheduler-sim",
    "kube-validation",
    "load-soothe",
    "velero-api",
];

/// What only I/O needs: an async runtime, an HTTP stack, the kube client.
const IMPURE: &[&str] = &["hyper", "kube-client", "kube-runtime", "reqwest", "tokio"];

#[test]
fn pure_crates_build_without_an_async_runtime_or_a_client() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    for name in PURE {
        // `cargo tree -p` resolves features for this crate alone, as a
        // user who links only it gets them.
        let output = Command::new(&cargo)
            .args([
                "tree",
                "--offline",
                "-q",
                "-p",
                name,
                "-e",
                "normal",
                "--prefix",
                "none",
                "-f",
                "{p}",
            ])
            .current_dir(repository_root())
            .output()
            .expect("cargo runs");
        assert!(
            output.status.success(),
            "cargo tree -p {name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let tree = String::from_utf8_lossy(&output.stdout);
        let found: BTreeSet<&str> = tree
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .filter(|package| IMPURE.contains(package))
            .collect();
        assert!(
            found.is_empty(),
            "{name} is documented as pure but links {found:?}"
        );
    }
}
