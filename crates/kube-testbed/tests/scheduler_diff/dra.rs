//! Dynamic Resource Allocation against the real kube-scheduler: for each
//! seed a small cluster whose devices are published by ResourceSlices
//! created directly (no driver runs), DeviceClasses with CEL selectors,
//! and pending pods with ResourceClaims of every shape the allocator
//! handles: exact counts, `allocationMode: All`, request selectors on
//! attributes and capacity, `firstAvailable` alternatives, `matchAttribute`
//! constraints, a network-attached pool reachable from one zone, and
//! claims shared with an earlier pod.
//!
//! Pods are created one at a time, each after its claims; before each
//! pod is created the simulator reads the DRA objects back from the API
//! server, so that it sees the allocations the real scheduler wrote for
//! the pods before, and none for this one. The verdict is compared as for the other scenarios
//! ([`super::expected`], [`super::agrees`]).

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube_scheduler_sim::{ClusterState, DraObjects};
use serde_json::{Value, json};

use super::generate::{PRIORITY_CLASSES, Rng};
use super::{Real, agrees, decision, delete_pod, expected, post_filter_text, report};

/// The GPUs' driver: node-local pools, one per node.
const GPU: &str = "gpu.example.com";
/// The network-attached devices' driver: one pool, reachable from the
/// nodes of one zone.
const NIC: &str = "nic.example.com";
/// The cache probe's driver (see [`wait_for_dra_caches`]).
const PROBE: &str = "probe.example.com";
const ZONE: &str = "topology.kubernetes.io/zone";

/// Counts over the DRA seeds.
#[derive(Debug, Default)]
pub struct DraTally {
    pub seeds: u64,
    pub decisions: u64,
    pub bound: u64,
    pub unschedulable: u64,
    pub agreed: u64,
    /// Pods whose claims the real scheduler allocated.
    pub allocated: u64,
    /// Decisions about pods asking for an extended resource a class serves
    /// (DR.11), and how many of them were bound.
    pub extended: u64,
    pub extended_bound: u64,
    /// Decisions about pods with a claim for a shared device (DR.12), and
    /// how many of them were bound.
    pub shared: u64,
    pub shared_bound: u64,
}

fn from_json<T: k8s_openapi::serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap_or_else(|e| panic!("a generated object: {e}"))
}

/// The objects of one seed, in creation order.
struct Scenario {
    namespace: String,
    nodes: Vec<Node>,
    classes: Vec<DeviceClass>,
    slices: Vec<ResourceSlice>,
    /// Pending pods, each with the claims to create before it.
    pending: Vec<(Pod, Vec<ResourceClaim>)>,
}

