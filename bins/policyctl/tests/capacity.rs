//! `capacity` (copies of a pod or a workload's template placed until one
//! fits nowhere), the report's spare-replica section and `diagnose`'s
//! preemption hint.

mod common;

use common::{ok, run, run_with_stdin};
use policyctl::Exit;
use serde_json::Value;

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).expect("JSON output")
}

#[test]
fn capacity_of_the_pending_web_pod_on_the_example_cluster() {
    let table = ok(&["capacity", "--pod", "shop/web-7c9f8d6b5-r9t2x"]).stdout;
    insta::assert_snapshot!("capacity_pending_web_pod_table", table);
    let out = ok(&[
        "capacity",
        "--pod",
        "shop/web-7c9f8d6b5-r9t2x",
        "-o",
        "json",
    ])
    .stdout;
    insta::assert_snapshot!("capacity_pending_web_pod_json", out);
    let doc = json(&out);
    let per_node: u64 = doc["nodes"]
        .as_object()
        .expect("nodes")
        .values()
        .map(|v| v.as_u64().expect("count"))
        .sum();
    assert_eq!(doc["count"].as_u64(), Some(per_node));
    assert_eq!(doc["limitReached"], Value::Bool(false));
    assert!(
        doc["reason"]
            .as_str()
            .expect("reason")
            .starts_with("0/7 nodes are available: "),
        "{doc}"
    );
}

#[test]
fn capacity_of_a_bound_pod_keeps_it_and_adds_new_copies() {
    let table = ok(&["capacity", "--pod", "shop/db-0"]).stdout;
    insta::assert_snapshot!("capacity_bound_db_pod_table", table);
    let doc = json(&ok(&["capacity", "--pod", "shop/db-0", "-o", "json"]).stdout);
    let yaml = ok(&["capacity", "--pod", "shop/db-0", "-o", "yaml"]).stdout;
    assert!(yaml.contains("boundTo: worker-b1"), "{yaml}");
    assert_eq!(doc["boundTo"], "worker-b1");
    assert_eq!(doc["copyNames"], "shop/db-0-copy-<i>");
}

#[test]
fn capacity_of_the_web_deployment_template() {
    let table = ok(&["capacity", "--workload", "deployment/shop/web"]).stdout;
    insta::assert_snapshot!("capacity_web_deployment_table", table);
    let doc = json(&ok(&["capacity", "--workload", "deploy/shop/web", "-o", "json"]).stdout);
    assert_eq!(doc["source"]["workload"], "Deployment/shop/web");
    // The template is the pending pod's: same labels, same spec.
    let pod = json(
        &ok(&[
            "capacity",
            "--pod",
            "shop/web-7c9f8d6b5-r9t2x",
            "-o",
            "json",
        ])
        .stdout,
    );
    assert_eq!(doc["count"], pod["count"]);
    assert_eq!(doc["reason"], pod["reason"]);
}

#[test]
fn the_limit_stops_the_run_and_is_reported() {
    let out = ok(&[
        "capacity",
        "--pod",
        "shop/web-7c9f8d6b5-r9t2x",
        "--max",
        "2",
    ])
    .stdout;
    assert!(
        out.contains("2 copies fit; stopped at the limit of 2 copies (--max), so more may fit"),
        "{out}"
    );
    let doc = json(
        &ok(&[
            "capacity",
            "--pod",
            "shop/web-7c9f8d6b5-r9t2x",
            "--max",
            "2",
            "-o",
            "json",
        ])
        .stdout,
    );
    assert_eq!(doc["count"], 2);
    assert_eq!(doc["limitReached"], true);
    assert_eq!(doc["reason"], Value::Null);
}

#[test]
fn bad_arguments_are_refused() {
    assert_eq!(run(&["capacity"]).exit, Exit::Usage);
    assert_eq!(
        run(&["capacity", "--pod", "shop/db-0", "--max", "0"]).exit,
        Exit::Usage
    );
    assert_eq!(
        run(&["capacity", "--workload", "daemonset/shop/web"]).exit,
        Exit::Usage
    );
    let missing = run(&["capacity", "--workload", "statefulset/shop/web"]);
    assert_eq!(missing.exit, Exit::Failure);
    assert!(
        missing
            .stderr
            .contains("StatefulSet/shop/web is not in the input"),
        "{}",
        missing.stderr
    );
}

