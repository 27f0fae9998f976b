//! The real kube-scheduler and `kube-scheduler-sim` timed on the same
//! machine in one run, on scheduler_perf's workload shapes.
//!
//! ```text
//! cargo bench -p kube-testbed --bench scheduler_speed
//! ```
//!
//! needs the test bed (`bash testbed/build.sh`). One bed runs kube-apiserver
//! and kube-scheduler (default profile, no leader election, client QPS
//! 5,000 as scheduler_perf sets it) with `percentageOfNodesToScore: 100`,
//! so that both schedulers filter and score every node (kube-scheduler's
//! default stops at an adaptive share of feasible nodes from 100 nodes up,
//! about 10% at 5,000; `SCHEDULER_SPEED_PERCENTAGE=<1–100>` sets another value,
//! and the decisions then need not agree). Every workload uses the same nodes,
//! created once: `kubernetes.io/hostname` unique, `topology.kubernetes.io/zone`
//! `zone1` on all (as scheduler_perf labels them), a rack label
//! `bench.example/rack` with 100 values, 4 CPUs / 8 GiB / 110 pods
//! allocatable and a Ready condition. Every pod requests 100m CPU and
//! 200Mi, the ratio of the nodes' allocatable, so that
//! NodeResourcesBalancedAllocation scores the same in every release.
//!
//! For each workload the existing pods are created already bound
//! (`spec.nodeName`), then kube-scheduler is stopped (`SIGSTOP`), the
//! measured pods are created, and kube-scheduler is resumed (`SIGCONT`):
//!
//! - **end-to-end binds/s**: measured pods divided by the time from the
//!   resume to the last binding seen on a watch, so pod creation is not
//!   timed;
//! - **algorithm time per pod**: the growth of kube-scheduler's own
//!   `scheduler_scheduling_algorithm_duration_seconds` histogram (sum over
//!   count) across the workload: filtering and scoring only, without the
//!   queue, the API round trips or the binding;
//! - **attempt time per pod**: the same from
//!   `scheduler_scheduling_attempt_duration_seconds` (the whole scheduling
//!   cycle of an attempt);
//! - **sim pods/s**: the same measured pods placed by
//!   [`ClusterState::place_batch`] on a state built from the same nodes and
//!   existing pods as the API server returned them (best of three runs,
//!   state built outside the timed section);
//! - **decisions**: replaying the real bindings in the order they happened
//!   on a simulator state that follows them, a pod whose simulator top
//!   score belongs to one node must have been bound to that node; where
//!   several nodes share the top score (kube-scheduler picks at random) the
//!   real node must be one of them.
//!
//! `SCHEDULER_SPEED_SCALE=<fraction>` shrinks every count (nodes and pods)
//! for a quick check; `SCHEDULER_SPEED_ONLY=<workload name>` runs one
//! workload, `SCHEDULER_SPEED_ONLY='<name>|<name>'` those named.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::serde::{Serialize, de::DeserializeOwned};
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube_scheduler_sim::{ClusterState, Options};
use kube_testbed::{Component, Testbed};
use serde_json::{Value, json};

/// How many API requests are in flight while objects are created.
const CREATE_CONCURRENCY: usize = 32;
/// How long kube-scheduler may take to bind every measured pod.
const BIND_LIMIT: Duration = Duration::from_secs(3600);

/// One of scheduler_perf's shapes.
struct Workload {
    name: &'static str,
    existing: usize,
    measured: usize,
    /// The pod's `spec.affinity` and `spec.topologySpreadConstraints`.
    placement: fn(&str) -> (Value, Value),
}

fn workloads(scale: f64) -> Vec<Workload> {
    let n = |count: usize| ((count as f64 * scale).round() as usize).max(1);
    vec![
        Workload {
            name: "required anti-affinity, hostname",
            existing: n(1_000),
            measured: n(2_000),
            placement: |group| {
                let term = json!({"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"group": group}},
                    "topologyKey": "kubernetes.io/hostname"}]});
                (json!({ "podAntiAffinity": term }), Value::Null)
            },
        },
        Workload {
            name: "required affinity, zone",
            existing: n(5_000),
            measured: n(5_000),
            placement: |group| {
                let term = json!({"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"group": group}},
                    "topologyKey": "topology.kubernetes.io/zone"}]});
                (json!({ "podAffinity": term }), Value::Null)
            },
        },
        Workload {
            name: "topology spread, rack",
            existing: n(1_000),
            measured: n(2_000),
            placement: |group| {
                let spread = json!([{
                    "maxSkew": 1,
                    "topologyKey": "bench.example/rack",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"group": group}}}]);
                (Value::Null, spread)
            },
        },
    ]
}

