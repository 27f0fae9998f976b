//! Property tests: the indexed evaluator against the brute-force reference
//! on random clusters, incremental AddPod/RemovePod, batch placement.

mod oracle;
mod support;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube_scheduler_sim::{ClusterState, KubernetesVersion, Options, capacity_copy};
use oracle as reference;
use proptest::prelude::*;
use serde_json::{Value, json};

const KEYS: &[&str] = &["kubernetes.io/hostname", "zone", "rack"];

fn selector() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => Just(json!({})),
        3 => prop::sample::select(vec!["web", "db"]).prop_map(|v| json!({"matchLabels": {"app": v}})),
        2 => (prop::sample::select(vec!["In", "NotIn"]), prop::sample::subsequence(vec!["web", "db", "cache"], 1..3))
            .prop_map(|(op, vals)| json!({"matchExpressions": [{"key": "app", "operator": op, "values": vals}]})),
        1 => prop::sample::select(vec!["Exists", "DoesNotExist"]).prop_map(|op| json!({"matchExpressions": [{"key": "tier", "operator": op}]})),
    ]
}

fn term() -> impl Strategy<Value = Value> {
    (
        selector(),
        prop_oneof![3 => Just(None), 1 => Just(Some(vec!["a"])), 1 => Just(Some(vec!["a", "b"]))],
        prop_oneof![3 => Just(Value::Null), 1 => Just(json!({})), 1 => Just(json!({"matchLabels": {"team": "x"}}))],
        prop::sample::select(KEYS.to_vec()),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(sel, nss, nssel, key, mlk)| {
            let mut t = json!({"topologyKey": key});
            if !sel.is_null() {
                t["labelSelector"] = sel;
            }
            if let Some(n) = nss {
                t["namespaces"] = json!(n);
            }
            if !nssel.is_null() {
                t["namespaceSelector"] = nssel;
            }
            if mlk {
                t["matchLabelKeys"] = json!(["tier"]);
            }
            t
        })
}

fn weighted_terms() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(
        (1..10i32, term()).prop_map(|(w, t)| json!({"weight": w, "podAffinityTerm": t})),
        0..2,
    )
}

fn affinity() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(term(), 0..2),
        prop::collection::vec(term(), 0..2),
        weighted_terms(),
        weighted_terms(),
    )
        .prop_map(|(ra, raa, pa, paa)| {
            json!({
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ra, "preferredDuringSchedulingIgnoredDuringExecution": pa},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": raa, "preferredDuringSchedulingIgnoredDuringExecution": paa},
            })
        })
}

fn labels() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop::sample::select(vec!["web", "db", "cache"])),
        prop::option::of(prop::sample::select(vec!["f", "b"])),
    )
        .prop_map(|(app, tier)| {
            let mut m = serde_json::Map::new();
            if let Some(a) = app {
                m.insert("app".into(), json!(a));
            }
            if let Some(t) = tier {
                m.insert("tier".into(), json!(t));
            }
            Value::Object(m)
        })
}

fn pod_json(
    name: String,
    ns: &str,
    labels: Value,
    node: Option<String>,
    affinity: Value,
    extra: Value,
) -> Pod {
    let mut spec = json!({"containers": [], "affinity": affinity});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    let mut status = json!({});
    if let Value::Object(m) = extra {
        for (k, v) in m {
            if k == "__status" {
                status = v;
            } else {
                spec[k] = v;
            }
        }
    }
    serde_json::from_value(
        json!({"metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": spec, "status": status}),
    )
    .unwrap()
}

