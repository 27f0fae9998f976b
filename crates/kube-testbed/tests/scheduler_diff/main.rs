//! `kube-scheduler-sim` against the real kube-scheduler, decision by
//! decision.
//!
//! For each seed a random cluster ([`generate::cluster`]) is created in a
//! bed running kube-scheduler; its pending pods are then created one at a
//! time, and each decision of the real scheduler is compared with the
//! simulator's evaluation of the same pod (as the API server returned it,
//! defaults and the matchLabelKeys merge included) over the same objects:
//!
//! - bound: the node must be one of the simulator's feasible nodes with the
//!   highest total score (kube-scheduler picks at random among ties); the
//!   simulator then adds the pod where the real scheduler put it;
//! - `PodScheduled=False`, reason `Unschedulable`: the condition's message
//!   must be the simulator's FitError text, followed by the fixed text of
//!   the preemption PostFilter for a pod that may not preempt
//!   ([`post_filter_text`]), or, after a PreFilter rejection, by
//!   [`PREFILTER_REJECTED`]. The pod is then deleted, so that no later event
//!   lets the scheduler retry it.
//!
//! Each seed then compares, on the cluster before its first pending pod,
//! the simulator's capacity with the copies of one pod the real scheduler
//! binds ([`capacity`]), and the simulator's batch with the real scheduler
//! placing the pending pods created together ([`batch`]).
//!
//! The simulator follows the bed's release (its default,
//! [`kube_scheduler_sim::KubernetesVersion::LATEST`], is the bed's
//! kube-scheduler minor), scores included.
//!
//! `SCHEDULER_DIFF_SEED=<n>` runs one seed (to reproduce a mismatch);
//! `SCHEDULER_DIFF_SEEDS=<count>` runs seeds `SCHEDULER_DIFF_FIRST_SEED`
//! (default 0) onwards; by default [`DEFAULT_SEEDS`] seeds run, which keeps
//! the test under a minute on two cores.

mod batch;
mod capacity;
#[path = "../common/mod.rs"]
mod common;
mod dra;
mod generate;

use std::time::{Duration, Instant};

use common::start;
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, Service,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube_scheduler_sim::plugins::node_declared_features;
use kube_scheduler_sim::{
    ClusterState, KubernetesVersion, Options, Plugin, ScheduleResult, StorageObjects, Workloads,
};
use kube_testbed::Testbed;
use serde_json::json;

/// Seeds run when no variable says otherwise.
const DEFAULT_SEEDS: u64 = 20;

/// DRA seeds ([`dra`]) run when no variable says otherwise.
const DEFAULT_DRA_SEEDS: u64 = 8;

/// What the preemption PostFilter (DefaultPreemption) appends to the
/// FitError of a pod whose `preemptionPolicy` is `Never`.
const PREEMPTION_NEVER: &str = "preemption: not eligible due to preemptionPolicy=Never.";

/// What kube-scheduler appends instead when a PreFilter before
/// DynamicResources' rejected the pod: the PostFilter plugins run in order
/// and DynamicResources, ahead of DefaultPreemption, cannot read the state
/// its own PreFilter never wrote; that error (`not found`, the cycle
/// state's `ErrNotFound`) ends the PostFilter phase.
const PREFILTER_REJECTED: &str = " not found";

/// The PostFilter text after a Filter rejection (or DynamicResources' own
/// PreFilter's) at the bed's release: up to 1.36 DynamicResources'
/// PostFilter adds `no new claims to deallocate` for a pod without claims
/// it resolved, `still not schedulable` for one with; 1.37 adds nothing.
fn post_filter_text(claims_resolved: bool) -> String {
    let release = RELEASE.get().copied().unwrap_or(KubernetesVersion::LATEST);
    let dynamic_resources = if release >= KubernetesVersion::V1_37 {
        ""
    } else if claims_resolved {
        "still not schedulable, "
    } else {
        "no new claims to deallocate, "
    };
    format!(" {dynamic_resources}{PREEMPTION_NEVER}")
}

/// Whether DynamicResources holds claims for a pod: it refers to
/// ResourceClaims, or asks for an extended resource a DeviceClass serves
/// (DR.11).
fn has_claims(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.resource_claims.as_ref())
        .is_some_and(|c| !c.is_empty())
        || dra::requests_class_served_resource(pod)
}

