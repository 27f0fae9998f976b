//! The shape of the node-agent configuration as Go's `encoding/json` sees
//! it, used to normalise a parsed document before typed decoding: key case
//! (C1.8), unknown keys, duplicate keys, `null` handling and the zero values
//! Go fills in.

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
}

const fn field(name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        required: false,
    }
}

const REQUIREMENT: &[Field] = &[
    Field {
        name: "key",
        shape: Shape::Str,
        required: true,
    },
    Field {
        name: "operator",
        shape: Shape::Str,
        required: true,
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
    field("annotations", Shape::Map(&Shape::Str)),
];

const RESTORE_PVC: &[Field] = &[field("ignoreDelayBinding", Shape::Bool)];

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
    field("privilegedFsBackup", Shape::Bool),
    field("cachePVC", Shape::Object(CACHE_PVC)),
    field("podAnnotations", Shape::Map(&Shape::Str)),
    field("podLabels", Shape::Map(&Shape::Str)),
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
}
