//! Live mode end to end: the policyctl binary, as a process, reads the
//! example clusters' objects from the API stand-in served on a loopback port
//! through a real kubeconfig file (`--kubeconfig`), and must print exactly
//! what `-f` prints for the same objects, making list requests only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kube_fake_api::server::Loopback;
use kube_fake_api::{FakeApi, Registry, ResourceId, ResourceInfo, Verb};
use policyctl::live::{Kind, Scope};
use serde_json::{Value, json};

/// Names the example cluster's HostInventory ConfigMap, outside Velero's
/// namespace.
const INVENTORY: &[&str] = &["--inventory-config-map", "kube-system/host-inventory"];

/// The files of an example directory (cluster objects all, the
/// HostInventory in its ConfigMap included).
fn example_files(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
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

/// The kind policyctl lists for an object, with the object's version.
fn kind_of(object: &Value) -> Option<(Kind, String)> {
    let api_version = object["apiVersion"].as_str()?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str()?;
    Kind::ALL
        .into_iter()
        .find(|k| k.resource().kind == kind && k.resource().group == group)
        .map(|k| (k, version.to_owned()))
}

/// A stand-in serving the kinds policyctl lists (each at one version, as
/// the newest the objects have, so that live mode's fallback from
/// `v1beta2` to `v1beta1` is exercised where they have only `v1beta1`),
/// holding the objects.
struct Cluster {
    fake: FakeApi,
    ids: BTreeMap<Kind, ResourceId>,
}

impl Cluster {
    /// Serves every kind but those `missing` (their CRDs are not
    /// installed).
    fn new(objects: &[Value], missing: &[Kind]) -> Self {
        let fake = FakeApi::with_registry(Registry::empty());
        let mut ids = BTreeMap::new();
        for kind in Kind::ALL {
            if missing.contains(&kind) {
                continue;
            }
            let resource = kind.resource();
            let version = resource
                .versions
                .iter()
                .find(|v| {
                    objects
                        .iter()
                        .any(|o| kind_of(o).is_some_and(|(k, ov)| k == kind && ov == **v))
                })
                .unwrap_or(&resource.versions[resource.versions.len() - 1]);
            let info = match resource.scope {
                Scope::Cluster => {
                    ResourceInfo::cluster(resource.group, version, resource.kind, resource.plural)
                }
                Scope::AllNamespaces | Scope::VeleroNamespace => ResourceInfo::namespaced(
                    resource.group,
                    version,
                    resource.kind,
                    resource.plural,
                ),
            };
            fake.register(info);
            ids.insert(
                kind,
                ResourceId::new(resource.group, version, resource.plural),
            );
        }
        for object in objects {
            if let Some((kind, _)) = kind_of(object)
                && let Some(id) = ids.get(&kind)
            {
                fake.seed_value(id, object.clone()).unwrap();
            }
        }
        Self { fake, ids }
    }

    fn example(missing: &[Kind]) -> Self {
        let objects = objects_of(&example_files("cluster"));
        assert!(objects.len() > 70, "{} example objects", objects.len());
        Self::new(&objects, missing)
    }

    /// The stand-in's objects of every kind it serves, as `kubectl get KIND
    /// -A -o json` prints them (server-assigned fields such as
    /// resourceVersion and uid included), in one file: "the same objects"
    /// for `-f`.
    fn dump(&self, name: &str) -> PathBuf {
        let mut text = String::new();
        for id in self.ids.values() {
            let list = json!({
                "apiVersion": "v1",
                "kind": "List",
                "items": self.fake.list_values(id, None),
            });
            text.push_str(&serde_json::to_string_pretty(&list).unwrap());
            text.push('\n');
        }
        // Tests run in parallel in one process: a name per dump.
        static DUMPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let number = DUMPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "policyctl-live-{}-{number}-{name}.json",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// No request but lists (and the server's `/version`, which the
    /// scheduling commands read): every one a GET.
    fn assert_read_only(&self) {
        let requests = self.fake.requests();
        assert!(!requests.is_empty());
        for request in requests {
            assert_eq!(request.method, "GET", "{request:?}");
            if request.path == "/version" {
                continue;
            }
            assert_eq!(request.verb, Some(Verb::List), "not a list: {request:?}");
        }
    }
}

/// Result of one policyctl process.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

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

async fn live(server: &Loopback, args: &[&str]) -> Run {
    let kubeconfig = server.kubeconfig_path().display().to_string();
    let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
    all.extend_from_slice(args);
    policyctl(&all).await
}

async fn from_file(file: &Path, args: &[&str]) -> Run {
    let file = file.display().to_string();
    let mut all = vec!["-f", file.as_str()];
    all.extend_from_slice(args);
    policyctl(&all).await
}

/// The output without its statement of how each kind was read: the one
/// part where live mode and `-f` legitimately differ (a kind with no
/// objects is `empty` when listed, `not in input` in a file; a kind the
/// server does not serve is `not served`).
fn without_inputs(stdout: &str) -> String {
    match serde_json::from_str::<Value>(stdout) {
        Ok(Value::Object(mut document)) => {
            for key in ["inputs", "complete", "incomplete"] {
                document.remove(key);
            }
            serde_json::to_string_pretty(&document).unwrap()
        }
        _ => match stdout.find("\nInputs not read with objects:\n") {
            Some(start) => stdout[..start + 1].to_owned(),
            None => stdout.to_owned(),
        },
    }
}

/// Byte equality of the outputs (but for [`without_inputs`]) and equal
/// exit codes, reporting the first line that differs.
fn assert_same(live: &Run, files: &Run, args: &[&str]) {
    assert_eq!(
        live.code, files.code,
        "exit codes differ for {args:?}: live {}, -f {}",
        live.stderr, files.stderr
    );
    let (live_stdout, files_stdout) = (without_inputs(&live.stdout), without_inputs(&files.stdout));
    if live_stdout != files_stdout {
        let (number, (l, f)) = live_stdout
            .lines()
            .zip(files_stdout.lines())
            .enumerate()
            .find(|(_, (l, f))| l != f)
            .unwrap_or((0, ("<length>", "<length>")));
        panic!(
            "live and -f differ for {args:?} at line {}:\n live: {l}\n   -f: {f}\nlive stdout:\n{}",
            number + 1,
            live.stdout
        );
    }
}

/// Runs each command live and with `-f` on a dump of the same objects.
async fn assert_live_equals_files(cluster: &Cluster, server: &Loopback, commands: &[&[&str]]) {
    let file = cluster.dump("equality");
    for args in commands {
        let live = live(server, args).await;
        let files = from_file(&file, args).await;
        assert_eq!(live.code, 0, "live {args:?}: {}", live.stderr);
        assert!(live.stdout.len() > 20, "{args:?}: {}", live.stdout);
        assert!(!live.stderr.contains("cannot list"), "{}", live.stderr);
        assert_same(&live, &files, args);
    }
    let _ = std::fs::remove_file(file);
}

/// Every command that reads the cluster, on the example cluster. Each
/// lists only the kinds it declares, so equality with `-f` on every object
/// also checks that the declarations are complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_live_is_byte_identical_to_dash_f_on_the_same_objects() {
    let cluster = Cluster::example(&[]);
    let server = Loopback::start(cluster.fake.clone(), None).await.unwrap();
    // Live mode lists the HostInventory's ConfigMap when it is named with
    // its namespace; `-f` reads the same one.
    let commands: &[&[&str]] = &[
        &["report", "-o", "json"],
        &["queue", "-o", "json"],
        &["queue", "--concurrent-backups", "3", "-o", "json"],
        &["soothe", "-o", "json"],
        &["soothe", "--mode", "exact", "-o", "json"],
        &["config", "check", "-o", "json"],
        &["concurrency", "-o", "json"],
        &["affinity", "--pvc", "shop/data-shop-0", "-o", "json"],
        &[
            "affinity",
            "--pvc",
            "shop/restored-data",
            "--restore",
            "-o",
            "json",
        ],
        &["schedule", "--all", "-o", "json"],
        &[
            "schedule",
            "--pod",
            "shop/web-7c9f8d6b5-r9t2x",
            "-o",
            "json",
        ],
        &["host-labels", "-o", "json"],
        &["host-labels", "--sync-machine-labels", "-o", "json"],
        &["hosts", "plan", "-o", "json"],
        &["maintenance", "-o", "json"],
        &[
            "diagnose",
            "--pod",
            "velero/nightly-apps-20260520-c7d5n",
            "-o",
            "json",
        ],
    ];
    let named: Vec<Vec<&str>> = commands
        .iter()
        .map(|args| [INVENTORY, args].concat())
        .collect();
    let named: Vec<&[&str]> = named.iter().map(Vec::as_slice).collect();
    assert_live_equals_files(&cluster, &server, &named).await;
    cluster.assert_read_only();

    // Not vacuous: live mode read every object of the example cluster.
    let report = live(&server, &[INVENTORY, &["report", "-o", "json"]].concat()).await;
    let mut read: Value = serde_json::from_str(&report.stdout).unwrap();
    let bundled = policyctl(&[INVENTORY, &["report", "-o", "json"]].concat()).await;
    let mut expected: Value = serde_json::from_str(&bundled.stdout).unwrap();
    assert_eq!(read["objects"]["HostInventory"], 1);
    assert_eq!(read["objects"].take(), expected["objects"].take());
}

/// `report -o html` works in live mode: the page embeds live mode's own
/// `-o json` document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_html_live_embeds_the_live_json_document() {
    let cluster = Cluster::example(&[]);
    let server = Loopback::start(cluster.fake.clone(), None).await.unwrap();
    let page = live(&server, &[INVENTORY, &["report", "-o", "html"]].concat()).await;
    let json = live(&server, &[INVENTORY, &["report", "-o", "json"]].concat()).await;
    assert_eq!(page.code, 0, "{}", page.stderr);
    let start_tag = "<script type=\"application/json\" id=\"data\">";
    let start = page.stdout.find(start_tag).expect("embedded document") + start_tag.len();
    let end = start + page.stdout[start..].find("</script>").expect("its end");
    let embedded: Value = serde_json::from_str(&page.stdout[start..end]).unwrap();
    let expected: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(embedded, expected);
    assert_eq!(embedded["objects"]["Node"], 7, "live mode read the cluster");
    cluster.assert_read_only();
}

