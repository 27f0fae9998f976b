//! The global tracing subscriber installs once; a second install is an error.

use controller_kit::LogFormat;
use controller_kit::telemetry::init_tracing;

#[test]
fn json_subscriber_installs_once() {
    init_tracing(LogFormat::Json).unwrap();
    tracing::info!(answer = 42, "structured log line");
    let err = init_tracing(LogFormat::Text).unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot install the tracing subscriber"),
        "{err}"
    );
}
