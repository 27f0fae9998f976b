//! Loading the node-agent configuration (documented on [`load_json`]).

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::ConfigMap;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

use crate::config::NodeAgentConfig;
use crate::finding::{Finding, FindingKind};
use crate::schema::{Field, NODE_AGENT_CONFIG, Shape, edit_distance, field_locations, fold};
use crate::validate::validate;
use crate::version::VeleroVersion;

/// A configuration that was loaded, with every finding about it (loading
/// warnings first, in document order, then validation findings).
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// The decoded configuration (what Velero would decode).
    pub config: NodeAgentConfig,
    /// Warnings from loading and findings from [`validate`].
    pub findings: Vec<Finding>,
}

/// Why a configuration cannot be loaded. Velero refuses to start the
/// node-agent for each of these (C1.9), except [`LoadError::DuplicateKey`]
/// which Go decodes by merging (we refuse, see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// C1.4: the ConfigMap has no `data` (or an empty one).
    #[error(
        "data is not available in config map {name}: put the configuration JSON under one key of `data` (`binaryData` is never read)"
    )]
    NoData {
        /// ConfigMap name.
        name: String,
    },
    /// C1.5: more than one key in `data`.
    #[error(
        "more than one keys are found in ConfigMap {name}'s data ({}); only expect one: keep a single key holding the whole configuration",
        .keys.join(", ")
    )]
    MoreThanOneKey {
        /// ConfigMap name.
        name: String,
        /// The keys found, sorted.
        keys: Vec<String>,
    },
    /// C1.7: not JSON, or trailing data after the JSON value.
    #[error("{origin}: invalid JSON at line {line}, column {column}: {message}")]
    Syntax {
        /// Where the text came from.
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// C1.7: the document is not a JSON object (or `null`).
    #[error("{origin}: the configuration must be a JSON object, found {found}")]
    NotAnObject {
        /// Where the text came from.
        origin: String,
        /// A short rendering of what was found.
        found: String,
    },
    /// C1.7: a value of the wrong type (string for a number, bool for an
    /// annotation value, float or overflowing number for an integer).
    #[error("{origin}: {path}: {message}; found {found}")]
    WrongType {
        /// Where the text came from.
        origin: String,
        /// JSON path of the value.
        path: String,
        /// What was expected.
        message: String,
        /// The offending value (shortened).
        found: String,
    },
    /// A key given twice in one object (also when differing only in case).
    #[error(
        "{origin}: {path}: key {key:?} is given more than once (first as {first:?}); Go would merge the two silently, remove one"
    )]
    DuplicateKey {
        /// Where the text came from.
        origin: String,
        /// JSON path of the object.
        path: String,
        /// The repeated key as written the second time.
        key: String,
        /// The key as written the first time.
        first: String,
    },
}

/// Loads the configuration from a ConfigMap (C1.4–C1.6): exactly one key in
/// `data`, whatever its name; `binaryData` is ignored. Read as the newest
/// Velero release reads it ([`load_config_map_at`] for another version).
pub fn load_config_map(config_map: &ConfigMap) -> Result<Loaded, LoadError> {
    load_config_map_at(config_map, VeleroVersion::NEWEST_RELEASE)
}

/// [`load_config_map`] as Velero `version` reads it: keys its struct does
/// not have yet are dropped with a finding saying from which version on
/// they are read (V1.1).
pub fn load_config_map_at(
    config_map: &ConfigMap,
    version: VeleroVersion,
) -> Result<Loaded, LoadError> {
    let name = config_map.metadata.name.as_deref().unwrap_or_default();
    load_config_map_data_at(name, config_map.data.as_ref(), version)
}

/// Loads the configuration from the `data` of the ConfigMap named `name`,
/// as the newest Velero release reads it.
pub fn load_config_map_data(
    name: &str,
    data: Option<&BTreeMap<String, String>>,
) -> Result<Loaded, LoadError> {
    load_config_map_data_at(name, data, VeleroVersion::NEWEST_RELEASE)
}

