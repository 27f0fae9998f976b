//! Reading an ETSI SOL001 VNFD (TOSCA YAML): one file, or the entry file of
//! a CSAR's `Definitions/` folder with its imports, which the caller's
//! loader reads (this module does no I/O). What is kept is what the
//! placement questions need: the VDUs and virtual links, the placement
//! groups, and the policies with their targets and properties.

use std::collections::BTreeMap;

use super::tree::Tree;

/// Imports whose name starts with this are ETSI's SOL001 type definitions;
/// their types are known here, so such an import may be absent.
pub const ETSI_TYPES_PREFIX: &str = "etsi_nfv_sol001_";

/// The VDU compute node type (translated to `OS::Nova::Server`).
pub const VDU_COMPUTE: &str = "tosca.nodes.nfv.Vdu.Compute";
/// The plain TOSCA compute type (also translated to `OS::Nova::Server`).
pub const TOSCA_COMPUTE: &str = "tosca.nodes.Compute";
/// The internal virtual link type.
pub const VIRTUAL_LINK: &str = "tosca.nodes.nfv.VnfVirtualLink";
/// The placement group type.
pub const PLACEMENT_GROUP: &str = "tosca.groups.nfv.PlacementGroup";

/// What a node template is, after following `derived_from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A VDU compute (or `tosca.nodes.Compute`): a Nova server.
    Compute,
    /// A `tosca.nodes.nfv.VnfVirtualLink`.
    VirtualLink,
    /// Anything else (connection points, storage, the VNF node).
    Other,
}

/// One node template.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeTemplate {
    /// Its name (the Heat resource name after translation).
    pub name: String,
    /// Its type as written.
    pub type_name: String,
    /// What the type is.
    pub kind: NodeKind,
    /// `properties.vdu_profile.min_number_of_instances`.
    pub min_instances: Option<u32>,
    /// `properties.vdu_profile.max_number_of_instances`.
    pub max_instances: Option<u32>,
    /// `properties.name` (the server name heat-translator gives).
    pub server_name: Option<String>,
}

/// One group of `topology_template.groups`.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Its name.
    pub name: String,
    /// Its type as written.
    pub type_name: String,
    /// Its `members`.
    pub members: Vec<String>,
}

/// One policy of `topology_template.policies`.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Where it is: `topology_template.policies[1].Spread`.
    pub path: String,
    /// Its name.
    pub name: String,
    /// Its type as written.
    pub type_name: String,
    /// Its `targets`, as written.
    pub targets: Vec<String>,
    /// Its `properties` (null when absent).
    pub properties: Tree,
}

/// The parts of a VNFD that placement depends on.
#[derive(Debug, Clone, PartialEq)]
pub struct Vnfd {
    /// The file whose `topology_template` this is.
    pub file: String,
    /// `substitution_mappings.properties.flavour_id`, when written.
    pub flavour_id: Option<String>,
    /// Node templates, in document order.
    pub nodes: Vec<NodeTemplate>,
    /// Groups, in document order.
    pub groups: Vec<Group>,
    /// Policies, in document order.
    pub policies: Vec<Policy>,
}

impl Vnfd {
    /// The node template named `name`.
    pub fn node(&self, name: &str) -> Option<&NodeTemplate> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The group named `name`.
    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }
}

/// Why a VNFD could not be read. Every variant names the file, the field
/// path and the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VnfdError {
    /// The file is not YAML.
    #[error("{file}: not a YAML document: {message}")]
    Yaml {
        /// The file.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// A field has the wrong shape.
    #[error("{file}: {path}: expected {expected}, found {found}")]
    Shape {
        /// The file.
        file: String,
        /// The field path.
        path: String,
        /// What was expected.
        expected: &'static str,
        /// What was found.
        found: String,
    },
    /// An import names no readable file.
    #[error("{file}: {path}: import {value:?} ({resolved}): {message}")]
    Import {
        /// The importing file.
        file: String,
        /// The field path.
        path: String,
        /// The import as written.
        value: String,
        /// The path it was resolved to.
        resolved: String,
        /// Why it could not be read.
        message: String,
    },
    /// A number of instances is not a non-negative integer.
    #[error("{file}: {path}: {value:?} is not a number of instances (a non-negative integer)")]
    Number {
        /// The file.
        file: String,
        /// The field path.
        path: String,
        /// The value.
        value: String,
    },
    /// No file has a topology with a VDU.
    #[error(
        "no topology_template with a VDU ({VDU_COMPUTE}) in {files}: a VNFD's deployment flavour is the topology_template whose node_templates hold the VDUs"
    )]
    NoTopology {
        /// The files read.
        files: String,
    },
    /// Several deployment flavours and none chosen.
    #[error("{count} deployment flavours ({list}): choose one by its flavour_id")]
    Flavours {
        /// How many.
        count: usize,
        /// `flavour_id (file)` of each.
        list: String,
    },
    /// The chosen flavour does not exist.
    #[error("no deployment flavour {value:?}: the VNFD has {list}")]
    UnknownFlavour {
        /// The flavour asked for.
        value: String,
        /// `flavour_id (file)` of each.
        list: String,
    },
}

