//! The fast YAML reader: one document at a time, and within a list one item
//! at a time, without a tree of the file.
//!
//! Each item of a `kind: List` (and each other document) is transcoded into
//! compact JSON text as the YAML parser produces it, leaving out
//! `metadata.managedFields`, and handed to the JSON reader's item path,
//! which decodes it straight into its type. Memory holds the file's text,
//! one item's JSON and the typed objects; the tree reader held a tree of
//! the whole file, about ten times its size.
//!
//! The transcoder writes exactly the JSON of the tree the tree reader
//! builds (the same YAML scalars become the same booleans, numbers and
//! strings; `.nan` and `.inf` become `null`), so both readers file the same
//! objects with the same field messages. This reader takes only what it is
//! sure about and gives up on anything else — a syntax error, an alias, a
//! `%` directive, a `...` marker, an object that has `items` without being a
//! list, a name or a field that does not decode — and the caller then reads
//! the whole input again with the tree reader, which reports the problem
//! exactly as before or reads what only it can.

use std::fmt::{self, Write as _};

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::text::{is_document_marker, yaml_options};
use super::{Inventory, Item, Origin, add_document, add_object, filed_item, with_defaults};

/// Why the fast reader gave up; the caller reads the input with the tree
/// reader instead, which says what is wrong if anything is.
#[derive(Debug)]
pub(super) struct GaveUp;

/// Adds the YAML documents of `text` to `inventory`. Returns whether any
/// document was not empty.
pub(super) fn add_yaml(inventory: &mut Inventory, name: &str, text: &str) -> Result<bool, GaveUp> {
    let mut read_any = false;
    for (number, chunk) in document_chunks(text)? {
        let mut options = yaml_options(chunk.len());
        // kubectl never writes aliases; a file with them takes the tree
        // reader, whose limits are set for the whole input.
        if let Some(budget) = options.budget.as_mut() {
            budget.max_aliases = 0;
            budget.max_anchors = 0;
        }
        options.with_snippet = false;
        let origin = Origin {
            file: name.to_owned(),
            document: number,
            item: None,
        };
        let seed = DocumentSeed {
            inventory: &mut *inventory,
            origin: &origin,
        };
        let read = serde_saphyr::with_deserializer_from_str_with_options(chunk, options, |de| {
            seed.deserialize(de)
        })
        .map_err(|_| GaveUp)?;
        read_any |= read;
    }
    Ok(read_any)
}

/// The documents of a YAML text as slices, each with its 1-based number,
/// split at the document-start markers (`---` at the start of a line, which
/// always ends the document before it). Empty documents count, as for the
/// tree reader; text before the first marker is a document only if it holds
/// more than comments. Gives up on directives (`%`) and document-end markers
/// (`...`), which make the split less obvious.
fn document_chunks(text: &str) -> Result<Vec<(usize, &str)>, GaveUp> {
    let mut starts = Vec::new();
    let mut content_before_first = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.starts_with('%') || is_document_marker(bare, "...") {
            return Err(GaveUp);
        }
        if is_document_marker(bare, "---") {
            starts.push(offset);
        } else if starts.is_empty() {
            let content = bare.trim_start();
            if !(content.is_empty() || content.starts_with('#')) {
                content_before_first = true;
            }
        }
        offset += line.len();
    }
    let mut chunks = Vec::with_capacity(starts.len() + 1);
    let first = usize::from(content_before_first);
    if content_before_first {
        chunks.push((1, &text[..starts.first().copied().unwrap_or(text.len())]));
    }
    for (index, &start) in starts.iter().enumerate() {
        let end = starts.get(index + 1).copied().unwrap_or(text.len());
        chunks.push((first + index + 1, &text[start..end]));
    }
    Ok(chunks)
}

/// A failure inside the fast reader, as the YAML deserializer's error; the
/// text does not matter, since the tree reader reports the problem.
fn give_up<E: de::Error>() -> E {
    E::custom("the fast reader gives up")
}

/// One document: an object, a list whose items are filed one by one, or
/// nothing. Yields whether it was not empty.
struct DocumentSeed<'a> {
    inventory: &'a mut Inventory,
    origin: &'a Origin,
}

