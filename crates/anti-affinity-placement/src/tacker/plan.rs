//! The plan of a VNFD's VDUs over the compute hosts (E.4–E.6 of
//! docs/behaviour/tacker.md): instance counts at each instantiation level
//! and scale level, whether each fits the hosts under its server group's
//! policy (Nova's rule C.24, placed with [`crate::hosts`]), the first level
//! that fails with NoValidHost, and the `CIS-node` labels Tacker's
//! management driver writes on the workers.

use std::collections::BTreeMap;

use serde::Serialize;

use super::translate::Translation;
use super::tree::Tree;
use super::vnfd::{NodeKind, Vnfd, VnfdError, count};
use crate::hosts::{CheckedInventory, Group, Host, HostInventory, Policy as HostPolicy, Vm};

/// The label key Tacker's management driver writes the compute host to.
pub const CIS_NODE_LABEL: &str = "CIS-node";
/// The zone label key it writes when the grant carried a zone.
pub const TACKER_ZONE_LABEL: &str = "kubernetes.io/zone";

const SCALING_ASPECTS: &str = "tosca.policies.nfv.ScalingAspects";
const VDU_SCALING_ASPECT_DELTAS: &str = "tosca.policies.nfv.VduScalingAspectDeltas";
const VDU_INITIAL_DELTA: &str = "tosca.policies.nfv.VduInitialDelta";
const INSTANTIATION_LEVELS: &str = "tosca.policies.nfv.InstantiationLevels";
const VDU_INSTANTIATION_LEVELS: &str = "tosca.policies.nfv.VduInstantiationLevels";

/// A scaling aspect and what one VDU gains per step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Aspect {
    /// The aspect id.
    pub name: String,
    /// `max_scale_level`.
    pub max_scale_level: u32,
    /// `step_deltas`, by step (the last one repeats).
    pub step_deltas: Vec<String>,
}

/// One VDU of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VduPlan {
    /// The VDU.
    pub name: String,
    /// Its server group (heat-translator's), if any.
    pub server_group: Option<String>,
    /// The group's policy.
    pub policy: Option<String>,
    /// At most this many per host (hard anti-affinity: 1 from a VNFD).
    pub max_server_per_host: Option<u32>,
    /// `vdu_profile.min_number_of_instances`.
    pub min: Option<u32>,
    /// `vdu_profile.max_number_of_instances`.
    pub max: Option<u32>,
    /// `VduInitialDelta`.
    pub initial: Option<u32>,
    /// The aspect scaling it, with its delta per step by delta id.
    pub aspect: Option<String>,
    /// Instances added per delta id of its aspect.
    pub deltas: BTreeMap<String, u32>,
    /// Instances per instantiation level.
    pub levels: BTreeMap<String, u32>,
}

/// Whether one server group fits the hosts at one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupFit {
    /// The server group.
    pub server_group: String,
    /// Its policy.
    pub policy: String,
    /// Servers in the group at this step.
    pub servers: u32,
    /// Servers Nova could not place (NoValidHost): hard policies only.
    pub no_valid_host: u32,
    /// Servers beyond one per host (soft anti-affinity: placed anyway).
    pub sharing: u32,
    /// Servers per host after placement.
    pub per_host: BTreeMap<String, u32>,
}

/// One instantiation level or scale level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// `instantiate LEVEL` or `scale ASPECT to N`.
    pub label: String,
    /// Instances per VDU.
    pub instances: BTreeMap<String, u32>,
    /// The server groups' fit.
    pub groups: Vec<GroupFit>,
    /// Whether every hard group fits.
    pub fits: bool,
}

/// A worker server as listed by `openstack server list --long`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// The server name.
    pub name: String,
    /// `OS-EXT-SRV-ATTR:host` (the `Host` column).
    pub host: Option<String>,
    /// Its IPv4 addresses, in listing order.
    pub ipv4: Vec<String>,
    /// The availability zone, if listed.
    pub zone: Option<String>,
}

