//! The node-level filters of the default profile — NodeUnschedulable,
//! NodeName, TaintToleration, NodePorts, NodeResourcesFit — with the rows of
//! kube-scheduler's own tables (`node_unschedulable_test.go`,
//! `node_name_test.go`, `taint_toleration_test.go` TestTaintTolerationFilter,
//! `node_ports_test.go` TestNodePorts, `fit_test.go` TestEnoughRequests and
//! TestNotEnoughRequests / TestStorageRequests), then the order of the
//! filters and kube-scheduler's FitError summary.
//!
//! Every row runs through [`support::eval`], so the indexed evaluator and
//! the brute-force reference must agree on it as well.

mod oracle;
mod support;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube_scheduler_sim::{
    ClusterState, Code, KubernetesVersion, Options, Plugin, ScheduleError, schedule,
};
use serde_json::{Value, json};
use support::*;

/// A node named `m` with `spec` and `status.allocatable` as given (`Null`
/// leaves them out).
fn node_with(spec: Value, allocatable: Value) -> Node {
    let mut n = json!({"metadata": {"name": "m"}});
    if !spec.is_null() {
        n["spec"] = spec;
    }
    if !allocatable.is_null() {
        n["status"] = json!({"allocatable": allocatable});
    }
    serde_json::from_value(n).unwrap()
}

/// A pending pod with `spec` merged in (containers default to none).
fn incoming(spec: Value) -> Pod {
    let mut spec = match spec {
        Value::Null => json!({}),
        v => v,
    };
    if spec.get("containers").is_none() {
        spec["containers"] = json!([]);
    }
    serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}))
        .unwrap()
}

/// A pod bound to node `m`.
fn on_node(name: &str, spec: Value) -> Pod {
    let mut p = incoming(spec);
    p.metadata.name = Some(name.to_owned());
    if let Some(s) = p.spec.as_mut() {
        s.node_name = Some("m".to_owned());
    }
    p
}

/// The one verdict on node `m`: "ok" or the failure's reasons joined.
fn verdict(nodes: &[Node], pods: &[Pod], pod: &Pod) -> (String, Option<Code>) {
    verdict_with(nodes, pods, pod, &Options::default())
}

fn verdict_with(nodes: &[Node], pods: &[Pod], pod: &Pod, opts: &Options) -> (String, Option<Code>) {
    let r = eval(nodes, &[], pods, pod, opts);
    match r.unschedulable.get("m") {
        None => (OK.to_owned(), None),
        Some(f) => {
            assert_eq!(f.message, f.reasons.join(", "));
            (f.message.clone(), Some(f.code))
        }
    }
}

fn toleration(key: &str, op: &str, value: &str, effect: &str) -> Value {
    let mut t = json!({});
    for (k, v) in [
        ("key", key),
        ("operator", op),
        ("value", value),
        ("effect", effect),
    ] {
        if !v.is_empty() {
            t[k] = json!(v);
        }
    }
    t
}

fn taint(key: &str, value: &str, effect: &str) -> Value {
    json!({"key": key, "value": value, "effect": effect})
}

// TestNodeUnschedulable (nodeunschedulable/node_unschedulable_test.go).
#[test]
fn node_unschedulable_table() {
    let cordon_exists = toleration(
        "node.kubernetes.io/unschedulable",
        "Exists",
        "",
        "NoSchedule",
    );
    let rows: Vec<(&str, Value, Value, &str)> = vec![
        (
            "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
            json!({"unschedulable": true}),
            json!([]),
            UNSCHEDULABLE,
        ),
        (
            "Schedule pod to normal node",
            json!({"unschedulable": false}),
            json!([]),
            OK,
        ),
        (
            "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
            json!({"unschedulable": true}),
            json!([cordon_exists]),
            OK,
        ),
        (
            "Schedule pod without the field unschedulable",
            Value::Null,
            json!([]),
            OK,
        ),
        (
            "A NoExecute toleration does not tolerate the cordon",
            json!({"unschedulable": true}),
            json!([toleration(
                "node.kubernetes.io/unschedulable",
                "Exists",
                "",
                "NoExecute"
            )]),
            UNSCHEDULABLE,
        ),
        (
            "An empty key with Exists tolerates the cordon",
            json!({"unschedulable": true}),
            json!([toleration("", "Exists", "", "")]),
            OK,
        ),
    ];
    for (name, spec, tolerations, want) in rows {
        let (got, code) = verdict(
            &[node_with(spec, Value::Null)],
            &[],
            &incoming(json!({"tolerations": tolerations})),
        );
        assert_eq!(got, want, "{name}");
        if want != OK {
            assert_eq!(code, Some(Code::UnschedulableAndUnresolvable), "{name}");
        }
    }
}

// TestNodeName (nodename/node_name_test.go), through ClusterState::evaluate
// (`schedule` clears spec.nodeName, as a bound pod is evaluated as pending).
#[test]
fn node_name_table() {
    let rows: Vec<(&str, Value, &str)> = vec![
        ("no host specified", json!({}), OK),
        ("host matches", json!({"nodeName": "m"}), OK),
        ("host doesn't match", json!({"nodeName": "foo"}), NODE_NAME),
    ];
    for (name, spec, want) in rows {
        let (got, code) = verdict(&[node_with(Value::Null, Value::Null)], &[], &incoming(spec));
        assert_eq!(got, want, "{name}");
        if want != OK {
            assert_eq!(code, Some(Code::UnschedulableAndUnresolvable), "{name}");
        }
    }
}

