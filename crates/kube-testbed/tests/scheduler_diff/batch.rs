//! A batch: the simulator placing all pending pods of a seed in one go
//! ([`ClusterState::place_batch`], as `policyctl schedule --all` does)
//! against the real kube-scheduler placing the same pods created together.
//!
//! **Order.** kube-scheduler's queue pops the highest priority first, then
//! the pod that entered the queue first. The pods are created in that order
//! (priority, then the generator's order), so whenever the scheduler pops
//! a pod, the next one created is the one it takes, however creations and
//! scheduling interleave. The simulator places them in the same order.
//! (`schedule_all` itself orders by creation time, then namespace and
//! name; it does not look at priority, so it is not used here.)
//!
//! **What is compared.**
//!
//! - The agreement rate: a pod agrees when the real scheduler bound it to
//!   the simulator's node, or to another node of the highest total in the
//!   simulator's own batch (a tie, which kube-scheduler breaks at random
//!   and the simulator by node name), or when both leave it pending. After
//!   a tie broken another way the two batches run on different clusters, so
//!   later pods may differ without any decision differing.
//! - What is asserted, pod by pod in queue order, on a simulator state that
//!   follows the real placements: a bound pod's node must be among the
//!   simulator's top nodes, a pending pod must fit nowhere. A pod that was
//!   rejected first is retried by kube-scheduler when another pod is bound
//!   (its queueing hints move it back, and with an empty active queue it is
//!   taken from the backoff queue at once), so it may bind after later pods;
//!   a pod that fits nowhere at its turn but on its real node once the
//!   real placements of some of the pods after it are made is counted as
//!   bound on a retry, and for
//!   the pods after it both states (with and without such a pod) are
//!   accepted, as its binding time is not known.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use kube_scheduler_sim::ClusterState;
use std::time::Instant;

use super::{DECISION_LIMIT, Real, real_of};

/// Counts over a run.
#[derive(Debug, Default)]
pub struct BatchTally {
    /// Pods in batches.
    pub pods: u64,
    /// Bound to the simulator's node, or both pending.
    pub same: u64,
    /// Bound to another node of the simulator's highest total.
    pub tie: u64,
    /// Decisions that agree with the simulator following the real
    /// placements.
    pub replay_agreed: u64,
    /// Pods bound on a retry, after later pods changed the cluster.
    pub retried: u64,
}

fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

