//! `config check [--strict]`: the normalised node-agent configuration and
//! every finding about it.

use affinity_translate::{Finding, LoadError, Severity};
use serde_json::{Value, json};

use crate::Exit;
use crate::commands::config_source::ConfigInput;
use crate::commands::{CommandError, CommandResult};
use crate::output::{Output, table};

/// Runs the check. Exits 1 when Velero's node-agent would refuse to start
/// (the configuration does not load); with `strict`, also on any finding.
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
        "config": config,
        "findings": findings.iter().map(|f| json!({
            "severity": f.severity,
            "path": f.path,
            "message": f.message,
        })).collect::<Vec<_>>(),
    });
    let mut text = format!("Configuration: {}\n", input.origin);
    if refused {
        text.push_str("Velero's node-agent would refuse to start with this configuration.\n");
    }
    if findings.is_empty() {
        text.push_str("No findings.\n");
    } else {
        let errors = findings.iter().filter(|f| f.severity == "error").count();
        text.push_str(&format!(
            "{} finding(s): {errors} error(s), {} warning(s)\n\n",
            findings.len(),
            findings.len() - errors
        ));
        text.push_str(&table(
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
    }
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
        Self {
            severity: "error",
            path,
            message: error.to_string(),
            velero: "the node-agent exits at start-up (C1.9)".to_owned(),
        }
    }
}