fn scenario(seed: u64) -> Scenario {
    let mut rng = Rng::new(seed ^ 0xd7a_5eed);
    let prefix = format!("dra-{seed}");
    let namespace = prefix.clone();
    let seed_label = seed.to_string();
    let node_count = rng.range(3, 6);
    let mut nodes = Vec::new();
    let mut slices = Vec::new();
    for i in 0..node_count {
        let name = format!("{prefix}-n{i}");
        let zone = if i % 2 == 0 { "zone-a" } else { "zone-b" };
        let (cpu, memory) = *rng.pick(&[("2", "4Gi"), ("4", "8Gi"), ("8", "16Gi")]);
        let allocatable = json!({"cpu": cpu, "memory": memory, "pods": "110"});
        nodes.push(from_json(json!({
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, ZONE: zone, "dra-seed": seed_label}},
            "status": {"capacity": allocatable, "allocatable": allocatable,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
        })));
        let gpus: Vec<Value> = (0..rng.range(0, 4))
            .map(|g| {
                let model = *rng.pick(&["a100", "t4"]);
                let memory = if model == "a100" {
                    *rng.pick(&["40Gi", "80Gi"])
                } else {
                    "16Gi"
                };
                let mut device = json!({
                    "name": format!("gpu-{g}"),
                    "attributes": {"model": {"string": model}, "numa": {"int": g % 2}},
                    "capacity": {"memory": {"value": memory}},
                });
                if rng.chance(10) {
                    device["taints"] = json!([{"key": "degraded", "effect": "NoSchedule"}]);
                }
                device
            })
            .collect();
        slices.push(from_json(json!({
            "metadata": {"name": format!("{name}-gpus"), "labels": {"dra-seed": seed_label}},
            "spec": {"driver": GPU, "nodeName": name, "devices": gpus,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}},
        })));
    }
    slices.push(from_json(json!({
        "metadata": {"name": format!("{prefix}-nics"), "labels": {"dra-seed": seed_label}},
        "spec": {"driver": NIC,
                 "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": ZONE, "operator": "In", "values": ["zone-a"]}]}]},
                 "devices": [{"name": "nic-0"}, {"name": "nic-1"}],
                 "pool": {"name": format!("{prefix}-fabric"), "generation": 1, "resourceSliceCount": 1}},
    })));
    // Created last: the cache probe's device.
    slices.push(from_json(json!({
        "metadata": {"name": format!("{prefix}-probe"), "labels": {"dra-seed": seed_label}},
        "spec": {"driver": PROBE, "nodeName": format!("{prefix}-n0"),
                 "devices": [{"name": "probe"}],
                 "pool": {"name": format!("{prefix}-probe"), "generation": 1, "resourceSliceCount": 1}},
    })));
    let class = |name: &str, expression: &str| -> DeviceClass {
        from_json(json!({
            "metadata": {"name": format!("{prefix}-{name}"), "labels": {"dra-seed": seed_label}},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        }))
    };
    let classes = vec![
        class("gpu", &format!("device.driver == '{GPU}'")),
        class(
            "a100",
            &format!("device.driver == '{GPU}' && device.attributes['{GPU}'].model == 'a100'"),
        ),
        class("nic", &format!("device.driver == '{NIC}'")),
        class("probe", &format!("device.driver == '{PROBE}'")),
    ];
    let mut pending = Vec::new();
    let mut earlier_claims: Vec<String> = Vec::new();
    for p in 0..rng.range(6, 10) {
        let pod_name = format!("pod-{p}");
        let mut claims = Vec::new();
        let mut names = Vec::new();
        if !earlier_claims.is_empty() && rng.chance(15) {
            names.push(rng.pick(&earlier_claims).clone());
        } else {
            for c in 0..rng.range(1, 2) {
                let name = format!("{pod_name}-c{c}");
                claims.push(claim(&mut rng, &prefix, &namespace, &name));
                earlier_claims.push(name.clone());
                names.push(name);
            }
        }
        let entries: Vec<Value> = names
            .iter()
            .map(|n| json!({"name": n, "resourceClaimName": n}))
            .collect();
        let cpu = *rng.pick(&["", "500m", "1", "2"]);
        let requests = if cpu.is_empty() {
            json!({})
        } else {
            json!({"cpu": cpu})
        };
        let mut spec = json!({
            "containers": [{"name": "main", "image": "registry.example/app:1",
                            "resources": {"requests": requests}}],
            "resourceClaims": entries,
            "priorityClassName": PRIORITY_CLASSES[0].0,
        });
        if rng.chance(20) {
            spec["nodeSelector"] = json!({ZONE: *rng.pick(&["zone-a", "zone-b"])});
        }
        let pod: Pod = from_json(json!({
            "metadata": {"name": pod_name, "namespace": namespace},
            "spec": spec,
        }));
        pending.push((pod, claims));
    }
    Scenario {
        namespace,
        nodes,
        classes,
        slices,
        pending,
    }
}

