//! Brute-force reference evaluator, written straight from C.1–C.23 with no
//! indexes: for every node, every check walks every placed pod.
//!
//! It is the oracle of the property tests and the baseline of the benchmarks
//! (which include this file), and not part of the crate's API. It uses only
//! the crate's public types and its label-selector parse ([`PodSelector`],
//! itself apimachinery's conversion from `kube-validation`); node selector
//! matching, tolerations, spread constraints, namespace scoping, counting,
//! the first-pod exception, symmetry, scoring, normalisation and selection
//! are written again here, and so are cordons, node names, taints, host
//! ports and resource requests (quantities are parsed with
//! `kube-validation`, the project's one quantity parser).
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Namespace, Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodAffinityTerm,
    WeightedPodAffinityTerm,
};

use k8s_openapi::api::core::v1::{Taint, Toleration};
use kube_scheduler_sim::{
    Code, Failure, KubernetesVersion, Options, Plugin, PluginScores, PodSelector, Reason,
    ScheduleResult, Scores, StorageObjects, Workloads, apply_match_label_keys,
};
use kube_validation::{ParseError, node_selector_field_requirement, node_selector_requirement};

type Labels = BTreeMap<String, String>;

mod volumes;

fn labels_of(p: &Pod) -> Labels {
    p.metadata.labels.clone().unwrap_or_default()
}
fn ns_of(p: &Pod) -> String {
    p.metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into())
}
fn node_labels(n: &Node) -> Labels {
    n.metadata.labels.clone().unwrap_or_default()
}
fn node_name(n: &Node) -> &str {
    n.metadata.name.as_deref().unwrap_or("")
}

/// One node selector requirement: `None` when unparsable.
fn node_req(r: &NodeSelectorRequirement, labels: &Labels) -> Option<bool> {
    let vals = r.values.clone().unwrap_or_default();
    if !kube_validation::validate_qualified_name(&r.key).is_empty()
        || vals
            .iter()
            .any(|v| !kube_validation::validate_label_value(v).is_empty())
    {
        return None;
    }
    let got = labels.get(&r.key);
    match r.operator.as_str() {
        "In" if !vals.is_empty() => Some(got.is_some_and(|g| vals.contains(g))),
        "NotIn" if !vals.is_empty() => Some(got.is_none_or(|g| !vals.contains(g))),
        "Exists" if vals.is_empty() => Some(got.is_some()),
        "DoesNotExist" if vals.is_empty() => Some(got.is_none()),
        "Gt" | "Lt" if vals.len() == 1 => {
            let bound: i64 = vals[0].parse().ok()?;
            let v = got.and_then(|g| g.parse::<i64>().ok());
            Some(match v {
                None => false,
                Some(v) if r.operator == "Gt" => v > bound,
                Some(v) => v < bound,
            })
        }
        _ => None,
    }
}

fn field_req(r: &NodeSelectorRequirement, name: &str) -> Option<bool> {
    let vals = r.values.clone().unwrap_or_default();
    if vals.len() != 1 {
        return None;
    }
    // Only `metadata.name` is a node field; any other reads as "".
    let actual = if r.key == "metadata.name" { name } else { "" };
    match r.operator.as_str() {
        "In" => Some(actual == vals[0]),
        "NotIn" => Some(actual != vals[0]),
        _ => None,
    }
}

/// A node selector term: false if empty or unparsable (C.1–C.3).
fn node_term(t: &NodeSelectorTerm, name: &str, labels: &Labels) -> bool {
    node_term_checked(t, name, labels).unwrap_or(false)
}

fn node_term_checked(t: &NodeSelectorTerm, name: &str, labels: &Labels) -> Option<bool> {
    let exprs = t.match_expressions.clone().unwrap_or_default();
    let fields = t.match_fields.clone().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return Some(false);
    }
    let mut ok = true;
    for e in &exprs {
        ok &= node_req(e, labels)?;
    }
    let mut fields_ok = true;
    for f in &fields {
        fields_ok &= field_req(f, name)?;
    }
    Some(ok && (name.is_empty() || fields_ok))
}

fn required_node_affinity(pod: &Pod, node: &Node) -> bool {
    let spec = pod.spec.clone().unwrap_or_default();
    let labels = node_labels(node);
    for (k, v) in spec.node_selector.iter().flatten() {
        if labels.get(k) != Some(v) {
            return false;
        }
    }
    match spec
        .affinity
        .and_then(|a| a.node_affinity)
        .and_then(|n| n.required_during_scheduling_ignored_during_execution)
    {
        None => true,
        Some(sel) => sel
            .node_selector_terms
            .iter()
            .any(|t| node_term(t, node_name(node), &labels)),
    }
}

/// C.4: every term pins `metadata.name In` and no name satisfies a term.
fn names_conflict(pod: &Pod) -> bool {
    let Some(sel) = pod
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
    else {
        return false;
    };
    if sel.node_selector_terms.is_empty() {
        return false;
    }
    let mut any_name = false;
    for t in &sel.node_selector_terms {
        let pins: Vec<BTreeSet<String>> = t
            .match_fields
            .iter()
            .flatten()
            .filter(|f| f.key == "metadata.name" && f.operator == "In")
            .map(|f| f.values.iter().flatten().cloned().collect())
            .collect();
        if pins.is_empty() {
            return false;
        }
        let mut inter = pins[0].clone();
        for p in &pins[1..] {
            inter = inter.intersection(p).cloned().collect();
        }
        any_name |= !inter.is_empty();
    }
    !any_name
}

/// A parsed pod-affinity term as the reference sees it.
struct Term {
    names: Vec<String>,
    implicit_own: bool,
    ns_selector: PodSelector,
    has_ns_selector: bool,
    selector: PodSelector,
    key: String,
    weight: i64,
}

fn parse_terms(raw: &[(i64, &PodAffinityTerm)], owner_ns: &str) -> Vec<Term> {
    let mut out = Vec::new();
    for (w, t) in raw {
        let (Ok(selector), Ok(ns_selector)) = (
            PodSelector::compile(t.label_selector.as_ref()),
            PodSelector::compile(t.namespace_selector.as_ref()),
        ) else {
            // kube-scheduler drops the whole list when one term is unparsable.
            return Vec::new();
        };
        let names = t.namespaces.clone().unwrap_or_default();
        let implicit_own = names.is_empty() && t.namespace_selector.is_none();
        let mut names = names;
        if implicit_own {
            names.push(owner_ns.to_owned());
        }
        out.push(Term {
            names,
            implicit_own,
            has_ns_selector: t.namespace_selector.is_some(),
            ns_selector,
            selector,
            key: t.topology_key.clone(),
            weight: *w,
        });
    }
    out
}

impl Term {
    /// An existing pod's term against the incoming pod: namespace selector
    /// evaluated on the incoming pod's namespace labels (C.8).
    fn matches_with_labels(&self, ns: &str, labels: &Labels, ns_labels: &Labels) -> bool {
        let _ = self.implicit_own;
        (self.names.iter().any(|n| n == ns)
            || (self.has_ns_selector && self.ns_selector.matches(ns_labels)))
            && self.selector.matches(labels)
    }

    /// The incoming pod's own term: a non-empty namespaceSelector is resolved
    /// against the namespace inventory; `{}` means every namespace (C.8).
    fn matches_incoming(
        &self,
        ns: &str,
        labels: &Labels,
        inventory: &BTreeMap<String, Labels>,
    ) -> bool {
        let ns_ok = self.names.iter().any(|n| n == ns)
            || (self.has_ns_selector
                && (self.ns_selector.is_everything()
                    || inventory
                        .get(ns)
                        .is_some_and(|l| self.ns_selector.matches(l))));
        ns_ok && self.selector.matches(labels)
    }
}

/// A placed pod, parsed once per evaluation.
struct Placed {
    ns: String,
    labels: Labels,
    terminating: bool,
    node: String,
    node_labels: Labels,
    terms: PodTerms,
}

struct PodTerms {
    req_aff: Vec<Term>,
    req_anti: Vec<Term>,
    pref_aff: Vec<Term>,
    pref_anti: Vec<Term>,
}

