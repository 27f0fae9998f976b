//! What heat-translator makes of a VNFD's affinity rules (rules E.1–E.3 of
//! docs/behaviour/tacker.md): the `OS::Nova::ServerGroup` resources and
//! each VDU's `scheduler_hints`, and a finding for every rule, target or
//! hint it drops without a word.
//!
//! heat-translator translates a `tosca.policies.nfv.AffinityRule` or
//! `AntiAffinityRule` only when its `scope` is `nfvi_node`, and only for the
//! targets that are VDU computes (`OS::Nova::Server` resources). Rules are
//! handled in document order; each sets `scheduler_hints.group` on its
//! targets, replacing an earlier rule's hint. A rule left with no server
//! target produces nothing. Two rules of one name produce one resource
//! `<name>_group`, in the first one's place, with the last one's policy.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::vnfd::{NodeKind, PLACEMENT_GROUP, Vnfd};

/// `tosca.policies.nfv.AffinityRule`.
pub const AFFINITY_RULE: &str = "tosca.policies.nfv.AffinityRule";
/// `tosca.policies.nfv.AntiAffinityRule`.
pub const ANTI_AFFINITY_RULE: &str = "tosca.policies.nfv.AntiAffinityRule";
/// The only scope heat-translator translates.
pub const NFVI_NODE: &str = "nfvi_node";
/// The suffix of the server-group resource's name.
pub const GROUP_SUFFIX: &str = "_group";

/// A server group heat-translator creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerGroup {
    /// The resource name, which is also its `name` property.
    pub name: String,
    /// `affinity` or `anti-affinity`.
    pub policy: &'static str,
    /// The rule it came from (the last one of that name).
    pub rule: String,
    /// The VDUs whose hint names it, in document order.
    pub members: Vec<String>,
}

/// Why a rule, or part of one, is not in the translation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FindingKind {
    /// `scope` is not `nfvi_node`: the whole rule is dropped.
    UnsupportedScope {
        /// The scope written (`None`: absent).
        scope: Option<String>,
    },
    /// A target is a group (a PlacementGroup): not expanded, dropped.
    GroupTarget {
        /// The group's members.
        members: Vec<String>,
    },
    /// A target is a virtual link: dropped.
    VirtualLinkTarget,
    /// A target is a node that is not a VDU compute: dropped.
    OtherTarget {
        /// Its type.
        type_name: String,
    },
    /// A target names nothing in the topology: dropped.
    MissingTarget,
    /// The rule has no VDU target left: no server group at all.
    NoServerTarget,
    /// A later rule replaced this rule's hint on a VDU.
    HintReplaced {
        /// The later rule.
        by: String,
        /// Its server group.
        group: String,
    },
    /// Another rule of the same name replaced this rule's server group.
    DuplicateName {
        /// The later rule's path.
        by: String,
    },
}

/// One finding: the rule, the target concerned, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file holding the rule.
    pub file: String,
    /// The rule's path (`topology_template.policies[0].Spread`).
    pub path: String,
    /// The rule's name.
    pub rule: String,
    /// The target concerned, if the finding is about one.
    pub target: Option<String>,
    /// What happened.
    pub kind: FindingKind,
}

impl Finding {
    /// Short code of the finding's kind.
    pub fn code(&self) -> &'static str {
        match self.kind {
            FindingKind::UnsupportedScope { .. } => "unsupported-scope",
            FindingKind::GroupTarget { .. } => "group-target",
            FindingKind::VirtualLinkTarget => "virtual-link-target",
            FindingKind::OtherTarget { .. } => "unsupported-target",
            FindingKind::MissingTarget => "missing-target",
            FindingKind::NoServerTarget => "no-server-group",
            FindingKind::HintReplaced { .. } => "hint-replaced",
            FindingKind::DuplicateName { .. } => "duplicate-name",
        }
    }

    /// The rule id in docs/behaviour/tacker.md that explains it.
    pub fn rule_id(&self) -> &'static str {
        match self.kind {
            FindingKind::UnsupportedScope { .. } => "E.1",
            FindingKind::GroupTarget { .. }
            | FindingKind::VirtualLinkTarget
            | FindingKind::OtherTarget { .. }
            | FindingKind::MissingTarget
            | FindingKind::NoServerTarget => "E.2",
            FindingKind::HintReplaced { .. } | FindingKind::DuplicateName { .. } => "E.3",
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = self.target.as_deref().unwrap_or_default();
        match &self.kind {
            FindingKind::UnsupportedScope { scope } => write!(
                f,
                "scope {}: heat-translator translates only scope nfvi_node, so this rule makes no server group and its VDUs may share a compute host; write `scope: nfvi_node` (Nova server groups act per compute host)",
                scope
                    .as_deref()
                    .map_or_else(|| "absent".to_owned(), |s| format!("{s:?}"))
            ),
            FindingKind::GroupTarget { members } => write!(
                f,
                "target {target:?} is a group ({PLACEMENT_GROUP}): heat-translator does not expand groups and drops it; list its VDUs instead: `targets: [{}]`",
                members.join(", ")
            ),
            FindingKind::VirtualLinkTarget => write!(
                f,
                "target {target:?} is a virtual link: heat-translator translates only VDU targets and drops it; a server group places servers, so target the VDUs"
            ),
            FindingKind::OtherTarget { type_name } => write!(
                f,
                "target {target:?} is a {type_name}, not a VDU compute: heat-translator drops it; target the VDUs"
            ),
            FindingKind::MissingTarget => write!(
                f,
                "target {target:?} names no node template or group: heat-translator drops it; name a VDU of this topology"
            ),
            FindingKind::NoServerTarget => write!(
                f,
                "no VDU target is left: heat-translator makes no server group for this rule"
            ),
            FindingKind::HintReplaced { by, group } => write!(
                f,
                "VDU {target:?} is also a target of the later rule {by:?}, whose scheduler hint (group {group}) replaced this one: a server takes one group, so {target} is not in this rule's group; put the VDUs of one spread in one rule"
            ),
            FindingKind::DuplicateName { by } => write!(
                f,
                "another rule of this name ({by}) makes the same resource {}{GROUP_SUFFIX}, which keeps only the last rule's policy; give each rule its own name",
                self.rule
            ),
        }
    }
}

