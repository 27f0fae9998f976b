//! `policyctl schedule --all` beside the real kube-scheduler, on whole
//! clusters: the bundled example cluster and a generated dump
//! (`testkit::cluster_dump`, one pod in 25 left unbound).
//!
//! Each cluster's objects that kube-scheduler reads are created in a test
//! bed running kube-scheduler (the bed's release, `percentageOfNodesToScore:
//! 100`, as the simulator scores every node): namespaces, classes, nodes,
//! volumes and claims with their statuses, workloads and services, and the
//! bound pods. The pending pods are then created in the queue order
//! `schedule --all` states (its JSON `order`), so that kube-scheduler's
//! queue, which orders pods of one priority by the time they reach it, takes
//! them in the same order. Each pending pod ends bound, or with
//! `PodScheduled=False`, or (a claim of a WaitForFirstConsumer class) with
//! the node kube-scheduler chose written on the claim as
//! `volume.kubernetes.io/selected-node`, while it waits for a provisioner the
//! bed does not run.
//!
//! Every pod is counted once:
//! - **same**: the node `schedule --all` gives, or both leave it pending
//!   with the same FitError (kube-scheduler's message goes on with its
//!   PostFilter's text: the preemption attempt, or ` not found` after a
//!   PreFilter rejection);
//! - **tie**: another node, but one of the nodes of highest total that the
//!   simulator (the library `schedule` runs) gives for the pod on the
//!   cluster as the real scheduler left it before that pod (kube-scheduler
//!   picks at random among tied nodes, and one tie changes what follows);
//! - **mismatch**: anything else, which fails the test with both answers.
//!
//! `SCHEDULE_ALL_DUMP_PODS` and `SCHEDULE_ALL_DUMP_NODES` (default 1,000 and
//! 50) size the generated dump; the 10,000-pod, 500-node run of
//! `docs/kube-scheduler-sim.md` is
//! `SCHEDULE_ALL_DUMP_PODS=10000 SCHEDULE_ALL_DUMP_NODES=500 cargo test -p
//! policyctl --test schedule_all_real_scheduler -- --nocapture`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube_scheduler_sim::{ClusterState, Options, StorageObjects, Workloads};
use kube_testbed::Testbed;
use serde_json::{Value, json};
use testkit::cluster_dump::{DumpFormat, DumpShape, dump};

/// How long the real scheduler may take over all pending pods of a cluster.
const DECISIONS_LIMIT: Duration = Duration::from_secs(300);

/// Pods created or patched at once while loading.
const IN_FLIGHT: usize = 32;

/// The kinds kube-scheduler reads, in the order they are created (what a
/// pod refers to before the pod), with their resource and whether their
/// status is loaded through the status subresource.
const KINDS: &[(&str, &str, &str, bool, bool)] = &[
    // (apiVersion, kind, plural, namespaced, status)
    ("v1", "Namespace", "namespaces", false, false),
    (
        "scheduling.k8s.io/v1",
        "PriorityClass",
        "priorityclasses",
        false,
        false,
    ),
    (
        "storage.k8s.io/v1",
        "StorageClass",
        "storageclasses",
        false,
        false,
    ),
    ("storage.k8s.io/v1", "CSINode", "csinodes", false, false),
    ("v1", "Node", "nodes", false, true),
    ("v1", "PersistentVolume", "persistentvolumes", false, true),
    (
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        true,
    ),
    ("v1", "Service", "services", true, false),
    (
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        true,
        false,
    ),
    ("apps/v1", "ReplicaSet", "replicasets", true, false),
    ("apps/v1", "StatefulSet", "statefulsets", true, false),
    ("v1", "Pod", "pods", true, true),
];

/// What the real scheduler did with one pending pod.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Real {
    /// Bound to, or (a late-binding claim) chosen, this node.
    Node(String),
    /// `PodScheduled=False` with reason `Unschedulable` and this message.
    Unschedulable(String),
}

/// How one pod compares.
#[derive(Debug, Default)]
struct Tally {
    pods: usize,
    same: usize,
    tie: usize,
    mismatches: Vec<String>,
}