/// The domain of the seed's extended resource (DR.11): `<prefix>.example.com`.
const EXTENDED_DOMAIN: &str = "example.com";
/// The prefix of a DeviceClass's implicit extended resource name.
const IMPLICIT_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// Extended resources backed by DRA, for the releases that serve them
/// (1.36 and later, DR.11): a class naming `<prefix>.example.com/gpu`
/// (created before the cache probe's class), one node advertising one of
/// it as a device plugin would, and pods asking for it or for the `a100`
/// class's implicit name, placed among the others. A stream of its own
/// leaves every other draw of the seed as it was.
fn add_extended_resources(scenario: &mut Scenario, seed: u64) {
    let mut rng = Rng::new(seed ^ 0xe87e_4ded);
    let prefix = format!("dra-{seed}");
    let resource = format!("{prefix}.{EXTENDED_DOMAIN}/gpu");
    let class: DeviceClass = from_json(json!({
        "metadata": {"name": format!("{prefix}-gpu-ext"), "labels": {"dra-seed": seed.to_string()}},
        "spec": {"extendedResourceName": resource,
                 "selectors": [{"cel": {"expression": format!("device.driver == '{GPU}'")}}]},
    }));
    let probe_at = scenario.classes.len().saturating_sub(1);
    scenario.classes.insert(probe_at, class);
    if let Some(status) = scenario.nodes.get_mut(1).and_then(|n| n.status.as_mut()) {
        for list in [status.capacity.as_mut(), status.allocatable.as_mut()]
            .into_iter()
            .flatten()
        {
            list.insert(
                resource.clone(),
                k8s_openapi::apimachinery::pkg::api::resource::Quantity("1".into()),
            );
        }
    }
    for e in 0..rng.range(2, 4) {
        let (name, count) = if rng.chance(30) {
            (format!("{IMPLICIT_PREFIX}{prefix}-a100"), 1)
        } else {
            (resource.clone(), rng.range(1, 3))
        };
        let amount = json!({name: count.to_string()});
        let pod: Pod = from_json(json!({
            "metadata": {"name": format!("ext-{e}"), "namespace": scenario.namespace},
            "spec": {
                "containers": [{"name": "main", "image": "registry.example/app:1",
                                "resources": {"requests": amount, "limits": amount}}],
                "priorityClassName": PRIORITY_CLASSES[0].0,
            },
        }));
        let at = rng.range(0, scenario.pending.len());
        scenario.pending.insert(at, (pod, Vec::new()));
    }
}

/// The shared devices' driver (DR.12).
const SHARED: &str = "shared.example.com";

/// Consumable capacity, for the releases that have it (1.36 and later,
/// DR.12): on the first two nodes a pool of devices that allow several
/// allocations, one with 40 GiB of memory handed out in steps of 10 GiB
/// (10 GiB by default, 40 GiB at most), one with 20 GiB and no policy, and
/// one without capacity; a class selecting them; and 3–5 more pods, each
/// with a claim for one of them asking for 15 GiB (20 once rounded), for
/// 50 GiB (above the maximum), or for nothing (the default, or all of a
/// device without policy), placed among the others. A stream of its own
/// leaves every other draw of the seed as it was.
fn add_shared_devices(scenario: &mut Scenario, seed: u64) {
    let mut rng = Rng::new(seed ^ 0x5ba2_ed00);
    let prefix = format!("dra-{seed}");
    let seed_label = seed.to_string();
    let class: DeviceClass = from_json(json!({
        "metadata": {"name": format!("{prefix}-shared"), "labels": {"dra-seed": seed_label}},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == '{SHARED}'")}}]},
    }));
    let probe_class = scenario.classes.len().saturating_sub(1);
    scenario.classes.insert(probe_class, class);
    let probe_slice = scenario.slices.len().saturating_sub(1);
    for node in scenario.nodes.iter().take(2) {
        let name = node.metadata.name.clone().unwrap_or_default();
        let slice: ResourceSlice = from_json(json!({
            "metadata": {"name": format!("{name}-shared"), "labels": {"dra-seed": seed_label}},
            "spec": {"driver": SHARED, "nodeName": name,
                     "pool": {"name": format!("{name}-shared"), "generation": 1, "resourceSliceCount": 1},
                     "devices": [
                         {"name": "stepped", "allowMultipleAllocations": true,
                          "capacity": {"memory": {"value": "40Gi", "requestPolicy": {"default": "10Gi",
                              "validRange": {"min": "10Gi", "step": "10Gi", "max": "40Gi"}}}}},
                         {"name": "plain", "allowMultipleAllocations": true,
                          "capacity": {"memory": {"value": "20Gi"}}},
                         {"name": "bare", "allowMultipleAllocations": true}]},
        }));
        scenario.slices.insert(probe_slice, slice);
    }
    for e in 0..rng.range(3, 5) {
        let pod_name = format!("shared-{e}");
        let mut exact = json!({"deviceClassName": format!("{prefix}-shared")});
        match rng.below(3) {
            0 => exact["capacity"] = json!({"requests": {"memory": "15Gi"}}),
            1 => exact["capacity"] = json!({"requests": {"memory": "50Gi"}}),
            _ => {}
        }
        let claim: ResourceClaim = from_json(json!({
            "metadata": {"name": format!("{pod_name}-c0"), "namespace": scenario.namespace},
            "spec": {"devices": {"requests": [{"name": "share", "exactly": exact}]}},
        }));
        let pod: Pod = from_json(json!({
            "metadata": {"name": pod_name, "namespace": scenario.namespace},
            "spec": {
                "containers": [{"name": "main", "image": "registry.example/app:1"}],
                "resourceClaims": [{"name": "c0", "resourceClaimName": format!("{pod_name}-c0")}],
                "priorityClassName": PRIORITY_CLASSES[0].0,
            },
        }));
        let at = rng.range(0, scenario.pending.len());
        scenario.pending.insert(at, (pod, vec![claim]));
    }
}