/// Three nodes with 1 CPU (one tainted), one zone each; 400m pods.
const CLUSTER: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: a, labels: {kubernetes.io/hostname: a, topology.kubernetes.io/zone: z1}}
status: {allocatable: {cpu: "1", memory: 4Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: b, labels: {kubernetes.io/hostname: b, topology.kubernetes.io/zone: z2}}
status: {allocatable: {cpu: "1", memory: 4Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: c, labels: {kubernetes.io/hostname: c, topology.kubernetes.io/zone: z3}}
spec:
  taints: [{key: dedicated, value: infra, effect: NoSchedule}]
status: {allocatable: {cpu: "1", memory: 4Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: jobs, labels: {app: batch}}
spec:
  containers:
  - {name: job, image: registry.example/job:1, resources: {requests: {cpu: 400m}}}
status: {phase: Pending}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: api}}
            topologyKey: kubernetes.io/hostname
      containers:
      - {name: api, image: registry.example/api:1, resources: {requests: {cpu: 100m}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: quorum, namespace: db}
spec:
  replicas: 3
  serviceName: quorum
  selector: {matchLabels: {app: quorum}}
  template:
    metadata: {labels: {app: quorum}}
    spec:
      tolerations: [{key: dedicated, operator: Exists}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: quorum}}
            topologyKey: topology.kubernetes.io/zone
      containers:
      - {name: member, image: registry.example/quorum:1, resources: {requests: {cpu: 100m}}}
---
apiVersion: v1
kind: Pod
metadata: {name: api-0, namespace: shop, labels: {app: api}}
spec:
  nodeName: a
  containers:
  - {name: api, image: registry.example/api:1, resources: {requests: {cpu: 100m}}}
status: {phase: Running}
"#;

fn ok_on_cluster(args: &[&str]) -> String {
    let mut all = vec!["-f", "-"];
    all.extend_from_slice(args);
    let run = run_with_stdin(&all, CLUSTER);
    assert_eq!(run.exit, Exit::Success, "policyctl {all:?}: {}", run.stderr);
    run.stdout
}

#[test]
fn copies_fill_the_cpu_of_the_untainted_nodes_and_the_fit_error_counts_every_node() {
    let table = ok_on_cluster(&["capacity", "--pod", "jobs/batch"]);
    insta::assert_snapshot!("capacity_cpu_and_taint_table", table);
    let doc = json(&ok_on_cluster(&[
        "capacity",
        "--pod",
        "jobs/batch",
        "-o",
        "json",
    ]));
    // a: 1000m - 100m (api-0) = 900m → 2 copies; b: 1000m → 2 copies; c tainted.
    assert_eq!(doc["count"], 4);
    assert_eq!(doc["nodes"], serde_json::json!({"a": 2, "b": 2}));
    assert_eq!(
        doc["reason"],
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    );
}

#[test]
fn anti_affinity_against_earlier_copies_applies() {
    // One more api replica per node besides api-0's: b only (c is tainted).
    let doc = json(&ok_on_cluster(&[
        "capacity",
        "--workload",
        "deployment/shop/api",
        "-o",
        "json",
    ]));
    assert_eq!(doc["count"], 1);
    assert_eq!(doc["nodes"], serde_json::json!({"b": 1}));
    // One quorum member per zone, the taint tolerated: three.
    let doc = json(&ok_on_cluster(&[
        "capacity",
        "--workload",
        "sts/db/quorum",
        "-o",
        "json",
    ]));
    assert_eq!(doc["count"], 3);
    assert_eq!(doc["nodes"], serde_json::json!({"a": 1, "b": 1, "c": 1}));
    assert_eq!(
        doc["reason"],
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
    );
}

#[test]
fn report_lists_spare_replicas_of_deployments_with_host_or_zone_anti_affinity() {
    let table = ok_on_cluster(&["report"]);
    let start = table
        .find("== Spare replicas")
        .expect("the spare-replica section");
    let section: String = table[start..]
        .lines()
        .enumerate()
        .take_while(|(i, l)| *i == 0 || !l.starts_with("== "))
        .map(|(_, l)| l)
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!("report_spare_replicas_section", section);
    let doc = json(&ok_on_cluster(&["report", "-o", "json"]));
    let api = &doc["spareReplicas"]["shop/api"];
    assert_eq!(api["moreReplicasFit"], 1);
    assert_eq!(
        api["antiAffinityKeys"],
        serde_json::json!(["kubernetes.io/hostname"])
    );
    // StatefulSets are not part of this section.
    assert!(doc["spareReplicas"].get("db/quorum").is_none());
}

#[test]
fn report_on_the_example_cluster_has_the_web_deployment() {
    let doc = json(&ok(&["report", "-o", "json"]).stdout);
    let web = &doc["spareReplicas"]["shop/web"];
    assert_eq!(
        web["antiAffinityKeys"],
        serde_json::json!(["node.cluster.x-k8s.io/esxi-host"])
    );
    let pod = json(
        &ok(&[
            "capacity",
            "--workload",
            "deployment/shop/web",
            "-o",
            "json",
        ])
        .stdout,
    );
    // Every copy lands on worker-b3, which lacks the host key: none of
    // them counts as a spare replica of the rule.
    assert_eq!(pod["count"], 108);
    assert_eq!(pod["copiesOnNodesMissingTopologyKey"], 108);
    assert_eq!(web["moreReplicasFit"], 0);
    assert_eq!(web["notCounted"]["copies"], pod["count"]);
}

/// One node with 1 CPU running a low-priority 800m pod.
const PREEMPTION: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {allocatable: {cpu: "1", memory: 4Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: low, namespace: batch}
spec:
  nodeName: n1
  priority: 0
  containers:
  - {name: c, image: registry.example/c:1, resources: {requests: {cpu: 800m}}}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: tiny, namespace: batch}
spec:
  nodeName: n1
  priority: 0
  containers:
  - {name: c, image: registry.example/c:1, resources: {requests: {cpu: 50m}}}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: urgent, namespace: batch}