/// [`load_config_map_data`] as Velero `version` reads it.
pub fn load_config_map_data_at(
    name: &str,
    data: Option<&BTreeMap<String, String>>,
    version: VeleroVersion,
) -> Result<Loaded, LoadError> {
    let data = match data {
        Some(data) if !data.is_empty() => data,
        _ => {
            return Err(LoadError::NoData {
                name: name.to_owned(),
            });
        }
    };
    let mut entries = data.iter();
    match (entries.next(), entries.next()) {
        (Some((key, text)), None) => {
            load_text(&format!("ConfigMap {name}, key {key}"), text, version)
        }
        _ => Err(LoadError::MoreThanOneKey {
            name: name.to_owned(),
            keys: data.keys().cloned().collect(),
        }),
    }
}

/// Loads the configuration from JSON text (e.g. the file given to
/// `kubectl create cm --from-file`).
///
/// Loading the node-agent configuration from a ConfigMap or JSON text
/// (C1.4–C1.10), with diagnostics Velero does not give.
///
/// Decoding follows Go's `encoding/json` into `NodeAgentConfigs`, with these
/// deliberate choices (see `docs/compatibility.md`):
/// - unknown keys are ignored like Velero but reported as warnings, with a
///   "did you mean" for misplaced or misspelt keys;
/// - keys matching only case-insensitively are accepted like Go (C1.8) and
///   reported as warnings;
/// - duplicate keys (also ones differing only in case) are an error: Go
///   merges them in ways nobody intends (scalars last-wins, objects merge);
/// - `null` is treated as Go does: absent for object members, the zero
///   value inside lists and maps, kept for `loadAffinity` entries (pointers);
///   a top-level `null` is an empty configuration;
/// - integers must be JSON integers fitting in `i64`; floats, exponents and
///   overflow are errors like in Go (C1.7);
/// - input must be UTF-8 (a ConfigMap value always is).
///
/// Loading never panics, whatever the input (fuzzed).
pub fn load_json(text: &str) -> Result<Loaded, LoadError> {
    load_json_at(text, VeleroVersion::NEWEST_RELEASE)
}

/// [`load_json`] as Velero `version` reads it.
pub fn load_json_at(text: &str, version: VeleroVersion) -> Result<Loaded, LoadError> {
    load_text("configuration", text, version)
}

/// Loads the configuration from raw bytes, which must be UTF-8 JSON.
pub fn load_json_bytes(bytes: &[u8]) -> Result<Loaded, LoadError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => load_json(text),
        Err(error) => {
            let before = &bytes[..error.valid_up_to()];
            let line = before.iter().filter(|b| **b == b'\n').count() + 1;
            let column = before.iter().rev().take_while(|b| **b != b'\n').count() + 1;
            Err(LoadError::Syntax {
                origin: "configuration".to_owned(),
                line,
                column,
                message: "invalid UTF-8".to_owned(),
            })
        }
    }
}

fn load_text(origin: &str, text: &str, version: VeleroVersion) -> Result<Loaded, LoadError> {
    let (config, mut findings) =
        decode::<NodeAgentConfig>(origin, text, NODE_AGENT_CONFIG, version)?;
    findings.extend(validate(&config));
    Ok(Loaded { config, findings })
}

/// Decodes one JSON document of the given schema with Go's rules (the
/// module documentation of [`load_json`]) as Velero `version` reads it: the
/// typed value and the loading warnings (unknown, mis-cased and
/// not-yet-read keys), or why it does not decode. Shared by the node-agent
/// configuration and the repository-maintenance job configuration, whose
/// values Velero decodes the same way.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    origin: &str,
    text: &str,
    root: &'static [Field],
    version: VeleroVersion,
) -> Result<(T, Vec<Finding>), LoadError> {
    let tree = parse(origin, text)?;
    let mut normaliser = Normaliser {
        origin,
        root,
        version,
        findings: Vec::new(),
    };
    let value = match tree {
        Json::Null => Value::Object(serde_json::Map::new()),
        Json::Object(_) => {
            let mut path = Vec::new();
            normaliser.object(tree, root, &mut path)?
        }
        other => {
            return Err(LoadError::NotAnObject {
                origin: origin.to_owned(),
                found: short(&other.into_value()),
            });
        }
    };
    let config: T = serde_path_to_error::deserialize(value.clone()).map_err(|e| {
        let path = e.path().to_string();
        let found = lookup(&value, e.path())
            .map(short)
            .unwrap_or_else(|| "nothing".to_owned());
        LoadError::WrongType {
            origin: origin.to_owned(),
            path,
            message: plain_type_message(&e.into_inner().to_string()),
            found,
        }
    })?;
    Ok((config, normaliser.findings))
}