fn incoming_extra() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop::sample::select(vec!["z1", "z2"])),
        prop::option::of((1..5i32, prop::sample::subsequence(vec!["z1", "z2", "z3"], 1..3))),
        prop::option::of((0..3i32, prop::sample::select(KEYS.to_vec()), selector(), prop::option::of(1..4i32), any::<bool>(), any::<bool>())),
        any::<bool>(),
    )
        .prop_map(|(ns_zone, pref, spread, tolerate)| {
            let mut extra = json!({});
            if let Some(z) = ns_zone {
                extra["nodeSelector"] = json!({"zone": z});
            }
            if let Some((w, zones)) = pref {
                extra["__pref"] = json!([{"weight": w, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": zones}]}}]);
            }
            if tolerate {
                extra["tolerations"] = json!([{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]);
            }
            if let Some((skew, key, sel, min_domains, honor_taints, ignore_affinity)) = spread {
                let mut c = json!({"maxSkew": skew.max(1), "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule"});
                if !sel.is_null() {
                    c["labelSelector"] = sel;
                }
                if let Some(m) = min_domains {
                    c["minDomains"] = json!(m);
                }
                if honor_taints {
                    c["nodeTaintsPolicy"] = json!("Honor");
                }
                if ignore_affinity {
                    c["nodeAffinityPolicy"] = json!("Ignore");
                }
                extra["topologySpreadConstraints"] = json!([c]);
            }
            extra
        })
}

/// A node's cordon, taints, allocatable and declared features (the
/// node-level filters).
fn node_extra() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec![
            vec![],
            vec!["RestartAllContainersOnContainerExits"],
            vec![
                "ExtendWebSocketsToKubelet",
                "UserNamespacesHostNetworkSupport",
            ],
            vec![
                "RestartAllContainersOnContainerExits",
                "UserNamespacesHostNetworkSupport",
            ],
        ]),
        prop::bool::weighted(0.15),
        prop::sample::select(vec!["", "NoExecute", "PreferNoSchedule"]),
        prop::option::weighted(
            0.7,
            (
                prop::sample::select(vec!["500m", "1", "2"]),
                prop::sample::select(vec!["1Gi", "2Gi"]),
                1..4i32,
                prop::option::of(0..3i32),
            ),
        ),
    )
        .prop_map(|(features, cordoned, extra_taint, allocatable)| {
            let mut v = json!({"spec": {}, "status": {}});
            if !features.is_empty() {
                v["status"]["declaredFeatures"] = json!(features);
            }
            if cordoned {
                v["spec"]["unschedulable"] = json!(true);
            }
            if !extra_taint.is_empty() {
                v["spec"]["taints"] = json!([{"key": "gone", "value": "x", "effect": extra_taint}]);
            }
            if let Some((cpu, memory, pods, gpu)) = allocatable {
                let mut a = json!({"cpu": cpu, "memory": memory, "pods": pods.to_string()});
                if let Some(g) = gpu {
                    a["example.com/gpu"] = json!(g.to_string());
                }
                v["status"]["allocatable"] = a;
            }
            v
        })
}

/// Requests and host ports of a pod (NodeResourcesFit, NodePorts): a main
/// container, up to two init containers (sidecars or not), overhead and a
/// pod-level CPU request.
fn resources_extra() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["", "100m", "500m", "1", "1500m"]),
        prop::sample::select(vec!["", "512Mi", "1Gi"]),
        prop::bool::weighted(0.2),
        prop::collection::vec((any::<bool>(), prop::sample::select(vec!["200m", "900m"])), 0..3),
        prop::option::weighted(0.3, (prop::sample::select(vec![80, 81]), prop::sample::select(vec!["", "10.0.0.1", "10.0.0.2", "0.0.0.0"]), prop::sample::select(vec!["", "TCP", "UDP"]))),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.1),
        prop::option::weighted(0.3, resize_status()),
        (prop::bool::weighted(0.15), prop::bool::weighted(0.1)),
    )
        .prop_map(|(cpu, memory, gpu, inits, port, overhead, pod_level, resize, (restart_all, userns))| {
            let mut requests = json!({});
            if !cpu.is_empty() {
                requests["cpu"] = json!(cpu);
            }
            if !memory.is_empty() {
                requests["memory"] = json!(memory);
            }
            if gpu {
                requests["example.com/gpu"] = json!("1");
            }
            let mut main = json!({"name": "main", "resources": {"requests": requests}});
            if restart_all {
                main["restartPolicyRules"] = json!([{"action": "RestartAllContainers",
                    "exitCodes": {"operator": "In", "values": [1]}}]);
            }
            if let Some((port, ip, proto)) = port {
                let mut p = json!({"containerPort": 8080, "hostPort": port});
                if !ip.is_empty() {
                    p["hostIP"] = json!(ip);
                }
                if !proto.is_empty() {
                    p["protocol"] = json!(proto);
                }
                main["ports"] = json!([p]);
            }
            let mut v = json!({"containers": [main]});
            let inits: Vec<Value> = inits
                .into_iter()
                .enumerate()
                .map(|(i, (sidecar, cpu))| {
                    let mut c = json!({"name": format!("init{i}"), "resources": {"requests": {"cpu": cpu}}});
                    if sidecar {
                        c["restartPolicy"] = json!("Always");
                    }
                    c
                })
                .collect();
            if !inits.is_empty() {
                v["initContainers"] = json!(inits);
            }
            if overhead {
                v["overhead"] = json!({"cpu": "100m"});
            }
            if pod_level {
                v["resources"] = json!({"requests": {"cpu": "300m"}});
            }
            if userns {
                v["hostNetwork"] = json!(true);
                v["hostUsers"] = json!(false);
            }
            if let Some(status) = resize {
                v["__status"] = status;
            }
            v
        })
}