fn object_key(object: &Value) -> String {
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

/// Every object of a YAML or JSON file, `kind: List` items flattened.
fn objects_of_file(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    documents
        .into_iter()
        .flat_map(|document| match document["items"].as_array() {
            Some(items) if document["kind"] == "List" => items.clone(),
            _ => vec![document],
        })
        .filter(|document| !document.is_null())
        .collect()
}

fn is_pending_pod(object: &Value) -> bool {
    object["kind"] == "Pod"
        && object["spec"]["nodeName"]
            .as_str()
            .is_none_or(str::is_empty)
        && !matches!(
            object["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        )
}

/// The object as a client creates it: no server-set metadata, no status,
/// no cluster IP of the dumped cluster.
fn as_created(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object["metadata"].as_object_mut() {
        for field in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "managedFields",
            "generation",
            "selfLink",
        ] {
            metadata.remove(field);
        }
    }
    if let Some(fields) = object.as_object_mut() {
        fields.remove("status");
    }
    let service = object["kind"] == "Service";
    if let Some(spec) = object["spec"].as_object_mut()
        && service
    {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    object
}

fn api_for(client: &kube::Client, object: &Value) -> Option<(Api<DynamicObject>, bool)> {
    let api_version = object["apiVersion"].as_str()?;
    let kind = object["kind"].as_str()?;
    let &(_, _, plural, namespaced, status) = KINDS
        .iter()
        .find(|(v, k, ..)| *v == api_version && *k == kind)?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    let api = match object["metadata"]["namespace"].as_str() {
        Some(namespace) if namespaced => Api::namespaced_with(client.clone(), namespace, &resource),
        Some(_) | None if namespaced => Api::default_namespaced_with(client.clone(), &resource),
        _ => Api::all_with(client.clone(), &resource),
    };
    Some((api, status))
}

/// Creates the object (a Namespace that exists already is left as it is)
/// and then, for the kinds that have one, writes its status.
async fn create(client: kube::Client, object: Value) -> Result<(), String> {
    let key = format!("{} {}", object["kind"], object_key(&object));
    let Some((api, with_status)) = api_for(&client, &object) else {
        return Ok(());
    };
    let created: DynamicObject =
        serde_json::from_value(as_created(&object)).map_err(|e| format!("{key}: {e}"))?;
    match api.create(&PostParams::default(), &created).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 && object["kind"] == "Namespace" => {}
        Err(error) => return Err(format!("creating {key}: {error}")),
    }
    if with_status && !object["status"].is_null() && !is_pending_pod(&object) {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let patch = json!({"status": object["status"]});
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| format!("writing the status of {key}: {e}"))?;
    }
    Ok(())
}

/// Creates the objects, `IN_FLIGHT` at a time, in the given order of kinds
/// (all of one kind before the next).
async fn create_all(client: &kube::Client, objects: &[Value]) {
    for (api_version, kind, ..) in KINDS {
        let of_kind: Vec<&Value> = objects
            .iter()
            .filter(|o| o["apiVersion"] == *api_version && o["kind"] == *kind)
            .collect();
        for chunk in of_kind.chunks(IN_FLIGHT) {
            let mut tasks = tokio::task::JoinSet::new();
            for object in chunk {
                tasks.spawn(create(client.clone(), (*object).clone()));
            }
            while let Some(done) = tasks.join_next().await {
                match done {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => panic!("{error}"),
                    Err(error) => panic!("a creating task failed: {error}"),
                }
            }
        }
    }
}

/// What kube-scheduler did with `pod`, once it has decided.
async fn decision(client: &kube::Client, pod: &Value) -> Option<Real> {
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or("default");
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), namespace);
    let now = pods.get(name).await.ok()?;
    if let Some(node) = now.spec.as_ref().and_then(|s| s.node_name.clone()) {
        return Some(Real::Node(node));
    }
    let claims: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::namespaced(client.clone(), namespace);
    for volume in now
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
    {
        if let Some(claim) = &volume.persistent_volume_claim
            && let Ok(claim) = claims.get(&claim.claim_name).await
            && let Some(node) = claim
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("volume.kubernetes.io/selected-node"))
        {
            return Some(Real::Node(node.clone()));
        }
    }
    let condition = now
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())?
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")?
        .clone();
    (condition.reason.as_deref() == Some("Unschedulable"))
        .then(|| Real::Unschedulable(condition.message.unwrap_or_default()))
}

/// `schedule --all -o json` on the files.
fn schedule_all(files: &[PathBuf]) -> Value {
    let mut args = vec!["schedule", "--all", "-o", "json"];
    for file in files {
        args.extend(["-f", file.to_str().unwrap_or_default()]);
    }
    let run = common::ok(&args);
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}\n{}", run.stdout))
}

