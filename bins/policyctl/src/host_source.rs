//! HostInventories kept in ConfigMaps.
//!
//! No API server serves the `policyctl/v1alpha1` HostInventory kind, so a
//! cluster keeps its inventory as a document under a data key of a
//! ConfigMap: the form host-label-controller reads with
//! `--inventory-configmap` and `--inventory-key`. After the objects are
//! read (from `-f` or live), each such inventory joins the file-given ones,
//! so every command that reads a HostInventory finds it in either form.

use anti_affinity_placement::hosts::inventory::KIND;
use serde_json::Value;

use crate::cli::{ConfigMapRef, GlobalArgs};
use crate::error::CommandError;
use crate::live::Kind;
use crate::manifest::{self, Inventory, Origin};

/// Adds to `inventory` the HostInventory of the ConfigMap named by
/// `--inventory-config-map`, or, without that flag, of every ConfigMap whose
/// `--inventory-key` entry is a HostInventory document (other documents
/// under that key are someone else's and are passed over).
pub fn adopt(inventory: &mut Inventory, global: &GlobalArgs) -> Result<(), CommandError> {
    let key = global.inventory_key.as_str();
    let Some(wanted) = &global.inventory_config_map else {
        let found: Vec<_> = inventory
            .config_maps
            .iter()
            .filter_map(|(name, located)| {
                let text = located.object.data.as_ref()?.get(key)?;
                match single_document(&holder(name, key), text) {
                    Ok(document) => {
                        declares_host_inventory(&document).then(|| Ok((name.to_string(), document)))
                    }
                    // Unreadable text is someone else's, unless it says it
                    // is a HostInventory: then its problem is the answer.
                    Err(error) => text.contains(KIND).then_some(Err(error)),
                }
            })
            .collect::<Result<_, _>>()?;
        for (name, document) in found {
            add(inventory, &name, key, document)?;
        }
        return Ok(());
    };
    let named: Vec<_> = inventory
        .config_maps
        .iter()
        .filter(|(name, _)| wanted.matches(&name.namespace, &name.name))
        .collect();
    let (name, located) = match named.as_slice() {
        [one] => *one,
        [] => {
            // Not listable is not absent: completeness says what is missing.
            let unread = inventory
                .reading
                .unread(Kind::ConfigMap.reading_key())
                .is_some_and(|unread| unread.status.is_missing());
            return if unread {
                Ok(())
            } else {
                Err(CommandError::Input(format!(
                    "--inventory-config-map {wanted}: no such ConfigMap in the input{}",
                    live_hint(inventory, wanted)
                )))
            };
        }
        many => {
            let names: Vec<String> = many.iter().map(|(name, _)| name.to_string()).collect();
            return Err(CommandError::Input(format!(
                "--inventory-config-map {wanted} matches {} ConfigMaps ({}); name one as NAMESPACE/NAME",
                many.len(),
                names.join(", ")
            )));
        }
    };
    let name = name.to_string();
    let text = located
        .object
        .data
        .as_ref()
        .and_then(|data| data.get(key))
        .ok_or_else(|| {
            CommandError::Input(format!(
                "ConfigMap {name}: data key {key:?} is missing; name the key holding the HostInventory with --inventory-key"
            ))
        })?;
    let document = single_document(&holder(&name, key), text)
        .map_err(|error| CommandError::Input(error.to_string()))?;
    if !declares_host_inventory(&document) {
        return Err(CommandError::Input(format!(
            "ConfigMap {name}, data key {key:?}: not a HostInventory (apiVersion {}, kind {}); expected apiVersion {} and kind {}",
            type_field(&document, "apiVersion"),
            type_field(&document, "kind"),
            anti_affinity_placement::hosts::inventory::API_VERSION,
            anti_affinity_placement::hosts::inventory::KIND,
        )));
    }
    add(inventory, &name, key, document)
}

/// How messages name the data entry: `ConfigMap NS/NAME, data key "KEY"`.
fn holder(name: &impl std::fmt::Display, key: &str) -> String {
    format!("ConfigMap {name}, data key {key:?}")
}

/// The one YAML or JSON document of a data entry.
fn single_document(holder: &str, text: &str) -> Result<Value, CommandError> {
    let mut documents: Vec<_> = manifest::parse_documents(holder, text)?
        .into_iter()
        .filter(|document| !document.value.is_null())
        .collect();
    match documents.len() {
        1 => Ok(documents.remove(0).value),
        count => Err(CommandError::Input(format!(
            "{holder}: expected one HostInventory document, found {count}"
        ))),
    }
}

fn declares_host_inventory(document: &Value) -> bool {
    document.get("apiVersion").and_then(Value::as_str)
        == Some(anti_affinity_placement::hosts::inventory::API_VERSION)
        && document.get("kind").and_then(Value::as_str)
            == Some(anti_affinity_placement::hosts::inventory::KIND)
}

fn type_field(document: &Value, field: &str) -> String {
    match document.get(field) {
        Some(Value::String(text)) => format!("{text:?}"),
        Some(other) => other.to_string(),
        None => "missing".to_owned(),
    }
}

/// Decodes the document as the file form is decoded (errors name the field
/// path and value), under the data entry's name.
fn add(
    inventory: &mut Inventory,
    name: &str,
    key: &str,
    document: Value,
) -> Result<(), CommandError> {
    let origin = Origin {
        file: holder(&name, key),
        document: 1,
        item: None,
    };
    manifest::add_value(inventory, origin, document)?;
    Ok(())
}

/// In live mode only some namespaces' ConfigMaps are listed.
fn live_hint(inventory: &Inventory, wanted: &ConfigMapRef) -> &'static str {
    if inventory.reading.live && wanted.namespace.is_none() {
        "; in live mode name it as NAMESPACE/NAME so that its namespace is listed"
    } else {
        ""
    }
}