/// The status of a pod resizing in place (C.75): the allocated and
/// actuated CPU of the main container and of the first init container,
/// the pod's own, and a `PodResizePending` condition.
fn resize_status() -> impl Strategy<Value = Value> {
    let cpu = || prop::sample::select(vec!["", "100m", "700m", "1200m"]);
    let container = |name: &'static str| {
        (cpu(), cpu(), prop::bool::weighted(0.7)).prop_map(move |(allocated, actuated, present)| {
            let mut status = json!({"name": name, "image": "x", "imageID": "", "ready": true,
                "restartCount": 0});
            if !allocated.is_empty() {
                status["allocatedResources"] = json!({"cpu": allocated});
            }
            if !actuated.is_empty() {
                status["resources"] = json!({"requests": {"cpu": actuated}});
            }
            present.then_some(status)
        })
    };
    (
        container("main"),
        container("init0"),
        prop::option::weighted(0.3, (cpu(), cpu())),
        prop::sample::select(vec!["", "Infeasible", "Deferred"]),
    )
        .prop_map(|(main, init, pod, pending)| {
            let mut status = json!({"containerStatuses": main.into_iter().collect::<Vec<_>>(),
                "initContainerStatuses": init.into_iter().collect::<Vec<_>>()});
            if let Some((allocated, actuated)) = pod {
                if !allocated.is_empty() {
                    status["allocatedResources"] = json!({"cpu": allocated});
                }
                status["resources"] = if actuated.is_empty() {
                    json!({})
                } else {
                    json!({"requests": {"cpu": actuated}})
                };
            }
            if !pending.is_empty() {
                status["conditions"] = json!([{"type": "PodResizePending", "status": "True",
                    "reason": pending}]);
            }
            status
        })
}

/// Tolerations of the incoming pod, and sometimes a `spec.nodeName`.
fn tolerations_extra() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec![
            json!([]),
            json!([{"key": "gone", "operator": "Exists"}]),
            json!([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]),
            json!([{"operator": "Exists"}]),
            json!([{"key": "gone", "operator": "", "value": "x"}]),
            json!([{"operator": "Equal", "value": "x"}]),
        ]),
        prop::option::weighted(0.1, prop::sample::select(vec!["n0", "n1"])),
    )
        .prop_map(|(tolerations, node_name)| {
            let mut v = json!({"tolerations": tolerations});
            if let Some(n) = node_name {
                v["nodeName"] = json!(n);
            }
            v
        })
}

/// Merges `extra` (objects only) into `base`, concatenating `tolerations`.
fn merge(base: &mut Value, extra: Value) {
    if let Value::Object(m) = extra {
        for (k, v) in m {
            match (base.get_mut(&k), v) {
                (Some(Value::Array(a)), Value::Array(b)) if k == "tolerations" => a.extend(b),
                (Some(Value::Object(a)), Value::Object(b)) => a.extend(b),
                (_, v) => base[k] = v,
            }
        }
    }
}

#[derive(Debug, Clone)]
struct Cluster {
    nodes: Vec<Node>,
    namespaces: Vec<Namespace>,
    pods: Vec<Pod>,
    incoming: Pod,
    opts: Options,
}

