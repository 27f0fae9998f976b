//! Brute-force volume filters (C.50–C.53), written again from the rules:
//! every check reads the raw objects and walks every pod, with no counts
//! kept between pods.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod, Volume};
use k8s_openapi::api::storage::v1::StorageClass;
use kube_scheduler_sim::{Code, Failure, Plugin, PodSelector, StorageObjects};

type Labels = BTreeMap<String, String>;

fn ns(p: &Pod) -> String {
    p.metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into())
}

fn volumes(p: &Pod) -> Vec<Volume> {
    p.spec
        .as_ref()
        .and_then(|s| s.volumes.clone())
        .unwrap_or_default()
}

/// (claim name, ephemeral) of each claim volume, in order.
fn claim_names(p: &Pod) -> Vec<(String, bool)> {
    let pod = p.metadata.name.clone().unwrap_or_default();
    volumes(p)
        .iter()
        .filter_map(|v| {
            if let Some(c) = &v.persistent_volume_claim {
                Some((c.claim_name.clone(), false))
            } else if v.ephemeral.is_some() {
                Some((format!("{pod}-{}", v.name), true))
            } else {
                None
            }
        })
        .collect()
}

fn find_claim<'a>(
    s: &'a StorageObjects,
    ns: &str,
    name: &str,
) -> Option<&'a PersistentVolumeClaim> {
    s.claims.iter().find(|c| {
        c.metadata.namespace.as_deref().unwrap_or("default") == ns
            && c.metadata.name.as_deref() == Some(name)
    })
}
fn find_pv<'a>(s: &'a StorageObjects, name: &str) -> Option<&'a PersistentVolume> {
    s.volumes
        .iter()
        .find(|v| v.metadata.name.as_deref() == Some(name))
}
fn find_class<'a>(s: &'a StorageObjects, name: &str) -> Option<&'a StorageClass> {
    s.classes
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(name))
}
fn class_of(c: &PersistentVolumeClaim) -> String {
    c.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("volume.beta.kubernetes.io/storage-class").cloned())
        .or_else(|| c.spec.as_ref().and_then(|s| s.storage_class_name.clone()))
        .unwrap_or_default()
}
fn pv_name(c: &PersistentVolumeClaim) -> String {
    c.spec
        .as_ref()
        .and_then(|s| s.volume_name.clone())
        .unwrap_or_default()
}
fn wffc(s: &StorageObjects, class: &str) -> bool {
    find_class(s, class)
        .is_some_and(|c| c.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer"))
}
fn bound(c: &PersistentVolumeClaim) -> bool {
    let annotated = c
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("pv.kubernetes.io/bind-completed"));
    let phase = c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
    !pv_name(c).is_empty() && (annotated || phase)
}

fn unresolvable(plugin: Plugin, reasons: Vec<String>) -> Failure {
    Failure {
        plugin,
        code: Code::UnschedulableAndUnresolvable,
        message: reasons.join(", "),
        reasons,
    }
}
fn unschedulable(plugin: Plugin, reason: &str) -> Failure {
    Failure {
        plugin,
        code: Code::Unschedulable,
        message: reason.to_owned(),
        reasons: vec![reason.to_owned()],
    }
}

/// The four PreFilters in order: the plugin and message of the first
/// failure.
pub fn prefilter(s: &StorageObjects, pod: &Pod) -> Option<(Plugin, String)> {
    let pns = ns(pod);
    let claims = claim_names(pod);
    // VolumeRestrictions.
    for (name, eph) in &claims {
        if !eph && find_claim(s, &pns, name).is_none() {
            return Some((
                Plugin::VolumeRestrictions,
                format!("persistentvolumeclaim \"{name}\" not found"),
            ));
        }
    }
    // VolumeBinding.
    let mut immediate = false;
    for (name, eph) in &claims {
        let Some(c) = find_claim(s, &pns, name) else {
            return Some((
                Plugin::VolumeBinding,
                format!(
                    "waiting for ephemeral volume controller to create the persistentvolumeclaim \"{name}\""
                ),
            ));
        };
        if c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Lost") {
            return Some((
                Plugin::VolumeBinding,
                format!(
                    "persistentvolumeclaim \"{name}\" bound to non-existent persistentvolume \"{}\"",
                    pv_name(c)
                ),
            ));
        }
        if c.metadata.deletion_timestamp.is_some() {
            return Some((
                Plugin::VolumeBinding,
                format!("persistentvolumeclaim \"{name}\" is being deleted"),
            ));
        }
        if *eph && let Some(uid) = pod.metadata.uid.as_deref().filter(|u| !u.is_empty()) {
            let owned = c
                .metadata
                .owner_references
                .clone()
                .unwrap_or_default()
                .iter()
                .any(|o| o.controller == Some(true) && o.uid == uid);
            if !owned {
                let pod_name = pod.metadata.name.clone().unwrap_or_default();
                return Some((
                    Plugin::VolumeBinding,
                    format!(
                        "PVC {pns}/{name} was not created for pod {pns}/{pod_name} (pod is not owner)"
                    ),
                ));
            }
        }
        let delayed = pv_name(c).is_empty() && wffc(s, &class_of(c));
        if !bound(c) && !delayed {
            immediate = true;
        }
    }
    if immediate {
        return Some((
            Plugin::VolumeBinding,
            "pod has unbound immediate PersistentVolumeClaims".into(),
        ));
    }
    // VolumeZone.
    for (name, eph) in &claims {
        if *eph {
            continue;
        }
        let Some(c) = find_claim(s, &pns, name) else {
            continue;
        };
        let pv = pv_name(c);
        if pv.is_empty() {
            continue;
        }
        if find_pv(s, &pv).is_none() {
            return Some((
                Plugin::VolumeZone,
                format!("persistentvolume \"{pv}\" not found"),
            ));
        }
    }
    None
}

