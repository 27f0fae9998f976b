//! Live mode on the real kube-apiserver of the test bed (`kube-testbed`):
//! the example clusters are loaded with the bed's kubectl, and every
//! command that reads a cluster must print, in every output format, exactly
//! what it prints with `-f` on a `kubectl get -o yaml` (and `-o json`) dump
//! of the same server; the roles `policyctl rbac` prints are shown
//! sufficient and least by kube-apiserver's own RBAC authorizer.
//!
//! One bed serves the whole file, started on first use: etcd and
//! kube-apiserver only. Without kube-scheduler and
//! kube-controller-manager nothing changes the loaded objects (no binding
//! of the Pending pods, no ReplicaSets for the Deployment, no garbage
//! collection of pods whose owners are not there, no claim binding), so
//! the dumps and live mode see the same objects for the life of the bed.
//! The tests only add ServiceAccounts and roles, which policyctl does not
//! read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube_testbed::Testbed;
use policyctl::live::{Kind, Scope};
use serde_json::{Value, json};

/// The namespace the Velero kinds and the node-agent ConfigMap are listed
/// in (policyctl's default `-n`), as in the example cluster.
const VELERO_NAMESPACE: &str = "velero";

/// Every command that reads a cluster, once each: these run in every
/// output format. (`hosts` reads only the HostInventory ConfigMap, which
/// `live.rs` covers, and `host-labels sanitize` and `rbac` read nothing:
/// they are not here.)
/// Live mode lists the kinds a command declares whatever its options, so
/// these also cover every set of kinds live mode lists.
const COMMANDS: &[&[&str]] = &[
    &["report"],
    &["config", "check"],
    &["concurrency"],
    &["affinity", "--pvc", "shop/data-shop-0"],
    &["queue"],
    &["soothe"],
    &["schedule", "--all"],
    &["capacity", "--workload", "deployment/shop/web"],
    &["host-labels", "--sync-machine-labels"],
    &["diagnose", "--pod", "velero/nightly-apps-20260520-c7d5n"],
    &["modules"],
    &["maintenance"],
];

/// Options that change what a command computes from the same objects, in
/// JSON only (the formats are covered above).
const VARIANTS: &[&[&str]] = &[
    &[
        "report",
        "--concurrent-backups",
        "2",
        "--soothe-mode",
        "exact",
    ],
    &["config", "check", "--strict"],
    &["affinity", "--pvc", "analytics/scratch-analytics-0"],
    &["affinity", "--pvc", "shop/restored-data", "--restore"],
    &[
        "affinity",
        "--pvc",
        "shop/data-shop-1",
        "--node-os",
        "windows",
    ],
    &["queue", "--concurrent-backups", "3"],
    &["soothe", "--mode", "exact"],
    &["soothe", "--datamover", "acme"],
    &["schedule", "--pod", "shop/web-7c9f8d6b5-r9t2x"],
    &[
        "schedule",
        "--pod",
        "velero/nightly-apps-20260520-c7d5n",
        "--score-all-nodes",
    ],
    &["capacity", "--pod", "shop/web-7c9f8d6b5-r9t2x"],
    &["host-labels"],
    &["diagnose", "--pod", "shop/web-7c9f8d6b5-r9t2x"],
    &["modules", "--cluster", "clusters/prod-east"],
];

/// Each command (and variant) with the output formats it runs in.
fn invocations() -> Vec<Vec<&'static str>> {
    let mut all = Vec::new();
    for command in COMMANDS {
        for format in FORMATS {
            all.push([command, &["-o", format][..]].concat());
        }
    }
    for variant in VARIANTS {
        all.push([variant, &["-o", "json"][..]].concat());
    }
    all
}

const FORMATS: [&str; 3] = ["table", "json", "yaml"];

// ---------------------------------------------------------------------------
// The bed and the example clusters in it.

/// The bed with the example clusters loaded.
struct Loaded {
    bed: Testbed,
    /// Files of this test (links to the CRDs, dumps), in the bed's
    /// directory.
    dir: PathBuf,
    /// Example objects kube-apiserver refused: `Kind namespace/name` and
    /// kubectl's message.
    refused: BTreeMap<String, String>,
    /// Namespaces the example objects are in that no example file holds,
    /// created before the objects.
    created_namespaces: Vec<String>,
    /// The kinds policyctl lists that the server serves.
    served: Vec<Kind>,
    /// How long starting the bed and loading the examples took.
    started_in: Duration,
    loaded_in: Duration,
}

static LOADED: OnceLock<Result<Loaded, String>> = OnceLock::new();

/// The shared bed, started and loaded by the first test that asks (on a
/// thread of its own with its own runtime, so that any test's runtime may
/// use it afterwards).
fn loaded() -> &'static Loaded {
    let loaded = LOADED.get_or_init(|| {
        std::thread::spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async {
                let started = Instant::now();
                let bed = Testbed::builder()
                    .start()
                    .await
                    .map_err(|e| format!("the test bed did not start: {e}"))?;
                let started_in = started.elapsed();
                let loading = Instant::now();
                let loaded = load(bed, started_in).await?;
                Ok(Loaded {
                    loaded_in: loading.elapsed(),
                    ..loaded
                })
            })
        })
        .join()
        .unwrap_or_else(|_| Err("the thread loading the bed panicked".to_owned()))
    });
    match loaded {
        Ok(loaded) => loaded,
        Err(error) => panic!("{error}"),
    }
}

/// The example files but the HostInventory's ConfigMap: live mode lists
/// ConfigMaps outside Velero's namespace only when one is named there
/// (`--inventory-config-map`), which `live.rs` covers; here a real
/// kube-system's own ConfigMaps would join the counts.
fn example_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["cluster", "management-cluster"] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples")
            .join(dir);
        let mut these: Vec<PathBuf> = std::fs::read_dir(&root)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|x| x == "yaml"))
            .filter(|path| !path.ends_with("host-inventory.yaml"))
            .collect();
        these.sort();
        files.extend(these);
    }
    files
}