/// Whether a pod asks for an extended resource the seed's classes serve
/// (DR.11): DynamicResources then holds a claim for it.
pub fn requests_class_served_resource(pod: &Pod) -> bool {
    pod.spec.iter().flat_map(|s| s.containers.iter()).any(|c| {
        c.resources
            .iter()
            .flat_map(|r| r.requests.iter().flatten())
            .any(|(name, _)| {
                name.starts_with(IMPLICIT_PREFIX)
                    || name.ends_with(&format!(".{EXTENDED_DOMAIN}/gpu"))
            })
    })
}

/// One claim of a random shape.
fn claim(rng: &mut Rng, prefix: &str, namespace: &str, name: &str) -> ResourceClaim {
    let class = |c: &str| format!("{prefix}-{c}");
    let memory_at_least = |q: &str| {
        json!([{"cel": {"expression": format!(
            "device.capacity['{GPU}'].memory.compareTo(quantity('{q}')) >= 0")}}])
    };
    let model = |m: &str| json!([{"cel": {"expression": format!("device.attributes['{GPU}'].model == '{m}'")}}]);
    let devices = match rng.below(8) {
        0 => json!({"requests": [{"name": "gpus", "exactly": {
            "deviceClassName": class("gpu"), "count": rng.range(1, 3)}}]}),
        1 => json!({"requests": [{"name": "big", "exactly": {
            "deviceClassName": class("gpu"), "selectors": memory_at_least("40Gi")}}]}),
        2 => json!({"requests": [{"name": "a100", "exactly": {
            "deviceClassName": class("a100"), "count": rng.range(1, 2)}}]}),
        3 => json!({"requests": [{"name": "all-t4", "exactly": {
            "deviceClassName": class("gpu"), "allocationMode": "All", "selectors": model("t4")}}]}),
        4 => json!({"requests": [{"name": "gpu", "firstAvailable": [
            {"name": "two-a100", "deviceClassName": class("a100"), "count": 2},
            {"name": "one-t4", "deviceClassName": class("gpu"), "selectors": model("t4")}]}]}),
        5 => json!({
            "requests": [
                {"name": "g1", "exactly": {"deviceClassName": class("gpu")}},
                {"name": "g2", "exactly": {"deviceClassName": class("gpu")}}],
            "constraints": [{"matchAttribute": format!("{GPU}/numa")}]}),
        6 => json!({"requests": [{"name": "nic", "exactly": {"deviceClassName": class("nic")}}]}),
        _ => json!({"requests": [{"name": "tolerant", "exactly": {
            "deviceClassName": class("gpu"),
            "tolerations": [{"key": "degraded", "operator": "Exists"}]}}]}),
    };
    from_json(json!({
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": devices},
    }))
}