fn key(pod: &Pod) -> (String, String) {
    (
        pod.metadata.namespace.clone().unwrap_or_default(),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}

fn with_node(pod: &Pod, node: &str) -> Pod {
    let mut bound = pod.clone();
    if let Some(spec) = bound.spec.as_mut() {
        spec.node_name = Some(node.to_owned());
    }
    bound
}

/// The feasible nodes of the highest total (all feasible nodes when
/// nothing was scored); empty when the pod fits nowhere.
fn top_nodes(state: &ClusterState, pod: &Pod) -> (Vec<String>, Vec<String>) {
    let result = match state.evaluate(pod, &super::options()) {
        Ok(result) => result,
        Err(error) => panic!("the simulator failed on {:?}: {error}", pod.metadata.name),
    };
    match super::expected(&result, pod) {
        super::Expected::OneOf(top) => (top, result.feasible),
        _ => (Vec::new(), Vec::new()),
    }
}

/// Whether the pod at `position`, which fit nowhere at its turn, fits on
/// `node` once some of the later pods are placed where kube-scheduler put
/// them: after the real placements of the first `k` pods of the queue
/// (itself left out), for some `k` past its turn. A rejected pod is
/// retried when another pod is bound, so it may be placed at any such
/// moment; which one, no object records.
fn fits_on_a_retry(
    base: &ClusterState,
    created: &[Pod],
    real: &[Real],
    position: usize,
    node: &str,
) -> bool {
    let pod = &created[position];
    let mut state = base.clone();
    for k in 0..created.len() {
        if k != position
            && let Real::Bound(placed) = &real[k]
            && let Err(error) = state.add_pod(&with_node(&created[k], placed))
        {
            panic!("the simulator refused a bound pod: {error}");
        }
        if k >= position && top_nodes(&state, pod).1.iter().any(|n| n == node) {
            return true;
        }
    }
    false
}

/// Creates `pending` together in kube-scheduler's queue order, waits for
/// every decision, and compares them with the simulator's batch over
/// `base`. Returns mismatch reports.
pub async fn check(
    client: &kube::Client,
    seed: u64,
    base: &ClusterState,
    pending: &[Pod],
    namespaces: &[String],
    tally: &mut BatchTally,
) -> Vec<String> {
    let priority_of = |pod: &Pod| {
        let class = pod
            .spec
            .as_ref()
            .and_then(|s| s.priority_class_name.as_deref());
        super::generate::PRIORITY_CLASSES
            .iter()
            .find(|(name, _)| Some(*name) == class)
            .map_or(0, |(_, value)| *value)
    };
    let mut ordered: Vec<&Pod> = pending.iter().collect();
    // Stable: the generator's order within a priority.
    ordered.sort_by_key(|p| std::cmp::Reverse(priority_of(p)));
    let post = PostParams::default();
    let mut created = Vec::with_capacity(ordered.len());
    for pod in ordered {
        let api: Api<Pod> = Api::namespaced(
            client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or("default"),
        );
        match api.create(&post, pod).await {
            Ok(pod) => created.push(pod),
            Err(error) => panic!("seed {seed}: creating pod {:?}: {error}", pod.metadata.name),
        }
    }
    debug_assert!(
        created
            .windows(2)
            .all(|w| priority(&w[0]) >= priority(&w[1]))
    );

    // The simulator's batch, and its top nodes for each pod in its own state.
    let options = super::options();
    let mut sim = base.clone();
    let batch = match sim.clone().place_batch(&created, &options) {
        Ok(batch) => batch,
        Err(error) => panic!("seed {seed}: the simulator's batch failed: {error}"),
    };
    let mut sim_top = Vec::with_capacity(created.len());
    for (pod, placement) in created.iter().zip(&batch.placements) {
        sim_top.push(top_nodes(&sim, pod).0);
        if let Some(node) = &placement.node
            && let Err(error) = sim.add_pod(&with_node(pod, node))
        {
            panic!("seed {seed}: the simulator refused its own placement: {error}");
        }
    }

    // The real decisions.
    let started = Instant::now();
    let real: Vec<Real> = loop {
        let mut decided = std::collections::BTreeMap::new();
        for namespace in namespaces {
            let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
            match api.list(&ListParams::default()).await {
                Ok(list) => {
                    for pod in list.items {
                        if let Some(real) = real_of(&pod) {
                            decided.insert(key(&pod), real);
                        }
                    }
                }
                Err(error) => panic!("seed {seed}: listing pods: {error}"),
            }
        }
        let all: Option<Vec<Real>> = created
            .iter()
            .map(|p| decided.get(&key(p)).cloned())
            .collect();
        if let Some(all) = all {
            break all;
        }
        assert!(
            started.elapsed() < DECISION_LIMIT,
            "seed {seed}: kube-scheduler did not decide about every pod of the batch in {DECISION_LIMIT:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };

    // Agreement with the simulator's batch.
    for ((placement, top), real) in batch.placements.iter().zip(&sim_top).zip(&real) {
        tally.pods += 1;
        match (real, &placement.node) {
            (Real::Bound(node), Some(sim_node)) if node == sim_node => tally.same += 1,
            (Real::Bound(node), Some(_)) if top.contains(node) => tally.tie += 1,
            (Real::Bound(_), _) => {}
            (_, None) => tally.same += 1,
            (_, Some(_)) => {}
        }
    }

    // The real placements, replayed in queue order.
    let decisions: &[Real] = &real;
    let mut mismatches = Vec::new();
    let mut follow = base.clone();
    // The state without the pods bound on a retry (their binding time is
    // not known).
    let mut without_retried = base.clone();
    let mut any_retried = false;
    for (position, (pod, real)) in created.iter().zip(&real).enumerate() {
        let (ns, name) = key(pod);
        let (top, _) = top_nodes(&follow, pod);
        let (alt_top, _) = if any_retried {
            top_nodes(&without_retried, pod)
        } else {
            (top.clone(), Vec::new())
        };
        match real {
            Real::Bound(node) => {
                let bound = with_node(pod, node);
                if top.contains(node) || alt_top.contains(node) {
                    tally.replay_agreed += 1;
                    if let Err(error) = without_retried.add_pod(&bound) {
                        panic!("seed {seed}: the simulator refused a bound pod: {error}");
                    }
                } else {
                    if top.is_empty() && fits_on_a_retry(base, &created, decisions, position, node)
                    {
                        tally.retried += 1;
                        any_retried = true;
                        println!(
                            "seed {seed}: batch pod {ns}/{name} bound to {node} on a retry (it fit nowhere at its turn)"
                        );
                    } else {
                        let why = follow
                            .evaluate(pod, &super::options())
                            .ok()
                            .and_then(|r| r.summary)
                            .unwrap_or_default();
                        mismatches.push(format!(
                            "seed {seed}: batch pod {ns}/{name} (queue position {position})\n  simulator following the real placements expects one of {top:?} ({why})\n  real kube-scheduler: {real:?}\n  pod: {}\n",
                            serde_json::to_string(pod).unwrap_or_default()
                        ));
                        if let Err(error) = without_retried.add_pod(&bound) {
                            panic!("seed {seed}: the simulator refused a bound pod: {error}");
                        }
                    }
                }
                if let Err(error) = follow.add_pod(&bound) {
                    panic!("seed {seed}: the simulator refused a bound pod: {error}");
                }
            }
            _ => {
                if top.is_empty() || alt_top.is_empty() {
                    tally.replay_agreed += 1;
                } else {
                    mismatches.push(format!(
                        "seed {seed}: batch pod {ns}/{name} (queue position {position})\n  simulator following the real placements expects one of {top:?}\n  real kube-scheduler: {real:?}\n"
                    ));
                }
            }
        }
    }
    mismatches
}