fn pod_terms(p: &Pod) -> PodTerms {
    let ns = ns_of(p);
    let a = p
        .spec
        .as_ref()
        .and_then(|s| s.affinity.clone())
        .unwrap_or_default();
    let req = |v: Option<Vec<PodAffinityTerm>>| -> Vec<Term> {
        let v = v.unwrap_or_default();
        parse_terms(&v.iter().map(|t| (0, t)).collect::<Vec<_>>(), &ns)
    };
    let pref = |v: Option<Vec<WeightedPodAffinityTerm>>| -> Vec<Term> {
        let v = v.unwrap_or_default();
        parse_terms(
            &v.iter()
                .map(|t| (i64::from(t.weight), &t.pod_affinity_term))
                .collect::<Vec<_>>(),
            &ns,
        )
    };
    let pa = a.pod_affinity.unwrap_or_default();
    let paa = a.pod_anti_affinity.unwrap_or_default();
    PodTerms {
        req_aff: req(pa.required_during_scheduling_ignored_during_execution),
        req_anti: req(paa.required_during_scheduling_ignored_during_execution),
        pref_aff: pref(pa.preferred_during_scheduling_ignored_during_execution),
        pref_anti: pref(paa.preferred_during_scheduling_ignored_during_execution),
    }
}

/// Evaluate `incoming` against `nodes`, `namespaces` and the bound pods in
/// `pods` (pods without a node or on an unknown node are ignored), by brute
/// force. Produces the same [`ScheduleResult`] as
/// [`ClusterState::evaluate`](super::ClusterState::evaluate).
pub fn evaluate(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    incoming: &Pod,
    opts: &Options,
) -> ScheduleResult {
    evaluate_all(
        nodes,
        namespaces,
        pods,
        &Workloads::default(),
        &StorageObjects::default(),
        incoming,
        opts,
    )
}

/// [`evaluate`] with the Services, ReplicationControllers, ReplicaSets and
/// StatefulSets the system-default spreading takes its selector from.
pub fn evaluate_with_workloads(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    workloads: &Workloads,
    incoming: &Pod,
    opts: &Options,
) -> ScheduleResult {
    let storage = StorageObjects::default();
    evaluate_all(nodes, namespaces, pods, workloads, &storage, incoming, opts)
}

/// [`evaluate`] with claims, volumes, classes and CSINodes (C.50–C.53).
pub fn evaluate_with_storage(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    storage: &StorageObjects,
    incoming: &Pod,
    opts: &Options,
) -> ScheduleResult {
    let workloads = Workloads::default();
    evaluate_all(nodes, namespaces, pods, &workloads, storage, incoming, opts)
}

/// [`evaluate`] with workloads and storage objects.
///
/// Pending pods nominated to a node (C.71) hold their room: a node with
/// such pods of at least the incoming pod's priority (not the pod itself)
/// is filtered first with only those pods bound to it, and rejected when
/// that fails; everything else is evaluated without them. A nominated
/// incoming pod takes its nominated node when that node passes.
pub fn evaluate_all(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    workloads: &Workloads,
    storage: &StorageObjects,
    incoming: &Pod,
    opts: &Options,
) -> ScheduleResult {
    let node_known = |name: &str| nodes.iter().any(|n| node_name(n) == name);
    let nominated_to = |p: &Pod| -> Option<String> {
        let spec = p.spec.as_ref()?;
        let tried = spec.node_name.as_deref().unwrap_or_default().is_empty()
            && spec
                .scheduler_name
                .as_deref()
                .unwrap_or("default-scheduler")
                == "default-scheduler"
            && spec
                .scheduling_gates
                .as_deref()
                .unwrap_or_default()
                .is_empty()
            && p.metadata.deletion_timestamp.is_none();
        let node = p.status.as_ref()?.nominated_node_name.clone()?;
        (tried && !node.is_empty() && node_known(&node)).then_some(node)
    };
    let priority = |p: &Pod| p.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
    let key = |p: &Pod| (ns_of(p), p.metadata.name.clone().unwrap_or_default());
    let bound: Vec<Pod> = pods
        .iter()
        .filter(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| !n.is_empty())
        })
        .cloned()
        .collect();
    let mut mask: BTreeMap<String, Failure> = BTreeMap::new();
    for n in nodes {
        let name = node_name(n);
        let ahead: Vec<Pod> = pods
            .iter()
            .filter(|p| nominated_to(p).as_deref() == Some(name))
            .filter(|p| priority(p) >= priority(incoming) && key(p) != key(incoming))
            .map(|p| {
                let mut held = p.clone();
                if let Some(spec) = held.spec.as_mut() {
                    spec.node_name = Some(name.to_owned());
                }
                held
            })
            .collect();
        if ahead.is_empty() || mask.contains_key(name) {
            continue;
        }
        let mut with = bound.clone();
        with.extend(ahead);
        let held = evaluate_unnominated(
            nodes,
            namespaces,
            &with,
            workloads,
            storage,
            incoming,
            opts,
            &BTreeMap::new(),
        );
        if let Some(f) = held.unschedulable.get(name) {
            mask.insert(name.to_owned(), f.clone());
        }
    }
    let mut res = evaluate_unnominated(
        nodes, namespaces, &bound, workloads, storage, incoming, opts, &mask,
    );
    if let Some(node) = nominated_to(incoming)
        && res.error.is_none()
        && res.feasible.contains(&node)
    {
        res.selected = Some(node.clone());
        res.nominated_node = Some(node);
    }
    res
}

