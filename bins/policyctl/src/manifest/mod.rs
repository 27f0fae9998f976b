//! The manifest reader: turns files as `kubectl get -o yaml|json` prints
//! them into an [`Inventory`] of typed objects.
//!
//! - A file holds YAML (one or many `---`-separated documents) or JSON (one
//!   or several concatenated values); input whose first non-blank character
//!   is `{` or `[` is read as JSON.
//! - A document of kind `List` (or `PodList`, `NodeList`, ...) contributes its
//!   `items`; items of a typed list may omit `apiVersion` and `kind`.
//! - Objects are recognised by `apiVersion` and `kind`; other kinds are
//!   counted in [`Inventory::ignored`] (the caller prints a note).
//! - Empty documents are skipped. A namespaced object without
//!   `metadata.namespace` (or with an empty one) is taken to be in
//!   `default`, as `kubectl apply` would
//!   ([`kube_adapters::meta::namespace_or_default`]).
//! - Errors name the file, the 1-based document, the field path and the
//!   offending value. The same object twice is an error.
//! - A file with no document at all (empty, or only comments and `---`) is
//!   an error: it is what a failed `kubectl get ... > file` leaves behind.
//! - YAML is read with limits proportional to the text's size (see
//!   [`text`]), so a dump of a large cluster reads, an alias bomb does not.

mod capi;
mod error;
mod objects;
pub mod text;

use std::collections::btree_map::Entry;

use kube_adapters::meta::namespace_or_default;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use capi::{CAPI_KINDS, CapiInventory};
pub use error::{FieldError, ManifestError, Origin};
pub use objects::{Inventory, Located, ObjectKey, Objects};
pub use text::{Document, Position};

/// The text of one input file.
#[derive(Clone, Debug)]
pub struct Source {
    /// Name used in messages (`-` for standard input).
    pub name: String,
    /// Contents.
    pub text: String,
}

/// Reads every source, in order, into one inventory.
pub fn read_sources(sources: &[Source]) -> Result<Inventory, ManifestError> {
    let mut inventory = Inventory::default();
    for source in sources {
        add_source(&mut inventory, &source.name, &source.text)?;
    }
    Ok(inventory)
}

/// Reads one file's text into a fresh inventory (the fuzzing entry point).
pub fn read_str(name: &str, text: &str) -> Result<Inventory, ManifestError> {
    let mut inventory = Inventory::default();
    add_source(&mut inventory, name, text)?;
    Ok(inventory)
}

/// Splits a file into documents: JSON values or YAML documents, each with
/// its number in the file.
pub fn parse_documents(name: &str, text: &str) -> Result<Vec<Document>, ManifestError> {
    text::documents(name, text)
}

/// Adds one parsed document (an object, or a `kind: List` whose items may
/// omit `apiVersion` and `kind`) to `inventory`, exactly as a document of a
/// file is added. Live mode feeds each page of a list response through
/// this, so that both modes decode objects alike.
pub fn add_value(
    inventory: &mut Inventory,
    origin: Origin,
    document: Value,
) -> Result<(), ManifestError> {
    add_document(inventory, origin, document)
}

fn add_source(inventory: &mut Inventory, name: &str, text: &str) -> Result<(), ManifestError> {
    let documents = parse_documents(name, text)?;
    if documents.iter().all(|document| document.value.is_null()) {
        return Err(ManifestError::Empty {
            file: name.to_owned(),
            directory: false,
        });
    }
    for document in documents {
        let origin = Origin {
            file: name.to_owned(),
            document: document.number,
            item: None,
        };
        add_document(inventory, origin, document.value)?;
    }
    Ok(())
}

fn add_document(
    inventory: &mut Inventory,
    origin: Origin,
    document: Value,
) -> Result<(), ManifestError> {
    let object = match document {
        Value::Null => return Ok(()),
        Value::Object(object) => object,
        other => {
            return Err(ManifestError::Document {
                origin,
                message: format!(
                    "expected a Kubernetes object (a mapping with apiVersion and kind), got {}",
                    type_name(&other)
                ),
            });
        }
    };
    let api_version = string_field(&object, "apiVersion", &origin)?;
    let kind = string_field(&object, "kind", &origin)?;
    if let Some(item_kind) = kind.strip_suffix("List")
        && let Some(items) = object.get("items")
    {
        let Value::Array(items) = items else {
            return Err(ManifestError::Document {
                origin,
                message: format!(
                    "field `items` of a {kind} must be a list, got {}",
                    type_name(items)
                ),
            });
        };
        for (index, item) in items.iter().enumerate() {
            let item_origin = Origin {
                item: Some(index),
                ..origin.clone()
            };
            add_document(
                inventory,
                item_origin,
                with_defaults(item.clone(), &api_version, item_kind),
            )?;
        }
        return Ok(());
    }
    add_object(
        inventory,
        origin,
        &api_version,
        &kind,
        Value::Object(object),
    )
}