/// How long kube-scheduler may take to forget a deleted pod it was
/// binding volumes for (its volume binder checks every second).
const LATE_RELEASE: Duration = Duration::from_secs(3);

/// How long one scheduling decision may take.
const DECISION_LIMIT: Duration = Duration::from_secs(30);

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name}={value:?} is not a number"),
    }
}

/// The seeds to run, from the environment.
fn seeds() -> Vec<u64> {
    if let Some(seed) = env_u64("SCHEDULER_DIFF_SEED") {
        return vec![seed];
    }
    let first = env_u64("SCHEDULER_DIFF_FIRST_SEED").unwrap_or(0);
    let count = env_u64("SCHEDULER_DIFF_SEEDS").unwrap_or(DEFAULT_SEEDS);
    (first..first + count).collect()
}

/// The release of the bed's kube-scheduler, set once when the test
/// starts.
static RELEASE: std::sync::OnceLock<KubernetesVersion> = std::sync::OnceLock::new();

/// The simulator's options: the defaults at the bed's release.
fn options() -> Options {
    Options {
        kubernetes_version: RELEASE.get().copied().unwrap_or(KubernetesVersion::LATEST),
        ..Options::default()
    }
}

/// The DRA seeds: `SCHEDULER_DIFF_DRA_SEEDS=<count>` of them from the
/// first random seed, the one seed of `SCHEDULER_DIFF_SEED`, or
/// [`DEFAULT_DRA_SEEDS`].
fn dra_seeds(seeds: &[u64]) -> Vec<u64> {
    if env_u64("SCHEDULER_DIFF_SEED").is_some() {
        return seeds.to_vec();
    }
    let first = seeds.first().copied().unwrap_or_default();
    let count = env_u64("SCHEDULER_DIFF_DRA_SEEDS").unwrap_or(DEFAULT_DRA_SEEDS);
    (first..first + count).collect()
}

/// What the real scheduler did with a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Real {
    /// Bound to this node.
    Bound(String),
    /// `PodScheduled=False`, reason `Unschedulable`, with this message.
    Unschedulable(String),
    /// `PodScheduled=False` with another reason (reason, message).
    Other(String, String),
}

/// What the simulator says the real scheduler may do.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expected {
    /// Bind to one of these nodes (the feasible nodes of the highest total).
    OneOf(Vec<String>),
    /// Leave the pod pending with this condition message.
    Unschedulable(String),
    /// Fail with a pod-level error.
    Error(String),
}

/// What the real scheduler may do with `pod`, evaluated as `result`.
fn expected(result: &ScheduleResult, pod: &Pod) -> Expected {
    if let Some(error) = &result.error {
        return Expected::Error(error.clone());
    }
    if result.feasible.is_empty() {
        let summary = result.summary.clone().unwrap_or_default();
        // DynamicResources' own PreFilter writes its state before it
        // rejects, so its PostFilter runs and preemption is reached.
        let by_dynamic_resources = !result.unschedulable.is_empty()
            && result
                .unschedulable
                .values()
                .all(|f| f.plugin == Plugin::DynamicResources);
        let pre_filter = rejected_in_pre_filter(&summary);
        let suffix = if pre_filter && !by_dynamic_resources {
            PREFILTER_REJECTED.to_owned()
        } else {
            post_filter_text(has_claims(pod) && !pre_filter)
        };
        return Expected::Unschedulable(format!("{summary}{suffix}"));
    }
    let best = result
        .feasible
        .iter()
        .filter_map(|node| result.totals.get(node))
        .max()
        .copied();
    let top = match best {
        // Nothing scored (one feasible node): any feasible node.
        None => result.feasible.clone(),
        Some(best) => result
            .feasible
            .iter()
            .filter(|node| result.totals.get(*node) == Some(&best))
            .cloned()
            .collect(),
    };
    Expected::OneOf(top)
}

/// Whether a FitError comes from a PreFilter: its text is that plugin's
/// message, where the Filter phase's begins with a count of nodes
/// (`0/3 nodes are available: 2 Insufficient cpu, ...`).
fn rejected_in_pre_filter(summary: &str) -> bool {
    summary
        .split_once("nodes are available: ")
        .is_some_and(|(_, rest)| !rest.starts_with(|c: char| c.is_ascii_digit()))
}

