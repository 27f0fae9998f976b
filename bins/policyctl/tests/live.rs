//! Live mode end to end: the policyctl binary reads the example cluster's
//! objects from the API stand-in served on a loopback port, through a real
//! kubeconfig file, and must print exactly what `-f` prints for the same
//! objects.

use std::path::{Path, PathBuf};

use kube_fake_api::server::Loopback;
use kube_fake_api::{FakeApi, ResourceId, ResourceInfo};
use policyctl::live::{Kind, Scope};
use serde_json::Value;

/// The example files holding cluster objects (all but the HostInventory,
/// which is a file and not a cluster object).
fn example_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/cluster");
    policyctl::bundled::EXAMPLE_CLUSTER
        .iter()
        .map(|(name, _)| root.join(name.trim_start_matches("examples/cluster/")))
        .filter(|path| !path.ends_with("host-inventory.yaml"))
        .collect()
}

/// Every object of the example files, `kind: List` items included.
fn example_objects() -> Vec<Value> {
    let mut objects = Vec::new();
    for path in example_files() {
        let text = std::fs::read_to_string(&path).unwrap();
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

/// The version the stand-in serves each kind at: Cluster API kinds at the
/// version their example objects have (a real server serves every version;
/// the stand-in one, so live mode's version fallback is exercised too).
fn served_version(kind: Kind) -> &'static str {
    let resource = kind.resource();
    match kind {
        Kind::Machine | Kind::MachineSet => "v1beta2",
        _ => resource.versions[resource.versions.len() - 1],
    }
}

fn resource_id(kind: Kind) -> ResourceId {
    let resource = kind.resource();
    ResourceId::new(resource.group, served_version(kind), resource.plural)
}

fn register(fake: &FakeApi, kind: Kind) {
    let resource = kind.resource();
    let version = served_version(kind);
    let info = match resource.scope {
        Scope::Cluster => {
            ResourceInfo::cluster(resource.group, version, resource.kind, resource.plural)
        }
        Scope::AllNamespaces | Scope::VeleroNamespace => {
            ResourceInfo::namespaced(resource.group, version, resource.kind, resource.plural)
        }
    };
    fake.register(info);
}

/// The kind policyctl lists for an object, if any.
fn kind_of(object: &Value) -> Option<Kind> {
    let api_version = object["apiVersion"].as_str()?;
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let kind = object["kind"].as_str()?;
    Kind::ALL
        .into_iter()
        .find(|k| k.resource().kind == kind && k.resource().group == group)
}

/// A stand-in serving every kind policyctl lists, holding the example
/// cluster's objects.
fn example_stand_in() -> FakeApi {
    let fake = FakeApi::new();
    for kind in Kind::ALL {
        register(&fake, kind);
    }
    let mut seeded = 0;
    for object in example_objects() {
        if let Some(kind) = kind_of(&object) {
            fake.seed_value(&resource_id(kind), object).unwrap();
            seeded += 1;
        }
    }
    assert!(seeded > 70, "only {seeded} example objects seeded");
    fake
}

/// Result of one policyctl process.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn policyctl(args: &[&str]) -> Run {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_policyctl"))
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("POLICYCTL_KUBECONFIG")
        .env_remove("POLICYCTL_FILENAME")
        .env_remove("POLICYCTL_OUTPUT")
        .env_remove("POLICYCTL_LIVE")
        .env_remove("POLICYCTL_CONTEXT")
        .env_remove("POLICYCTL_NAMESPACE")
        .output()
        .await
        .unwrap();
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

/// The stand-in's objects of every kind policyctl reads, as `kubectl get
/// KIND -A -o json` prints them (server-assigned fields such as
/// resourceVersion and uid included), in one file: "the same objects" for
/// `-f`.
fn dump(fake: &FakeApi, name: &str) -> PathBuf {
    let mut text = String::new();
    for kind in Kind::ALL {
        let list = serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": fake.list_values(&resource_id(kind), None),
        });
        text.push_str(&serde_json::to_string_pretty(&list).unwrap());
        text.push('\n');
    }
    let path =
        std::env::temp_dir().join(format!("policyctl-live-{}-{name}.json", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

async fn from_file(file: &Path, args: &[&str]) -> Run {
    let file = file.display().to_string();
    let mut all = vec!["-f", file.as_str()];
    all.extend_from_slice(args);
    policyctl(&all).await
}

/// Byte equality, reporting the first line that differs.
fn assert_same(live: &str, files: &str, args: &[&str]) {
    if live != files {
        let (number, (l, f)) = live
            .lines()
            .zip(files.lines())
            .enumerate()
            .find(|(_, (l, f))| l != f)
            .unwrap_or((0, ("<length>", "<length>")));
        panic!(
            "live and -f differ for {args:?} at line {}:\n live: {l}\n   -f: {f}\nlive stdout:\n{live}",
            number + 1
        );
    }
}

/// No request but reads: every one a GET answered by list (or discovery).
fn assert_read_only(fake: &FakeApi) {
    let requests = fake.requests();
    assert!(!requests.is_empty());
    for request in requests {
        assert_eq!(request.method, "GET", "{request:?}");
        assert!(
            matches!(request.verb, Some(kube_fake_api::Verb::List)),
            "not a list: {request:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_output_is_byte_identical_to_dash_f_on_the_same_objects() {
    let fake = example_stand_in();
    let server = Loopback::start(fake.clone(), None).await.unwrap();
    let file = dump(&fake, "equality");
    for args in [
        &["report", "-o", "json"][..],
        &["queue", "-o", "json"],
        &["soothe", "-o", "json"],
        &["soothe", "--mode", "exact", "-o", "json"],
        &["config", "check", "-o", "json"],
    ] {
        let live = live(&server, args).await;
        let files = from_file(&file, args).await;
        assert_eq!(live.code, 0, "live {args:?}: {}", live.stderr);
        assert_eq!(files.code, 0, "-f {args:?}: {}", files.stderr);
        assert!(live.stdout.len() > 20, "{args:?}: {}", live.stdout);
        assert_same(&live.stdout, &files.stdout, args);
    }
    assert_read_only(&fake);
    // Not vacuous: live mode read every object of the example cluster
    // (but its HostInventory, which is not a cluster object).
    let report = live(&server, &["report", "-o", "json"]).await;
    let mut objects: Value = serde_json::from_str(&report.stdout).unwrap();
    let bundled = policyctl(&["report", "-o", "json"]).await;
    let mut expected: Value = serde_json::from_str(&bundled.stdout).unwrap();
    expected["objects"]["HostInventory"] = Value::from(0);
    assert_eq!(objects["objects"].take(), expected["objects"].take());
    let _ = std::fs::remove_file(file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dash_f_with_kubeconfig_is_a_usage_error() {
    let run = policyctl(&["-f", "x.yaml", "--kubeconfig", "k", "report"]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--kubeconfig"), "{}", run.stderr);
}
