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
//! - Large inputs stay lean: JSON lists and YAML lists alike are read one
//!   item at a time, each decoded straight into its type, without a tree of
//!   the file (`yaml_stream` for YAML). Whenever the fast YAML reader is
//!   not sure, the whole input is read again with the tree reader, which
//!   gives the same objects and the same messages as ever.

mod capi;
mod error;
mod objects;
mod skip;
pub mod text;
mod yaml_stream;

use std::borrow::Cow;
use std::collections::btree_map::Entry;

use kube_adapters::meta::namespace_or_default;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use skip::Skips;

pub use capi::{CAPI_KINDS, CapiInventory};
pub use error::{FieldError, ManifestError, Origin, Position};
pub use objects::{Inventory, Located, ObjectKey, Objects};
pub use text::Document;

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
    match read_fast(sources) {
        Ok(inventory) => Ok(inventory),
        // The fast reader stops at the first thing it is not sure about;
        // the tree reader reads what only it can, or names the problem.
        Err(yaml_stream::GaveUp) => read_with_trees(sources),
    }
}

/// Reads one file's text into a fresh inventory (the fuzzing entry point).
pub fn read_str(name: &str, text: &str) -> Result<Inventory, ManifestError> {
    read_sources(&[Source {
        name: name.to_owned(),
        text: text.to_owned(),
    }])
}

/// Reads every source with the fast YAML reader (and the JSON reader).
fn read_fast(sources: &[Source]) -> Result<Inventory, yaml_stream::GaveUp> {
    let mut inventory = Inventory::default();
    for source in sources {
        let body = text::without_bom(&source.text);
        let read_any = if text::is_json(body) {
            add_json(&mut inventory, &source.name, body).map_err(|_| yaml_stream::GaveUp)?
        } else {
            yaml_stream::add_yaml(&mut inventory, &source.name, body)?
        };
        if !read_any {
            return Err(yaml_stream::GaveUp);
        }
    }
    Ok(inventory)
}

/// Reads every source with the tree reader for YAML (and the JSON reader).
fn read_with_trees(sources: &[Source]) -> Result<Inventory, ManifestError> {
    let mut inventory = Inventory::default();
    for source in sources {
        add_source(&mut inventory, &source.name, &source.text)?;
    }
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
    let body = text::without_bom(text);
    let read_any = if text::is_json(body) {
        add_json(inventory, name, body)?
    } else {
        let documents = parse_documents(name, text)?;
        let read_any = documents.iter().any(|document| !document.value.is_null());
        for document in documents {
            let origin = Origin {
                file: name.to_owned(),
                document: document.number,
                item: None,
            };
            add_document(inventory, origin, document.value)?;
        }
        read_any
    };
    if read_any {
        Ok(())
    } else {
        Err(ManifestError::Empty {
            file: name.to_owned(),
            directory: false,
        })
    }
}

/// One object to add: a parsed tree, or (JSON) its text with the fields
/// needed to file it, decoded straight into its type.
pub(super) enum Item<'a> {
    Tree(Value),
    /// JSON text: its name and namespace are read from the decoded object.
    Text {
        text: &'a str,
    },
}

impl Item<'_> {
    /// The object as a tree (for kinds decoded from trees, and for
    /// messages). Text that was already read as JSON parses again.
    fn into_value(self, origin: &Origin) -> Result<Value, ManifestError> {
        match self {
            Item::Tree(value) => Ok(value),
            Item::Text { text, .. } => {
                let mut value = serde_json::from_str::<Value>(text).map_err(|error| {
                    text::json_syntax_error(&origin.file, origin.document, &error)
                })?;
                without_unread_fields(&mut value);
                Ok(value)
            }
        }
    }
}

/// What filing an object needs, read from its text while skipping the rest.
#[derive(serde::Deserialize)]
struct ItemHeader<'a> {
    #[serde(rename = "apiVersion", borrow, default)]
    api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
}

