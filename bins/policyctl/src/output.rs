//! Rendering: `-o json` (the stable interface), `-o yaml` (the same document),
//! `-o table` (for people) and `-o html` (a page over the same document for
//! `report`, `schedule`, `diagnose` and `capacity`, [`crate::html`]).
//!
//! JSON and YAML are produced from a [`serde_json::Value`], whose maps are
//! sorted by key, so the same input always gives byte-identical output.
//! Tables never adapt to the terminal width, for the same reason; those of
//! [`fitted_table`] are laid out for a fixed [`TABLE_WIDTH`] of 120 columns,
//! long cells wrapped at word boundaries.

use std::io::{self, Write};

use clap::ValueEnum;
use comfy_table::{ContentArrangement, Table, presets};
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
    /// One self-contained HTML page that embeds the JSON document and draws
    /// views of it (`report`, `schedule`, `diagnose` and `capacity`).
    Html,
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
        OutputFormat::Html => out.write_all(crate::html::report_page(&output.document).as_bytes()),
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

/// [`table`], with long cells wrapped between words or after a `/`, `-` or
/// `.` (never inside a name that fits its column; one that cannot fit is
/// cut with `…`) so that no line is wider than [`TABLE_WIDTH`] (the commands people read in a terminal:
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
    let mut headers: Vec<String> = headers.iter().map(|header| header.to_uppercase()).collect();
    let mut rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|row| row.into_iter().map(Into::into).collect())
        .collect();
    if rows.is_empty() {
        // Headers over nothing read as a table that failed to print.
        return format!("{EMPTY_TABLE}\n");
    }
    // The natural width of each column: its widest line of header or cell.
    let mut widths: Vec<usize> = headers.iter().map(|h| width_of(h)).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            let width = cell.lines().map(width_of).max().unwrap_or(0);
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(width),
                None => widths.push(width),
            }
        }
    }
    if fit {
        // Headers wrap between their words; none is cut.
        let header_words: Vec<usize> = headers
            .iter()
            .map(|h| h.split_whitespace().map(width_of).max().unwrap_or(0))
            .collect();
        let limits = column_limits(&widths, &header_words, &rows);
        for (header, limit) in headers.iter_mut().zip(&limits) {
            *header = wrap(header, *limit);
        }
        for row in &mut rows {
            for (cell, limit) in row.iter_mut().zip(&limits) {
                *cell = wrap(cell, *limit);
            }
        }
    }
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .force_no_tty()
        .set_header(headers)
        .set_content_arrangement(ContentArrangement::Disabled);
    for row in rows {
        table.add_row(row);
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

/// What a table with no rows prints instead of its headers.
pub const EMPTY_TABLE: &str = "none";

/// Columns at most this wide are never wrapped when a table is too wide.
const NEVER_WRAPPED: usize = 16;

/// The least width of the widest column of a table too wide to fit.
const MESSAGE_WIDTH: usize = 40;

fn width_of(text: &str) -> usize {
    text.chars().count()
}

/// The width each column of a table whose columns are naturally `widths`
/// wide may take so that a line fits [`TABLE_WIDTH`]: the widest columns
/// give way first, columns of at most [`NEVER_WRAPPED`] never do, and the
/// widest column (the message) keeps [`MESSAGE_WIDTH`], and none gets
/// narrower than the longest word of its header (`headers`). Columns first
/// keep room for their longest unbreakable token (see [`wrap`]); only when
/// that cannot fit do they shrink further, and such tokens are cut; as a
/// last resort the widest columns shrink below those widths too.
fn column_limits(widths: &[usize], headers: &[usize], rows: &[Vec<String>]) -> Vec<usize> {
    let available = usize::from(TABLE_WIDTH).saturating_sub(2 * widths.len().saturating_sub(1));
    let mut limits = widths.to_vec();
    if widths.iter().sum::<usize>() <= available {
        return limits;
    }
    let widest = widths
        .iter()
        .enumerate()
        .max_by_key(|(i, width)| (**width, usize::MAX - i))
        .map_or(0, |(i, _)| i);
    let header = |i: usize| headers.get(i).copied().unwrap_or(0);
    let longest_token = |i: usize| {
        rows.iter()
            .filter_map(|row| row.get(i))
            .flat_map(|cell| cell.split_whitespace())
            .flat_map(segments)
            .map(width_of)
            .max()
            .unwrap_or(0)
    };
    // The least width of column `i` (naturally `width` wide) when tokens
    // stay whole and the message keeps `message` columns.
    let whole = |i: usize, width: usize, message: usize| {
        let floor = if width <= NEVER_WRAPPED {
            width
        } else if i == widest {
            width.min(message)
        } else {
            NEVER_WRAPPED
        };
        floor.max(header(i)).max(longest_token(i).min(width))
    };
    // In order: a readable message; any message width; tokens cut, names
    // keep [`NEVER_WRAPPED`]; the widest columns down to that too.
    let readable: Vec<usize> = (0..widths.len())
        .map(|i| whole(i, widths[i], MESSAGE_WIDTH))
        .collect();
    let whole_tokens: Vec<usize> = (0..widths.len())
        .map(|i| whole(i, widths[i], NEVER_WRAPPED))
        .collect();
    let cut_tokens: Vec<usize> = (0..widths.len())
        .map(|i| {
            let width = widths[i];
            let floor = if i == widest {
                width.min(MESSAGE_WIDTH)
            } else {
                width.min(NEVER_WRAPPED)
            };
            floor.max(header(i))
        })
        .collect();
    let last_resort: Vec<usize> = (0..widths.len())
        .map(|i| widths[i].min(NEVER_WRAPPED).max(header(i)))
        .collect();
    for floors in [readable, whole_tokens, cut_tokens, last_resort] {
        while limits.iter().sum::<usize>() > available {
            // Narrow the widest column that may still give way.
            let Some(i) = (0..limits.len())
                .filter(|i| limits[*i] > floors[*i])
                .max_by_key(|i| (limits[*i], *i))
            else {
                break;
            };
            limits[i] -= 1;
        }
    }
    limits
}

/// The pieces of a word between the places a line may break: after each
/// `/`, `-` and `.` (`node.cluster.x-k8s.io/esxi-host` breaks as
/// `node.` `cluster.` `x-` `k8s.` `io/` `esxi-` `host`).
fn segments(word: &str) -> impl Iterator<Item = &str> {
    word.split_inclusive(['/', '-', '.'])
}

/// `text` wrapped to lines of at most [`TABLE_WIDTH`] characters (the
/// notes under a fitted table), as [`fitted_table`] wraps its cells.
pub fn wrap_to_width(text: &str) -> String {
    wrap(text, usize::from(TABLE_WIDTH))
}

/// `text` wrapped to lines of at most `limit` characters, keeping its own
/// line breaks. Lines break between words, else after a separator of a
/// word too long for a line of its own ([`segments`]), never inside a
/// token that fits; a token longer than `limit` is cut and ends in `…`
/// (`-o json` has it whole).
fn wrap(text: &str, limit: usize) -> String {
    if limit == 0 || text.lines().all(|line| width_of(line) <= limit) {
        return text.to_owned();
    }
    let mut lines: Vec<String> = Vec::new();
    for original in text.lines() {
        let mut line = String::new();
        for word in original.split_whitespace() {
            let gap = usize::from(!line.is_empty());
            if width_of(&line) + gap + width_of(word) <= limit {
                if gap == 1 {
                    line.push(' ');
                }
                line.push_str(word);
                continue;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            if width_of(word) <= limit {
                line.push_str(word);
                continue;
            }
            for segment in segments(word) {
                if width_of(&line) + width_of(segment) > limit && !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                if width_of(segment) > limit {
                    line.extend(segment.chars().take(limit.saturating_sub(1)));
                    line.push('…');
                } else {
                    line.push_str(segment);
                }
            }
        }
        lines.push(line);
    }
    lines.join("\n")
}

/// A titled section of a multi-table report.
pub fn section(title: &str, body: &str) -> String {
    format!("== {title} ==\n{body}\n")
}

/// `-` for an absent value in a table cell.
pub fn or_dash(value: Option<impl ToString>) -> String {
    value.map_or_else(|| "-".to_owned(), |value| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::{EMPTY_TABLE, TABLE_WIDTH, fitted_table, table, wrap};

    #[test]
    fn words_that_fit_move_whole_to_the_next_line() {
        assert_eq!(
            wrap("phase WaitingForPluginOperations since", 30),
            "phase\nWaitingForPluginOperations\nsince"
        );
    }

    #[test]
    fn long_names_break_after_a_separator_never_inside_a_part() {
        assert_eq!(
            wrap("key node.cluster.x-k8s.io/esxi-host-name", 20),
            "key\nnode.cluster.x-k8s.\nio/esxi-host-name"
        );
        assert_eq!(
            wrap("d6f7c7a4-3c1e-4f2b-9a57-0e3b2c1d4f5a", 16),
            "d6f7c7a4-3c1e-\n4f2b-9a57-\n0e3b2c1d4f5a"
        );
    }

    #[test]
    fn a_token_longer_than_its_column_is_cut_with_an_ellipsis() {
        assert_eq!(wrap("WaitingForPluginOperations", 12), "WaitingForP…");
        assert_eq!(wrap("ok", 12), "ok");
    }

    #[test]
    fn own_line_breaks_are_kept() {
        assert_eq!(wrap("a b\nc d", 3), "a b\nc d");
        assert_eq!(wrap("aaa bbb\nc", 3), "aaa\nbbb\nc");
    }

    #[test]
    fn fitted_tables_keep_names_whole_and_wrap_the_message() {
        let message = "the pod cannot run: ".repeat(10);
        let name = "WaitingForPluginOperations";
        let uuid = "d6f7c7a4-3c1e-4f2b-9a57-0e3b2c1d4f5a";
        let text = fitted_table(
            &["phase", "uid", "message"],
            [[name, uuid, message.as_str()]],
        );
        assert!(
            text.lines()
                .all(|line| line.chars().count() <= usize::from(TABLE_WIDTH)),
            "{text}"
        );
        assert!(text.contains(name), "{text}");
        assert!(text.contains(uuid), "{text}");
        for line in text.lines() {
            assert!(!line.contains('…'), "{text}");
        }
    }

    #[test]
    fn empty_tables_say_none_instead_of_headers() {
        let rows: Vec<Vec<String>> = Vec::new();
        assert_eq!(table(&["name"], rows.clone()), format!("{EMPTY_TABLE}\n"));
        assert_eq!(fitted_table(&["name"], rows), format!("{EMPTY_TABLE}\n"));
    }
}
