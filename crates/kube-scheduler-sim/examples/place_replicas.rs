//! Place a 5-replica set with required anti-affinity on the physical-host
//! label over a small cluster (one worker unlabelled), then guarded by a
//! node affinity `Exists` on that label, then with a topology spread
//! constraint, and print where each replica lands and why.
//!
//! Run: `cargo run -p kube-scheduler-sim --example place_replicas`

use k8s_openapi::api::core::v1::{Node, Pod};
use kube_scheduler_sim::{ClusterState, Options, Placement, diagnose};
use serde_json::{Value, json};

const HOST_KEY: &str = "node.cluster.x-k8s.io/esxi-host";

fn node(name: &str, host: Option<&str>) -> Node {
    let mut labels = json!({"kubernetes.io/hostname": name});
    if let Some(h) = host {
        labels[HOST_KEY] = json!(h);
    }
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
        .expect("valid node")
}

fn replica(i: usize, spec: &Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": format!("db-{i}"), "namespace": "prod", "labels": {"app": "db"}},
        "spec": spec,
    }))
    .expect("valid pod")
}

fn print(title: &str, placements: &[Placement]) {
    println!("{title}");
    for p in placements {
        match (&p.node, &p.reason) {
            (Some(n), _) => println!("  {:<10} -> {n}", p.pod),
            (None, Some(r)) => println!("  {:<10} pending: {r}", p.pod),
            (None, None) => println!("  {:<10} pending", p.pod),
        }
    }
}

fn main() {
    // Six workers on three physical hosts; worker-7 was never labelled.
    let nodes = vec![
        node("worker-1", Some("esx-a")),
        node("worker-2", Some("esx-a")),
        node("worker-3", Some("esx-b")),
        node("worker-4", Some("esx-b")),
        node("worker-5", Some("esx-c")),
        node("worker-6", Some("esx-c")),
        node("worker-7", None),
    ];
    let opts = Options::default();

    let anti = json!({"containers": [], "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOST_KEY}]}}});
    let mut state = ClusterState::new(&nodes, &[], &[], true);
    let pods: Vec<Pod> = (0..5).map(|i| replica(i, &anti)).collect();
    match state.place_batch(&pods, &opts) {
        Ok(r) => print("required podAntiAffinity on the host key:", &r.placements),
        Err(e) => eprintln!("error: {e}"),
    }
    if let Some(d) = diagnose(&state, &replica(9, &anti), "worker-2", &opts) {
        println!("  why not worker-2 for another replica? {}", d.explanation);
    }

    // Same, but only on nodes that carry the host label: closes the hole.
    let mut guarded = anti.clone();
    guarded["affinity"]["nodeAffinity"] = json!({"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": HOST_KEY, "operator": "Exists"}]}]}});
    let mut state = ClusterState::new(&nodes, &[], &[], true);
    let pods: Vec<Pod> = (0..5).map(|i| replica(i, &guarded)).collect();
    match state.place_batch(&pods, &opts) {
        Ok(r) => print(
            "required podAntiAffinity + nodeAffinity `Exists` on the host key:",
            &r.placements,
        ),
        Err(e) => eprintln!("error: {e}"),
    }

    let spread = json!({"containers": [], "topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": HOST_KEY, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "db"}}}]});
    let mut state = ClusterState::new(&nodes, &[], &[], true);
    let pods: Vec<Pod> = (0..5).map(|i| replica(i, &spread)).collect();
    match state.place_batch(&pods, &opts) {
        Ok(r) => print(
            "topologySpreadConstraints maxSkew 1 on the host key:",
            &r.placements,
        ),
        Err(e) => eprintln!("error: {e}"),
    }
}
