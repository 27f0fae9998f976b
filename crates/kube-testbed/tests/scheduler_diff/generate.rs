//! A random cluster for the differential test, a pure function of a `u64`
//! seed: Namespaces, Nodes, pods already bound (`spec.nodeName`) and
//! pending pods, using the features the simulator models.
//!
//! What is generated, and what is deliberately left out, is listed in
//! `docs/kube-scheduler-sim.md` ("Checked against the real
//! kube-scheduler"); [`KNOWN_DEVIATIONS`] names the restrictions that keep
//! the generator away from known differences.

use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, Service,
};
use k8s_openapi::api::storage::v1::StorageClass;
use serde_json::{Value, json};

/// Restrictions of the generator that keep it away from known differences
/// between the simulator and the real kube-scheduler, or from behaviour
/// the simulator does not model (each explained in
/// `docs/kube-scheduler-sim.md`).
pub const KNOWN_DEVIATIONS: &[&str] = &[
    "late binding: pods mounting a WaitForFirstConsumer claim are left out of the capacity and \
     batch comparisons (kube-scheduler keeps such a pod assumed while it waits for a provisioner \
     or volume controller this bed does not run; the simulator's batch does not write the \
     chosen node onto the claim)",
    "preemption: pending pods use PriorityClasses with preemptionPolicy Never (the simulator \
     does not preempt; the real message then ends in a fixed PostFilter text, or in ' not found' \
     after a PreFilter rejection)",
];

/// The PriorityClasses pending pods use: (name, value), all with
/// `preemptionPolicy: Never`.
pub const PRIORITY_CLASSES: &[(&str, i32)] = &[("diff-never-low", 100), ("diff-never-high", 1000)];

/// The generated objects, in the order they are created.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Two namespaces, `team: a` and `team: b`.
    pub namespaces: Vec<Namespace>,
    /// Nodes with zone, hostname, disk and tier labels, taints, cordons,
    /// allocatable and images.
    pub nodes: Vec<Node>,
    /// Services selecting an `app`: their pods without spread constraints
    /// of their own get kube-scheduler's system-default spreading.
    pub services: Vec<Service>,
    /// PersistentVolumes, zonal (zone label, node affinity or both), each
    /// pre-bound to one claim; the last one is for the cache probe.
    pub volumes: Vec<PersistentVolume>,
    /// PersistentVolumeClaims: bound to those volumes (`spec.volumeName`
    /// and `pv.kubernetes.io/bind-completed`), or unbound without a class
    /// (immediate binding). The last one, `probe-data` in the first
    /// namespace, is for the cache probe.
    pub claims: Vec<PersistentVolumeClaim>,
    /// Late binding ([`late_storage`]): two WaitForFirstConsumer classes,
    /// local volumes of one of them, and claims of both.
    pub late: LateStorage,
    /// Pods bound by `spec.nodeName` when created.
    pub existing: Vec<Pod>,
    /// Pods for the scheduler, created one at a time.
    pub pending: Vec<Pod>,
}

