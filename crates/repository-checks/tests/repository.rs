//! The repository stands alone: every rule identifier it uses has a heading
//! in `docs/behaviour/`, nothing cites material outside it, and its
//! relative Markdown links resolve.

use std::collections::BTreeSet;

use repository_checks::{
    ALLOWED, Finding, find_behaviour_references, find_debug_log_fields, find_outside_references,
    find_rule_ids, markdown, repository_root, rules, text_files,
};

fn fail_on(what: &str, findings: &[Finding]) {
    if !findings.is_empty() {
        let list: Vec<String> = findings.iter().map(ToString::to_string).collect();
        panic!("{what} ({}):\n{}", findings.len(), list.join("\n"));
    }
}

#[test]
fn behaviour_headings_are_well_formed_and_unique() {
    let (rules, problems) = rules(&repository_root()).unwrap();
    fail_on("malformed or repeated rule headings", &problems);
    // Every family of the reference is there (a sanity check that the
    // heading pattern still matches the files).
    for id in [
        "C1.1", "A2.15", "L3.6", "Q4.22", "D1.2", "W1.3", "M.1", "C.14", "A.1", "SA4", "B.6", "D.3",
    ] {
        assert!(rules.contains_key(id), "{id} has no heading");
    }
}

#[test]
fn every_rule_identifier_has_a_heading_in_docs_behaviour() {
    let root = repository_root();
    let (rules, _) = rules(&root).unwrap();
    let mut findings = Vec::new();
    for (path, text) in text_files(&root).unwrap() {
        for (line, id) in find_rule_ids(&text) {
            if !rules.contains_key(&id) {
                findings.push(Finding {
                    path: path.clone(),
                    line,
                    message: format!("`{id}` has no heading in docs/behaviour/"),
                });
            }
        }
    }
    fail_on("rule identifiers without a heading", &findings);
}

#[test]
fn nothing_cites_material_outside_the_repository() {
    let mut findings = Vec::new();
    let mut used = BTreeSet::new();
    for (path, text) in text_files(&repository_root()).unwrap() {
        let (mut found, allowed) = find_outside_references(&path, &text, ALLOWED);
        findings.append(&mut found);
        used.extend(allowed);
    }
    fail_on("references to material outside the repository", &findings);
    for (index, allowed) in ALLOWED.iter().enumerate() {
        assert!(
            used.contains(&index),
            "the exception for {} ({:?}) matches nothing: remove it",
            allowed.path,
            allowed.line_contains
        );
    }
}

#[test]
fn relative_markdown_links_resolve() {
    let root = repository_root();
    let mut findings = Vec::new();
    let mut checked = 0;
    for (path, text) in text_files(&root).unwrap() {
        if path.ends_with(".md") {
            checked += markdown::relative_links(&text).len();
            findings.extend(markdown::broken_links(&root, &path, &text));
        }
    }
    fail_on("broken relative links", &findings);
    assert!(
        checked > 100,
        "only {checked} relative links found: is the scan still reaching docs/?"
    );
}

#[test]
fn every_heading_marker_in_markdown_starts_its_own_line() {
    let mut findings = Vec::new();
    for (path, text) in text_files(&repository_root()).unwrap() {
        if path.ends_with(".md") {
            for (line, heading) in markdown::glued_headings(&text) {
                findings.push(Finding {
                    path: path.clone(),
                    line,
                    message: format!("`{heading}` is glued onto a paragraph and does not render"),
                });
            }
        }
    }
    fail_on("headings that do not start their own line", &findings);
}

#[test]
fn every_rule_s_upstream_bullets_sit_under_its_own_heading() {
    let mut findings = Vec::new();
    for (path, text) in text_files(&repository_root()).unwrap() {
        if path.starts_with("docs/behaviour/") && path.ends_with(".md") {
            for (line, heading) in markdown::rule_bullets_outside_rules(&text) {
                findings.push(Finding {
                    path: path.clone(),
                    line,
                    message: format!(
                        "rule bullets under `{heading}`, not under a rule heading: move the heading below them"
                    ),
                });
            }
        }
    }
    fail_on("rule bullets under a section heading", &findings);
    let sample = "### <a id=\"r-1\"></a>Rule one\n\ntext\n\n## Section\n\n- Upstream (a b): c\n";
    assert_eq!(
        markdown::rule_bullets_outside_rules(sample),
        vec![(7, "## Section".to_owned())]
    );
}

#[test]
fn the_glued_heading_check_sees_a_glued_heading_and_nothing_else() {
    let text = "Some text. ## Next section\n\n## A real heading\n\nIssue #12 and `a ## b`.\n\n```sh\necho x # comment\n```\n";
    assert_eq!(
        markdown::glued_headings(text),
        vec![(1, "## Next section".to_owned())]
    );
}

#[test]
fn behaviour_anchors_named_in_any_text_resolve() {
    let root = repository_root();
    let mut findings = Vec::new();
    let mut checked = 0;
    for (path, text) in text_files(&root).unwrap() {
        for (line, file, anchor) in find_behaviour_references(&text) {
            checked += 1;
            let target = root.join("docs/behaviour").join(&file);
            let found = std::fs::read_to_string(&target)
                .map(|t| markdown::anchors(&t).contains(&anchor))
                .unwrap_or(false);
            if !found {
                findings.push(Finding {
                    path: path.clone(),
                    line,
                    message: format!("docs/behaviour/{file}#{anchor} does not resolve"),
                });
            }
        }
    }
    fail_on("behaviour anchors that do not resolve", &findings);
    // The snapshots of `policyctl config check` and `report` name some.
    assert!(
        checked > 0,
        "no docs/behaviour/<file>#<anchor> found anywhere"
    );
}

#[test]
fn controller_logs_carry_no_rust_debug_text() {
    let mut findings = Vec::new();
    for (path, text) in text_files(&repository_root()).unwrap() {
        let controller_code = (path.starts_with("bins/")
            || path.starts_with("crates/controller-kit/"))
            && path.contains("/src/")
            && path.ends_with(".rs");
        if !controller_code {
            continue;
        }
        for (line, call) in find_debug_log_fields(&text) {
            findings.push(Finding {
                path: path.clone(),
                line,
                message: format!("a log field in Rust debug form (`?`): {call}"),
            });
        }
    }
    fail_on(
        "log fields that JSON logs would carry as Rust debug text",
        &findings,
    );
}

/// The documentation names Markdown files of this repository only: a bare
/// `` `NAME.md` `` in docs/ or the README is a file here (upstream files are
/// cited with their path in their repository).
#[test]
fn documentation_mentions_no_markdown_file_the_repository_lacks() {
    let files = text_files(&repository_root()).unwrap();
    let names: BTreeSet<&str> = files
        .iter()
        .filter_map(|(path, _)| path.rsplit('/').next())
        .filter(|name| name.ends_with(".md"))
        .collect();
    let mut findings = Vec::new();
    for (path, text) in &files {
        if !(path.starts_with("docs/") || path == "README.md") || !path.ends_with(".md") {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            for mention in line.split('`').skip(1).step_by(2) {
                let bare =
                    mention.ends_with(".md") && !mention.contains('/') && !mention.contains(' ');
                if bare && !names.contains(mention) {
                    findings.push(Finding {
                        path: path.clone(),
                        line: i + 1,
                        message: format!("`{mention}` is not a file of this repository"),
                    });
                }
            }
        }
    }
    fail_on("Markdown files named but missing", &findings);
}
