//! An ordered YAML tree: TOSCA and Heat templates are order-sensitive
//! (heat-translator emits resources in the order of the node templates), so
//! mappings keep their document order, and every scalar is kept as text.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// One YAML node.
#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    /// A mapping, in document order (keys as text).
    Map(Vec<(String, Tree)>),
    /// A sequence.
    Seq(Vec<Tree>),
    /// A scalar, as text (`true`, `3`, `nfvi_node`).
    Scalar(String),
    /// `null`, `~` or an empty value.
    Null,
}

impl Tree {
    /// Parses YAML text (one document).
    pub fn parse(text: &str) -> Result<Self, String> {
        serde_saphyr::from_str::<Tree>(text).map_err(|error| error.to_string())
    }

    /// The value at `key` of a mapping.
    pub fn get(&self, key: &str) -> Option<&Tree> {
        match self {
            Tree::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The entries of a mapping (empty for anything else).
    pub fn entries(&self) -> &[(String, Tree)] {
        match self {
            Tree::Map(entries) => entries,
            _ => &[],
        }
    }

    /// The scalar text, if a scalar.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Tree::Scalar(text) => Some(text),
            _ => None,
        }
    }

    /// What kind of node this is, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Tree::Map(_) => "a mapping",
            Tree::Seq(_) => "a list",
            Tree::Scalar(_) => "a scalar",
            Tree::Null => "null",
        }
    }

    /// A short rendering of the value for error messages.
    pub fn shown(&self) -> String {
        match self {
            Tree::Scalar(text) => format!("{text:?}"),
            Tree::Null => "null".to_owned(),
            Tree::Map(entries) => format!(
                "{{{}}}",
                entries
                    .iter()
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Tree::Seq(items) => format!("a list of {}", items.len()),
        }
    }
}

impl<'de> Deserialize<'de> for Tree {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TreeVisitor)
    }
}

struct TreeVisitor;

impl<'de> Visitor<'de> for TreeVisitor {
    type Value = Tree;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Tree, E> {
        Ok(Tree::Scalar(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Tree, E> {
        Ok(Tree::Scalar(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Tree, E> {
        Ok(Tree::Scalar(v.to_string()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Tree, E> {
        Ok(Tree::Scalar(v.to_string()))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Tree, E> {
        Ok(Tree::Scalar(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Tree, E> {
        Ok(Tree::Scalar(v.to_string()))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Tree, E> {
        Ok(Tree::Scalar(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Tree, E> {
        Ok(Tree::Scalar(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Tree, E> {
        Ok(Tree::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Tree, E> {
        Ok(Tree::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Tree, D::Error> {
        Tree::deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Tree>()? {
            items.push(item);
        }
        Ok(Tree::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree, A::Error> {
        let mut entries: Vec<(String, Tree)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<Tree, Tree>()? {
            let key = match key {
                Tree::Scalar(text) => text,
                Tree::Null => "null".to_owned(),
                other => {
                    return Err(de::Error::custom(format!(
                        "a mapping key must be a scalar, found {}",
                        other.kind()
                    )));
                }
            };
            // A repeated key: the last value wins, in the first one's place
            // (as PyYAML's loader builds a dict).
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => entries.push((key, value)),
            }
        }
        Ok(Tree::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_keep_document_order_and_scalars_their_text() {
        let tree = Tree::parse("b: 1\na: [x, true]\nc:\n").unwrap();
        assert_eq!(
            tree,
            Tree::Map(vec![
                ("b".into(), Tree::Scalar("1".into())),
                (
                    "a".into(),
                    Tree::Seq(vec![Tree::Scalar("x".into()), Tree::Scalar("true".into())])
                ),
                ("c".into(), Tree::Null),
            ])
        );
    }
}