fn node(i: usize) -> Node {
    let name = format!("node-{i:05}");
    from_json(json!({
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "topology.kubernetes.io/zone": "zone1",
            "bench.example/rack": format!("rack-{:02}", i % 100),
        }},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }))
}

fn pod(namespace: &str, name: &str, group: &str, placement: (Value, Value)) -> Pod {
    let mut spec = json!({
        "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}}}],
    });
    if !placement.0.is_null() {
        spec["affinity"] = placement.0;
    }
    if !placement.1.is_null() {
        spec["topologySpreadConstraints"] = placement.1;
    }
    from_json(json!({
        "metadata": {"name": name, "namespace": namespace, "labels": {"group": group}},
        "spec": spec,
    }))
}

fn from_json<T: DeserializeOwned>(value: Value) -> T {
    match serde_json::from_value(value) {
        Ok(object) => object,
        Err(error) => panic!("a bench object does not parse: {error}"),
    }
}

async fn create_all<K>(api: &Api<K>, objects: Vec<K>) -> Vec<K>
where
    K: kube::Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let post = PostParams::default();
    let created: Result<Vec<K>, kube::Error> = stream::iter(objects)
        .map(|object| {
            let (api, post) = (api.clone(), post.clone());
            async move { api.create(&post, &object).await }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect()
        .await;
    match created {
        Ok(created) => created,
        Err(error) => panic!("creating bench objects: {error}"),
    }
}

/// The sum and count of a Prometheus histogram, over all its label sets.
fn histogram(metrics: &str, name: &str) -> (f64, f64) {
    let value_of = |suffix: &str| -> f64 {
        let series = format!("{name}_{suffix}");
        metrics
            .lines()
            .filter(|line| {
                line.strip_prefix(&series)
                    .is_some_and(|rest| rest.starts_with([' ', '{']))
            })
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    (value_of("sum"), value_of("count"))
}

async fn scheduler_histograms(bed: &Testbed) -> [(f64, f64); 2] {
    let metrics = match bed.scheduler_metrics().await {
        Ok(metrics) => metrics,
        Err(error) => panic!("reading kube-scheduler's metrics: {error}"),
    };
    [
        histogram(&metrics, "scheduler_scheduling_algorithm_duration_seconds"),
        histogram(&metrics, "scheduler_scheduling_attempt_duration_seconds"),
    ]
}

fn signal_scheduler(bed: &Testbed, signal: &str) {
    let Some(pid) = bed.pid(Component::KubeScheduler) else {
        panic!("the bed runs no kube-scheduler");
    };
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        panic!("kill {signal} {pid}: {status:?}");
    }
}

/// Waits until kube-scheduler's cache holds `nodes` nodes: a probe pod that
/// fits nowhere reports `0/<nodes> nodes are available`.
async fn wait_for_nodes(client: &kube::Client, nodes: usize) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let want = format!("0/{nodes} nodes are available");
    for attempt in 0..600 {
        let name = format!("probe-{attempt}");
        let probe: Pod = from_json(json!({
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                     "nodeSelector": {"bench.example/probe": "nowhere"}},
        }));
        if let Err(error) = pods.create(&PostParams::default(), &probe).await {
            panic!("creating the probe pod: {error}");
        }
        let mut message = String::new();
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let Ok(seen) = pods.get(&name).await else {
                continue;
            };
            let condition = seen
                .status
                .and_then(|s| s.conditions)
                .and_then(|c| c.into_iter().find(|c| c.type_ == "PodScheduled"));
            if let Some(condition) = condition {
                message = condition.message.unwrap_or_default();
                break;
            }
        }
        let now = DeleteParams {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        let _ = pods.delete(&name, &now).await;
        if message.starts_with(&want) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("kube-scheduler's cache never held the {nodes} nodes");
}

/// What one workload measured.
struct Row {
    name: &'static str,
    nodes: usize,
    existing: usize,
    measured: usize,
    real_binds_per_second: f64,
    real_algorithm_seconds: f64,
    real_attempt_seconds: f64,
    sim_pods_per_second: f64,
    unique: usize,
    unique_identical: usize,
    ties: usize,
    ties_agreeing: usize,
}

