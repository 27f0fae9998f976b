//! Checks that keep this repository self-contained and its references
//! findable, run by `cargo test -p repository-checks`:
//!
//! - every rule identifier (`A2.15`, `C.14`, `SA4`, …) used in source,
//!   documentation, deployment files or snapshots of command output has a
//!   heading in `docs/behaviour/` ([`rules`], [`find_rule_ids`]);
//! - nothing cites material that is not in the repository: issue numbers,
//!   "seed" scenario numbers, a folder of specifications, section signs of outside
//!   documents ([`find_outside_references`]);
//! - relative Markdown links point at files and anchors that exist
//!   ([`markdown`]);
//! - the `Containerfile` builds images that run the way the controllers'
//!   generated manifests expect ([`containerfile`]);
//! - no crate has a cycle among the sibling modules of any of its modules
//!   ([`modules`]).
//!
//! The scanners are plain functions over text so that their own tests can
//! show they catch what they are meant to catch; `tests/repository.rs` (and
//! `tests/modules.rs` for module cycles) runs them over the working tree.

pub mod containerfile;
pub mod markdown;
pub mod modules;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

/// One problem found in one file, printed as `path:line: message`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// Path relative to the repository root, with `/` separators.
    pub path: String,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong, naming the offending text.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path, self.line, self.message)
    }
}

/// The repository root (two levels above this crate's manifest).
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// Directories never scanned: build output, version control, fuzz inputs
/// (arbitrary bytes by design), and installed npm packages (the browser
/// tests' `node_modules`, not ours).
const SKIPPED_DIRS: &[&str] = &[
    "target",
    ".git",
    "fuzz/corpus",
    "fuzz/artifacts",
    "node_modules",
];

/// File name endings that are scanned: sources, documentation, manifests,
/// snapshots of what users read, and test fixtures.
const SCANNED_ENDINGS: &[&str] = &[
    ".rs",
    ".md",
    ".snap",
    ".toml",
    ".yaml",
    ".yml",
    ".json",
    ".txt",
    "Containerfile",
];

/// Every scanned text file under `root`, as paths relative to it with `/`
/// separators, sorted. Files that are not UTF-8 are skipped.
pub fn text_files(root: &Path) -> std::io::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(root.join(&rel))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = rel.join(&name);
            let child_str = slash_path(&child);
            let file_type = entry.file_type()?;
            if file_type.is_dir() {
                if !SKIPPED_DIRS.iter().any(|s| *s == name || *s == child_str) {
                    stack.push(child);
                }
            } else if file_type.is_file()
                && SCANNED_ENDINGS.iter().any(|e| name.ends_with(e))
                && let Ok(text) = std::fs::read_to_string(root.join(&child))
            {
                out.push((child_str, text));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn slash_path(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// A rule of the behaviour reference: its identifier, the anchor of its
/// heading and where the heading is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The identifier, e.g. `A2.15`.
    pub id: String,
    /// The explicit anchor of the heading, e.g. `a2-15`.
    pub anchor: String,
    /// The file, relative to the repository root.
    pub file: String,
    /// 1-based line of the heading.
    pub line: usize,
}

/// The anchor a rule identifier must carry: lower case, dots replaced by
/// dashes (`A2.15` → `a2-15`, `SA4` → `sa4`).
pub fn anchor_of(id: &str) -> String {
    id.to_lowercase().replace('.', "-")
}

static RULE_HEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^#{2,6} <a id="([^"]*)"></a>(\S+) — \S"#).unwrap_or_else(|e| panic!("{e}"))
});

/// The rules declared by the headings of one behaviour file, and the
/// problems with them: a heading whose identifier is not of the identifier
/// form, or whose anchor is not [`anchor_of`] its identifier.
pub fn rules_in(file: &str, text: &str) -> (Vec<Rule>, Vec<Finding>) {
    let mut rules = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(c) = RULE_HEADING.captures(line) else {
            if line.starts_with('#') && line.contains("<a id=") {
                problems.push(Finding {
                    path: file.into(),
                    line: i + 1,
                    message: format!(
                        "rule heading not of the form `### <a id=\"x-n\"></a>X.n — title`: {line}"
                    ),
                });
            }
            continue;
        };
        let (anchor, id) = (&c[1], &c[2]);
        if find_rule_ids(id).first().map(|(_, found)| found.as_str()) != Some(id) {
            problems.push(Finding {
                path: file.into(),
                line: i + 1,
                message: format!("`{id}` is not of the rule identifier form"),
            });
        }
        if anchor != anchor_of(id) {
            problems.push(Finding {
                path: file.into(),
                line: i + 1,
                message: format!(
                    "the anchor of `{id}` is `{anchor}`, expected `{}`",
                    anchor_of(id)
                ),
            });
        }
        rules.push(Rule {
            id: id.into(),
            anchor: anchor.into(),
            file: file.into(),
            line: i + 1,
        });
    }
    (rules, problems)
}