impl<'de> DeserializeSeed<'de> for DocumentSeed<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DocumentSeed<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        // The document's other fields, as JSON, in their order.
        let mut fields: Vec<(String, String)> = Vec::new();
        let mut list: Option<ListItems> = None;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            if key == "items" && list.is_none() {
                let mut items = ListItems::default();
                map.next_value_seed(ItemsSeed {
                    inventory: &mut *self.inventory,
                    origin: self.origin,
                    items: &mut items,
                })?;
                list = Some(items);
            } else {
                let object = if key == "metadata" {
                    Scope::Metadata
                } else {
                    Scope::Plain
                };
                let mut json = String::new();
                map.next_value_seed(Transcode {
                    out: &mut json,
                    scope: object,
                })?;
                fields.push((key, json));
            }
        }
        let field = |name: &str| {
            fields
                .iter()
                .find(|(key, _)| key == name)
                .and_then(|(_, json)| serde_json::from_str::<String>(json).ok())
        };
        match list {
            Some(items) => {
                // Items were filed as the items of a list: the document must
                // be one, as the tree reader would find.
                let api_version = field("apiVersion").filter(|v| !v.is_empty());
                let kind = field("kind").filter(|kind| kind.ends_with("List"));
                let (Some(api_version), Some(kind)) = (api_version, kind) else {
                    return Err(give_up());
                };
                let item_kind = kind.strip_suffix("List").unwrap_or_default();
                for (index, text) in items.deferred {
                    let origin = self.origin.item(index);
                    let value = serde_json::from_str::<Value>(&text).map_err(|_| give_up())?;
                    add_document(
                        self.inventory,
                        origin,
                        with_defaults(value, &api_version, item_kind),
                    )
                    .map_err(|_| give_up())?;
                }
            }
            None => {
                let mut json = String::from("{");
                for (index, (key, value)) in fields.iter().enumerate() {
                    if index > 0 {
                        json.push(',');
                    }
                    write_json_string(&mut json, key);
                    json.push(':');
                    json.push_str(value);
                }
                json.push('}');
                let value = serde_json::from_str::<Value>(&json).map_err(|_| give_up())?;
                add_document(self.inventory, self.origin.clone(), value).map_err(|_| give_up())?;
            }
        }
        Ok(true)
    }
}

/// Items of a list read so far that need the list's `apiVersion` and
/// `kind`, which a YAML dump gives after `items`: from the first such item
/// on, every item waits, so that items are filed in their order.
#[derive(Default)]
struct ListItems {
    deferred: Vec<(usize, String)>,
}

/// The `items` of a list document: a sequence of objects, each filed as soon
/// as it is read when it names its own `apiVersion` and `kind`.
struct ItemsSeed<'a> {
    inventory: &'a mut Inventory,
    origin: &'a Origin,
    items: &'a mut ListItems,
}

impl<'de> DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        loop {
            let mut json = String::new();
            let read = seq.next_element_seed(Transcode {
                out: &mut json,
                scope: Scope::Object,
            })?;
            if read.is_none() {
                return Ok(());
            }
            let filed = if self.items.deferred.is_empty() {
                filed_item(&json, None)
            } else {
                None
            };
            match filed {
                Some(filed) => {
                    let item = Item::Text { text: &json };
                    add_object(
                        self.inventory,
                        self.origin.item(index),
                        &filed.api_version,
                        &filed.kind,
                        item,
                    )
                    .map_err(|_| give_up())?;
                }
                None => self.items.deferred.push((index, json)),
            }
            index += 1;
        }
    }
}

/// A mapping key, read the way the tree reader reads keys (as a string).
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_str(KeySeed)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<String, E> {
        Ok(text.to_owned())
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<String, E> {
        Ok(text)
    }
}

/// Where a value sits, for leaving out `metadata.managedFields`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// An object: its `metadata` is [`Scope::Metadata`].
    Object,
    /// An object's `metadata`: `managedFields` is left out.
    Metadata,
    /// Anything else.
    Plain,
}

