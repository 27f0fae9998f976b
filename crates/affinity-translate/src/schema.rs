//! The shape of the node-agent configuration as Go's `encoding/json` sees
//! it, used to normalise a parsed document before typed decoding: key case
//! (C1.8), unknown keys, duplicate keys, `null` handling and the zero values
//! Go fills in, and the Velero version from which each field is read.

use crate::version::VeleroVersion;

/// The JSON shape of one field.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    /// A Go struct: known fields only.
    Object(&'static [Field]),
    /// A Go pointer to a struct inside a list: `null` stays `null`.
    NullableObject(&'static [Field]),
    /// A Go map with string keys (keys are data, matched exactly).
    Map(&'static Shape),
    /// A Go slice.
    Array(&'static Shape),
    /// A Go string.
    Str,
    /// A Go bool.
    Bool,
    /// A Go int (64-bit).
    Int,
}

/// One field of a Go struct.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field {
    /// The json tag.
    pub(crate) name: &'static str,
    /// Its shape.
    pub(crate) shape: Shape,
    /// Required by our typed model (k8s-openapi); Go fills in the zero value.
    pub(crate) required: bool,
    /// The first Velero version whose struct has the field (V1.1).
    pub(crate) since: VeleroVersion,
}

const fn field(name: &'static str, shape: Shape) -> Field {
    since(VeleroVersion::OLDEST, name, shape)
}

const fn since(version: VeleroVersion, name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        required: false,
        since: version,
    }
}

const REQUIREMENT: &[Field] = &[
    Field {
        name: "key",
        shape: Shape::Str,
        required: true,
        since: VeleroVersion::OLDEST,
    },
    Field {
        name: "operator",
        shape: Shape::Str,
        required: true,
        since: VeleroVersion::OLDEST,
    },
    field("values", Shape::Array(&Shape::Str)),
];

const LABEL_SELECTOR: &[Field] = &[
    field("matchLabels", Shape::Map(&Shape::Str)),
    field(
        "matchExpressions",
        Shape::Array(&Shape::Object(REQUIREMENT)),
    ),
];

const RULED_CONFIG: &[Field] = &[
    field("nodeSelector", Shape::Object(LABEL_SELECTOR)),
    field("number", Shape::Int),
];

const LOAD_CONCURRENCY: &[Field] = &[
    field("globalConfig", Shape::Int),
    field("perNodeConfig", Shape::Array(&Shape::Object(RULED_CONFIG))),
    field("prepareQueueLength", Shape::Int),
];

const LOAD_AFFINITY: &[Field] = &[
    field("nodeSelector", Shape::Object(LABEL_SELECTOR)),
    field("storageClass", Shape::Str),
];

const BACKUP_PVC: &[Field] = &[
    field("storageClass", Shape::Str),
    field("readOnly", Shape::Bool),
    field("spcNoRelabeling", Shape::Bool),
    since(
        VeleroVersion::V1_17_1,
        "annotations",
        Shape::Map(&Shape::Str),
    ),
    since(
        VeleroVersion::V1_18_3,
        "secretNames",
        Shape::Array(&Shape::Str),
    ),
    since(
        VeleroVersion::V1_18_3,
        "configMapNames",
        Shape::Array(&Shape::Str),
    ),
];

const RESTORE_PVC: &[Field] = &[
    field("ignoreDelayBinding", Shape::Bool),
    since(
        VeleroVersion::V1_18_3,
        "secretNames",
        Shape::Array(&Shape::Str),
    ),
    since(
        VeleroVersion::V1_18_3,
        "configMapNames",
        Shape::Array(&Shape::Str),
    ),
];

const CSI_SNAPSHOT_METADATA_SERVICE: &[Field] = &[field("saName", Shape::Str)];

const POD_RESOURCES: &[Field] = &[
    field("cpuRequest", Shape::Str),
    field("cpuLimit", Shape::Str),
    field("memoryRequest", Shape::Str),
    field("memoryLimit", Shape::Str),
    field("ephemeralStorageRequest", Shape::Str),
    field("ephemeralStorageLimit", Shape::Str),
];

const CACHE_PVC: &[Field] = &[
    field("storageClass", Shape::Str),
    field("residentThresholdInMB", Shape::Int),
];

/// `JobConfigs`, one value of the repository-maintenance job ConfigMap
/// (R5.1): the node-agent's `loadAffinity` entries and `podResources`, and
/// four keys of its own.
pub(crate) const JOB_CONFIG: &[Field] = &[
    field(
        "loadAffinity",
        Shape::Array(&Shape::NullableObject(LOAD_AFFINITY)),
    ),
    field("podResources", Shape::Object(POD_RESOURCES)),
    field("keepLatestMaintenanceJobs", Shape::Int),
    field("priorityClassName", Shape::Str),
    field("podAnnotations", Shape::Map(&Shape::Str)),
    field("podLabels", Shape::Map(&Shape::Str)),
];

/// `NodeAgentConfigs`.
pub(crate) const NODE_AGENT_CONFIG: &[Field] = &[
    field("loadConcurrency", Shape::Object(LOAD_CONCURRENCY)),
    field(
        "loadAffinity",
        Shape::Array(&Shape::NullableObject(LOAD_AFFINITY)),
    ),
    field("backupPVC", Shape::Map(&Shape::Object(BACKUP_PVC))),
    field("restorePVC", Shape::Object(RESTORE_PVC)),
    field("podResources", Shape::Object(POD_RESOURCES)),
    field("priorityClassName", Shape::Str),
    since(VeleroVersion::V1_17_1, "privilegedFsBackup", Shape::Bool),
    since(VeleroVersion::V1_18_0, "cachePVC", Shape::Object(CACHE_PVC)),
    since(
        VeleroVersion::V1_18_0,
        "podAnnotations",
        Shape::Map(&Shape::Str),
    ),
    since(VeleroVersion::V1_18_0, "podLabels", Shape::Map(&Shape::Str)),
    since(
        VeleroVersion::Main,
        "csiSnapshotMetadataServiceConfigs",
        Shape::Object(CSI_SNAPSHOT_METADATA_SERVICE),
    ),
];

/// Every place a field name occurs in the schema, as a display path
/// (`loadConcurrency.prepareQueueLength`, `backupPVC.<class>.readOnly`).
pub(crate) fn field_locations(root: &[Field], name_folded: &str) -> Vec<String> {
    let mut out = Vec::new();
    collect(root, "", name_folded, &mut out);
    out
}

fn collect(fields: &[Field], prefix: &str, name_folded: &str, out: &mut Vec<String>) {
    for f in fields {
        let path = if prefix.is_empty() {
            f.name.to_owned()
        } else {
            format!("{prefix}.{}", f.name)
        };
        if fold(f.name) == name_folded {
            out.push(path.clone());
        }
        collect_shape(&f.shape, &path, name_folded, out);
    }
}

fn collect_shape(shape: &Shape, path: &str, name_folded: &str, out: &mut Vec<String>) {
    match shape {
        Shape::Object(fields) | Shape::NullableObject(fields) => {
            collect(fields, path, name_folded, out);
        }
        Shape::Array(inner) => collect_shape(inner, &format!("{path}[]"), name_folded, out),
        Shape::Map(inner) => {
            let placeholder = if path == "backupPVC" {
                "<class>"
            } else {
                "<key>"
            };
            collect_shape(inner, &format!("{path}.{placeholder}"), name_folded, out);
        }
        Shape::Str | Shape::Bool | Shape::Int => {}
    }
}

/// Go `encoding/json`'s key folding (`foldName`): ASCII letters upper-cased,
/// other characters `ToUpper(ToLower(r))`, so `K` (Kelvin) equals `k`.
pub(crate) fn fold(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii() {
                c.to_ascii_uppercase()
            } else {
                let lower = single(c.to_lowercase()).unwrap_or(c);
                single(lower.to_uppercase()).unwrap_or(lower)
            }
        })
        .collect()
}

fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
    let first = it.next()?;
    if it.next().is_some() {
        None
    } else {
        Some(first)
    }
}

/// Levenshtein distance, for "did you mean" suggestions.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = Vec::with_capacity(b.len() + 1);
        current.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            let deletion = previous[j + 1] + 1;
            let insertion = current[j] + 1;
            current.push(substitution.min(deletion).min(insertion));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_matches_go_for_ascii_and_kelvin() {
        assert_eq!(fold("LoadConcurrency"), fold("loadconcurrency"));
        assert_eq!(fold("\u{212A}ey"), fold("key"));
        assert_eq!(fold("\u{17F}torageClass"), fold("storageClass"));
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("globalConfig", "globalConfig"), 0);
        assert_eq!(edit_distance("globalconfig", "globalConfig"), 1);
        assert_eq!(edit_distance("nodeSelectr", "nodeSelector"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn locations_find_misplaced_keys() {
        assert_eq!(
            field_locations(NODE_AGENT_CONFIG, &fold("prepareQueueLength")),
            vec!["loadConcurrency.prepareQueueLength"]
        );
        assert_eq!(
            field_locations(NODE_AGENT_CONFIG, &fold("readOnly")),
            vec!["backupPVC.<class>.readOnly"]
        );
    }

    /// Where Velero's `NodeAgentConfigs` (pkg/types/node_agent.go) gained
    /// each field, read from the struct at every tag and at main: every
    /// field not under one of these paths is in v1.17.0 already.
    const ADDED: &[(&str, VeleroVersion)] = &[
        ("backupPVC.standard.annotations", VeleroVersion::V1_17_1),
        ("privilegedFsBackup", VeleroVersion::V1_17_1),
        ("cachePVC", VeleroVersion::V1_18_0),
        ("podAnnotations", VeleroVersion::V1_18_0),
        ("podLabels", VeleroVersion::V1_18_0),
        ("backupPVC.standard.secretNames", VeleroVersion::V1_18_3),
        ("backupPVC.standard.configMapNames", VeleroVersion::V1_18_3),
        ("restorePVC.secretNames", VeleroVersion::V1_18_3),
        ("restorePVC.configMapNames", VeleroVersion::V1_18_3),
        ("csiSnapshotMetadataServiceConfigs", VeleroVersion::Main),
    ];

    /// Every leaf field of the schema: its path (map keys as `standard`,
    /// list items as `[0]`) and a document holding just it.
    fn leaves() -> Vec<(Vec<String>, serde_json::Value)> {
        fn walk(
            shape: &Shape,
            path: &mut Vec<String>,
            out: &mut Vec<(Vec<String>, serde_json::Value)>,
        ) {
            match shape {
                Shape::Object(fields) | Shape::NullableObject(fields) => {
                    for field in *fields {
                        path.push(field.name.to_owned());
                        walk(&field.shape, path, out);
                        path.pop();
                    }
                }
                Shape::Map(inner) => {
                    path.push("standard".to_owned());
                    walk(inner, path, out);
                    path.pop();
                }
                Shape::Array(inner) => {
                    path.push("[0]".to_owned());
                    walk(inner, path, out);
                    path.pop();
                }
                Shape::Str | Shape::Bool | Shape::Int => {
                    let mut value = match shape {
                        Shape::Str => serde_json::json!("x"),
                        Shape::Bool => serde_json::json!(true),
                        _ => serde_json::json!(1),
                    };
                    for segment in path.iter().rev() {
                        value = if segment == "[0]" {
                            serde_json::json!([value])
                        } else {
                            serde_json::json!({ segment.as_str(): value })
                        };
                    }
                    out.push((path.clone(), value));
                }
            }
        }
        let mut out = Vec::new();
        walk(&Shape::Object(NODE_AGENT_CONFIG), &mut Vec::new(), &mut out);
        out
    }

    #[test]
    fn every_key_the_loader_knows_is_read_from_the_version_velero_added_it() {
        let leaves = leaves();
        assert!(leaves.len() > 30, "{}", leaves.len());
        for (path, document) in leaves {
            let dotted = path.join(".").replace(".[0]", "[0]");
            let added = ADDED
                .iter()
                .filter(|(prefix, _)| {
                    dotted
                        .strip_prefix(prefix)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
                })
                .map(|(_, version)| *version)
                .max()
                .unwrap_or(VeleroVersion::OLDEST);
            for version in VeleroVersion::ALL {
                let loaded = crate::load::load_json_at(&document.to_string(), version)
                    .unwrap_or_else(|error| panic!("{dotted} at {version}: {error}"));
                let unknown: Vec<_> = loaded
                    .findings
                    .iter()
                    .filter(|f| f.kind == crate::FindingKind::UnknownKey)
                    .collect();
                assert!(unknown.is_empty(), "{dotted} at {version}: {unknown:?}");
                let not_read = loaded
                    .findings
                    .iter()
                    .any(|f| f.kind == crate::FindingKind::NotReadAtVersion);
                let config = serde_json::to_value(&loaded.config).unwrap();
                let kept = path
                    .iter()
                    .try_fold(&config, |value, segment| match segment.as_str() {
                        "[0]" => value.get(0),
                        key => value.get(key),
                    })
                    .is_some();
                assert_eq!(not_read, version < added, "{dotted} at {version}");
                assert_eq!(kept, version >= added, "{dotted} at {version}");
            }
        }
    }
}
