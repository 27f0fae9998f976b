//! Rendering: `-o json` (the stable interface), `-o yaml` (the same document)
//! and `-o table` (for people).
//!
//! JSON and YAML are produced from a [`serde_json::Value`], whose maps are
//! sorted by key, so the same input always gives byte-identical output.
//! Tables never wrap or adapt to the terminal width, for the same reason.

use std::io::{self, Write};

use comfy_table::{ContentArrangement, Table, presets};
use serde_json::Value;

use crate::cli::OutputFormat;

/// What a command produces: the machine-readable document and its table
/// rendering.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// The `-o json` / `-o yaml` document.
    pub document: Value,
    /// The `-o table` text, ending in a newline.
    pub table: String,
}

/// Writes an output in the requested format.
pub fn write(format: OutputFormat, output: &Output, out: &mut dyn Write) -> io::Result<()> {
    match format {
        OutputFormat::Json => {
            let text = serde_json::to_string_pretty(&output.document).map_err(io::Error::other)?;
            writeln!(out, "{text}")
        }
        OutputFormat::Yaml => {
            let text = serde_saphyr::to_string(&output.document).map_err(io::Error::other)?;
            out.write_all(text.as_bytes())?;
            if !text.ends_with('\n') {
                writeln!(out)?;
            }
            Ok(())
        }
        OutputFormat::Table => out.write_all(output.table.as_bytes()),
    }
}

/// A borderless table in the style of `kubectl get`: upper-case headers,
/// columns separated by spaces, never wrapped.
pub fn table<I, R, C>(headers: &[&str], rows: I) -> String
where
    I: IntoIterator<Item = R>,
    R: IntoIterator<Item = C>,
    C: Into<String>,
{
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(headers.iter().map(|header| header.to_uppercase()));
    for row in rows {
        table.add_row(row.into_iter().map(Into::into).collect::<Vec<String>>());
    }
    let mut text = String::new();
    for line in table.to_string().lines() {
        // comfy-table pads with one space on each side; trim the edges so
        // that lines have no trailing blanks.
        text.push_str(line.strip_prefix(' ').unwrap_or(line).trim_end());
        text.push('\n');
    }
    text
}

/// A titled section of a multi-table report.
pub fn section(title: &str, body: &str) -> String {
    format!("== {title} ==\n{body}\n")
}

/// `-` for an absent value in a table cell.
pub fn or_dash(value: Option<impl ToString>) -> String {
    value.map_or_else(|| "-".to_owned(), |value| value.to_string())
}