fn parse(origin: &str, text: &str) -> Result<Json, LoadError> {
    let syntax = |e: serde_json::Error| LoadError::Syntax {
        origin: origin.to_owned(),
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let tree = Json::deserialize(&mut deserializer).map_err(syntax)?;
    deserializer.end().map_err(syntax)?;
    Ok(tree)
}

/// A decoder's message about a value of the wrong type, in the user's
/// words rather than Rust's: a type name such as `i64` or `u32` becomes the
/// range of whole numbers it holds, `f64` "a number", and `floating point`
/// a number with a fraction or an exponent (`1e+20` is one, whatever its
/// size).
pub fn plain_type_message(message: &str) -> String {
    let mut text = message.replace(
        "invalid type: floating point",
        "invalid type: a number with a fraction or an exponent",
    );
    for (rust, words) in RUST_NUMBER_TYPES {
        let needle = format!("expected {rust}");
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(at) = rest.find(&needle) {
            let after = &rest[at + needle.len()..];
            out.push_str(&rest[..at]);
            if after.starts_with(|c: char| c.is_ascii_alphanumeric()) {
                out.push_str(&needle);
            } else {
                out.push_str("expected ");
                out.push_str(words);
            }
            rest = after;
        }
        out.push_str(rest);
        text = out;
    }
    text
}

/// Rust's number types as users would say them.
const RUST_NUMBER_TYPES: &[(&str, &str)] = &[
    (
        "i64",
        "a whole number from -9223372036854775808 to 9223372036854775807",
    ),
    (
        "isize",
        "a whole number from -9223372036854775808 to 9223372036854775807",
    ),
    ("i32", "a whole number from -2147483648 to 2147483647"),
    ("i16", "a whole number from -32768 to 32767"),
    ("i8", "a whole number from -128 to 127"),
    ("u64", "a whole number from 0 to 18446744073709551615"),
    ("usize", "a whole number from 0 to 18446744073709551615"),
    ("u32", "a whole number from 0 to 4294967295"),
    ("u16", "a whole number from 0 to 65535"),
    ("u8", "a whole number from 0 to 255"),
    ("f64", "a number"),
    ("f32", "a number"),
];

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

fn lookup<'a>(value: &'a Value, path: &serde_path_to_error::Path) -> Option<&'a Value> {
    let mut current = value;
    for segment in path.iter() {
        current = match segment {
            serde_path_to_error::Segment::Seq { index } => current.get(*index)?,
            serde_path_to_error::Segment::Map { key } => current.get(key.as_str())?,
            _ => return None,
        };
    }
    Some(current)
}

/// A compact rendering of a JSON value, at most ~60 characters.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 60 {
        text
    } else {
        let mut cut: String = text.chars().take(57).collect();
        cut.push_str("...");
        cut
    }
}

/// A parsed JSON document that keeps every object member in order,
/// duplicates included.
enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn into_value(self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Bool(b) => Value::Bool(b),
            Self::Number(n) => Value::Number(n),
            Self::String(s) => Value::String(s),
            Self::Array(items) => Value::Array(items.into_iter().map(Self::into_value).collect()),
            // Only reached for subtrees of the wrong type (they fail typed
            // decoding anyway); the last duplicate wins there.
            Self::Object(members) => Value::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k, v.into_value()))
                    .collect(),
            ),
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Number::from_f64(v)
            .map(Json::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            members.push((key, value));
        }
        Ok(Json::Object(members))
    }
}

/// Applies Go's decoding rules for keys and nulls, collecting warnings.
struct Normaliser<'a> {
    origin: &'a str,
    /// The document's schema (for "did you mean" across the document).
    root: &'static [Field],
    /// The Velero version reading the configuration.
    version: VeleroVersion,
    findings: Vec<Finding>,
}