/// Reads the loader's answer for one import: the text, `None` when there is
/// no such file, or an error message.
pub type LoadResult = Result<Option<String>, String>;

/// The directory part of a `/`-separated path (empty for a bare name).
fn directory(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// `import` relative to the directory of `from`, with `.` and `..` removed.
pub fn resolve_import(from: &str, import: &str) -> String {
    let joined = if import.starts_with('/') || directory(from).is_empty() {
        import.to_owned()
    } else {
        format!("{}/{import}", directory(from))
    };
    let absolute = joined.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    let body = parts.join("/");
    if absolute { format!("/{body}") } else { body }
}

fn shape(file: &str, path: &str, expected: &'static str, found: &Tree) -> VnfdError {
    VnfdError::Shape {
        file: file.to_owned(),
        path: path.to_owned(),
        expected,
        found: found.shown(),
    }
}

/// A list of names (`targets`, `members`); a single name is accepted too.
fn names(file: &str, path: &str, tree: Option<&Tree>) -> Result<Vec<String>, VnfdError> {
    match tree {
        None | Some(Tree::Null) => Ok(Vec::new()),
        Some(Tree::Scalar(one)) => Ok(vec![one.clone()]),
        Some(Tree::Seq(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| shape(file, &format!("{path}[{i}]"), "a name", item))
            })
            .collect(),
        Some(other) => Err(shape(file, path, "a list of names", other)),
    }
}

/// A number of instances at `path`, if present.
pub(crate) fn count(file: &str, path: &str, tree: Option<&Tree>) -> Result<Option<u32>, VnfdError> {
    match tree {
        None | Some(Tree::Null) => Ok(None),
        Some(Tree::Scalar(text)) => text
            .parse::<u32>()
            .map(Some)
            .map_err(|_| VnfdError::Number {
                file: file.to_owned(),
                path: path.to_owned(),
                value: text.clone(),
            }),
        Some(other) => Err(shape(file, path, "a number", other)),
    }
}

struct Loaded {
    name: String,
    tree: Tree,
}

/// Loads `name` and, depth first, its imports (each file once).
fn load_all(
    name: &str,
    text: &str,
    loader: &mut dyn FnMut(&str) -> LoadResult,
    out: &mut Vec<Loaded>,
) -> Result<(), VnfdError> {
    let tree = Tree::parse(text).map_err(|message| VnfdError::Yaml {
        file: name.to_owned(),
        message,
    })?;
    if !matches!(tree, Tree::Map(_)) {
        return Err(shape(name, "(document)", "a mapping", &tree));
    }
    let imports: Vec<(String, String)> = match tree.get("imports") {
        None | Some(Tree::Null) => Vec::new(),
        Some(Tree::Seq(items)) => {
            let mut list = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let path = format!("imports[{i}]");
                let file = match item {
                    Tree::Scalar(file) => file.clone(),
                    // `- file: x.yaml` (TOSCA 1.2) or `- name: x.yaml` /
                    // `- name: {file: x.yaml}` (TOSCA 1.0).
                    Tree::Map(entries) => match item.get("file").and_then(Tree::as_str) {
                        Some(file) => file.to_owned(),
                        None => match entries.as_slice() {
                            [(_, Tree::Scalar(file))] => file.clone(),
                            [(_, inner)] => inner
                                .get("file")
                                .and_then(Tree::as_str)
                                .map(str::to_owned)
                                .ok_or_else(|| shape(name, &path, "an import file name", item))?,
                            _ => return Err(shape(name, &path, "an import file name", item)),
                        },
                    },
                    other => return Err(shape(name, &path, "an import file name", other)),
                };
                list.push((path, file));
            }
            list
        }
        Some(other) => return Err(shape(name, "imports", "a list", other)),
    };
    out.push(Loaded {
        name: name.to_owned(),
        tree,
    });
    for (path, import) in imports {
        if import.contains("://") {
            // A URL: tosca-parser would download it; we read only local
            // files, and know the ETSI types without them.
            continue;
        }
        let resolved = resolve_import(name, &import);
        if out.iter().any(|l| l.name == resolved) {
            continue;
        }
        let base = import.rsplit('/').next().unwrap_or(&import);
        match loader(&resolved) {
            Ok(Some(text)) => load_all(&resolved, &text, loader, out)?,
            Ok(None) if base.starts_with(ETSI_TYPES_PREFIX) => {}
            Ok(None) => {
                return Err(VnfdError::Import {
                    file: name.to_owned(),
                    path,
                    value: import,
                    resolved,
                    message: "no such file".to_owned(),
                });
            }
            Err(message) => {
                return Err(VnfdError::Import {
                    file: name.to_owned(),
                    path,
                    value: import,
                    resolved,
                    message,
                });
            }
        }
    }
    Ok(())
}