fn agrees(expected: &Expected, real: &Real) -> bool {
    match (expected, real) {
        (Expected::OneOf(nodes), Real::Bound(node)) => nodes.contains(node),
        (Expected::Unschedulable(want), Real::Unschedulable(got)) => want == got,
        _ => false,
    }
}

/// Counts over a run.
#[derive(Debug, Default)]
struct Tally {
    seeds: u64,
    decisions: u64,
    bound: u64,
    unschedulable: u64,
    /// Decisions about pods on a late-binding claim: (bound, pending).
    late: (u64, u64),
    /// Decisions about pods that need a node feature (C.76), and the node
    /// verdicts of those decisions that NodeDeclaredFeatures rejected.
    node_features: (u64, u64),
    agreed: u64,
    /// The capacity comparison ([`capacity`]).
    capacity: capacity::CapacityTally,
    /// The batch comparison ([`batch`]).
    batch: batch::BatchTally,
}

fn metadata(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        ..Default::default()
    }
}

async fn create_priority_classes(client: &kube::Client) {
    let classes: Api<PriorityClass> = Api::all(client.clone());
    for (name, value) in generate::PRIORITY_CLASSES {
        let class = PriorityClass {
            metadata: metadata(name),
            value: *value,
            preemption_policy: Some("Never".to_owned()),
            ..Default::default()
        };
        if let Err(error) = classes.create(&PostParams::default(), &class).await {
            panic!("creating PriorityClass {name}: {error}");
        }
    }
}

/// The scheduler's decision about `pod`, if it has decided.
fn real_of(pod: &Pod) -> Option<Real> {
    if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) {
        return Some(Real::Bound(node));
    }
    let condition = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"))
        .filter(|c| c.status == "False")?;
    let reason = condition.reason.clone().unwrap_or_default();
    let message = condition.message.clone().unwrap_or_default();
    Some(if reason == "Unschedulable" {
        Real::Unschedulable(message)
    } else {
        Real::Other(reason, message)
    })
}

/// The node kube-scheduler chose for a pod whose late-binding claims it
/// is binding: the pod stays unbound, in PreBind, until a provisioner or
/// the volume controller (neither runs in this bed) finishes, but the
/// choice is written before that: `volume.kubernetes.io/selected-node` on
/// a claim to provision, or the claim's reference on a local volume (whose
/// node affinity names one node). The generator gives each late-binding
/// claim to one pending pod, so what is written on it is that pod's.
async fn late_choice(client: &kube::Client, pod: &Pod) -> Option<String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let mounted = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .filter(|c| generate::is_late_claim(&c.claim_name));
    for claim in mounted {
        if let Ok(claim) = claims.get(&claim.claim_name).await
            && let Some(node) = claim
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(kube_scheduler_sim::volumes::ANN_SELECTED_NODE))
        {
            return Some(node.clone());
        }
        let Ok(all) = volumes.list(&ListParams::default()).await else {
            continue;
        };
        for volume in all.items {
            let spec = volume.spec.unwrap_or_default();
            let claimed = spec.claim_ref.as_ref().is_some_and(|r| {
                r.name.as_deref() == Some(claim.claim_name.as_str())
                    && r.namespace.as_deref() == Some(namespace)
            });
            let node = spec
                .node_affinity
                .and_then(|a| a.required)
                .and_then(|r| r.node_selector_terms.into_iter().next())
                .and_then(|t| t.match_expressions?.into_iter().next())
                .filter(|e| e.key == generate::HOSTNAME)
                .and_then(|e| e.values?.into_iter().next());
            if claimed && let Some(node) = node {
                return Some(node);
            }
        }
    }
    None
}