/// The Cluster API kinds of a management cluster, for `modules`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modules_live_is_byte_identical_to_dash_f_on_a_management_cluster() {
    let objects = objects_of(&example_files("management-cluster"));
    let cluster = Cluster::new(&objects, &[]);
    let server = Loopback::start(cluster.fake.clone(), None).await.unwrap();
    assert_live_equals_files(
        &cluster,
        &server,
        &[
            &["modules", "--cluster", "clusters/prod-east", "-o", "json"],
            &["modules", "-o", "json"],
            &["host-labels", "--sync-machine-labels", "-o", "json"],
            &["report", "-o", "json"],
        ],
    )
    .await;
    cluster.assert_read_only();
    let report = live(&server, &["report", "-o", "json"]).await;
    let read: Value = serde_json::from_str(&report.stdout).unwrap();
    for kind in [
        "Machine",
        "VSphereCluster",
        "VSphereVM",
        "KubeadmControlPlane",
    ] {
        assert!(
            read["objects"][kind].as_u64().unwrap_or(0) > 0,
            "{kind}: {}",
            read["objects"]
        );
    }
}

/// The node-agent DaemonSet is listed in Velero's namespace: the
/// tolerations it gives data movers (A2.27) are the same live as with
/// `-f`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_agent_daemon_set_is_read_live_as_with_dash_f() {
    let objects = objects_of(&example_files("aks-spot"));
    let cluster = Cluster::new(&objects, &[]);
    let server = Loopback::start(cluster.fake.clone(), None).await.unwrap();
    let diagnose: &[&str] = &[
        "diagnose",
        "--pod",
        "velero/daily-shop-20260520-x7k2p",
        "-o",
        "json",
    ];
    assert_live_equals_files(
        &cluster,
        &server,
        &[
            diagnose,
            &["affinity", "--pvc", "shop/data-orders-0", "-o", "json"],
            &["report", "-o", "json"],
        ],
    )
    .await;
    cluster.assert_read_only();
    let run = live(&server, diagnose).await;
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        document["inputs"]["DaemonSet"],
        json!("read"),
        "{document:#}"
    );
    assert_eq!(
        document["schedulable"],
        json!(["aks-spot-16180339-vmss000000"]),
        "{document:#}"
    );
}