/// `derived_from` of every node type the files define.
fn node_types(files: &[Loaded]) -> BTreeMap<String, String> {
    let mut types = BTreeMap::new();
    for file in files {
        if let Some(Tree::Map(entries)) = file.tree.get("node_types") {
            for (name, definition) in entries {
                if let Some(parent) = definition.get("derived_from").and_then(Tree::as_str) {
                    types.insert(name.clone(), parent.to_owned());
                }
            }
        }
    }
    types
}

fn kind_of(type_name: &str, types: &BTreeMap<String, String>) -> NodeKind {
    let mut current = type_name;
    // Bounded: a cycle of derivations ends as Other.
    for _ in 0..=types.len() {
        match current {
            VDU_COMPUTE | TOSCA_COMPUTE => return NodeKind::Compute,
            VIRTUAL_LINK => return NodeKind::VirtualLink,
            _ => match types.get(current) {
                Some(parent) => current = parent,
                None => return NodeKind::Other,
            },
        }
    }
    NodeKind::Other
}

fn read_topology(
    file: &str,
    topology: &Tree,
    types: &BTreeMap<String, String>,
) -> Result<Vnfd, VnfdError> {
    let base = "topology_template";
    let flavour_id = topology
        .get("substitution_mappings")
        .and_then(|m| m.get("properties"))
        .and_then(|p| p.get("flavour_id"))
        .and_then(Tree::as_str)
        .map(str::to_owned);
    let mut nodes = Vec::new();
    match topology.get("node_templates") {
        None | Some(Tree::Null) => {}
        Some(Tree::Map(entries)) => {
            for (name, node) in entries {
                let path = format!("{base}.node_templates.{name}");
                let type_name = node
                    .get("type")
                    .and_then(Tree::as_str)
                    .ok_or_else(|| {
                        shape(
                            file,
                            &format!("{path}.type"),
                            "a node type",
                            node.get("type").unwrap_or(&Tree::Null),
                        )
                    })?
                    .to_owned();
                let profile = node.get("properties").and_then(|p| p.get("vdu_profile"));
                let profile_path = format!("{path}.properties.vdu_profile");
                nodes.push(NodeTemplate {
                    server_name: node
                        .get("properties")
                        .and_then(|p| p.get("name"))
                        .and_then(Tree::as_str)
                        .map(str::to_owned),
                    name: name.clone(),
                    kind: kind_of(&type_name, types),
                    type_name,
                    min_instances: count(
                        file,
                        &format!("{profile_path}.min_number_of_instances"),
                        profile.and_then(|p| p.get("min_number_of_instances")),
                    )?,
                    max_instances: count(
                        file,
                        &format!("{profile_path}.max_number_of_instances"),
                        profile.and_then(|p| p.get("max_number_of_instances")),
                    )?,
                });
            }
        }
        Some(other) => {
            return Err(shape(
                file,
                &format!("{base}.node_templates"),
                "a mapping",
                other,
            ));
        }
    }
    let mut groups = Vec::new();
    match topology.get("groups") {
        None | Some(Tree::Null) => {}
        Some(Tree::Map(entries)) => {
            for (name, group) in entries {
                let path = format!("{base}.groups.{name}");
                groups.push(Group {
                    name: name.clone(),
                    type_name: group
                        .get("type")
                        .and_then(Tree::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    members: names(file, &format!("{path}.members"), group.get("members"))?,
                });
            }
        }
        Some(other) => return Err(shape(file, &format!("{base}.groups"), "a mapping", other)),
    }
    let mut policies = Vec::new();
    let listed: Vec<(String, &String, &Tree)> = match topology.get("policies") {
        None | Some(Tree::Null) => Vec::new(),
        Some(Tree::Seq(items)) => {
            let mut listed = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let path = format!("{base}.policies[{i}]");
                match item.entries() {
                    [(name, policy)] => listed.push((format!("{path}.{name}"), name, policy)),
                    _ => return Err(shape(file, &path, "a mapping with one policy name", item)),
                }
            }
            listed
        }
        Some(Tree::Map(entries)) => entries
            .iter()
            .map(|(name, policy)| (format!("{base}.policies.{name}"), name, policy))
            .collect(),
        Some(other) => return Err(shape(file, &format!("{base}.policies"), "a list", other)),
    };
    for (path, name, policy) in listed {
        let type_name = policy
            .get("type")
            .and_then(Tree::as_str)
            .ok_or_else(|| {
                shape(
                    file,
                    &format!("{path}.type"),
                    "a policy type",
                    policy.get("type").unwrap_or(&Tree::Null),
                )
            })?
            .to_owned();
        policies.push(Policy {
            targets: names(file, &format!("{path}.targets"), policy.get("targets"))?,
            properties: policy.get("properties").cloned().unwrap_or(Tree::Null),
            path,
            name: name.clone(),
            type_name,
        });
    }
    Ok(Vnfd {
        file: file.to_owned(),
        flavour_id,
        nodes,
        groups,
        policies,
    })
}