/// The workspace's generator ([`testkit::SplitMix64`]) with the few draws
/// the generator needs.
#[derive(Debug, Clone)]
pub struct Rng(testkit::SplitMix64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Self(testkit::SplitMix64::new(seed))
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        self.0.below(u32::try_from(n).unwrap_or(u32::MAX)) as usize
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        self.0.range(lo as u64, hi as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One of `items` (not empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const ZONES: &[&str] = &["zone-a", "zone-b", "zone-c"];
const APPS: &[&str] = &["web", "db", "cache"];
const VERSIONS: &[&str] = &["v1", "v2"];
const IMAGES: &[(&str, i64)] = &[
    ("registry.example/app:1", 250_000_000),
    ("registry.example/db:2", 600_000_000),
    ("registry.example/tool:3", 40_000_000),
];
/// Requests of a bound pod's container, (cpu, memory); cpu and memory
/// are picked independently, and `""` requests nothing.
const EXISTING_REQUESTS: [(&str, &str); 5] = [
    ("", ""),
    ("125m", "256Mi"),
    ("250m", "512Mi"),
    ("500m", "1Gi"),
    ("1", "2Gi"),
];
/// Requests of a pending pod's container.
const PENDING_REQUESTS: [(&str, &str); 7] = [
    ("", ""),
    ("125m", "256Mi"),
    ("250m", "512Mi"),
    ("500m", "1Gi"),
    ("1", "2Gi"),
    ("1500m", "3Gi"),
    ("3", "6Gi"),
];
/// The hostname label key.
pub const HOSTNAME: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";

/// What one seed knows while it generates: names and the zones in use.
struct Ctx {
    rng: Rng,
    prefix: String,
    zones: Vec<&'static str>,
    node_names: Vec<String>,
    namespaces: [String; 2],
    /// Per namespace: the claims bound to a volume, and the unbound ones.
    bound_claims: [Vec<String>; 2],
    unbound_claims: [Vec<String>; 2],
    /// Per namespace: the claims of a WaitForFirstConsumer class.
    late_claims: [Vec<String>; 2],
    /// A stream of its own for late binding, so that the draws above give
    /// every seed the cluster they gave before late binding was generated.
    late_rng: Rng,
}

/// The cluster of `seed`.
pub fn cluster(seed: u64) -> Cluster {
    let prefix = format!("s{seed}");
    let mut ctx = Ctx {
        rng: Rng::new(seed),
        namespaces: [format!("{prefix}-a"), format!("{prefix}-b")],
        prefix,
        zones: Vec::new(),
        node_names: Vec::new(),
        bound_claims: [Vec::new(), Vec::new()],
        unbound_claims: [Vec::new(), Vec::new()],
        late_claims: [Vec::new(), Vec::new()],
        late_rng: Rng::new(seed ^ 0x1a7e_b1d0_0000_0000),
    };
    let zone_count = ctx.rng.range(2, 3);
    ctx.zones = ZONES[..zone_count].to_vec();
    let node_count = ctx.rng.range(3, 8);
    ctx.node_names = (0..node_count)
        .map(|i| format!("{}-n{i}", ctx.prefix))
        .collect();

    let namespaces = ctx
        .namespaces
        .iter()
        .zip(["a", "b"])
        .map(|(name, team)| {
            from_json(json!({
                "metadata": {"name": name, "labels": {"team": team, "diff-seed": seed.to_string()}}
            }))
        })
        .collect();
    let nodes = (0..node_count).map(|i| node(&mut ctx, i, seed)).collect();
    let (volumes, claims) = storage(&mut ctx, seed);
    let late = late_storage(&mut ctx, seed);
    let service_count = ctx.rng.range(0, 2);
    let services = (0..service_count)
        .map(|i| {
            let ns = ctx.rng.below(2);
            let app = *ctx.rng.pick(APPS);
            from_json(json!({
                "metadata": {"name": format!("svc-{i}"), "namespace": ctx.namespaces[ns]},
                "spec": {"selector": {"app": app}, "ports": [{"port": 80}]},
            }))
        })
        .collect();
    let existing_count = ctx.rng.range(0, 14);
    let existing = (0..existing_count)
        .map(|i| existing_pod(&mut ctx, i))
        .collect();
    let pending_count = ctx.rng.range(4, 12);
    let pending = (0..pending_count)
        .map(|i| pending_pod(&mut ctx, i))
        .collect();
    Cluster {
        namespaces,
        nodes,
        services,
        volumes,
        claims,
        late,
        existing,
        pending,
    }
}

/// Node features for the releases whose scheduler filters on them (1.36
/// and later, C.76): some nodes declare `RestartAllContainersOnContainerExits`
/// (or only a feature no pod needs), and some pending pods get a
/// `RestartAllContainers` restart rule, which needs it. A stream of its own
/// leaves every other draw of the seed as it was.
pub fn declare_node_features(cluster: &mut Cluster, seed: u64) {
    const RESTART_ALL: &str = "RestartAllContainersOnContainerExits";
    let mut rng = Rng::new(seed ^ 0x0dec_1a7e_0000_0000);
    for node in &mut cluster.nodes {
        let declared: &[&str] = match rng.below(4) {
            0 => &[RESTART_ALL],
            1 => &["ExtendWebSocketsToKubelet", RESTART_ALL],
            2 => &["ExtendWebSocketsToKubelet"],
            _ => &[],
        };
        if let Some(status) = node.status.as_mut()
            && !declared.is_empty()
        {
            status.declared_features = Some(declared.iter().map(|f| (*f).to_owned()).collect());
        }
    }
    for pod in &mut cluster.pending {
        if !rng.chance(30) {
            continue;
        }
        let Some(main) = pod.spec.as_mut().and_then(|s| s.containers.first_mut()) else {
            continue;
        };
        main.restart_policy = Some("Never".into());
        main.restart_policy_rules = Some(vec![from_json(json!({
            "action": "RestartAllContainers",
            "exitCodes": {"operator": "In", "values": [1]},
        }))]);
    }
}

fn from_json<T: k8s_openapi::serde::de::DeserializeOwned>(value: Value) -> T {
    match serde_json::from_value(value.clone()) {
        Ok(object) => object,
        Err(error) => panic!("the generator wrote an invalid object ({error}): {value}"),
    }
}

fn node(ctx: &mut Ctx, index: usize, seed: u64) -> Node {
    let rng = &mut ctx.rng;
    let name = ctx.node_names[index].clone();
    let mut labels = serde_json::Map::new();
    labels.insert(HOSTNAME.into(), json!(name));
    labels.insert("diff-seed".into(), json!(seed.to_string()));
    if !rng.chance(10) {
        labels.insert(ZONE.into(), json!(*rng.pick(&ctx.zones)));
    }
    if rng.chance(80) {
        labels.insert("disk".into(), json!(*rng.pick(&["ssd", "hdd"])));
    }
    labels.insert("tier".into(), json!(rng.range(1, 4).to_string()));

    let mut taints = Vec::new();
    if rng.chance(20) {
        taints.push(json!({"key": "dedicated", "value": "infra", "effect": "NoSchedule"}));
    }
    if rng.chance(15) {
        taints.push(json!({"key": "spot", "value": "true", "effect": "PreferNoSchedule"}));
    }
    if rng.chance(5) {
        taints.push(json!({"key": "maintenance", "effect": "NoExecute"}));
    }
    let unschedulable = rng.chance(7);

    // Nodes of several cpu:memory ratios, so that
    // NodeResourcesBalancedAllocation tells nodes apart.
    let sizes = [("2", "4Gi"), ("4", "4Gi"), ("4000m", "8Gi"), ("8", "12Gi")];
    let (cpu, memory) = *rng.pick(&sizes);
    let pods = if rng.chance(15) {
        rng.range(1, 4).to_string()
    } else {
        "110".to_owned()
    };
    let allocatable =
        json!({"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "100Gi"});
    let images: Vec<Value> = IMAGES
        .iter()
        .filter(|_| rng.chance(35))
        .map(|(image, size)| json!({"names": [image], "sizeBytes": size}))
        .collect();
    from_json(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints, "unschedulable": unschedulable},
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "images": images,
        },
    }))
}

/// A volume of `zone` pre-bound to the claim `namespace/claim`: the zone
/// as a label (VolumeZone), as required node affinity (VolumeBinding), or
/// both.
fn volume(name: &str, zone: &str, namespace: &str, claim: &str, how: usize, seed: u64) -> Value {
    let mut labels = json!({"diff-seed": seed.to_string()});
    if how != 1 {
        labels[ZONE] = json!(zone);
    }
    let mut spec = json!({
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": format!("/data/{name}")},
        "persistentVolumeReclaimPolicy": "Retain",
        "claimRef": {"namespace": namespace, "name": claim},
    });
    if how != 0 {
        spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
        ]}});
    }
    json!({"metadata": {"name": name, "labels": labels}, "spec": spec})
}

