//! Host names → label values.
//!
//! [`capv_sanitize`] is CAPV's `SanitizeHostInfoLabel` (B.2), kept exactly,
//! including the inputs for which its result is not a valid label value
//! (B.3: CAPV then refuses to label). [`sanitize_label_value`] always yields a
//! valid label value:
//!
//! 1. If CAPV's result is valid and CAPV did not shorten the name, it is used
//!    unchanged — the same value CAPV writes, so both can coexist.
//! 2. Otherwise the value is *repaired*: start from CAPV's form before any
//!    shortening (IPv6 with `-` and `.ipv6-literal`, anything else as given),
//!    replace every character outside `[A-Za-z0-9._-]` by `-`, shorten to 54
//!    characters (dropping trailing dot-separated segments while one remains,
//!    then cutting), trim non-alphanumeric characters at both ends, and append
//!    `-` and 8 lowercase hex digits of the 64-bit FNV-1a hash of the
//!    **original** input (folded to 32 bits). If nothing is left before the
//!    suffix, the value is the 8 hex digits alone.
//!
//! The hash makes repaired values collision-aware: two different host names
//! that shorten or repair to the same text still get different values (up to
//! a 32-bit hash collision), where CAPV's segment dropping would merge
//! `esx1.rack1.<long domain>` and `esx1.rack1.<other long domain>`.
//! The function is deterministic, is the identity on valid label values, and
//! is idempotent.

use std::net::IpAddr;

use kube_validation::{LABEL_VALUE_MAX_LENGTH, is_label_value};
use serde::Serialize;

const IPV6_SUFFIX: &str = ".ipv6-literal";
/// Room left for the prefix of a repaired value: 63 − "-" − 8 hex digits.
const REPAIRED_PREFIX_MAX: usize = LABEL_VALUE_MAX_LENGTH - 9;

/// CAPV's form of a host name; `shortened` says whether CAPV dropped part of
/// a long name.
struct CapvForm {
    value: String,
    /// The value before CAPV's shortening (IPs are never shortened).
    unshortened: String,
    shortened: bool,
}

fn capv_form(info: &str) -> CapvForm {
    let without_zone = info.rfind('%').map_or(info, |i| &info[..i]);
    if let Ok(ip) = without_zone.parse::<IpAddr>() {
        let value = match ip {
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
                format!("{}{IPV6_SUFFIX}", without_zone.replace(':', "-"))
            }
            _ => without_zone.to_owned(),
        };
        return CapvForm {
            unshortened: value.clone(),
            value,
            shortened: false,
        };
    }
    let value = shorten(info, LABEL_VALUE_MAX_LENGTH);
    CapvForm {
        shortened: value.len() != info.len(),
        value,
        unshortened: info.to_owned(),
    }
}

/// CAPV's `truncateLabelLength`: drop trailing `.`-segments until the text
/// fits in `max` bytes; with no dot left, cut at `max` bytes.
fn shorten(text: &str, max: usize) -> String {
    let mut text = text;
    if text.len() <= max {
        return text.to_owned();
    }
    loop {
        match text.rfind('.') {
            None => return cut(text, max).to_owned(),
            Some(pos) => {
                text = &text[..pos];
                if text.len() <= max {
                    return text.to_owned();
                }
            }
        }
    }
}

/// The longest prefix of at most `max` bytes that ends on a char boundary.
fn cut(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// CAPV's `SanitizeHostInfoLabel` (B.2), unchanged: the result may be an
/// invalid label value (B.3), e.g. `::1` → `--1.ipv6-literal`.
pub fn capv_sanitize(info: &str) -> String {
    capv_form(info).value
}

fn fnv1a_32(text: &str) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // Fold to 32 bits; truncation is the intent.
    ((hash >> 32) ^ (hash & 0xffff_ffff)) as u32
}

/// A valid label value naming the host `raw` (see the module docs for the
/// exact rules). Never fails.
pub fn sanitize_label_value(raw: &str) -> String {
    let capv = capv_form(raw);
    if !capv.shortened && is_label_value(&capv.value) {
        return capv.value;
    }
    let cleaned: String = capv
        .unshortened
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let shortened = shorten(&cleaned, REPAIRED_PREFIX_MAX);
    let prefix = shortened.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let hash = fnv1a_32(raw);
    if prefix.is_empty() {
        format!("{hash:08x}")
    } else {
        format!("{prefix}-{hash:08x}")
    }
}

/// Output of `host-labels sanitize VALUE`: `{value, valid}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sanitized {
    /// The label value.
    pub value: String,
    /// Whether it is a valid label value (always true; checked, not assumed).
    pub valid: bool,
}

/// [`sanitize_label_value`] with its validity checked by `kube-validation`.
pub fn sanitize(raw: &str) -> Sanitized {
    let value = sanitize_label_value(raw);
    let valid = is_label_value(&value);
    Sanitized { value, valid }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capv_examples_b2_b3() {
        assert_eq!(capv_sanitize("10.0.0.1"), "10.0.0.1");
        assert_eq!(capv_sanitize("fe80::1%eth0"), "fe80--1.ipv6-literal");
        assert_eq!(capv_sanitize("2001:db8::10"), "2001-db8--10.ipv6-literal");
        assert_eq!(capv_sanitize("::1"), "--1.ipv6-literal");
        assert_eq!(capv_sanitize("::ffff:10.0.0.1"), "::ffff:10.0.0.1");
        let long = format!("esx1.{}.example.com", "a".repeat(60));
        assert_eq!(capv_sanitize(&long), "esx1");
        let no_dot = "b".repeat(70);
        assert_eq!(capv_sanitize(&no_dot), "b".repeat(63));
        // Zone stripping applies only to IPs; a name keeps its '%'.
        assert_eq!(capv_sanitize("esx%1"), "esx%1");
    }

    #[test]
    fn valid_capv_values_are_kept() {
        for raw in [
            "esx1.lab.local",
            "10.0.0.1",
            "2001:db8::10",
            "fe80::1%eth0",
            "",
        ] {
            assert_eq!(sanitize_label_value(raw), capv_sanitize(raw), "{raw}");
        }
    }

    #[test]
    fn values_capv_rejects_are_repaired_with_a_hash() {
        let loopback = sanitize_label_value("::1");
        assert!(loopback.starts_with("1.ipv6-literal-"), "{loopback}");
        assert!(is_label_value(&loopback));
        let mapped = sanitize_label_value("::ffff:10.0.0.1");
        assert!(mapped.starts_with("ffff-10.0.0.1-"), "{mapped}");
        assert!(is_label_value(&mapped));
        assert_eq!(sanitize_label_value("%%%").len(), 8);
    }

    #[test]
    fn long_names_sharing_a_prefix_stay_distinct() {
        let a = format!("esx1.rack1.{}.example.com", "x".repeat(60));
        let b = format!("esx1.rack1.{}.example.org", "x".repeat(60));
        assert_eq!(capv_sanitize(&a), capv_sanitize(&b));
        assert_ne!(sanitize_label_value(&a), sanitize_label_value(&b));
        assert!(sanitize_label_value(&a).starts_with("esx1.rack1-"));
    }

    #[test]
    fn sanitize_reports_validity() {
        assert_eq!(
            sanitize("esx1"),
            Sanitized {
                value: "esx1".into(),
                valid: true
            }
        );
    }
}
