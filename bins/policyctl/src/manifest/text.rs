//! File text → documents: JSON values or YAML documents, each with its
//! 1-based number in the file, read with limits that grow with the input and
//! refused with messages for people.
//!
//! YAML limits. serde-saphyr's default budget (250,000 nodes, 1,000,000
//! events, 1,024 documents per input) is meant for configuration files; a
//! `kubectl get pods -A -o yaml` of a large cluster has millions of nodes.
//! Every node, event and document takes at least one byte of the text
//! (aliases aside), so the counts are capped in proportion to the text's
//! length: a real dump never reaches them, and memory stays linear in the
//! input. What does not grow with the input stays bounded: nesting depth
//! ([`MAX_DEPTH`]) and alias expansion (serde-saphyr's alias limits: at
//! most 1,000,000 replayed events, 50,000 aliases and anchors, and the
//! alias-to-anchor ratio check), so a "billion laughs" input is refused.

use serde_json::Value;
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::{Error as YamlError, Location, MessageFormatter, Spanned, UserMessageFormatter};

use super::error::ManifestError;
/// Where in a file a problem is (it sits with the errors that carry it).
pub use super::error::Position;

/// Deepest nesting of mappings and sequences read (YAML and JSON alike).
/// Kubernetes objects, managedFields and CRD schemas included, stay far
/// below it.
pub const MAX_DEPTH: usize = 128;

/// One document of a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// 1-based number of the document in its file (empty documents count,
    /// as in an editor).
    pub number: usize,
    /// The document.
    pub value: Value,
}

/// Splits a file into documents. Input whose first non-blank character is
/// `{` or `[` is JSON (one or several concatenated values); anything else
/// is YAML. A leading byte-order mark is ignored.
pub fn documents(name: &str, text: &str) -> Result<Vec<Document>, ManifestError> {
    let text = without_bom(text);
    if is_json(text) {
        json_documents(name, text)
    } else {
        yaml_documents(name, text)
    }
}

/// The text without a leading byte-order mark.
pub fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Whether a text (without its byte-order mark) is read as JSON: its first
/// non-blank character is `{` or `[`.
pub fn is_json(text: &str) -> bool {
    let trimmed = text.trim_start();
    trimmed.starts_with('{') || trimmed.starts_with('[')
}

/// The error for JSON that does not parse, in document `document` of
/// `name`.
pub fn json_syntax_error(name: &str, document: usize, error: &serde_json::Error) -> ManifestError {
    let full = error.to_string();
    // serde_json appends " at line L column C"; the position is given
    // separately.
    let message = full
        .rfind(" at line ")
        .map_or(full.as_str(), |end| &full[..end]);
    let hint = if error.is_eof() {
        "; the file ends in the middle of a value: was it cut short?"
    } else if message.contains("recursion limit") {
        "; policyctl reads at most 127 levels of nested JSON objects and arrays"
    } else {
        ""
    };
    ManifestError::Syntax {
        file: name.to_owned(),
        position: Position {
            document: Some(document),
            line: Some(error.line() as u64),
            // serde_json says column 0 at the end of a line.
            column: Some(error.column() as u64).filter(|column| *column > 0),
        },
        message: format!("not valid JSON: {message}{hint}"),
    }
}

fn json_documents(name: &str, text: &str) -> Result<Vec<Document>, ManifestError> {
    let mut documents = Vec::new();
    for value in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        match value {
            Ok(value) => documents.push(Document {
                number: documents.len() + 1,
                value,
            }),
            Err(error) => return Err(json_syntax_error(name, documents.len() + 1, &error)),
        }
    }
    Ok(documents)
}

/// serde-saphyr's options for a text of `len` bytes (see the module
/// documentation).
pub fn yaml_options(len: usize) -> serde_saphyr::Options {
    let defaults = serde_saphyr::Budget::default();
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_reader_input_bytes: None,
            max_depth: MAX_DEPTH,
            max_documents: defaults.max_documents.max(len),
            max_nodes: defaults.max_nodes.saturating_add(len),
            max_events: defaults.max_events.saturating_add(len.saturating_mul(2)),
            max_total_scalar_bytes: defaults.max_total_scalar_bytes.saturating_add(len),
        },
        with_snippet: false,
    }
}

fn yaml_documents(name: &str, text: &str) -> Result<Vec<Document>, ManifestError> {
    let markers = Markers::scan(text);
    let values: Vec<Spanned<Value>> =
        serde_saphyr::from_multiple_with_options(text, yaml_options(text.len()))
            .map_err(|error| yaml_error(name, text, &markers, &error))?;
    Ok(values
        .into_iter()
        .map(|spanned| Document {
            number: markers.document_at(spanned.referenced.line()),
            value: spanned.value,
        })
        .collect())
}

/// The document-start markers (`---`) of a YAML text, to number documents
/// by line.
struct Markers {
    /// 1-based lines of the markers, ascending.
    lines: Vec<u64>,
    /// Whether a document precedes the first marker (content other than
    /// blank lines, comments and directives).
    content_before_first: bool,
}

impl Markers {
    fn scan(text: &str) -> Self {
        let mut lines = Vec::new();
        let mut content_before_first = false;
        for (index, line) in text.lines().enumerate() {
            if is_document_marker(line, "---") {
                lines.push(index as u64 + 1);
            } else if lines.is_empty() {
                let content = line.trim_start();
                if !(content.is_empty() || content.starts_with('#') || line.starts_with('%')) {
                    content_before_first = true;
                }
            }
        }
        Self {
            lines,
            content_before_first,
        }
    }

    /// The 1-based number of the document that holds `line`.
    fn document_at(&self, line: u64) -> usize {
        let markers = self.lines.partition_point(|&marker| marker <= line);
        (markers + usize::from(self.content_before_first)).max(1)
    }
}