/// Every object of the files, `kind: List` items included.
fn objects_of(files: &[PathBuf]) -> Vec<Value> {
    let mut objects = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(path).unwrap();
        let name = path.display().to_string();
        for document in policyctl::manifest::parse_documents(&name, &text).unwrap() {
            let document = document.value;
            if document.is_null() {
                continue;
            }
            let kind = document["kind"].as_str().unwrap_or_default().to_owned();
            match (kind.strip_suffix("List"), document.get("items")) {
                (Some(item_kind), Some(Value::Array(items))) => {
                    for item in items {
                        let mut item = item.clone();
                        if item.get("kind").is_none() {
                            item["kind"] = Value::String(item_kind.to_owned());
                            item["apiVersion"] = document["apiVersion"].clone();
                        }
                        objects.push(item);
                    }
                }
                _ => objects.push(document),
            }
        }
    }
    objects
}

/// `Kind namespace/name` (or `Kind name`) of an object.
fn object_key(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match object["metadata"]["namespace"].as_str() {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// The fields the server sets on every object: a `kubectl get` dump has
/// them, a create must not (`resourceVersion` would be a precondition on
/// an object that does not exist yet) and the server would overwrite the
/// rest.
const SERVER_SET: [&str; 6] = [
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
];

/// Loads the example clusters: the CRDs of the kinds policyctl lists from
/// the bed's `crds/`, the Namespaces, the objects (server-side apply),
/// then the status of each object whose kind has a status subresource
/// (a create ignores `status` there).
async fn load(bed: Testbed, started_in: Duration) -> Result<Loaded, String> {
    let dir = bed.dir().join("policyctl-live-real-server");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;

    // The CRDs, from the products' own modules.
    let versions = bed.versions().clone();
    let wanted: BTreeSet<(&str, &str)> = Kind::ALL
        .iter()
        .map(|kind| (kind.resource().group, kind.resource().plural))
        .collect();
    let crd_dir = dir.join("crds");
    std::fs::create_dir_all(&crd_dir).map_err(|e| e.to_string())?;
    // The API groups the CRDs define: objects of these are custom resources,
    // loaded once their CRDs are in discovery, whatever discovery said
    // while the CRDs were being created.
    let mut crd_groups: BTreeSet<String> = BTreeSet::new();
    for (product, version) in [
        ("velero", &versions.velero),
        ("cluster-api", &versions.cluster_api),
        ("capv", &versions.capv),
    ] {
        let from = bed
            .layout()
            .crds(product, version)
            .map_err(|e| e.to_string())?;
        for entry in std::fs::read_dir(&from).map_err(|e| e.to_string())? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
            let documents: Vec<Value> =
                serde_saphyr::from_multiple(&text).map_err(|e| format!("{path:?}: {e}"))?;
            let needed = documents.iter().any(|crd| {
                let group = crd["spec"]["group"].as_str().unwrap_or_default();
                let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
                wanted.contains(&(group, plural))
            });
            if needed {
                crd_groups.extend(
                    documents
                        .iter()
                        .filter_map(|crd| crd["spec"]["group"].as_str())
                        .map(str::to_owned),
                );
                let link = crd_dir.join(format!(
                    "{product}-{}",
                    path.file_name().unwrap().to_string_lossy()
                ));
                let _ = std::fs::remove_file(&link);
                std::os::unix::fs::symlink(&path, &link).map_err(|e| e.to_string())?;
            }
        }
    }
    // `kubectl create`, not `apply --server-side`: server-side apply of
    // Cluster API's large CRDs takes several times as long (its managed
    // fields cover every schema node).
    let mut files: Vec<PathBuf> = std::fs::read_dir(&crd_dir)
        .map_err(|e| e.to_string())?
        .map(|entry| entry.map(|entry| entry.path()).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    files.sort();
    let install_crds = async {
        let mut create = vec!["create".to_owned(), "-o".to_owned(), "name".to_owned()];
        for file in &files {
            create.extend(["-f".to_owned(), file.display().to_string()]);
        }
        let create: Vec<&str> = create.iter().map(String::as_str).collect();
        let created = kubectl(&bed, &create, None).await;
        if created.code != 0 {
            return Err(format!("kubectl create of the CRDs: {}", created.stderr));
        }
        let mut wait = vec!["wait", "--for=condition=Established", "--timeout=120s"];
        wait.extend(created.stdout.lines().map(str::trim));
        let waited = kubectl(&bed, &wait, None).await;
        if waited.code != 0 {
            return Err(format!("kubectl wait for the CRDs: {}", waited.stderr));
        }
        // Established comes a moment before discovery lists each resource.
        bed.wait_until_discovered(&files)
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    };

    let objects = objects_of(&example_files());
    let client = bed.client();

    // Namespaces: those of the examples, and those their objects are in
    // that no example file holds (the management cluster's `clusters`).
    let defined: BTreeSet<String> = objects
        .iter()
        .filter(|o| o["kind"] == "Namespace" && o["apiVersion"] == "v1")
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    let existing: BTreeSet<String> = kubectl(
        &bed,
        &[
            "get",
            "namespaces",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ],
        None,
    )
    .await
    .stdout
    .split_whitespace()
    .map(str::to_owned)
    .collect();
    let created_namespaces: Vec<String> = objects
        .iter()
        .filter_map(|o| o["metadata"]["namespace"].as_str())
        .filter(|ns| !defined.contains(*ns) && !existing.contains(*ns))
        .map(str::to_owned)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut namespaces = String::new();
    for name in &created_namespaces {
        namespaces.push_str(&format!(
            "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"
        ));
    }
    for object in objects.iter().filter(|o| o["kind"] == "Namespace") {
        namespaces.push_str(&format!("---\n{}\n", without_server_fields(object)));
    }

    // The built-in kinds load while the CRDs become established; then the
    // custom resources, where the server may refuse some (their messages
    // are kept); then every status.
    let built_in = async {
        let namespaces = apply(&bed, &namespaces, false).await;
        if namespaces.code != 0 {
            return Err(format!(
                "kubectl apply of the namespaces: {}",
                namespaces.stderr
            ));
        }
        let served = served_resources(&client, &objects).await?;
        let built_in: Vec<Value> = objects
            .iter()
            .filter(|o| is_served(&served, o) && !crd_groups.contains(group_of(o)))
            .cloned()
            .collect();
        let (specs, statuses) = split_status(&built_in, &served);
        let specs = apply(&bed, &specs, false).await;
        Ok::<_, String>((specs, statuses))
    };
    let (crds, built_in) = tokio::join!(install_crds, built_in);
    crds?;
    let (specs, mut statuses) = built_in?;
    if specs.code != 0 {
        return Err(format!(
            "kubectl apply of the built-in kinds: {}",
            specs.stderr
        ));
    }
    let served = served_resources(&client, &objects).await?;
    let custom: Vec<Value> = objects
        .iter()
        .filter(|o| crd_groups.contains(group_of(o)) || !is_served(&served, o))
        .cloned()
        .collect();
    let (custom_specs, custom_statuses) = split_status(&custom, &served);
    let refused_output = apply(&bed, &custom_specs, false).await.stderr;
    statuses.push_str(&custom_statuses);
    let statuses = apply(&bed, &statuses, true).await;
    if statuses.code != 0 {
        return Err(format!(
            "kubectl apply of the statuses: {}",
            statuses.stderr
        ));
    }

    // Which kinds the server serves, and which example objects it holds.
    let mut served = Vec::new();
    for kind in Kind::ALL {
        let resource = kind.resource();
        for version in resource.versions {
            let api_version = resource.api_version(version);
            let list = if resource.group.is_empty() {
                client.list_core_api_resources(version).await
            } else {
                client.list_api_group_resources(&api_version).await
            };
            if list.is_ok_and(|list| list.resources.iter().any(|r| r.name == resource.plural)) {
                served.push(kind);
                break;
            }
        }
    }
    let loaded = Loaded {
        bed,
        dir,
        refused: BTreeMap::new(),
        created_namespaces,
        served,
        started_in,
        loaded_in: Duration::ZERO,
    };
    let held: BTreeSet<String> = dump_objects(&loaded).await.iter().map(object_key).collect();
    let refused = objects
        .iter()
        .map(object_key)
        .filter(|key| !held.contains(key))
        .map(|key| {
            let name = key.rsplit(['/', ' ']).next().unwrap_or_default();
            let reason = refused_output
                .lines()
                .filter(|line| line.contains(&format!("\"{name}\"")))
                .collect::<Vec<_>>()
                .join(" / ");
            (key, reason)
        })
        .collect();
    Ok(Loaded { refused, ..loaded })
}

/// What the server serves of each apiVersion of `objects` (`None`: not
/// served).
async fn served_resources(
    client: &kube::Client,
    objects: &[Value],
) -> Result<BTreeMap<String, Option<Vec<APIResource>>>, String> {
    let mut resources = BTreeMap::new();
    for object in objects {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        if resources.contains_key(api_version) {
            continue;
        }
        let list = if api_version.contains('/') {
            client.list_api_group_resources(api_version).await
        } else {
            client.list_core_api_resources(api_version).await
        };
        let served = match list {
            Ok(list) => Some(list.resources),
            Err(kube::Error::Api(status)) if status.code == 404 => None,
            Err(error) => return Err(format!("discovery of {api_version}: {error}")),
        };
        resources.insert(api_version.to_owned(), served);
    }
    Ok(resources)
}

/// The API group of `object` (empty for the core group).
fn group_of(object: &Value) -> &str {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    api_version.split_once('/').map_or("", |(group, _)| group)
}

/// Whether `served` has the apiVersion of `object`.
fn is_served(served: &BTreeMap<String, Option<Vec<APIResource>>>, object: &Value) -> bool {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    served.get(api_version).is_some_and(Option::is_some)
}

/// An example object without [`SERVER_SET`].
fn without_server_fields(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object["metadata"].as_object_mut() {
        for field in SERVER_SET {
            metadata.remove(field);
        }
    }
    object
}

/// The objects but Namespaces, without the server's fields, as YAML
/// documents; and the statuses of those whose kind has a status
/// subresource (where a create or apply ignores `status`), for
/// `kubectl apply --subresource=status`.
fn split_status(
    objects: &[Value],
    served: &BTreeMap<String, Option<Vec<APIResource>>>,
) -> (String, String) {
    let has_status = |object: &Value| -> bool {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let Some(Some(resources)) = served.get(api_version) else {
            return false;
        };
        resources
            .iter()
            .find(|r| r.kind == kind && !r.name.contains('/'))
            .is_some_and(|r| {
                let status = format!("{}/status", r.name);
                resources.iter().any(|s| s.name == status)
            })
    };
    let mut specs = String::new();
    let mut statuses = String::new();
    for object in objects {
        let mut object = without_server_fields(object);
        let status = object.as_object_mut().and_then(|o| o.remove("status"));
        match status {
            Some(status) if has_status(&object) => {
                let mut only = json!({
                    "apiVersion": object["apiVersion"],
                    "kind": object["kind"],
                    "metadata": {"name": object["metadata"]["name"]},
                    "status": status,
                });
                if let Some(namespace) = object["metadata"].get("namespace") {
                    only["metadata"]["namespace"] = namespace.clone();
                }
                statuses.push_str(&format!("---\n{only}\n"));
            }
            // Without a status subresource the status is part of the object.
            Some(status) => object["status"] = status,
            None => {}
        }
        if object["kind"] != "Namespace" {
            specs.push_str(&format!("---\n{object}\n"));
        }
    }
    (specs, statuses)
}

/// `kubectl apply --server-side` of YAML documents (of their statuses with
/// `status`).
async fn apply(bed: &Testbed, documents: &str, status: bool) -> Run {
    let mut args = vec!["apply", "--server-side", "--field-manager=policyctl-test"];
    if status {
        args.push("--subresource=status");
    }
    args.extend(["-f", "-"]);
    kubectl(bed, &args, Some(documents.as_bytes())).await
}

/// Result of one process.
#[derive(Debug, Clone)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// The bed's kubectl (admin kubeconfig) with `args`.
async fn kubectl(bed: &Testbed, args: &[&str], stdin: Option<&[u8]>) -> Run {
    use tokio::io::AsyncWriteExt;
    let mut command = tokio::process::Command::from(bed.kubectl());
    command
        .args(args)
        .stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input).await.unwrap();
    }
    let output = child.wait_with_output().await.unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// `kubectl get` of the kinds policyctl lists (those the server serves),
/// split as in docs/policyctl.md's example: the cluster-wide and
/// all-namespace kinds with `-A`, the Velero kinds and the ConfigMaps with
/// `-n velero`, where live mode lists them. (A `-A` dump of ConfigMaps
/// would also hold kube-apiserver's own ConfigMaps in `kube-system`, which
/// live mode does not read.) Two files, in `format` (`yaml` or `json`).
async fn dump(loaded: &Loaded, format: &str, name: &str) -> [PathBuf; 2] {
    let (everywhere, velero): (Vec<Kind>, Vec<Kind>) = loaded
        .served
        .iter()
        .partition(|kind| kind.resource().scope != Scope::VeleroNamespace);
    let names = |kinds: &[Kind]| {
        kinds
            .iter()
            .map(|kind| {
                let resource = kind.resource();
                if resource.group.is_empty() {
                    resource.plural.to_owned()
                } else {
                    format!("{}.{}", resource.plural, resource.group)
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut paths = Vec::new();
    for (part, kinds, scope) in [
        ("cluster", everywhere, vec!["-A"]),
        ("velero", velero, vec!["-n", VELERO_NAMESPACE]),
    ] {
        let kinds = names(&kinds);
        let mut args = vec!["get", kinds.as_str()];
        args.extend(scope);
        args.extend(["-o", format]);
        let run = kubectl(&loaded.bed, &args, None).await;
        assert_eq!(run.code, 0, "kubectl {args:?}: {}", run.stderr);
        let path = loaded.dir.join(format!("{name}-{part}.{format}"));
        std::fs::write(&path, run.stdout).unwrap();
        paths.push(path);
    }
    [paths[0].clone(), paths[1].clone()]
}

/// The objects of a JSON dump.
async fn dump_objects(loaded: &Loaded) -> Vec<Value> {
    static DUMPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let number = DUMPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut objects = Vec::new();
    for path in dump(loaded, "json", &format!("objects-{number}")).await {
        let list: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        objects.extend(list["items"].as_array().unwrap().iter().cloned());
    }
    objects
}

// ---------------------------------------------------------------------------
// Running policyctl.

async fn policyctl(args: &[&str]) -> Run {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_policyctl"));
    command.args(args).env_remove("KUBECONFIG");
    for (name, _) in std::env::vars() {
        if name.starts_with("POLICYCTL_") {
            command.env_remove(name);
        }
    }
    let output = command.output().await.unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

async fn live(kubeconfig: &Path, args: &[&str]) -> Run {
    let kubeconfig = kubeconfig.display().to_string();
    let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
    all.extend_from_slice(args);
    policyctl(&all).await
}

async fn from_files(files: &[PathBuf], args: &[&str]) -> Run {
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let mut all = Vec::new();
    for file in &files {
        all.extend(["-f", file.as_str()]);
    }
    all.extend_from_slice(args);
    policyctl(&all).await
}

/// The one place live and `-f` output legitimately differ: the line naming
/// where the node-agent or repository-maintenance ConfigMap was read
/// (`Configuration: ConfigMap velero/node-agent-config (<where>)`, in the
/// tables of `config check`, `report` and `maintenance`), which names the list URL in live mode and the dump file
/// with `-f`. The part in parentheses becomes `<input>` after checking it
/// names the right source.
///
/// Also without the statement of how each kind was read
/// ([`without_inputs`]).
fn normalise(stdout: &str, source: &str) -> String {
    let stdout = without_inputs(stdout);
    let mut text = String::with_capacity(stdout.len());
    for line in stdout.split_inclusive('\n') {
        match line.strip_prefix("Configuration: ConfigMap ") {
            Some(rest) if rest.contains(" (") => {
                let (object, origin) = rest.split_once(" (").unwrap();
                assert!(
                    origin.starts_with(source),
                    "the configuration's origin {origin:?} does not name {source}"
                );
                text.push_str(&format!("Configuration: ConfigMap {object} (<input>)\n"));
            }
            _ => text.push_str(line),
        }
    }
    text
}

/// The output without its statement of how each kind was read, where live
/// mode and `-f` legitimately differ (a kind with no objects is `empty`
/// when listed, `not in input` in a file): the `inputs`, `complete` and
/// `incomplete` fields of JSON and YAML, the closing block of a table.
fn without_inputs(stdout: &str) -> String {
    if let Ok(Value::Object(mut document)) = serde_json::from_str::<Value>(stdout) {
        for key in ["inputs", "complete", "incomplete"] {
            document.remove(key);
        }
        return serde_json::to_string_pretty(&document).unwrap() + "\n";
    }
    if let Some(start) = stdout.find("\nInputs not read with objects:\n") {
        return stdout[..start + 1].to_owned();
    }
    // YAML: the three top-level keys and their indented lines.
    let mut text = String::with_capacity(stdout.len());
    let mut skipping = false;
    for line in stdout.split_inclusive('\n') {
        if ["inputs:", "complete:", "incomplete:"]
            .iter()
            .any(|key| line.starts_with(key))
        {
            skipping = true;
            continue;
        }
        if skipping && line.starts_with(' ') {
            continue;
        }
        skipping = false;
        text.push_str(line);
    }
    text
}

/// Byte equality of the outputs and equal exit codes, reporting the first
/// line that differs.
fn assert_same(live: &str, files: &str, what: &str) {
    if live != files {
        let (number, (l, f)) = live
            .lines()
            .zip(files.lines())
            .enumerate()
            .find(|(_, (l, f))| l != f)
            .unwrap_or((
                live.lines().count().min(files.lines().count()),
                ("<end>", "<end>"),
            ));
        panic!(
            "live and -f differ for {what} at line {}:\n live: {l}\n   -f: {f}\nlive stdout:\n{live}",
            number + 1,
        );
    }
}

// ---------------------------------------------------------------------------
// The tests.

/// The example clusters load into the real server but for the objects of
/// an API version the bed's providers do not serve (docs/testing.md,
/// "Known limits of the bed"), and live mode reads every object the server
/// holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_clusters_load_into_the_real_server() {
    if kube_testbed::skip_requested() {
        return;
    }
    let loaded = loaded();
    eprintln!(
        "bed started in {:?}, examples loaded in {:?}",
        loaded.started_in, loaded.loaded_in
    );
    let served: BTreeSet<Kind> = loaded.served.iter().copied().collect();
    let missing: Vec<Kind> = Kind::ALL
        .into_iter()
        .filter(|kind| !served.contains(kind))
        .collect();
    assert!(
        missing.is_empty(),
        "kinds the bed does not serve: {missing:?}"
    );
    eprintln!("namespaces created: {:?}", loaded.created_namespaces);
    for (object, reason) in &loaded.refused {
        eprintln!("refused: {object}: {reason}");
    }
    assert_eq!(loaded.created_namespaces, ["clusters"]);

    // The bed's CAPV serves `infrastructure.cluster.x-k8s.io/v1beta1` only:
    // the examples' `v1beta2` VSphere objects are refused, nothing else.
    let objects = objects_of(&example_files());
    let newer: BTreeSet<String> = objects
        .iter()
        .filter(|o| o["apiVersion"] == "infrastructure.cluster.x-k8s.io/v1beta2")
        .map(object_key)
        .collect();
    assert_eq!(newer.len(), 7, "{newer:?}");
    assert_eq!(
        loaded.refused.keys().cloned().collect::<BTreeSet<_>>(),
        newer,
        "{:#?}",
        loaded.refused
    );
    for (object, reason) in &loaded.refused {
        let kind = object.split(' ').next().unwrap();
        assert!(
            reason.contains(&format!(
                "no matches for kind \"{kind}\" in version \"infrastructure.cluster.x-k8s.io/v1beta2\""
            )),
            "{object}: {reason}"
        );
    }

    // Live mode reads all the server holds of the kinds it lists: the
    // examples' objects less the refused ones, plus the namespaces made
    // for them and those kube-apiserver makes itself.
    let report = live(loaded.bed.kubeconfig_path(), &["report", "-o", "json"]).await;
    assert_eq!(report.code, 0, "{}", report.stderr);
    let read: Value = serde_json::from_str(&report.stdout).unwrap();
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for object in &objects {
        if !loaded.refused.contains_key(&object_key(object)) {
            *expected
                .entry(object["kind"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    let held = dump_objects(loaded).await;
    // Each status reached the server, through the status subresource where
    // the kind has one.
    let with_status: BTreeSet<String> = held
        .iter()
        .filter(|o| o["status"].as_object().is_some_and(|s| !s.is_empty()))
        .map(object_key)
        .collect();
    for object in &objects {
        let key = object_key(object);
        let has_status = object["status"].as_object().is_some_and(|s| !s.is_empty());
        if has_status && !loaded.refused.contains_key(&key) {
            assert!(with_status.contains(&key), "{key} has no status");
        }
    }
    // Without Cluster API's conversion webhook a `v1beta1` Machine is kept
    // as `v1beta2` with what differs between the versions pruned, not
    // converted.
    let machine = held
        .iter()
        .find(|o| object_key(o) == "Machine clusters/prod-east-md-0-5c7f9-2b4xq")
        .unwrap();
    assert_eq!(machine["apiVersion"], "cluster.x-k8s.io/v1beta2");
    assert_eq!(
        machine["spec"]["infrastructureRef"],
        json!({"kind": "VSphereMachine", "name": "prod-east-md-0-5c7f9-2b4xq"})
    );
    assert_eq!(
        machine["status"],
        json!({"nodeRef": {"name": "prod-east-md-0-5c7f9-2b4xq"}, "phase": "Running"})
    );
    let namespaces = held.iter().filter(|o| o["kind"] == "Namespace").count() as u64;
    expected.insert("Namespace".to_owned(), namespaces);
    // The server has Kubernetes' own PriorityClasses too.
    let classes = held.iter().filter(|o| o["kind"] == "PriorityClass").count() as u64;
    expected.insert("PriorityClass".to_owned(), classes);
    for (kind, count) in read["objects"].as_object().unwrap() {
        assert_eq!(
            count.as_u64().unwrap(),
            expected.get(kind).copied().unwrap_or(0),
            "{kind}: {}",
            read["objects"]
        );
    }
}

/// What the trip through kube-apiserver does to the objects (defaults,
/// admission, pruning to the CRD schemas, `v1beta1` Cluster API objects
/// kept as `v1beta2`) changes no decision: live mode on the bed prints what
/// `-f` prints on the example files themselves. Not here, with their
/// reasons in docs/testing.md ("Known limits of the bed"): `soothe` and
/// `report` (first-in first-out by creation time, which the server sets),
/// `modules` (the VSphereCluster is one of the refused `v1beta2` objects).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_server_keeps_what_policyctl_decides_from_the_examples() {
    if kube_testbed::skip_requested() {
        return;
    }
    let loaded = loaded();
    let examples = example_files();
    for command in COMMANDS.iter().chain(VARIANTS) {
        if matches!(command[0], "soothe" | "report" | "modules") {
            continue;
        }
        let args = [command, &["-o", "json"][..]].concat();
        let (live, files) = tokio::join!(
            live(loaded.bed.kubeconfig_path(), &args),
            from_files(&examples, &args)
        );
        assert_eq!(live.code, files.code, "{args:?}: {}", live.stderr);
        assert_same(
            &without_queue_order(&without_inputs(&live.stdout)),
            &without_queue_order(&without_inputs(&files.stdout)),
            &args.join(" "),
        );
    }
}

/// `schedule --all`'s queue order without the pods' order: kube-apiserver
/// stamps each pod's `creationTimestamp` when the examples are loaded, so
/// pods of equal priority queue in load order there and in the files'
/// order here (the placements must still agree).
fn without_queue_order(json: &str) -> String {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(mut document)) if document.contains_key("order") => {
            if let Some(Value::Array(order)) = document.get_mut("order") {
                order.sort_by_key(|pod| pod.as_str().map(str::to_owned));
            }
            serde_json::to_string_pretty(&document).unwrap_or_default() + "\n"
        }
        _ => json.to_owned(),
    }
}

/// Every command that reads a cluster, in every output format: live mode
/// on the real server prints byte for byte what `-f` prints on a
/// `kubectl get -o yaml` dump and on a `kubectl get -o json` dump of the
/// same server, with the same exit code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_live_is_byte_identical_to_dash_f_on_a_dump_of_the_same_server() {
    if kube_testbed::skip_requested() {
        return;
    }
    let loaded = loaded();
    let started = Instant::now();
    let yaml = dump(loaded, "yaml", "equality").await;
    let json = dump(loaded, "json", "equality").await;
    let before: Vec<Vec<u8>> = json.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let server = loaded.bed.server_url().to_owned();
    let mut runs = 0;
    let mut normalised = 0;
    for args in invocations() {
        let what = args.join(" ");
        let (live, from_yaml, from_json) = tokio::join!(
            live(loaded.bed.kubeconfig_path(), &args),
            from_files(&yaml, &args),
            from_files(&json, &args),
        );
        assert!(
            matches!(live.code, 0 | 1),
            "live {what}: exit {}: {}",
            live.code,
            live.stderr
        );
        assert!(
            !live.stderr.contains("cannot list"),
            "live {what}: {}",
            live.stderr
        );
        // Exit 1 is `config check --strict` on the examples' warnings,
        // and `modules` without the VSphereCluster the bed refuses.
        assert!(
            live.code == 1 || live.stdout.len() > 20,
            "live {what}: {live:?}"
        );
        let live_out = normalise(&live.stdout, &server);
        normalised += live_out.matches(" (<input>)\n").count();
        for (files, run) in [(&yaml, from_yaml), (&json, from_json)] {
            assert_eq!(
                live.code, run.code,
                "exit codes differ for {what}: live {}, -f {}",
                live.stderr, run.stderr
            );
            let source = files[1].display().to_string();
            assert_same(&live_out, &normalise(&run.stdout, &source), &what);
            assert_same(&live.stderr, &run.stderr, &format!("{what} (stderr)"));
            runs += 1;
        }
    }
    // The tables of `report` and `config check` name the sources of the
    // node-agent and repository-maintenance ConfigMaps, `maintenance` the
    // latter's.
    assert_eq!(normalised, 5);
    // Nothing changed the objects while the commands ran.
    let after = dump(loaded, "json", "after").await;
    let after: Vec<Vec<u8>> = after.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert!(before == after, "the objects changed during the test");
    eprintln!(
        "{} commands x {} formats and {} variants: {runs} comparisons in {:?}",
        COMMANDS.len(),
        FORMATS.len(),
        VARIANTS.len(),
        started.elapsed()
    );
}

/// One rule of the generated roles: the role's kind, the API group and one
/// resource of the rule.
#[derive(Clone, Debug)]
struct Grant {
    role: String,
    group: String,
    resource: String,
}

/// Removes one resource from the roles (and its rule when it was the only
/// one).
fn without(roles: &[Value], grant: &Grant) -> Vec<Value> {
    let mut roles = roles.to_vec();
    for role in &mut roles {
        if role["kind"] != grant.role.as_str() {
            continue;
        }
        let rules = role["rules"].as_array_mut().unwrap();
        for rule in rules.iter_mut() {
            if rule["apiGroups"] == json!([grant.group]) {
                let resources = rule["resources"].as_array_mut().unwrap();
                let before = resources.len();
                resources.retain(|r| r != grant.resource.as_str());
                assert_eq!(resources.len() + 1, before, "{grant:?}");
            }
        }
        rules.retain(|rule| !rule["resources"].as_array().unwrap().is_empty());
    }
    roles
}

/// The note live mode gives for a kind it may not list.
fn forbidden_note(kind: Kind) -> String {
    let resource = kind.resource();
    let place = match resource.scope {
        Scope::VeleroNamespace => format!(" in namespace {VELERO_NAMESPACE}"),
        Scope::Cluster | Scope::AllNamespaces => String::new(),
    };
    format!(
        "note: cannot list {}{place}: forbidden (403)",
        resource.display_name()
    )
}

fn forbidden_notes(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.starts_with("note: cannot list") && line.contains("forbidden (403)"))
        .collect()
}

/// Whether kube-apiserver's authorizer lets `user` list `resource` (in
/// Velero's namespace for the Role's resources, everywhere for the
/// ClusterRole's).
async fn allowed(client: &kube::Client, user: &str, grant: &Grant) -> bool {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_owned()),
            groups: Some(vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{VELERO_NAMESPACE}"),
                "system:authenticated".to_owned(),
            ]),
            resource_attributes: Some(ResourceAttributes {
                group: Some(grant.group.clone()),
                resource: Some(grant.resource.clone()),
                verb: Some("list".to_owned()),
                namespace: (grant.role == "Role").then(|| VELERO_NAMESPACE.to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    answer.status.is_some_and(|status| status.allowed)
}

/// Waits until the authorizer answers `expected` for each grant (RBAC
/// changes reach it through an informer, a moment after the write).
async fn await_authorizer(client: &kube::Client, user: &str, grants: &[(Grant, bool)]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    for (grant, expected) in grants {
        while allowed(client, user, grant).await != *expected {
            assert!(
                Instant::now() < deadline,
                "the authorizer never answered {expected} for {grant:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Sets the rules of the generated ClusterRole and Role to those of
/// `roles` (a merge patch replaces the whole list).
async fn set_rules(client: &kube::Client, roles: &[Value]) {
    for role in roles {
        let name = role["metadata"]["name"].as_str().unwrap();
        let patch = Patch::Merge(json!({ "rules": role["rules"] }));
        let params = PatchParams::default();
        if role["kind"] == "ClusterRole" {
            Api::<ClusterRole>::all(client.clone())
                .patch(name, &params, &patch)
                .await
                .unwrap();
        } else {
            let namespace = role["metadata"]["namespace"].as_str().unwrap();
            Api::<Role>::namespaced(client.clone(), namespace)
                .patch(name, &params, &patch)
                .await
                .unwrap();
        }
    }
}

/// The roles `policyctl rbac` prints are sufficient (every command runs as
/// a ServiceAccount bound by them, with no kind forbidden and the same
/// output as the admin's) and least (without any one resource of any rule,
/// live mode notes exactly that kind as forbidden), as kube-apiserver's
/// RBAC authorizer decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_rbac_is_sufficient_and_every_rule_is_needed() {
    if kube_testbed::skip_requested() {
        return;
    }
    let loaded = loaded();
    let bed = &loaded.bed;
    let started = Instant::now();
    let account = "policyctl-reader";
    let user = format!("system:serviceaccount:{VELERO_NAMESPACE}:{account}");
    let run = kubectl(
        bed,
        &["create", "serviceaccount", account, "-n", VELERO_NAMESPACE],
        None,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);

    // Exactly what `policyctl rbac` prints, applied as users do.
    let subject = format!("{VELERO_NAMESPACE}/{account}");
    let rbac = policyctl(&["rbac", "--service-account", &subject]).await;
    assert_eq!(rbac.code, 0, "{}", rbac.stderr);
    let run = kubectl(bed, &["apply", "-f", "-"], Some(rbac.stdout.as_bytes())).await;
    assert_eq!(run.code, 0, "kubectl apply: {}", run.stderr);
    let listed = policyctl(&["rbac", "--service-account", &subject, "-o", "json"]).await;
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    let roles: Vec<Value> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| matches!(item["kind"].as_str(), Some("ClusterRole" | "Role")))
        .cloned()
        .collect();
    let mut grants = Vec::new();
    for role in &roles {
        for rule in role["rules"].as_array().unwrap() {
            assert_eq!(rule["verbs"], json!(["list"]), "{rule}");
            let [group] = rule["apiGroups"].as_array().unwrap().as_slice() else {
                panic!("one API group per rule: {rule}");
            };
            for resource in rule["resources"].as_array().unwrap() {
                grants.push(Grant {
                    role: role["kind"].as_str().unwrap().to_owned(),
                    group: group.as_str().unwrap().to_owned(),
                    resource: resource.as_str().unwrap().to_owned(),
                });
            }
        }
    }
    assert_eq!(grants.len(), Kind::ALL.len(), "{grants:?}");
    let client = bed.client();
    let all_allowed: Vec<(Grant, bool)> = grants.iter().map(|g| (g.clone(), true)).collect();
    await_authorizer(&client, &user, &all_allowed).await;

    // Sufficient: every command, as the ServiceAccount, reads all it needs
    // and prints what it prints for the admin.
    let token = bed
        .service_account_kubeconfig(VELERO_NAMESPACE, account)
        .await
        .unwrap();
    for command in COMMANDS {
        let mut args: Vec<&str> = command.to_vec();
        args.extend(["-o", "json"]);
        let (reader, admin) = tokio::join!(live(&token, &args), live(bed.kubeconfig_path(), &args));
        assert!(
            !reader.stderr.contains("cannot list"),
            "{args:?}: {}",
            reader.stderr
        );
        assert_eq!(reader.code, admin.code, "{args:?}: {}", reader.stderr);
        assert_same(&reader.stdout, &admin.stdout, &args.join(" "));
    }

    // Least: without any one resource, exactly its kind is forbidden. Each
    // step gives back the previous resource and takes the next one away.
    let mut previous: Option<&Grant> = None;
    for grant in &grants {
        let kind = Kind::ALL
            .into_iter()
            .find(|k| k.resource().group == grant.group && k.resource().plural == grant.resource)
            .unwrap_or_else(|| panic!("no kind for {grant:?}"));
        set_rules(&client, &without(&roles, grant)).await;
        let mut expected = vec![(grant.clone(), false)];
        expected.extend(previous.map(|g| (g.clone(), true)));
        await_authorizer(&client, &user, &expected).await;
        let report = live(&token, &["report", "-o", "json"]).await;
        // Every kind is a dependency of some section of the report: the
        // answer is incomplete, says which kind, and exits 3.
        assert_eq!(report.code, 3, "{grant:?}: {}", report.stderr);
        let document: Value = serde_json::from_str(&report.stdout).unwrap();
        let name = kind.resource().kind;
        assert_eq!(document["complete"], false, "{grant:?}");
        for (other, status) in document["inputs"].as_object().unwrap() {
            let expected = if other == name {
                "forbidden"
            } else {
                status
                    .as_str()
                    .filter(|s| matches!(*s, "read" | "empty" | "not served"))
                    .unwrap_or("read or empty")
            };
            assert_eq!(status, expected, "{grant:?}: {other}");
        }
        let incomplete = document["incomplete"].as_object().unwrap();
        assert!(!incomplete.is_empty(), "{grant:?}");
        assert!(
            incomplete.values().all(|kinds| kinds == &json!([name])),
            "{grant:?}: {incomplete:?}"
        );
        let notes = forbidden_notes(&report.stderr);
        assert_eq!(notes.len(), 1, "{grant:?}: {}", report.stderr);
        assert!(
            notes[0].starts_with(&forbidden_note(kind)),
            "{grant:?}: {}",
            notes[0]
        );
        previous = Some(grant);
    }
    set_rules(&client, &roles).await;
    await_authorizer(&client, &user, &all_allowed).await;
    eprintln!(
        "RBAC: {} commands sufficient, {} resources each needed, in {:?}",
        COMMANDS.len(),
        grants.len(),
        started.elapsed()
    );
}

/// A ServiceAccount with no binding may list nothing: every kind is noted
/// as forbidden on standard error, and the report says on standard output
/// and in JSON that it was built from nothing, never that the ConfigMap is
/// absent, and exits 3 (0 with --allow-partial, with the same statement).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_without_bindings_is_noted_forbidden_for_every_kind() {
    if kube_testbed::skip_requested() {
        return;
    }
    let loaded = loaded();
    let bed = &loaded.bed;
    let account = "policyctl-unbound";
    let run = kubectl(
        bed,
        &["create", "serviceaccount", account, "-n", VELERO_NAMESPACE],
        None,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let token = bed
        .service_account_kubeconfig(VELERO_NAMESPACE, account)
        .await
        .unwrap();
    let report = live(&token, &["report"]).await;
    eprintln!(
        "unbound ServiceAccount, report: exit {}\n--- stdout\n{}--- stderr\n{}",
        report.code, report.stdout, report.stderr
    );
    let notes = forbidden_notes(&report.stderr);
    let expected: Vec<String> = Kind::ALL.into_iter().map(forbidden_note).collect();
    assert_eq!(notes.len(), expected.len(), "{}", report.stderr);
    for (note, expected) in notes.iter().zip(&expected) {
        assert!(note.starts_with(expected.as_str()), "{note}");
    }
    assert_eq!(report.code, 3, "{}", report.stderr);
    assert!(
        report.stdout.starts_with(
            "INCOMPLETE: these answers are built without kinds policyctl could not read.\n  forbidden (403): the user may not list them: Backup, BackupRepository, CSINode,"
        ),
        "{}",
        report.stdout
    );
    for text in [&report.stdout, &report.stderr] {
        assert!(!text.contains("no ConfigMap named"), "{text}");
        assert!(!text.contains("Configuration: Velero's defaults"), "{text}");
    }
    assert!(
        report.stdout.contains(&format!(
            "Configuration: unknown: v1 ConfigMap in namespace {VELERO_NAMESPACE} could not be listed (forbidden)"
        )),
        "{}",
        report.stdout
    );
    let queue = report.stdout.find("== Backup queue").unwrap();
    assert_eq!(
        report.stdout[queue..].lines().nth(1),
        Some(
            "incomplete: Backup (forbidden), Namespace (forbidden) could not be read; this section shows only what was read"
        )
    );

    let json = live(&token, &["report", "-o", "json"]).await;
    assert_eq!(json.code, 3, "{}", json.stderr);
    let document: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(document["complete"], false);
    let inputs = document["inputs"].as_object().unwrap();
    assert_eq!(inputs.len(), Kind::ALL.len());
    assert!(
        inputs.values().all(|status| status == "forbidden"),
        "{inputs:?}"
    );
    let partial = live(&token, &["--allow-partial", "report", "-o", "json"]).await;
    assert_eq!(partial.code, 0, "{}", partial.stderr);
    assert_eq!(partial.stdout, json.stdout);
}

/// Only the Velero kinds forbidden (their rule taken out of the generated
/// Role): the sections that read them are marked, the others are not, and
/// the report exits 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_velero_kinds_forbidden_marks_the_sections_that_read_them() {
    if kube_testbed::skip_requested() {
        return;
    }
    let loaded = loaded();
    let bed = &loaded.bed;
    let account = "policyctl-no-velero";
    let user = format!("system:serviceaccount:{VELERO_NAMESPACE}:{account}");
    let run = kubectl(
        bed,
        &["create", "serviceaccount", account, "-n", VELERO_NAMESPACE],
        None,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let subject = format!("{VELERO_NAMESPACE}/{account}");
    let listed = policyctl(&["rbac", "--service-account", &subject, "-o", "json"]).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let mut listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    // Other names than the generated ones: this test's roles stand apart
    // from those the other tests change.
    for item in listed["items"].as_array_mut().unwrap() {
        item["metadata"]["name"] = json!("policyctl-no-velero");
        if let Some(role_ref) = item.get_mut("roleRef") {
            role_ref["name"] = json!("policyctl-no-velero");
        }
        if let Some(rules) = item["rules"].as_array_mut() {
            rules.retain(|rule| rule["apiGroups"] != json!(["velero.io"]));
        }
    }
    let documents: String = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| format!("---\n{item}\n"))
        .collect();
    let run = kubectl(bed, &["apply", "-f", "-"], Some(documents.as_bytes())).await;
    assert_eq!(run.code, 0, "kubectl apply: {}", run.stderr);
    let client = bed.client();
    let grant = |resource: &str, group: &str, role: &str| Grant {
        role: role.to_owned(),
        group: group.to_owned(),
        resource: resource.to_owned(),
    };
    await_authorizer(
        &client,
        &user,
        &[
            (grant("configmaps", "", "Role"), true),
            (grant("pods", "", "ClusterRole"), true),
            (grant("backups", "velero.io", "Role"), false),
        ],
    )
    .await;
    let token = bed
        .service_account_kubeconfig(VELERO_NAMESPACE, account)
        .await
        .unwrap();
    let json = live(&token, &["report", "-o", "json"]).await;
    assert_eq!(json.code, 3, "{}", json.stderr);
    let document: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        document["incomplete"],
        json!({
            "dataMovers": ["DataDownload", "DataUpload"],
            "maintenance": ["BackupRepository"],
            "queue": ["Backup"],
            "soothe": ["DataDownload", "DataUpload", "PodVolumeBackup", "PodVolumeRestore"],
        })
    );
    for (kind, status) in document["inputs"].as_object().unwrap() {
        let velero = Kind::ALL
            .into_iter()
            .any(|k| k.resource().kind == kind && k.resource().group == "velero.io");
        assert_eq!(status == "forbidden", velero, "{kind}: {status}");
    }
    let table = live(&token, &["report"]).await;
    assert_eq!(table.code, 3, "{}", table.stderr);
    let queue = table.stdout.find("== Backup queue").unwrap();
    assert_eq!(
        table.stdout[queue..].lines().nth(1),
        Some(
            "incomplete: Backup (forbidden) could not be read; this section shows only what was read"
        )
    );
    assert!(
        table
            .stdout
            .contains("Configuration: ConfigMap velero/node-agent-config"),
        "{}",
        table.stdout
    );
}