/// The DRA objects of the seed as the API server holds them now.
async fn dra_now(client: &kube::Client, namespace: &str, seed: u64) -> DraObjects {
    let of_seed = ListParams::default().labels(&format!("dra-seed={seed}"));
    let classes: Api<DeviceClass> = Api::all(client.clone());
    let slices: Api<ResourceSlice> = Api::all(client.clone());
    let claims: Api<ResourceClaim> = Api::namespaced(client.clone(), namespace);
    let list = |what: &str, error: kube::Error| -> ! { panic!("listing {what}: {error}") };
    DraObjects {
        device_classes: classes
            .list(&of_seed)
            .await
            .unwrap_or_else(|e| list("DeviceClasses", e))
            .items,
        claims: claims
            .list(&ListParams::default())
            .await
            .unwrap_or_else(|e| list("ResourceClaims", e))
            .items,
        claim_templates: Vec::new(),
        slices: slices
            .list(&of_seed)
            .await
            .unwrap_or_else(|e| list("ResourceSlices", e))
            .items,
    }
}

/// Waits until kube-scheduler's cache holds exactly `nodes` nodes (the
/// seeds before deleted theirs): a probe pod that fits no node must be
/// refused by that many.
async fn wait_for_node_count(client: &kube::Client, namespace: &str, nodes: usize) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let want = format!(
        "0/{nodes} nodes are available: {nodes} node(s) didn't match Pod's node affinity/selector.{}",
        post_filter_text(false)
    );
    let mut last = Real::Other(String::new(), String::new());
    for attempt in 0..50 {
        let name = format!("count-{attempt}");
        let probe: Pod = from_json(json!({
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": "registry.example/tool:3"}],
                     "nodeSelector": {"diff-probe": "nowhere"},
                     "priorityClassName": PRIORITY_CLASSES[0].0},
        }));
        if let Err(error) = pods.create(&PostParams::default(), &probe).await {
            panic!("creating the node-count probe: {error}");
        }
        last = decision(&pods, &name).await;
        delete_pod(&pods, &name).await;
        if last == Real::Unschedulable(want.clone()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "kube-scheduler's cache never held the {nodes} nodes of the seed; the probe got {last:?}"
    );
}

