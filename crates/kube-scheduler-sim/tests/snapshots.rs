//! Snapshots of what users read, on a Tacker-like cluster:
//! six workers on three compute servers labelled `kubernetes.io/zone`
//! (Tacker's choice of key), plus one worker whose label was never set.

mod oracle;
mod support;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube_scheduler_sim::{ClusterState, Options, diagnose, schedule};
use serde_json::json;
use support::*;

fn tacker_nodes() -> Vec<Node> {
    vec![
        node(
            "worker11",
            &[
                ("kubernetes.io/hostname", "worker11"),
                ("kubernetes.io/zone", "Compute01"),
            ],
        ),
        node(
            "worker12",
            &[
                ("kubernetes.io/hostname", "worker12"),
                ("kubernetes.io/zone", "Compute01"),
            ],
        ),
        node(
            "worker21",
            &[
                ("kubernetes.io/hostname", "worker21"),
                ("kubernetes.io/zone", "Compute02"),
            ],
        ),
        node(
            "worker22",
            &[
                ("kubernetes.io/hostname", "worker22"),
                ("kubernetes.io/zone", "Compute02"),
            ],
        ),
        node(
            "worker31",
            &[
                ("kubernetes.io/hostname", "worker31"),
                ("kubernetes.io/zone", "Compute03"),
            ],
        ),
        node(
            "worker32",
            &[
                ("kubernetes.io/hostname", "worker32"),
                ("kubernetes.io/zone", "Compute03"),
            ],
        ),
        // Scaled out after a live migration; the MgmtDriver never labelled it (D.2).
        node("worker41", &[("kubernetes.io/hostname", "worker41")]),
    ]
}

/// The Tacker sample: required anti-affinity on the compute-server key.
fn store_replica(i: usize) -> Pod {
    pod(
        "default",
        &format!("store-{i}"),
        &[("app", "store")],
        None,
        json!({
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["store"]}]},
                "topologyKey": "kubernetes.io/zone"
            }]}}
        }),
    )
}

/// The recommended alternative: spread over compute servers, maxSkew 1.
fn spread_replica(i: usize) -> Pod {
    pod(
        "default",
        &format!("store-{i}"),
        &[("app", "store")],
        None,
        json!({
            "topologySpreadConstraints": [{
                "maxSkew": 1, "topologyKey": "kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "store"}}
            }]
        }),
    )
}

#[test]
fn tacker_required_anti_affinity_batch() {
    let mut state = ClusterState::new(&tacker_nodes(), &[], &[], true);
    let pods: Vec<Pod> = (0..5).map(store_replica).collect();
    let result = state.place_batch(&pods, &Options::default()).unwrap();
    // The fourth and fifth replicas land on the unlabelled worker: a node
    // without the topologyKey is never rejected by anti-affinity (C.13, D.2).
    insta::assert_yaml_snapshot!(result);
}

#[test]
fn tacker_required_anti_affinity_with_more_replicas_than_servers_leaves_pods_pending() {
    let nodes: Vec<Node> = tacker_nodes().into_iter().take(6).collect();
    let mut state = ClusterState::new(&nodes, &[], &[], true);
    let pods: Vec<Pod> = (0..4).map(store_replica).collect();
    let result = state.place_batch(&pods, &Options::default()).unwrap();
    insta::assert_yaml_snapshot!(result);
}

#[test]
fn tacker_topology_spread_batch() {
    let mut state = ClusterState::new(&tacker_nodes(), &[], &[], true);
    let pods: Vec<Pod> = (0..5).map(spread_replica).collect();
    let result = state.place_batch(&pods, &Options::default()).unwrap();
    insta::assert_yaml_snapshot!(result);
}

#[test]
fn tacker_schedule_result_for_the_third_replica() {
    let mut pods = vec![
        {
            let mut p = store_replica(0);
            p.spec.as_mut().unwrap().node_name = Some("worker11".into());
            p
        },
        {
            let mut p = store_replica(1);
            p.spec.as_mut().unwrap().node_name = Some("worker21".into());
            p
        },
    ];
    let mut third = store_replica(2);
    third.spec.as_mut().unwrap().affinity.as_mut().unwrap().pod_affinity = Some(serde_json::from_value(json!({
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}}]
    })).unwrap());
    pods.push(third);
    pods.push(pod(
        "default",
        "cache-0",
        &[("app", "cache")],
        Some("worker32"),
        json!({}),
    ));
    let r = schedule(
        &tacker_nodes(),
        &[],
        &pods,
        "default",
        "store-2",
        &Options::default(),
    )
    .unwrap();
    insta::assert_json_snapshot!(r);
}

#[test]
fn tacker_diagnose_messages() {
    let placed = {
        let mut p = store_replica(0);
        p.spec.as_mut().unwrap().node_name = Some("worker11".into());
        p
    };
    let state = ClusterState::new(&tacker_nodes(), &[], &[placed], true);
    let out: Vec<_> = ["worker12", "worker21", "worker41"]
        .iter()
        .map(|n| diagnose(&state, &store_replica(1), n, &Options::default()).unwrap())
        .collect();
    let plain: Vec<_> = ["worker12"]
        .iter()
        .map(|n| {
            diagnose(
                &state,
                &pod(
                    "default",
                    "web-0",
                    &[("app", "store")],
                    None,
                    json!({"nodeSelector": {"kubernetes.io/zone": "Compute02"}}),
                ),
                n,
                &Options::default(),
            )
            .unwrap()
        })
        .collect();
    let spread = vec![
        diagnose(&state, &spread_replica(1), "worker41", &Options::default()).unwrap(),
        diagnose(&state, &spread_replica(1), "worker12", &Options::default()).unwrap(),
    ];
    let symmetric = diagnose(
        &state,
        &pod("default", "other", &[("app", "store")], None, json!({})),
        "worker12",
        &Options::default(),
    )
    .unwrap();
    insta::assert_yaml_snapshot!((out, plain, spread, symmetric));
}
