//! The built binary as a user runs it: exit codes, what reaches stdout and
//! stderr, and behaviour when stdout is closed (the checks every controller
//! binary passes, from process-testkit).

use process_testkit::{Controller, checks};

const CONTROLLER: Controller = Controller {
    bin: env!("CARGO_BIN_EXE_backup-queue-controller"),
    name: "backup-queue-controller",
    cleared_env: &[],
    run_args: &[],
};

#[test]
fn manifests_into_a_closed_pipe_exit_zero_without_a_word() {
    checks::manifests_into_a_closed_pipe_exit_zero_without_a_word(&CONTROLLER, &[]);
}

#[test]
fn manifests_refuse_an_invalid_namespace_or_image_in_one_line_with_exit_2() {
    checks::manifests_refuse_an_invalid_namespace_or_image_in_one_line_with_exit_2(&CONTROLLER);
}

#[test]
fn a_start_up_error_is_one_line_without_backtrace_unless_rust_backtrace_asks() {
    checks::a_start_up_error_is_one_line_without_backtrace_unless_rust_backtrace_asks(&CONTROLLER);
}
