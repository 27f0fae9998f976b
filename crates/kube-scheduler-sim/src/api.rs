//! Entry points: evaluate one pod, place one pod, place a batch.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube_validation::namespace_or_default;
use serde::{Deserialize, Serialize};

use crate::dra::DraObjects;
use crate::plugins::{SCORE_WEIGHTS, profile_for};
use crate::pod_info::PodInfo;
use crate::profile::{CoreEval, evaluate, evaluate_masked, select, totals};
use crate::result::{Options, OptionsError, PluginScores, ScheduleResult};
use crate::state::{ClusterState, PodId, StateError};
use crate::volumes::StorageObjects;
use crate::workloads::Workloads;

/// Why an entry point could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// Invalid options.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// The pod to schedule is not in the pod list.
    #[error("pod {0} not found in the given pods")]
    UnknownPod(String),
    /// The cluster state refused a pod.
    #[error(transparent)]
    State(#[from] StateError),
}

/// The outcome of placing one pod in a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// `namespace/name`.
    pub pod: String,
    /// The node chosen, or None if the pod stays pending.
    pub node: Option<String>,
    /// Why it stays pending, in kube-scheduler's FitError form
    /// (`0/N nodes are available: 2 node(s) didn't match ...`).
    pub reason: Option<String>,
}

/// Placements of a batch, in placement order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchResult {
    /// One entry per pod, in the order placed.
    pub placements: Vec<Placement>,
}

fn pod_priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

impl ClusterState {
    /// The filters and scores of `pod` as kube-scheduler runs them with
    /// nominated pods (C.71, `RunFilterPluginsWithNominatedPods`): on a
    /// node with pods nominated to it whose priority is at least the pod's
    /// (other than the pod itself), the filters run first with those pods
    /// added — only the pods nominated to that node (`addGENominatedPods`)
    /// — and a node they reject keeps that rejection; the other nodes are
    /// filtered and scored without them.
    pub(crate) fn core_eval(&self, pod: &Pod, info: &PodInfo, opts: &Options) -> CoreEval {
        let profile = profile_for(opts.kubernetes_version);
        let ahead = self.nominated_ahead_of(pod);
        if ahead.is_empty() {
            return evaluate(self, profile, info, opts);
        }
        let mut by_node: BTreeMap<u32, Vec<&Pod>> = BTreeMap::new();
        for p in ahead {
            let node = p.spec.as_ref().and_then(|s| s.node_name.as_deref());
            if let Some(index) = node.and_then(|n| self.node_index(n)) {
                by_node.entry(index).or_default().push(p);
            }
        }
        let mut rejected = vec![None; self.nodes.len()];
        for (index, pods) in by_node {
            let mut with = self.clone();
            with.nominated.clear();
            for p in pods {
                // A nominated pod that cannot be added (its quantities do
                // not parse) is left out, as for bound pods.
                let _ = with.add_pod(p);
            }
            let mut reasons = evaluate(&with, profile, info, opts).reasons;
            rejected[index as usize] = reasons.swap_remove(index as usize);
        }
        evaluate_masked(self, profile, info, opts, Some(&rejected))
    }

    /// The nominated pods that kube-scheduler adds when it filters `pod`:
    /// priority at least the pod's, the pod itself excepted (C.71).
    fn nominated_ahead_of(&self, pod: &Pod) -> Vec<&Pod> {
        let own = pod_priority(pod);
        let namespace = namespace_or_default(pod.metadata.namespace.as_deref());
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        self.nominated
            .iter()
            .filter(|p| pod_priority(p) >= own)
            .filter(|p| {
                !(namespace_or_default(p.metadata.namespace.as_deref()) == namespace
                    && p.metadata.name.as_deref() == Some(name))
            })
            .collect()
    }

    /// `namespace/name` of the pods nominated to `node` that kube-scheduler
    /// adds when it filters `pod` there (C.71), sorted.
    pub fn nominated_ahead(&self, pod: &Pod, node: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .nominated_ahead_of(pod)
            .into_iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
            .map(|p| {
                format!(
                    "{}/{}",
                    namespace_or_default(p.metadata.namespace.as_deref()),
                    p.metadata.name.as_deref().unwrap_or_default()
                )
            })
            .collect();
        names.sort();
        names
    }

    /// The pod's nominated node when it passes every filter there: kube-
    /// scheduler tries that node first and takes it (C.71,
    /// `evaluateNominatedNode`).
    fn nominated_fit(&self, pod: &Pod, core: &CoreEval) -> Option<u32> {
        let node = crate::skip::nominated_node(pod)?;
        let index = self.node_index(node)?;
        let clean = core.error.is_none() && core.all_nodes.is_none();
        (clean
            && core
                .reasons
                .get(index as usize)
                .is_some_and(Option::is_none))
        .then_some(index)
    }