/// Writes the JSON text of one YAML node, as the tree reader's tree would
/// print.
struct Transcode<'a> {
    out: &'a mut String,
    scope: Scope,
}

impl<'de> DeserializeSeed<'de> for Transcode<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Transcode<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<(), E> {
        self.out.push_str(if value { "true" } else { "false" });
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        write!(self.out, "{value}").map_err(|_| give_up())
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        write!(self.out, "{value}").map_err(|_| give_up())
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<(), E> {
        // The tree keeps what fits 64 bits; anything else is the tree
        // reader's to refuse.
        match i64::try_from(value) {
            Ok(value) => self.visit_i64(value),
            Err(_) => u64::try_from(value)
                .map_err(|_| give_up())
                .and_then(|value| self.visit_u64(value)),
        }
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<(), E> {
        u64::try_from(value)
            .map_err(|_| give_up())
            .and_then(|value| self.visit_u64(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        // A tree number cannot be NaN or infinite: the tree holds null.
        let text = match serde_json::Number::from_f64(value) {
            Some(number) => number.to_string(),
            None => "null".to_owned(),
        };
        self.out.push_str(&text);
        Ok(())
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        write_json_string(self.out, value);
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.out.push_str("null");
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.out.push('[');
        let mut first = true;
        loop {
            let mark = self.out.len();
            if !first {
                self.out.push(',');
            }
            let element = Transcode {
                out: &mut *self.out,
                scope: Scope::Plain,
            };
            if seq.next_element_seed(element)?.is_none() {
                self.out.truncate(mark);
                break;
            }
            first = false;
        }
        self.out.push(']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.out.push('{');
        let mut first = true;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let scope = match (self.scope, key.as_str()) {
                (Scope::Metadata, "managedFields") => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                (Scope::Object, "metadata") => Scope::Metadata,
                _ => Scope::Plain,
            };
            if !first {
                self.out.push(',');
            }
            first = false;
            write_json_string(self.out, &key);
            self.out.push(':');
            map.next_value_seed(Transcode {
                out: &mut *self.out,
                scope,
            })?;
        }
        self.out.push('}');
        Ok(())
    }
}

/// Appends `text` as a JSON string literal.
fn write_json_string(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push('"');
    let mut rest = text;
    // Runs of characters that need no escape are copied whole.
    while let Some(at) = rest.find(|c: char| c == '"' || c == '\\' || c < ' ') {
        out.push_str(&rest[..at]);
        let c = rest[at..].chars().next().unwrap_or_default();
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
        }
        rest = &rest[at + c.len_utf8()..];
    }
    out.push_str(rest);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_numbered_as_the_tree_reader_numbers_documents() {
        let chunks = document_chunks("# c\n---\na: 1\n---\n---\nb: 2\n").expect("plain");
        let numbers: Vec<usize> = chunks.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers, [1, 2, 3]);
        assert_eq!(chunks[2].1, "---\nb: 2\n");
        let chunks = document_chunks("a: 1\n---\nb: 2\n").expect("plain");
        assert_eq!(chunks, [(1, "a: 1\n"), (2, "---\nb: 2\n")]);
        let chunks = document_chunks("--- {a: 1}\n--- {b: 2}\n").expect("plain");
        assert_eq!(chunks, [(1, "--- {a: 1}\n"), (2, "--- {b: 2}\n")]);
        assert!(document_chunks("%YAML 1.2\n---\na: 1\n").is_err());
        assert!(document_chunks("a: 1\n...\nb: 2\n").is_err());
        // Not markers: indented, or followed by other text.
        let chunks = document_chunks("a: |\n  ---\nb: ---x\n").expect("plain");
        assert_eq!(chunks.len(), 1);
    }

    #[test]
    fn strings_are_escaped_as_json() {
        let mut out = String::new();
        write_json_string(&mut out, "a\"b\\c\nd\u{1}é");
        assert_eq!(out, r#""a\"b\\c\nd\u0001é""#);
        assert_eq!(
            serde_json::from_str::<String>(&out).expect("JSON"),
            "a\"b\\c\nd\u{1}é"
        );
    }
}