#[derive(PartialEq)]
enum Disk {
    Gce(String, bool),
    Ebs(String),
    Iscsi(String, bool),
    Rbd(Vec<String>, String, String, bool),
}

fn disks(p: &Pod) -> Vec<Disk> {
    volumes(p)
        .iter()
        .filter_map(|v| {
            let ro = |r: Option<bool>| r.unwrap_or(false);
            if let Some(g) = &v.gce_persistent_disk {
                Some(Disk::Gce(g.pd_name.clone(), ro(g.read_only)))
            } else if let Some(e) = &v.aws_elastic_block_store {
                Some(Disk::Ebs(e.volume_id.clone()))
            } else if let Some(i) = &v.iscsi {
                Some(Disk::Iscsi(i.iqn.clone(), ro(i.read_only)))
            } else {
                v.rbd.as_ref().map(|r| {
                    Disk::Rbd(
                        r.monitors.clone(),
                        r.pool.clone().unwrap_or_else(|| "rbd".into()),
                        r.image.clone(),
                        ro(r.read_only),
                    )
                })
            }
        })
        .collect()
}

fn clash(a: &Disk, b: &Disk) -> bool {
    match (a, b) {
        (Disk::Gce(x, r1), Disk::Gce(y, r2)) => x == y && !(*r1 && *r2),
        (Disk::Ebs(x), Disk::Ebs(y)) => x == y,
        (Disk::Iscsi(x, r1), Disk::Iscsi(y, r2)) => x == y && !(*r1 && *r2),
        (Disk::Rbd(m1, p1, i1, r1), Disk::Rbd(m2, p2, i2, r2)) => {
            m1.iter().any(|m| m2.contains(m)) && p1 == p2 && i1 == i2 && !(*r1 && *r2)
        }
        _ => false,
    }
}

/// The unique CSI volumes of a pod: unique name → driver.
fn csi_volumes(s: &StorageObjects, p: &Pod) -> BTreeMap<String, String> {
    let pns = ns(p);
    let mut out = BTreeMap::new();
    for (name, _) in claim_names(p) {
        let Some(c) = find_claim(s, &pns, &name) else {
            continue;
        };
        let pv = pv_name(c);
        if let Some(v) = (!pv.is_empty()).then(|| find_pv(s, &pv)).flatten() {
            if let Some(csi) = v.spec.as_ref().and_then(|s| s.csi.as_ref())
                && !csi.driver.is_empty()
                && !csi.volume_handle.is_empty()
            {
                out.insert(
                    format!("{}/{}", csi.driver, csi.volume_handle),
                    csi.driver.clone(),
                );
            }
            continue;
        }
        let Some(class) = find_class(s, &class_of(c)) else {
            continue;
        };
        if class.provisioner.is_empty() || class.provisioner.starts_with("kubernetes.io/") {
            continue;
        }
        out.insert(
            format!("{}/unbound-claim-{pns}/{name}", class.provisioner),
            class.provisioner.clone(),
        );
    }
    out
}

fn pv_affinity_ok(pv: &PersistentVolume, labels: &Labels) -> bool {
    match pv
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
    {
        None => true,
        Some(sel) => sel
            .node_selector_terms
            .iter()
            .any(|t| super::node_term(t, "", labels)),
    }
}

fn qty(q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>) -> i128 {
    q.and_then(|q| kube_validation::Quantity::parse(&q.0).ok())
        .map_or(0, |q| q.nanos())
}