/// A worker: its VDU, host, the labels Tacker writes and the Node name it
/// assumes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Worker {
    /// The server name.
    pub server: String,
    /// The VDU it belongs to.
    pub vdu: Option<String>,
    /// Its compute host.
    pub host: Option<String>,
    /// The labels Tacker's management driver writes (empty when the VDU is
    /// not in an anti-affinity server group).
    pub labels: BTreeMap<String, String>,
    /// `worker` + the last octet of its first IPv4 address.
    pub guessed_node: Option<String>,
    /// Whether that Node exists (`None`: no Nodes given).
    pub node_exists: Option<bool>,
    /// The Node's `CIS-node` label against the server's host (`None`: no
    /// Nodes given, or no label expected).
    pub label: Option<LabelState>,
}

/// A guessed Node's `CIS-node` label against the server list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum LabelState {
    /// It names the server's current host.
    Current,
    /// It names another host: written before a live migration or
    /// evacuation, never rewritten (D.2).
    Stale {
        /// The host the label names.
        labelled: String,
    },
    /// The Node has no such label.
    Missing,
    /// There is no Node of the guessed name.
    NoNode,
}

impl std::fmt::Display for LabelState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LabelState::Current => f.write_str("current"),
            LabelState::Stale { labelled } => write!(f, "stale: the Node says {labelled}"),
            LabelState::Missing => f.write_str("missing on the Node"),
            LabelState::NoNode => f.write_str("no such Node: the labels go nowhere"),
        }
    }
}

/// A Node of the cluster: its name and its `CIS-node` label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLabel {
    /// The Node name.
    pub name: String,
    /// Its `CIS-node` label, if any.
    pub host: Option<String>,
}

/// The whole plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The VDUs.
    pub vdus: Vec<VduPlan>,
    /// The compute hosts counted.
    pub hosts: Vec<String>,
    /// Instantiation levels, then each aspect's scale levels from the
    /// default instantiation level.
    pub steps: Vec<Step>,
    /// The first step some server fails with NoValidHost.
    pub first_no_valid_host: Option<String>,
    /// The workers of the server list.
    pub workers: Vec<Worker>,
    /// Servers of one VDU listed on one compute host: `(host, vdu,
    /// servers)`, by host then VDU.
    pub shared_hosts: Vec<(String, String, Vec<String>)>,
}

fn properties_map<'a>(policy: &'a super::vnfd::Policy, key: &str) -> &'a [(String, Tree)] {
    policy.properties.get(key).map_or(&[], Tree::entries)
}

/// The VDU counts of the VNFD's levels.
struct Levels {
    aspects: Vec<Aspect>,
    /// VDU → (aspect, delta id → instances).
    deltas: BTreeMap<String, (String, BTreeMap<String, u32>)>,
    initial: BTreeMap<String, u32>,
    /// Level → VDU → instances.
    vdu_levels: BTreeMap<String, BTreeMap<String, u32>>,
    /// Levels in document order, with their aspect scale levels.
    levels: Vec<(String, BTreeMap<String, u32>)>,
    default_level: Option<String>,
}