fn display_path(path: &[String]) -> String {
    let mut out = String::new();
    for segment in path {
        if segment.starts_with('[') || out.is_empty() {
            out.push_str(segment);
        } else {
            out.push('.');
            out.push_str(segment);
        }
    }
    out
}

fn zero(shape: &Shape) -> Value {
    match shape {
        Shape::Str => Value::String(String::new()),
        Shape::Bool => Value::Bool(false),
        Shape::Int => Value::Number(0.into()),
        Shape::Object(fields) => {
            let mut object = serde_json::Map::new();
            add_required(fields, &mut object);
            Value::Object(object)
        }
        Shape::NullableObject(_) | Shape::Map(_) | Shape::Array(_) => Value::Null,
    }
}

fn add_required(fields: &[Field], object: &mut serde_json::Map<String, Value>) {
    for field in fields.iter().filter(|f| f.required) {
        if !object.contains_key(field.name) {
            object.insert(field.name.to_owned(), zero(&field.shape));
        }
    }
}

impl Normaliser<'_> {
    fn value(
        &mut self,
        json: Json,
        shape: &Shape,
        path: &mut Vec<String>,
    ) -> Result<Value, LoadError> {
        match (shape, json) {
            (Shape::Object(fields) | Shape::NullableObject(fields), json @ Json::Object(_)) => {
                self.object(json, fields, path)
            }
            (Shape::Map(inner), Json::Object(members)) => {
                let mut out = serde_json::Map::new();
                for (key, value) in members {
                    if out.contains_key(&key) {
                        return Err(self.duplicate(path, &key, &key));
                    }
                    path.push(key.clone());
                    let value = match value {
                        Json::Null => zero(inner),
                        other => self.value(other, inner, path)?,
                    };
                    path.pop();
                    out.insert(key, value);
                }
                Ok(Value::Object(out))
            }
            (Shape::Array(inner), Json::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (index, item) in items.into_iter().enumerate() {
                    path.push(format!("[{index}]"));
                    out.push(match item {
                        Json::Null => zero(inner),
                        other => self.value(other, inner, path)?,
                    });
                    path.pop();
                }
                Ok(Value::Array(out))
            }
            // Scalars and type mismatches are left to typed decoding, which
            // reports them with their path.
            (_, json) => Ok(json.into_value()),
        }
    }

    fn duplicate(&self, path: &[String], key: &str, first: &str) -> LoadError {
        LoadError::DuplicateKey {
            origin: self.origin.to_owned(),
            path: if path.is_empty() {
                "<document>".to_owned()
            } else {
                display_path(path)
            },
            key: key.to_owned(),
            first: first.to_owned(),
        }
    }

    fn object(
        &mut self,
        json: Json,
        fields: &[Field],
        path: &mut Vec<String>,
    ) -> Result<Value, LoadError> {
        let Json::Object(members) = json else {
            return Ok(json.into_value());
        };
        let mut out = serde_json::Map::new();
        // canonical field name -> key as first written
        let mut seen: BTreeMap<&'static str, String> = BTreeMap::new();
        for (key, value) in members {
            let field = fields.iter().find(|f| f.name == key).or_else(|| {
                let folded = fold(&key);
                fields.iter().find(|f| fold(f.name) == folded)
            });
            let Some(field) = field else {
                path.push(key.clone());
                self.unknown_key(&key, fields, path);
                path.pop();
                continue;
            };
            if let Some(first) = seen.get(field.name) {
                return Err(self.duplicate(path, &key, first));
            }
            seen.insert(field.name, key.clone());
            path.push(key.clone());
            if field.since > self.version {
                self.findings.push(Finding::warning(
                    FindingKind::NotReadAtVersion,
                    display_path(path),
                    format!(
                        "key {key:?} is read from Velero {} on; Velero {} ignores it",
                        field.since, self.version
                    ),
                    "silently ignored by this version (V1.1)",
                ));
                path.pop();
                continue;
            }
            if field.name != key {
                self.findings.push(Finding::warning(
                    FindingKind::KeyCase,
                    display_path(path),
                    format!(
                        "key {key:?} matches {:?} only case-insensitively; write it as {:?}",
                        field.name, field.name
                    ),
                    "accepted: Go's encoding/json matches keys case-insensitively (C1.8)",
                ));
            }
            if !matches!(value, Json::Null) {
                let value = self.value(value, &field.shape, path)?;
                out.insert(field.name.to_owned(), value);
            }
            path.pop();
        }
        add_required(fields, &mut out);
        Ok(Value::Object(out))
    }

    fn unknown_key(&mut self, key: &str, siblings: &[Field], path: &[String]) {
        let here = display_path(path);
        let folded = fold(key);
        let mut message = format!("unknown key {key:?}");
        let node_agent = std::ptr::eq(self.root, NODE_AGENT_CONFIG);
        if let Some(hint) = known_mistake(key).filter(|_| node_agent) {
            message.push_str(&format!("; {hint}"));
        } else if let Some(location) = field_locations(self.root, &folded).into_iter().next() {
            message.push_str(&format!(
                "; did you mean {location:?}? {key:?} belongs there, not here"
            ));
        } else if let Some(near) = siblings
            .iter()
            .map(|f| {
                (
                    edit_distance(&key.to_ascii_lowercase(), &f.name.to_ascii_lowercase()),
                    f.name,
                )
            })
            .filter(|(distance, name)| *distance <= 2.max(name.len() / 5))
            .min()
        {
            message.push_str(&format!("; did you mean {:?}?", near.1));
        } else {
            let names: Vec<&str> = siblings
                .iter()
                .filter(|f| f.since <= self.version)
                .map(|f| f.name)
                .collect();
            message.push_str(&format!("; known keys here: {}", names.join(", ")));
        }
        self.findings.push(Finding::warning(
            FindingKind::UnknownKey,
            here,
            message,
            if node_agent {
                "silently ignored (C1.8, W1.2)"
            } else {
                "silently ignored (C1.8, R5.6)"
            },
        ));
    }
}