/// Items of a typed list (`PodList`) may omit `apiVersion` and `kind`.
fn with_defaults(mut item: Value, api_version: &str, kind: &str) -> Value {
    if let Value::Object(object) = &mut item
        && !kind.is_empty()
    {
        object
            .entry("apiVersion")
            .or_insert_with(|| Value::String(api_version.to_owned()));
        object
            .entry("kind")
            .or_insert_with(|| Value::String(kind.to_owned()));
    }
    item
}

fn add_object(
    inventory: &mut Inventory,
    origin: Origin,
    api_version: &str,
    kind: &str,
    value: Value,
) -> Result<(), ManifestError> {
    match (api_version, kind) {
        ("v1", "ConfigMap") => insert(&mut inventory.config_maps, origin, kind, true, value),
        ("v1", "Node") => insert(&mut inventory.nodes, origin, kind, false, value),
        ("v1", "Namespace") => insert(&mut inventory.namespaces, origin, kind, false, value),
        ("v1", "Pod") => insert(&mut inventory.pods, origin, kind, true, value),
        ("v1", "PersistentVolumeClaim") => insert(
            &mut inventory.persistent_volume_claims,
            origin,
            kind,
            true,
            value,
        ),
        ("v1", "PersistentVolume") => insert(
            &mut inventory.persistent_volumes,
            origin,
            kind,
            false,
            value,
        ),
        ("storage.k8s.io/v1", "StorageClass") => {
            insert(&mut inventory.storage_classes, origin, kind, false, value)
        }
        ("storage.k8s.io/v1", "VolumeAttachment") => insert(
            &mut inventory.volume_attachments,
            origin,
            kind,
            false,
            value,
        ),
        ("velero.io/v1", "Backup") => insert(&mut inventory.backups, origin, kind, true, value),
        ("velero.io/v1", "PodVolumeBackup") => {
            insert(&mut inventory.pod_volume_backups, origin, kind, true, value)
        }
        ("velero.io/v1", "PodVolumeRestore") => insert(
            &mut inventory.pod_volume_restores,
            origin,
            kind,
            true,
            value,
        ),
        ("velero.io/v2alpha1", "DataUpload") => {
            insert(&mut inventory.data_uploads, origin, kind, true, value)
        }
        ("velero.io/v2alpha1", "DataDownload") => {
            insert(&mut inventory.data_downloads, origin, kind, true, value)
        }
        ("cluster.x-k8s.io/v1beta1" | "cluster.x-k8s.io/v1beta2", "Machine") => {
            insert(&mut inventory.machines, origin, kind, true, value)
        }
        ("policyctl/v1alpha1", "HostInventory") => {
            let key = ObjectKey::cluster(origin.to_string());
            let object = decode(&value, &origin, kind)?;
            insert_located(
                &mut inventory.host_inventories,
                key,
                kind,
                Located { origin, object },
            )
        }
        _ => {
            let Some(added) = capi::add(
                &mut inventory.cluster_api,
                origin.clone(),
                api_version,
                kind,
                value,
            ) else {
                let entry = inventory
                    .ignored
                    .entry(format!("{api_version} {kind}"))
                    .or_insert((0, origin));
                entry.0 += 1;
                return Ok(());
            };
            added
        }
    }
}

fn insert<T: DeserializeOwned>(
    objects: &mut Objects<T>,
    origin: Origin,
    kind: &str,
    namespaced: bool,
    value: Value,
) -> Result<(), ManifestError> {
    let name = metadata_str(&value, "name").unwrap_or_default();
    let key = if namespaced {
        let namespace = metadata_str(&value, "namespace");
        ObjectKey::namespaced(namespace_or_default(namespace.as_deref()), name)
    } else {
        ObjectKey::cluster(name)
    };
    let object = format!("{kind} {key}");
    if key.name.is_empty() {
        let path = [String::from("metadata"), String::from("name")];
        let found = lookup_value(&value, &path);
        let message = match found {
            Some(Value::Bool(_) | Value::Number(_)) => {
                format!("the name must be a string{}", unquoted_scalar_hint(found))
            }
            _ => "every object needs a name".to_owned(),
        };
        return Err(ManifestError::Field(Box::new(FieldError {
            origin,
            object: kind.to_owned(),
            path: "metadata.name".to_owned(),
            value: lookup(&value, &path),
            message,
        })));
    }
    let typed = decode::<T>(&value, &origin, &object)?;
    insert_located(
        objects,
        key,
        kind,
        Located {
            origin,
            object: typed,
        },
    )
}