// TestTaintTolerationFilter (tainttoleration/taint_toleration_test.go).
#[test]
fn taint_toleration_filter_table() {
    let user1 = || taint("dedicated", "user1", "NoSchedule");
    let rows: Vec<(&str, Vec<Value>, Vec<Value>, &str)> = vec![
        (
            "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
            vec![],
            vec![user1()],
            "node(s) had untolerated taint(s)",
        ),
        (
            "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
            vec![toleration("dedicated", "", "user1", "NoSchedule")],
            vec![user1()],
            OK,
        ),
        (
            "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
            vec![toleration("dedicated", "Equal", "user2", "NoSchedule")],
            vec![user1()],
            "node(s) had untolerated taint(s)",
        ),
        (
            "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node",
            vec![toleration("foo", "Exists", "", "NoSchedule")],
            vec![taint("foo", "bar", "NoSchedule")],
            OK,
        ),
        (
            "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can be scheduled onto the node",
            vec![
                toleration("dedicated", "Equal", "user2", "NoSchedule"),
                toleration("foo", "Exists", "", "NoSchedule"),
            ],
            vec![
                taint("dedicated", "user2", "NoSchedule"),
                taint("foo", "bar", "NoSchedule"),
            ],
            OK,
        ),
        (
            "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match, can't be scheduled onto the node",
            vec![toleration("foo", "Equal", "bar", "PreferNoSchedule")],
            vec![taint("foo", "bar", "NoSchedule")],
            "node(s) had untolerated taint(s)",
        ),
        (
            "The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
            vec![toleration("foo", "Equal", "bar", "")],
            vec![taint("foo", "bar", "NoSchedule")],
            OK,
        ),
        (
            "The pod has a toleration that key and value don't match the taint on the node, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
            vec![toleration("dedicated", "Equal", "user2", "NoSchedule")],
            vec![taint("dedicated", "user1", "PreferNoSchedule")],
            OK,
        ),
        (
            "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
            vec![],
            vec![taint("dedicated", "user1", "PreferNoSchedule")],
            OK,
        ),
        // Beyond upstream's table: the rules of Toleration.ToleratesTaint.
        (
            "NoExecute taints filter too",
            vec![],
            vec![taint("gone", "", "NoExecute")],
            "node(s) had untolerated taint(s)",
        ),
        (
            "the first untolerated NoSchedule/NoExecute taint is reported",
            vec![toleration("a", "Exists", "", "")],
            vec![
                taint("soft", "x", "PreferNoSchedule"),
                taint("a", "1", "NoSchedule"),
                taint("b", "2", "NoExecute"),
                taint("c", "3", "NoSchedule"),
            ],
            "node(s) had untolerated taint(s)",
        ),
        (
            "an empty operator is Equal",
            vec![toleration("dedicated", "", "user1", "")],
            vec![user1()],
            OK,
        ),
        (
            "an empty key with Exists tolerates every taint",
            vec![toleration("", "Exists", "", "")],
            vec![user1(), taint("foo", "bar", "NoExecute")],
            OK,
        ),
        (
            "an empty key with Equal tolerates any key whose value is equal",
            vec![toleration("", "Equal", "user1", "")],
            vec![user1()],
            OK,
        ),
        (
            "an empty key with Equal and another value tolerates nothing",
            vec![toleration("", "Equal", "user2", "")],
            vec![user1()],
            "node(s) had untolerated taint(s)",
        ),
        (
            "an unknown operator tolerates nothing",
            vec![toleration("dedicated", "Gt", "user1", "")],
            vec![user1()],
            "node(s) had untolerated taint(s)",
        ),
    ];
    for (name, tolerations, taints, want) in rows {
        let (got, code) = verdict(
            &[node_with(json!({"taints": taints}), Value::Null)],
            &[],
            &incoming(json!({"tolerations": tolerations})),
        );
        assert_eq!(got, want, "{name}");
        if want != OK {
            assert_eq!(code, Some(Code::UnschedulableAndUnresolvable), "{name}");
        }
    }
}

/// The message names no taint (C.27), but the filter still finds the first
/// untolerated `NoSchedule`/`NoExecute` taint, which `diagnose` names.
#[test]
fn the_filter_finds_the_first_untolerated_taint() {
    use k8s_openapi::api::core::v1::{Taint, Toleration};
    use kube_scheduler_sim::plugins::taint_toleration;
    let taints: Vec<Taint> = serde_json::from_value(json!([
        taint("soft", "x", "PreferNoSchedule"),
        taint("a", "1", "NoSchedule"),
        taint("b", "2", "NoExecute"),
        taint("c", "3", "NoSchedule"),
    ]))
    .unwrap();
    let tolerations: Vec<Toleration> =
        serde_json::from_value(json!([toleration("a", "Exists", "", "")])).unwrap();
    let first = taint_toleration::filter(&taints, &tolerations);
    assert_eq!(first.map(|t| t.key.as_str()), Some("b"));
    assert_eq!(taint_toleration::REASON, "node(s) had untolerated taint(s)");
}

