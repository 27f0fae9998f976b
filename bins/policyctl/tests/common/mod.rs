//! Runs policyctl in-process, capturing standard output and error.
// Each test file uses only part of these helpers.
#![allow(dead_code)]

use clap::Parser;
use policyctl::{Cli, Exit};

/// Result of one run.
#[derive(Debug)]
pub struct Run {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `policyctl ARGS` with the given standard input. Usage errors are
/// reported the way clap reports them (exit 2, message on stderr).
pub fn run_with_stdin(args: &[&str], stdin: &str) -> Run {
    let cli = match Cli::try_parse_from(std::iter::once("policyctl").chain(args.iter().copied())) {
        Ok(cli) => cli,
        Err(error) => {
            let exit = if error.exit_code() == 2 {
                Exit::Usage
            } else {
                Exit::Success
            };
            return Run {
                exit,
                stdout: String::new(),
                stderr: error.to_string(),
            };
        }
    };
    let mut input = stdin.as_bytes();
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let exit = policyctl::run(cli, &mut input, &mut stdout, &mut stderr);
    Run {
        exit,
        stdout: String::from_utf8(stdout).expect("UTF-8 output"),
        stderr: String::from_utf8(stderr).expect("UTF-8 errors"),
    }
}

/// Runs `policyctl ARGS` with empty standard input.
pub fn run(args: &[&str]) -> Run {
    run_with_stdin(args, "")
}

/// Runs `policyctl ARGS` and insists on success.
pub fn ok(args: &[&str]) -> Run {
    let run = run(args);
    assert_eq!(
        run.exit,
        Exit::Success,
        "policyctl {args:?} failed:\n{}",
        run.stderr
    );
    run
}

/// Path of an example file, relative to this crate, as a string.
pub fn example(file: &str) -> String {
    format!(
        "{}/../../examples/cluster/{file}",
        env!("CARGO_MANIFEST_DIR")
    )
}