/// Every rule of `docs/behaviour/*.md` under `root`, by identifier, and the
/// problems found: malformed headings and identifiers declared twice.
pub fn rules(root: &Path) -> std::io::Result<(BTreeMap<String, Rule>, Vec<Finding>)> {
    let mut by_id: BTreeMap<String, Rule> = BTreeMap::new();
    let mut problems = Vec::new();
    let dir = root.join("docs/behaviour");
    let mut names: Vec<String> = std::fs::read_dir(&dir)?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    for name in names {
        let file = format!("docs/behaviour/{name}");
        let text = std::fs::read_to_string(dir.join(&name))?;
        let (found, mut bad) = rules_in(&file, &text);
        problems.append(&mut bad);
        for rule in found {
            if let Some(first) = by_id.get(&rule.id) {
                problems.push(Finding {
                    path: rule.file.clone(),
                    line: rule.line,
                    message: format!(
                        "`{}` is already declared at {}:{}",
                        rule.id, first.file, first.line
                    ),
                });
            } else {
                by_id.insert(rule.id.clone(), rule);
            }
        }
    }
    Ok((by_id, problems))
}

/// Rule identifiers: a family of one or two capitals, an optional digit, a
/// dot and a number with an optional letter (`A2.15`, `A2.17b`, `C.14`,
/// `D1.2`), or `SA` and a number (`SA4`). The pattern is deliberately wider
/// than the families that exist, so that a reference to a family without
/// headings is caught rather than ignored.
static RULE_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(SA[0-9]+|[A-Z]{1,2}[0-9]?\.[0-9]+[a-z]?)\b").unwrap_or_else(|e| panic!("{e}"))
});

/// The rule identifiers in `text`, with their 1-based line numbers. A
/// candidate preceded by a dot or followed by a dot and a digit is part of a
/// longer dotted name (a version, a host name) and is not an identifier.
pub fn find_rule_ids(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for m in RULE_ID.find_iter(line) {
            let before = line[..m.start()].chars().next_back();
            let mut after = line[m.end()..].chars();
            let dotted_after =
                after.next() == Some('.') && after.next().is_some_and(|c| c.is_ascii_digit());
            if before == Some('.') || dotted_after {
                continue;
            }
            out.push((i + 1, m.as_str().to_owned()));
        }
    }
    out
}

static BEHAVIOUR_REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"docs/behaviour/([\w-]+\.md)#([\w-]+)").unwrap_or_else(|e| panic!("{e}"))
});

/// Mentions of a behaviour heading written as a path with an anchor
/// (`docs/behaviour/velero.md#a2-15`, as command output and help print
/// them), with their 1-based lines: `(line, file name, anchor)`.
pub fn find_behaviour_references(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for c in BEHAVIOUR_REFERENCE.captures_iter(line) {
            out.push((i + 1, c[1].to_owned(), c[2].to_owned()));
        }
    }
    out
}

/// A phrase that cites something outside the repository, and why it is
/// refused.
struct OutsideReference {
    pattern: Regex,
    why: &'static str,
}

static OUTSIDE_REFERENCES: LazyLock<Vec<OutsideReference>> = LazyLock::new(|| {
    [
        (
            r"(?i)\bissues?[ -]?#?[0-9]",
            "an issue number: say what the behaviour is instead",
        ),
        (
            r"(?i)\bseed[ -]?#?[0-9]",
            "a scenario number from outside the repository: describe the scenario",
        ),
        (
            r"(?i)\bspecs[/]",
            "a path outside the repository: cite docs/behaviour instead",
        ),
        (
            r"\bCONVENTION[S]\b",
            "a document outside the repository: say the rule itself",
        ),
        (
            "\u{a7}",
            "a section of a document outside the repository: cite a rule identifier or a file here",
        ),
        (
            r"(?i)\bspecs?\b[ (]*(?:[A-Z]{1,2}[0-9]?\.[0-9]|`[\w.-]+\.md`)",
            "a specification outside the repository: cite the rule identifier alone",
        ),
    ]
    .into_iter()
    .map(|(p, why)| OutsideReference {
        pattern: Regex::new(p).unwrap_or_else(|e| panic!("{p}: {e}")),
        why,
    })
    .collect()
});