fn read_levels(vnfd: &Vnfd) -> Result<Levels, VnfdError> {
    let file = vnfd.file.as_str();
    let mut out = Levels {
        aspects: Vec::new(),
        deltas: BTreeMap::new(),
        initial: BTreeMap::new(),
        vdu_levels: BTreeMap::new(),
        levels: Vec::new(),
        default_level: None,
    };
    for policy in &vnfd.policies {
        let path = format!("{}.properties", policy.path);
        match policy.type_name.as_str() {
            SCALING_ASPECTS => {
                for (name, aspect) in properties_map(policy, "aspects") {
                    let at = format!("{path}.aspects.{name}");
                    out.aspects.push(Aspect {
                        name: name.clone(),
                        max_scale_level: count(
                            file,
                            &format!("{at}.max_scale_level"),
                            aspect.get("max_scale_level"),
                        )?
                        .unwrap_or(0),
                        step_deltas: match aspect.get("step_deltas") {
                            Some(Tree::Seq(items)) => items
                                .iter()
                                .filter_map(Tree::as_str)
                                .map(str::to_owned)
                                .collect(),
                            _ => Vec::new(),
                        },
                    });
                }
            }
            VDU_SCALING_ASPECT_DELTAS => {
                let aspect = policy
                    .properties
                    .get("aspect")
                    .and_then(Tree::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let mut deltas = BTreeMap::new();
                for (id, delta) in properties_map(policy, "deltas") {
                    let at = format!("{path}.deltas.{id}.number_of_instances");
                    deltas.insert(
                        id.clone(),
                        count(file, &at, delta.get("number_of_instances"))?.unwrap_or(0),
                    );
                }
                for target in &policy.targets {
                    out.deltas
                        .insert(target.clone(), (aspect.clone(), deltas.clone()));
                }
            }
            VDU_INITIAL_DELTA => {
                let at = format!("{path}.initial_delta.number_of_instances");
                let n = count(
                    file,
                    &at,
                    policy
                        .properties
                        .get("initial_delta")
                        .and_then(|d| d.get("number_of_instances")),
                )?;
                for target in &policy.targets {
                    if let Some(n) = n {
                        out.initial.insert(target.clone(), n);
                    }
                }
            }
            INSTANTIATION_LEVELS => {
                for (level, body) in properties_map(policy, "levels") {
                    let mut scale = BTreeMap::new();
                    for (aspect, info) in body.get("scale_info").map_or(&[][..], Tree::entries) {
                        let at = format!("{path}.levels.{level}.scale_info.{aspect}.scale_level");
                        scale.insert(
                            aspect.clone(),
                            count(file, &at, info.get("scale_level"))?.unwrap_or(0),
                        );
                    }
                    out.levels.push((level.clone(), scale));
                }
                out.default_level = policy
                    .properties
                    .get("default_level")
                    .and_then(Tree::as_str)
                    .map(str::to_owned);
            }
            VDU_INSTANTIATION_LEVELS => {
                for (level, body) in properties_map(policy, "levels") {
                    let at = format!("{path}.levels.{level}.number_of_instances");
                    if let Some(n) = count(file, &at, body.get("number_of_instances"))? {
                        for target in &policy.targets {
                            out.vdu_levels
                                .entry(level.clone())
                                .or_default()
                                .insert(target.clone(), n);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The compute hosts: a name, and whether Nova may place on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComputeHost {
    /// The hypervisor host name (`OS-EXT-SRV-ATTR:host`).
    pub name: String,
    /// False when disabled or down: never chosen.
    pub usable: bool,
}

/// Places the servers of one step with the hosts model.
fn fit(
    instances: &BTreeMap<String, u32>,
    translation: &Translation,
    hosts: &[ComputeHost],
) -> Vec<GroupFit> {
    let mut fits = Vec::new();
    for group in &translation.groups {
        let servers: u32 = group.members.iter().filter_map(|v| instances.get(v)).sum();
        let mut inventory = HostInventory::new();
        inventory.hosts = hosts
            .iter()
            .map(|h| Host {
                name: h.name.clone(),
                capacity: BTreeMap::new(),
                maintenance: !h.usable,
            })
            .collect();
        let (policy, max_per_host) = match group.policy {
            "anti-affinity" => (HostPolicy::AntiAffinity, Some(1)),
            _ => (HostPolicy::SoftAntiAffinity, None),
        };
        inventory.groups.push(Group {
            name: group.name.clone(),
            policy,
            max_per_host,
            anti_affinity_set: None,
        });
        for vdu in &group.members {
            for i in 0..instances.get(vdu).copied().unwrap_or(0) {
                inventory.vms.push(Vm {
                    name: format!("{vdu}-{i}"),
                    group: group.name.clone(),
                    requests: BTreeMap::new(),
                    host: None,
                });
            }
        }
        let mut per_host = BTreeMap::new();
        let (mut no_valid_host, mut sharing) = (0, 0);
        if group.policy == "affinity" || group.policy == "soft-affinity" {
            // Every member on the first member's host: no spread, no
            // NoValidHost from the policy itself.
            if servers > 0
                && let Some(host) = hosts.iter().find(|h| h.usable)
            {
                per_host.insert(host.name.clone(), servers);
            }
        } else if let Ok(checked) = CheckedInventory::new(&inventory) {
            let plan = checked.plan();
            for host in plan.assignments.values().flatten() {
                *per_host.entry(host.clone()).or_insert(0) += 1;
            }
            no_valid_host = u32::try_from(plan.unplaced.len()).unwrap_or(u32::MAX);
            sharing = per_host.values().map(|c| c.saturating_sub(1)).sum();
        }
        fits.push(GroupFit {
            server_group: group.name.clone(),
            policy: group.policy.to_owned(),
            servers,
            no_valid_host,
            sharing,
            per_host,
        });
    }
    fits
}

/// Plans the VNFD's VDUs over `hosts`; `servers` (the server list) gives the
/// workers, `nodes` (Node names) checks Tacker's node-name guess.
pub fn plan(
    vnfd: &Vnfd,
    translation: &Translation,
    hosts: &[ComputeHost],
    servers: &[Server],
    nodes: Option<&[NodeLabel]>,
) -> Result<Plan, VnfdError> {
    let levels = read_levels(vnfd)?;
    let computes: Vec<_> = vnfd
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Compute)
        .collect();
    let base = |vdu: &super::vnfd::NodeTemplate| {
        levels
            .initial
            .get(&vdu.name)
            .copied()
            .or(vdu.min_instances)
            .unwrap_or(1)
    };
    let mut vdus = Vec::new();
    for vdu in &computes {
        let group = translation.group_of(&vdu.name);
        let (aspect, deltas) = levels.deltas.get(&vdu.name).cloned().unzip();
        vdus.push(VduPlan {
            name: vdu.name.clone(),
            server_group: group.map(|g| g.name.clone()),
            policy: group.map(|g| g.policy.to_owned()),
            max_server_per_host: group.filter(|g| g.policy == "anti-affinity").map(|_| 1),
            min: vdu.min_instances,
            max: vdu.max_instances,
            initial: levels.initial.get(&vdu.name).copied(),
            aspect,
            deltas: deltas.unwrap_or_default(),
            levels: levels
                .vdu_levels
                .iter()
                .filter_map(|(level, counts)| Some((level.clone(), *counts.get(&vdu.name)?)))
                .collect(),
        });
    }
    let mut steps = Vec::new();
    let at_level = |level: Option<&str>| -> BTreeMap<String, u32> {
        computes
            .iter()
            .map(|vdu| {
                let n = level
                    .and_then(|l| levels.vdu_levels.get(l))
                    .and_then(|c| c.get(&vdu.name).copied())
                    .unwrap_or_else(|| base(vdu));
                (vdu.name.clone(), n)
            })
            .collect()
    };
    let mut push = |label: String, instances: BTreeMap<String, u32>| {
        let groups = fit(&instances, translation, hosts);
        let fits = groups.iter().all(|g| g.no_valid_host == 0);
        steps.push(Step {
            label,
            instances,
            groups,
            fits,
        });
    };
    if levels.levels.is_empty() {
        push("instantiate".to_owned(), at_level(None));
    }
    for (level, _) in &levels.levels {
        push(format!("instantiate {level}"), at_level(Some(level)));
    }
    let default = levels
        .default_level
        .clone()
        .or_else(|| levels.levels.first().map(|(l, _)| l.clone()));
    let start_of = |aspect: &str| {
        levels
            .levels
            .iter()
            .find(|(l, _)| Some(l) == default.as_ref())
            .and_then(|(_, scale)| scale.get(aspect).copied())
            .unwrap_or(0)
    };
    for aspect in &levels.aspects {
        let mut instances = at_level(default.as_deref());
        for step in (start_of(&aspect.name) + 1)..=aspect.max_scale_level {
            let delta_id = aspect
                .step_deltas
                .get(usize::try_from(step - 1).unwrap_or(usize::MAX))
                .or(aspect.step_deltas.last());
            for (vdu, (vdu_aspect, deltas)) in &levels.deltas {
                if *vdu_aspect == aspect.name
                    && let (Some(n), Some(id)) = (instances.get_mut(vdu), delta_id)
                {
                    *n += deltas.get(id).copied().unwrap_or(0);
                }
            }
            push(
                format!("scale {} to level {step}", aspect.name),
                instances.clone(),
            );
        }
    }
    let first_no_valid_host = steps.iter().find(|s| !s.fits).map(|s| s.label.clone());
    let workers: Vec<Worker> = servers
        .iter()
        .map(|server| worker(server, vnfd, translation, nodes))
        .collect();
    let mut by_host: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for w in &workers {
        if let (Some(host), Some(vdu)) = (&w.host, &w.vdu) {
            by_host
                .entry((host.clone(), vdu.clone()))
                .or_default()
                .push(w.server.clone());
        }
    }
    let shared_hosts = by_host
        .into_iter()
        .filter(|(_, servers)| servers.len() > 1)
        .map(|((host, vdu), servers)| (host, vdu, servers))
        .collect();
    Ok(Plan {
        shared_hosts,
        vdus,
        hosts: hosts.iter().map(|h| h.name.clone()).collect(),
        steps,
        first_no_valid_host,
        workers,
    })
}

/// Tacker's guess of a worker's Node name: `worker` + the last octet of its
/// IPv4 address.
pub fn guessed_node_name(ipv4: &str) -> Option<String> {
    let octets: Vec<&str> = ipv4.split('.').collect();
    match octets.as_slice() {
        [_, _, _, last] if octets.iter().all(|o| o.parse::<u8>().is_ok()) => {
            Some(format!("worker{last}"))
        }
        _ => None,
    }
}

fn worker(
    server: &Server,
    vnfd: &Vnfd,
    translation: &Translation,
    nodes: Option<&[NodeLabel]>,
) -> Worker {
    // The longest VDU server name (or node name) the server name starts with.
    let vdu = vnfd
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Compute)
        .flat_map(|n| {
            [n.server_name.as_deref(), Some(n.name.as_str())]
                .into_iter()
                .flatten()
                .map(move |p| (p, n))
        })
        .filter(|(prefix, _)| server.name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, n)| n.name.clone());
    let anti = vdu
        .as_deref()
        .and_then(|v| translation.group_of(v))
        .is_some_and(|g| g.policy == "anti-affinity");
    let mut labels = BTreeMap::new();
    if anti {
        if let Some(host) = &server.host {
            labels.insert(CIS_NODE_LABEL.to_owned(), host.clone());
        }
        if let Some(zone) = &server.zone {
            labels.insert(TACKER_ZONE_LABEL.to_owned(), zone.clone());
        }
    }
    // Tacker guesses (and labels) only the workers it labels.
    let guessed_node = if labels.is_empty() {
        None
    } else {
        server.ipv4.first().and_then(|ip| guessed_node_name(ip))
    };
    Worker {
        server: server.name.clone(),
        vdu,
        host: server.host.clone(),
        labels,
        node_exists: guessed_node
            .as_ref()
            .and_then(|g| nodes.map(|nodes| nodes.iter().any(|n| &n.name == g))),
        label: match (&guessed_node, nodes) {
            (Some(guess), Some(nodes)) => Some(match nodes.iter().find(|n| &n.name == guess) {
                None => LabelState::NoNode,
                Some(NodeLabel { host: None, .. }) => LabelState::Missing,
                Some(NodeLabel {
                    host: Some(labelled),
                    ..
                }) if server.host.as_ref() == Some(labelled) => LabelState::Current,
                Some(NodeLabel {
                    host: Some(labelled),
                    ..
                }) => LabelState::Stale {
                    labelled: labelled.clone(),
                },
            }),
            _ => None,
        },
        guessed_node,
    }
}
