//! `--request-timeout`: how long live mode waits for each request.
//!
//! The value reads as kubectl's (`clientcmd.ParseTimeout`): a bare
//! non-negative integer is a number of seconds; anything else is a Go
//! duration (`30s`, `1m`, `1h30m`, `1.5s`, `500ms`); `0` means no limit.
//! kubectl defaults to `0`; policyctl defaults to [`DEFAULT_REQUEST_TIMEOUT`],
//! since a report that never ends is worse than an error. Unlike Go's
//! parser, a negative duration is refused instead of meaning "no limit".

use std::time::Duration;

/// The default `--request-timeout`.
pub const DEFAULT_REQUEST_TIMEOUT: &str = "30s";

/// A `--request-timeout` value: `None` is no limit (`0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestTimeout(pub Option<Duration>);

impl Default for RequestTimeout {
    fn default() -> Self {
        Self(Some(Duration::from_secs(30)))
    }
}

impl std::fmt::Display for RequestTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            None => f.write_str("0"),
            Some(duration) => write!(f, "{duration:?}"),
        }
    }
}

impl std::str::FromStr for RequestTimeout {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || {
            format!(
                "expected a duration such as 30s, 2m or 1h30m, a number of seconds, or 0 for no limit, got {text:?}"
            )
        };
        let duration = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            Duration::from_secs(text.parse::<u64>().map_err(|_| error())?)
        } else {
            go_duration(text).ok_or_else(error)?
        };
        Ok(Self((!duration.is_zero()).then_some(duration)))
    }
}

/// A Go duration without sign (`time.ParseDuration`): one or more decimal
/// numbers, each with a unit of `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`;
/// `0` alone is zero.
fn go_duration(text: &str) -> Option<Duration> {
    let text = text.strip_prefix('+').unwrap_or(text);
    if text == "0" {
        return Some(Duration::ZERO);
    }
    if text.is_empty() {
        return None;
    }
    let mut rest = text;
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        if number.is_empty() || number == "." {
            return None;
        }
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        let nanos_per_unit: f64 = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        let value: f64 = number.parse().ok()?;
        let nanos = value * nanos_per_unit;
        if !nanos.is_finite() || nanos > u64::MAX as f64 {
            return None;
        }
        total = total.checked_add(Duration::from_nanos(nanos as u64))?;
        rest = after;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Option<Duration>, String> {
        text.parse::<RequestTimeout>().map(|timeout| timeout.0)
    }

    #[test]
    fn durations_read_as_kubectl_reads_them() {
        assert_eq!(parse("30s"), Ok(Some(Duration::from_secs(30))));
        assert_eq!(parse("1m"), Ok(Some(Duration::from_secs(60))));
        assert_eq!(parse("1h30m"), Ok(Some(Duration::from_secs(5400))));
        assert_eq!(parse("1.5s"), Ok(Some(Duration::from_millis(1500))));
        assert_eq!(parse("500ms"), Ok(Some(Duration::from_millis(500))));
        // A bare integer is seconds.
        assert_eq!(parse("45"), Ok(Some(Duration::from_secs(45))));
        // Zero, in any spelling, is no limit.
        assert_eq!(parse("0"), Ok(None));
        assert_eq!(parse("0s"), Ok(None));
        assert_eq!(
            parse(DEFAULT_REQUEST_TIMEOUT),
            Ok(RequestTimeout::default().0)
        );
    }

    #[test]
    fn other_text_is_refused() {
        for text in ["", "-1s", "-5", "s", "1x", "1.2.3s", "abc", "1 s"] {
            let error = parse(text).expect_err(text);
            assert!(error.contains("30s, 2m or 1h30m"), "{error}");
        }
    }
}