/// Lists come in pages of --chunk-size (500 by default) objects, all of
/// them read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_are_read_page_by_page() {
    let mut objects = objects_of(&example_files("cluster"));
    for index in 0..1_100 {
        objects.push(json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": format!("tenant-{index:04}"), "creationTimestamp": "2026-01-01T00:00:00Z"},
        }));
    }
    let cluster = Cluster::new(&objects, &[]);
    let server = Loopback::start(cluster.fake.clone(), None).await.unwrap();
    assert_live_equals_files(&cluster, &server, &[&["queue", "-o", "json"]]).await;
    let namespace_lists: Vec<_> = cluster
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.is(Verb::List, "namespaces"))
        .collect();
    assert_eq!(namespace_lists.len(), 3, "{namespace_lists:?}");
    assert!(
        namespace_lists
            .iter()
            .all(|r| r.query.contains("limit=500"))
    );
    assert_eq!(
        namespace_lists
            .iter()
            .filter(|r| r.query.contains("continue="))
            .count(),
        2
    );

    // Small pages give the same answer.
    cluster.fake.clear_requests();
    let small = live(&server, &["--chunk-size", "2", "report", "-o", "json"]).await;
    let large = live(&server, &["report", "-o", "json"]).await;
    assert_eq!(small.code, 0, "{}", small.stderr);
    assert_eq!(small.stdout, large.stdout);
    let pod_pages = cluster
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.is(Verb::List, "pods") && r.query.contains("limit=2"))
        .count();
    assert_eq!(pod_pages, 18 / 2, "18 pods in pages of 2");
    cluster.assert_read_only();
}