fn claim(name: &str, namespace: &str, volume: Option<&str>) -> Value {
    let mut claim = json!({
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    });
    if let Some(volume) = volume {
        claim["spec"]["volumeName"] = json!(volume);
        claim["metadata"]["annotations"] = json!({"pv.kubernetes.io/bind-completed": "yes"});
    }
    claim
}

/// Zonal volumes with their bound claims, unbound claims, and the probe's
/// pair last.
fn storage(ctx: &mut Ctx, seed: u64) -> (Vec<PersistentVolume>, Vec<PersistentVolumeClaim>) {
    let mut volumes = Vec::new();
    let mut claims = Vec::new();
    let count = ctx.rng.range(0, 4);
    for i in 0..count {
        let ns = ctx.rng.below(2);
        let zone = *ctx.rng.pick(&ctx.zones);
        let how = ctx.rng.below(3);
        let name = format!("{}-pv{i}", ctx.prefix);
        let claim_name = format!("data-{i}");
        volumes.push(from_json(volume(
            &name,
            zone,
            &ctx.namespaces[ns],
            &claim_name,
            how,
            seed,
        )));
        claims.push(from_json(claim(
            &claim_name,
            &ctx.namespaces[ns],
            Some(&name),
        )));
        ctx.bound_claims[ns].push(claim_name);
    }
    if ctx.rng.chance(30) {
        let ns = ctx.rng.below(2);
        claims.push(from_json(claim("unbound", &ctx.namespaces[ns], None)));
        ctx.unbound_claims[ns].push("unbound".to_owned());
    }
    let probe = format!("{}-pv-probe", ctx.prefix);
    volumes.push(from_json(volume(
        &probe,
        ctx.zones[0],
        &ctx.namespaces[0],
        "probe-data",
        2,
        seed,
    )));
    claims.push(from_json(claim(
        "probe-data",
        &ctx.namespaces[0],
        Some(&probe),
    )));
    (volumes, claims)
}