/// [`evaluate_all`] over bound pods only, with the nodes of `mask`
/// rejected as given.
#[allow(clippy::too_many_arguments)]
fn evaluate_unnominated(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    workloads: &Workloads,
    storage: &StorageObjects,
    incoming: &Pod,
    opts: &Options,
    mask: &BTreeMap<String, Failure>,
) -> ScheduleResult {
    let mut seen = BTreeSet::new();
    let nodes: Vec<&Node> = nodes
        .iter()
        .filter(|n| seen.insert(node_name(n).to_owned()))
        .collect();
    let mut incoming = incoming.clone();
    let mut pods: Vec<Pod> = pods.to_vec();
    if opts.merge_match_label_keys {
        apply_match_label_keys(&mut incoming);
        pods.iter_mut().for_each(apply_match_label_keys);
    }
    let inventory: BTreeMap<String, Labels> = namespaces
        .iter()
        .map(|n| {
            (
                n.metadata.name.clone().unwrap_or_default(),
                n.metadata.labels.clone().unwrap_or_default(),
            )
        })
        .collect();
    // Placed pods with their node (spec 0.1).
    let placed: Vec<Placed> = pods
        .iter()
        .filter_map(|p| {
            let n = p.spec.as_ref()?.node_name.as_deref()?;
            let node = *nodes.iter().find(|x| node_name(x) == n)?;
            Some(Placed {
                ns: ns_of(p),
                labels: labels_of(p),
                terminating: p.metadata.deletion_timestamp.is_some(),
                node: n.to_owned(),
                node_labels: node_labels(node),
                terms: pod_terms(p),
            })
        })
        .collect();
    let compiled = Incoming::parse(&incoming);
    let pod_ns = ns_of(&incoming);
    let pod_labels = labels_of(&incoming);
    let mut res = ScheduleResult {
        pod: format!(
            "{pod_ns}/{}",
            incoming.metadata.name.clone().unwrap_or_default()
        ),
        ..Default::default()
    };

    // PreFilters.
    if names_conflict(&incoming) {
        for n in &nodes {
            res.unschedulable.insert(
                node_name(n).to_owned(),
                Reason::NodeAffinityTermsConflict.failure(),
            );
        }
        res.summary = Some(prefilter_summary(
            nodes.len(),
            "pod affinity terms conflict",
        ));
        return res;
    }
    if let Some((plugin, msg)) = volumes::prefilter(storage, &incoming) {
        for n in &nodes {
            res.unschedulable.insert(
                node_name(n).to_owned(),
                failure(
                    plugin,
                    Code::UnschedulableAndUnresolvable,
                    vec![msg.clone()],
                ),
            );
        }
        res.summary = Some(prefilter_summary(nodes.len(), &msg));
        return res;
    }
    let scheduled: Vec<&Pod> = pods
        .iter()
        .filter(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| nodes.iter().any(|x| node_name(x) == n))
        })
        .collect();
    let spread = match &compiled.spread {
        Ok(c) => c.clone(),
        Err(e) => {
            res.error = Some(format!(
                "obtaining pod's hard topology spread constraints: {e}"
            ));
            return res;
        }
    };
    if let Some(msg) = &compiled.affinity_error {
        for n in &nodes {
            res.unschedulable.insert(
                node_name(n).to_owned(),
                Failure {
                    plugin: Plugin::InterPodAffinity,
                    code: Code::UnschedulableAndUnresolvable,
                    message: msg.clone(),
                    reasons: vec![msg.clone()],
                },
            );
        }
        res.summary = Some(prefilter_summary(nodes.len(), msg));
        return res;
    }
    let own = pod_terms(&incoming);
    let ns_labels = inventory.get(&pod_ns).cloned().unwrap_or_default();

    // Spread: per constraint, matching pods per domain over eligible nodes.
    let spread_keys: Vec<&str> = spread.iter().map(|c| c.topology_key.as_str()).collect();
    let mut spread_state = Vec::new();
    for c in &spread {
        let mut counts: BTreeMap<String, i64> = BTreeMap::new();
        for n in &nodes {
            let l = node_labels(n);
            let eligible = spread_keys.iter().all(|k| l.contains_key(*k))
                && (!c.honor_node_affinity || required_node_affinity(&incoming, n))
                && (!c.honor_node_taints
                    || !has_untolerated_taint(
                        n.spec
                            .as_ref()
                            .and_then(|s| s.taints.as_deref())
                            .unwrap_or_default(),
                        &compiled.tolerations,
                    ));
            if !eligible {
                continue;
            }
            let mut count = 0;
            if !c.selector.is_everything() {
                for p in &placed {
                    if p.node == node_name(n)
                        && p.ns == pod_ns
                        && !p.terminating
                        && c.selector.matches(&p.labels)
                    {
                        count += 1;
                    }
                }
            }
            if let Some(v) = l.get(&c.topology_key) {
                *counts.entry(v.clone()).or_default() += count;
            }
        }
        let min = if (counts.len() as i64) < c.min_domains {
            0
        } else {
            counts
                .values()
                .copied()
                .min()
                .unwrap_or(i64::from(i32::MAX))
        };
        spread_state.push((counts, min));
    }

    // Required affinity: is any placed pod (on a node with some term key)
    // matching all terms? (C.10, C.12)
    let matches_all = |ns: &str, labels: &Labels| {
        !own.req_aff.is_empty()
            && own
                .req_aff
                .iter()
                .all(|t| t.matches_incoming(ns, labels, &inventory))
    };
    let any_counted = placed.iter().any(|p| {
        matches_all(&p.ns, &p.labels)
            && own
                .req_aff
                .iter()
                .any(|t| p.node_labels.contains_key(&t.key))
    });
    let self_match = matches_all(&pod_ns, &pod_labels);

    for n in &nodes {
        let name = node_name(n).to_owned();
        if let Some(f) = mask.get(&name) {
            res.unschedulable.insert(name, f.clone());
            continue;
        }
        let l = node_labels(n);
        let on_node: Vec<&Pod> = pods
            .iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name.as_str()))
            .collect();
        let added_required = opts.added_affinity.as_ref().and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
        if let Some(f) = node_level_failure(
            &incoming,
            n,
            &on_node,
            added_required,
            opts.kubernetes_version,
        )
        .or_else(|| volumes::node_failure(storage, &incoming, n, &on_node, &scheduled))
        {
            res.unschedulable.insert(name, f);
            continue;
        }
        let reason = if !required_node_affinity(&incoming, n) {
            Some(Reason::NodeAffinityMismatch)
        } else if let Some(r) = spread
            .iter()
            .zip(&spread_state)
            .find_map(|(c, (counts, min))| match l.get(&c.topology_key) {
                None => Some(Reason::SpreadMissingLabel),
                Some(v) => {
                    let skew = counts.get(v).copied().unwrap_or(0)
                        + i64::from(c.selector.matches(&pod_labels))
                        - min;
                    (skew > c.max_skew).then_some(Reason::SpreadSkew)
                }
            })
        {
            Some(r)
        } else {
            inter_pod_filter(
                &own,
                &l,
                &placed,
                &inventory,
                &pod_ns,
                &pod_labels,
                &ns_labels,
                any_counted,
                self_match,
            )
        };
        match reason
            .map(Reason::failure)
            .or_else(|| missing_node_features(&incoming, n, opts.kubernetes_version))
        {
            None => res.feasible.push(name),
            Some(f) => {
                res.unschedulable.insert(name, f);
            }
        }
    }
    res.feasible.sort();
    if res.feasible.is_empty() {
        // FitError: every reason of every node counted, "<count> <reason>"
        // sorted as strings.
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for f in res.unschedulable.values() {
            for r in &f.reasons {
                *counts.entry(r).or_default() += 1;
            }
        }
        let mut parts: Vec<String> = counts.iter().map(|(r, c)| format!("{c} {r}")).collect();
        parts.sort();
        res.summary = Some(if nodes.is_empty() {
            "no nodes available to schedule pods".to_owned()
        } else {
            format!(
                "0/{} nodes are available: {}.",
                nodes.len(),
                parts.join(", ")
            )
        });
    }

    // Scoring.
    let scored: Vec<&Node> = if opts.score_all_nodes {
        nodes.clone()
    } else if res.feasible.len() > 1 {
        nodes
            .iter()
            .copied()
            .filter(|n| !res.unschedulable.contains_key(node_name(n)))
            .collect()
    } else {
        Vec::new()
    };
    if scored.is_empty() {
        skip_all(&mut res);
        res.selected = res.feasible.first().cloned();
        return res;
    }
    let preferred = incoming
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.preferred_during_scheduling_ignored_during_execution
                .clone()
        })
        .unwrap_or_default();
    let relevant: Vec<_> = preferred
        .iter()
        .filter(|p| {
            p.weight != 0
                && !(p
                    .preference
                    .match_expressions
                    .as_ref()
                    .is_none_or(Vec::is_empty)
                    && p.preference.match_fields.as_ref().is_none_or(Vec::is_empty))
        })
        .collect();
    if relevant
        .iter()
        .any(|p| node_term_checked(&p.preference, "x", &BTreeMap::new()).is_none())
    {
        if let Some(e) = &compiled.preferred_node_error {
            res.error = Some(format!("running PreScore plugin \"NodeAffinity\": {e}"));
        }
        skip_all(&mut res);
        return res;
    }
    // NodeAffinityArgs.addedAffinity's preferred terms add to every pod's
    // score and keep the plugin from skipping (C.47).
    let added_preferred: Vec<_> = opts
        .added_affinity
        .as_ref()
        .and_then(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .clone()
        })
        .unwrap_or_default();
    let relevant: Vec<_> = relevant
        .into_iter()
        .chain(added_preferred.iter().filter(|p| {
            p.weight != 0
                && !(p
                    .preference
                    .match_expressions
                    .as_ref()
                    .is_none_or(Vec::is_empty)
                    && p.preference.match_fields.as_ref().is_none_or(Vec::is_empty))
        }))
        .collect();
    let node_affinity = if !compiled.has_preferred_node_list && added_preferred.is_empty() {
        PluginScores {
            skipped: true,
            ..Default::default()
        }
    } else {
        let raw: BTreeMap<String, i64> = scored
            .iter()
            .map(|n| {
                let l = node_labels(n);
                let s = relevant
                    .iter()
                    .filter(|p| node_term(&p.preference, node_name(n), &l))
                    .map(|p| i64::from(p.weight))
                    .sum();
                (node_name(n).to_owned(), s)
            })
            .collect();
        let max = raw.values().copied().max().unwrap_or(0).max(0);
        let normalized = raw
            .iter()
            .map(|(k, v)| (k.clone(), if max == 0 { *v } else { 100 * v / max }))
            .collect();
        PluginScores {
            raw,
            normalized,
            skipped: false,
        }
    };
    let inter_pod_affinity = inter_pod_scores(
        &own, &incoming, &scored, &placed, &inventory, &ns_labels, opts,
    );
    let on = |n: &Node| -> Vec<&Pod> {
        pods.iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node_name(n)))
            .collect()
    };
    let unnormalised = |raw: BTreeMap<String, i64>| PluginScores {
        normalized: raw.clone(),
        raw,
        skipped: false,
    };
    // TaintToleration (C.41): intolerable PreferNoSchedule taints, reversed.
    let taint_toleration = {
        let raw: BTreeMap<String, i64> = scored
            .iter()
            .map(|n| {
                (
                    node_name(n).to_owned(),
                    prefer_no_schedule_count(n, &compiled.tolerations),
                )
            })
            .collect();
        let max = raw.values().copied().max().unwrap_or(0);
        let normalized = raw
            .iter()
            .map(|(k, v)| (k.clone(), if max == 0 { 100 } else { 100 - 100 * v / max }))
            .collect();
        PluginScores {
            raw,
            normalized,
            skipped: false,
        }
    };
    // NodeResourcesFit LeastAllocated (C.42), with the non-zero defaults.
    let pod_non_zero = non_zero_units(&incoming, opts.kubernetes_version);
    let node_resources_fit = unnormalised(
        scored
            .iter()
            .map(|n| {
                let (cap_cpu, cap_mem) = allocatable_cpu_memory(n);
                let used = on(n)
                    .iter()
                    .map(|p| non_zero_units(p, opts.kubernetes_version))
                    .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
                let mut parts = Vec::new();
                for (req, cap) in [
                    (used.0 + pod_non_zero.0, cap_cpu),
                    (used.1 + pod_non_zero.1, cap_mem),
                ] {
                    if cap != 0 {
                        parts.push(if req > cap {
                            0
                        } else {
                            (cap - req) * 100 / cap
                        });
                    }
                }
                let s = if parts.is_empty() {
                    0
                } else {
                    parts.iter().sum::<i64>() / parts.len() as i64
                };
                (node_name(n).to_owned(), s)
            })
            .collect(),
    );
    // NodeResourcesBalancedAllocation (C.43), actual requests.
    let want = requested_units(&incoming, opts.kubernetes_version);
    let want_cpu = want.get("cpu").copied().unwrap_or(0);
    let want_mem = want.get("memory").copied().unwrap_or(0);
    let node_resources_balanced_allocation = if want_cpu == 0 && want_mem == 0 {
        PluginScores {
            skipped: true,
            ..Default::default()
        }
    } else {
        unnormalised(
            scored
                .iter()
                .map(|n| {
                    let (cap_cpu, cap_mem) = allocatable_cpu_memory(n);
                    let used = |name: &str| -> i64 {
                        on(n)
                            .iter()
                            .map(|p| {
                                requested_units(p, opts.kubernetes_version)
                                    .get(name)
                                    .copied()
                                    .unwrap_or(0)
                            })
                            .sum()
                    };
                    let f =
                        |req: i64, cap: i64| (cap != 0).then(|| (req as f64 / cap as f64).min(1.0));
                    let balance = |cpu: i64, memory: i64| -> i64 {
                        let fractions: Vec<f64> = [f(cpu, cap_cpu), f(memory, cap_mem)]
                            .into_iter()
                            .flatten()
                            .collect();
                        let std = if fractions.len() == 2 {
                            ((fractions[0] - fractions[1]) / 2.0).abs()
                        } else {
                            0.0
                        };
                        ((1.0 - std) * 100.0) as i64
                    };
                    let after = balance(used("cpu") + want_cpu, used("memory") + want_mem);
                    // From 1.36 the score is the change of the balance (C.74).
                    let score = if opts.kubernetes_version >= KubernetesVersion::V1_36 {
                        let before = balance(used("cpu"), used("memory"));
                        50 + (50 + after - before) / 2
                    } else {
                        after
                    };
                    (node_name(n).to_owned(), score)
                })
                .collect(),
        )
    };
    // ImageLocality (C.45).
    let images = image_inventory(&nodes);
    let (pod_images, containers) = images_of(&incoming);
    let image_locality = unnormalised(
        scored
            .iter()
            .map(|n| {
                let listed = node_image_names(n);
                let mut sum: i64 = 0;
                for image in &pod_images {
                    if listed.contains(image) {
                        let (size, holders) = images[image];
                        sum += (size as f64 * (holders as f64 / nodes.len() as f64)) as i64;
                    }
                }
                let mib: i64 = 1024 * 1024;
                let (lo, hi) = (23 * mib, 1000 * mib * containers as i64);
                let clamped = sum.max(lo).min(hi.max(lo));
                let s = if hi <= lo {
                    0
                } else {
                    100 * (clamped - lo) / (hi - lo)
                };
                (node_name(n).to_owned(), s)
            })
            .collect(),
    );
    // PodTopologySpread (C.44, C.46).
    let own_spread = incoming
        .spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_ref())
        .is_some_and(|c| !c.is_empty());
    let soft = if own_spread {
        match spread_constraints(&incoming, "ScheduleAnyway") {
            Ok(c) => c,
            Err(e) => {
                res.error = Some(format!(
                    "running PreScore plugin \"PodTopologySpread\": calculating preScoreState: obtaining pod's soft topology spread constraints: {e}"
                ));
                skip_all(&mut res);
                return res;
            }
        }
    } else {
        default_selector(workloads, &incoming)
            .map(|selector| {
                [
                    ("kubernetes.io/hostname", 3),
                    ("topology.kubernetes.io/zone", 5),
                ]
                .into_iter()
                .map(|(key, skew)| Spread {
                    topology_key: key.to_owned(),
                    selector: selector.clone(),
                    max_skew: skew,
                    min_domains: 1,
                    honor_node_affinity: true,
                    honor_node_taints: false,
                })
                .collect()
            })
            .unwrap_or_default()
    };
    let pod_topology_spread = if soft.is_empty() {
        PluginScores {
            skipped: true,
            ..Default::default()
        }
    } else {
        spread_scores(
            &incoming,
            &soft,
            own_spread,
            &nodes,
            &scored,
            &placed,
            &compiled.tolerations,
        )
    };
    // DynamicResources (DR.8): the oracle's pods have no claims, so every
    // node scores 0 from 1.35; 1.34's plugin has no Score.
    let dynamic_resources = if opts.kubernetes_version >= KubernetesVersion::V1_35 {
        let zeros: BTreeMap<String, i64> = scored
            .iter()
            .map(|n| (node_name(n).to_owned(), 0))
            .collect();
        PluginScores {
            raw: zeros.clone(),
            normalized: zeros,
            skipped: false,
        }
    } else {
        PluginScores {
            skipped: true,
            ..Default::default()
        }
    };
    let scores = Scores {
        taint_toleration,
        node_affinity,
        node_resources_fit,
        node_resources_balanced_allocation,
        pod_topology_spread,
        inter_pod_affinity,
        image_locality,
        dynamic_resources,
    };
    let weighted = [
        (&scores.taint_toleration, 3),
        (&scores.node_affinity, 2),
        (&scores.node_resources_fit, 1),
        (&scores.node_resources_balanced_allocation, 1),
        (&scores.pod_topology_spread, 2),
        (&scores.inter_pod_affinity, 2),
        (&scores.image_locality, 1),
    ];
    let totals: BTreeMap<String, i64> = scored
        .iter()
        .map(|n| {
            let k = node_name(n);
            let t = weighted
                .iter()
                .map(|(s, w)| w * s.normalized.get(k).copied().unwrap_or(0))
                .sum();
            (k.to_owned(), t)
        })
        .collect();
    let mut best: Option<(i64, String)> = None;
    for f in &res.feasible {
        let s = totals.get(f).copied().unwrap_or(0);
        if best
            .as_ref()
            .is_none_or(|(bs, bn)| s > *bs || (s == *bs && f < bn))
        {
            best = Some((s, f.clone()));
        }
    }
    res.selected = best.map(|b| b.1);
    res.scores = scores;
    res.totals = totals;
    res
}

