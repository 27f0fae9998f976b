//! A Tacker BaseHOT (E.7): the Heat template a VNF package ships instead of
//! the one heat-translator would generate. Its `OS::Nova::ServerGroup`
//! resources, the servers whose `scheduler_hints.group` names them (in the
//! top template, or in the nested template an `OS::Heat::AutoScalingGroup`
//! instantiates, the group passed down as a property), and the scaling
//! groups' sizes, with a finding for every hint that reaches no group.
//!
//! The result is a [`Translation`] (the groups and hints) that
//! [`super::plan::plan`] takes in place of heat-translator's.

use std::fmt;

use super::translate::{ServerGroup, Translation};
use super::tree::Tree;
use super::vnfd::{LoadResult, VnfdError, resolve_import};

/// `OS::Nova::ServerGroup`.
pub const SERVER_GROUP: &str = "OS::Nova::ServerGroup";
/// `OS::Nova::Server`.
pub const SERVER: &str = "OS::Nova::Server";
/// `OS::Heat::AutoScalingGroup`.
pub const AUTO_SCALING_GROUP: &str = "OS::Heat::AutoScalingGroup";

/// The policies Heat's `OS::Nova::ServerGroup` accepts; an absent
/// `policies` is `[anti-affinity]`.
const POLICIES: [&str; 4] = [
    "anti-affinity",
    "affinity",
    "soft-anti-affinity",
    "soft-affinity",
];

/// An `OS::Heat::AutoScalingGroup` and the VDU (server) it repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalingGroup {
    /// The resource name in the top template.
    pub resource: String,
    /// The servers of its nested template (the VDU names).
    pub vdus: Vec<String>,
    /// `min_size`, when written as a number.
    pub min: Option<u32>,
    /// `max_size`, when written as a number.
    pub max: Option<u32>,
    /// `desired_capacity`, when written as a number (Tacker fills a
    /// `get_param: [nfv, VDU, …]` from the VNFD's instantiation level).
    pub desired: Option<u32>,
}

/// Why a hint does not place a server in a group, or what else is off.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HotFindingKind {
    /// `scheduler_hints` written on the scaling group itself, which has
    /// no such property: Heat refuses the template.
    HintOnScalingGroup,
    /// A server's `group` hint does not lead to a server group of the top
    /// template (a literal, a parameter not passed down, another resource).
    UnresolvedHint {
        /// The hint as written.
        value: String,
    },
    /// A server has no `group` hint: nothing keeps its copies apart.
    NoHint,
    /// A server group no server names.
    UnusedGroup,
    /// The nested template of a scaling group is not in the package.
    MissingNested {
        /// The template type as written.
        template: String,
    },
}

/// One finding: the file, the resource path and what is off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotFinding {
    /// The file holding the resource.
    pub file: String,
    /// `resources.<name>` (and the property concerned).
    pub path: String,
    /// The resource (server, scaling or server group) concerned.
    pub resource: String,
    /// What is off.
    pub kind: HotFindingKind,
}

impl HotFinding {
    /// Short code of the finding's kind.
    pub fn code(&self) -> &'static str {
        match self.kind {
            HotFindingKind::HintOnScalingGroup => "hint-on-scaling-group",
            HotFindingKind::UnresolvedHint { .. } => "unresolved-hint",
            HotFindingKind::NoHint => "no-server-group",
            HotFindingKind::UnusedGroup => "unused-server-group",
            HotFindingKind::MissingNested { .. } => "missing-nested-template",
        }
    }
}

impl fmt::Display for HotFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let resource = &self.resource;
        match &self.kind {
            HotFindingKind::HintOnScalingGroup => write!(
                f,
                "{AUTO_SCALING_GROUP} {resource} has no property scheduler_hints: Heat refuses the template; pass the group to the nested template (resource.properties) and write `scheduler_hints: {{group: {{get_param: …}}}}` on its server"
            ),
            HotFindingKind::UnresolvedHint { value } => write!(
                f,
                "server {resource}'s scheduler hint group {value} does not lead to a {SERVER_GROUP} of the template: Nova places its servers without a group, and they may share a compute host"
            ),
            HotFindingKind::NoHint => write!(
                f,
                "server {resource} has no scheduler hint group: nothing keeps its servers on different compute hosts"
            ),
            HotFindingKind::UnusedGroup => write!(
                f,
                "server group {resource} is named by no server's scheduler hint: it places nothing"
            ),
            HotFindingKind::MissingNested { template } => write!(
                f,
                "scaling group {resource} instantiates {template:?}, which is neither next to the template nor in its nested/ directory: its servers are not known"
            ),
        }
    }
}

/// What a BaseHOT says about server groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseHot {
    /// The top template's name.
    pub file: String,
    /// The server groups (`name` is the group's name in Nova: its `name`
    /// property, a parameter's default, or the resource name) with their
    /// member VDUs, and the VDUs hinted, as heat-translator's translation
    /// would state them.
    pub translation: Translation,
    /// The scaling groups.
    pub scaling: Vec<ScalingGroup>,
    /// What is off, in document order.
    pub findings: Vec<HotFinding>,
}

