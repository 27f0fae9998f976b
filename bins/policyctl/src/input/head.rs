//! Whether the start of a stream can begin a Kubernetes object, decided
//! from its first line, so an endless stream that is not a manifest
//! (`yes | policyctl -f -`) is refused at once instead of after reading
//! `--max-input-bytes`.
//!
//! Only a start that can never be a mapping is refused; anything else is
//! left to the parser. YAML allows an implicit (unmarked) mapping key only
//! on one line and at most 1024 characters long, so a first line that
//! starts with a plain character and has no `: ` (or a final `:`) is a
//! plain scalar, never the `apiVersion:`/`kind:` mapping of an object.

/// YAML's limit on an implicit key's length, in characters.
const IMPLICIT_KEY_LIMIT: usize = 1024;

/// What the start of a stream says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Head {
    /// Not enough has been read to decide.
    Undecided,
    /// It may begin a Kubernetes object (or it is for the parser to judge).
    Plausible,
    /// It cannot: the first content is a plain scalar.
    Scalar {
        /// The 1-based line of the first content.
        line: usize,
        /// The start of that line, at most 40 characters.
        start: String,
    },
}

/// Judges the start of a stream from the bytes read so far.
pub fn judge(bytes: &[u8]) -> Head {
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let mut rest = bytes;
    let mut line_number = 0;
    loop {
        line_number += 1;
        let newline = rest.iter().position(|byte| *byte == b'\n');
        let raw = newline.map_or(rest, |end| &rest[..end]);
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        match (content_of(line), newline) {
            (Some(content), _) => return judge_content(content, newline.is_some(), line_number),
            (None, Some(end)) => rest = &rest[end + 1..],
            (None, None) => return Head::Undecided,
        }
    }
}

/// The part of a line that carries content: `None` for a blank line, a
/// comment, a directive or a bare document marker.
fn content_of(line: &[u8]) -> Option<&[u8]> {
    let trimmed = trim_start(line);
    if trimmed.is_empty() || trimmed.starts_with(b"#") || line.starts_with(b"%") {
        return None;
    }
    for marker in [b"---", b"..."] {
        if let Some(after) = line.strip_prefix(marker)
            && (after.is_empty() || after.starts_with(b" ") || after.starts_with(b"\t"))
        {
            let after = trim_start(after);
            return (!after.is_empty() && !after.starts_with(b"#")).then_some(after);
        }
    }
    Some(trimmed)
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|byte| *byte != b' ' && *byte != b'\t')
        .unwrap_or(bytes.len());
    &bytes[start..]
}

fn judge_content(content: &[u8], complete: bool, line: usize) -> Head {
    // Flow collections, quoted keys, explicit keys, anchors, tags, aliases,
    // sequences and block scalars: the parser judges those.
    if content
        .first()
        .is_some_and(|first| b"{[?-\"'&!*|>".contains(first))
    {
        return Head::Plausible;
    }
    if has_key_indicator(content) {
        return Head::Plausible;
    }
    if complete || content.len() > IMPLICIT_KEY_LIMIT {
        let start = String::from_utf8_lossy(&content[..content.len().min(160)]);
        return Head::Scalar {
            line,
            start: start.chars().take(40).collect(),
        };
    }
    Head::Undecided
}

/// Whether a plain line holds a mapping indicator: `:` followed by a space,
/// a tab or the end of the line, before any comment.
fn has_key_indicator(content: &[u8]) -> bool {
    content.iter().enumerate().any(|(index, byte)| {
        *byte == b':'
            && content
                .get(index + 1)
                .is_none_or(|next| *next == b' ' || *next == b'\t')
            && !content[..index].windows(2).any(|pair| pair == b" #")
    })
}

#[cfg(test)]
mod tests {
    use super::{Head, judge};

    fn scalar(line: usize, start: &str) -> Head {
        Head::Scalar {
            line,
            start: start.to_owned(),
        }
    }

    #[test]
    fn objects_in_yaml_and_json_are_plausible() {
        for text in [
            "apiVersion: v1\n",
            "kind: List\n",
            "# dump\n\n---\napiVersion: v1\n",
            "%YAML 1.2\n---\nkind: Pod\n",
            "--- apiVersion: v1\n",
            "{\"apiVersion\":\"v1\"",
            "\u{feff}apiVersion: v1\r\n",
            "\"apiVersion\": v1\n",
            "key:\n",
            "key:\tvalue\n",
            "a:b: c\n",
        ] {
            assert_eq!(judge(text.as_bytes()), Head::Plausible, "{text:?}");
        }
    }

    #[test]
    fn a_plain_scalar_first_line_is_refused_with_its_line() {
        assert_eq!(judge(b"y\ny\n"), scalar(1, "y"));
        assert_eq!(
            judge(b"# c\n\n---\nhello world\n"),
            scalar(4, "hello world")
        );
        assert_eq!(judge(b"a:b\n"), scalar(1, "a:b"));
        assert_eq!(
            judge(b"text # a: comment\n"),
            scalar(1, "text # a: comment")
        );
    }

    #[test]
    fn an_unfinished_line_waits_until_it_is_longer_than_any_key() {
        assert_eq!(judge(b""), Head::Undecided);
        assert_eq!(judge(b"# comment"), Head::Undecided);
        assert_eq!(judge(b"apiVers"), Head::Undecided);
        let long = vec![b'y'; 1025];
        assert_eq!(judge(&long), scalar(1, &"y".repeat(40)));
    }
}
