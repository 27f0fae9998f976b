//! `--help` of the commands whose tables cite Velero rules says where the
//! identifiers resolve.

use policyctl::Cli;

fn long_help(path: &[&str]) -> String {
    // As users see it: the options a command does not read are hidden.
    let mut command = Cli::command_line(None);
    let mut current = &mut command;
    for name in path {
        current = current
            .find_subcommand_mut(name)
            .unwrap_or_else(|| panic!("no subcommand {name}"));
    }
    current.render_long_help().to_string()
}

#[test]
fn config_check_help_says_where_rule_identifiers_resolve() {
    let help = long_help(&["config", "check"]);
    assert!(help.contains("docs/behaviour/velero.md#a2-15"), "{help}");
    insta::assert_snapshot!(help);
}

#[test]
fn report_help_says_where_rule_identifiers_resolve() {
    let help = long_help(&["report"]);
    assert!(help.contains("docs/behaviour/velero.md#a2-15"), "{help}");
    insta::assert_snapshot!(help);
}