/// The server-group part of heat-translator's HOT, and the findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    /// The VDUs that got a hint, in document order, with their group.
    pub hints: Vec<(String, String)>,
    /// The server groups, in heat-translator's order.
    pub groups: Vec<ServerGroup>,
    /// What was dropped, in document order of the rules.
    pub findings: Vec<Finding>,
}

impl Translation {
    /// The server group a VDU's hint names.
    pub fn group_of(&self, vdu: &str) -> Option<&ServerGroup> {
        let (_, group) = self.hints.iter().find(|(v, _)| v == vdu)?;
        self.groups.iter().find(|g| &g.name == group)
    }
}

fn scope_of(properties: &super::tree::Tree) -> Option<String> {
    properties
        .get("scope")
        .and_then(super::tree::Tree::as_str)
        .map(str::to_owned)
}

/// Translates the VNFD's affinity rules as heat-translator does.
pub fn translate(vnfd: &Vnfd) -> Translation {
    let mut findings = Vec::new();
    // VDU → (group, rule path) of the latest rule that hinted it.
    let mut hint: BTreeMap<String, (String, String, String)> = BTreeMap::new();
    let mut groups: Vec<ServerGroup> = Vec::new();
    let mut last_path_of: BTreeMap<String, String> = BTreeMap::new();
    for policy in &vnfd.policies {
        let policy_name = match policy.type_name.as_str() {
            AFFINITY_RULE => "affinity",
            ANTI_AFFINITY_RULE => "anti-affinity",
            _ => continue,
        };
        let finding = |target: Option<&str>, kind| Finding {
            file: vnfd.file.clone(),
            path: policy.path.clone(),
            rule: policy.name.clone(),
            target: target.map(str::to_owned),
            kind,
        };
        let scope = scope_of(&policy.properties);
        if scope.as_deref() != Some(NFVI_NODE) {
            findings.push(finding(None, FindingKind::UnsupportedScope { scope }));
            continue;
        }
        let group_name = format!("{}{GROUP_SUFFIX}", policy.name);
        let mut servers = Vec::new();
        for target in &policy.targets {
            match vnfd.node(target) {
                Some(node) => match node.kind {
                    NodeKind::Compute => servers.push(target.clone()),
                    NodeKind::VirtualLink => {
                        findings.push(finding(Some(target), FindingKind::VirtualLinkTarget));
                    }
                    NodeKind::Other => findings.push(finding(
                        Some(target),
                        FindingKind::OtherTarget {
                            type_name: node.type_name.clone(),
                        },
                    )),
                },
                None => match vnfd.group(target) {
                    Some(group) => findings.push(finding(
                        Some(target),
                        FindingKind::GroupTarget {
                            members: group.members.clone(),
                        },
                    )),
                    None => findings.push(finding(Some(target), FindingKind::MissingTarget)),
                },
            }
        }
        if servers.is_empty() {
            findings.push(finding(None, FindingKind::NoServerTarget));
            continue;
        }
        // Servers hinted in document order of the node templates (the
        // order heat-translator walks its resources in).
        for node in &vnfd.nodes {
            if servers.contains(&node.name) {
                hint.insert(
                    node.name.clone(),
                    (group_name.clone(), policy.path.clone(), policy.name.clone()),
                );
            }
        }
        if let Some(earlier) = last_path_of.insert(group_name.clone(), policy.path.clone()) {
            let earlier_rule = vnfd.policies.iter().find(|p| p.path == earlier);
            findings.push(Finding {
                file: vnfd.file.clone(),
                path: earlier,
                rule: earlier_rule.map_or_else(|| policy.name.clone(), |p| p.name.clone()),
                target: None,
                kind: FindingKind::DuplicateName {
                    by: policy.path.clone(),
                },
            });
        }
        match groups.iter_mut().find(|g| g.name == group_name) {
            Some(group) => {
                group.policy = policy_name;
                group.rule = policy.name.clone();
            }
            None => groups.push(ServerGroup {
                name: group_name,
                policy: policy_name,
                rule: policy.name.clone(),
                members: Vec::new(),
            }),
        }
    }
    // Hints replaced by later rules.
    for policy in &vnfd.policies {
        if !matches!(
            policy.type_name.as_str(),
            AFFINITY_RULE | ANTI_AFFINITY_RULE
        ) || scope_of(&policy.properties).as_deref() != Some(NFVI_NODE)
        {
            continue;
        }
        for target in &policy.targets {
            if let (Some(node), Some((group, path, rule))) = (vnfd.node(target), hint.get(target))
                && node.kind == NodeKind::Compute
                && *path != policy.path
            {
                findings.push(Finding {
                    file: vnfd.file.clone(),
                    path: policy.path.clone(),
                    rule: policy.name.clone(),
                    target: Some(target.clone()),
                    kind: FindingKind::HintReplaced {
                        by: rule.clone(),
                        group: group.clone(),
                    },
                });
            }
        }
    }
    let mut hints = Vec::new();
    for node in &vnfd.nodes {
        if let Some((group, _, _)) = hint.get(&node.name) {
            hints.push((node.name.clone(), group.clone()));
            if let Some(g) = groups.iter_mut().find(|g| &g.name == group) {
                g.members.push(node.name.clone());
            }
        }
    }
    findings.sort_by(|a, b| {
        let index = |f: &Finding| vnfd.policies.iter().position(|p| p.path == f.path);
        index(a).cmp(&index(b))
    });
    Translation {
        hints,
        groups,
        findings,
    }
}