/// Storage that binds when its first pod is scheduled.
#[derive(Debug, Clone, Default)]
pub struct LateStorage {
    /// `<prefix>-late`: provisioned on demand by a provisioner this bed
    /// does not run, sometimes only in one zone (`allowedTopologies`);
    /// `<prefix>-local`: `kubernetes.io/no-provisioner`, local volumes only.
    pub classes: Vec<StorageClass>,
    /// Local volumes of `<prefix>-local`, each on one node, none claimed.
    pub volumes: Vec<PersistentVolume>,
    /// Unbound claims of both classes (`late-<i>`, `local-<i>`).
    pub claims: Vec<PersistentVolumeClaim>,
}

/// Whether `claim` is one of [`LateStorage`]'s.
pub fn is_late_claim(claim: &str) -> bool {
    claim.starts_with("late-") || claim.starts_with("local-")
}

/// Whether the pod mounts a claim of [`LateStorage`].
pub fn mounts_late_claim(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .any(|c| is_late_claim(&c.claim_name))
}

/// WaitForFirstConsumer classes, local volumes and unbound claims, drawn
/// from the seed's late-binding stream.
fn late_storage(ctx: &mut Ctx, seed: u64) -> LateStorage {
    let rng = &mut ctx.late_rng;
    let late_class = format!("{}-late", ctx.prefix);
    let local_class = format!("{}-local", ctx.prefix);
    let mut late = json!({
        "metadata": {"name": late_class, "labels": {"diff-seed": seed.to_string()}},
        "provisioner": "diff.example/late",
        "volumeBindingMode": "WaitForFirstConsumer",
    });
    if rng.chance(50) {
        late["allowedTopologies"] = json!([{"matchLabelExpressions": [
            {"key": ZONE, "values": [*rng.pick(&ctx.zones)]}
        ]}]);
    }
    let local = json!({
        "metadata": {"name": local_class, "labels": {"diff-seed": seed.to_string()}},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    });
    let volumes = (0..rng.range(0, 3))
        .map(|i| {
            let node = rng.pick(&ctx.node_names).clone();
            let size = *rng.pick(&["1Gi", "5Gi"]);
            from_json(json!({
                "metadata": {
                    "name": format!("{}-local{i}", ctx.prefix),
                    "labels": {"diff-seed": seed.to_string()},
                },
                "spec": {
                    "capacity": {"storage": size},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": local_class,
                    "local": {"path": format!("/mnt/disks/{i}")},
                    "persistentVolumeReclaimPolicy": "Retain",
                    "nodeAffinity": {"required": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
                    ]}},
                },
            }))
        })
        .collect();
    let mut claims = Vec::new();
    for (kind, class) in [("late", &late_class), ("local", &local_class)] {
        for i in 0..rng.range(0, 2) {
            let ns = rng.below(2);
            let name = format!("{kind}-{i}");
            let size = *rng.pick(&["1Gi", "2Gi"]);
            claims.push(from_json(json!({
                "metadata": {"name": name, "namespace": ctx.namespaces[ns]},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": class,
                    "resources": {"requests": {"storage": size}},
                },
            })));
            ctx.late_claims[ns].push(name);
        }
    }
    LateStorage {
        classes: vec![from_json(late), from_json(local)],
        volumes,
        claims,
    }
}