/// Reads a VNFD: `entry` is the name of the first file (imports are
/// resolved against its directory), `text` its content, `loader` reads an
/// imported file by its resolved name. The deployment flavour is the
/// topology holding VDUs; with several, `flavour` chooses by `flavour_id`.
pub fn read_vnfd(
    entry: &str,
    text: &str,
    loader: &mut dyn FnMut(&str) -> LoadResult,
    flavour: Option<&str>,
) -> Result<Vnfd, VnfdError> {
    let mut files = Vec::new();
    load_all(entry, text, loader, &mut files)?;
    let types = node_types(&files);
    let mut flavours = Vec::new();
    for file in &files {
        if let Some(topology) = file.tree.get("topology_template") {
            let vnfd = read_topology(&file.name, topology, &types)?;
            if vnfd.nodes.iter().any(|n| n.kind == NodeKind::Compute) {
                flavours.push(vnfd);
            }
        }
    }
    let list = || {
        flavours
            .iter()
            .map(|f| {
                format!(
                    "{} ({})",
                    f.flavour_id.as_deref().unwrap_or("no flavour_id"),
                    f.file
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (flavour, flavours.len()) {
        (_, 0) => Err(VnfdError::NoTopology {
            files: files
                .iter()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
        (Some(wanted), _) => match flavours
            .iter()
            .position(|f| f.flavour_id.as_deref() == Some(wanted))
        {
            Some(i) => Ok(flavours.swap_remove(i)),
            None => Err(VnfdError::UnknownFlavour {
                value: wanted.to_owned(),
                list: list(),
            }),
        },
        (None, 1) => Ok(flavours.remove(0)),
        (None, count) => Err(VnfdError::Flavours {
            count,
            list: list(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_resolve_against_the_importing_files_directory() {
        assert_eq!(
            resolve_import("Definitions/top.yaml", "df.yaml"),
            "Definitions/df.yaml"
        );
        assert_eq!(
            resolve_import("Definitions/top.yaml", "../x/y.yaml"),
            "x/y.yaml"
        );
        assert_eq!(resolve_import("top.yaml", "./df.yaml"), "df.yaml");
        assert_eq!(resolve_import("/a/b/top.yaml", "c.yaml"), "/a/b/c.yaml");
    }

    #[test]
    fn a_missing_etsi_types_import_is_known_and_a_missing_other_one_an_error() {
        let text = "imports: [etsi_nfv_sol001_common_types.yaml, mine.yaml]\ntopology_template:\n  node_templates:\n    VDU1: {type: tosca.nodes.nfv.Vdu.Compute}\n";
        let error = read_vnfd("Definitions/v.yaml", text, &mut |_| Ok(None), None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Definitions/v.yaml: imports[1]: import \"mine.yaml\" (Definitions/mine.yaml): no such file"
        );
    }

    #[test]
    fn node_types_are_followed_to_the_vdu_type_through_imports() {
        let top = "imports: [types.yaml]\ntopology_template:\n  node_templates:\n    W: {type: my.Worker}\n    VL: {type: tosca.nodes.nfv.VnfVirtualLink}\n";
        let types = "node_types:\n  my.Worker: {derived_from: my.Base}\n  my.Base: {derived_from: tosca.nodes.nfv.Vdu.Compute}\n";
        let vnfd = read_vnfd(
            "d/top.yaml",
            top,
            &mut |name| Ok((name == "d/types.yaml").then(|| types.to_owned())),
            None,
        )
        .unwrap();
        assert_eq!(vnfd.node("W").map(|n| n.kind), Some(NodeKind::Compute));
        assert_eq!(vnfd.node("VL").map(|n| n.kind), Some(NodeKind::VirtualLink));
    }

    #[test]
    fn a_bad_number_of_instances_names_file_path_and_value() {
        let text = "topology_template:\n  node_templates:\n    VDU1:\n      type: tosca.nodes.nfv.Vdu.Compute\n      properties:\n        vdu_profile: {min_number_of_instances: two}\n";
        let error = read_vnfd("v.yaml", text, &mut |_| Ok(None), None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "v.yaml: topology_template.node_templates.VDU1.properties.vdu_profile.min_number_of_instances: \"two\" is not a number of instances (a non-negative integer)"
        );
    }
}
