//! `policyctl`: see the crate documentation of the library.
fn main() -> std::process::ExitCode {
    let mut cli = policyctl::Cli::from_program_args();
    // As `kubectl-policy` on PATH (`kubectl policy …`), live mode is the default.
    cli.global.live.kubectl_plugin =
        policyctl::plugin::is_kubectl_plugin(std::env::args_os().next().as_deref());
    // Deeply nested input (up to the reader's depth limit) recurses in the
    // parser and the decoders: run on a thread whose stack is sized for it
    // on every platform, not on the main thread's platform default.
    let worker = std::thread::Builder::new()
        .name("policyctl".to_owned())
        .stack_size(policyctl::STACK_BYTES)
        .spawn(move || {
            policyctl::run(
                cli,
                &mut std::io::stdin().lock(),
                &mut std::io::stdout().lock(),
                &mut std::io::stderr().lock(),
            )
        });
    match worker.map(std::thread::JoinHandle::join) {
        Ok(Ok(exit)) => exit.into(),
        // The panic message is already on standard error; a thread that
        // cannot start is reported here.
        Ok(Err(_)) => std::process::ExitCode::from(101),
        Err(error) => {
            eprintln!("error: cannot start: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