/// The claim a pending pod in namespace `ns` mounts, if any: usually a
/// bound one, sometimes an unbound or a missing one.
fn pod_claim(ctx: &mut Ctx, ns: usize) -> Option<String> {
    let claims = match ctx.rng.below(100) {
        0..25 => &ctx.bound_claims[ns],
        25..30 => &ctx.unbound_claims[ns],
        30..32 => return Some("missing".to_owned()),
        _ => return None,
    };
    (!claims.is_empty()).then(|| ctx.rng.pick(claims).clone())
}

/// Labels of a generated pod: an app, usually a version.
fn pod_labels(rng: &mut Rng) -> serde_json::Map<String, Value> {
    let mut labels = serde_json::Map::new();
    labels.insert("app".into(), json!(*rng.pick(APPS)));
    if rng.chance(80) {
        labels.insert("version".into(), json!(*rng.pick(VERSIONS)));
    }
    labels
}

fn container(rng: &mut Rng, requests: &[(&str, &str)], host_port: bool) -> Value {
    // cpu and memory picked independently: any ratio, or one without the
    // other.
    let cpu = rng.pick(requests).0;
    let memory = rng.pick(requests).1;
    let mut requests = serde_json::Map::new();
    if !cpu.is_empty() {
        requests.insert("cpu".into(), json!(cpu));
    }
    if !memory.is_empty() {
        requests.insert("memory".into(), json!(memory));
    }
    let image = if rng.chance(70) {
        rng.pick(IMAGES).0
    } else {
        "registry.example/other:9"
    };
    let mut value = json!({
        "name": "main",
        "image": image,
        "resources": {"requests": requests},
    });
    if host_port {
        value["ports"] = json!([{"containerPort": 8080, "hostPort": 8080}]);
    }
    value
}

/// A pod affinity term over the `app` label.
fn affinity_term(ctx: &mut Ctx, labels: &serde_json::Map<String, Value>, own_ns: usize) -> Value {
    let rng = &mut ctx.rng;
    let app = *rng.pick(APPS);
    let selector = if rng.chance(50) {
        json!({"matchLabels": {"app": app}})
    } else {
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": [app, *rng.pick(APPS)]}]})
    };
    let key = if rng.chance(50) { HOSTNAME } else { ZONE };
    let mut term = json!({"labelSelector": selector, "topologyKey": key});
    match rng.below(10) {
        0 => term["namespaces"] = json!([ctx.namespaces[1 - own_ns]]),
        1 => term["namespaceSelector"] = json!({}),
        2 => term["namespaceSelector"] = json!({"matchLabels": {"team": "b"}}),
        _ => {}
    }
    if labels.contains_key("version") && rng.chance(25) {
        term["matchLabelKeys"] = json!(["version"]);
    }
    term
}

fn weighted(ctx: &mut Ctx, labels: &serde_json::Map<String, Value>, own_ns: usize) -> Value {
    let weight = ctx.rng.range(1, 100);
    json!({"weight": weight, "podAffinityTerm": affinity_term(ctx, labels, own_ns)})
}