/// Containers with host ports written `PROTO/IP/PORT` (upstream's `newPod`).
fn ports_spec(ports: &[&str]) -> Value {
    let ports: Vec<Value> = ports
        .iter()
        .map(|p| {
            let parts: Vec<&str> = p.split('/').collect();
            json!({"containerPort": 1, "protocol": parts[0], "hostIP": parts[1], "hostPort": parts[2].parse::<i32>().unwrap()})
        })
        .collect();
    json!({"containers": [{"name": "c", "ports": ports}]})
}

// TestNodePorts (nodeports/node_ports_test.go).
#[test]
fn node_ports_table() {
    let rows: Vec<(&str, Value, Vec<&str>, &str)> = vec![
        ("skip filter", json!({}), vec![], OK),
        (
            "other port",
            ports_spec(&["UDP/127.0.0.1/8080"]),
            vec!["UDP/127.0.0.1/9090"],
            OK,
        ),
        (
            "same udp port",
            ports_spec(&["UDP/127.0.0.1/8080"]),
            vec!["UDP/127.0.0.1/8080"],
            PORTS,
        ),
        (
            "same tcp port",
            ports_spec(&["TCP/127.0.0.1/8080"]),
            vec!["TCP/127.0.0.1/8080"],
            PORTS,
        ),
        (
            "different host ip",
            ports_spec(&["TCP/127.0.0.1/8080"]),
            vec!["TCP/127.0.0.2/8080"],
            OK,
        ),
        (
            "different protocol",
            ports_spec(&["UDP/127.0.0.1/8080"]),
            vec!["TCP/127.0.0.1/8080"],
            OK,
        ),
        (
            "second udp port conflict",
            ports_spec(&["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"]),
            vec!["UDP/127.0.0.1/8080"],
            PORTS,
        ),
        (
            "first tcp port conflict",
            ports_spec(&["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"]),
            vec!["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
            PORTS,
        ),
        (
            "first tcp port conflict due to 0.0.0.0 hostIP",
            ports_spec(&["TCP/0.0.0.0/8001"]),
            vec!["TCP/127.0.0.1/8001"],
            PORTS,
        ),
        (
            "TCP hostPort conflict due to 0.0.0.0 hostIP",
            ports_spec(&["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"]),
            vec!["TCP/127.0.0.1/8001"],
            PORTS,
        ),
        (
            "second tcp port conflict to 0.0.0.0 hostIP",
            ports_spec(&["TCP/127.0.0.1/8001"]),
            vec!["TCP/0.0.0.0/8001"],
            PORTS,
        ),
        (
            "second different protocol",
            ports_spec(&["UDP/127.0.0.1/8001"]),
            vec!["TCP/0.0.0.0/8001"],
            OK,
        ),
        (
            "UDP hostPort conflict due to 0.0.0.0 hostIP",
            ports_spec(&["UDP/127.0.0.1/8001"]),
            vec!["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
            PORTS,
        ),
        (
            "non-sidecar initContainer using hostPort",
            json!({"initContainers": [{"name": "i", "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]}]}),
            vec!["TCP/0.0.0.0/8001"],
            OK,
        ),
        (
            "TCP hostPort conflict from sidecar initContainer",
            json!({"initContainers": [{"name": "i", "restartPolicy": "Always", "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]}]}),
            vec!["TCP/0.0.0.0/8001"],
            PORTS,
        ),
        // Beyond upstream's table: unset hostIP is 0.0.0.0, unset protocol TCP,
        // and a sidecar of a pod already on the node holds its port.
        (
            "unset hostIP and protocol conflict with a bound TCP port",
            json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8001}]}]}),
            vec!["TCP/127.0.0.1/8001"],
            PORTS,
        ),
    ];
    for (name, spec, used, want) in rows {
        let pods = vec![on_node("existing", ports_spec(&used))];
        let (got, code) = verdict(
            &[node_with(Value::Null, Value::Null)],
            &pods,
            &incoming(spec),
        );
        assert_eq!(got, want, "{name}");
        if want != OK {
            assert_eq!(code, Some(Code::Unschedulable), "{name}");
        }
    }
    let sidecar_on_node = on_node(
        "existing",
        json!({"containers": [], "initContainers": [{"name": "i", "restartPolicy": "Always", "ports": [{"containerPort": 1, "hostPort": 9000}]}]}),
    );
    let (got, _) = verdict(
        &[node_with(Value::Null, Value::Null)],
        &[sidecar_on_node],
        &incoming(ports_spec(&["TCP/0.0.0.0/9000"])),
    );
    assert_eq!(got, PORTS, "a bound pod's sidecar holds its host port");
}

/// Requests as upstream's `newResourcePod` writes them: every key present.
fn req(milli_cpu: i64, memory: i64, scalars: &[(&str, i64)]) -> Value {
    let mut r = json!({"cpu": format!("{milli_cpu}m"), "memory": memory.to_string(), "pods": "0", "ephemeral-storage": "0"});
    for (k, v) in scalars {
        r[*k] = json!(v.to_string());
    }
    r
}

fn containers(reqs: &[Value]) -> Value {
    Value::Array(
        reqs.iter()
            .enumerate()
            .map(|(i, r)| json!({"name": format!("c{i}"), "resources": {"requests": r}}))
            .collect(),
    )
}

fn resource_pod(reqs: &[Value]) -> Value {
    json!({"containers": containers(reqs)})
}

fn init_pod(reqs: &[Value], inits: &[Value]) -> Value {
    json!({"containers": containers(reqs), "initContainers": containers(inits)})
}

const EXT_A: &str = "example.com/aaa";
const EXT_B: &str = "example.com/bbb";
const K8S_IO_A: &str = "kubernetes.io/something";
const K8S_IO_B: &str = "subdomain.kubernetes.io/something";
const HUGE_A: &str = "hugepages-2Mi";

/// `makeAllocatableResources(milliCPU, memory, pods, extendedA, storage,
/// hugePageA)`.
fn allocatable(
    milli_cpu: i64,
    memory: i64,
    pods: i64,
    ext_a: i64,
    storage: i64,
    huge: i64,
) -> Value {
    json!({
        "cpu": format!("{milli_cpu}m"), "memory": memory.to_string(), "pods": pods.to_string(),
        EXT_A: ext_a.to_string(), "ephemeral-storage": storage.to_string(), HUGE_A: huge.to_string(),
    })
}

fn fit_case(name: &str, node: Value, used: Value, pod: Value, want: &str, code: Option<Code>) {
    let pods = vec![on_node("existing", used)];
    let (got, got_code) = verdict(&[node_with(Value::Null, node)], &pods, &incoming(pod));
    assert_eq!(got, want, "{name}");
    assert_eq!(got_code, code, "{name}");
}

const CPU: &str = "Insufficient cpu";
const MEM: &str = "Insufficient memory";

// TestEnoughRequests (noderesources/fit_test.go): node allocatable
// cpu 10m, memory 20, pods 32, example.com/aaa 5, ephemeral-storage 20,
// hugepages-2Mi 5; one pod already on the node.
#[test]
fn enough_requests_table() {
    let node = || allocatable(10, 20, 32, 5, 20, 5);
    let u = Some(Code::Unschedulable);
    let uu = Some(Code::UnschedulableAndUnresolvable);
    let ext = |n: i64| req(1, 1, &[(EXT_A, n)]);
    let rows: Vec<(&str, Value, Value, String, Option<Code>)> = vec![
        (
            "no resources requested always fits",
            json!({}),
            resource_pod(&[req(10, 20, &[])]),
            OK.into(),
            None,
        ),
        (
            "too many resources fails",
            resource_pod(&[req(1, 1, &[])]),
            resource_pod(&[req(10, 20, &[])]),
            format!("{CPU}, {MEM}"),
            u,
        ),
        (
            "too many resources fails due to init container cpu",
            init_pod(&[req(1, 1, &[])], &[req(3, 1, &[])]),
            resource_pod(&[req(8, 19, &[])]),
            CPU.into(),
            u,
        ),
        (
            "too many resources fails due to highest init container cpu",
            init_pod(&[req(1, 1, &[])], &[req(3, 1, &[]), req(2, 1, &[])]),
            resource_pod(&[req(8, 19, &[])]),
            CPU.into(),
            u,
        ),
        (
            "too many resources fails due to init container memory",
            init_pod(&[req(1, 1, &[])], &[req(1, 3, &[])]),
            resource_pod(&[req(9, 19, &[])]),
            MEM.into(),
            u,
        ),
        (
            "too many resources fails due to highest init container memory",
            init_pod(&[req(1, 1, &[])], &[req(1, 3, &[]), req(1, 2, &[])]),
            resource_pod(&[req(9, 19, &[])]),
            MEM.into(),
            u,
        ),
        (
            "init container fits because it's the max, not sum, of containers and init containers",
            init_pod(&[req(1, 1, &[])], &[req(1, 1, &[])]),
            resource_pod(&[req(9, 19, &[])]),
            OK.into(),
            None,
        ),
        (
            "multiple init containers fit because it's the max, not sum, of containers and init containers",
            init_pod(&[req(1, 1, &[])], &[req(1, 1, &[]), req(1, 1, &[])]),
            resource_pod(&[req(9, 19, &[])]),
            OK.into(),
            None,
        ),
        (
            "both resources fit",
            resource_pod(&[req(1, 1, &[])]),
            resource_pod(&[req(5, 5, &[])]),
            OK.into(),
            None,
        ),
        (
            "one resource memory fits",
            resource_pod(&[req(2, 1, &[])]),
            resource_pod(&[req(9, 5, &[])]),
            CPU.into(),
            u,
        ),
        (
            "one resource cpu fits",
            resource_pod(&[req(1, 2, &[])]),
            resource_pod(&[req(5, 19, &[])]),
            MEM.into(),
            u,
        ),
        (
            "equal edge case",
            resource_pod(&[req(5, 1, &[])]),
            resource_pod(&[req(5, 19, &[])]),
            OK.into(),
            None,
        ),
        (
            "equal edge case for init container",
            init_pod(&[req(4, 1, &[])], &[req(5, 1, &[])]),
            resource_pod(&[req(5, 19, &[])]),
            OK.into(),
            None,
        ),
        (
            "extended resource fits",
            resource_pod(&[req(0, 0, &[(EXT_A, 1)])]),
            resource_pod(&[req(0, 0, &[])]),
            OK.into(),
            None,
        ),
        (
            "extended resource fits for init container",
            init_pod(&[req(0, 0, &[])], &[req(0, 0, &[(EXT_A, 1)])]),
            resource_pod(&[req(0, 0, &[])]),
            OK.into(),
            None,
        ),
        (
            "extended resource capacity enforced",
            resource_pod(&[ext(10)]),
            resource_pod(&[req(0, 0, &[(EXT_A, 0)])]),
            format!("Insufficient {EXT_A}"),
            uu,
        ),
        (
            "extended resource capacity enforced for init container",
            init_pod(&[req(0, 0, &[])], &[ext(10)]),
            resource_pod(&[req(0, 0, &[(EXT_A, 0)])]),
            format!("Insufficient {EXT_A}"),
            uu,
        ),
        (
            "extended resource allocatable enforced",
            resource_pod(&[ext(1)]),
            resource_pod(&[req(0, 0, &[(EXT_A, 5)])]),
            format!("Insufficient {EXT_A}"),
            u,
        ),
        (
            "extended resource allocatable enforced for init container",
            init_pod(&[req(0, 0, &[])], &[ext(1)]),
            resource_pod(&[req(0, 0, &[(EXT_A, 5)])]),
            format!("Insufficient {EXT_A}"),
            u,
        ),
        (
            "extended resource allocatable enforced for multiple containers",
            resource_pod(&[ext(3), ext(3)]),
            resource_pod(&[req(0, 0, &[(EXT_A, 2)])]),
            format!("Insufficient {EXT_A}"),
            uu,
        ),
        (
            "extended resource allocatable admits multiple init containers",
            init_pod(&[req(0, 0, &[])], &[ext(3), ext(3)]),
            resource_pod(&[req(0, 0, &[(EXT_A, 2)])]),
            OK.into(),
            None,
        ),
        (
            "extended resource allocatable enforced for multiple init containers",
            init_pod(&[req(0, 0, &[])], &[ext(6), ext(3)]),
            resource_pod(&[req(0, 0, &[(EXT_A, 2)])]),
            format!("Insufficient {EXT_A}"),
            uu,
        ),
        (
            "extended resource allocatable enforced for unknown resource",
            resource_pod(&[req(1, 1, &[(EXT_B, 1)])]),
            resource_pod(&[req(0, 0, &[])]),
            format!("Insufficient {EXT_B}"),
            uu,
        ),
        (
            "extended resource allocatable enforced for unknown resource for init container",
            init_pod(&[req(0, 0, &[])], &[req(1, 1, &[(EXT_B, 1)])]),
            resource_pod(&[req(0, 0, &[])]),
            format!("Insufficient {EXT_B}"),
            uu,
        ),
        (
            "kubernetes.io resource capacity enforced",
            resource_pod(&[req(1, 1, &[(K8S_IO_A, 10)])]),
            resource_pod(&[req(0, 0, &[])]),
            format!("Insufficient {K8S_IO_A}"),
            uu,
        ),
        (
            "kubernetes.io resource capacity enforced for init container",
            init_pod(&[req(0, 0, &[])], &[req(1, 1, &[(K8S_IO_B, 10)])]),
            resource_pod(&[req(0, 0, &[])]),
            format!("Insufficient {K8S_IO_B}"),
            uu,
        ),
        (
            "hugepages resource capacity enforced",
            resource_pod(&[req(1, 1, &[(HUGE_A, 10)])]),
            resource_pod(&[req(0, 0, &[(HUGE_A, 0)])]),
            format!("Insufficient {HUGE_A}"),
            uu,
        ),
        (
            "hugepages resource capacity enforced for init container",
            init_pod(&[req(0, 0, &[])], &[req(1, 1, &[(HUGE_A, 10)])]),
            resource_pod(&[req(0, 0, &[(HUGE_A, 0)])]),
            format!("Insufficient {HUGE_A}"),
            uu,
        ),
        (
            "hugepages resource allocatable enforced for multiple containers",
            resource_pod(&[req(1, 1, &[(HUGE_A, 3)]), req(1, 1, &[(HUGE_A, 3)])]),
            resource_pod(&[req(0, 0, &[(HUGE_A, 2)])]),
            format!("Insufficient {HUGE_A}"),
            uu,
        ),
        (
            "resources + pod overhead fits",
            {
                let mut p = resource_pod(&[req(1, 1, &[])]);
                p["overhead"] = json!({"cpu": "3m", "memory": "13"});
                p
            },
            resource_pod(&[req(5, 5, &[])]),
            OK.into(),
            None,
        ),
        (
            "requests + overhead does not fit for memory",
            {
                let mut p = resource_pod(&[req(1, 1, &[])]);
                p["overhead"] = json!({"cpu": "1m", "memory": "15"});
                p
            },
            resource_pod(&[req(5, 5, &[])]),
            MEM.into(),
            u,
        ),
        (
            "skip checking extended resource request with quantity zero via resource groups",
            resource_pod(&[req(1, 1, &[(EXT_A, 0)])]),
            resource_pod(&[req(0, 0, &[(EXT_A, 6)])]),
            OK.into(),
            None,
        ),
        (
            "skip checking resource request with quantity zero",
            json!({"containers": [{"name": "c", "resources": {"requests": {EXT_A: "1"}}}]}),
            resource_pod(&[req(20, 30, &[(EXT_A, 1)])]),
            OK.into(),
            None,
        ),
        (
            "both pod-level and container-level resources fit",
            {
                let mut p = resource_pod(&[req(1, 1, &[])]);
                p["resources"] = json!({"requests": {"cpu": "1m", "memory": "2"}});
                p
            },
            resource_pod(&[req(5, 5, &[])]),
            OK.into(),
            None,
        ),
        (
            "pod-level cpu resource not fit",
            {
                let mut p = resource_pod(&[req(1, 1, &[])]);
                p["resources"] = json!({"requests": {"cpu": "7m", "memory": "2"}});
                p
            },
            resource_pod(&[req(5, 5, &[])]),
            CPU.into(),
            u,
        ),
        (
            "pod-level memory resource not fit",
            {
                let mut p = resource_pod(&[req(1, 1, &[])]);
                p["resources"] = json!({"requests": {"cpu": "3m", "memory": "2"}});
                p
            },
            resource_pod(&[req(5, 19, &[])]),
            MEM.into(),
            u,
        ),
        (
            "pod-level hugepages resource fit",
            json!({"containers": [], "resources": {"requests": {"cpu": "3m", "memory": "2", HUGE_A: "5"}}}),
            json!({}),
            OK.into(),
            None,
        ),
        (
            "both pod-level and container-level hugepages resource fit",
            {
                let mut p = resource_pod(&[req(1, 1, &[(HUGE_A, 3)])]);
                p["resources"] = json!({"requests": {"cpu": "3m", "memory": "2", HUGE_A: "5"}});
                p
            },
            json!({}),
            OK.into(),
            None,
        ),
        (
            "pod-level hugepages resource not fit",
            json!({"containers": [], "resources": {"requests": {"cpu": "3m", "memory": "2", HUGE_A: "10"}}}),
            json!({}),
            format!("Insufficient {HUGE_A}"),
            uu,
        ),
        (
            "one pod-level cpu resource fits and all init and non-init containers resources fit",
            {
                let mut p = init_pod(&[req(1, 1, &[])], &[req(1, 1, &[])]);
                p["resources"] = json!({"requests": {"cpu": "3m", "memory": "2"}});
                p
            },
            resource_pod(&[req(5, 19, &[])]),
            MEM.into(),
            u,
        ),
    ];
    for (name, pod, used, want, code) in rows {
        fit_case(name, node(), used, pod, &want, code);
    }
}

// TestNotEnoughRequests (fit_test.go): the node admits one pod and runs one.
#[test]
fn not_enough_pods_table() {
    let node = || allocatable(10, 20, 1, 5, 20, 5);
    let u = Some(Code::Unschedulable);
    let rows: Vec<(&str, Value, Value, &str)> = vec![
        (
            "even without specified resources, predicate fails when there's no space for additional pod",
            json!({}),
            resource_pod(&[req(10, 20, &[])]),
            "Too many pods",
        ),
        (
            "even if both resources fit, predicate fails when there's no space for additional pod",
            resource_pod(&[req(1, 1, &[])]),
            resource_pod(&[req(5, 5, &[])]),
            "Too many pods",
        ),
        (
            "even for equal edge case, predicate fails when there's no space for additional pod",
            resource_pod(&[req(5, 1, &[])]),
            resource_pod(&[req(5, 19, &[])]),
            "Too many pods",
        ),
        (
            "even for equal edge case, predicate fails when there's no space for additional pod due to init container",
            init_pod(&[req(5, 1, &[])], &[req(5, 1, &[])]),
            resource_pod(&[req(5, 19, &[])]),
            "Too many pods",
        ),
        (
            "every shortfall is a reason, pods first",
            resource_pod(&[req(6, 2, &[])]),
            resource_pod(&[req(5, 19, &[])]),
            "Too many pods, Insufficient cpu, Insufficient memory",
        ),
    ];
    for (name, pod, used, want) in rows {
        fit_case(name, node(), used, pod, want, u);
    }
}

// TestStorageRequests (fit_test.go): ephemeral storage, node allocatable 20.
#[test]
fn storage_requests_table() {
    let node = || allocatable(10, 20, 32, 5, 20, 5);
    let storage = |milli_cpu: i64, memory: i64, storage: i64| json!({"cpu": format!("{milli_cpu}m"), "memory": memory.to_string(), "ephemeral-storage": storage.to_string()});
    let rows: Vec<(&str, Value, Value, String, Option<Code>)> = vec![
        (
            "due to container scratch disk",
            resource_pod(&[storage(1, 1, 0)]),
            resource_pod(&[storage(10, 10, 0)]),
            CPU.into(),
            Some(Code::Unschedulable),
        ),
        (
            "pod fit",
            resource_pod(&[storage(1, 1, 0)]),
            resource_pod(&[storage(2, 10, 0)]),
            OK.into(),
            None,
        ),
        (
            "storage ephemeral local storage request exceeds allocatable",
            resource_pod(&[storage(0, 0, 25)]),
            resource_pod(&[storage(2, 2, 0)]),
            "Insufficient ephemeral-storage".into(),
            Some(Code::UnschedulableAndUnresolvable),
        ),
        (
            "ephemeral local storage is sufficient",
            resource_pod(&[storage(0, 0, 10)]),
            resource_pod(&[storage(2, 2, 0)]),
            OK.into(),
            None,
        ),
        (
            "ephemeral local storage used by the node's pods counts",
            resource_pod(&[storage(0, 0, 10)]),
            resource_pod(&[storage(0, 0, 15)]),
            "Insufficient ephemeral-storage".into(),
            Some(Code::Unschedulable),
        ),
    ];
    for (name, pod, used, want, code) in rows {
        fit_case(name, node(), used, pod, &want, code);
    }
}

fn sidecar(r: Value) -> Value {
    json!({"name": "s", "restartPolicy": "Always", "resources": {"requests": r}})
}

// resource.PodRequests with sidecars (KEP 753's formula): a sidecar's
// request adds to the regular containers' and to every init container
// started after it.
#[test]
fn sidecar_requests() {
    // Node: 1000m CPU, nothing running.
    let node = || json!({"cpu": "1000m", "memory": "1Gi", "pods": "110"});
    let cpu = |m: i64| json!({"cpu": format!("{m}m")});
    let rows: Vec<(&str, Value, &str)> = vec![
        (
            "a sidecar adds to the containers: 600 + 500 > 1000",
            json!({"containers": containers(&[cpu(600)]), "initContainers": [sidecar(cpu(500))]}),
            CPU,
        ),
        (
            "without restartPolicy Always the same init container only needs max(600, 500)",
            json!({"containers": containers(&[cpu(600)]), "initContainers": containers(&[cpu(500)])}),
            OK,
        ),
        (
            "an init container after a sidecar needs its own request plus the sidecar's: 300 + 800 > 1000",
            json!({"containers": containers(&[cpu(100)]), "initContainers": [sidecar(cpu(300)), {"name": "i", "resources": {"requests": cpu(800)}}]}),
            CPU,
        ),
        (
            "an init container before a sidecar does not add it: max(800, 300 + 100) fits",
            json!({"containers": containers(&[cpu(100)]), "initContainers": [{"name": "i", "resources": {"requests": cpu(800)}}, sidecar(cpu(300))]}),
            OK,
        ),
        (
            "overhead adds to the result",
            json!({"containers": containers(&[cpu(600)]), "initContainers": [sidecar(cpu(300))], "overhead": {"cpu": "200m"}}),
            CPU,
        ),
    ];
    for (name, pod, want) in rows {
        let (got, _) = verdict(&[node_with(Value::Null, node())], &[], &incoming(pod));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn quantities_round_up_like_kube_scheduler() {
    // 0.5m of CPU is counted as 1m; 1.5 bytes as 2.
    let node = json!({"cpu": "1m", "memory": "1", "pods": "1"});
    let (got, _) = verdict(
        &[node_with(Value::Null, node.clone())],
        &[],
        &incoming(
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "0.5m"}}}]}),
        ),
    );
    assert_eq!(got, OK);
    let (got, _) = verdict(
        &[node_with(Value::Null, node)],
        &[],
        &incoming(
            json!({"containers": [{"name": "c", "resources": {"requests": {"memory": "1500m"}}}]}),
        ),
    );
    assert_eq!(got, MEM);
}