/// PodTopologySpread's score, brute force: per constraint, the matching
/// pods of the node's domain (over every node passing the inclusion
/// policies) times `ln(domains + 2)`, plus `maxSkew − 1`; then fewer is
/// better, `100 × (max + min − s) / max`.
fn spread_scores(
    incoming: &Pod,
    soft: &[Spread],
    require_all: bool,
    nodes: &[&Node],
    scored: &[&Node],
    placed: &[Placed],
    tolerations: &[Toleration],
) -> PluginScores {
    let pod_ns = ns_of(incoming);
    let hostname = |c: &Spread| c.topology_key == "kubernetes.io/hostname";
    let count_on = |n: &Node, c: &Spread| -> i64 {
        if c.selector.is_everything() {
            return 0;
        }
        placed
            .iter()
            .filter(|p| {
                p.node == node_name(n)
                    && p.ns == pod_ns
                    && !p.terminating
                    && c.selector.matches(&p.labels)
            })
            .count() as i64
    };
    let has_all = |n: &Node| {
        let l = node_labels(n);
        soft.iter().all(|c| l.contains_key(&c.topology_key))
    };
    let ignored = |n: &Node| require_all && !has_all(n);
    let value = |n: &Node, c: &Spread| node_labels(n).get(&c.topology_key).cloned();
    let kept: Vec<&&Node> = scored.iter().filter(|n| !ignored(n)).collect();
    let weight = |c: &Spread| -> f64 {
        let size = if hostname(c) {
            kept.len()
        } else {
            kept.iter()
                .map(|n| value(n, c).unwrap_or_default())
                .collect::<BTreeSet<_>>()
                .len()
        };
        ((size + 2) as f64).ln()
    };
    let domain_count = |c: &Spread, v: &str| -> i64 {
        nodes
            .iter()
            .filter(|m| !ignored(m))
            .filter(|m| !c.honor_node_affinity || required_node_affinity(incoming, m))
            .filter(|m| {
                !c.honor_node_taints
                    || !has_untolerated_taint(
                        m.spec
                            .as_ref()
                            .and_then(|s| s.taints.as_deref())
                            .unwrap_or_default(),
                        tolerations,
                    )
            })
            .filter(|m| value(m, c).unwrap_or_default() == v)
            .map(|m| count_on(m, c))
            .sum()
    };
    let raw: BTreeMap<String, i64> = scored
        .iter()
        .map(|n| {
            if ignored(n) {
                return (node_name(n).to_owned(), 0);
            }
            let mut score = 0.0;
            for c in soft {
                if let Some(v) = value(n, c) {
                    let count = if hostname(c) {
                        count_on(n, c)
                    } else {
                        domain_count(c, &v)
                    };
                    score += count as f64 * weight(c) + (c.max_skew - 1) as f64;
                }
            }
            (node_name(n).to_owned(), score.round() as i64)
        })
        .collect();
    let kept_raw: Vec<i64> = kept.iter().map(|n| raw[node_name(n)]).collect();
    let min = kept_raw.iter().copied().min().unwrap_or(0);
    let max = kept_raw.iter().copied().max().unwrap_or(0).max(0);
    let normalized = scored
        .iter()
        .map(|n| {
            let s = raw[node_name(n)];
            let v = if ignored(n) {
                0
            } else if max == 0 {
                100
            } else {
                100 * (max + min - s) / max
            };
            (node_name(n).to_owned(), v)
        })
        .collect();
    PluginScores {
        raw,
        normalized,
        skipped: false,
    }
}

