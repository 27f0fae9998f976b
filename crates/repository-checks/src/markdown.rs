//! Relative links in Markdown files and the anchors they may point at.
//!
//! Anchors are the explicit ones (`<a id="…">`, `<a name="…">`) and the
//! ones GitHub derives from headings: the heading's text as rendered, in
//! lower case, with every character that is not a letter, a digit, a space,
//! `-` or `_` removed and spaces turned into `-`; a repeated slug gets `-1`,
//! `-2`, … in document order.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use crate::Finding;

static EXPLICIT_ANCHOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"<a\s+(?:id|name)="([^"]+)""#).unwrap_or_else(|e| panic!("{e}")));
static HTML_TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<[^>]*>").unwrap_or_else(|e| panic!("{e}")));
static INLINE_LINK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"!?\[([^\]]*)\]\(([^)\s]*)(?:\s+[^)]*)?\)").unwrap_or_else(|e| panic!("{e}"))
});
static REFERENCE_DEFINITION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s{0,3}\[[^\]]+\]:\s*(\S+)").unwrap_or_else(|e| panic!("{e}")));
static GLUED_HEADING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\S\s+(#{1,6}\s+\S.*)$").unwrap_or_else(|e| panic!("{e}")));
static CODE_SPAN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`+[^`]*`+").unwrap_or_else(|e| panic!("{e}")));

/// The lines of `text` outside fenced code blocks, with their 1-based
/// numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = if trimmed.starts_with("```") {
            Some("```")
        } else if trimmed.starts_with("~~~") {
            Some("~~~")
        } else {
            None
        };
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(f), Some(m)) if f == m => fence = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// The GitHub slug of a heading's Markdown text.
pub fn github_slug(heading: &str) -> String {
    let text = INLINE_LINK.replace_all(heading, "$1");
    let text = HTML_TAG.replace_all(&text, "");
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a link into this Markdown text may use.
pub fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        for c in EXPLICIT_ANCHOR.captures_iter(line) {
            out.insert(c[1].to_owned());
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let base = github_slug(line[hashes..].trim());
            let mut slug = base.clone();
            let mut n = 0;
            while !seen.insert(slug.clone()) {
                n += 1;
                slug = format!("{base}-{n}");
            }
            out.insert(slug);
        }
    }
    out
}

/// The relative link targets of a Markdown text (inline links, images and
/// reference definitions outside code), with their 1-based lines. Targets
/// with a scheme (`https:`, `mailto:`) are left out.
pub fn relative_links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(text) {
        let line = CODE_SPAN.replace_all(line, "");
        let mut targets: Vec<&str> = INLINE_LINK
            .captures_iter(&line)
            .filter_map(|c| c.get(2).map(|m| m.as_str()))
            .collect();
        if let Some(c) = REFERENCE_DEFINITION.captures(&line)
            && let Some(m) = c.get(1)
        {
            targets.push(m.as_str());
        }
        for target in targets {
            let target = target.trim_start_matches('<').trim_end_matches('>');
            let has_scheme = target
                .split_once(':')
                .is_some_and(|(scheme, _)| scheme.chars().all(|c| c.is_ascii_alphanumeric()));
            if !target.is_empty() && !has_scheme {
                out.push((n, target.to_owned()));
            }
        }
    }
    out
}

/// Heading markers glued onto the end of a paragraph line (`… text. ## Next
/// section`), which Markdown renders as text, not as a heading: the 1-based
/// line and the glued heading. Code spans, indented code and fenced code
/// blocks are not prose and are skipped.
pub fn glued_headings(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (number, line) in prose_lines(text) {
        if line.trim_start().starts_with('#') || line.starts_with("    ") {
            continue;
        }
        let prose = CODE_SPAN.replace_all(line, "``");
        if let Some(glued) = GLUED_HEADING.captures(&prose).and_then(|c| c.get(1)) {
            out.push((number, glued.as_str().trim_end().to_owned()));
        }
    }
    out
}

