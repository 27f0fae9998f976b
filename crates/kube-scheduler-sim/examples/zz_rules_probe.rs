//! Throwaway probe (not committed): node affinity, nodeSelector, taints and
//! cordons on every node, for callgrind instruction counts.
use k8s_openapi::api::core::v1::{Node, Pod};
use kube_scheduler_sim::{ClusterState, Options};
use serde_json::json;

fn main() {
    let n = 1000;
    let nodes: Vec<Node> = (0..n)
        .map(|i| {
            let zone = ["a", "b", "c"][i % 3];
            let pool = ["web", "db", "batch", "gpu"][i % 4];
            let mut taints = vec![];
            if i % 3 == 0 {
                taints.push(json!({"key": "dedicated", "value": "db", "effect": "NoSchedule"}));
            }
            if i % 5 == 0 {
                taints.push(json!({"key": "soft", "effect": "PreferNoSchedule"}));
            }
            serde_json::from_value(json!({"metadata": {"name": format!("node-{i}"), "labels": {
                "kubernetes.io/hostname": format!("node-{i}"), "zone": zone, "pool": pool,
                "cores": (i % 64).to_string(), "kubernetes.io/os": "linux"}},
                "spec": {"taints": taints, "unschedulable": i % 17 == 0},
                "status": {"allocatable": {"cpu": "1000", "memory": "1Ti", "pods": "20000"}}}))
            .unwrap()
        })
        .collect();
    let mut state = ClusterState::new(&nodes, &[], &[], true);
    let pods: Vec<Pod> = (0..400)
        .map(|i| {
            serde_json::from_value(json!({
                "metadata": {"name": format!("p-{i}"), "namespace": "default", "labels": {"app": "x"}},
                "spec": {
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [
                        {"key": "dedicated", "operator": "Equal", "value": if i % 2 == 0 {"db"} else {"web"}, "effect": "NoSchedule"},
                        {"key": "other", "operator": "Exists"}
                    ],
                    "affinity": {"nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]},
                                                  {"key": "cores", "operator": "Gt", "values": ["3"]}]},
                            {"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["gpu"]}],
                             "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-7"]}]}
                        ]},
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 5, "preference": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["web"]}]}},
                            {"weight": 2, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}
                        ]
                    }}
                }
            }))
            .unwrap()
        })
        .collect();
    let r = state.place_batch(&pods, &Options::default()).unwrap();
    let placed = r.placements.iter().filter(|p| p.node.is_some()).count();
    println!("placed {placed}");
}
