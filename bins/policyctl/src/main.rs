//! `policyctl`: see the crate documentation of the library.
use clap::Parser;

fn main() -> std::process::ExitCode {
    let mut cli = policyctl::Cli::parse();
    // As `kubectl-policy` on PATH (`kubectl policy …`), live mode is the default.
    cli.global.live.kubectl_plugin =
        policyctl::live::is_kubectl_plugin(std::env::args_os().next().as_deref());
    let code = policyctl::run(
        cli,
        &mut std::io::stdin().lock(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    code.into()
}