/// kube-scheduler's `DefaultSelector`, written again: matching Services'
/// selectors merged, then the controller's (RC labels, RS/StatefulSet
/// requirements); `None` when empty.
fn default_selector(w: &Workloads, pod: &Pod) -> Option<PodSelector> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
    let ns = ns_of(pod);
    let labels = labels_of(pod);
    let in_ns = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        m.namespace.clone().unwrap_or_else(|| "default".into()) == ns
    };
    // The last Service of each name counts.
    let mut services: BTreeMap<String, Option<Labels>> = BTreeMap::new();
    for s in w.services.iter().filter(|s| in_ns(&s.metadata)) {
        services.insert(
            s.metadata.name.clone().unwrap_or_default(),
            s.spec.as_ref().and_then(|s| s.selector.clone()),
        );
    }
    let mut merged = Labels::new();
    for sel in services.values().flatten() {
        if sel.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            merged.extend(sel.clone());
        }
    }
    let mut exprs = Vec::new();
    let owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    if let Some(o) = owner {
        let named = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            in_ns(m) && m.name.as_deref() == Some(o.name.as_str())
        };
        let selector: Option<LabelSelector> = match (o.api_version.as_str(), o.kind.as_str()) {
            ("v1", "ReplicationController") => {
                if let Some(rc) = w
                    .replication_controllers
                    .iter()
                    .rev()
                    .find(|r| named(&r.metadata))
                {
                    merged.extend(
                        rc.spec
                            .as_ref()
                            .and_then(|s| s.selector.clone())
                            .unwrap_or_default(),
                    );
                }
                None
            }
            ("apps/v1", "ReplicaSet") => w
                .replica_sets
                .iter()
                .rev()
                .find(|r| named(&r.metadata))
                .and_then(|r| r.spec.as_ref().map(|s| s.selector.clone())),
            ("apps/v1", "StatefulSet") => w
                .stateful_sets
                .iter()
                .rev()
                .find(|r| named(&r.metadata))
                .and_then(|r| r.spec.as_ref().map(|s| s.selector.clone())),
            _ => None,
        };
        if let Some(sel) = selector
            && PodSelector::compile(Some(&sel)).is_ok()
        {
            for (k, v) in sel.match_labels.clone().unwrap_or_default() {
                exprs.push(LabelSelectorRequirement {
                    key: k,
                    operator: "In".into(),
                    values: Some(vec![v]),
                });
            }
            exprs.extend(sel.match_expressions.clone().unwrap_or_default());
        }
    }
    if merged.is_empty() && exprs.is_empty() {
        return None;
    }
    PodSelector::compile(Some(&LabelSelector {
        match_labels: Some(merged),
        match_expressions: Some(exprs),
    }))
    .ok()
}

/// Every score plugin marked skipped.
fn skip_all(res: &mut ScheduleResult) {
    for s in [
        &mut res.scores.taint_toleration,
        &mut res.scores.node_affinity,
        &mut res.scores.node_resources_fit,
        &mut res.scores.node_resources_balanced_allocation,
        &mut res.scores.pod_topology_spread,
        &mut res.scores.inter_pod_affinity,
        &mut res.scores.image_locality,
        &mut res.scores.dynamic_resources,
    ] {
        s.skipped = true;
    }
}

/// PreferNoSchedule taints of the node that the pod's tolerations with an
/// empty or PreferNoSchedule effect do not tolerate.
fn prefer_no_schedule_count(node: &Node, tolerations: &[Toleration]) -> i64 {
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    taints
        .iter()
        .filter(|t| t.effect == "PreferNoSchedule")
        .filter(|t| {
            !tolerations.iter().any(|tol| {
                tol.effect
                    .as_deref()
                    .is_none_or(|e| e.is_empty() || e == "PreferNoSchedule")
                    && tolerates(tol, t)
            })
        })
        .count() as i64
}

/// CPU (millicores) and memory (bytes) in `status.allocatable`, 0 when absent.
fn allocatable_cpu_memory(node: &Node) -> (i64, i64) {
    let list = node
        .status
        .as_ref()
        .and_then(|s| s.allocatable.clone())
        .unwrap_or_default();
    let get = |name: &str| {
        list.get(name).map_or(0, |q| {
            to_units(name, Quantity::parse(&q.0).map_or(0, |q| q.nanos()))
        })
    };
    (get("cpu"), get("memory"))
}

fn node_image_names(node: &Node) -> BTreeSet<String> {
    node.status
        .as_ref()
        .and_then(|s| s.images.clone())
        .unwrap_or_default()
        .into_iter()
        .flat_map(|i| i.names.unwrap_or_default())
        .collect()
}

/// Per image name: the size the first node listing it reports, and how
/// many nodes list it.
fn image_inventory(nodes: &[&Node]) -> BTreeMap<String, (i64, usize)> {
    let mut out: BTreeMap<String, (i64, usize)> = BTreeMap::new();
    for n in nodes {
        let mut seen = BTreeSet::new();
        for image in n
            .status
            .as_ref()
            .and_then(|s| s.images.clone())
            .unwrap_or_default()
        {
            for name in image.names.clone().unwrap_or_default() {
                if seen.insert(name.clone()) {
                    out.entry(name)
                        .or_insert((image.size_bytes.unwrap_or(0), 0))
                        .1 += 1;
                }
            }
        }
    }
    out
}

/// The pod's images with `:latest` added where no tag follows the last
/// `/`, and its container count (init and regular).
fn images_of(pod: &Pod) -> (Vec<String>, usize) {
    let spec = pod.spec.clone().unwrap_or_default();
    let all: Vec<String> = spec
        .init_containers
        .unwrap_or_default()
        .into_iter()
        .chain(spec.containers)
        .map(|c| c.image.unwrap_or_default())
        .collect();
    let n = all.len();
    let names = all
        .into_iter()
        .map(|i| {
            let tag = i
                .rsplit_once('/')
                .map_or(i.as_str(), |(_, last)| last)
                .contains(':');
            if tag { i } else { format!("{i}:latest") }
        })
        .collect();
    (names, n)
}

