//! `config check [--strict]`: the normalised node-agent configuration and
//! every finding about it.

use affinity_translate::{Finding, LoadError, Severity};
use serde_json::{Value, json};

use crate::Exit;
use crate::commands::config_source::ConfigInput;
use crate::commands::{CommandError, CommandResult};
use crate::output::{Output, fitted_table};
use crate::rules::rule_anchor;

/// Runs the check. Exits 1 when the configuration does not load (Velero's
/// node-agent would refuse to start, or, for a duplicate key, Go would
/// silently keep the last value and start); with `strict`, also on any
/// finding.
pub fn run(input: &ConfigInput, strict: bool) -> Result<CommandResult, CommandError> {
    let (config, findings) = match &input.loaded {
        Ok(loaded) => (
            serde_json::to_value(&loaded.config).map_err(|e| CommandError::Input(e.to_string()))?,
            loaded
                .findings
                .iter()
                .map(FindingRow::from)
                .collect::<Vec<_>>(),
        ),
        Err(error) => (Value::Null, vec![FindingRow::from(error)]),
    };
    let refused = input.loaded.is_err();
    let exit = if refused || (strict && !findings.is_empty()) {
        Exit::Failure
    } else {
        Exit::Success
    };
    let document = json!({
        "veleroVersion": input.velero.version.as_str(),
        "config": config,
        "findings": findings.iter().map(|f| json!({
            "severity": f.severity,
            "path": f.path,
            "message": f.message,
        })).collect::<Vec<_>>(),
    });
    let mut text = format!(
        "Configuration: {}\nRead as Velero {} reads it ({})\n",
        input.origin, input.velero.version, input.velero.origin
    );
    match &input.loaded {
        Err(LoadError::DuplicateKey { .. }) => text.push_str(
            "Velero's node-agent would start with this configuration (Go keeps the last value of a\nduplicate key), but policyctl does not load it.\n",
        ),
        Err(_) => {
            text.push_str("Velero's node-agent would refuse to start with this configuration.\n");
        }
        Ok(_) => {}
    }
    text.push_str(&findings_text(&findings));
    Ok(CommandResult {
        output: Output {
            document,
            table: text,
        },
        exit,
    })
}

/// One finding as printed.
#[derive(Clone, Debug, PartialEq)]
pub struct FindingRow {
    /// `error` or `warning`.
    pub severity: &'static str,
    /// JSON path, `""` for the whole document.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// What Velero does with it.
    pub velero: String,
}

/// The findings as a table with its counts and the rule footer, or
/// `No findings.`.
pub fn findings_text(findings: &[FindingRow]) -> String {
    if findings.is_empty() {
        return "No findings.\n".to_owned();
    }
    let errors = findings.iter().filter(|f| f.severity == "error").count();
    let mut text = format!(
        "{} finding(s): {errors} error(s), {} warning(s)\n\n",
        findings.len(),
        findings.len() - errors
    );
    text.push_str(&fitted_table(
        &["severity", "path", "message", "velero"],
        findings.iter().map(|f| {
            [
                f.severity.to_owned(),
                if f.path.is_empty() {
                    "<document>".to_owned()
                } else {
                    f.path.clone()
                },
                f.message.clone(),
                f.velero.clone(),
            ]
        }),
    ));
    text.push_str(&rule_footer(findings.iter().map(|f| f.velero.as_str())));
    text
}

impl From<&Finding> for FindingRow {
    fn from(finding: &Finding) -> Self {
        Self {
            severity: match finding.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            },
            path: finding.path.clone(),
            message: finding.message.clone(),
            velero: finding.velero.clone(),
        }
    }
}

impl From<&LoadError> for FindingRow {
    fn from(error: &LoadError) -> Self {
        let path = match error {
            LoadError::WrongType { path, .. } | LoadError::DuplicateKey { path, .. } => {
                path.clone()
            }
            _ => String::new(),
        };
        let velero = match error {
            // Go's encoding/json does not reject a repeated key: it keeps the
            // last value (objects merge) and the node-agent starts.
            LoadError::DuplicateKey { .. } => {
                "the node-agent starts: Go's encoding/json silently keeps the last value (C1.8)"
            }
            _ => "the node-agent exits at start-up (C1.9)",
        };
        Self {
            severity: "error",
            path,
            message: error.to_string(),
            velero: velero.to_owned(),
        }
    }
}

/// Where the Velero rules live: each identifier is a heading of this file,
/// with the anchor [`rule_anchor`].
pub const VELERO_RULES: &str = "docs/behaviour/velero.md";

/// The footer under a table with a `VELERO` column: every Velero rule
/// identifier the column cites, in order of first appearance, with the
/// heading it resolves to. Empty when the column cites none.
pub fn rule_footer<'a>(cells: impl IntoIterator<Item = &'a str>) -> String {
    let mut ids: Vec<&str> = Vec::new();
    for cell in cells {
        for id in velero_rule_ids(cell) {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    if ids.is_empty() {
        return String::new();
    }
    let width = ids.iter().map(|id| id.len()).max().unwrap_or(0);
    let mut text = format!(
        "\nRules cited in VELERO are headings of {VELERO_RULES}\nin {}:\n",
        env!("CARGO_PKG_REPOSITORY")
    );
    for id in ids {
        text.push_str(&format!(
            "  {id:<width$}  {VELERO_RULES}#{}\n",
            rule_anchor(id)
        ));
    }
    text
}

/// The Velero rule identifiers in a text: a family letter (`C`, `A`, `L`,
/// `Q`, `R`, `D`, `W`), a digit, a dot, a number and an optional lower-case
/// letter (`C1.14`, `A2.17b`).
fn velero_rule_ids(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .map(|word| word.trim_end_matches('.'))
        .filter(|word| is_velero_rule_id(word))
}

fn is_velero_rule_id(word: &str) -> bool {
    let bytes = word.as_bytes();
    let [family, digit, b'.', rest @ ..] = bytes else {
        return false;
    };
    let number_len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    b"CVALQDWR".contains(family)
        && digit.is_ascii_digit()
        && number_len > 0
        && match &rest[number_len..] {
            [] => true,
            [letter] => letter.is_ascii_lowercase(),
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_lists_each_cited_rule_once_with_its_heading() {
        let footer = rule_footer([
            "selects with the remapped backupPVC class (A2.15)",
            "ignored: pods get no requests or limits (C1.14, W1.3)",
            "again (C1.14). Also A2.17b.",
        ]);
        let heading = format!(
            "\nRules cited in VELERO are headings of docs/behaviour/velero.md\nin {}:\n",
            env!("CARGO_PKG_REPOSITORY")
        );
        assert_eq!(
            footer.strip_prefix(&heading),
            Some(
                "\x20 A2.15   docs/behaviour/velero.md#a2-15\n\
             \x20 C1.14   docs/behaviour/velero.md#c1-14\n\
             \x20 W1.3    docs/behaviour/velero.md#w1-3\n\
             \x20 A2.17b  docs/behaviour/velero.md#a2-17b\n"
            ),
            "{footer}"
        );
    }

    #[test]
    fn words_that_are_not_velero_rules_give_no_footer() {
        assert_eq!(
            rule_footer(["Velero v1.18.1 (C.14, SA4, B.3) X1\x2e2 C12.1 C1.x"]),
            ""
        );
    }
}