fn shape(file: &str, path: &str, expected: &'static str, found: &Tree) -> VnfdError {
    VnfdError::Shape {
        file: file.to_owned(),
        path: path.to_owned(),
        expected,
        found: found.shown(),
    }
}

fn parse(file: &str, text: &str) -> Result<Tree, VnfdError> {
    Tree::parse(text).map_err(|message| VnfdError::Yaml {
        file: file.to_owned(),
        message,
    })
}

fn number(file: &str, path: &str, value: Option<&Tree>) -> Result<Option<u32>, VnfdError> {
    match value {
        None | Some(Tree::Null) | Some(Tree::Map(_)) => Ok(None),
        Some(Tree::Scalar(text)) => text.parse().map(Some).map_err(|_| VnfdError::Number {
            file: file.to_owned(),
            path: path.to_owned(),
            value: text.clone(),
        }),
        Some(other) => Err(shape(file, path, "a number", other)),
    }
}

/// The single-key intrinsic function `{name: argument}`, if `value` is one.
fn intrinsic<'a>(value: &'a Tree, name: &str) -> Option<&'a Tree> {
    match value.entries() {
        [(key, argument)] if key == name => Some(argument),
        _ => None,
    }
}

/// A hint as written: `{get_param: sg}` for a function of one scalar
/// argument, else the tree's short form.
fn written(value: &Tree) -> String {
    match value.entries() {
        [(function, Tree::Scalar(argument))] => format!("{{{function}: {argument}}}"),
        _ => value.shown(),
    }
}

/// A server group of the top template.
struct GroupResource {
    resource: String,
    name: String,
    policy: &'static str,
    members: Vec<String>,
}

/// Reads a BaseHOT: `entry` is the top template's name, `text` its
/// content; `loader` reads a nested template by its resolved name (first
/// next to the top template, then in its `nested/` directory, as Tacker
/// packages them).
pub fn read_base_hot(
    entry: &str,
    text: &str,
    loader: &mut dyn FnMut(&str) -> LoadResult,
) -> Result<BaseHot, VnfdError> {
    let top = parse(entry, text)?;
    let resources = match top.get("resources") {
        Some(resources @ Tree::Map(_)) => resources,
        Some(other) => return Err(shape(entry, "resources", "a mapping", other)),
        None => return Err(shape(entry, "resources", "a mapping", &Tree::Null)),
    };
    let parameter_default = |name: &str| -> Option<String> {
        top.get("parameters")?
            .get(name)?
            .get("default")?
            .as_str()
            .map(str::to_owned)
    };
    let mut groups = Vec::new();
    for (resource, body) in resources.entries() {
        if body.get("type").and_then(Tree::as_str) != Some(SERVER_GROUP) {
            continue;
        }
        let path = format!("resources.{resource}.properties");
        let properties = body.get("properties").unwrap_or(&Tree::Null);
        let name = match properties.get("name") {
            Some(Tree::Scalar(name)) => name.clone(),
            Some(value) => intrinsic(value, "get_param")
                .and_then(Tree::as_str)
                .and_then(parameter_default)
                .unwrap_or_else(|| resource.clone()),
            None => resource.clone(),
        };
        let policy = match properties.get("policies") {
            None | Some(Tree::Null) => POLICIES[0],
            Some(Tree::Seq(items)) => {
                let written = items.first().and_then(Tree::as_str).unwrap_or_default();
                POLICIES
                    .iter()
                    .copied()
                    .find(|p| *p == written)
                    .ok_or_else(|| {
                        shape(
                            entry,
                            &format!("{path}.policies[0]"),
                            "one of anti-affinity, affinity, soft-anti-affinity, soft-affinity",
                            items.first().unwrap_or(&Tree::Null),
                        )
                    })?
            }
            Some(other) => {
                return Err(shape(entry, &format!("{path}.policies"), "a list", other));
            }
        };
        groups.push(GroupResource {
            resource: resource.clone(),
            name,
            policy,
            members: Vec::new(),
        });
    }

    let mut reader = Reader {
        entry,
        groups,
        hints: Vec::new(),
        findings: Vec::new(),
    };
    let mut scaling = Vec::new();
    for (resource, body) in resources.entries() {
        let path = format!("resources.{resource}");
        match body.get("type").and_then(Tree::as_str) {
            Some(SERVER) => reader.server(entry, &path, resource, body, &|value| {
                intrinsic(value, "get_resource")
                    .and_then(Tree::as_str)
                    .map(str::to_owned)
            }),
            Some(AUTO_SCALING_GROUP) => {
                let properties = body.get("properties").unwrap_or(&Tree::Null);
                let at = |field: &str| format!("{path}.properties.{field}");
                let mut group = ScalingGroup {
                    resource: resource.clone(),
                    vdus: Vec::new(),
                    min: number(entry, &at("min_size"), properties.get("min_size"))?,
                    max: number(entry, &at("max_size"), properties.get("max_size"))?,
                    desired: number(
                        entry,
                        &at("desired_capacity"),
                        properties.get("desired_capacity"),
                    )?,
                };
                if properties.get("scheduler_hints").is_some() {
                    reader.findings.push(HotFinding {
                        file: entry.to_owned(),
                        path: at("scheduler_hints"),
                        resource: resource.clone(),
                        kind: HotFindingKind::HintOnScalingGroup,
                    });
                }
                let nested = properties.get("resource").unwrap_or(&Tree::Null);
                let passed = nested.get("properties").unwrap_or(&Tree::Null);
                if let Some(template) = nested.get("type").and_then(Tree::as_str) {
                    group.vdus =
                        reader.nested(template, &at("resource.type"), resource, passed, loader)?;
                }
                scaling.push(group);
            }
            _ => {}
        }
    }
    let Reader {
        groups,
        hints,
        mut findings,
        ..
    } = reader;
    for group in &groups {
        if group.members.is_empty() {
            findings.push(HotFinding {
                file: entry.to_owned(),
                path: format!("resources.{}", group.resource),
                resource: group.resource.clone(),
                kind: HotFindingKind::UnusedGroup,
            });
        }
    }
    Ok(BaseHot {
        file: entry.to_owned(),
        translation: Translation {
            hints,
            groups: groups
                .into_iter()
                .map(|g| ServerGroup {
                    name: g.name,
                    policy: g.policy,
                    rule: g.resource,
                    members: g.members,
                })
                .collect(),
            findings: Vec::new(),
        },
        scaling,
        findings,
    })
}