fn terms(
    ctx: &mut Ctx,
    labels: &serde_json::Map<String, Value>,
    own_ns: usize,
    weighted_terms: bool,
) -> Vec<Value> {
    let count = ctx.rng.range(1, 2);
    (0..count)
        .map(|_| {
            if weighted_terms {
                weighted(ctx, labels, own_ns)
            } else {
                affinity_term(ctx, labels, own_ns)
            }
        })
        .collect()
}

fn existing_pod(ctx: &mut Ctx, index: usize) -> Pod {
    let own_ns = ctx.rng.below(2);
    let labels = pod_labels(&mut ctx.rng);
    let node = ctx.rng.pick(&ctx.node_names).clone();
    let host_port = ctx.rng.chance(10);
    let main = container(&mut ctx.rng, &EXISTING_REQUESTS, host_port);
    let mut affinity = serde_json::Map::new();
    let mut pod_anti = serde_json::Map::new();
    let mut pod_aff = serde_json::Map::new();
    if ctx.rng.chance(15) {
        pod_anti.insert(
            "requiredDuringSchedulingIgnoredDuringExecution".into(),
            json!(terms(ctx, &labels, own_ns, false)),
        );
    }
    if ctx.rng.chance(15) {
        pod_anti.insert(
            "preferredDuringSchedulingIgnoredDuringExecution".into(),
            json!(terms(ctx, &labels, own_ns, true)),
        );
    }
    if ctx.rng.chance(10) {
        pod_aff.insert(
            "requiredDuringSchedulingIgnoredDuringExecution".into(),
            json!(terms(ctx, &labels, own_ns, false)),
        );
    }
    if ctx.rng.chance(15) {
        pod_aff.insert(
            "preferredDuringSchedulingIgnoredDuringExecution".into(),
            json!(terms(ctx, &labels, own_ns, true)),
        );
    }
    if !pod_anti.is_empty() {
        affinity.insert("podAntiAffinity".into(), Value::Object(pod_anti));
    }
    if !pod_aff.is_empty() {
        affinity.insert("podAffinity".into(), Value::Object(pod_aff));
    }
    from_json(json!({
        "metadata": {"name": format!("e{index}"), "namespace": ctx.namespaces[own_ns], "labels": labels},
        "spec": {
            "nodeName": node,
            "containers": [main],
            "affinity": affinity,
            "tolerations": [{"operator": "Exists"}],
        },
    }))
}

/// One node selector requirement over the node labels the generator writes.
fn node_requirement(ctx: &mut Ctx) -> Value {
    let rng = &mut ctx.rng;
    match rng.below(7) {
        0 => json!({"key": ZONE, "operator": "In", "values": [*rng.pick(&ctx.zones)]}),
        1 => json!({"key": ZONE, "operator": "NotIn", "values": [*rng.pick(&ctx.zones)]}),
        2 => json!({"key": "disk", "operator": "Exists"}),
        3 => json!({"key": "disk", "operator": "DoesNotExist"}),
        4 => json!({"key": "tier", "operator": "Gt", "values": [rng.range(1, 3).to_string()]}),
        5 => json!({"key": "tier", "operator": "Lt", "values": [rng.range(2, 4).to_string()]}),
        _ => json!({"key": "disk", "operator": "In", "values": ["ssd"]}),
    }
}

fn node_term(ctx: &mut Ctx) -> Value {
    let count = ctx.rng.range(1, 2);
    let expressions: Vec<Value> = (0..count).map(|_| node_requirement(ctx)).collect();
    json!({"matchExpressions": expressions})
}