#[test]
fn a_node_without_status_allocatable_is_not_checked_for_resources() {
    let (got, _) = verdict(
        &[node_with(Value::Null, Value::Null)],
        &[on_node("existing", json!({}))],
        &incoming(resource_pod(&[req(4000, 1 << 30, &[])])),
    );
    assert_eq!(got, OK);
}

/// Three nodes as in a real report: one tainted, one cordoned, one with
/// 100m CPU allocatable; a pod asking for 4 CPUs.
fn three_nodes() -> Vec<Node> {
    let mk = |name: &str, spec: Value, cpu: &str| -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
        }))
        .unwrap()
    };
    vec![
        mk(
            "infra-1",
            json!({"taints": [taint("dedicated", "infra", "NoSchedule")]}),
            "8",
        ),
        mk("worker-1", json!({"unschedulable": true}), "8"),
        mk("worker-2", json!({}), "100m"),
    ]
}

#[test]
fn three_nodes_reject_a_4_cpu_pod_with_kube_schedulers_summary() {
    let mut pod = incoming(resource_pod(&[json!({"cpu": "4"})]));
    pod.metadata.name = Some("big".into());
    let r = eval(&three_nodes(), &[], &[], &pod, &Options::default());
    assert!(r.feasible.is_empty());
    let plugins: Vec<(&str, Plugin)> = r
        .unschedulable
        .iter()
        .map(|(n, f)| (n.as_str(), f.plugin))
        .collect();
    assert_eq!(
        plugins,
        [
            ("infra-1", Plugin::TaintToleration),
            ("worker-1", Plugin::NodeUnschedulable),
            ("worker-2", Plugin::NodeResourcesFit)
        ]
    );
    assert_eq!(
        r.summary.as_deref(),
        Some(
            "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable."
        )
    );
    let mut state = ClusterState::new(&three_nodes(), &[], &[], true);
    let placement = state.place(&pod, &Options::default()).unwrap();
    assert_eq!(placement.node, None);
    assert_eq!(
        placement.reason.as_deref(),
        Some(
            "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable."
        )
    );
}