#[allow(clippy::too_many_arguments)]
fn inter_pod_filter(
    own: &PodTerms,
    l: &Labels,
    placed: &[Placed],
    inventory: &BTreeMap<String, Labels>,
    pod_ns: &str,
    pod_labels: &Labels,
    ns_labels: &Labels,
    any_counted: bool,
    self_match: bool,
) -> Option<Reason> {
    // C.11 / C.12
    if !own.req_aff.is_empty() {
        if own.req_aff.iter().any(|t| !l.contains_key(&t.key)) {
            return Some(Reason::AffinityRules);
        }
        let all_satisfied = own.req_aff.iter().all(|t| {
            placed.iter().any(|p| {
                own.req_aff
                    .iter()
                    .all(|u| u.matches_incoming(&p.ns, &p.labels, inventory))
                    && p.node_labels.get(&t.key) == l.get(&t.key)
            })
        });
        if !all_satisfied && (any_counted || !self_match) {
            return Some(Reason::AffinityRules);
        }
    }
    // C.13
    for t in &own.req_anti {
        let Some(v) = l.get(&t.key) else { continue };
        if placed.iter().any(|p| {
            p.node_labels.get(&t.key) == Some(v) && t.matches_incoming(&p.ns, &p.labels, inventory)
        }) {
            return Some(Reason::AntiAffinityRules);
        }
    }
    // C.14
    for p in placed {
        let pl = &p.node_labels;
        for t in &p.terms.req_anti {
            if let Some(v) = pl.get(&t.key)
                && l.get(&t.key) == Some(v)
                && t.matches_with_labels(pod_ns, pod_labels, ns_labels)
            {
                return Some(Reason::ExistingAntiAffinityRules);
            }
        }
    }
    None
}

fn inter_pod_scores(
    own: &PodTerms,
    incoming: &Pod,
    scored: &[&Node],
    placed: &[Placed],
    inventory: &BTreeMap<String, Labels>,
    ns_labels: &Labels,
    opts: &Options,
) -> PluginScores {
    let has_pref = {
        let a = incoming.spec.as_ref().and_then(|s| s.affinity.as_ref());
        a.and_then(|a| a.pod_affinity.as_ref())
            .and_then(|p| {
                p.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .is_some_and(|v| !v.is_empty())
            || a.and_then(|a| a.pod_anti_affinity.as_ref())
                .and_then(|p| {
                    p.preferred_during_scheduling_ignored_during_execution
                        .as_ref()
                })
                .is_some_and(|v| !v.is_empty())
    };
    if opts.ignore_preferred_terms_of_existing_pods && !has_pref {
        return PluginScores {
            skipped: true,
            ..Default::default()
        };
    }
    let pod_ns = ns_of(incoming);
    let pod_labels = labels_of(incoming);
    // Every contribution: (topology key, value of the placed pod's node, weight).
    let mut contributions: Vec<(String, String, i64)> = Vec::new();
    for p in placed {
        let pl = &p.node_labels;
        let (ns, labels) = (&p.ns, &p.labels);
        let mut add = |t: &Term, w: i64| {
            if let Some(v) = pl.get(&t.key) {
                contributions.push((t.key.clone(), v.clone(), w));
            }
        };
        for t in &own.pref_aff {
            if t.matches_incoming(ns, labels, inventory) {
                add(t, t.weight);
            }
        }
        for t in &own.pref_anti {
            if t.matches_incoming(ns, labels, inventory) {
                add(t, -t.weight);
            }
        }
        let theirs = &p.terms;
        if opts.hard_pod_affinity_weight > 0 {
            for t in &theirs.req_aff {
                if t.matches_with_labels(&pod_ns, &pod_labels, ns_labels) {
                    add(t, opts.hard_pod_affinity_weight);
                }
            }
        }
        for t in &theirs.pref_aff {
            if t.matches_with_labels(&pod_ns, &pod_labels, ns_labels) {
                add(t, t.weight);
            }
        }
        for t in &theirs.pref_anti {
            if t.matches_with_labels(&pod_ns, &pod_labels, ns_labels) {
                add(t, -t.weight);
            }
        }
    }
    if contributions.is_empty() {
        return PluginScores {
            skipped: true,
            ..Default::default()
        };
    }
    let raw: BTreeMap<String, i64> = scored
        .iter()
        .map(|n| {
            let l = node_labels(n);
            let s = contributions
                .iter()
                .filter(|(k, v, _)| l.get(k) == Some(v))
                .map(|c| c.2)
                .sum();
            (node_name(n).to_owned(), s)
        })
        .collect();
    let min = raw.values().copied().min().unwrap_or(0);
    let max = raw.values().copied().max().unwrap_or(0);
    let normalized = raw
        .iter()
        .map(|(k, v)| {
            let s = if max > min {
                (100.0 * ((v - min) as f64 / (max - min) as f64)) as i64
            } else {
                0
            };
            (k.clone(), s)
        })
        .collect();
    PluginScores {
        raw,
        normalized,
        skipped: false,
    }
}

/// What the reference reads from the incoming pod besides its terms.
struct Incoming {
    spread: Result<Vec<Spread>, ParseError>,
    affinity_error: Option<String>,
    tolerations: Vec<Toleration>,
    has_preferred_node_list: bool,
    preferred_node_error: Option<ParseError>,
}

/// A `DoNotSchedule` constraint.
#[derive(Clone)]
struct Spread {
    topology_key: String,
    selector: PodSelector,
    max_skew: i64,
    min_domains: i64,
    honor_node_affinity: bool,
    honor_node_taints: bool,
}

/// The pod's topology spread constraints of one `whenUnsatisfiable`, with
/// matchLabelKeys merged.
fn spread_constraints(pod: &Pod, when: &str) -> Result<Vec<Spread>, ParseError> {
    let spec = pod.spec.clone().unwrap_or_default();
    let labels = labels_of(pod);
    spec
            .topology_spread_constraints
            .iter()
            .flatten()
            .filter(|c| c.when_unsatisfiable == when)
            .map(|c| {
                let mut selector = c.label_selector.clone();
                if let Some(sel) = selector.as_mut() {
                    for key in c.match_label_keys.iter().flatten() {
                        if let Some(v) = labels.get(key) {
                            sel.match_expressions.get_or_insert_with(Vec::new).push(
                                k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement {
                                    key: key.clone(),
                                    operator: "In".into(),
                                    values: Some(vec![v.clone()]),
                                },
                            );
                        }
                    }
                }
                // Parse the original selector (errors), match the merged one.
                PodSelector::compile(c.label_selector.as_ref())?;
                Ok(Spread {
                    topology_key: c.topology_key.clone(),
                    selector: PodSelector::compile(selector.as_ref())?,
                    max_skew: i64::from(c.max_skew),
                    min_domains: i64::from(c.min_domains.unwrap_or(1)),
                    honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
                    honor_node_taints: c.node_taints_policy.as_deref() == Some("Honor"),
                })
            })
            .collect()
}

impl Incoming {
    fn parse(pod: &Pod) -> Self {
        let spec = pod.spec.clone().unwrap_or_default();
        let spread = spread_constraints(pod, "DoNotSchedule");
        let affinity = spec.affinity.clone().unwrap_or_default();
        let pa = affinity.pod_affinity.clone().unwrap_or_default();
        let paa = affinity.pod_anti_affinity.clone().unwrap_or_default();
        let term_error = |t: &PodAffinityTerm| {
            PodSelector::compile(t.label_selector.as_ref())
                .and_then(|_| PodSelector::compile(t.namespace_selector.as_ref()))
                .err()
        };
        let mut errors = Vec::new();
        let lists: [(&str, Vec<PodAffinityTerm>); 4] = [
            (
                "requiredAffinityTerms",
                pa.required_during_scheduling_ignored_during_execution
                    .clone()
                    .unwrap_or_default(),
            ),
            (
                "requiredAntiAffinityTerms",
                paa.required_during_scheduling_ignored_during_execution
                    .clone()
                    .unwrap_or_default(),
            ),
            (
                "preferredAffinityTerms",
                pa.preferred_during_scheduling_ignored_during_execution
                    .iter()
                    .flatten()
                    .map(|w| w.pod_affinity_term.clone())
                    .collect(),
            ),
            (
                "preferredAntiAffinityTerms",
                paa.preferred_during_scheduling_ignored_during_execution
                    .iter()
                    .flatten()
                    .map(|w| w.pod_affinity_term.clone())
                    .collect(),
            ),
        ];
        for (what, terms) in lists {
            if let Some(e) = terms.iter().find_map(term_error) {
                errors.push(format!("{what}: {e}"));
            }
        }
        let affinity_error = match errors.len() {
            0 => None,
            1 => Some(format!("parsing pod: {}", errors[0])),
            _ => Some(format!("parsing pod: [{}]", errors.join(", "))),
        };
        let preferred = affinity.node_affinity.as_ref().and_then(|n| {
            n.preferred_during_scheduling_ignored_during_execution
                .clone()
        });
        let mut node_errors = Vec::new();
        for (i, p) in preferred.iter().flatten().enumerate() {
            if p.weight == 0 {
                continue;
            }
            for (j, r) in p.preference.match_expressions.iter().flatten().enumerate() {
                if let Err(e) =
                    node_selector_requirement(&format!("[{i}].matchExpressions[{j}]"), r)
                {
                    node_errors.push(e);
                }
            }
            for (j, r) in p.preference.match_fields.iter().flatten().enumerate() {
                if let Err(e) =
                    node_selector_field_requirement(&format!("[{i}].matchFields[{j}]"), r)
                {
                    node_errors.push(e);
                }
            }
        }
        Incoming {
            spread,
            affinity_error,
            tolerations: spec.tolerations.clone().unwrap_or_default(),
            has_preferred_node_list: preferred.is_some(),
            preferred_node_error: (!node_errors.is_empty())
                .then(|| ParseError::flatten(node_errors)),
        }
    }
}

/// Some `NoSchedule`/`NoExecute` taint is not tolerated (written from
/// `Toleration.ToleratesTaint`).
fn has_untolerated_taint(taints: &[Taint], tolerations: &[Toleration]) -> bool {
    first_untolerated(taints, tolerations).is_some()
}

fn first_untolerated<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|taint| !tolerations.iter().any(|tol| tolerates(tol, taint)))
}