/// The groups found so far, and the hints and findings being collected.
struct Reader<'a> {
    entry: &'a str,
    groups: Vec<GroupResource>,
    hints: Vec<(String, String)>,
    findings: Vec<HotFinding>,
}

impl Reader<'_> {
    /// A server: its hint, resolved by `resolve` to a top-level resource
    /// name, makes it a member of that server group.
    fn server(
        &mut self,
        file: &str,
        path: &str,
        name: &str,
        body: &Tree,
        resolve: &dyn Fn(&Tree) -> Option<String>,
    ) {
        let hint = body
            .get("properties")
            .and_then(|p| p.get("scheduler_hints"))
            .and_then(|h| h.get("group"));
        let Some(hint) = hint else {
            self.findings.push(HotFinding {
                file: file.to_owned(),
                path: path.to_owned(),
                resource: name.to_owned(),
                kind: HotFindingKind::NoHint,
            });
            return;
        };
        let group = resolve(hint).and_then(|r| self.groups.iter_mut().find(|g| g.resource == r));
        match group {
            Some(group) => {
                group.members.push(name.to_owned());
                self.hints.push((name.to_owned(), group.name.clone()));
            }
            None => self.findings.push(HotFinding {
                file: file.to_owned(),
                path: format!("{path}.properties.scheduler_hints.group"),
                resource: name.to_owned(),
                kind: HotFindingKind::UnresolvedHint {
                    value: written(hint),
                },
            }),
        }
    }

    /// The servers of a scaling group's nested template; a `get_param`
    /// hint there resolves through the properties the group passes down.
    fn nested(
        &mut self,
        template: &str,
        path: &str,
        scaling: &str,
        passed: &Tree,
        loader: &mut dyn FnMut(&str) -> LoadResult,
    ) -> Result<Vec<String>, VnfdError> {
        let beside = resolve_import(self.entry, template);
        let in_nested = resolve_import(self.entry, &format!("nested/{template}"));
        let mut found = None;
        for candidate in [beside, in_nested] {
            match loader(&candidate) {
                Ok(Some(text)) => {
                    found = Some((candidate, text));
                    break;
                }
                Ok(None) => {}
                Err(message) => {
                    return Err(VnfdError::Import {
                        file: self.entry.to_owned(),
                        path: path.to_owned(),
                        value: template.to_owned(),
                        resolved: candidate,
                        message,
                    });
                }
            }
        }
        let Some((file, text)) = found else {
            self.findings.push(HotFinding {
                file: self.entry.to_owned(),
                path: path.to_owned(),
                resource: scaling.to_owned(),
                kind: HotFindingKind::MissingNested {
                    template: template.to_owned(),
                },
            });
            return Ok(Vec::new());
        };
        let tree = parse(&file, &text)?;
        let mut servers = Vec::new();
        for (name, body) in tree.get("resources").map(Tree::entries).unwrap_or_default() {
            if body.get("type").and_then(Tree::as_str) != Some(SERVER) {
                continue;
            }
            let resolve = |value: &Tree| {
                let parameter = intrinsic(value, "get_param")?.as_str()?;
                intrinsic(passed.get(parameter)?, "get_resource")?
                    .as_str()
                    .map(str::to_owned)
            };
            self.server(&file, &format!("resources.{name}"), name, body, &resolve);
            servers.push(name.clone());
        }
        Ok(servers)
    }
}
