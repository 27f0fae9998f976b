//! The examples of `docs/policyctl.md` reproduce: every ```console block
//! that runs `policyctl` on the bundled inputs (the example cluster, or
//! `-f examples/…`; no live mode) and prints a table shows exactly what
//! the command prints today.
//! JSON and YAML examples are abridged in the docs (`...`), so they are
//! left to the snapshot tests. The `vnf` examples read the files of
//! `examples/tacker`, named from the repository root.

mod common;

/// `(command line, expected standard output)` of each checked block.
fn examples() -> Vec<(String, String)> {
    let docs = include_str!("../../../docs/policyctl.md");
    let mut out = Vec::new();
    let mut lines = docs.lines();
    while let Some(line) = lines.next() {
        if line != "```console" {
            continue;
        }
        let Some(command) = lines.next() else { break };
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        let Some(command) = command.strip_prefix("$ policyctl ") else {
            continue;
        };
        let words: Vec<&str> = command.split_whitespace().collect();
        // `-f` is run when it reads a bundled example (`examples/…`).
        let reads_other_files = words
            .windows(2)
            .any(|pair| pair[0] == "-f" && !pair[1].starts_with("examples/"))
            || words.last() == Some(&"-f");
        let skipped = command.ends_with('\\')
            || reads_other_files
            || words
                .iter()
                .any(|w| matches!(*w, "-o" | "--live" | "--kubeconfig" | "--context" | "|"));
        if skipped {
            continue;
        }
        out.push((command.to_owned(), body.join("\n")));
    }
    out
}

#[test]
fn table_examples_of_the_docs_are_what_policyctl_prints() {
    // The examples name files from the repository root (`vnf --vnfd
    // examples/tacker/…`), as users run them; the others read nothing.
    std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    let examples = examples();
    assert!(
        examples.len() >= 10,
        "only {} examples found: did the docs' format change?",
        examples.len()
    );
    for (command, expected) in examples {
        assert!(
            !command.contains(['"', '\'']),
            "quoted arguments are not supported here: {command}"
        );
        let args: Vec<&str> = command.split_whitespace().collect();
        let run = common::run(&args);
        assert_eq!(
            run.stdout.trim_end_matches('\n'),
            expected,
            "docs/policyctl.md: `policyctl {command}` prints something else now; regenerate the example"
        );
    }
}