#[test]
fn the_summary_counts_every_reason_of_a_node_and_sorts_as_strings() {
    let nodes: Vec<Node> = (0..12)
        .map(|i| {
            serde_json::from_value(json!({
                "metadata": {"name": format!("n{i:02}")},
                "status": {"allocatable": {"cpu": if i < 10 { "1" } else { "8" }, "memory": "1Gi", "pods": "110"}},
            }))
            .unwrap()
        })
        .collect();
    let mut pod = incoming(resource_pod(&[json!({"cpu": "2", "memory": "2Gi"})]));
    pod.metadata.name = Some("big".into());
    let mut state = ClusterState::new(&nodes, &[], &[], true);
    let placement = state.place(&pod, &Options::default()).unwrap();
    // "10 Insufficient cpu" sorts before "12 Insufficient memory" as a string.
    assert_eq!(
        placement.reason.as_deref(),
        Some("0/12 nodes are available: 10 Insufficient cpu, 12 Insufficient memory.")
    );
    assert_eq!(
        kube_scheduler_sim::fit_error_summary(0, Vec::<Vec<String>>::new()),
        "no nodes available to schedule pods"
    );
}

// The default profile's filter order: NodeName, NodeUnschedulable (the
// other way round up to 1.36), TaintToleration, NodeAffinity, NodePorts,
// NodeResourcesFit, PodTopologySpread, InterPodAffinity; the first failure
// is reported.
#[test]
fn filters_run_in_the_default_profile_order() {
    let everything_wrong = node_with(
        json!({"unschedulable": true, "taints": [taint("dedicated", "infra", "NoSchedule")]}),
        json!({"cpu": "100m", "memory": "1Gi", "pods": "110"}),
    );
    let mut node = everything_wrong.clone();
    node.metadata.labels = Some([("zone".to_owned(), "a".to_owned())].into());
    let used = on_node("existing", ports_spec(&["TCP/0.0.0.0/80"]));
    let mut spec = ports_spec(&["TCP/0.0.0.0/80"]);
    spec["containers"][0]["resources"] = json!({"requests": {"cpu": "4"}});
    spec["nodeSelector"] = json!({"zone": "b"});
    spec["nodeName"] = json!("other");
    let mut pod_spec = spec.clone();
    let expect = |pod_spec: &Value, node: &Node, want: &str| {
        let (got, _) = verdict(
            std::slice::from_ref(node),
            std::slice::from_ref(&used),
            &incoming(pod_spec.clone()),
        );
        assert_eq!(got, want);
    };
    expect(&pod_spec, &node, NODE_NAME);
    let up_to_1_36 = Options {
        kubernetes_version: KubernetesVersion::V1_36,
        ..Options::default()
    };
    let (got, _) = verdict_with(
        std::slice::from_ref(&node),
        std::slice::from_ref(&used),
        &incoming(pod_spec.clone()),
        &up_to_1_36,
    );
    assert_eq!(
        got, UNSCHEDULABLE,
        "NodeUnschedulable runs first up to 1.36"
    );
    pod_spec["tolerations"] = json!([toleration(
        "node.kubernetes.io/unschedulable",
        "Exists",
        "",
        ""
    )]);
    expect(&pod_spec, &node, NODE_NAME);
    pod_spec.as_object_mut().unwrap().remove("nodeName");
    expect(&pod_spec, &node, "node(s) had untolerated taint(s)");
    pod_spec["tolerations"] = json!([toleration("", "Exists", "", "")]);
    expect(&pod_spec, &node, NODE_AFFINITY);
    pod_spec["nodeSelector"] = json!({"zone": "a"});
    expect(&pod_spec, &node, PORTS);
    pod_spec["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("ports");
    expect(&pod_spec, &node, CPU);
    pod_spec["containers"][0]["resources"] = json!({"requests": {"cpu": "50m"}});
    expect(&pod_spec, &node, OK);
}

#[test]
fn quantities_that_do_not_parse_are_errors_naming_the_field() {
    let node = node_with(Value::Null, json!({"cpu": "1", "pods": "10"}));
    let bad_pod = incoming(
        json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "four"}}}]}),
    );
    let r = schedule(
        std::slice::from_ref(&node),
        &[],
        std::slice::from_ref(&bad_pod),
        "ns",
        "p",
        &Options::default(),
    )
    .unwrap();
    assert_eq!(
        r.error.as_deref(),
        Some(
            "pod ns/p: spec.containers[0].resources.requests.cpu: invalid quantity \"four\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    );
    let bad_node = node_with(Value::Null, json!({"memory": "1Q"}));
    let ok_pod = incoming(json!({}));
    let err = schedule(
        &[bad_node],
        &[],
        std::slice::from_ref(&ok_pod),
        "ns",
        "p",
        &Options::default(),
    )
    .unwrap_err();
    assert!(matches!(err, ScheduleError::State(_)));
    assert_eq!(
        err.to_string(),
        "node m: status.allocatable.memory: invalid quantity \"1Q\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    let bad_bound = on_node(
        "other",
        json!({"initContainers": [{"name": "i", "resources": {"requests": {"memory": "1K"}}}]}),
    );
    let err = schedule(
        &[node],
        &[],
        &[ok_pod, bad_bound],
        "ns",
        "p",
        &Options::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "pod ns/other: spec.initContainers[0].resources.requests.memory: invalid quantity \"1K\": unable to parse quantity's suffix"
    );
}