fn node_affinity(ctx: &mut Ctx) -> Option<Value> {
    let mut affinity = serde_json::Map::new();
    if ctx.rng.chance(25) {
        let count = ctx.rng.range(1, 2);
        let mut node_terms: Vec<Value> = (0..count).map(|_| node_term(ctx)).collect();
        if ctx.rng.chance(10) {
            let name = ctx.rng.pick(&ctx.node_names).clone();
            node_terms.push(json!({"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [name]}
            ]}));
        }
        affinity.insert(
            "requiredDuringSchedulingIgnoredDuringExecution".into(),
            json!({"nodeSelectorTerms": node_terms}),
        );
    }
    if ctx.rng.chance(30) {
        let count = ctx.rng.range(1, 3);
        let preferred: Vec<Value> = (0..count)
            .map(|_| {
                let weight = ctx.rng.range(1, 100);
                json!({"weight": weight, "preference": node_term(ctx)})
            })
            .collect();
        affinity.insert(
            "preferredDuringSchedulingIgnoredDuringExecution".into(),
            json!(preferred),
        );
    }
    (!affinity.is_empty()).then_some(Value::Object(affinity))
}

fn spread_constraints(ctx: &mut Ctx, labels: &serde_json::Map<String, Value>) -> Vec<Value> {
    let mut keys = vec![HOSTNAME, ZONE];
    if ctx.rng.chance(50) {
        keys.swap(0, 1);
    }
    let count = ctx.rng.range(1, 2);
    keys.into_iter()
        .take(count)
        .map(|key| {
            let rng = &mut ctx.rng;
            let hard = rng.chance(50);
            let app = if rng.chance(75) {
                labels["app"].clone()
            } else {
                json!(*rng.pick(APPS))
            };
            let mut constraint = json!({
                "maxSkew": rng.range(1, 2),
                "topologyKey": key,
                "whenUnsatisfiable": if hard { "DoNotSchedule" } else { "ScheduleAnyway" },
                "labelSelector": {"matchLabels": {"app": app}},
            });
            if hard && rng.chance(15) {
                constraint["minDomains"] = json!(rng.range(2, 4));
            }
            if rng.chance(10) {
                constraint["nodeAffinityPolicy"] = json!("Ignore");
            }
            if rng.chance(10) {
                constraint["nodeTaintsPolicy"] = json!("Honor");
            }
            if labels.contains_key("version") && rng.chance(20) {
                constraint["matchLabelKeys"] = json!(["version"]);
            }
            constraint
        })
        .collect()
}