    /// Filter and score `pod` over the cluster (the pod is evaluated as
    /// incoming; it must not be one of the placed pods). A pod
    /// kube-scheduler would not try ([`crate::scheduling_skip`], C.70) is
    /// not evaluated: the result only names the reason (`skipped`).
    pub fn evaluate(&self, pod: &Pod, opts: &Options) -> Result<ScheduleResult, ScheduleError> {
        opts.validate()?;
        let info = self.compile_pod(pod);
        if let Some(skip) = crate::skip::scheduling_skip(pod) {
            return Ok(ScheduleResult {
                pod: info.key(),
                skipped: Some(skip),
                ..Default::default()
            });
        }
        let core = self.core_eval(pod, &info, opts);
        let mut result = self.to_result(info.key(), &core);
        if let Some(index) = self.nominated_fit(pod, &core) {
            let name = self.nodes[index as usize].name.clone();
            result.selected = Some(name.clone());
            result.nominated_node = Some(name);
        }
        Ok(result)
    }

    /// Evaluate `pod`, bind it to the selected node and add it to the state
    /// (its nomination, if any, is then forgotten). A pod kube-scheduler
    /// would not try (C.70) stays pending with that reason.
    pub fn place(&mut self, pod: &Pod, opts: &Options) -> Result<Placement, ScheduleError> {
        opts.validate()?;
        let mut info = self.compile_pod(pod);
        let key = info.key();
        if let Some(skip) = crate::skip::scheduling_skip(pod) {
            return Ok(Placement {
                pod: key,
                node: None,
                reason: Some(skip.to_string()),
            });
        }
        let core = self.core_eval(pod, &info, opts);
        match self
            .nominated_fit(pod, &core)
            .or_else(|| select(self, &core))
        {
            Some(node) => {
                let name = self.nodes[node as usize].name.clone();
                let claims = crate::plugins::dynamic_resources::reserve(
                    self,
                    &info,
                    opts.kubernetes_version,
                    node,
                );
                info.node_name = Some(name.clone());
                self.add_pod_info(std::sync::Arc::new(info))?;
                for (key, claim) in claims {
                    self.dra.record(key, claim);
                }
                self.remove_nominated_pod(
                    namespace_or_default(pod.metadata.namespace.as_deref()),
                    pod.metadata.name.as_deref().unwrap_or_default(),
                );
                Ok(Placement {
                    pod: key,
                    node: Some(name),
                    reason: None,
                })
            }
            None => Ok(Placement {
                pod: key,
                node: None,
                reason: Some(self.fit_error(&core)),
            }),
        }
    }

    /// Place `pods` one after another, each placement updating the state
    /// (a ReplicaSet scale-up). Pods that do not fit stay pending.
    pub fn place_batch(
        &mut self,
        pods: &[Pod],
        opts: &Options,
    ) -> Result<BatchResult, ScheduleError> {
        let mut placements = Vec::with_capacity(pods.len());
        for p in pods {
            placements.push(self.place(p, opts)?);
        }
        Ok(BatchResult { placements })
    }

    /// kube-scheduler's FitError text for an evaluation without a node.
    fn fit_error(&self, core: &CoreEval) -> String {
        let n = self.nodes.len();
        if let Some(e) = core.error.as_ref().or(core.score_error.as_ref()) {
            return e.clone();
        }
        if n == 0 {
            return fit_error_summary(0, Vec::<Vec<String>>::new());
        }
        match &core.all_nodes {
            Some(r) => format!("0/{n} nodes are available: {}.", r.failure().message),
            None => fit_error_summary(n, core.reasons.iter().flatten().map(|r| r.reasons())),
        }
    }