/// The objects of `kind` as typed objects.
fn typed<K: serde::de::DeserializeOwned>(objects: &[Value], kind: &str) -> Vec<K> {
    objects
        .iter()
        .filter(|o| o["kind"] == kind)
        .map(|o| serde_json::from_value(o.clone()).unwrap_or_else(|e| panic!("{kind}: {e}")))
        .collect()
}

/// The simulator over the settled objects, following the real placements
/// one pod at a time.
fn follower(settled: &[Value]) -> ClusterState {
    let mut state = ClusterState::new(
        &typed(settled, "Node"),
        &typed(settled, "Namespace"),
        &typed(settled, "Pod"),
        true,
    );
    state.add_workloads(&Workloads {
        services: typed(settled, "Service"),
        replication_controllers: typed(settled, "ReplicationController"),
        replica_sets: typed(settled, "ReplicaSet"),
        stateful_sets: typed(settled, "StatefulSet"),
    });
    state.set_storage(&StorageObjects {
        claims: typed(settled, "PersistentVolumeClaim"),
        volumes: typed(settled, "PersistentVolume"),
        classes: typed(settled, "StorageClass"),
        csi_nodes: typed(settled, "CSINode"),
    });
    state
}

/// The feasible nodes of highest total for `pod` (every feasible node when
/// none is scored).
fn top_nodes(state: &ClusterState, pod: &Pod) -> Vec<String> {
    let result = state
        .evaluate(pod, &Options::default())
        .unwrap_or_else(|e| panic!("evaluating {:?}: {e}", pod.metadata.name));
    let best = result
        .feasible
        .iter()
        .filter_map(|n| result.totals.get(n))
        .max()
        .copied();
    match best {
        None => result.feasible.clone(),
        Some(best) => result
            .feasible
            .iter()
            .filter(|n| result.totals.get(*n) == Some(&best))
            .cloned()
            .collect(),
    }
}

fn typed_pod(pod: &Value) -> Pod {
    serde_json::from_value(pod.clone()).unwrap_or_else(|e| panic!("a pod: {e}"))
}

