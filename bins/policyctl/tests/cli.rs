//! Command-line behaviour: input handling, exit codes, error messages, and
//! snapshots of every command's output on the example cluster.

mod common;

use clap::CommandFactory;
use common::{ok, run, run_with_stdin};
use policyctl::{Cli, Exit};

#[test]
fn command_line_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn report_without_input_uses_the_bundled_example_cluster() {
    let run = ok(&["report"]);
    assert!(
        run.stderr
            .contains("note: no -f given: using the example cluster bundled in policyctl"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("== Input objects =="), "{}", run.stdout);
}

#[test]
fn the_bundled_cluster_equals_the_example_files() {
    for (name, text) in policyctl::bundled::EXAMPLE_CLUSTER {
        let path = format!("{}/../../{name}", env!("CARGO_MANIFEST_DIR"));
        let on_disk = std::fs::read_to_string(&path).expect("example file exists");
        assert_eq!(&on_disk, text, "{name}");
    }
    let files: Vec<String> = std::fs::read_dir(format!(
        "{}/../../examples/cluster",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("examples/cluster exists")
    .map(|entry| {
        entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned()
    })
    .collect();
    for file in files {
        let name = format!("examples/cluster/{file}");
        assert!(
            policyctl::bundled::EXAMPLE_CLUSTER
                .iter()
                .any(|(bundled, _)| *bundled == name),
            "{name} is not bundled"
        );
    }
}

#[test]
fn reading_every_example_file_with_dash_f_equals_the_bundled_input() {
    let mut args: Vec<String> = Vec::new();
    for (name, _) in policyctl::bundled::EXAMPLE_CLUSTER {
        args.push("-f".into());
        args.push(format!("{}/../../{name}", env!("CARGO_MANIFEST_DIR")));
    }
    args.extend(["report".into(), "-o".into(), "json".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(ok(&args).stdout, ok(&["report", "-o", "json"]).stdout);
}

#[test]
fn same_input_gives_byte_identical_output() {
    for format in ["table", "json", "yaml"] {
        assert_eq!(
            ok(&["report", "-o", format]).stdout,
            ok(&["report", "-o", format]).stdout
        );
    }
}

#[test]
fn standard_input_is_read_for_dash() {
    let run = run_with_stdin(
        &["-f", "-", "report", "-o", "json"],
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n",
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    assert!(run.stdout.contains("\"Node\": 1"), "{}", run.stdout);
    assert!(!run.stderr.contains("bundled"), "{}", run.stderr);
}

#[test]
fn bad_yaml_exits_1_naming_the_file() {
    let run = run_with_stdin(&["-f", "-", "report"], "apiVersion: v1\nkind: [Node\n");
    assert_eq!(run.exit, Exit::Failure);
    assert_eq!(
        run.stderr,
        "error: -, document 1, line 2, column 7: not valid YAML: unclosed bracket '['\n"
    );
    assert!(run.stdout.is_empty());
}

#[test]
fn wrong_field_type_exits_1_naming_document_path_and_value() {
    let run = run_with_stdin(
        &["-f", "-", "report"],
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n\
         apiVersion: velero.io/v2alpha1\nkind: DataUpload\nmetadata: {name: du, namespace: velero}\n\
         spec: {csiSnapshot: {storageClass: [fast]}}\n",
    );
    assert_eq!(run.exit, Exit::Failure);
    assert_eq!(
        run.stderr,
        "error: -, document 2: DataUpload velero/du: field `spec.csiSnapshot.storageClass`: \
         invalid type: sequence, expected a string (offending value: [\"fast\"])\n"
    );
}

#[test]
fn missing_file_exits_1() {
    let run = run(&["-f", "/nonexistent/cluster.yaml", "report"]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr
            .starts_with("error: /nonexistent/cluster.yaml: cannot read the file: "),
        "{}",
        run.stderr
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&["no-such-command"]).exit, Exit::Usage);
    assert_eq!(run(&["report", "-o", "xml"]).exit, Exit::Usage);
    assert_eq!(Exit::Usage.code(), 2);
    assert_eq!(Exit::Failure.code(), 1);
}

#[test]
fn ignored_kinds_are_noted_on_stderr() {
    let input = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: agent, namespace: ops}\n";
    let run = run_with_stdin(&["-f", "-", "report"], input);
    let note = "note: ignored 1 object of kind batch/v1 Job (first in -, document 1): policyctl does not use this kind\n";
    assert!(run.stderr.contains(note), "{}", run.stderr);
}