fn cluster() -> impl Strategy<Value = Cluster> {
    let node = (
        prop::bool::weighted(0.9),
        prop::option::of(prop::sample::select(vec!["z1", "z2", "z3"])),
        prop::option::of(prop::sample::select(vec!["r1", "r2"])),
        prop::bool::weighted(0.25),
    );
    let nodes = prop::collection::vec(node, 1..7);
    let ns_labels =
        prop::collection::vec(prop::option::of(prop::sample::select(vec!["x", "y"])), 3);
    let existing = prop::collection::vec(
        (
            labels(),
            prop::sample::select(vec!["a", "b", "d"]),
            0..8usize,
            prop::option::weighted(0.6, affinity()),
            prop::bool::weighted(0.15),
            (prop::bool::weighted(0.2), prop::sample::select(vec![0, 10])),
        ),
        0..10,
    );
    let incoming = (
        labels(),
        prop::sample::select(vec!["a", "b", "d"]),
        affinity(),
        incoming_extra(),
    );
    let opts = (
        0..3i64,
        any::<bool>(),
        any::<bool>(),
        0..KubernetesVersion::ALL.len(),
    );
    let node_extras = prop::collection::vec(node_extra(), 7);
    let pod_extras = prop::collection::vec(resources_extra(), 10);
    let incoming_extras = (
        resources_extra(),
        tolerations_extra(),
        (
            prop::option::weighted(0.2, 0..8usize),
            prop::sample::select(vec![0, 10]),
        ),
    );
    (
        nodes,
        ns_labels,
        existing,
        incoming,
        opts,
        node_extras,
        pod_extras,
        incoming_extras,
    )
        .prop_map(
        |(nodes, ns_labels, existing, incoming, opts, node_extras, pod_extras, incoming_extras)| {
            let n = nodes.len();
            let nodes: Vec<Node> = nodes
                .into_iter()
                .enumerate()
                .map(|(i, (host, zone, rack, tainted))| {
                    let mut l = serde_json::Map::new();
                    if host {
                        l.insert("kubernetes.io/hostname".into(), json!(format!("n{i}")));
                    }
                    if let Some(z) = zone {
                        l.insert("zone".into(), json!(z));
                    }
                    if let Some(r) = rack {
                        l.insert("rack".into(), json!(r));
                    }
                    let mut n = json!({"metadata": {"name": format!("n{i}"), "labels": l}, "spec": {"taints": if tainted { json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]) } else { json!([]) }}});
                    let mut extra = node_extras[i].clone();
                    if let (Some(Value::Array(a)), Some(Value::Array(b))) = (
                        n["spec"].get_mut("taints"),
                        extra["spec"].as_object_mut().and_then(|s| s.remove("taints")),
                    ) {
                        a.extend(b);
                    }
                    merge(&mut n, extra);
                    serde_json::from_value(n).unwrap()
                })
                .collect();
            let namespaces = ["a", "b", "c"]
                .iter()
                .zip(ns_labels)
                .map(|(name, team)| {
                    let labels = team.map_or(json!({}), |t| json!({"team": t}));
                    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
                        .unwrap()
                })
                .collect();
            let pods = existing
                .into_iter()
                .enumerate()
                .map(|(i, (labels, ns, node, aff, terminating, (nominated, priority)))| {
                    // index n (and above) = a node that does not exist (ignored, 0.1)
                    let node_name = if node < n {
                        format!("n{node}")
                    } else {
                        "ghost".to_owned()
                    };
                    let mut p = pod_json(
                        format!("e{i}"),
                        ns,
                        labels,
                        (!nominated).then(|| node_name.clone()),
                        aff.unwrap_or(Value::Null),
                        pod_extras[i].clone(),
                    );
                    // A pending pod nominated to its node holds room there (C.71).
                    if nominated {
                        p.status.get_or_insert_default().nominated_node_name = Some(node_name);
                    }
                    p.spec.get_or_insert_default().priority = Some(priority);
                    if terminating {
                        p.metadata.deletion_timestamp =
                            Some(serde_json::from_value(json!("2026-01-01T00:00:00Z")).unwrap());
                    }
                    p
                })
                .collect();
            let (labels, ns, mut aff, mut extra) = incoming;
            if let Some(p) = extra.as_object_mut().and_then(|m| m.remove("__pref")) {
                aff["nodeAffinity"] = json!({"preferredDuringSchedulingIgnoredDuringExecution": p});
            }
            let (resources, tolerations, (nominated, priority)) = incoming_extras;
            merge(&mut extra, resources);
            merge(&mut extra, tolerations);
            let mut incoming = pod_json("incoming".into(), ns, labels, None, aff, extra);
            incoming.spec.get_or_insert_default().priority = Some(priority);
            if let Some(node) = nominated {
                incoming.status.get_or_insert_default().nominated_node_name =
                    Some(format!("n{node}"));
            }
            let opts = Options {
                hard_pod_affinity_weight: opts.0,
                ignore_preferred_terms_of_existing_pods: opts.1,
                score_all_nodes: opts.2,
                merge_match_label_keys: true,
                added_affinity: None,
                kubernetes_version: KubernetesVersion::ALL[opts.3],
            };
            Cluster {
                nodes,
                namespaces,
                pods,
                incoming,
                opts,
            }
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Filter verdicts and messages, raw and normalised scores and the
    /// selected node are identical for both evaluators.
    #[test]
    fn indexed_evaluator_equals_brute_force_reference_on_random_clusters(c in cluster()) {
        let state = ClusterState::for_options(&c.nodes, &c.namespaces, &c.pods, &c.opts).unwrap();
        let fast = state.evaluate(&c.incoming, &c.opts).unwrap();
        let slow = reference::evaluate(&c.nodes, &c.namespaces, &c.pods, &c.incoming, &c.opts);
        prop_assert_eq!(fast, slow);
    }

    /// AddPod followed by RemovePod leaves every index and every evaluation
    /// as they were (C.17).
    #[test]
    fn add_pod_then_remove_pod_restores_the_state(c in cluster(), node in 0..7usize) {
        let mut state = ClusterState::for_options(&c.nodes, &c.namespaces, &c.pods, &c.opts).unwrap();
        let before = state.index_fingerprint();
        let probe = state.evaluate(&c.incoming, &c.opts).unwrap();
        let mut added = c.incoming.clone();
        added.metadata.name = Some("added".into());
        added.spec.as_mut().unwrap().node_name = Some(format!("n{}", node % c.nodes.len()));
        let id = state.add_pod(&added).unwrap();
        prop_assert_eq!(state.pod_count(), before_count(&c) + 1);
        state.remove_pod(id).unwrap();
        prop_assert_eq!(state.index_fingerprint(), before);
        prop_assert_eq!(state.evaluate(&c.incoming, &c.opts).unwrap(), probe);
    }

    /// Placing replicas one after another with the indexed state gives the
    /// same nodes as re-running the reference evaluator on the growing pod
    /// list.
    #[test]
    fn batch_placement_equals_sequential_reference_placement(c in cluster(), replicas in 1..6usize) {
        let mut state = ClusterState::for_options(&c.nodes, &c.namespaces, &c.pods, &c.opts).unwrap();
        let batch: Vec<Pod> = (0..replicas).map(|i| {
            let mut p = c.incoming.clone();
            p.metadata.name = Some(format!("r{i}"));
            p
        }).collect();
        let placed = state.place_batch(&batch, &c.opts).unwrap();
        let mut pods = c.pods.clone();
        for (p, got) in batch.iter().zip(&placed.placements) {
            let want = reference::evaluate(&c.nodes, &c.namespaces, &pods, p, &c.opts).selected;
            prop_assert_eq!(&got.node, &want);
            if let Some(n) = want {
                let mut bound = p.clone();
                bound.spec.as_mut().unwrap().node_name = Some(n);
                pods.push(bound);
            }
        }
    }
}