/// `policyctl rbac` is all live mode needs: run as a ServiceAccount bound
/// by its output, no request is denied; without the DataUpload rule, that
/// kind is a note and the command goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_rbac_suffices_and_a_forbidden_kind_is_a_note() {
    // The HostInventory's ConfigMap is outside Velero's namespace: named,
    // it gets a Role of its own.
    let rbac =
        policyctl(&[INVENTORY, &["rbac", "--service-account", "tools/policyctl"]].concat()).await;
    assert_eq!(rbac.code, 0, "{}", rbac.stderr);
    assert!(
        rbac.stdout.contains(
            "kind: Role\nmetadata:\n  labels:\n    app.kubernetes.io/name: policyctl\n  name: policyctl-reader\n  namespace: kube-system\nrules:\n- apiGroups:\n  - \"\"\n  resources:\n  - configmaps\n  verbs:\n  - list\n"
        ),
        "{}",
        rbac.stdout
    );

    let cluster = Cluster::example(&[]);
    cluster.fake.enforce_rbac(&rbac.stdout).unwrap();
    let server = Loopback::start(cluster.fake.clone(), Some(("tools", "policyctl")))
        .await
        .unwrap();
    let report = live(&server, &[INVENTORY, &["report", "-o", "json"]].concat()).await;
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert!(
        cluster.fake.denied().is_empty(),
        "{:?}",
        cluster.fake.denied()
    );
    assert!(!report.stderr.contains("cannot list"), "{}", report.stderr);
    assert_eq!(
        serde_json::from_str::<Value>(&report.stdout).unwrap()["objects"]["HostInventory"],
        1
    );
    assert_live_equals_files(
        &cluster,
        &server,
        &[&[INVENTORY, &["report", "-o", "json"]].concat()],
    )
    .await;

    // The same roles without datauploads.
    let without = rbac.stdout.replace("  - datauploads\n", "");
    assert_ne!(without, rbac.stdout);
    let cluster = Cluster::example(&[]);
    cluster.fake.enforce_rbac(&without).unwrap();
    let server = Loopback::start(cluster.fake.clone(), Some(("tools", "policyctl")))
        .await
        .unwrap();
    // The answer depends on DataUploads: exit 3, unless --allow-partial.
    let partial = live(&server, &["soothe", "-o", "json"]).await;
    assert_eq!(partial.code, 3, "{}", partial.stderr);
    let stated: Value = serde_json::from_str(&partial.stdout).unwrap();
    assert_eq!(stated["inputs"]["DataUpload"], "forbidden", "{stated}");
    assert_eq!(stated["complete"], false);
    assert_eq!(stated["incomplete"], json!({"soothe": ["DataUpload"]}));
    let soothe = live(&server, &["soothe", "--allow-partial", "-o", "json"]).await;
    assert_eq!(soothe.code, 0, "{}", soothe.stderr);
    assert_eq!(soothe.stdout, partial.stdout);
    assert!(
        soothe.stderr.contains(
            "note: cannot list velero.io/v2alpha1 DataUpload in namespace velero: forbidden (403)"
        ),
        "{}",
        soothe.stderr
    );
    assert!(soothe.stderr.contains("going on without them"));
    assert_eq!(
        cluster.fake.denied().len(),
        2,
        "{:?}",
        cluster.fake.denied()
    );
    // The answer is the one for the objects policyctl could read.
    let unread = cluster.dump("no-datauploads");
    let text = std::fs::read_to_string(&unread).unwrap();
    let mut documents: Vec<Value> = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect();
    for document in &mut documents {
        if let Some(items) = document["items"].as_array_mut() {
            items.retain(|item| item["kind"] != "DataUpload");
        }
    }
    let text: Vec<String> = documents.iter().map(Value::to_string).collect();
    std::fs::write(&unread, text.join("\n")).unwrap();
    assert_same(
        &soothe,
        &from_file(&unread, &["soothe", "-o", "json"]).await,
        &["soothe"],
    );
    let _ = std::fs::remove_file(unread);
    cluster.assert_read_only();
}

