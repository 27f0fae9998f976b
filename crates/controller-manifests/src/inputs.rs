//! Validation of what a user passes to a `manifests` subcommand: the
//! namespace (an RFC 1123 label, as the API server requires of a
//! Namespace's name) and the container image (a reference in the grammar
//! of `github.com/distribution/reference`, `reference.go`, the parser
//! container runtimes use to pull it). Generated manifests that a cluster
//! or a runtime would refuse are refused here, naming the flag.

use crate::error::Error;

/// Longest repository name (`NameTotalLengthMax` in distribution/reference).
pub const NAME_TOTAL_LENGTH_MAX: usize = 255;

/// Checks `--namespace`: an RFC 1123 label (`ValidateNamespaceName`).
pub fn validate_namespace(flag: &'static str, namespace: &str) -> Result<(), Error> {
    let problems = kube_validation::validate_namespace_name(namespace);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::InvalidInput {
            flag,
            value: namespace.to_owned(),
            problem: problems.join("; "),
        })
    }
}

/// Checks `--image`: `[domain[:port]/]path[:tag][@digest]` as
/// distribution/reference's `ReferenceRegexp` (`reference.go`, grammar in
/// its package comment): lowercase path components separated by `.`, `_`,
/// `__` or dashes; a tag of at most 128 word characters, dots and dashes
/// not starting with either; a digest the way go-digest validates it; the
/// name at most 255 characters.
pub fn validate_image(flag: &'static str, image: &str) -> Result<(), Error> {
    image_problem(image).map_or(Ok(()), |problem| {
        Err(Error::InvalidInput {
            flag,
            value: image.to_owned(),
            problem: problem.to_owned(),
        })
    })
}

fn image_problem(image: &str) -> Option<&'static str> {
    if image.is_empty() {
        return Some("an image reference must not be empty");
    }
    let (rest, digest) = match image.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (image, None),
    };
    if let Some(digest) = digest
        && !is_digest(digest)
    {
        return Some(
            "invalid digest: expected sha256:, sha384: or sha512: and 64, 96 or 128 lowercase hexadecimal digits",
        );
    }
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    if let Some(tag) = tag
        && !is_tag(tag)
    {
        return Some(
            "invalid tag: at most 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'",
        );
    }
    if name.len() > NAME_TOTAL_LENGTH_MAX {
        return Some("repository name must not be longer than 255 characters");
    }
    let mut components: Vec<&str> = name.split('/').collect();
    if components.len() > 1 && is_domain(components[0]) {
        components.remove(0);
    }
    if components.iter().all(|c| is_path_component(c)) {
        return None;
    }
    if name.chars().any(|c| c.is_ascii_uppercase()) {
        return Some("repository name must be lowercase");
    }
    Some(
        "invalid reference format: expected [REGISTRY[:PORT]/]NAME[:TAG][@DIGEST] with lowercase path components",
    )
}

/// `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
fn is_path_component(s: &str) -> bool {
    let bytes = s.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let mut i = 0;
    let mut need_alnum = true;
    while i < bytes.len() {
        if need_alnum {
            if !alnum(bytes[i]) {
                return false;
            }
            while i < bytes.len() && alnum(bytes[i]) {
                i += 1;
            }
            need_alnum = false;
        } else {
            let sep_start = i;
            match bytes[i] {
                b'.' => i += 1,
                b'_' => {
                    i += 1;
                    if i < bytes.len() && bytes[i] == b'_' {
                        i += 1;
                    }
                }
                b'-' => {
                    while i < bytes.len() && bytes[i] == b'-' {
                        i += 1;
                    }
                }
                _ => return false,
            }
            debug_assert!(i > sep_start);
            need_alnum = true;
        }
    }
    !need_alnum
}

/// `host[:port]`, host a dotted domain name or a bracketed IPv6 address.
fn is_domain(s: &str) -> bool {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        if v6.is_empty() || !v6.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return false;
        }
        match after.strip_prefix(':') {
            Some(port) => ("", Some(port)),
            None if after.is_empty() => ("", None),
            None => return false,
        }
    } else {
        match s.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (s, None),
        }
    };
    let host_ok = s.starts_with('[')
        || (!host.is_empty()
            && host.split('.').all(|c| {
                !c.is_empty()
                    && c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-')
                    && !c.starts_with('-')
                    && !c.ends_with('-')
            }));
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    host_ok && port_ok
}

/// `[\w][\w.-]{0,127}`
fn is_tag(s: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut chars = s.chars();
    chars.next().is_some_and(word)
        && s.len() <= 128
        && chars.all(|c| word(c) || c == '.' || c == '-')
}

/// A digest `reference.Parse` accepts: the grammar's
/// `algorithm:hex`, then go-digest's `Validate`, which knows `sha256`,
/// `sha384` and `sha512` with 64, 96 or 128 lowercase hexadecimal digits.
fn is_digest(s: &str) -> bool {
    let Some((algorithm, hex)) = s.split_once(':') else {
        return false;
    };
    let length = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == length
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Cases from distribution/reference's reference_test.go
    // (TestReferenceParse) that decide validity.
    #[test]
    fn accepts_what_distribution_reference_parses() {
        for ok in [
            "test_com",
            "test.com:tag",
            "test.com:5000",
            "test.com/repo:tag",
            "test:5000/repo",
            "test:5000/repo:tag",
            "test:5000/repo@sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            "test:5000/repo:tag@sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            "lowercase:Uppercase",
            "sub-dom1.foo.com/bar/baz/quux",
            "a/a/a/a",
            "foo_bar.com:8080",
            "foo/foo_bar.com:8080",
            "[2001:db8::1]:5000/repo",
            "xn--n3h.com/myimage:xn--n3h.com",
            "ghcr.io/placement-policies/backup-queue-controller:0.1.0",
            "Foo.example.com/repo",
        ] {
            assert_eq!(image_problem(ok), None, "{ok}");
        }
    }

    #[test]
    fn refuses_what_distribution_reference_refuses() {
        for (bad, problem) in [
            ("", "must not be empty"),
            (":justtag", "invalid reference format"),
            (
                "@sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
                "invalid reference format",
            ),
            (
                "repo@sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
                "invalid digest",
            ),
            (
                "validname@invaliddigest:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
                "invalid digest",
            ),
            ("Uppercase:tag", "must be lowercase"),
            ("test:5000/Uppercase/lowercase:tag", "must be lowercase"),
            ("aa/asdf$$^/aa", "invalid reference format"),
            ("a/-x", "invalid reference format"),
            ("repo:-tag", "invalid tag"),
            ("repo with space:1", "invalid reference format"),
        ] {
            let got = image_problem(bad);
            assert!(got.is_some_and(|p| p.contains(problem)), "{bad}: {got:?}");
        }
        let long = format!("{}:tag", "a".repeat(256));
        assert!(image_problem(&long).is_some_and(|p| p.contains("255")));
    }

    #[test]
    fn namespace_must_be_a_dns_label() {
        assert!(validate_namespace("--namespace", "velero").is_ok());
        let e = validate_namespace("--namespace", "Velero_NS").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("invalid --namespace \"Velero_NS\": a lowercase RFC 1123 label"),
            "{e}"
        );
    }
}
