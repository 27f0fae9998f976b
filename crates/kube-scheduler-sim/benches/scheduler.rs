//! Pod placement benchmarks in the shapes of kube-scheduler's scheduler_perf
//! (`test/integration/scheduler_perf/affinity/performance-config.yaml`):
//! the indexed [`ClusterState`] at full size, and the indexed state and the
//! brute-force reference side by side on a smaller subset (baseline ratio),
//! and the reference alone at full size on two measured pods.
//!
//! Nodes carry `status.allocatable` and pods request 10m CPU and 16Mi, so
//! the node-level filters (cordon, taints, ports, resources) run as well.
//!
//! Run: `cargo bench -p kube-scheduler-sim --bench scheduler -- --warm-up-time 1 --measurement-time 3`
//! Throughput is reported in elements/s = pods placed per second.

use std::hint::black_box;
use std::time::Duration;

use kube_scheduler_sim::{ClusterState, DraObjects, Options};

#[path = "../tests/oracle/mod.rs"]
mod oracle;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use oracle as reference;
use serde_json::{Value, json};

fn nodes(n: usize) -> Vec<Node> {
    (0..n)
        .map(|i| {
            // Allocatable large enough for every workload (the zone-affinity
            // one stacks 10,000 pods on one node), so NodeResourcesFit runs
            // on every node and never rejects.
            serde_json::from_value(json!({"metadata": {"name": format!("node-{i}"), "labels": {
                "kubernetes.io/hostname": format!("node-{i}"),
                "topology.kubernetes.io/zone": "zone1",
                "kubernetes.io/os": "linux",
            }}, "status": {"allocatable": {"cpu": "1000", "memory": "1Ti", "pods": "20000"}}}))
            .unwrap()
        })
        .collect()
}

fn namespaces() -> Vec<Namespace> {
    ["sched-0", "sched-1"]
        .iter()
        .map(|n| serde_json::from_value(json!({"metadata": {"name": n}})).unwrap())
        .collect()
}

/// scheduler_perf `pod-with-pod-anti-affinity.yaml`.
fn anti_affinity_pod(ns: &str, i: usize) -> Pod {
    pod(
        ns,
        i,
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": "kubernetes.io/hostname",
        "namespaces": ["sched-0", "sched-1"]}]}}),
    )
}

/// scheduler_perf `pod-with-pod-affinity.yaml`.
fn affinity_pod(ns: &str, i: usize) -> Pod {
    pod(
        ns,
        i,
        json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": "topology.kubernetes.io/zone",
        "namespaces": ["sched-0", "sched-1"]}]}}),
    )
}

/// scheduler_perf `pod-with-preferred-pod-anti-affinity.yaml`.
fn preferred_anti_affinity_pod(ns: &str, i: usize) -> Pod {
    pod(
        ns,
        i,
        json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 1, "podAffinityTerm": {
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": "kubernetes.io/hostname",
        "namespaces": ["sched-0", "sched-1"]}}]}}),
    )
}

fn pod(ns: &str, i: usize, affinity: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": format!("{ns}-pod-{i}"), "namespace": ns, "labels": {"color": "green", "name": "test"}},
        "spec": {"containers": [{"name": "pause", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}], "affinity": affinity}
    }))
    .unwrap()
}

/// Place `init` pods of `make` (namespace sched-0) to build the starting state.
fn initial(
    n_nodes: usize,
    init: usize,
    make: fn(&str, usize) -> Pod,
) -> (Vec<Node>, Vec<Pod>, ClusterState) {
    let nodes = nodes(n_nodes);
    let mut state = ClusterState::new(&nodes, &namespaces(), &[], true);
    let mut placed = Vec::with_capacity(init);
    for i in 0..init {
        let p = make("sched-0", i);
        let node = state
            .place(&p, &Options::default())
            .unwrap()
            .node
            .expect("init pod fits");
        let mut bound = p;
        bound.spec.as_mut().unwrap().node_name = Some(node);
        placed.push(bound);
    }
    (nodes, placed, state)
}