/// Keys that Velero's own documents use wrongly (D1.1, D1.2).
fn known_mistake(key: &str) -> Option<&'static str> {
    match key {
        "thresholdInGB" => Some(
            "did you mean \"cachePVC.residentThresholdInMB\"? the documented \"thresholdInGB\" is never read and the real key counts MiB, not GB (D1.2)",
        ),
        _ => None,
    }
}

/// The fuzzing entry point (feature `fuzzing`;
/// `fuzz/fuzz_targets/node_agent_config.rs`, and
/// the corpus replay test): loads `data`; if it loads, exercises the
/// consumers of the configuration (fragments, concurrency, serialisation).
/// Never panics for any input (that is what the fuzzer checks).
#[cfg(feature = "fuzzing")]
pub fn fuzz_entry(data: &[u8]) {
    let Ok(loaded) = load_json_bytes(data) else {
        return;
    };
    let config = &loaded.config;
    let mut classes: Vec<&str> = vec!["", "standard"];
    classes.extend(
        config
            .load_affinity
            .iter()
            .flatten()
            .flatten()
            .map(|e| e.storage_class()),
    );
    classes.extend(config.backup_pvc.iter().flatten().map(|(k, _)| k.as_str()));
    let attached = ["node-1".to_owned()];
    for class in classes {
        for os in [crate::NodeOs::Linux, crate::NodeOs::Windows] {
            let _ = crate::backup_fragment(
                config,
                &crate::BackupVolume {
                    source_storage_class: class,
                    wait_for_first_consumer: false,
                    pv_node_affinity: None,
                    attached_nodes: &attached,
                },
                os,
            );
            let _ = crate::restore_fragment(
                config,
                &crate::RestoreVolume {
                    storage_class: class,
                    wait_for_first_consumer: true,
                    selected_node: Some("node-1"),
                },
                os,
            );
        }
    }
    let (concurrency, _) = crate::NodeConcurrency::compile(config.load_concurrency.as_ref());
    let labels = BTreeMap::from([("kubernetes.io/hostname".to_owned(), "node-1".to_owned())]);
    let _ = concurrency.for_labels(&labels);
    let _ = serde_json::to_string(config);
}
