//! No crate of the workspace has a cycle among its modules (the rule is in
//! `repository_checks::modules`): a cycle is printed as
//! `crate: a -> b -> a` with the file and line of each dependency, so the
//! message says which `use` to move.

use repository_checks::modules::{Cycle, cycles_in, read_sources};
use repository_checks::repository_root;

/// Crates whose cycles are known and being removed, with the reason. Each
/// must still have a cycle (checked below), so that an entry does not
/// outlive its reason.
const ALLOWED: &[(&str, &str)] = &[];

#[test]
fn no_crate_has_a_module_cycle() {
    let root = repository_root();
    let mut found: Vec<Cycle> = Vec::new();
    let mut allowed_used = vec![false; ALLOWED.len()];
    let mut crates = 0;
    for parent in ["crates", "bins"] {
        let mut dirs: Vec<_> = std::fs::read_dir(root.join(parent))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|d| d.join("src").is_dir())
            .collect();
        dirs.sort();
        for dir in dirs {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let sources = read_sources(&dir.join("src")).unwrap();
            let cycles = cycles_in(&name, &format!("{parent}/{name}/src/"), &sources);
            crates += 1;
            if let Some(index) = ALLOWED.iter().position(|(c, _)| *c == name) {
                allowed_used[index] |= !cycles.is_empty();
                continue;
            }
            found.extend(cycles);
        }
    }
    assert!(
        crates > 10,
        "only {crates} crates found: is the scan still reaching crates/ and bins/?"
    );
    let list: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert!(
        found.is_empty(),
        "module cycles ({}): move what both sides need into a module of its own\n{}",
        found.len(),
        list.join("\n")
    );
    for ((krate, why), used) in ALLOWED.iter().zip(allowed_used) {
        assert!(
            used,
            "{krate} is allowed cycles ({why}) but has none: remove the exception"
        );
    }
}
