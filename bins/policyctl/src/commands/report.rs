//! `report`: the whole picture in tables.

use serde_json::json;

use crate::commands::CommandError;
use crate::manifest::Inventory;
use crate::output::{Output, section, table};

/// Builds the report: the input summary, then one section per policy.
pub fn run(inventory: &Inventory) -> Result<Output, CommandError> {
    let counts = inventory.counts();
    let mut text = section(
        "Input objects",
        &table(
            &["kind", "count"],
            counts
                .iter()
                .map(|(kind, count)| [(*kind).to_owned(), count.to_string()]),
        ),
    );
    text.truncate(text.trim_end().len());
    text.push('\n');
    let document = json!({
        "objects": counts.iter().map(|(kind, count)| ((*kind).to_owned(), json!(count))).collect::<serde_json::Map<_, _>>(),
    });
    Ok(Output {
        document,
        table: text,
    })
}