/// Polls the pod until the scheduler has decided.
async fn decision(pods: &Api<Pod>, name: &str) -> Real {
    let started = Instant::now();
    loop {
        if let Ok(pod) = pods.get(name).await {
            if let Some(real) = real_of(&pod) {
                return real;
            }
            if generate::mounts_late_claim(&pod)
                && let Some(node) = late_choice(&pods.clone().into_client(), &pod).await
            {
                return Real::Bound(node);
            }
        }
        assert!(
            started.elapsed() < DECISION_LIMIT,
            "kube-scheduler decided nothing about {name} in {DECISION_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the scheduler's cache holds exactly the `nodes` of this
/// seed (the previous seed's are deleted): a probe pod that fits no node
/// must be refused by `nodes` nodes. Pods created before the probe are in
/// the cache once the probe is seen, as one informer delivers them in
/// order; the probe mounts the claim created last (`probe-data`), bound to
/// the volume created last, so that the claim and volume caches are
/// checked the same way (a missing one fails the volume PreFilters with
/// another message).
async fn wait_for_scheduler_cache(pods: &Api<Pod>, nodes: usize) {
    let want = format!(
        "0/{nodes} nodes are available: {nodes} node(s) didn't match Pod's node affinity/selector.{}",
        post_filter_text(false)
    );
    let mut last = Real::Other(String::new(), String::new());
    for attempt in 0..50 {
        let name = format!("probe-{attempt}");
        let probe: Pod = match serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "containers": [{"name": "main", "image": "registry.example/tool:3"}],
                "nodeSelector": {"diff-probe": "nowhere"},
                "tolerations": [{"operator": "Exists"}],
                "priorityClassName": generate::PRIORITY_CLASSES[0].0,
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "probe-data"}}],
            },
        })) {
            Ok(probe) => probe,
            Err(error) => panic!("the probe pod: {error}"),
        };
        if let Err(error) = pods.create(&PostParams::default(), &probe).await {
            panic!("creating the probe pod: {error}");
        }
        last = decision(pods, &name).await;
        delete_pod(pods, &name).await;
        if last == Real::Unschedulable(want.clone()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "the scheduler's cache never held the {nodes} nodes of the seed; the probe got {last:?}"
    );
}

async fn delete_pod(pods: &Api<Pod>, name: &str) {
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    if let Err(error) = pods.delete(name, &now).await {
        panic!("deleting pod {name}: {error}");
    }
}

/// One mismatch, with what it takes to reproduce it.
fn report(seed: u64, pod: &Pod, result: &ScheduleResult, want: &Expected, real: &Real) -> String {
    let pod_json = serde_json::to_string_pretty(pod).unwrap_or_default();
    let result_json = serde_json::to_string_pretty(result).unwrap_or_default();
    format!(
        "seed {seed}: pod {}\n  simulator expects: {want:?}\n  real kube-scheduler: {real:?}\n  \
         reproduce: SCHEDULER_DIFF_SEED={seed} cargo test -p kube-testbed --test scheduler_diff\n\
         --- pod as created ---\n{pod_json}\n--- simulator (per-node verdicts and scores) ---\n{result_json}\n",
        result.pod
    )
}

