//! Rendering: `-o json` (the stable interface), `-o yaml` (the same document)
//! and `-o table` (for people).
//!
//! JSON and YAML are produced from a [`serde_json::Value`], whose maps are
//! sorted by key, so the same input always gives byte-identical output.
//! Tables never adapt to the terminal width, for the same reason; those of
//! [`fitted_table`] are laid out for a fixed [`TABLE_WIDTH`] of 120 columns,
//! long cells wrapped at word boundaries.

use std::io::{self, Write};

use clap::ValueEnum;
use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width, presets};
use serde_json::Value;

/// Output formats of `-o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Tables for people (may evolve between releases).
    Table,
    /// JSON (a stable interface).
    Json,
    /// The same document as JSON, written as YAML.
    Yaml,
}

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

/// The width every table is laid out for, whatever the terminal: long cells
/// are wrapped so that no line is wider.
pub const TABLE_WIDTH: u16 = 120;

/// A borderless table in the style of `kubectl get`: upper-case headers,
/// columns separated by spaces, never wrapped.
pub fn table<I, R, C>(headers: &[&str], rows: I) -> String
where
    I: IntoIterator<Item = R>,
    R: IntoIterator<Item = C>,
    C: Into<String>,
{
    render(headers, rows, false)
}

/// [`table`], with long cells wrapped at word boundaries so that no line is
/// wider than [`TABLE_WIDTH`] (the commands people read in a terminal:
/// `report`, `config check`, `soothe`, `queue`).
pub fn fitted_table<I, R, C>(headers: &[&str], rows: I) -> String
where
    I: IntoIterator<Item = R>,
    R: IntoIterator<Item = C>,
    C: Into<String>,
{
    render(headers, rows, true)
}

fn render<I, R, C>(headers: &[&str], rows: I, fit: bool) -> String
where
    I: IntoIterator<Item = R>,
    R: IntoIterator<Item = C>,
    C: Into<String>,
{
    let headers: Vec<String> = headers.iter().map(|header| header.to_uppercase()).collect();
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|row| row.into_iter().map(Into::into).collect())
        .collect();
    // The natural width of each column: its widest line of header or cell.
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            let width = cell.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(width),
                None => widths.push(width),
            }
        }
    }
    let natural = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .force_no_tty()
        .set_header(headers);
    for row in rows {
        table.add_row(row);
    }
    if fit && natural > usize::from(TABLE_WIDTH) {
        // Wrap only the wide columns (the messages); short ones such as
        // names and phases keep their width. comfy-table counts the one
        // space of padding on each edge, trimmed below.
        table
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(TABLE_WIDTH + 1);
        let widest = widths
            .iter()
            .enumerate()
            .max_by_key(|(i, width)| (**width, usize::MAX - i))
            .map_or(0, |(i, _)| i);
        for (i, width) in widths.iter().enumerate() {
            let constraint = if i == widest {
                // The widest column (the message) keeps a readable width.
                ColumnConstraint::LowerBoundary(Width::Fixed(MESSAGE_WIDTH.min(*width) as u16))
            } else if *width <= NEVER_WRAPPED {
                ColumnConstraint::ContentWidth
            } else {
                continue;
            };
            if let Some(column) = table.column_mut(i) {
                column.set_constraint(constraint);
            }
        }
    } else {
        table.set_content_arrangement(ContentArrangement::Disabled);
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

/// Columns at most this wide are never wrapped when a table is too wide.
const NEVER_WRAPPED: usize = 16;

/// The least width of the widest column of a table too wide to fit.
const MESSAGE_WIDTH: usize = 40;

/// A titled section of a multi-table report.
pub fn section(title: &str, body: &str) -> String {
    format!("== {title} ==\n{body}\n")
}

/// `-` for an absent value in a table cell.
pub fn or_dash(value: Option<impl ToString>) -> String {
    value.map_or_else(|| "-".to_owned(), |value| value.to_string())
}