/// No Velero and no Cluster API installed: each of their kinds is a note
/// (404) and the report is the one of the remaining objects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinds_without_their_crd_are_notes() {
    let missing = [
        Kind::Backup,
        Kind::PodVolumeBackup,
        Kind::PodVolumeRestore,
        Kind::DataUpload,
        Kind::DataDownload,
        Kind::Machine,
        Kind::Cluster,
        Kind::KubeadmControlPlane,
        Kind::MachineDeployment,
        Kind::MachineSet,
        Kind::VSphereCluster,
        Kind::VSphereMachineTemplate,
        Kind::VSphereVM,
    ];
    let cluster = Cluster::example(&missing);
    let server = Loopback::start(cluster.fake.clone(), None).await.unwrap();
    let report = live(&server, &[INVENTORY, &["report", "-o", "json"]].concat()).await;
    assert_eq!(report.code, 0, "{}", report.stderr);
    let notes: Vec<&str> = report
        .stderr
        .lines()
        .filter(|line| line.starts_with("note: cannot list"))
        .collect();
    assert_eq!(notes.len(), missing.len(), "{}", report.stderr);
    assert!(report.stderr.contains(
        "note: cannot list velero.io/v1 Backup in namespace velero: not found (404): the server does not serve this kind (is its CustomResourceDefinition installed?); going on without them"
    ), "{}", report.stderr);
    assert!(
        report.stderr.contains(
            "note: cannot list cluster.x-k8s.io/{v1beta2,v1beta1} Machine: not found (404)"
        ),
        "{}",
        report.stderr
    );
    let file = cluster.dump("no-crds");
    assert_same(
        &report,
        &from_file(&file, &[INVENTORY, &["report", "-o", "json"]].concat()).await,
        &["report"],
    );
    let _ = std::fs::remove_file(file);
    cluster.assert_read_only();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dash_f_with_a_live_option_is_a_usage_error() {
    for live in [&["--kubeconfig", "k"][..], &["--context", "c"], &["--live"]] {
        let mut args = vec!["-f", "x.yaml"];
        args.extend_from_slice(live);
        args.push("report");
        let run = policyctl(&args).await;
        assert_eq!(run.code, 2, "{run:?}");
        assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
        assert!(run.stderr.contains(live[0]), "{}", run.stderr);
    }
    let run = policyctl(&["-n", "velero", "queue"]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .starts_with("error: --namespace velero applies to live mode only"),
        "{}",
        run.stderr
    );
}

/// Live mode lists ConfigMaps in Velero's namespace and in those named by
/// `--config-map` and `--inventory-config-map`: a HostInventory kept
/// elsewhere is found only when named, and the error says how.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_live_reads_the_inventory_config_map_it_is_told_of() {
    let cluster = Cluster::example(&[]);
    let server = Loopback::start(cluster.fake.clone(), None).await.unwrap();
    let unnamed = live(&server, &["hosts", "plan"]).await;
    assert_eq!(unnamed.code, 1, "{unnamed:?}");
    assert!(
        unnamed
            .stderr
            .contains("no HostInventory (apiVersion policyctl/v1alpha1) in the input; give one with -f, or name the ConfigMap holding it with --inventory-config-map NAMESPACE/NAME"),
        "{}",
        unnamed.stderr
    );
    let named = live(&server, &[INVENTORY, &["hosts", "plan"]].concat()).await;
    assert_eq!(named.code, 0, "{named:?}");
    assert!(
        named.stdout.starts_with(
            "HostInventory ConfigMap kube-system/host-inventory, data key \"inventory.yaml\", document 1: 1 VM(s) to place"
        ),
        "{}",
        named.stdout
    );
    let wrong_key = live(
        &server,
        &[
            INVENTORY,
            &["--inventory-key", "hosts.yaml", "hosts", "plan"],
        ]
        .concat(),
    )
    .await;
    assert_eq!(wrong_key.code, 1, "{wrong_key:?}");
    assert!(
        wrong_key
            .stderr
            .contains("ConfigMap kube-system/host-inventory: data key \"hosts.yaml\" is missing"),
        "{}",
        wrong_key.stderr
    );
    cluster.assert_read_only();
}

