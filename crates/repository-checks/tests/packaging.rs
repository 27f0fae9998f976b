//! Which crates are published, and that they can be: the published library
//! crates carry the metadata crates.io shows and the files a package needs,
//! depend only on other published crates, and every other crate is
//! `publish = false`. The file list of each package is checked with
//! `cargo package --list`, as a release would build it.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use repository_checks::repository_root;

/// The library crates published to crates.io.
const PUBLISHED: &[&str] = &[
    "affinity-translate",
    "anti-affinity-placement",
    "backup-queue",
    "kube-scheduler-sim",
    "kube-validation",
    "load-soothe",
];

/// Every workspace member: (directory relative to the root, manifest text).
fn members() -> Vec<(String, String)> {
    let root = repository_root();
    let mut out = Vec::new();
    for parent in ["crates", "bins"] {
        for entry in std::fs::read_dir(root.join(parent)).unwrap() {
            let dir = entry.unwrap().path();
            let manifest = dir.join("Cargo.toml");
            if manifest.is_file() {
                let rel = dir
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, std::fs::read_to_string(manifest).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn package_name(manifest: &str) -> &str {
    manifest
        .lines()
        .find_map(|l| l.strip_prefix("name = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("package name")
}

/// The names in a `[section]` of a manifest (`name = ...` lines).
fn section_keys<'a>(manifest: &'a str, section: &str) -> Vec<&'a str> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in manifest.lines() {
        if line.starts_with('[') {
            inside = line == section;
        } else if inside && let Some((key, _)) = line.split_once(" = ") {
            out.push(key.trim());
        }
    }
    out
}

#[test]
fn published_crates_carry_metadata_and_the_others_are_not_published() {
    let members = members();
    let names: BTreeSet<&str> = members.iter().map(|(_, m)| package_name(m)).collect();
    for published in PUBLISHED {
        assert!(
            names.contains(published),
            "{published} is not a workspace member"
        );
    }
    for (dir, manifest) in &members {
        let name = package_name(manifest);
        let not_published = manifest.lines().any(|l| l == "publish = false");
        if !PUBLISHED.contains(&name) {
            assert!(
                not_published,
                "{dir}: not in the published list, so `publish = false`"
            );
            continue;
        }
        assert!(!not_published, "{dir}: a published crate");
        for key in [
            "description = \"",
            "license.workspace = true",
            "repository.workspace = true",
            "readme = \"README.md\"",
            "keywords = [",
            "categories = [",
            &format!("documentation = \"https://docs.rs/{name}\""),
        ] {
            assert!(
                manifest.lines().any(|l| l.starts_with(key)),
                "{dir}: no `{key}…`"
            );
        }
        let root = repository_root();
        assert_eq!(
            std::fs::read(root.join(dir).join("LICENSE")).ok(),
            std::fs::read(root.join("LICENSE")).ok(),
            "{dir}/LICENSE is the workspace's license"
        );
        let lib = std::fs::read_to_string(root.join(dir).join("src/lib.rs")).unwrap();
        assert!(
            lib.contains("#[doc = include_str!(\"../README.md\")]"),
            "{dir}: the README's example runs as a doctest"
        );
        // Normal dependencies on workspace crates name published ones only.
        for dependency in section_keys(manifest, "[dependencies]") {
            if names.contains(dependency) {
                assert!(
                    PUBLISHED.contains(&dependency),
                    "{dir}: depends on {dependency}, which is not published"
                );
            }
        }
    }
}

/// `cargo package --list` of one crate, run offline (listing needs no
/// registry).
fn package_list(name: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args([
            "package",
            "--list",
            "--allow-dirty",
            "--offline",
            "-p",
            name,
        ])
        .current_dir(repository_root())
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo package --list -p {name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn packages_hold_the_crate_and_its_license_and_readme_only() {
    let root = repository_root();
    for name in PUBLISHED {
        let files = package_list(name);
        for required in [
            "Cargo.toml",
            "Cargo.toml.orig",
            "LICENSE",
            "README.md",
            "src/lib.rs",
        ] {
            assert!(
                files.iter().any(|f| f == required),
                "{name}: {required} missing from {files:?}"
            );
        }
        for file in &files {
            // Generated by cargo, or a file of the crate's own directory.
            let generated = matches!(
                file.as_str(),
                "Cargo.toml" | "Cargo.lock" | ".cargo_vcs_info.json"
            );
            let own = Path::new("crates")
                .join(name)
                .join(file.trim_end_matches(".orig"));
            assert!(
                generated || root.join(&own).is_file(),
                "{name}: {file} is not in crates/{name}"
            );
            assert!(
                !file.ends_with(".snap.new") && !file.ends_with(".pending-snap"),
                "{name}: {file} is a pending snapshot"
            );
        }
    }
}