/// Whether `line` is the YAML document marker `marker` (`---` or `...`):
/// the marker at the start of the line, then nothing, a blank or a line end.
pub(super) fn is_document_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

fn known(location: Option<Location>) -> Option<Location> {
    location.filter(|location| location.line() > 0)
}

/// A YAML error as users read it: the file, the document, the line and
/// column, what is wrong and what to do; never the parser's internals.
fn yaml_error(name: &str, text: &str, markers: &Markers, error: &YamlError) -> ManifestError {
    let location = known(error.location());
    let position = Position {
        document: location.map(|l| markers.document_at(l.line())),
        line: location.map(|l| l.line()),
        column: location.map(|l| l.column()),
    };
    let mut message = yaml_message(error);
    if !message.contains("cut short") && ends_mid_line(text, location.map(|l| l.line())) {
        message.push_str(CUT_MID_LINE);
    }
    ManifestError::Syntax {
        file: name.to_owned(),
        position,
        message,
    }
}

/// The hint for an error on the last line of a text that does not end in
/// a newline (`kubectl get -o yaml` output always does).
const CUT_MID_LINE: &str =
    "; the file ends in the middle of a line, without a final newline: was it cut short?";

/// Whether `text` ends without a newline and the error at `line` is on its
/// last line (or the position is unknown).
fn ends_mid_line(text: &str, line: Option<u64>) -> bool {
    if text.is_empty() || text.ends_with('\n') {
        return false;
    }
    let last = u64::try_from(text.lines().count()).unwrap_or(u64::MAX);
    line.is_none_or(|line| line >= last)
}

const ALIAS_BOMB: &str = "refused: its aliases (`*name`) would expand to far more than the file holds (an alias bomb, \"billion laughs\"); kubectl never writes aliases — export the objects again with `kubectl get -o yaml`, or expand the aliases by hand";

/// The original error under serde-saphyr's wrappers, and whether it arose
/// while replaying an alias.
fn original(mut error: &YamlError) -> (&YamlError, bool) {
    let mut through_alias = false;
    loop {
        match error {
            YamlError::AliasError { error: inner, .. } => {
                through_alias = true;
                error = inner;
            }
            YamlError::WithSnippet { error: inner, .. } => error = inner,
            other => return (other, through_alias),
        }
    }
}

fn yaml_message(error: &YamlError) -> String {
    let (error, through_alias) = original(error);
    match error {
        // Counts that grow with the input, reached while replaying aliases.
        YamlError::Budget {
            breach:
                BudgetBreach::Nodes { .. } | BudgetBreach::Events { .. } | BudgetBreach::ScalarBytes { .. },
            ..
        } if through_alias => ALIAS_BOMB.to_owned(),
        YamlError::Budget { breach, .. } => budget_message(breach),
        YamlError::AliasReplayCounterOverflow { .. }
        | YamlError::AliasReplayLimitExceeded { .. }
        | YamlError::AliasExpansionLimitExceeded { .. }
        | YamlError::AliasReplayStackDepthExceeded { .. } => ALIAS_BOMB.to_owned(),
        YamlError::DuplicateMappingKey { key, .. } => match key {
            Some(key) => format!(
                "not valid YAML: the key `{key}` appears twice in one mapping; keep one of them"
            ),
            None => "not valid YAML: a key appears twice in one mapping; keep one of them"
                .to_owned(),
        },
        YamlError::UnknownAnchor { .. } => {
            "not valid YAML: an alias (`*name`) refers to an anchor (`&name`) that is not defined before it in the same document".to_owned()
        }
        YamlError::Eof { .. } => {
            "not valid YAML: the file ends in the middle of a value: was it cut short?".to_owned()
        }
        YamlError::InvalidUtf8Input => "not valid YAML: the text is not UTF-8".to_owned(),
        other => {
            let message = UserMessageFormatter.format_message(other);
            let hint = if message.contains("tab") {
                "; YAML indents with spaces only: replace the tabs"
            } else {
                ""
            };
            format!("not valid YAML: {message}{hint}")
        }
    }
}

fn budget_message(breach: &BudgetBreach) -> String {
    match breach {
        BudgetBreach::Depth { .. } => format!(
            "refused: mappings and lists nested more than {MAX_DEPTH} levels deep; Kubernetes objects never nest that deep — is this the file you meant?"
        ),
        BudgetBreach::Aliases { .. }
        | BudgetBreach::Anchors { .. }
        | BudgetBreach::AliasAnchorRatio { .. }
        | BudgetBreach::RecordedAnchorEvents { .. }
        | BudgetBreach::RecordedAnchorBytes { .. }
        | BudgetBreach::MergeKeys { .. } => ALIAS_BOMB.to_owned(),
        BudgetBreach::SequenceUnbalanced => {
            "not valid YAML: a list or mapping closes that was never opened".to_owned()
        }
        // Node, event, document and byte counts grow with the input (see
        // the module documentation), so reaching them means the text packs
        // far more structure per byte than any YAML a tool writes.
        _ => "refused: the text holds more YAML nodes than its size allows (for example through tags expanded by `%TAG` directives); kubectl never writes such YAML — export the objects again with `kubectl get -o yaml`".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_numbered_as_in_the_file() {
        let markers = Markers::scan("# c\n---\na: 1\n---\n---\nb: 2\n");
        assert_eq!(markers.document_at(3), 1);
        assert_eq!(markers.document_at(6), 3);
        let markers = Markers::scan("a: 1\n---\nb: 2\n");
        assert_eq!(markers.document_at(1), 1);
        assert_eq!(markers.document_at(3), 2);
        let markers = Markers::scan("--- {a: 1}\n--- {b: 2}\n");
        assert_eq!(markers.document_at(2), 2);
    }
}