fn tolerations(rng: &mut Rng) -> Vec<Value> {
    let mut list = Vec::new();
    if rng.chance(25) {
        list.push(json!({"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}));
    }
    if rng.chance(20) {
        list.push(json!({"key": "spot", "operator": "Exists"}));
    }
    if rng.chance(5) {
        list.push(json!({"operator": "Exists"}));
    }
    list
}

fn pending_pod(ctx: &mut Ctx, index: usize) -> Pod {
    let own_ns = ctx.rng.below(2);
    let labels = pod_labels(&mut ctx.rng);
    let host_port = ctx.rng.chance(10);
    let main = container(&mut ctx.rng, &PENDING_REQUESTS, host_port);
    let mut spec = json!({
        "containers": [main],
        "priorityClassName": ctx.rng.pick(PRIORITY_CLASSES).0,
        "tolerations": tolerations(&mut ctx.rng),
    });
    if ctx.rng.chance(10) {
        let (init_cpu, init_memory) = *ctx.rng.pick(&[("500m", "1Gi"), ("2", "4Gi")]);
        spec["initContainers"] = json!([{
            "name": "init",
            "image": "registry.example/tool:3",
            "resources": {"requests": {"cpu": init_cpu, "memory": init_memory}},
        }]);
    }
    if ctx.rng.chance(10) {
        spec["nodeSelector"] = json!({"disk": "ssd"});
    }
    let mut affinity = serde_json::Map::new();
    if let Some(node) = node_affinity(ctx) {
        affinity.insert("nodeAffinity".into(), node);
    }
    let mut pod_aff = serde_json::Map::new();
    let mut pod_anti = serde_json::Map::new();
    if ctx.rng.chance(15) {
        pod_aff.insert(
            "requiredDuringSchedulingIgnoredDuringExecution".into(),
            json!(terms(ctx, &labels, own_ns, false)),
        );
    }
    if ctx.rng.chance(20) {
        pod_aff.insert(
            "preferredDuringSchedulingIgnoredDuringExecution".into(),
            json!(terms(ctx, &labels, own_ns, true)),
        );
    }
    if ctx.rng.chance(20) {
        pod_anti.insert(
            "requiredDuringSchedulingIgnoredDuringExecution".into(),
            json!(terms(ctx, &labels, own_ns, false)),
        );
    }
    if ctx.rng.chance(20) {
        pod_anti.insert(
            "preferredDuringSchedulingIgnoredDuringExecution".into(),
            json!(terms(ctx, &labels, own_ns, true)),
        );
    }
    if !pod_aff.is_empty() {
        affinity.insert("podAffinity".into(), Value::Object(pod_aff));
    }
    if !pod_anti.is_empty() {
        affinity.insert("podAntiAffinity".into(), Value::Object(pod_anti));
    }
    if !affinity.is_empty() {
        spec["affinity"] = Value::Object(affinity);
    }
    if ctx.rng.chance(30) {
        spec["topologySpreadConstraints"] = json!(spread_constraints(ctx, &labels));
    }
    // A late-binding claim serves one pending pod: the node written on
    // it is then that pod's (see `late_choice` in main.rs).
    let claim = pod_claim(ctx, own_ns).or_else(|| {
        let late = &mut ctx.late_claims[own_ns];
        (!late.is_empty() && ctx.late_rng.chance(15))
            .then(|| late.swap_remove(ctx.late_rng.below(late.len())))
    });
    if let Some(claim) = claim {
        spec["volumes"] = json!([{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]);
    }
    from_json(json!({
        "metadata": {"name": format!("p{index}"), "namespace": ctx.namespaces[own_ns], "labels": labels},
        "spec": spec,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_scheduler_sim::resources::{node_allocatable, pod_requests};

    /// The clusters exercise NodeResourcesBalancedAllocation: nodes of
    /// several cpu:memory ratios, and pods whose requests are in another
    /// ratio than their node's.
    #[test]
    fn clusters_mix_cpu_to_memory_ratios() {
        let mut node_ratios = std::collections::BTreeSet::new();
        let mut pod_ratios = std::collections::BTreeSet::new();
        for seed in 0..50 {
            let c = cluster(seed);
            for node in &c.nodes {
                let a = node_allocatable(node).ok().flatten().unwrap_or_default();
                node_ratios.insert(a.memory / a.milli_cpu.max(1));
            }
            for pod in c.existing.iter().chain(&c.pending) {
                let r = pod_requests(pod, kube_scheduler_sim::KubernetesVersion::LATEST)
                    .unwrap_or_default();
                if r.milli_cpu > 0 && r.memory > 0 {
                    pod_ratios.insert(r.memory / r.milli_cpu);
                }
            }
        }
        assert!(node_ratios.len() >= 3, "node ratios: {node_ratios:?}");
        assert!(pod_ratios.len() >= 5, "pod ratios: {pod_ratios:?}");
    }

    /// Some seeds have pending pods on late-binding claims of both kinds.
    #[test]
    fn pending_pods_mount_late_binding_claims_of_both_classes() {
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..100 {
            for pod in cluster(seed)
                .pending
                .iter()
                .filter(|p| mounts_late_claim(p))
            {
                let value = serde_json::to_value(pod).unwrap_or_default();
                let claim = value["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                kinds.insert(claim.split('-').next().unwrap_or_default().to_owned());
            }
        }
        assert_eq!(kinds, ["late".to_owned(), "local".to_owned()].into());
    }

    #[test]
    fn the_same_seed_gives_the_same_cluster() {
        let a = cluster(7);
        let b = cluster(7);
        let json = |c: &Cluster| {
            serde_json::to_string(&(
                &c.nodes,
                &c.services,
                &c.volumes,
                &c.claims,
                (&c.late.classes, &c.late.volumes, &c.late.claims),
                &c.existing,
                &c.pending,
            ))
            .ok()
        };
        assert_eq!(json(&a), json(&b));
    }
}