/// Creates the cluster of `seed`, schedules its pending pods one by one,
/// compares each decision, and removes the seed's objects again.
async fn run_seed(
    client: &kube::Client,
    seed: u64,
    tally: &mut Tally,
    mismatches: &mut Vec<String>,
) {
    let mut cluster = generate::cluster(seed);
    if options().kubernetes_version >= KubernetesVersion::V1_36 {
        generate::declare_node_features(&mut cluster, seed);
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    let post = PostParams::default();
    for namespace in &cluster.namespaces {
        if let Err(error) = namespaces.create(&post, namespace).await {
            panic!("seed {seed}: creating a namespace: {error}");
        }
    }
    // Services first: nothing else tells when the scheduler's Service
    // informer has them, and everything below takes a while.
    let created_services = create_each(client, seed, &cluster.services).await;
    let created_nodes = create_each(client, seed, &cluster.nodes).await;
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let mut created_volumes = create_each(client, seed, &cluster.volumes).await;
    let mut created_claims = create_each(client, seed, &cluster.claims).await;
    // Late binding: its classes, local volumes and claims.
    let classes: Api<StorageClass> = Api::all(client.clone());
    let created_classes = create_each(client, seed, &cluster.late.classes).await;
    created_volumes.extend(create_each(client, seed, &cluster.late.volumes).await);
    created_claims.extend(create_each(client, seed, &cluster.late.claims).await);
    let pods_of = |pod: &Pod| -> Api<Pod> {
        Api::namespaced(
            client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or("default"),
        )
    };
    let mut existing = Vec::new();
    for pod in &cluster.existing {
        match pods_of(pod).create(&post, pod).await {
            Ok(pod) => existing.push(pod),
            Err(error) => panic!("seed {seed}: creating pod {:?}: {error}", pod.metadata.name),
        }
    }
    let first_namespace: Api<Pod> = Api::namespaced(
        client.clone(),
        cluster.namespaces[0]
            .metadata
            .name
            .as_deref()
            .unwrap_or("default"),
    );
    wait_for_scheduler_cache(&first_namespace, created_nodes.len()).await;

    let all_namespaces = match namespaces.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(error) => panic!("listing namespaces: {error}"),
    };
    let mut sim = ClusterState::for_options(&created_nodes, &all_namespaces, &existing, &options())
        .unwrap_or_else(|error| panic!("seed {seed}: the simulator refused the cluster: {error}"));
    sim.add_workloads(&Workloads {
        services: created_services.clone(),
        ..Default::default()
    });
    sim.set_storage(&StorageObjects {
        claims: created_claims,
        volumes: created_volumes,
        classes: created_classes.clone(),
        ..Default::default()
    });
    assert_eq!(
        sim.node_count(),
        created_nodes.len(),
        "seed {seed}: the simulator refused a node"
    );
    assert_eq!(
        sim.pod_count(),
        existing.len(),
        "seed {seed}: the simulator refused a bound pod"
    );
    let options = options();
    // The cluster before any pending pod, for the capacity and the batch.
    let base = sim.clone();
    tally.seeds += 1;
    for pod in &cluster.pending {
        let api = pods_of(pod);
        let name = pod.metadata.name.clone().unwrap_or_default();
        let created = match api.create(&post, pod).await {
            Ok(pod) => pod,
            Err(error) => panic!("seed {seed}: creating pod {name}: {error}"),
        };
        let result = match sim.evaluate(&created, &options) {
            Ok(result) => result,
            Err(error) => panic!("seed {seed}: the simulator failed on {name}: {error}"),
        };
        let want = expected(&result, &created);
        let real = decision(&api, &name).await;
        tally.decisions += 1;
        if !node_declared_features::required_features(&created, options.kubernetes_version)
            .is_empty()
        {
            tally.node_features.0 += 1;
            tally.node_features.1 += result
                .unschedulable
                .values()
                .filter(|f| f.plugin == Plugin::NodeDeclaredFeatures)
                .count() as u64;
        }
        if generate::mounts_late_claim(&created) {
            match real {
                Real::Bound(_) => tally.late.0 += 1,
                _ => tally.late.1 += 1,
            }
        }
        if agrees(&want, &real) {
            tally.agreed += 1;
        } else {
            mismatches.push(report(seed, &created, &result, &want, &real));
        }
        match &real {
            Real::Bound(node) => {
                tally.bound += 1;
                let mut bound = created.clone();
                if let Some(spec) = bound.spec.as_mut() {
                    spec.node_name = Some(node.clone());
                }
                if let Err(error) = sim.add_pod(&bound) {
                    panic!("seed {seed}: the simulator refused the bound pod {name}: {error}");
                }
                if generate::mounts_late_claim(&created) {
                    // What kube-scheduler wrote on the claims and volumes.
                    let storage = storage_now(client, &cluster, &created_classes).await;
                    sim.set_storage(&storage);
                }
            }
            _ => {
                tally.unschedulable += 1;
                delete_pod(&api, &name).await;
            }
        }
    }

    // The pending pods bound above go; the probe makes sure the
    // scheduler's cache has seen them go (one informer, in order).
    let mut late_assumed = false;
    for pod in &cluster.pending {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        if sim
            .remove_pod_named(pod.metadata.namespace.as_deref().unwrap_or("default"), name)
            .is_some()
        {
            late_assumed |= generate::mounts_late_claim(pod);
            delete_pod(&pods_of(pod), name).await;
        }
    }
    if late_assumed {
        // A pod kube-scheduler holds in PreBind, waiting for its volumes,
        // stays in its cache until the wait (polled every second) sees the
        // pod gone: no event tells when, so the next comparisons wait.
        tokio::time::sleep(LATE_RELEASE).await;
    }
    wait_for_scheduler_cache(&first_namespace, created_nodes.len()).await;
    // Pods on late-binding claims stay out of the capacity and batch
    // comparisons (generate::KNOWN_DEVIATIONS).
    let early: Vec<Pod> = cluster
        .pending
        .iter()
        .filter(|p| !generate::mounts_late_claim(p))
        .cloned()
        .collect();
    if let Some(template) = capacity::template(&base, &early) {
        mismatches.extend(
            capacity::check(
                client,
                seed,
                &base,
                &template,
                created_nodes.len(),
                &mut tally.capacity,
            )
            .await,
        );
        wait_for_scheduler_cache(&first_namespace, created_nodes.len()).await;
    }
    let namespace_names: Vec<String> = cluster
        .namespaces
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    mismatches.extend(
        batch::check(
            client,
            seed,
            &base,
            &early,
            &namespace_names,
            &mut tally.batch,
        )
        .await,
    );

    // Remove the seed's pods and nodes; the namespaces stay (there is no
    // namespace controller to finish their deletion) and hold nothing.
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    for namespace in &cluster.namespaces {
        let name = namespace.metadata.name.as_deref().unwrap_or("default");
        let pods: Api<Pod> = Api::namespaced(client.clone(), name);
        if let Err(error) = pods.delete_collection(&now, &ListParams::default()).await {
            panic!("seed {seed}: deleting the pods of {name}: {error}");
        }
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), name);
        if let Err(error) = claims.delete_collection(&now, &ListParams::default()).await {
            panic!("seed {seed}: deleting the claims of {name}: {error}");
        }
    }
    for service in &created_services {
        let (Some(namespace), Some(name)) = (&service.metadata.namespace, &service.metadata.name)
        else {
            continue;
        };
        let services: Api<Service> = Api::namespaced(client.clone(), namespace);
        if let Err(error) = services.delete(name, &now).await {
            panic!("seed {seed}: deleting service {name}: {error}");
        }
    }
    let seed_nodes = ListParams::default().labels(&format!("diff-seed={seed}"));
    if let Err(error) = nodes.delete_collection(&now, &seed_nodes).await {
        panic!("seed {seed}: deleting its nodes: {error}");
    }
    if let Err(error) = volumes.delete_collection(&now, &seed_nodes).await {
        panic!("seed {seed}: deleting its volumes: {error}");
    }
    if let Err(error) = classes.delete_collection(&now, &seed_nodes).await {
        panic!("seed {seed}: deleting its storage classes: {error}");
    }
}

