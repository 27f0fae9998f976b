//! Decoding that never builds what no command reads.
//!
//! [`Skipping`] wraps any serde [`Deserializer`] and, following a static
//! [`Skips`] tree that mirrors an object's shape, passes over the named
//! fields with [`IgnoredAny`]: their text is scanned, nothing is allocated.
//! A pod in a `kubectl get -o json` dump spends most of its bytes on
//! `metadata.managedFields` (a tree of every field set, kept as a
//! `serde_json::Value`), container statuses, environments and probes;
//! decoding them only to drop them made reading slower than it needed to
//! be and raised its peak memory.
//!
//! Everything else is forwarded as it is: the wrapped type sees the same
//! calls, in the same order, with the same errors and positions, and a
//! field that is not skipped decodes exactly as without the adaptor.

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{
    DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

/// What to skip at one place in an object.
#[derive(Debug)]
pub enum Skips {
    /// Nothing below.
    Nothing,
    /// In a map (a struct): the fields named with `None` are skipped,
    /// those named with a child tree are read with it, any other field is
    /// read whole.
    Fields(&'static [(&'static str, Option<&'static Skips>)]),
    /// In a sequence: each element, with this tree.
    Each(&'static Skips),
}

/// A deserializer that skips, below its value, what `skips` names.
pub struct Skipping<D> {
    inner: D,
    skips: &'static Skips,
}

impl<D> Skipping<D> {
    /// `inner`, skipping what `skips` names.
    pub fn new(inner: D, skips: &'static Skips) -> Self {
        Self { inner, skips }
    }
}

/// Forwards a `deserialize_*` method with the visitor wrapped.
macro_rules! forward_deserialize {
    ($($method:ident($($argument:ident: $type:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($argument: $type,)* visitor: V) -> Result<V::Value, D::Error> {
            match self.skips {
                Skips::Nothing => self.inner.$method($($argument,)* visitor),
                skips => self.inner.$method($($argument,)* Wrap { inner: visitor, skips }),
            }
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Skipping<D> {
    type Error = D::Error;

    forward_deserialize! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_ignored_any(visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// A visitor whose maps and sequences skip what `skips` names.
struct Wrap<V> {
    inner: V,
    skips: &'static Skips,
}

/// Forwards `visit_*` methods that carry a plain value.
macro_rules! forward_visit {
    ($($method:ident($type:ty);)*) => {$(
        fn $method<E: serde::de::Error>(self, value: $type) -> Result<V::Value, E> {
            self.inner.$method(value)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(formatter)
    }

    forward_visit! {
        visit_bool(bool);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_i64(i64);
        visit_i128(i128);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_u64(u64);
        visit_u128(u128);
        visit_f32(f32);
        visit_f64(f64);
        visit_char(char);
        visit_str(&str);
        visit_borrowed_str(&'de str);
        visit_string(String);
        visit_bytes(&[u8]);
        visit_borrowed_bytes(&'de [u8]);
        visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner
            .visit_some(Skipping::new(deserializer, self.skips))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .visit_newtype_struct(Skipping::new(deserializer, self.skips))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        let element = match self.skips {
            Skips::Each(element) => element,
            _ => &Skips::Nothing,
        };
        self.inner.visit_seq(Seq {
            inner: seq,
            element,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        match self.skips {
            Skips::Fields(fields) => self.inner.visit_map(Map {
                inner: map,
                fields,
                value: &Skips::Nothing,
            }),
            _ => self.inner.visit_map(map),
        }
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(data)
    }
}

/// A sequence whose elements are read with `element`.
struct Seq<A> {
    inner: A,
    element: &'static Skips,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Seq<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.inner.next_element_seed(Seed {
            inner: seed,
            skips: self.element,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// A map whose entries named in `fields` are skipped or read with their
/// own tree; `value` is the tree of the entry whose key was just read.
struct Map<A> {
    inner: A,
    fields: &'static [(&'static str, Option<&'static Skips>)],
    value: &'static Skips,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Map<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(Key(key)) = self.inner.next_key::<Key<'de>>()? else {
                return Ok(None);
            };
            match self.fields.iter().find(|(name, _)| *name == key) {
                Some((_, None)) => {
                    self.inner.next_value::<IgnoredAny>()?;
                    continue;
                }
                Some((_, Some(child))) => self.value = child,
                None => self.value = &Skips::Nothing,
            }
            return match key {
                Cow::Borrowed(key) => seed.deserialize(BorrowedStrDeserializer::new(key)),
                Cow::Owned(key) => seed.deserialize(StringDeserializer::new(key)),
            }
            .map(Some);
        }
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.inner.next_value_seed(Seed {
            inner: seed,
            skips: self.value,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// A seed whose value is read with `skips`.
struct Seed<S> {
    inner: S,
    skips: &'static Skips,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.inner
            .deserialize(Skipping::new(deserializer, self.skips))
    }
}

/// A map key, borrowed from the text when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a field name")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }

            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }

            fn visit_string<E: serde::de::Error>(self, key: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key)))
            }
        }

        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Decodes `T` from JSON `text`, skipping what `skips` names.
pub fn from_json_str<'de, T: serde::Deserialize<'de>>(
    text: &'de str,
    skips: &'static Skips,
) -> Result<T, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(Skipping::new(&mut deserializer, skips))?;
    deserializer.end()?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::{Skips, from_json_str};
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    static CONTAINER: Skips = Skips::Fields(&[("env", None), ("command", None)]);
    static POD: Skips = Skips::Fields(&[
        ("metadata", Some(&Skips::Fields(&[("managedFields", None)]))),
        (
            "spec",
            Some(&Skips::Fields(&[(
                "containers",
                Some(&Skips::Each(&CONTAINER)),
            )])),
        ),
        ("status", None),
    ]);

    fn pod() -> serde_json::Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web-0",
                "namespace": "shop",
                "labels": {"app": "web"},
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
            },
            "spec": {
                "nodeName": "n1",
                "containers": [{
                    "name": "c",
                    "image": "nginx",
                    "env": [{"name": "A", "value": "1"}],
                    "command": ["run"],
                    "ports": [{"containerPort": 80, "hostPort": 8080}],
                    "resources": {"requests": {"cpu": "100m"}},
                }],
            },
            "status": {"phase": "Running"},
        })
    }

    #[test]
    fn skipped_fields_are_absent_and_every_other_field_decodes_as_without_skips() {
        let text = pod().to_string();
        let skipped: Pod = from_json_str(&text, &POD).unwrap();
        let mut expected: Pod = serde_json::from_str(&text).unwrap();
        expected.metadata.managed_fields = None;
        expected.status = None;
        let container = &mut expected.spec.as_mut().unwrap().containers[0];
        container.env = None;
        container.command = None;
        assert_eq!(skipped, expected);
    }

    #[test]
    fn nothing_skipped_is_plain_serde_json() {
        let text = pod().to_string();
        let plain: Pod = from_json_str(&text, &Skips::Nothing).unwrap();
        assert_eq!(plain, serde_json::from_str::<Pod>(&text).unwrap());
    }

    #[test]
    fn escaped_keys_and_wrong_types_behave_as_without_skips() {
        // An escaped key is compared unescaped.
        let text =
            r#"{"metadata": {"name": "a", "managed\u0046ields": [1]}, "spec": {"containers": []}}"#;
        let pod: Pod = from_json_str(text, &POD).unwrap();
        assert_eq!(pod.metadata.managed_fields, None);
        // A wrong type inside a skipped field is not an error (it is not
        // read); elsewhere it is the same error.
        let text = r#"{"metadata": {"name": "a", "managedFields": "x"}}"#;
        assert!(from_json_str::<Pod>(text, &POD).is_ok());
        let text = r#"{"metadata": {"name": 5}}"#;
        assert_eq!(
            from_json_str::<Pod>(text, &POD).unwrap_err().to_string(),
            serde_json::from_str::<Pod>(text).unwrap_err().to_string()
        );
        let text = r#"{"metadata": {"name": "a"}} x"#;
        assert!(from_json_str::<Pod>(text, &POD).is_err(), "trailing text");
    }
}