spec:
  priority: 1000
  containers:
  - {name: c, image: registry.example/c:1, resources: {requests: {cpu: 500m}}}
status: {phase: Pending}
---
apiVersion: v1
kind: Pod
metadata: {name: peer, namespace: batch}
spec:
  priority: 0
  containers:
  - {name: c, image: registry.example/c:1, resources: {requests: {cpu: 500m}}}
status: {phase: Pending}
---
apiVersion: v1
kind: Pod
metadata: {name: polite, namespace: batch}
spec:
  priority: 1000
  preemptionPolicy: Never
  containers:
  - {name: c, image: registry.example/c:1, resources: {requests: {cpu: 500m}}}
status: {phase: Pending}
"#;

fn diagnose(pod: &str, format: &str) -> String {
    let run = run_with_stdin(
        &["-f", "-", "diagnose", "--pod", pod, "-o", format],
        PREEMPTION,
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    run.stdout
}

#[test]
fn diagnose_hints_at_preemption_of_the_fewest_lower_priority_pods() {
    let table = diagnose("batch/urgent", "table");
    insta::assert_snapshot!("diagnose_preemption_hint_table", table);
    let doc = json(&diagnose("batch/urgent", "json"));
    // Evicting `low` frees enough; `tiny` is put back.
    assert_eq!(
        doc["nodes"]["n1"]["preemptionVictims"],
        serde_json::json!(["batch/low (priority 0)"])
    );
}

#[test]
fn no_preemption_hint_for_equal_priority_or_preemption_policy_never() {
    for pod in ["batch/peer", "batch/polite"] {
        let doc = json(&diagnose(pod, "json"));
        assert_eq!(doc["nodes"]["n1"]["fits"], false, "{pod}");
        assert!(
            doc["nodes"]["n1"].get("preemptionVictims").is_none(),
            "{pod}: {doc}"
        );
        assert!(!diagnose(pod, "table").contains("Preemption"), "{pod}");
    }
}