/// A matching available PV name for a delayed claim on a node.
fn matching_pv(
    s: &StorageObjects,
    c: &PersistentVolumeClaim,
    labels: &Labels,
    taken: &BTreeSet<String>,
) -> Option<String> {
    let class = class_of(c);
    let cns = c
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let cname = c.metadata.name.clone().unwrap_or_default();
    let spec = c.spec.clone().unwrap_or_default();
    let want = qty(spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage")));
    let mode = spec
        .volume_mode
        .clone()
        .unwrap_or_else(|| "Filesystem".into());
    let selector = match &spec.selector {
        None => None,
        Some(sel) => Some(PodSelector::compile(Some(sel)).ok()?),
    };
    let mut pvs: Vec<&PersistentVolume> = s.volumes.iter().collect();
    pvs.sort_by_key(|v| v.metadata.name.clone());
    pvs.dedup_by_key(|v| v.metadata.name.clone());
    let mut best: Option<(i128, String)> = None;
    for v in pvs {
        let name = v.metadata.name.clone().unwrap_or_default();
        let Some(vs) = v.spec.as_ref() else { continue };
        if vs.storage_class_name.clone().unwrap_or_default() != class || taken.contains(&name) {
            continue;
        }
        let cap = qty(vs.capacity.as_ref().and_then(|c| c.get("storage")));
        let prebound = vs.claim_ref.as_ref().map(|r| {
            r.name.as_deref() == Some(cname.as_str())
                && r.namespace.clone().unwrap_or_else(|| "default".into()) == cns
                && r.uid
                    .as_deref()
                    .is_none_or(|u| u.is_empty() || Some(u) == c.metadata.uid.as_deref())
        });
        if prebound == Some(false)
            || cap < want
            || vs
                .volume_mode
                .clone()
                .unwrap_or_else(|| "Filesystem".into())
                != mode
            || v.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        if prebound == Some(true) {
            return pv_affinity_ok(v, labels).then_some(name);
        }
        let phase = v.status.as_ref().and_then(|s| s.phase.clone());
        let free = phase.is_none() || phase.as_deref() == Some("Available");
        let sel_ok = selector
            .as_ref()
            .is_none_or(|sel| sel.matches(&v.metadata.labels.clone().unwrap_or_default()));
        let modes = vs.access_modes.clone().unwrap_or_default();
        let modes_ok = spec
            .access_modes
            .clone()
            .unwrap_or_default()
            .iter()
            .all(|m| modes.contains(m));
        if free
            && sel_ok
            && pv_affinity_ok(v, labels)
            && modes_ok
            && best.as_ref().is_none_or(|(b, _)| cap < *b)
        {
            best = Some((cap, name));
        }
    }
    best.map(|b| b.1)
}

fn can_provision(s: &StorageObjects, class: &str, labels: &Labels) -> bool {
    let Some(c) = find_class(s, class) else {
        return false;
    };
    if c.provisioner.is_empty() || c.provisioner == "kubernetes.io/no-provisioner" {
        return false;
    }
    let terms = c.allowed_topologies.clone().unwrap_or_default();
    terms.is_empty()
        || terms.iter().any(|t| {
            t.match_label_expressions
                .clone()
                .unwrap_or_default()
                .iter()
                .all(|e| labels.get(&e.key).is_some_and(|v| e.values.contains(v)))
        })
}

const ZONE_KEYS: [&str; 4] = [
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

/// The volume filters on one node; `scheduled` are all pods bound to known
/// nodes, `on_node` those on this node.
pub fn node_failure(
    s: &StorageObjects,
    pod: &Pod,
    node: &Node,
    on_node: &[&Pod],
    scheduled: &[&Pod],
) -> Option<Failure> {
    let vols = volumes(pod);
    if vols.is_empty() {
        return None;
    }
    let pns = ns(pod);
    let name = node.metadata.name.clone().unwrap_or_default();
    let labels: Labels = node.metadata.labels.clone().unwrap_or_default();
    let claims = claim_names(pod);
    // VolumeRestrictions.
    let mine = disks(pod);
    if mine
        .iter()
        .any(|d| on_node.iter().any(|p| disks(p).iter().any(|e| clash(d, e))))
    {
        return Some(unschedulable(
            Plugin::VolumeRestrictions,
            "node(s) had no available disk",
        ));
    }
    let rwop_in_use = claims.iter().filter(|(_, e)| !e).any(|(c, _)| {
        let rwop = find_claim(s, &pns, c)
            .and_then(|c| c.spec.as_ref()?.access_modes.clone())
            .is_some_and(|m| m.iter().any(|m| m == "ReadWriteOncePod"));
        rwop && scheduled
            .iter()
            .any(|p| ns(p) == pns && claim_names(p).iter().any(|(n, _)| n == c))
    });
    if rwop_in_use {
        return Some(unschedulable(
            Plugin::VolumeRestrictions,
            "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod",
        ));
    }
    // NodeVolumeLimits.
    if !claims.is_empty()
        && let Some(csi) = s
            .csi_nodes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(name.as_str()))
    {
        let mut attached = BTreeMap::new();
        for p in on_node {
            attached.extend(csi_volumes(s, p));
        }
        let new = csi_volumes(s, pod);
        for d in &csi.spec.drivers {
            let Some(limit) = d.allocatable.as_ref().and_then(|a| a.count) else {
                continue;
            };
            let new_count = new
                .iter()
                .filter(|(u, dr)| **dr == d.name && !attached.contains_key(*u))
                .count();
            let used = attached.values().filter(|dr| **dr == d.name).count();
            if new_count > 0 && (used + new_count) as i64 > i64::from(limit) {
                return Some(unschedulable(
                    Plugin::NodeVolumeLimits,
                    "node(s) exceed max volume count",
                ));
            }
        }
    }
    // VolumeBinding.
    let mut node_conflict = false;
    let mut pv_missing = false;
    let mut delayed = Vec::new();
    for (cname, _) in &claims {
        let Some(c) = find_claim(s, &pns, cname) else {
            continue;
        };
        if bound(c) {
            if node_conflict || pv_missing {
                continue;
            }
            match find_pv(s, &pv_name(c)) {
                None => pv_missing = true,
                Some(v) if !pv_affinity_ok(v, &labels) => node_conflict = true,
                Some(_) => {}
            }
        } else {
            delayed.push(c);
        }
    }
    let selected_elsewhere = delayed.iter().any(|c| {
        c.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("volume.kubernetes.io/selected-node"))
            .is_some_and(|n| *n != name)
    });
    let bind_conflict = if selected_elsewhere {
        true
    } else {
        let mut to_match: Vec<&PersistentVolumeClaim> = delayed
            .iter()
            .copied()
            .filter(|c| {
                !c.metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key("volume.kubernetes.io/selected-node"))
            })
            .collect();
        to_match.sort_by_key(|c| {
            qty(c
                .spec
                .as_ref()
                .and_then(|s| s.resources.as_ref())
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get("storage")))
        });
        let mut taken = BTreeSet::new();
        let mut provision: Vec<&PersistentVolumeClaim> = delayed
            .iter()
            .copied()
            .filter(|c| !to_match.iter().any(|m| std::ptr::eq(*m, *c)))
            .collect();
        for c in to_match {
            match matching_pv(s, c, &labels, &taken) {
                Some(v) => {
                    taken.insert(v);
                }
                None => provision.push(c),
            }
        }
        provision
            .iter()
            .any(|c| !can_provision(s, &class_of(c), &labels))
    };
    let mut reasons = Vec::new();
    if node_conflict {
        reasons.push("node(s) didn't match PersistentVolume's node affinity".to_owned());
    }
    if bind_conflict {
        reasons.push("node(s) didn't find available persistent volumes to bind".to_owned());
    }
    if pv_missing {
        reasons.push(
            "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)".to_owned(),
        );
    }
    if !reasons.is_empty() {
        return Some(unresolvable(Plugin::VolumeBinding, reasons));
    }
    // VolumeZone.
    if !ZONE_KEYS.iter().any(|k| labels.contains_key(*k)) {
        return None;
    }
    for (cname, eph) in &claims {
        if *eph {
            continue;
        }
        let Some(c) = find_claim(s, &pns, cname) else {
            continue;
        };
        let Some(v) = find_pv(s, &pv_name(c)) else {
            continue;
        };
        let pv_labels = v.metadata.labels.clone().unwrap_or_default();
        for key in ZONE_KEYS {
            let Some(value) = pv_labels.get(key) else {
                continue;
            };
            let zones: Vec<&str> = value.split("__").map(str::trim).collect();
            if zones.iter().any(|z| z.is_empty()) {
                continue;
            }
            let ga = key.replace(
                "failure-domain.beta.kubernetes.io",
                "topology.kubernetes.io",
            );
            let node_value = labels.get(key).or_else(|| labels.get(&ga));
            if !node_value.is_some_and(|nv| zones.contains(&nv.as_str())) {
                return Some(unresolvable(
                    Plugin::VolumeZone,
                    vec!["node(s) had no available volume zone".into()],
                ));
            }
        }
    }
    None
}