/// Creates `objects` (each in its own namespace, if namespaced) in order,
/// and returns them as the API server returned them.
async fn create_each<K>(client: &kube::Client, seed: u64, objects: &[K]) -> Vec<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + k8s_openapi::serde::Serialize
        + k8s_openapi::serde::de::DeserializeOwned,
    K::Scope: ScopeOf,
{
    let mut created = Vec::new();
    for object in objects {
        let api: Api<K> = K::Scope::api(client, object.meta().namespace.as_deref());
        match api.create(&PostParams::default(), object).await {
            Ok(object) => created.push(object),
            Err(error) => panic!(
                "seed {seed}: creating {} {:?}: {error}",
                K::kind(&()),
                object.meta().name
            ),
        }
    }
    created
}

/// The API of a kind by its scope: cluster-wide, or in the object's
/// namespace.
trait ScopeOf {
    fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
    where
        K: kube::Resource<DynamicType = (), Scope = Self>;
}

impl ScopeOf for k8s_openapi::ClusterResourceScope {
    fn api<K>(client: &kube::Client, _: Option<&str>) -> Api<K>
    where
        K: kube::Resource<DynamicType = (), Scope = Self>,
    {
        Api::all(client.clone())
    }
}

impl ScopeOf for k8s_openapi::NamespaceResourceScope {
    fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
    where
        K: kube::Resource<DynamicType = (), Scope = Self>,
    {
        Api::namespaced(client.clone(), namespace.unwrap_or("default"))
    }
}