/// A precise exception to [`find_outside_references`]: in the file `path`,
/// a match lying inside the text `line_contains` is allowed.
#[derive(Debug, Clone, Copy)]
pub struct Allowed {
    /// The file, relative to the repository root.
    pub path: &'static str,
    /// The text, within one line, that the match must lie inside.
    pub line_contains: &'static str,
    /// Why this is not a reference to outside material.
    pub why: &'static str,
}

/// The exceptions in force. Each must still match something (a test checks
/// it), so that an exception does not outlive its reason.
pub const ALLOWED: &[Allowed] = &[Allowed {
    path: "crates/testkit/src/lib.rs",
    line_contains: "The reference sequence for seed\x200 (from the algorithm's published",
    why: "the seed of a pseudo-random generator, checked against the algorithm's test vectors",
}];

/// The phrases in `text` (a file at `path`) that cite material outside the
/// repository, less the [`ALLOWED`] ones; each finding says why. The
/// second value lists the indexes of the exceptions that were used.
pub fn find_outside_references(
    path: &str,
    text: &str,
    allowed: &[Allowed],
) -> (Vec<Finding>, Vec<usize>) {
    let mut findings = Vec::new();
    let mut used = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for reference in OUTSIDE_REFERENCES.iter() {
            for m in reference.pattern.find_iter(line) {
                let exception = allowed.iter().position(|a| {
                    a.path == path
                        && line.match_indices(a.line_contains).any(|(start, phrase)| {
                            start <= m.start() && m.end() <= start + phrase.len()
                        })
                });
                if let Some(index) = exception {
                    used.push(index);
                    continue;
                }
                findings.push(Finding {
                    path: path.into(),
                    line: i + 1,
                    message: format!("`{}`: {}", m.as_str(), reference.why),
                });
            }
        }
    }
    (findings, used)
}

/// The tracing macros whose fields [`find_debug_log_fields`] inspects.
const LOG_MACROS: &[&str] = &[
    "tracing::trace!(",
    "tracing::debug!(",
    "tracing::info!(",
    "tracing::warn!(",
    "tracing::error!(",
];

/// Log fields recorded in Rust debug form (`field = ?value` or `?value`) in
/// the `tracing` macro calls of `text`, as (1-based line, the call's first
/// line). JSON logs would carry such a value as Rust text (`Some("esx-04")`,
/// `Reposition { from: 2, to: 1 }`): log numbers, booleans and strings
/// (`%` with a readable `Display`) instead.
pub fn find_debug_log_fields(text: &str) -> Vec<(usize, String)> {
    let mut findings = Vec::new();
    let mut from = 0;
    while let Some((start, macro_name)) = LOG_MACROS
        .iter()
        .filter_map(|name| text[from..].find(name).map(|at| (from + at, *name)))
        .min()
    {
        let args_start = start + macro_name.len();
        let args = code_until_closing_paren(&text[args_start..]);
        if args
            .split(',')
            .any(|field| field.trim_start().starts_with('?') || field.contains("= ?"))
        {
            let line = text[..start].matches('\n').count() + 1;
            let first = text[start..].lines().next().unwrap_or_default().trim();
            findings.push((line, first.to_owned()));
        }
        from = args_start;
    }
    findings
}