/// How an item of a list is filed, read from its text.
pub(super) struct Filed<'a> {
    api_version: Cow<'a, str>,
    kind: Cow<'a, str>,
}

/// How the item `text` of a list is filed, the list's `apiVersion` and item
/// kind (`Pod` for a `PodList`) standing in for what the item omits. `None`
/// when the item takes the tree path: a nested list, an item without
/// `apiVersion` or `kind` (the fast YAML reader gives no defaults, since a
/// YAML list names its kind after its items), or a header that does not
/// decode.
pub(super) fn filed_item<'a>(
    text: &'a str,
    defaults: Option<(&'a str, &'a str)>,
) -> Option<Filed<'a>> {
    let (api_version, kind) = match leading_type(text) {
        Some((api_version, kind)) => (Cow::Borrowed(api_version), Cow::Borrowed(kind)),
        None => {
            let header = serde_json::from_str::<ItemHeader<'a>>(text).ok()?;
            let (default_api_version, default_kind) = defaults.unwrap_or_default();
            (
                header
                    .api_version
                    .unwrap_or(Cow::Borrowed(default_api_version)),
                header.kind.unwrap_or(Cow::Borrowed(default_kind)),
            )
        }
    };
    let plain = !api_version.is_empty() && !kind.is_empty() && !kind.ends_with("List");
    plain.then_some(Filed { api_version, kind })
}

/// `apiVersion` and `kind` when they open the object, in that order and
/// without escapes, as kubectl prints every object: read from the first
/// bytes instead of a pass over the whole item.
fn leading_type(text: &str) -> Option<(&str, &str)> {
    fn skip_space(text: &str) -> &str {
        text.trim_start_matches([' ', '\t', '\n', '\r'])
    }
    fn field<'a>(text: &'a str, key: &str) -> Option<(&'a str, &'a str)> {
        let text = skip_space(text).strip_prefix('"')?.strip_prefix(key)?;
        let text = skip_space(text.strip_prefix('"')?).strip_prefix(':')?;
        let text = skip_space(text).strip_prefix('"')?;
        let end = text.find(['"', '\\'])?;
        text[end..]
            .starts_with('"')
            .then(|| (&text[..end], &text[end + 1..]))
    }
    let text = skip_space(text).strip_prefix('{')?;
    let (api_version, rest) = field(text, "apiVersion")?;
    let rest = skip_space(rest).strip_prefix(',')?;
    let (kind, _) = field(rest, "kind")?;
    Some((api_version, kind))
}

/// What a list document holds, read without building its items: each item
/// stays a slice of the text until it is decoded on its own.
#[derive(serde::Deserialize)]
struct ListDocument<'a> {
    #[serde(rename = "apiVersion", borrow)]
    api_version: Cow<'a, str>,
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    items: Vec<&'a RawValue>,
}

/// Adds the JSON values of a file, one at a time; a list's items are parsed
/// one at a time too, so memory holds the text, one item's tree and the
/// typed objects, never a tree of the whole file. Anything unusual (not a
/// list, a field of the wrong type) takes the general path, which gives the
/// same messages as YAML. Returns whether any value was not `null`.
fn add_json(inventory: &mut Inventory, name: &str, text: &str) -> Result<bool, ManifestError> {
    let origin = |number: usize| Origin {
        file: name.to_owned(),
        document: number,
        item: None,
    };
    // The common dump, one `kubectl get -o json` list: its items are found
    // in one pass over the text, without a first pass to split values.
    if let Some(list) = as_list(text) {
        add_json_list(inventory, name, origin(1), list)?;
        return Ok(true);
    }
    let mut read_any = false;
    let values = serde_json::Deserializer::from_str(text).into_iter::<&RawValue>();
    for (index, raw) in values.enumerate() {
        let number = index + 1;
        let raw = raw.map_err(|error| text::json_syntax_error(name, number, &error))?;
        if raw.get() == "null" {
            continue;
        }
        read_any = true;
        match as_list(raw.get()) {
            Some(list) => add_json_list(inventory, name, origin(number), list)?,
            None => {
                let value = serde_json::from_str::<Value>(raw.get())
                    .map_err(|error| text::json_syntax_error(name, number, &error))?;
                add_document(inventory, origin(number), value)?;
            }
        }
    }
    Ok(read_any)
}