fn tolerates(tol: &Toleration, taint: &Taint) -> bool {
    let effect_ok = tol
        .effect
        .as_deref()
        .is_none_or(|e| e.is_empty() || e == taint.effect);
    let key_ok = tol
        .key
        .as_deref()
        .is_none_or(|k| k.is_empty() || k == taint.key);
    let value_ok = match tol.operator.as_deref().unwrap_or("") {
        "Exists" => true,
        "" | "Equal" => tol.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    };
    effect_ok && key_ok && value_ok
}

fn failure(plugin: Plugin, code: Code, reasons: Vec<String>) -> Failure {
    Failure {
        plugin,
        code,
        message: reasons.join(", "),
        reasons,
    }
}

/// The filters that look at the node alone (and the pods bound to it), in
/// the default profile's order, except NodeAffinity which sits between
/// TaintToleration and NodePorts and is checked here too.
/// NodeDeclaredFeatures (from 1.36, the last filter): a pod with a
/// `RestartAllContainers` restart rule, or on the host network without host
/// users, needs the node to list the feature in `status.declaredFeatures`.
fn missing_node_features(pod: &Pod, node: &Node, version: KubernetesVersion) -> Option<Failure> {
    if version < KubernetesVersion::V1_36 {
        return None;
    }
    let spec = pod.spec.clone().unwrap_or_default();
    let restart_all = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .flat_map(|c| c.restart_policy_rules.iter().flatten())
        .any(|r| r.action == "RestartAllContainers");
    let host_network_userns = spec.host_network == Some(true) && spec.host_users == Some(false);
    let declared = node
        .status
        .as_ref()
        .and_then(|s| s.declared_features.clone())
        .unwrap_or_default();
    let has = |f: &str| declared.iter().any(|d| d == f);
    let lacking = (restart_all && !has("RestartAllContainersOnContainerExits"))
        || (host_network_userns && !has("UserNamespacesHostNetworkSupport"));
    lacking.then(|| {
        failure(
            Plugin::NodeDeclaredFeatures,
            Code::UnschedulableAndUnresolvable,
            vec!["node(s) didn't match Pod's required features".into()],
        )
    })
}

fn node_level_failure(
    pod: &Pod,
    node: &Node,
    on_node: &[&Pod],
    added: Option<&k8s_openapi::api::core::v1::NodeSelector>,
    version: KubernetesVersion,
) -> Option<Failure> {
    let spec = pod.spec.clone().unwrap_or_default();
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    let node_spec = node.spec.clone().unwrap_or_default();
    let unresolvable = Code::UnschedulableAndUnresolvable;
    let cordon = Taint {
        key: "node.kubernetes.io/unschedulable".into(),
        effect: "NoSchedule".into(),
        ..Default::default()
    };
    let cordoned = (node_spec.unschedulable == Some(true)
        && has_untolerated_taint(std::slice::from_ref(&cordon), &tolerations))
    .then(|| {
        failure(
            Plugin::NodeUnschedulable,
            unresolvable,
            vec!["node(s) were unschedulable".into()],
        )
    });
    let other_name = spec
        .node_name
        .as_deref()
        .is_some_and(|wanted| !wanted.is_empty() && wanted != node_name(node))
        .then(|| {
            failure(
                Plugin::NodeName,
                unresolvable,
                vec!["node(s) didn't match the requested node name".into()],
            )
        });
    // NodeName runs first from 1.37 (C.31).
    let first_two = if version >= KubernetesVersion::V1_37 {
        other_name.or(cordoned)
    } else {
        cordoned.or(other_name)
    };
    if first_two.is_some() {
        return first_two;
    }
    if first_untolerated(
        node_spec.taints.as_deref().unwrap_or_default(),
        &tolerations,
    )
    .is_some()
    {
        return Some(failure(
            Plugin::TaintToleration,
            unresolvable,
            vec!["node(s) had untolerated taint(s)".into()],
        ));
    }
    if let Some(sel) = added
        && !sel
            .node_selector_terms
            .iter()
            .any(|t| node_term(t, node_name(node), &node_labels(node)))
    {
        return Some(Reason::NodeAffinityEnforced.failure());
    }
    if !required_node_affinity(pod, node) {
        return Some(Reason::NodeAffinityMismatch.failure());
    }
    // NodePorts.
    let wanted = ports_of(pod);
    let used: Vec<(String, String, i32)> = on_node.iter().flat_map(|p| ports_of(p)).collect();
    let conflict = wanted.iter().any(|(ip, proto, port)| {
        used.iter().any(|(uip, uproto, uport)| {
            uproto == proto && uport == port && (ip == "0.0.0.0" || uip == "0.0.0.0" || uip == ip)
        })
    });
    if conflict {
        return Some(failure(
            Plugin::NodePorts,
            Code::Unschedulable,
            vec!["node(s) didn't have free ports for the requested pod ports".into()],
        ));
    }
    // NodeResourcesFit.
    let allocatable = node.status.as_ref()?.allocatable.as_ref()?;
    let alloc = |name: &str| {
        allocatable.get(name).map_or(0, |q| {
            to_units(name, Quantity::parse(&q.0).map_or(0, |q| q.nanos()))
        })
    };
    let mut reasons = Vec::new();
    let mut unresolvable_short = false;
    if on_node.len() as i64 + 1 > alloc("pods") {
        reasons.push("Too many pods".to_owned());
    }
    let want = requested_units(pod, version);
    if want.values().any(|v| *v != 0) || want.keys().any(|k| is_scalar(k)) {
        let mut names: Vec<&String> = want.keys().collect();
        let rank = |n: &str| match n {
            "cpu" => 0,
            "memory" => 1,
            "ephemeral-storage" => 2,
            _ => 3,
        };
        names.sort_by_key(|n| (rank(n), n.to_string()));
        for name in names {
            let w = want[name];
            if w <= 0 {
                continue;
            }
            let used: i64 = on_node
                .iter()
                .map(|p| requested_units(p, version).get(name).copied().unwrap_or(0))
                .sum();
            let cap = alloc(name);
            if w > cap - used {
                reasons.push(format!("Insufficient {name}"));
                unresolvable_short |= w > cap;
            }
        }
    }
    if reasons.is_empty() {
        return None;
    }
    let code = if unresolvable_short {
        Code::UnschedulableAndUnresolvable
    } else {
        Code::Unschedulable
    };
    Some(failure(Plugin::NodeResourcesFit, code, reasons))
}

use kube_validation::Quantity;

/// (hostIP, protocol, hostPort) of every container and sidecar port with a
/// host port, unset IP as 0.0.0.0 and unset protocol as TCP.
fn ports_of(pod: &Pod) -> Vec<(String, String, i32)> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    for c in sidecars.chain(spec.containers.iter()) {
        for p in c.ports.iter().flatten() {
            let port = p.host_port.unwrap_or(0);
            if port > 0 {
                let ip = p.host_ip.clone().unwrap_or_default();
                let proto = p.protocol.clone().unwrap_or_default();
                out.push((
                    if ip.is_empty() { "0.0.0.0".into() } else { ip },
                    if proto.is_empty() {
                        "TCP".into()
                    } else {
                        proto
                    },
                    port,
                ));
            }
        }
    }
    out
}