/// Loads `objects` into a fresh bed with kube-scheduler, lets it place the
/// pending pods, and compares each with `schedule --all` on `files` (which
/// hold the same objects).
async fn compare(what: &str, objects: Vec<Value>, files: &[PathBuf]) -> Tally {
    let sim = schedule_all(files);
    let order: Vec<String> = sim["order"]
        .as_array()
        .unwrap_or_else(|| panic!("schedule --all gave no order: {sim}"))
        .iter()
        .filter_map(|p| p.as_str().map(str::to_owned))
        .collect();
    let pending: BTreeMap<String, Value> = objects
        .iter()
        .filter(|o| is_pending_pod(o))
        .map(|o| (object_key(o), o.clone()))
        .collect();
    assert_eq!(
        order.iter().collect::<std::collections::BTreeSet<_>>(),
        pending.keys().collect(),
        "schedule --all places exactly the pending pods of {what}"
    );

    let bed = Testbed::builder()
        .with_scheduler()
        .scheduler_percentage_of_nodes_to_score(100)
        .start()
        .await
        .unwrap_or_else(|e| panic!("the test bed did not start: {e}"));
    let client = bed.client();
    let loading = Instant::now();
    let settled: Vec<Value> = objects
        .iter()
        .filter(|o| !is_pending_pod(o))
        .cloned()
        .collect();
    create_all(&client, &settled).await;
    eprintln!(
        "{what}: {} objects loaded in {:?}",
        settled.len(),
        loading.elapsed()
    );

    // The pending pods, one after the other in the simulator's queue order.
    let deciding = Instant::now();
    for pod in &order {
        create(client.clone(), pending[pod].clone())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let mut real: BTreeMap<String, Real> = BTreeMap::new();
    while real.len() < order.len() {
        for pod in &order {
            if !real.contains_key(pod)
                && let Some(decided) = decision(&client, &pending[pod]).await
            {
                real.insert(pod.clone(), decided);
            }
        }
        assert!(
            deciding.elapsed() < DECISIONS_LIMIT,
            "{what}: kube-scheduler decided {} of {} pending pods in {DECISIONS_LIMIT:?}",
            real.len(),
            order.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "{what}: {} pending pods decided in {:?}",
        order.len(),
        deciding.elapsed()
    );

    // Each pod against the simulator; the state of a tie check is the
    // cluster as the real scheduler left it before the pod.
    let mut state = follower(&settled);
    let mut tally = Tally::default();
    for pod in &order {
        tally.pods += 1;
        let sim_node = sim["assignments"][pod].as_str();
        let sim_reason = sim["unschedulable"][pod].as_str();
        let verdict = match (&real[pod], sim_node, sim_reason) {
            (Real::Node(node), Some(sim_node), _) if node == sim_node => Some(true),
            (Real::Unschedulable(message), None, Some(reason)) if message.starts_with(reason) => {
                Some(true)
            }
            (Real::Node(node), _, _) => {
                let top = top_nodes(&state, &typed_pod(&pending[pod]));
                if tally.tie == 0 {
                    eprintln!(
                        "{what}: first tie at pod {} of {}, {pod}: kube-scheduler chose {node}, \
                         schedule --all {sim_node:?}; the highest total is shared by {top:?}",
                        tally.pods,
                        order.len()
                    );
                }
                top.contains(node).then_some(false)
            }
            (Real::Unschedulable(_), ..) => None,
        };
        match verdict {
            Some(true) => tally.same += 1,
            Some(false) => tally.tie += 1,
            None => tally.mismatches.push(format!(
                "{what}: {pod}: kube-scheduler: {:?}; schedule --all: node {sim_node:?}, reason {sim_reason:?}",
                real[pod]
            )),
        }
        // The pod as the real scheduler left it, for the pods after it.
        if let Real::Node(node) = &real[pod] {
            let mut placed = pending[pod].clone();
            placed["spec"]["nodeName"] = json!(node);
            if let Err(error) = state.add_pod(&typed_pod(&placed)) {
                panic!("{what}: the simulator refused {pod} on {node}: {error}");
            }
        }
    }
    eprintln!(
        "{what}: {} pending pods: {} same, {} tie, {} mismatch",
        tally.pods,
        tally.same,
        tally.tie,
        tally.mismatches.len()
    );
    tally
}

fn example_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/cluster");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir:?}: {e}"))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
        Err(_) => default,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_all_places_the_example_cluster_s_pending_pods_as_kube_scheduler_does() {
    if kube_testbed::skip_requested() {
        return;
    }
    let files = example_files();
    let objects: Vec<Value> = files.iter().flat_map(|f| objects_of_file(f)).collect();
    let tally = compare("example cluster", objects, &files).await;
    assert!(tally.mismatches.is_empty(), "{:#?}", tally.mismatches);
    assert_eq!(tally.pods, 2, "the example has two pending pods");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_all_places_a_generated_dump_s_pending_pods_as_kube_scheduler_does() {
    if kube_testbed::skip_requested() {
        return;
    }
    let shape = DumpShape::new(
        env_usize("SCHEDULE_ALL_DUMP_PODS", 1_000),
        env_usize("SCHEDULE_ALL_DUMP_NODES", 50),
    );
    let mut objects: Vec<Value> =
        match serde_json::from_slice::<Value>(&dump(shape, DumpFormat::Json)) {
            Ok(list) => list["items"].as_array().cloned().unwrap_or_default(),
            Err(error) => panic!("the generated dump: {error}"),
        };
    // One pod in 25 is left for the scheduler, and its namespaces exist.
    let mut namespaces = std::collections::BTreeSet::new();
    for (index, object) in objects
        .iter_mut()
        .filter(|o| o["kind"] == "Pod")
        .enumerate()
    {
        if let Some(namespace) = object["metadata"]["namespace"].as_str() {
            namespaces.insert(namespace.to_owned());
        }
        if index % 25 == 24 {
            if let Some(spec) = object["spec"].as_object_mut() {
                spec.remove("nodeName");
            }
            if let Some(fields) = object.as_object_mut() {
                fields.remove("status");
            }
        }
    }
    objects.extend(
        namespaces.into_iter().map(
            |name| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        ),
    );
    let dir = std::env::temp_dir().join(format!("schedule-all-dump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let file = dir.join("dump.json");
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    std::fs::write(&file, list.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let what = format!("{} pods on {} nodes", shape.pods, shape.nodes);
    let tally = compare(&what, objects, std::slice::from_ref(&file)).await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(tally.mismatches.is_empty(), "{:#?}", tally.mismatches);
    assert_eq!(tally.pods, shape.pods / 25);
}