/// In a behaviour reference file, the rule bullets (`- Upstream …`) that
/// sit under a heading which is not a rule's (`### <a id="…"></a>…`): the
/// 1-based line of each and the heading it sits under. They belong to the
/// rule above that heading.
pub fn rule_bullets_outside_rules(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut heading: Option<&str> = None;
    for (number, line) in prose_lines(text) {
        if line.starts_with('#') {
            heading = Some(line);
        } else if line.starts_with("- Upstream")
            && let Some(h) = heading.filter(|h| !h.contains("<a id="))
        {
            out.push((number, h.to_owned()));
        }
    }
    out
}

/// The broken relative links of the Markdown file `path` (relative to
/// `root`) whose text is `text`: a target file or directory that does not
/// exist, or an anchor that the target Markdown file does not have.
pub fn broken_links(root: &Path, path: &str, text: &str) -> Vec<Finding> {
    let dir = Path::new(path).parent().unwrap_or(Path::new(""));
    let mut findings = Vec::new();
    for (line, target) in relative_links(text) {
        let (file, anchor) = match target.split_once('#') {
            Some((file, anchor)) => (file, Some(anchor)),
            None => (target.as_str(), None),
        };
        let resolved = if file.is_empty() {
            root.join(path)
        } else if let Some(absolute) = file.strip_prefix('/') {
            root.join(absolute)
        } else {
            root.join(dir).join(file)
        };
        let problem = if !resolved.exists() {
            Some(format!("`{target}`: no such file or directory"))
        } else if let Some(anchor) = anchor {
            let markdown = if resolved.is_dir() {
                resolved.join("README.md")
            } else {
                resolved.clone()
            };
            let is_markdown = markdown.extension().is_some_and(|e| e == "md");
            match std::fs::read_to_string(&markdown) {
                Ok(target_text) if is_markdown && !anchors(&target_text).contains(anchor) => {
                    Some(format!("`{target}`: no anchor `{anchor}` in that file"))
                }
                _ => None,
            }
        } else {
            None
        };
        if let Some(message) = problem {
            findings.push(Finding {
                path: path.into(),
                line,
                message,
            });
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_github() {
        assert_eq!(
            github_slug(
                r#"<a id="a2-15"></a>A2.15 — Backup load affinity follows the remapped class"#
            ),
            "a215--backup-load-affinity-follows-the-remapped-class"
        );
        assert_eq!(
            github_slug("C.5 — Preferred terms: weights, then `100 × s / max`"),
            "c5--preferred-terms-weights-then-100--s--max"
        );
        assert_eq!(
            github_slug("Reading API objects (`kube-adapters`)"),
            "reading-api-objects-kube-adapters"
        );
        assert_eq!(github_slug("See [the docs](x.md) now"), "see-the-docs-now");
    }

    #[test]
    fn anchors_include_explicit_ids_and_numbered_duplicates() {
        let text = "# Title\n## Usage\n## Usage\n### <a id=\"q4-1\"></a>Q4.1 — X\n```\n# not a heading\n```\n";
        let found = anchors(text);
        for a in ["title", "usage", "usage-1", "q4-1", "q41--x"] {
            assert!(found.contains(a), "{a} in {found:?}");
        }
        assert!(!found.contains("not-a-heading"));
    }

    #[test]
    fn links_outside_code_without_a_scheme_are_relative() {
        let text = "[a](docs/x.md#y) [b](https://e.org) ![c](img.png \"t\")\n\
                    `[d](code.md)`\n```\n[e](fenced.md)\n```\n[f]: ../g.md\n[h](#local)\n";
        let targets: Vec<String> = relative_links(text).into_iter().map(|(_, t)| t).collect();
        assert_eq!(targets, ["docs/x.md#y", "img.png", "../g.md", "#local"]);
    }

    #[test]
    fn missing_files_and_anchors_are_reported() {
        let root = crate::repository_root();
        let text = "[ok](behaviour/velero.md#a2-15)\n[slug](behaviour/velero.md#a215--backup-load-affinity-follows-the-remapped-class)\n\
                    [no file](behaviour/nope.md)\n[no anchor](behaviour/velero.md#a2-99)\n\
                    [dir](../crates/)\n";
        let found = broken_links(&root, "docs/x.md", text);
        let lines: Vec<usize> = found.iter().map(|f| f.line).collect();
        assert_eq!(lines, [3, 4], "{found:?}");
    }
}