/// The seed's claims and volumes as the API server holds them now.
async fn storage_now(
    client: &kube::Client,
    cluster: &generate::Cluster,
    classes: &[StorageClass],
) -> StorageObjects {
    let mut claims = Vec::new();
    for namespace in &cluster.namespaces {
        let name = namespace.metadata.name.as_deref().unwrap_or("default");
        let api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), name);
        match api.list(&ListParams::default()).await {
            Ok(list) => claims.extend(list.items),
            Err(error) => panic!("listing the claims of {name}: {error}"),
        }
    }
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let volumes = match volumes.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(error) => panic!("listing volumes: {error}"),
    };
    StorageObjects {
        claims,
        volumes,
        classes: classes.to_vec(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_decides_as_the_real_scheduler_on_random_clusters() {
    if kube_testbed::skip_requested() {
        return;
    }
    let seeds = seeds();
    let started = Instant::now();
    let bed = start(Testbed::builder().with_scheduler()).await;
    // Every comparison follows the bed's release: the default bed's is the
    // simulator's default; a release bed (testbed/build-releases.sh,
    // KUBE_TESTBED_DIR) gives an older one.
    let release = match bed.versions().kubernetes.parse::<KubernetesVersion>() {
        Ok(release) => release,
        Err(error) => panic!("the bed's kube-scheduler: {error}"),
    };
    if std::env::var_os(kube_testbed::DIR_ENV).is_none() {
        assert_eq!(
            release,
            KubernetesVersion::LATEST,
            "the default bed runs kube-scheduler {}, the simulator follows {} by default",
            bed.versions().kubernetes,
            KubernetesVersion::LATEST
        );
    }
    if RELEASE.set(release).is_err() {
        panic!("the release is set once");
    }
    let client = bed.client();
    create_priority_classes(&client).await;
    let mut tally = Tally::default();
    let mut mismatches = Vec::new();
    for seed in &seeds {
        let before = mismatches.len();
        run_seed(&client, *seed, &mut tally, &mut mismatches).await;
        println!(
            "seed {seed}: {} mismatch(es), {} decisions so far",
            mismatches.len() - before,
            tally.decisions
        );
    }
    let mut dra_tally = dra::DraTally::default();
    for seed in dra_seeds(&seeds) {
        let before = mismatches.len();
        dra::run_seed(&client, seed, &mut dra_tally, &mut mismatches).await;
        println!(
            "DRA seed {seed}: {} mismatch(es), {} decisions so far",
            mismatches.len() - before,
            dra_tally.decisions
        );
    }
    println!(
        "scheduler diff (Kubernetes {}): {} seeds ({}..={}), {} decisions ({} bound, {} unschedulable), {} agreed, {} mismatches, {:.1} s",
        bed.versions().kubernetes,
        tally.seeds,
        seeds.first().copied().unwrap_or_default(),
        seeds.last().copied().unwrap_or_default(),
        tally.decisions,
        tally.bound,
        tally.unschedulable,
        tally.agreed,
        mismatches.len(),
        started.elapsed().as_secs_f64()
    );
    println!(
        "node features (1.36 and later): {} decisions about pods needing one, {} node verdicts from NodeDeclaredFeatures",
        tally.node_features.0, tally.node_features.1
    );
    println!(
        "late binding (WaitForFirstConsumer claims): {} decisions, {} on a node, {} pending",
        tally.late.0 + tally.late.1,
        tally.late.0,
        tally.late.1
    );
    let cap = &tally.capacity;
    println!(
        "capacity: {} seeds, {} copies bound, {} counts equal, {} differing after a tie broken another way",
        cap.checks, cap.copies, cap.equal, cap.tie_order
    );
    let b = &tally.batch;
    let rate = |n: u64| 100.0 * n as f64 / b.pods.max(1) as f64;
    println!(
        "batch: {} pods, {} on the simulator's node or pending on both sides, {} on another node of its highest total (a tie): {:.1} % agreement; following the real placements, {} agreed and {} bound on a retry",
        b.pods,
        b.same,
        b.tie,
        rate(b.same + b.tie),
        b.replay_agreed,
        b.retried
    );
    let d = &dra_tally;
    println!(
        "DRA: {} seeds, {} decisions ({} bound, {} of them with claims the real scheduler allocated; {} unschedulable), {} agreed",
        d.seeds, d.decisions, d.bound, d.allocated, d.unschedulable, d.agreed
    );
    println!(
        "DRA extended resources (1.36 and later): {} decisions, {} bound",
        d.extended, d.extended_bound
    );
    println!(
        "DRA shared devices (1.36 and later): {} decisions, {} bound",
        d.shared, d.shared_bound
    );
    println!("generator restrictions (known deviations):");
    for deviation in generate::KNOWN_DEVIATIONS {
        println!("  - {deviation}");
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} decisions differ from the real kube-scheduler:\n{}",
        mismatches.len(),
        tally.decisions + dra_tally.decisions,
        mismatches.join("\n")
    );
}

#[test]
fn pre_filter_rejections_are_told_from_filter_ones_by_their_text() {
    assert!(rejected_in_pre_filter(
        "0/3 nodes are available: persistentvolumeclaim \"missing\" not found."
    ));
    assert!(!rejected_in_pre_filter(
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s)."
    ));
}