/// `text` as one list document (`apiVersion` set, a kind ending in
/// `List`), if it is one.
fn as_list(text: &str) -> Option<ListDocument<'_>> {
    serde_json::from_str::<ListDocument<'_>>(text)
        .ok()
        .filter(|list| !list.api_version.is_empty() && list.kind.ends_with("List"))
}

/// Adds the items of a JSON list document, each decoded from its text.
fn add_json_list(
    inventory: &mut Inventory,
    name: &str,
    origin: Origin,
    list: ListDocument<'_>,
) -> Result<(), ManifestError> {
    let item_kind = list.kind.strip_suffix("List").unwrap_or_default();
    for (index, item) in list.items.into_iter().enumerate() {
        let item_origin = origin.item(index);
        match filed_item(item.get(), Some((&list.api_version, item_kind))) {
            Some(filed) => {
                let text = Item::Text { text: item.get() };
                add_object(
                    inventory,
                    item_origin,
                    &filed.api_version,
                    &filed.kind,
                    text,
                )?;
            }
            None => {
                let value = serde_json::from_str::<Value>(item.get())
                    .map_err(|error| text::json_syntax_error(name, origin.document, &error))?;
                let value = with_defaults(value, &list.api_version, item_kind);
                add_document(inventory, item_origin, value)?;
            }
        }
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
    let mut object = object;
    if let Some(item_kind) = kind.strip_suffix("List")
        && let Some(items) = object.remove("items")
    {
        let Value::Array(items) = items else {
            return Err(ManifestError::Document {
                origin,
                message: format!(
                    "field `items` of a {kind} must be a list, got {}",
                    type_name(&items)
                ),
            });
        };
        for (index, item) in items.into_iter().enumerate() {
            let item_origin = Origin {
                item: Some(index),
                ..origin.clone()
            };
            add_document(
                inventory,
                item_origin,
                with_defaults(item, &api_version, item_kind),
            )?;
        }
        return Ok(());
    }
    add_object(
        inventory,
        origin,
        &api_version,
        &kind,
        Item::Tree(Value::Object(object)),
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
    value: Item<'_>,
) -> Result<(), ManifestError> {
    let value = match value {
        Item::Tree(mut tree) => {
            without_unread_fields(&mut tree);
            Item::Tree(tree)
        }
        text @ Item::Text { .. } => text,
    };
    match (api_version, kind) {
        ("v1", "ConfigMap") => insert(&mut inventory.config_maps, origin, kind, true, value),
        ("v1", "Node") => insert(&mut inventory.nodes, origin, kind, false, value),
        ("v1", "Namespace") => insert(&mut inventory.namespaces, origin, kind, false, value),
        ("v1", "Pod") => insert(&mut inventory.pods, origin, kind, true, value),
        ("v1", "Service") => insert(&mut inventory.services, origin, kind, true, value),
        ("v1", "ReplicationController") => insert(
            &mut inventory.replication_controllers,
            origin,
            kind,
            true,
            value,
        ),
        ("apps/v1", "ReplicaSet") => insert(&mut inventory.replica_sets, origin, kind, true, value),
        ("apps/v1", "StatefulSet") => {
            insert(&mut inventory.stateful_sets, origin, kind, true, value)
        }
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
        ("storage.k8s.io/v1", "CSINode") => {
            insert(&mut inventory.csi_nodes, origin, kind, false, value)
        }
        ("resource.k8s.io/v1", "DeviceClass") => {
            insert(&mut inventory.device_classes, origin, kind, false, value)
        }
        ("resource.k8s.io/v1", "ResourceClaim") => {
            insert(&mut inventory.resource_claims, origin, kind, true, value)
        }
        ("resource.k8s.io/v1", "ResourceClaimTemplate") => insert(
            &mut inventory.resource_claim_templates,
            origin,
            kind,
            true,
            value,
        ),
        ("resource.k8s.io/v1", "ResourceSlice") => {
            insert(&mut inventory.resource_slices, origin, kind, false, value)
        }
        ("storage.k8s.io/v1", "VolumeAttachment") => insert(
            &mut inventory.volume_attachments,
            origin,
            kind,
            false,
            value,
        ),
        ("apps/v1", "Deployment") => insert(&mut inventory.deployments, origin, kind, true, value),
        ("apps/v1", "DaemonSet") => insert(&mut inventory.daemon_sets, origin, kind, true, value),
        ("velero.io/v1", "Backup") => insert(&mut inventory.backups, origin, kind, true, value),
        ("velero.io/v1", "BackupRepository") => insert(
            &mut inventory.backup_repositories,
            origin,
            kind,
            true,
            value,
        ),
        ("scheduling.k8s.io/v1", "PriorityClass") => {
            insert(&mut inventory.priority_classes, origin, kind, false, value)
        }
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
            let value = value.into_value(&origin)?;
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

fn insert<T: DeserializeOwned + kube::Resource + Unread>(
    objects: &mut Objects<T>,
    origin: Origin,
    kind: &str,
    namespaced: bool,
    item: Item<'_>,
) -> Result<(), ManifestError> {
    let key_of = |name: Option<&str>, namespace: Option<&str>| {
        let name = name.unwrap_or_default().to_owned();
        if namespaced {
            ObjectKey::namespaced(namespace_or_default(namespace), name)
        } else {
            ObjectKey::cluster(name)
        }
    };
    let (key, typed) = match item {
        Item::Text { text } => {
            let decoded = skip::from_json_str::<T>(text, T::SKIPPED)
                .ok()
                .filter(|typed| typed.meta().name.as_deref().is_some_and(|n| !n.is_empty()));
            let Some(mut typed) = decoded else {
                // The tree path gives the message (field path, offending
                // value) and reads what JSON allows but a struct refuses,
                // such as a key given twice (the last one wins).
                let tree = item_tree(text, &origin)?;
                return insert(objects, origin, kind, namespaced, Item::Tree(tree));
            };
            typed.drop_unread();
            let meta = typed.meta();
            let key = key_of(meta.name.as_deref(), meta.namespace.as_deref());
            (key, typed)
        }
        Item::Tree(value) => {
            let key = key_of(
                metadata_str(&value, "name").as_deref(),
                metadata_str(&value, "namespace").as_deref(),
            );
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
            let mut typed = decode::<T>(&value, &origin, &format!("{kind} {key}"))?;
            typed.drop_unread();
            (key, typed)
        }
    };
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

fn item_tree(text: &str, origin: &Origin) -> Result<Value, ManifestError> {
    Item::Text { text }.into_value(origin)
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

/// Fields of a kind that no command reads: skipped while decoding JSON
/// text (never built), and dropped after decoding a tree, so that reading
/// a large cluster is fast and its inventory stays small.
pub(super) trait Unread {
    /// What decoding skips: at least `metadata.managedFields`.
    const SKIPPED: &'static Skips = &ONLY_MANAGED_FIELDS;

    /// Drops what is left of them after decoding (nothing, for most kinds).
    fn drop_unread(&mut self) {}
}

/// `metadata.managedFields`, often the larger part of an object in a
/// `kubectl get` dump.
static METADATA: Skips = Skips::Fields(&[("managedFields", None)]);
static ONLY_MANAGED_FIELDS: Skips = Skips::Fields(&[("metadata", Some(&METADATA))]);

/// A container's fields no scheduling rule reads.
static CONTAINER: Skips = Skips::Fields(&[
    ("env", None),
    ("envFrom", None),
    ("livenessProbe", None),
    ("readinessProbe", None),
    ("startupProbe", None),
    ("lifecycle", None),
    ("command", None),
    ("args", None),
]);
static CONTAINERS: Skips = Skips::Each(&CONTAINER);
static POD: Skips = Skips::Fields(&[
    ("metadata", Some(&METADATA)),
    (
        "spec",
        Some(&Skips::Fields(&[
            ("containers", Some(&CONTAINERS)),
            ("initContainers", Some(&CONTAINERS)),
        ])),
    ),
    (
        "status",
        Some(&Skips::Fields(&[
            ("containerStatuses", None),
            ("initContainerStatuses", None),
            ("ephemeralContainerStatuses", None),
        ])),
    ),
]);
/// A workload read for its selector: its pod template is not read.
static WITHOUT_TEMPLATE: Skips = Skips::Fields(&[
    ("metadata", Some(&METADATA)),
    ("spec", Some(&Skips::Fields(&[("template", None)]))),
]);
/// A DaemonSet is read for its pod template's tolerations: the
/// containers' fields no rule reads are skipped as in a pod.
static DAEMON_SET: Skips = Skips::Fields(&[
    ("metadata", Some(&METADATA)),
    (
        "spec",
        Some(&Skips::Fields(&[(
            "template",
            Some(&Skips::Fields(&[(
                "spec",
                Some(&Skips::Fields(&[
                    ("containers", Some(&CONTAINERS)),
                    ("initContainers", Some(&CONTAINERS)),
                ])),
            )])),
        )])),
    ),
]);
static STATEFUL_SET: Skips = Skips::Fields(&[
    ("metadata", Some(&METADATA)),
    (
        "spec",
        Some(&Skips::Fields(&[("volumeClaimTemplates", None)])),
    ),
]);

impl Unread for k8s_openapi::api::core::v1::Pod {
    /// Container statuses, environment, probes, commands, and volumes that
    /// only carry node-local content (projected service-account tokens,
    /// ConfigMaps, Secrets, the downward API, emptyDir), which no scheduling
    /// rule looks at: the scheduler, the diagnosis and the reports read
    /// requests, ports, claims and other volumes, phase and conditions.
    const SKIPPED: &'static Skips = &POD;

    fn drop_unread(&mut self) {
        if let Some(status) = self.status.as_mut() {
            status.container_statuses = None;
            status.init_container_statuses = None;
            status.ephemeral_container_statuses = None;
        }
        if let Some(spec) = self.spec.as_mut() {
            for container in spec
                .containers
                .iter_mut()
                .chain(spec.init_containers.iter_mut().flatten())
            {
                container.env = None;
                container.env_from = None;
                container.liveness_probe = None;
                container.readiness_probe = None;
                container.startup_probe = None;
                container.lifecycle = None;
                container.command = None;
                container.args = None;
            }
            if let Some(volumes) = spec.volumes.as_mut() {
                volumes.retain(|volume| {
                    volume.projected.is_none()
                        && volume.config_map.is_none()
                        && volume.secret.is_none()
                        && volume.downward_api.is_none()
                        && volume.empty_dir.is_none()
                });
                volumes.shrink_to_fit();
            }
        }
    }
}

/// Workloads are read for their selectors (kube-scheduler's default
/// topology spreading): their pod templates are dropped.
impl Unread for k8s_openapi::api::apps::v1::ReplicaSet {
    const SKIPPED: &'static Skips = &WITHOUT_TEMPLATE;

    fn drop_unread(&mut self) {
        if let Some(spec) = self.spec.as_mut() {
            spec.template = None;
        }
    }
}

/// A StatefulSet keeps its pod template (`capacity --workload` copies it);
/// its volume claim templates are dropped.
impl Unread for k8s_openapi::api::apps::v1::StatefulSet {
    const SKIPPED: &'static Skips = &STATEFUL_SET;

    fn drop_unread(&mut self) {
        if let Some(spec) = self.spec.as_mut() {
            spec.volume_claim_templates = None;
        }
    }
}

/// The node-agent DaemonSet is read for its pod template's tolerations
/// (copied onto data-mover pods); its containers and volumes are dropped.
impl Unread for k8s_openapi::api::apps::v1::DaemonSet {
    const SKIPPED: &'static Skips = &DAEMON_SET;

    fn drop_unread(&mut self) {
        if let Some(spec) = self
            .spec
            .as_mut()
            .and_then(|spec| spec.template.spec.as_mut())
        {
            spec.containers.clear();
            spec.init_containers = None;
            spec.volumes = None;
        }
    }
}

impl Unread for k8s_openapi::api::core::v1::ReplicationController {
    const SKIPPED: &'static Skips = &WITHOUT_TEMPLATE;

    fn drop_unread(&mut self) {
        if let Some(spec) = self.spec.as_mut() {
            spec.template = None;
        }
    }
}

macro_rules! read_whole {
    ($($kind:ty),* $(,)?) => { $(impl Unread for $kind {})* };
}

read_whole!(
    k8s_openapi::api::core::v1::ConfigMap,
    k8s_openapi::api::core::v1::Node,
    k8s_openapi::api::core::v1::Namespace,
    k8s_openapi::api::core::v1::Service,
    k8s_openapi::api::core::v1::PersistentVolumeClaim,
    k8s_openapi::api::core::v1::PersistentVolume,
    k8s_openapi::api::storage::v1::StorageClass,
    k8s_openapi::api::storage::v1::VolumeAttachment,
    k8s_openapi::api::storage::v1::CSINode,
    k8s_openapi::api::resource::v1::DeviceClass,
    k8s_openapi::api::resource::v1::ResourceClaim,
    k8s_openapi::api::resource::v1::ResourceClaimTemplate,
    k8s_openapi::api::resource::v1::ResourceSlice,
    velero_api::Backup,
    velero_api::BackupRepository,
    k8s_openapi::api::scheduling::v1::PriorityClass,
    velero_api::PodVolumeBackup,
    velero_api::PodVolumeRestore,
    velero_api::DataUpload,
    velero_api::DataDownload,
    k8s_openapi::api::apps::v1::Deployment,
    capi_api::Machine,
    capi_api::Cluster,
    capi_api::KubeadmControlPlane,
    capi_api::MachineDeployment,
    capi_api::MachineSet,
    capi_api::VSphereCluster,
    capi_api::VSphereMachineTemplate,
    capi_api::VSphereVM,
);

/// Drops what no command reads and would otherwise be kept with every
/// object: `metadata.managedFields`, often the larger part of an object in
/// a `kubectl get -o yaml` dump.
fn without_unread_fields(value: &mut Value) {
    if let Some(Value::Object(metadata)) = value.get_mut("metadata") {
        metadata.remove("managedFields");
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
        let message = affinity_translate::plain_type_message(&error.inner().to_string());
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
/// Never panics on its own; invalid input yields an error, which is
/// rendered to make sure messages are built without panicking either. It
/// panics when the fast reader files objects that the tree reader would
/// not file alike: the two must agree whenever the fast one reads a file.
pub fn fuzz_entry(bytes: &[u8]) {
    if let Ok(text) = std::str::from_utf8(bytes) {
        let sources = [Source {
            name: "fuzz.yaml".to_owned(),
            text: text.to_owned(),
        }];
        let tree = read_with_trees(&sources);
        if let Ok(fast) = read_fast(&sources) {
            match &tree {
                Ok(tree) => assert_eq!(
                    format!("{fast:?}"),
                    format!("{tree:?}"),
                    "the fast and the tree reader disagree"
                ),
                Err(error) => panic!("the fast reader read what the tree reader refuses: {error}"),
            }
        }
        match tree {
            Ok(inventory) => {
                let _ = inventory.ignored_notes();
            }
            Err(error) => {
                let _ = error.to_string();
            }
        }
    }
}