    fn to_result(&self, pod: String, core: &CoreEval) -> ScheduleResult {
        let mut res = ScheduleResult {
            pod,
            ..Default::default()
        };
        if let Some(e) = &core.error {
            res.error = Some(e.clone());
            return res;
        }
        if let Some(all) = &core.all_nodes {
            let failure = all.failure();
            for node in &self.nodes {
                res.unschedulable.insert(node.name.clone(), failure.clone());
            }
            res.summary = Some(self.fit_error(core));
            return res;
        }
        for (i, r) in core.reasons.iter().enumerate() {
            let name = self.nodes[i].name.clone();
            match r {
                None => res.feasible.push(name),
                Some(r) => {
                    res.unschedulable.insert(name, r.failure());
                }
            }
        }
        res.feasible.sort();
        res.error = core.score_error.clone();
        if res.feasible.is_empty() {
            res.summary = Some(self.fit_error(core));
        }
        let names: Vec<&str> = core
            .scored
            .iter()
            .map(|i| self.nodes[*i as usize].name.as_str())
            .collect();
        let by_node = |values: &[i64]| -> BTreeMap<String, i64> {
            names
                .iter()
                .map(|n| n.to_string())
                .zip(values.iter().copied())
                .collect()
        };
        for (plugin, _) in SCORE_WEIGHTS {
            let computed = core.scores.iter().find(|p| p.plugin == plugin);
            let scores = match computed.and_then(|p| p.result.as_ref()) {
                Some((raw, normalized)) => PluginScores {
                    raw: by_node(raw),
                    normalized: by_node(normalized),
                    skipped: false,
                },
                None => PluginScores {
                    skipped: true,
                    ..Default::default()
                },
            };
            if let Some(slot) = res.scores.get_mut(plugin) {
                *slot = scores;
            }
        }
        if !core.scores.is_empty() {
            res.totals = by_node(&totals(core));
        }
        res.selected = select(self, core).map(|i| self.nodes[i as usize].name.clone());
        res
    }
}

/// `FitError.Error()` after a Filter failure: `0/N nodes are available: `
/// then, per distinct reason, `<nodes> <reason>` (a node counts once for
/// each of its reasons), sorted as strings and joined with `, `, then `.`.
/// kube-scheduler appends the preemption outcome, which is not simulated.
pub fn fit_error_summary<I, R>(nodes: usize, reasons_per_node: I) -> String
where
    I: IntoIterator<Item = R>,
    R: IntoIterator<Item = String>,
{
    let mut hist: BTreeMap<String, usize> = BTreeMap::new();
    for reasons in reasons_per_node {
        for r in reasons {
            *hist.entry(r).or_default() += 1;
        }
    }
    if nodes == 0 {
        // `ErrNoNodesAvailable`: kube-scheduler stops before filtering.
        return "no nodes available to schedule pods".to_owned();
    }
    let mut parts: Vec<String> = hist.iter().map(|(m, c)| format!("{c} {m}")).collect();
    parts.sort();
    if parts.is_empty() {
        return format!("0/{nodes} nodes are available:");
    }
    format!("0/{nodes} nodes are available: {}.", parts.join(", "))
}

/// Evaluate the pod `namespace/name` (pending or bound; a bound pod is
/// evaluated as if it were not yet placed) against the other pods.
///
/// This is the entry point of `policyctl schedule --pod ns/name`.
pub fn schedule(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    namespace: &str,
    name: &str,
    opts: &Options,
) -> Result<ScheduleResult, ScheduleError> {
    schedule_with_workloads(
        nodes,
        namespaces,
        pods,
        &Workloads::default(),
        namespace,
        name,
        opts,
    )
}

/// [`schedule`] with the Services, ReplicationControllers, ReplicaSets and
/// StatefulSets of the snapshot, whose selectors PodTopologySpread's
/// system-default constraints use (C.46).
pub fn schedule_with_workloads(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    workloads: &Workloads,
    namespace: &str,
    name: &str,
    opts: &Options,
) -> Result<ScheduleResult, ScheduleError> {
    let storage = StorageObjects::default();
    let snapshot = Snapshot {
        nodes,
        namespaces,
        pods,
        workloads,
        storage: &storage,
        dra: &DraObjects::default(),
    };
    schedule_snapshot(&snapshot, namespace, name, opts)
}

/// Everything of a cluster snapshot the scheduler reads.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    /// Nodes.
    pub nodes: &'a [Node],
    /// Namespaces (namespaceSelectors).
    pub namespaces: &'a [Namespace],
    /// Pods; the bound ones are placed.
    pub pods: &'a [Pod],
    /// Services, ReplicationControllers, ReplicaSets and StatefulSets (C.46).
    pub workloads: &'a Workloads,
    /// Claims, volumes, storage classes and CSINodes (C.50–C.54).
    pub storage: &'a StorageObjects,
    /// DeviceClasses, ResourceClaims, templates and ResourceSlices (DR.1–DR.4).
    pub dra: &'a DraObjects,
}

/// [`schedule`] with the cluster's claims, volumes, storage classes and
/// CSINodes, which the volume filters read (C.50–C.53).
pub fn schedule_with_storage(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    storage: &StorageObjects,
    namespace: &str,
    name: &str,
    opts: &Options,
) -> Result<ScheduleResult, ScheduleError> {
    let workloads = Workloads::default();
    let snapshot = Snapshot {
        nodes,
        namespaces,
        pods,
        workloads: &workloads,
        storage,
        dra: &DraObjects::default(),
    };
    schedule_snapshot(&snapshot, namespace, name, opts)
}

