//! `policyctl`: see the crate documentation of the library.
use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = policyctl::Cli::parse();
    let code = policyctl::run(
        cli,
        &mut std::io::stdin().lock(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    code.into()
}