/// The code of `text` up to its first unbalanced `)`, with string literals
/// and character literals left out (a `{:?}` in a message is not a field).
fn code_until_closing_paren(text: &str) -> String {
    let mut code = String::new();
    let mut depth = 0usize;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                code.push_str("\"\"");
            }
            '(' | '[' | '{' => {
                depth += 1;
                code.push(c);
            }
            ')' | ']' | '}' => {
                if depth == 0 {
                    break;
                }
                depth -= 1;
                code.push(c);
            }
            _ => code.push(c),
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_log_fields_are_found_and_messages_are_not_fields() {
        let text = "fn f() {\n    tracing::info!(node = %n, host = ?h, \"labelled {:?}\", x);\n    tracing::debug!(?target, \"would patch\");\n    tracing::warn!(n = count()?, \"a (?) b\", \"{x:?}\");\n}\n";
        let found: Vec<usize> = find_debug_log_fields(text)
            .into_iter()
            .map(|(line, _)| line)
            .collect();
        assert_eq!(found, [2, 3]);
    }

    fn ids(text: &str) -> Vec<String> {
        find_rule_ids(text).into_iter().map(|(_, id)| id).collect()
    }

    #[test]
    fn rule_identifiers_of_every_family_are_found() {
        assert_eq!(
            ids("A2.15, C1.14; W1.3 (L3.6) D1.2 Q4.22 A2.17b C.14 M.3 B.8 SA4 D.3 E\x2e4"),
            [
                "A2.15", "C1.14", "W1.3", "L3.6", "D1.2", "Q4.22", "A2.17b", "C.14", "M.3", "B.8",
                "SA4", "D.3", "E\x2e4"
            ]
        );
        assert_eq!(ids("Q4.1–Q4.22, C.7/C.8"), ["Q4.1", "Q4.22", "C.7", "C.8"]);
        assert_eq!(ids("see A.1."), ["A.1"]);
    }

    #[test]
    fn dotted_names_and_words_are_not_identifiers() {
        assert!(ids("Velero v1.18.1, V1.2.3, node.A.1, USA4, DDR3, k8s.io, 1.5").is_empty());
        assert!(ids("RSA1 SHA256 A2.15xy").is_empty());
    }

    #[test]
    fn behaviour_references_are_found_with_file_and_anchor() {
        let found = find_behaviour_references(
            "x\n  A2.15  docs/behaviour/velero.md#a2-15\nsee docs/behaviour/cluster-api.md#sa4.\n",
        );
        assert_eq!(
            found,
            [
                (2, "velero.md".to_owned(), "a2-15".to_owned()),
                (3, "cluster-api.md".to_owned(), "sa4".to_owned())
            ]
        );
    }

    #[test]
    fn outside_references_are_found_case_insensitively() {
        // Escapes keep these phrases out of this file's own text.
        let text = "issue\x206\nthe issue\x2d6 contract\nIssue #12\nseed\x20004\nSeed\x200\n\
                    see spec\x73/velero.md\nCONVENTION\x53 \u{a7}4\nspec Q4.2\nspec `velero.md`\n";
        let (found, _) = find_outside_references("x.rs", text, &[]);
        let lines: Vec<usize> = found.iter().map(|f| f.line).collect();
        assert_eq!(lines, [1, 2, 3, 4, 5, 6, 7, 7, 8, 9]);
    }

    #[test]
    fn ordinary_words_are_not_outside_references() {
        let text = "fake.seed(&cm)\nseed: 0x5eed\nthe pod spec is read\nissues a request\n\
                    Kubernetes naming conventions\nspec.includedNamespaces\n";
        let (found, _) = find_outside_references("x.rs", text, &[]);
        assert_eq!(found, []);
    }

    #[test]
    fn an_exception_applies_to_its_file_and_line_only() {
        let allowed = [Allowed {
            path: "a.rs",
            line_contains: "reference sequence for seed\x200",
            why: "test",
        }];
        let text = "the reference sequence for seed\x200\nseed\x200 elsewhere\n\
                    the reference sequence for seed\x200, then seed\x207\n";
        let (found, used) = find_outside_references("a.rs", text, &allowed);
        let lines: Vec<usize> = found.iter().map(|f| f.line).collect();
        assert_eq!(lines, [2, 3]);
        assert_eq!(used, [0, 0]);
        let (found, used) = find_outside_references("b.rs", text, &allowed);
        assert_eq!(found.len(), 4);
        assert!(used.is_empty());
    }

    #[test]
    fn headings_declare_rules_with_their_anchor() {
        let text = "# T\n### <a id=\"a2-15\"></a>A2.15 — Title\n\
                    ### <a id=\"sa4\"></a>SA4 — Other\n\
                    ### <a id=\"c-1\"></a>C.2 — Wrong anchor\n\
                    ### <a id=\"x\"></a>Title without an identifier\n";
        let (rules, problems) = rules_in("f.md", text);
        let found: Vec<(&str, &str)> = rules
            .iter()
            .map(|r| (r.id.as_str(), r.anchor.as_str()))
            .collect();
        assert_eq!(found, [("A2.15", "a2-15"), ("SA4", "sa4"), ("C.2", "c-1")]);
        let lines: Vec<usize> = problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [4, 5]);
    }
}
