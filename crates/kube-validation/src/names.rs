//! Names and label syntax (`k8s.io/apimachinery/pkg/util/validation`).
//!
//! Each `validate_*` function returns the list of problems in apimachinery's
//! wording (empty when valid); each `is_*` function is the cheap boolean form.

/// Longest name part of a qualified name (label key without its prefix).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Longest RFC 1123 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest RFC 1123 subdomain (also the longest label-key prefix).
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// apimachinery's `RegexError`: the message, examples, and the regex.
fn regex_error(message: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = format!("{message} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`: non-empty, alphanumeric at both
/// ends, `-`, `_`, `.` inside.
fn is_qualified_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            edge(first) && edge(last) && bytes.iter().all(|b| edge(b) || *b == b'-')
        }
        _ => false,
    }
}

/// RFC 1123 subdomain: dot-separated RFC 1123 labels.
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// Problems with `value` as an RFC 1123 label (`IsDNS1123Label`).
pub fn validate_dns1123_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errors.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        errors.push(regex_error(
            DNS1123_LABEL_ERR,
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errors
}

/// Whether `value` is an RFC 1123 label.
pub fn is_dns1123_label(value: &str) -> bool {
    value.len() <= DNS1123_LABEL_MAX_LENGTH && matches_dns1123_label(value)
}

/// Problems with `value` as an RFC 1123 subdomain (`IsDNS1123Subdomain`).
pub fn validate_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errors.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errors.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errors
}

/// Whether `value` is an RFC 1123 subdomain.
pub fn is_dns1123_subdomain(value: &str) -> bool {
    value.len() <= DNS1123_SUBDOMAIN_MAX_LENGTH && matches_dns1123_subdomain(value)
}

/// Problems with `name` as the name of a Namespace (`ValidateNamespaceName`,
/// which is `NameIsDNSLabel`: an RFC 1123 label).
pub fn validate_namespace_name(name: &str) -> Vec<String> {
    validate_dns1123_label(name)
}

/// Whether `name` could be the name of a Namespace (an RFC 1123 label: at
/// most 63 lowercase alphanumerics or `-`, alphanumeric at both ends).
pub fn is_namespace_name(name: &str) -> bool {
    is_dns1123_label(name)
}

/// Problems with `key` as a qualified name, the syntax of label keys
/// (`IsQualifiedName`): an optional DNS subdomain prefix and `/`, then a name
/// of at most 63 characters.
pub fn validate_qualified_name(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                errors.extend(
                    validate_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|message| format!("prefix part {message}")),
                );
            }
            *name
        }
        _ => {
            errors.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errors.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !is_qualified_name_part(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// Whether `key` is a valid label key.
pub fn is_qualified_name(key: &str) -> bool {
    match key.split_once('/') {
        None => key.len() <= QUALIFIED_NAME_MAX_LENGTH && is_qualified_name_part(key),
        Some((prefix, name)) => {
            !name.contains('/')
                && is_dns1123_subdomain(prefix)
                && name.len() <= QUALIFIED_NAME_MAX_LENGTH
                && is_qualified_name_part(name)
        }
    }
}

/// Problems with `value` as a label value (`IsValidLabelValue`): empty, or
/// at most 63 characters, alphanumeric at both ends, `-`, `_`, `.` inside.
pub fn validate_label_value(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errors.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errors.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// Whether `value` is a valid label value.
pub fn is_label_value(value: &str) -> bool {
    value.is_empty() || (value.len() <= LABEL_VALUE_MAX_LENGTH && is_qualified_name_part(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_keys_follow_apimachinery() {
        for ok in [
            "app",
            "a",
            "kubernetes.io/hostname",
            "topology.kubernetes.io/zone",
            "node.cluster.x-k8s.io/esxi-host",
            "A_b.c-D",
            "x".repeat(63).as_str(),
        ] {
            assert!(is_qualified_name(ok), "{ok}");
            assert!(validate_qualified_name(ok).is_empty(), "{ok}");
        }
        for bad in [
            "",
            "/a",
            "a/",
            "a/b/c",
            "-a",
            "a-",
            "Example.com/a",
            "a b",
            "x".repeat(64).as_str(),
        ] {
            assert!(!is_qualified_name(bad), "{bad}");
            assert!(!validate_qualified_name(bad).is_empty(), "{bad}");
        }
    }

    #[test]
    fn messages_use_apimachinery_wording() {
        assert_eq!(
            validate_qualified_name("/a"),
            vec!["prefix part must be non-empty".to_owned()]
        );
        assert_eq!(
            validate_label_value("-x"),
            vec!["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_owned()]
        );
        assert_eq!(
            validate_label_value(&"v".repeat(64)),
            vec!["must be no more than 63 characters".to_owned()]
        );
    }

    #[test]
    fn namespace_names_are_rfc_1123_labels_with_apimachinery_messages() {
        assert!(is_namespace_name("kube-system"));
        assert!(is_namespace_name("a1"));
        assert!(!is_namespace_name(""));
        assert!(!is_namespace_name("-a"));
        assert!(!is_namespace_name("A"));
        assert!(!is_namespace_name("a.b"));
        assert!(is_namespace_name(&"a".repeat(63)));
        assert!(!is_namespace_name(&"a".repeat(64)));
        assert_eq!(
            validate_namespace_name("Team_A"),
            [
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
    }

    #[test]
    fn label_values_allow_empty() {
        assert!(is_label_value(""));
        assert!(is_label_value("esx-01.lab"));
        assert!(!is_label_value("esx-01.lab."));
        assert!(!is_label_value("a/b"));
    }

    #[test]
    fn subdomains_are_lowercase_dotted_labels() {
        assert!(is_dns1123_subdomain("example.com"));
        assert!(!is_dns1123_subdomain("example..com"));
        assert!(!is_dns1123_subdomain("Example.com"));
        assert!(!is_dns1123_subdomain(&format!("{}.com", "a".repeat(250))));
        assert!(is_dns1123_label("my-name"));
        assert!(!is_dns1123_label("my.name"));
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        /// Independent oracle: the apimachinery regex, anchored, evaluated by
        /// hand over characters.
        fn regex_label_value(v: &str) -> bool {
            if v.is_empty() {
                return true;
            }
            // Go's len() counts bytes.
            let chars: Vec<char> = v.chars().collect();
            let alnum = |c: char| c.is_ascii_alphanumeric();
            let inner = chars.get(1..chars.len().saturating_sub(1)).unwrap_or(&[]);
            v.len() <= 63
                && alnum(chars[0])
                && alnum(chars[chars.len() - 1])
                && inner.iter().all(|c| alnum(*c) || "-_.".contains(*c))
        }

        proptest! {
            #[test]
            fn boolean_and_message_forms_agree(s in "[-a-zA-Z0-9_./ ]{0,70}") {
                prop_assert_eq!(is_qualified_name(&s), validate_qualified_name(&s).is_empty());
                prop_assert_eq!(is_label_value(&s), validate_label_value(&s).is_empty());
                prop_assert_eq!(is_dns1123_subdomain(&s), validate_dns1123_subdomain(&s).is_empty());
                prop_assert_eq!(is_dns1123_label(&s), validate_dns1123_label(&s).is_empty());
            }

            #[test]
            fn label_value_check_equals_the_apimachinery_regex(s in "[-a-zA-Z0-9_.é]{0,70}") {
                prop_assert_eq!(is_label_value(&s), regex_label_value(&s));
            }
        }
    }
}
