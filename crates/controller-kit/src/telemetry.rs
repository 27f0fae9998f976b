//! Tracing setup: `RUST_LOG`-style filtering (default `info`) and text or JSON output.

use std::io::IsTerminal as _;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::args::LogFormat;
use crate::error::Error;

/// The filter used when `RUST_LOG` is unset or invalid.
pub const DEFAULT_FILTER: &str = "info";

/// Whether log lines carry ANSI colours: only when stderr is a terminal and
/// `NO_COLOR` is unset or empty (<https://no-color.org>). A log file or a
/// pipe to a collector never gets escape sequences.
pub fn colour_logs() -> bool {
    colour_for(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    )
}

fn colour_for(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Installs the global tracing subscriber writing to stderr in `format`
/// (`json`: one [`JsonLines`] object a line),
/// filtered by `RUST_LOG` (default [`DEFAULT_FILTER`]), coloured only as
/// [`colour_logs`] says. A log line that cannot be written (stderr closed)
/// is dropped instead of reported, since reporting it would need stderr
/// too. Fails if a global subscriber is already installed.
pub fn init_tracing(format: LogFormat) -> Result<(), Error> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour_logs())
        .log_internal_errors(false)
        .with_writer(std::io::stderr);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.event_format(JsonLines).try_init(),
    };
    result.map_err(|e| Error::Tracing(e.to_string()))
}

/// The envelope keys of a JSON log line, written by the formatter itself.
pub const ENVELOPE_KEYS: [&str; 4] = ["timestamp", "level", "target", "spans"];

/// The `--log-format json` event format: one JSON object a line, with the
/// envelope ([`ENVELOPE_KEYS`]: `timestamp` (RFC 3339, UTC), `level`,
/// `target`, and `spans`, the names of the enclosing spans outermost
/// first, when there are any), the `message` and the event's fields at the
/// top level.
///
/// Each key appears once: an event field named like an envelope key is
/// written as `field.NAME`. Numbers and booleans are JSON numbers and
/// booleans; every other value (`%` and `?` fields) is a JSON string.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let spans: Vec<String> = ctx
            .event_scope()
            .map(|scope| {
                scope
                    .from_root()
                    .map(|span| span.name().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        let line = json_line(jiff::Timestamp::now(), event, &spans);
        writeln!(writer, "{line}")
    }
}

/// One log line of [`JsonLines`], without its newline.
fn json_line(now: jiff::Timestamp, event: &Event<'_>, spans: &[String]) -> String {
    let metadata = event.metadata();
    let mut line = Map::new();
    line.insert("timestamp".into(), Value::String(now.to_string()));
    line.insert("level".into(), Value::String(metadata.level().to_string()));
    line.insert("target".into(), Value::String(metadata.target().to_owned()));
    if !spans.is_empty() {
        line.insert(
            "spans".into(),
            Value::Array(spans.iter().cloned().map(Value::String).collect()),
        );
    }
    let mut fields = Fields(Vec::new());
    event.record(&mut fields);
    for (name, value) in fields.0 {
        let key = if ENVELOPE_KEYS.contains(&name.as_str()) {
            format!("field.{name}")
        } else {
            name
        };
        line.insert(key, value);
    }
    Value::Object(line).to_string()
}

/// The fields of an event as JSON values, in the order recorded.
struct Fields(Vec<(String, Value)>);

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        self.0.push((field.name().to_owned(), value));
    }
}

impl Visit for Fields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        let value = serde_json::Number::from_f64(value)
            .map_or_else(|| Value::String(value.to_string()), Value::Number);
        self.put(field, value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::String(value.to_owned()));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::String(crate::process::error_line(value)));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }
}

#[cfg(test)]
mod tests {
    use super::colour_for;
    use std::ffi::OsStr;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour_for(true, None));
        assert!(colour_for(true, Some(OsStr::new(""))));
        assert!(!colour_for(true, Some(OsStr::new("1"))));
        assert!(!colour_for(false, None));
    }
}

/// Log lines of the current thread captured in memory in the
/// `--log-format json` format ([`JsonLines`], every level), until dropped:
/// lets tests of a controller (on a current-thread runtime) read what it
/// logs.
pub struct CapturedLogs {
    buffer: Arc<Mutex<Vec<u8>>>,
    _guard: tracing::subscriber::DefaultGuard,
}

impl CapturedLogs {
    /// Starts capturing on this thread.
    pub fn start() -> Self {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buffer);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .event_format(JsonLines)
            .with_writer(move || Sink(Arc::clone(&sink)))
            .finish();
        let guard = tracing::subscriber::set_default(subscriber);
        Self {
            buffer,
            _guard: guard,
        }
    }

    /// The lines so far.
    pub fn lines(&self) -> Vec<String> {
        let bytes = self
            .buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// How many keys the JSON object `line` has at its top level, repeats
/// included (a parsed map keeps one of each), so a test of captured JSON
/// log lines can check that no key is written twice.
pub fn top_level_key_count(line: &str) -> usize {
    let (mut depth, mut in_string, mut escaped, mut keys) = (0usize, false, false, 0);
    for c in line.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => depth = depth.saturating_sub(1),
            ':' if depth == 1 => keys += 1,
            _ => {}
        }
    }
    keys
}

/// The writer of [`CapturedLogs`].
struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod json_lines {
    use serde_json::Value;

    use super::CapturedLogs;

    /// Log lines written while `emit` runs.
    fn lines_of(emit: impl FnOnce()) -> Vec<String> {
        let logs = CapturedLogs::start();
        emit();
        logs.lines()
    }

    #[test]
    fn every_key_appears_once_even_when_a_field_is_named_like_the_envelope() {
        let subresource = "status";
        let lines = lines_of(|| tracing::info!(target = %subresource, level = 3, "would patch"));
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        for key in ["\"target\":", "\"level\":", "\"message\":"] {
            assert_eq!(line.matches(key).count(), 1, "{line}");
        }
        let value: Value = serde_json::from_str(line).unwrap();
        assert_eq!(value["target"], "controller_kit::telemetry::json_lines");
        assert_eq!(value["field.target"], "status");
        assert_eq!(value["field.level"], 3);
        assert_eq!(value["level"], "INFO");
        assert_eq!(value["message"], "would patch");
    }

    #[test]
    fn numbers_and_booleans_are_json_values_and_absent_options_are_left_out() {
        let host: Option<&str> = None;
        let lines = lines_of(|| {
            tracing::info!(
                from = 2u32,
                to = 1u32,
                dry_run = true,
                ratio = 0.5,
                node = "n1",
                host,
                "moved"
            );
        });
        let value: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(value["from"], 2);
        assert_eq!(value["to"], 1);
        assert_eq!(value["dry_run"], true);
        assert_eq!(value["ratio"], 0.5);
        assert_eq!(value["node"], "n1");
        assert!(value.get("host").is_none(), "{value}");
        assert!(
            value["timestamp"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z'))
        );
    }
}