/// Anything but 403 and 404 ends the run: one line naming the server or
/// the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_server_and_bad_kubeconfig_exit_1_with_one_line() {
    // A port nothing listens on: bind one, then free it.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let kubeconfig =
        std::env::temp_dir().join(format!("policyctl-live-{}-refused", std::process::id()));
    std::fs::write(&kubeconfig, kube_fake_api::server::kubeconfig(&url, None)).unwrap();
    let path = kubeconfig.display().to_string();
    let run = policyctl(&["--kubeconfig", &path, "queue"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("error: cannot list"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(&url), "{}", run.stderr);

    // A kubeconfig that does not parse: one error, then the parser's
    // excerpt of the offending lines, on their own lines.
    std::fs::write(&kubeconfig, "clusters: [not, a, kubeconfig").unwrap();
    let run = policyctl(&["--kubeconfig", &path, "queue"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stderr
            .lines()
            .filter(|line| line.starts_with("error: "))
            .count(),
        1,
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .starts_with(&format!("error: --kubeconfig {path}: ")),
        "{}",
        run.stderr
    );

    let missing = format!("{path}.missing");
    let run = policyctl(&["--kubeconfig", &missing, "queue"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains(&missing), "{}", run.stderr);

    std::fs::write(&kubeconfig, kube_fake_api::server::kubeconfig(&url, None)).unwrap();
    let run = policyctl(&["--kubeconfig", &path, "--context", "nope", "queue"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("nope"), "{}", run.stderr);
    let _ = std::fs::remove_file(kubeconfig);
}

/// Installed as `kubectl-policy`, live mode is the default (`kubectl
/// policy report`); `-f` still reads files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_a_kubectl_plugin_live_mode_is_the_default() {
    let cluster = Cluster::example(&[]);
    let server = Loopback::start(cluster.fake.clone(), None).await.unwrap();
    let dir = std::env::temp_dir().join(format!("policyctl-plugin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plugin = dir.join("kubectl-policy");
    let _ = std::fs::remove_file(&plugin);
    std::fs::copy(env!("CARGO_BIN_EXE_policyctl"), &plugin).unwrap();
    let run = |args: &[&str], kubeconfig: Option<&Path>| {
        let mut command = tokio::process::Command::new(&plugin);
        command.args(args);
        for (name, _) in std::env::vars() {
            if name.starts_with("POLICYCTL_") {
                command.env_remove(name);
            }
        }
        match kubeconfig {
            Some(path) => command.env("KUBECONFIG", path),
            None => command.env_remove("KUBECONFIG"),
        };
        command.output()
    };
    let output = run(&["queue", "-o", "json"], Some(server.kubeconfig_path()))
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(
        !cluster.fake.requests().is_empty(),
        "no request reached the cluster"
    );
    let file = cluster.dump("plugin");
    let files = from_file(&file, &["queue", "-o", "json"]).await;
    assert_eq!(String::from_utf8(output.stdout).unwrap(), files.stdout);

    cluster.fake.clear_requests();
    let path = file.display().to_string();
    let output = run(
        &["-f", &path, "queue", "-o", "json"],
        Some(server.kubeconfig_path()),
    )
    .await
    .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(cluster.fake.requests().is_empty());
    let _ = std::fs::remove_file(file);
    let _ = std::fs::remove_dir_all(dir);
}

/// The roles users apply: list only, the kinds live mode reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_manifests_snapshot() {
    let run = policyctl(&["rbac", "-n", "backup", "--user", "alice", "--group", "sre"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("rbac_manifests", run.stdout);
    let roles_only = policyctl(&["rbac", "-o", "json"]).await;
    let document: Value = serde_json::from_str(&roles_only.stdout).unwrap();
    let kinds: Vec<&str> = document["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["ClusterRole", "Role"]);
    for item in document["items"].as_array().unwrap() {
        for rule in item["rules"].as_array().unwrap() {
            assert_eq!(rule["verbs"], json!(["list"]));
        }
    }
}

/// The roles shown in docs/policyctl.md are the ones `policyctl rbac`
/// prints (and the tests enforce).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documented_roles_are_the_generated_ones() {
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/policyctl.md"),
    )
    .unwrap();
    let section = &docs[docs.find("### RBAC").unwrap()..];
    let start = section.find("```yaml\n").unwrap() + "```yaml\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let documented: Vec<Value> = serde_saphyr::from_multiple(block).unwrap();
    let generated = policyctl(&["rbac", "-o", "json"]).await;
    let generated: Value = serde_json::from_str(&generated.stdout).unwrap();
    assert_eq!(Value::Array(documented), generated["items"]);
}

/// `policyctl rbac`'s roles for `tools/policyctl`, with `edit` applied to
/// the list of its objects, as the YAML documents the stand-in enforces.
async fn rbac_without(edit: impl Fn(&mut Vec<Value>)) -> String {
    let rbac = policyctl(&["rbac", "--service-account", "tools/policyctl", "-o", "json"]).await;
    assert_eq!(rbac.code, 0, "{}", rbac.stderr);
    let mut list: Value = serde_json::from_str(&rbac.stdout).unwrap();
    let items = list["items"].as_array_mut().unwrap();
    edit(items);
    items
        .iter()
        .map(|item| format!("---\n{}\n", serde_json::to_string(item).unwrap()))
        .collect()
}

/// A user who may list nothing gets no clean bill of health: every kind is
/// stated forbidden, the ConfigMap is never said to be absent, the report
/// says so first on standard output and in JSON, and exits 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_who_may_list_nothing_gets_an_incomplete_report_and_exit_3() {
    // The roles, but no binding: the ServiceAccount may list nothing.
    let roles = rbac_without(|items| {
        items.retain(|item| !item["kind"].as_str().unwrap().ends_with("Binding"))
    })
    .await;
    let cluster = Cluster::example(&[]);
    cluster.fake.enforce_rbac(&roles).unwrap();
    let server = Loopback::start(cluster.fake.clone(), Some(("tools", "policyctl")))
        .await
        .unwrap();

    let table = live(&server, &["report"]).await;
    assert_eq!(table.code, 3, "{}", table.stderr);
    for text in [&table.stdout, &table.stderr] {
        assert!(!text.contains("no ConfigMap named"), "{text}");
        assert!(!text.contains("Configuration: Velero's defaults"), "{text}");
    }
    assert!(table.stdout.starts_with("INCOMPLETE: "), "{}", table.stdout);
    assert!(
        table
            .stderr
            .contains("note: cannot tell whether ConfigMap node-agent-config exists: v1 ConfigMap in namespace velero could not be listed (forbidden)"),
        "{}",
        table.stderr
    );
    insta::assert_snapshot!("live_report_with_no_read_access", table.stdout);

    let json = live(&server, &["report", "-o", "json"]).await;
    assert_eq!(json.code, 3, "{}", json.stderr);
    let document: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(document["complete"], false);
    let inputs = document["inputs"].as_object().unwrap();
    assert_eq!(inputs.len(), Kind::ALL.len());
    assert!(
        inputs.values().all(|status| status == "forbidden"),
        "{inputs:?}"
    );
    let incomplete = document["incomplete"].as_object().unwrap();
    for section in [
        "config",
        "concurrency",
        "queue",
        "hostLabels",
        "clusterModules",
    ] {
        assert!(
            incomplete.contains_key(section),
            "{section}: {incomplete:?}"
        );
    }

    // --allow-partial: the same statement, exit 0.
    let partial = live(&server, &["--allow-partial", "report", "-o", "json"]).await;
    assert_eq!(partial.code, 0, "{}", partial.stderr);
    assert_eq!(partial.stdout, json.stdout);

    // A command that needs a missing kind to find its object: the error
    // says the input is incomplete, exit 3.
    let schedule = live(&server, &["schedule", "--pod", "shop/web-7c9f8d6b5-r9t2x"]).await;
    assert_eq!(schedule.code, 3, "{}", schedule.stderr);
    assert!(
        schedule
            .stderr
            .ends_with("(the input is incomplete: forbidden (403): CSINode, DeviceClass, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicaSet, ReplicationController, ResourceClaim, ResourceClaimTemplate, ResourceSlice, Service, StatefulSet, StorageClass)\n"),
        "{}",
        schedule.stderr
    );
    // --config-map names one that cannot be looked for.
    let named = live(
        &server,
        &[
            "--config-map",
            "velero/node-agent-config",
            "config",
            "check",
        ],
    )
    .await;
    assert_eq!(named.code, 3, "{}", named.stderr);
    assert!(
        named.stderr.contains("cannot tell whether it exists"),
        "{}",
        named.stderr
    );
    cluster.assert_read_only();
}

/// Only the Velero kinds forbidden: the sections that read them say so,
/// the others do not, and the run exits 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_velero_kinds_mark_the_sections_that_need_them() {
    let roles = rbac_without(|items| {
        for item in items.iter_mut() {
            if let Some(rules) = item["rules"].as_array_mut() {
                rules.retain(|rule| rule["apiGroups"] != json!(["velero.io"]));
            }
        }
    })
    .await;
    let cluster = Cluster::example(&[]);
    cluster.fake.enforce_rbac(&roles).unwrap();
    let server = Loopback::start(cluster.fake.clone(), Some(("tools", "policyctl")))
        .await
        .unwrap();
    let json = live(&server, &["report", "-o", "json"]).await;
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
    assert_eq!(document["inputs"]["Backup"], "forbidden");
    assert_eq!(document["inputs"]["ConfigMap"], "read");
    assert_eq!(document["inputs"]["Pod"], "read");

    let table = live(&server, &["report"]).await;
    assert_eq!(table.code, 3, "{}", table.stderr);
    let queue = table.stdout.find("== Backup queue").unwrap();
    let next_line = table.stdout[queue..].lines().nth(1).unwrap();
    assert_eq!(
        next_line,
        "incomplete: Backup (forbidden) could not be read; this section shows only what was read"
    );
    assert!(
        table.stdout.starts_with("INCOMPLETE: these answers are built without kinds policyctl could not read.\n  forbidden (403): the user may not list them: Backup, BackupRepository, DataDownload, DataUpload, PodVolumeBackup,\n    PodVolumeRestore\n  Sections that may be wrong: Data-mover pods of pending loads, Backup queue, Load admission, Repository-maintenance\n    jobs.\n"),
        "{}",
        table.stdout
    );
    // The configuration was read: its section is not marked.
    let config = table.stdout.find("== Node-agent configuration").unwrap();
    assert!(
        table.stdout[config..]
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("Configuration: ConfigMap velero/node-agent-config"),
        "{}",
        table.stdout
    );
    // Commands that do not read the Velero kinds are complete.
    let schedule = live(&server, &["schedule", "--all", "-o", "json"]).await;
    assert_eq!(schedule.code, 0, "{}", schedule.stderr);
    cluster.assert_read_only();
}

/// A list the server fails (500) is `failed`: stated, noted, exit 3; the
/// other kinds are read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_list_is_stated_and_exits_3() {
    let cluster = Cluster::example(&[]);
    cluster
        .fake
        .inject(kube_fake_api::Fault::internal_error().on_resource("namespaces"));
    let server = Loopback::start(cluster.fake.clone(), None).await.unwrap();
    let queue = live(&server, &["queue", "-o", "json"]).await;
    assert_eq!(queue.code, 3, "{}", queue.stderr);
    let document: Value = serde_json::from_str(&queue.stdout).unwrap();
    assert_eq!(
        document["inputs"],
        json!({"Backup": "read", "Namespace": "failed"})
    );
    assert!(
        queue
            .stderr
            .contains("note: cannot list v1 Namespace: the server answered"),
        "{}",
        queue.stderr
    );
}

/// Accepts connections on a loopback port and never answers: neither TLS
/// nor HTTP. The listener lives as long as the returned guard.
fn silent_server() -> (String, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let thread = std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().take(16) {
            // Keep each connection open, unread and unanswered.
            held.push(stream);
        }
        std::thread::sleep(std::time::Duration::from_secs(120));
    });
    (address.to_string(), thread)
}