#[allow(clippy::too_many_lines)]
async fn run_workload(
    bed: &Testbed,
    nodes: &[Node],
    namespaces: &Api<Namespace>,
    index: usize,
    workload: &Workload,
) -> Row {
    let client = bed.client();
    let namespace = format!("bench-{index}");
    let group = format!("w{index}");
    create_all(
        namespaces,
        vec![from_json(json!({"metadata": {"name": namespace}}))],
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);

    // Existing pods, bound at creation: as a scheduler would spread them
    // (one per node, wrapping round).
    let existing: Vec<Pod> = (0..workload.existing)
        .map(|i| {
            let mut p = pod(
                &namespace,
                &format!("existing-{i:05}"),
                &group,
                (workload.placement)(&group),
            );
            if let Some(spec) = p.spec.as_mut() {
                spec.node_name = nodes[i % nodes.len()].metadata.name.clone();
            }
            p
        })
        .collect();
    let existing = create_all(&pods, existing).await;

    let before = scheduler_histograms(bed).await;
    signal_scheduler(bed, "-STOP");
    let measured: Vec<Pod> = (0..workload.measured)
        .map(|i| {
            pod(
                &namespace,
                &format!("measured-{i:05}"),
                &group,
                (workload.placement)(&group),
            )
        })
        .collect();
    let created = create_all(&pods, measured).await;
    let version = match pods.list_metadata(&ListParams::default().limit(1)).await {
        Ok(list) => list.metadata.resource_version.unwrap_or_default(),
        Err(error) => panic!("listing pods: {error}"),
    };
    let mut watch = match pods.watch(&WatchParams::default(), &version).await {
        Ok(watch) => watch.boxed(),
        Err(error) => panic!("watching pods: {error}"),
    };
    signal_scheduler(bed, "-CONT");
    let resumed = Instant::now();
    let mut bound: Vec<(String, String)> = Vec::with_capacity(created.len());
    let mut seen = std::collections::BTreeSet::new();
    let mut last_bind = resumed;
    while bound.len() < created.len() {
        let remaining = BIND_LIMIT.saturating_sub(resumed.elapsed());
        let event = match tokio::time::timeout(remaining, watch.next()).await {
            Ok(Some(Ok(event))) => event,
            Ok(Some(Err(error))) => panic!("the pod watch failed: {error}"),
            // kube-apiserver ends a watch after its request timeout: list
            // what was bound meanwhile (in name order: the binding order of
            // those is not known) and watch on from the list.
            Ok(None) => {
                let list = match pods.list(&ListParams::default()).await {
                    Ok(list) => list,
                    Err(error) => panic!("listing pods: {error}"),
                };
                for p in &list.items {
                    let name = p.metadata.name.clone().unwrap_or_default();
                    if let Some(node) = p.spec.as_ref().and_then(|s| s.node_name.clone())
                        && name.starts_with("measured-")
                        && seen.insert(name.clone())
                    {
                        last_bind = Instant::now();
                        bound.push((name, node));
                    }
                }
                let version = list.metadata.resource_version.unwrap_or_default();
                watch = match pods.watch(&WatchParams::default(), &version).await {
                    Ok(watch) => watch.boxed(),
                    Err(error) => panic!("watching pods again: {error}"),
                };
                continue;
            }
            Err(_) => panic!(
                "{}: only {} of {} pods bound after {BIND_LIMIT:?}",
                workload.name,
                bound.len(),
                created.len()
            ),
        };
        if let WatchEvent::Modified(p) = event {
            let name = p.metadata.name.clone().unwrap_or_default();
            if let Some(node) = p.spec.as_ref().and_then(|s| s.node_name.clone())
                && name.starts_with("measured-")
                && seen.insert(name.clone())
            {
                last_bind = Instant::now();
                bound.push((name, node));
            }
        }
    }
    let real_seconds = last_bind.duration_since(resumed).as_secs_f64();
    let after = scheduler_histograms(bed).await;
    let per_pod = |i: usize| {
        let (sum, count) = (after[i].0 - before[i].0, after[i].1 - before[i].1);
        if count > 0.0 { sum / count } else { f64::NAN }
    };

    // The simulator, on the same objects as the API server returned them.
    let all_namespaces = match namespaces.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(error) => panic!("listing namespaces: {error}"),
    };
    let base = match ClusterState::from_snapshot(nodes, &all_namespaces, &existing, true) {
        Ok(state) => state,
        Err(error) => panic!("the simulator refused the snapshot: {error}"),
    };
    let options = Options::default();
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let mut state = base.clone();
        let started = Instant::now();
        let batch = state.place_batch(&created, &options);
        let elapsed = started.elapsed().as_secs_f64();
        match batch {
            Ok(batch) => assert!(
                batch.placements.iter().all(|p| p.node.is_some()),
                "{}: the simulator left a pod pending",
                workload.name
            ),
            Err(error) => panic!("the simulator failed: {error}"),
        }
        best = best.min(elapsed);
    }

    // Decisions, replayed in the real binding order.
    let by_name: BTreeMap<String, &Pod> = created
        .iter()
        .map(|p| (p.metadata.name.clone().unwrap_or_default(), p))
        .collect();
    let mut state = base;
    let (mut unique, mut unique_identical, mut ties, mut ties_agreeing) = (0, 0, 0, 0);
    for (name, node) in &bound {
        let Some(pod) = by_name.get(name) else {
            continue;
        };
        let result = match state.evaluate(pod, &options) {
            Ok(result) => result,
            Err(error) => panic!("the simulator failed on {name}: {error}"),
        };
        let best_total = result
            .feasible
            .iter()
            .filter_map(|n| result.totals.get(n))
            .max()
            .copied();
        let top: Vec<&String> = match best_total {
            None => result.feasible.iter().collect(),
            Some(best) => result
                .feasible
                .iter()
                .filter(|n| result.totals.get(*n) == Some(&best))
                .collect(),
        };
        if top.len() == 1 {
            unique += 1;
            unique_identical += usize::from(top[0] == node);
        } else {
            ties += 1;
            ties_agreeing += usize::from(top.contains(&node));
        }
        let mut placed = (*pod).clone();
        if let Some(spec) = placed.spec.as_mut() {
            spec.node_name = Some(node.clone());
        }
        if let Err(error) = state.add_pod(&placed) {
            panic!("the simulator refused {name} on {node}: {error}");
        }
    }

    // Free the nodes for the next workload.
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    if let Err(error) = pods.delete_collection(&now, &ListParams::default()).await {
        panic!("deleting the pods of {namespace}: {error}");
    }

    Row {
        name: workload.name,
        nodes: nodes.len(),
        existing: workload.existing,
        measured: created.len(),
        real_binds_per_second: created.len() as f64 / real_seconds,
        real_algorithm_seconds: per_pod(0),
        real_attempt_seconds: per_pod(1),
        sim_pods_per_second: created.len() as f64 / best,
        unique,
        unique_identical,
        ties,
        ties_agreeing,
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "| workload (nodes / existing / measured) | real: end-to-end binds/s | real: algorithm ms/pod (pods/s) | real: attempt ms/pod | sim pods/s | sim ÷ real algorithm | decisions: unique top identical | ties: real node among the sim's top |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|");
    for row in rows {
        let algorithm_rate = 1.0 / row.real_algorithm_seconds;
        println!(
            "| {} ({} / {} / {}) | {:.0} | {:.3} ({:.0}) | {:.3} | {:.0} | {:.1}× | {}/{} | {}/{} |",
            row.name,
            row.nodes,
            row.existing,
            row.measured,
            row.real_binds_per_second,
            row.real_algorithm_seconds * 1e3,
            algorithm_rate,
            row.real_attempt_seconds * 1e3,
            row.sim_pods_per_second,
            row.sim_pods_per_second / algorithm_rate,
            row.unique_identical,
            row.unique,
            row.ties_agreeing,
            row.ties,
        );
    }
}