/// Waits until kube-scheduler's DRA caches hold the seed's classes and
/// slices: a probe pod whose claim asks for the device of the slice
/// created last must be bound (to the node of that slice).
async fn wait_for_dra_caches(client: &kube::Client, namespace: &str, prefix: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let claims: Api<ResourceClaim> = Api::namespaced(client.clone(), namespace);
    let probe_claim: ResourceClaim = from_json(json!({
        "metadata": {"name": "probe"},
        "spec": {"devices": {"requests": [{"name": "probe", "exactly": {
            "deviceClassName": format!("{prefix}-probe")}}]}},
    }));
    if let Err(error) = claims.create(&PostParams::default(), &probe_claim).await {
        panic!("creating the probe claim: {error}");
    }
    let mut last = Real::Other(String::new(), String::new());
    for attempt in 0..50 {
        let name = format!("probe-{attempt}");
        let probe: Pod = from_json(json!({
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": "registry.example/tool:3"}],
                     "resourceClaims": [{"name": "probe", "resourceClaimName": "probe"}],
                     "priorityClassName": PRIORITY_CLASSES[0].0},
        }));
        if let Err(error) = pods.create(&PostParams::default(), &probe).await {
            panic!("creating the probe pod: {error}");
        }
        last = decision(&pods, &name).await;
        delete_pod(&pods, &name).await;
        if matches!(last, Real::Bound(_)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("kube-scheduler never allocated the probe device of {prefix}; the probe got {last:?}");
}

/// Runs one seed: creates its objects, compares every pending pod's
/// decision, and removes what can be removed.
pub async fn run_seed(
    client: &kube::Client,
    seed: u64,
    tally: &mut DraTally,
    mismatches: &mut Vec<String>,
) {
    let mut scenario = scenario(seed);
    if super::options().kubernetes_version >= kube_scheduler_sim::KubernetesVersion::V1_36 {
        add_extended_resources(&mut scenario, seed);
        add_shared_devices(&mut scenario, seed);
    }
    let prefix = format!("dra-{seed}");
    let post = PostParams::default();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace = from_json(json!({"metadata": {"name": scenario.namespace}}));
    if let Err(error) = namespaces.create(&post, &namespace).await {
        panic!("DRA seed {seed}: creating its namespace: {error}");
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let mut created_nodes = Vec::new();
    for node in &scenario.nodes {
        match nodes.create(&post, node).await {
            Ok(node) => created_nodes.push(node),
            Err(error) => panic!("DRA seed {seed}: creating a node: {error}"),
        }
    }
    let classes: Api<DeviceClass> = Api::all(client.clone());
    for class in &scenario.classes {
        if let Err(error) = classes.create(&post, class).await {
            panic!("DRA seed {seed}: creating a DeviceClass: {error}");
        }
    }
    let slices: Api<ResourceSlice> = Api::all(client.clone());
    for slice in &scenario.slices {
        if let Err(error) = slices.create(&post, slice).await {
            panic!("DRA seed {seed}: creating a ResourceSlice: {error}");
        }
    }
    wait_for_node_count(client, &scenario.namespace, created_nodes.len()).await;
    wait_for_dra_caches(client, &scenario.namespace, &prefix).await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), &scenario.namespace);
    let claims: Api<ResourceClaim> = Api::namespaced(client.clone(), &scenario.namespace);
    let options = super::options();
    let mut sim = ClusterState::for_options(&created_nodes, &[namespace], &[], &options)
        .unwrap_or_else(|error| {
            panic!("DRA seed {seed}: the simulator refused the cluster: {error}")
        });
    tally.seeds += 1;
    for (pod, pod_claims) in &scenario.pending {
        let name = pod.metadata.name.clone().unwrap_or_default();
        for claim in pod_claims {
            if let Err(error) = claims.create(&post, claim).await {
                panic!(
                    "DRA seed {seed}: creating claim {:?}: {error}",
                    claim.metadata.name
                );
            }
        }
        // Read before the pod exists: once it does, the real scheduler may
        // already have written its allocations.
        sim.set_dra(&dra_now(client, &scenario.namespace, seed).await);
        let created = match pods.create(&post, pod).await {
            Ok(pod) => pod,
            Err(error) => panic!("DRA seed {seed}: creating pod {name}: {error}"),
        };
        let result = match sim.evaluate(&created, &options) {
            Ok(result) => result,
            Err(error) => panic!("DRA seed {seed}: the simulator failed on {name}: {error}"),
        };
        let want = expected(&result, &created);
        let real = decision(&pods, &name).await;
        tally.decisions += 1;
        if requests_class_served_resource(&created) {
            tally.extended += 1;
        }
        if name.starts_with("shared-") {
            tally.shared += 1;
        }
        if agrees(&want, &real) {
            tally.agreed += 1;
        } else {
            mismatches.push(format!(
                "DRA {}",
                report(seed, &created, &result, &want, &real)
            ));
        }
        match &real {
            Real::Bound(node) => {
                tally.bound += 1;
                if !pod_claims.is_empty() {
                    tally.allocated += 1;
                }
                if requests_class_served_resource(&created) {
                    tally.extended_bound += 1;
                }
                if name.starts_with("shared-") {
                    tally.shared_bound += 1;
                }
                let mut bound = created.clone();
                if let Some(spec) = bound.spec.as_mut() {
                    spec.node_name = Some(node.clone());
                }
                if let Err(error) = sim.add_pod(&bound) {
                    panic!("DRA seed {seed}: the simulator refused the bound pod {name}: {error}");
                }
            }
            _ => {
                tally.unschedulable += 1;
                delete_pod(&pods, &name).await;
            }
        }
    }

    // The pods and the nodes go. The claims stay: allocated ones carry
    // the finalizer of the resource-claim controller, which this bed does
    // not run; their devices belong to this seed's slices only.
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    if let Err(error) = pods.delete_collection(&now, &ListParams::default()).await {
        panic!("DRA seed {seed}: deleting its pods: {error}");
    }
    let of_seed = ListParams::default().labels(&format!("dra-seed={seed}"));
    if let Err(error) = nodes.delete_collection(&now, &of_seed).await {
        panic!("DRA seed {seed}: deleting its nodes: {error}");
    }
    // Slices and classes too: the fabric's node selector would otherwise
    // reach the next seed's nodes.
    if let Err(error) = slices.delete_collection(&now, &of_seed).await {
        panic!("DRA seed {seed}: deleting its ResourceSlices: {error}");
    }
    if let Err(error) = classes.delete_collection(&now, &of_seed).await {
        panic!("DRA seed {seed}: deleting its DeviceClasses: {error}");
    }
}