/// A server that accepts connections and stays silent gives a one-line
/// error within --request-timeout, over HTTP and over HTTPS (where the
/// TLS handshake never completes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_is_an_error_within_the_request_timeout() {
    let (address, _server) = silent_server();
    let dir = std::env::temp_dir();
    for scheme in ["http", "https"] {
        let url = format!("{scheme}://{address}");
        let mut text = kube_fake_api::server::kubeconfig(&url, None);
        if scheme == "https" {
            text = text.replace(
                &format!("    server: {url}\n"),
                &format!("    server: {url}\n    insecure-skip-tls-verify: true\n"),
            );
        }
        let kubeconfig = dir.join(format!("policyctl-silent-{}-{scheme}", std::process::id()));
        std::fs::write(&kubeconfig, text).unwrap();
        let path = kubeconfig.display().to_string();
        let started = std::time::Instant::now();
        let run = policyctl(&["--kubeconfig", &path, "--request-timeout", "1s", "queue"]).await;
        let took = started.elapsed();
        assert_eq!(run.code, 1, "{scheme}: {run:?}");
        assert!(run.stdout.is_empty(), "{scheme}: {}", run.stdout);
        assert_eq!(run.stderr.lines().count(), 1, "{scheme}: {}", run.stderr);
        assert!(
            run.stderr.starts_with(&format!(
                "error: cannot list v1 Namespace from {url}: no answer within 1s (--request-timeout)"
            )),
            "{scheme}: {}",
            run.stderr
        );
        // The limit plus the time to start the process, with room for a
        // loaded machine; without the limit the run never ends.
        assert!(
            took < std::time::Duration::from_secs(8),
            "{scheme}: {took:?}"
        );
        let _ = std::fs::remove_file(kubeconfig);
    }
}