/// [`schedule`] over a whole [`Snapshot`].
pub fn schedule_snapshot(
    snapshot: &Snapshot<'_>,
    namespace: &str,
    name: &str,
    opts: &Options,
) -> Result<ScheduleResult, ScheduleError> {
    let Snapshot {
        nodes,
        namespaces,
        pods,
        workloads,
        storage,
        dra,
    } = *snapshot;
    opts.validate()?;
    let is_target = |p: &Pod| {
        namespace_or_default(p.metadata.namespace.as_deref()) == namespace
            && p.metadata.name.as_deref() == Some(name)
    };
    let target = pods
        .iter()
        .find(|p| is_target(p))
        .ok_or_else(|| ScheduleError::UnknownPod(format!("{namespace}/{name}")))?;
    let others: Vec<Pod> = pods.iter().filter(|p| !is_target(p)).cloned().collect();
    let mut state = ClusterState::for_options(nodes, namespaces, &others, opts)?;
    state.set_storage(storage);
    state.set_dra(dra);
    state.add_workloads(workloads);
    let mut incoming = target.clone();
    if let Some(spec) = incoming.spec.as_mut() {
        spec.node_name = None;
    }
    state.evaluate(&incoming, opts)
}

/// Place every pending pod (no `spec.nodeName`) in kube-scheduler's queue
/// order (C.72): the highest priority first, then creation time (pods
/// without one first), then namespace and name; each placement updates the
/// state. Entry point of `policyctl schedule --all`.
pub fn schedule_all(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    opts: &Options,
) -> Result<BatchResult, ScheduleError> {
    schedule_all_with_workloads(nodes, namespaces, pods, &Workloads::default(), opts)
}

/// [`schedule_all`] with the snapshot's workloads (see
/// [`schedule_with_workloads`]).
pub fn schedule_all_with_workloads(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    workloads: &Workloads,
    opts: &Options,
) -> Result<BatchResult, ScheduleError> {
    let storage = StorageObjects::default();
    let snapshot = Snapshot {
        nodes,
        namespaces,
        pods,
        workloads,
        storage: &storage,
        dra: &DraObjects::default(),
    };
    schedule_all_snapshot(&snapshot, opts)
}

/// [`schedule_all`] with the cluster's storage objects; every placement
/// counts the pod's claims and attached volumes for the pods after it.
pub fn schedule_all_with_storage(
    nodes: &[Node],
    namespaces: &[Namespace],
    pods: &[Pod],
    storage: &StorageObjects,
    opts: &Options,
) -> Result<BatchResult, ScheduleError> {
    let workloads = Workloads::default();
    let snapshot = Snapshot {
        nodes,
        namespaces,
        pods,
        workloads: &workloads,
        storage,
        dra: &DraObjects::default(),
    };
    schedule_all_snapshot(&snapshot, opts)
}

/// [`schedule_all`] over a whole [`Snapshot`].
pub fn schedule_all_snapshot(
    snapshot: &Snapshot<'_>,
    opts: &Options,
) -> Result<BatchResult, ScheduleError> {
    let Snapshot {
        nodes,
        namespaces,
        pods,
        workloads,
        storage,
        dra,
    } = *snapshot;
    opts.validate()?;
    let mut state = ClusterState::for_options(nodes, namespaces, pods, opts)?;
    state.set_storage(storage);
    state.set_dra(dra);
    state.add_workloads(workloads);
    let mut pending: Vec<&Pod> = pods
        .iter()
        .filter(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_none_or(str::is_empty)
        })
        .collect();
    // kube-scheduler's queue order (PrioritySort, C.72): the highest
    // priority first, then the pod that entered the queue first (its
    // creation, for a batch), then namespace/name for a stable order.
    pending.sort_by_key(|p| {
        (
            std::cmp::Reverse(pod_priority(p)),
            p.metadata.creation_timestamp.as_ref().map(|t| t.0),
            namespace_or_default(p.metadata.namespace.as_deref()).to_owned(),
            p.metadata.name.clone(),
        )
    });
    let pending: Vec<Pod> = pending.into_iter().cloned().collect();
    state.place_batch(&pending, opts)
}

impl ClusterState {
    /// Remove a placed pod by namespace and name (RemovePod).
    pub fn remove_pod_named(&mut self, namespace: &str, name: &str) -> Option<PodId> {
        let id = self.find_pod(namespace, name)?;
        self.remove_pod(id);
        Some(id)
    }
}