fn before_count(c: &Cluster) -> usize {
    let names: Vec<String> = c
        .nodes
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    c.pods
        .iter()
        .filter(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.as_ref())
                .is_some_and(|n| names.contains(n))
        })
        .count()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Capacity (C.40): every copy it reports was feasible, by the
    /// brute-force reference, on its node when it was placed; the same
    /// copies placed on a fresh state all fit; and, unless the limit was
    /// reached, one more copy fits nowhere, with the reported reason.
    #[test]
    fn capacity_count_is_schedulable_and_one_more_copy_is_not(c in cluster(), max in 0..12usize) {
        let fresh = ClusterState::for_options(&c.nodes, &c.namespaces, &c.pods, &c.opts).unwrap();
        let mut state = fresh.clone();
        let cap = state.capacity(&c.incoming, max, &c.opts).unwrap();
        prop_assert_eq!(cap.copies.len(), cap.count);
        prop_assert_eq!(cap.nodes.values().sum::<usize>(), cap.count);
        prop_assert!(cap.count <= max);
        prop_assert_eq!(cap.limit_reached, cap.reason.is_none());
        prop_assert_eq!(cap.limit_reached, cap.count == max);

        let copies: Vec<Pod> = cap
            .copies
            .iter()
            .map(|p| capacity_copy(&c.incoming, p.pod.rsplit('/').next().unwrap()))
            .collect();
        let mut pods = c.pods.clone();
        for (copy, placed) in copies.iter().zip(&cap.copies) {
            let node = placed.node.clone().unwrap();
            let r = reference::evaluate(&c.nodes, &c.namespaces, &pods, copy, &c.opts);
            prop_assert!(r.feasible.contains(&node), "{} on {}: {:?}", placed.pod, node, r.unschedulable.get(&node));
            let mut bound = copy.clone();
            bound.spec.as_mut().unwrap().node_name = Some(node);
            pods.push(bound);
        }
        let mut replay = fresh.clone();
        let batch = replay.place_batch(&copies, &c.opts).unwrap();
        prop_assert!(batch.placements.iter().all(|p| p.node.is_some()));

        if !cap.limit_reached {
            let next = capacity_copy(&c.incoming, "incoming-copy-next");
            let r = reference::evaluate(&c.nodes, &c.namespaces, &pods, &next, &c.opts);
            prop_assert_eq!(r.selected, None);
            prop_assert_eq!(r.error.or(r.summary), cap.reason.clone());
            prop_assert_eq!(replay.place(&next, &c.opts).unwrap().reason, cap.reason);
        }
    }
}