/// A page that comes too late is a timeout too: each request of a list,
/// not only the connection, is bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_slower_than_the_request_timeout_is_an_error() {
    let cluster = Cluster::example(&[]);
    cluster.fake.inject(
        kube_fake_api::Fault::latency(std::time::Duration::from_secs(30)).on_resource("namespaces"),
    );
    let server = Loopback::start(cluster.fake.clone(), None).await.unwrap();
    let started = std::time::Instant::now();
    let run = live(&server, &["--request-timeout", "1", "queue"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .starts_with("error: cannot list v1 Namespace from http://127.0.0.1:"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("no answer within 1s"), "{}", run.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(8));
}

/// Commands that read the node-agent configuration but list no
/// Deployments read just the Velero server's, for the Velero version its
/// image names (`--velero-version` overrides it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_mode_reads_the_velero_version_from_the_server_image() {
    // The example's Velero server, made an older release.
    let mut objects = objects_of(&example_files("cluster"));
    let server = objects
        .iter_mut()
        .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "velero")
        .expect("the example has the Velero server Deployment");
    server["spec"]["template"]["spec"]["containers"][0]["image"] = json!("velero/velero:v1.17.2");
    let cluster = Cluster::new(&objects, &[]);
    let server = Loopback::start(cluster.fake.clone(), None).await.unwrap();
    let detected = live(&server, &["config", "check", "-o", "json"]).await;
    assert_eq!(detected.code, 0, "{}", detected.stderr);
    let document: Value = serde_json::from_str(&detected.stdout).unwrap();
    assert_eq!(document["veleroVersion"], "1.17.2", "{document}");
    let table = live(&server, &["config", "check"]).await;
    assert!(
        table
            .stdout
            .contains("Read as Velero 1.17.2 reads it (the image of Deployment velero/velero)\n"),
        "{}",
        table.stdout
    );
    let flag = live(
        &server,
        &["--velero-version", "main", "config", "check", "-o", "json"],
    )
    .await;
    let document: Value = serde_json::from_str(&flag.stdout).unwrap();
    assert_eq!(document["veleroVersion"], "main");
    cluster.assert_read_only();
}