fn is_scalar(name: &str) -> bool {
    name.starts_with("hugepages-")
        || name.starts_with("attachable-volumes-")
        || name.contains("kubernetes.io/")
        || (name.contains('/')
            && !name.starts_with("requests.")
            && kube_validation::is_qualified_name(&format!("requests.{name}")))
}

/// Nano-units to kube-scheduler's units: millicores for CPU, whole units
/// otherwise, rounded up.
fn to_units(name: &str, nanos: i128) -> i64 {
    let d: i128 = if name == "cpu" {
        1_000_000
    } else {
        1_000_000_000
    };
    let q = nanos / d + i128::from(nanos % d > 0);
    q as i64
}

/// The pod's effective request per resource kube-scheduler counts, written
/// resource by resource from the sidecar KEP's formula, with the in-place
/// resize rules of `version`.
fn requested_units(pod: &Pod, version: KubernetesVersion) -> BTreeMap<String, i64> {
    units(pod, false, version)
}

/// CPU and memory as the resource scores count them: a container without
/// the request key counts 100m CPU / 200 MiB.
fn non_zero_units(pod: &Pod, version: KubernetesVersion) -> (i64, i64) {
    let u = units(pod, true, version);
    (
        u.get("cpu").copied().unwrap_or(0),
        u.get("memory").copied().unwrap_or(0),
    )
}

type Nanos = BTreeMap<String, i128>;

fn nanos_of(
    list: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> Nanos {
    list.into_iter()
        .flatten()
        .map(|(k, q)| (k.clone(), Quantity::parse(&q.0).map_or(0, |q| q.nanos())))
        .collect()
}

/// Per resource, the largest value of any list that has it.
fn largest(lists: &[&Nanos]) -> Nanos {
    let mut out = Nanos::new();
    for list in lists {
        for (k, v) in *list {
            let e = out.entry(k.clone()).or_insert(*v);
            *e = (*e).max(*v);
        }
    }
    out
}

/// Which request list of each container a sum reads.
#[derive(Clone, Copy, PartialEq)]
enum View {
    Spec,
    Allocated,
    Actuated,
    /// Before 1.37: a regular or sidecar container whose status has
    /// `resources` counts the largest of its three lists.
    Largest,
}

/// The sidecar KEP's sum of one view of the containers' lists, resource by
/// resource; a container list without `cpu` (`memory`) counts the scoring
/// default when `defaults`.
fn kep_sum(pod: &Pod, defaults: bool, view: View, infeasible: bool) -> Nanos {
    let spec = pod.spec.clone().unwrap_or_default();
    let statuses: Vec<k8s_openapi::api::core::v1::ContainerStatus> = pod
        .status
        .iter()
        .flat_map(|s| {
            s.container_statuses
                .iter()
                .flatten()
                .chain(s.init_container_statuses.iter().flatten())
        })
        .cloned()
        .collect();
    let list_of = |c: &k8s_openapi::api::core::v1::Container, sidecar_or_regular: bool| -> Nanos {
        let own = nanos_of(c.resources.as_ref().and_then(|r| r.requests.as_ref()));
        let status = statuses.iter().find(|s| s.name == c.name);
        let allocated = status.and_then(|s| s.allocated_resources.as_ref());
        let actuated = status
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref());
        let mut list = match view {
            View::Spec => own,
            View::Allocated => match allocated {
                Some(a) => nanos_of(Some(a)),
                None if infeasible => Nanos::new(),
                None => own,
            },
            View::Actuated => match (actuated, allocated) {
                (Some(a), _) | (None, Some(a)) => nanos_of(Some(a)),
                (None, None) if infeasible => Nanos::new(),
                (None, None) => own,
            },
            View::Largest => match status.and_then(|s| s.resources.as_ref()) {
                Some(r) if sidecar_or_regular => {
                    let empty = Nanos::new();
                    let spec_part = if infeasible { &empty } else { &own };
                    largest(&[
                        spec_part,
                        &nanos_of(r.requests.as_ref()),
                        &nanos_of(allocated),
                    ])
                }
                _ => own,
            },
        };
        if defaults {
            list.entry("cpu".into()).or_insert(100_000_000);
            list.entry("memory".into())
                .or_insert(200 * 1024 * 1024 * 1_000_000_000);
        }
        list
    };
    let inits: Vec<_> = spec.init_containers.clone().unwrap_or_default();
    let is_sidecar =
        |c: &k8s_openapi::api::core::v1::Container| c.restart_policy.as_deref() == Some("Always");
    let regular: Vec<Nanos> = spec.containers.iter().map(|c| list_of(c, true)).collect();
    let init_lists: Vec<Nanos> = inits.iter().map(|c| list_of(c, is_sidecar(c))).collect();
    let mut names = BTreeSet::new();
    for l in regular.iter().chain(&init_lists) {
        names.extend(l.keys().cloned());
    }
    let mut out = Nanos::new();
    for name in names {
        let get = |l: &Nanos| l.get(&name).copied().unwrap_or(0);
        let mut total: i128 = regular.iter().map(get).sum::<i128>()
            + inits
                .iter()
                .zip(&init_lists)
                .filter(|(c, _)| is_sidecar(c))
                .map(|(_, l)| get(l))
                .sum::<i128>();
        for (i, l) in init_lists.iter().enumerate() {
            let before: i128 = inits[..i]
                .iter()
                .zip(&init_lists)
                .filter(|(c, _)| is_sidecar(c))
                .map(|(_, l)| get(l))
                .sum();
            total = total.max(get(l) + before);
        }
        out.insert(name, total);
    }
    out
}

fn units(pod: &Pod, defaults: bool, version: KubernetesVersion) -> BTreeMap<String, i64> {
    let Some(spec) = pod.spec.as_ref() else {
        return BTreeMap::new();
    };
    let status = pod.status.clone().unwrap_or_default();
    let infeasible = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodResizePending")
        .is_some_and(|c| c.reason.as_deref() == Some("Infeasible"));
    let pod_allocated = status.allocated_resources.as_ref();
    let pod_actuated = status.resources.as_ref().and_then(|r| r.requests.as_ref());
    // The containers.
    let mut totals = if version >= KubernetesVersion::V1_37 {
        let (allocated, actuated) = match (pod_allocated, pod_actuated) {
            (Some(a), Some(b)) => (nanos_of(Some(a)), nanos_of(Some(b))),
            _ => (
                kep_sum(pod, defaults, View::Allocated, infeasible),
                kep_sum(pod, defaults, View::Actuated, infeasible),
            ),
        };
        let spec_sum = if infeasible {
            Nanos::new()
        } else {
            kep_sum(pod, defaults, View::Spec, infeasible)
        };
        largest(&[&spec_sum, &allocated, &actuated])
    } else {
        kep_sum(pod, defaults, View::Largest, infeasible)
    };
    // Pod-level requests.
    let supported = |n: &str| n == "cpu" || n == "memory" || n.starts_with("hugepages-");
    let pod_level = nanos_of(spec.resources.as_ref().and_then(|r| r.requests.as_ref()));
    if pod_level.keys().any(|n| supported(n)) {
        let resized = status.resources.is_some() && version >= KubernetesVersion::V1_36;
        let effective = if resized {
            let empty = Nanos::new();
            let spec_part = if infeasible { &empty } else { &pod_level };
            let all = largest(&[spec_part, &nanos_of(pod_actuated), &nanos_of(pod_allocated)]);
            if version >= KubernetesVersion::V1_37 {
                all
            } else {
                pod_level
                    .keys()
                    .map(|k| (k.clone(), all.get(k).copied().unwrap_or(0)))
                    .collect()
            }
        } else {
            pod_level
        };
        for (k, v) in effective {
            if supported(&k) {
                totals.insert(k, v);
            }
        }
    }
    for (k, v) in nanos_of(spec.overhead.as_ref()) {
        *totals.entry(k).or_insert(0) += v;
    }
    totals
        .into_iter()
        .filter(|(name, _)| {
            name == "cpu" || name == "memory" || name == "ephemeral-storage" || is_scalar(name)
        })
        .map(|(name, total)| {
            let u = to_units(&name, total);
            (name, u)
        })
        .collect()
}

fn prefilter_summary(nodes: usize, message: &str) -> String {
    if nodes == 0 {
        "no nodes available to schedule pods".to_owned()
    } else {
        format!("0/{nodes} nodes are available: {message}.")
    }
}