/// Times `place_batch` of `pods` on a fresh copy of `state`: every pod
/// must find a node.
fn bench_placement(c: &mut Criterion, name: &str, state: &ClusterState, pods: &[Pod]) {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .throughput(Throughput::Elements(pods.len() as u64));
    g.bench_function("indexed", |b| {
        b.iter_batched(
            || state.clone(),
            |mut s| {
                let r = s.place_batch(pods, &Options::default()).unwrap();
                assert!(r.placements.iter().all(|p| p.node.is_some()));
                black_box(r)
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn bench_indexed(
    c: &mut Criterion,
    name: &str,
    n_nodes: usize,
    init: usize,
    measured: usize,
    make: fn(&str, usize) -> Pod,
) {
    let (_, _, state) = initial(n_nodes, init, make);
    let pods: Vec<Pod> = (0..measured).map(|i| make("sched-1", i)).collect();
    bench_placement(c, name, &state, &pods);
}

/// Indexed vs brute force on the same (small) shape.
fn bench_baseline(
    c: &mut Criterion,
    name: &str,
    n_nodes: usize,
    init: usize,
    measured: usize,
    make: fn(&str, usize) -> Pod,
) {
    let (nodes, placed, state) = initial(n_nodes, init, make);
    let ns = namespaces();
    let pods: Vec<Pod> = (0..measured).map(|i| make("sched-1", i)).collect();
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .throughput(Throughput::Elements(measured as u64));
    g.bench_function("indexed", |b| {
        b.iter_batched(
            || state.clone(),
            |mut s| black_box(s.place_batch(&pods, &Options::default()).unwrap()),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("reference", |b| {
        b.iter_batched(
            || placed.clone(),
            |mut existing| {
                for p in &pods {
                    let r = reference::evaluate(&nodes, &ns, &existing, p, &Options::default());
                    let mut bound = p.clone();
                    bound.spec.as_mut().unwrap().node_name = Some(r.selected.expect("fits"));
                    existing.push(bound);
                }
                black_box(existing)
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// The brute-force reference alone at full size, on a few measured pods
/// (it is O(nodes × placed pods) per pod): the same-run baseline of the
/// full-size workloads, compared as pods per second.
fn bench_reference_full(
    c: &mut Criterion,
    name: &str,
    n_nodes: usize,
    init: usize,
    measured: usize,
    make: fn(&str, usize) -> Pod,
) {
    let (nodes, placed, _) = initial(n_nodes, init, make);
    let ns = namespaces();
    let pods: Vec<Pod> = (0..measured).map(|i| make("sched-1", i)).collect();
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .throughput(Throughput::Elements(measured as u64));
    g.bench_function("reference", |b| {
        b.iter_batched(
            || placed.clone(),
            |mut existing| {
                for p in &pods {
                    let r = reference::evaluate(&nodes, &ns, &existing, p, &Options::default());
                    let mut bound = p.clone();
                    bound.spec.as_mut().unwrap().node_name = Some(r.selected.expect("fits"));
                    existing.push(bound);
                }
                black_box(existing)
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// Dynamic Resource Allocation: `n_nodes` nodes with 8 GPUs each, published
/// in one ResourceSlice per node, a DeviceClass selecting the driver with
/// CEL, and `measured` pods, each with a claim from a template asking for
/// one GPU of at least 40 GiB (a request selector on capacity), placed one
/// after another (every placement allocates a device).
fn bench_dra(c: &mut Criterion, name: &str, n_nodes: usize, measured: usize) {
    let nodes = nodes(n_nodes);
    let gpu = |i: usize| {
        json!({"name": format!("gpu-{i}"),
               "attributes": {"model": {"string": "a100"}, "numa": {"int": i % 2}},
               "capacity": {"memory": {"value": "80Gi"}}})
    };
    let slices = (0..n_nodes)
        .map(|n| {
            serde_json::from_value(json!({
                "metadata": {"name": format!("node-{n}-gpus")},
                "spec": {"driver": "gpu.example.com", "nodeName": format!("node-{n}"),
                         "devices": (0..8).map(gpu).collect::<Vec<_>>(),
                         "pool": {"name": format!("node-{n}"), "generation": 1, "resourceSliceCount": 1}},
            }))
            .unwrap()
        })
        .collect();
    let objects = DraObjects {
        device_classes: vec![serde_json::from_value(json!({
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]},
        }))
        .unwrap()],
        claim_templates: vec![serde_json::from_value(json!({
            "metadata": {"name": "one-gpu", "namespace": "sched-1"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu",
                "selectors": [{"cel": {"expression":
                    "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"}}]}}]}}},
        }))
        .unwrap()],
        ..DraObjects::default()
    };
    let mut state = ClusterState::new(&nodes, &namespaces(), &[], true);
    state.set_dra(&DraObjects { slices, ..objects });
    let pods: Vec<Pod> = (0..measured)
        .map(|i| {
            serde_json::from_value(json!({
                "metadata": {"name": format!("sched-1-pod-{i}"), "namespace": "sched-1"},
                "spec": {"containers": [{"name": "pause", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
                         "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]},
            }))
            .unwrap()
        })
        .collect();
    bench_placement(c, name, &state, &pods);
}

fn benches(c: &mut Criterion) {
    bench_dra(c, "SchedulingDRA/1000Nodes_8Devices_5000Pods", 1000, 5000);
    bench_indexed(
        c,
        "SchedulingPodAntiAffinity/5000Nodes_1000Init_2000Pods",
        5000,
        1000,
        2000,
        anti_affinity_pod,
    );
    bench_indexed(
        c,
        "SchedulingPodAffinity/5000Nodes_5000Init_5000Pods",
        5000,
        5000,
        5000,
        affinity_pod,
    );
    bench_indexed(
        c,
        "SchedulingPreferredPodAntiAffinity/5000Nodes_5000Init_5000Pods",
        5000,
        5000,
        5000,
        preferred_anti_affinity_pod,
    );
    bench_reference_full(
        c,
        "Reference_PodAntiAffinity/5000Nodes_1000Init_2Pods",
        5000,
        1000,
        2,
        anti_affinity_pod,
    );
    bench_reference_full(
        c,
        "Reference_PodAffinity/5000Nodes_5000Init_2Pods",
        5000,
        5000,
        2,
        affinity_pod,
    );
    bench_baseline(
        c,
        "Baseline_PodAntiAffinity/500Nodes_100Init_50Pods",
        500,
        100,
        50,
        anti_affinity_pod,
    );
    bench_baseline(
        c,
        "Baseline_PodAffinity/500Nodes_100Init_50Pods",
        500,
        100,
        50,
        affinity_pod,
    );
    bench_baseline(
        c,
        "Baseline_PreferredPodAntiAffinity/500Nodes_100Init_50Pods",
        500,
        100,
        50,
        preferred_anti_affinity_pod,
    );
}

criterion_group! {
    name = scheduler;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(scheduler);