async fn run() {
    let scale = std::env::var("SCHEDULER_SPEED_SCALE")
        .ok()
        .map(|s| match s.trim().parse::<f64>() {
            Ok(v) if v > 0.0 && v <= 1.0 => v,
            _ => panic!("SCHEDULER_SPEED_SCALE={s:?} is not a fraction in (0, 1]"),
        })
        .unwrap_or(1.0);
    let only = std::env::var("SCHEDULER_SPEED_ONLY").ok();
    let percentage = std::env::var("SCHEDULER_SPEED_PERCENTAGE")
        .ok()
        .map(|s| match s.trim().parse::<u8>() {
            Ok(v) if (1..=100).contains(&v) => v,
            _ => panic!("SCHEDULER_SPEED_PERCENTAGE={s:?} is not a percentage in 1..=100"),
        })
        .unwrap_or(100);
    let bed = match Testbed::builder()
        .scheduler_percentage_of_nodes_to_score(percentage)
        .start()
        .await
    {
        Ok(bed) => bed,
        Err(error) => panic!("the test bed did not start: {error}"),
    };
    let client = bed.client();
    let node_count = ((5_000.0 * scale).round() as usize).max(1);
    let started = Instant::now();
    let nodes = create_all(
        &Api::<Node>::all(client.clone()),
        (0..node_count).map(node).collect(),
    )
    .await;
    wait_for_nodes(&client, node_count).await;
    eprintln!(
        "{node_count} nodes created and in kube-scheduler's cache in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut rows = Vec::new();
    for (index, workload) in workloads(scale).iter().enumerate() {
        if only
            .as_deref()
            .is_some_and(|o| !o.split('|').any(|name| name.trim() == workload.name))
        {
            continue;
        }
        let row = run_workload(&bed, &nodes, &namespaces, index, workload).await;
        eprintln!(
            "{}: real {:.0} binds/s, sim {:.0} pods/s",
            row.name, row.real_binds_per_second, row.sim_pods_per_second
        );
        rows.push(row);
    }
    println!(
        "kube-scheduler {} with percentageOfNodesToScore {percentage}",
        bed.versions().kubernetes
    );
    print_table(&rows);
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => panic!("a Tokio runtime: {error}"),
    };
    runtime.block_on(run());
}