/// The HOT template heat-translator writes, as a value for JSON: maps
/// sorted by key, as `json.dumps(sort_keys=True)` writes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HotDocument {
    /// `2013-05-23`.
    pub heat_template_version: &'static str,
    /// Always empty here.
    pub outputs: BTreeMap<String, String>,
    /// Always empty here.
    pub parameters: BTreeMap<String, String>,
    /// The resources by name.
    pub resources: BTreeMap<String, HotResource>,
}

/// One resource of [`HotDocument`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HotResource {
    /// Its properties.
    pub properties: HotProperties,
    /// `OS::Nova::Server` or `OS::Nova::ServerGroup`.
    #[serde(rename = "type")]
    pub type_name: &'static str,
}

/// The properties of a [`HotResource`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum HotProperties {
    /// A server's `scheduler_hints`.
    Server {
        /// `{group: {get_resource: NAME}}`.
        scheduler_hints: BTreeMap<&'static str, BTreeMap<&'static str, String>>,
    },
    /// A server group's `name` and `policies`.
    ServerGroup {
        /// The group's name.
        name: String,
        /// Its one policy.
        policies: Vec<&'static str>,
    },
}

/// The version heat-translator writes.
pub const HOT_VERSION: &str = "2013-05-23";

impl Translation {
    /// The server-group part of the HOT as a JSON-ready document.
    pub fn hot_document(&self) -> HotDocument {
        let mut resources = BTreeMap::new();
        for (vdu, group) in &self.hints {
            resources.insert(
                vdu.clone(),
                HotResource {
                    type_name: "OS::Nova::Server",
                    properties: HotProperties::Server {
                        scheduler_hints: BTreeMap::from([(
                            "group",
                            BTreeMap::from([("get_resource", group.clone())]),
                        )]),
                    },
                },
            );
        }
        for group in &self.groups {
            resources.insert(
                group.name.clone(),
                HotResource {
                    type_name: "OS::Nova::ServerGroup",
                    properties: HotProperties::ServerGroup {
                        name: group.name.clone(),
                        policies: vec![group.policy],
                    },
                },
            );
        }
        HotDocument {
            heat_template_version: HOT_VERSION,
            outputs: BTreeMap::new(),
            parameters: BTreeMap::new(),
            resources,
        }
    }

    /// The server-group part of the HOT as heat-translator writes it
    /// (PyYAML's block style, no quotes, resources in its order: the hinted
    /// servers in document order, then the groups).
    pub fn hot_yaml(&self) -> String {
        let mut out = format!("heat_template_version: {HOT_VERSION}\n\nparameters: {{}}\n");
        let mut resources = String::new();
        for (vdu, group) in &self.hints {
            resources.push_str(&format!(
                "  {}:\n    type: OS::Nova::Server\n    properties:\n      scheduler_hints:\n        group: {{ get_resource: {} }}\n",
                plain(vdu),
                plain(group)
            ));
        }
        for group in &self.groups {
            resources.push_str(&format!(
                "  {}:\n    type: OS::Nova::ServerGroup\n    properties:\n      name: {}\n      policies:\n      - {}\n",
                plain(&group.name),
                plain(&group.name),
                group.policy
            ));
        }
        if resources.is_empty() {
            out.push_str("resources: {}\n");
        } else {
            out.push_str("resources:\n");
            out.push_str(&resources);
        }
        out.push_str("outputs: {}\n");
        out
    }
}

/// A name as it comes out of heat-translator's writer, which removes every
/// `'` from PyYAML's text (so single-quoted names lose their quotes).
fn plain(name: &str) -> String {
    name.replace('\'', "")
}