fn insert_located<T>(
    objects: &mut Objects<T>,
    key: ObjectKey,
    kind: &str,
    located: Located<T>,
) -> Result<(), ManifestError> {
    match objects.entry(key) {
        Entry::Vacant(vacant) => {
            vacant.insert(located);
            Ok(())
        }
        Entry::Occupied(occupied) => Err(ManifestError::Duplicate {
            object: format!("{kind} {}", occupied.key()),
            first: occupied.get().origin.clone(),
            origin: located.origin,
        }),
    }
}

/// Decodes a typed object, reporting the field path and offending value.
fn decode<T: DeserializeOwned>(
    value: &Value,
    origin: &Origin,
    object: &str,
) -> Result<T, ManifestError> {
    serde_path_to_error::deserialize::<_, T>(value).map_err(|error| {
        let segments: Vec<String> = error
            .path()
            .iter()
            .map(|segment| match segment {
                serde_path_to_error::Segment::Seq { index } => format!("[{index}]"),
                serde_path_to_error::Segment::Map { key } => key.clone(),
                serde_path_to_error::Segment::Enum { variant } => variant.clone(),
                serde_path_to_error::Segment::Unknown => "?".to_owned(),
            })
            .collect();
        let message = error.inner().to_string();
        let hint = if message.contains("expected a string") {
            unquoted_scalar_hint(lookup_value(value, &segments))
        } else {
            ""
        };
        ManifestError::Field(Box::new(FieldError {
            origin: origin.clone(),
            object: object.to_owned(),
            path: error.path().to_string(),
            value: lookup(value, &segments),
            message: format!("{message}{hint}"),
        }))
    })
}

/// YAML reads unquoted `true`/`false` (and YAML 1.1's `yes`, `no`, `on`,
/// `off`) as booleans and unquoted numbers as numbers, which then lose
/// their spelling (`1.10` is `1.1`). For a value found where a string was
/// expected: what happened and to quote it.
fn unquoted_scalar_hint(value: Option<&Value>) -> &'static str {
    match value {
        Some(Value::Bool(_)) => {
            "; YAML reads an unquoted true/false (also yes/no, y/n, on/off) as a boolean: quote the value to keep it as text"
        }
        Some(Value::Number(_)) => {
            "; YAML reads an unquoted number as a number, which loses its spelling (1.10 becomes 1.1, 1e3 becomes 1000): quote the value to keep it as text"
        }
        _ => "",
    }
}

/// The value at a path, if there is one.
fn lookup_value<'a>(value: &'a Value, segments: &[String]) -> Option<&'a Value> {
    let mut current = value;
    for segment in segments {
        current = match (
            current,
            segment.strip_prefix('[').and_then(|s| s.strip_suffix(']')),
        ) {
            (Value::Array(items), Some(index)) => {
                index.parse::<usize>().ok().and_then(|i| items.get(i))
            }
            (Value::Object(map), _) => map.get(segment),
            _ => None,
        }?;
    }
    Some(current)
}

/// The JSON text of the value at a path, `<absent>` if there is none.
fn lookup(value: &Value, segments: &[String]) -> String {
    let Some(current) = lookup_value(value, segments) else {
        return "<absent>".to_owned();
    };
    let text = current.to_string();
    if text.chars().count() > 120 {
        let short: String = text.chars().take(117).collect();
        format!("{short}...")
    } else {
        text
    }
}

fn metadata_str(value: &Value, field: &str) -> Option<String> {
    value
        .get("metadata")?
        .get(field)?
        .as_str()
        .map(str::to_owned)
}

fn string_field(
    object: &serde_json::Map<String, Value>,
    field: &str,
    origin: &Origin,
) -> Result<String, ManifestError> {
    match object.get(field) {
        Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
        Some(other) => Err(ManifestError::Document {
            origin: origin.clone(),
            message: format!(
                "field `{field}` must be a non-empty string, got {} (offending value: {other})",
                type_name(other)
            ),
        }),
        None => Err(ManifestError::Document {
            origin: origin.clone(),
            message: format!(
                "field `{field}` is missing: every object needs apiVersion and kind (offending value: <absent>)"
            ),
        }),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests;

/// The fuzzing entry point: reads arbitrary bytes as a manifest file.
/// Never panics; invalid input yields an error, which is rendered to make
/// sure messages are built without panicking either.
pub fn fuzz_entry(bytes: &[u8]) {
    if let Ok(text) = std::str::from_utf8(bytes) {
        match read_str("fuzz.yaml", text) {
            Ok(inventory) => {
                let _ = inventory.ignored_notes();
            }
            Err(error) => {
                let _ = error.to_string();
            }
        }
    }
}
