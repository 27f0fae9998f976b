//! `kube-fake-apiserver` as a process: it prints where it listens, writes
//! a kubeconfig kube-rs uses as it is, serves list/watch/writes with the
//! installed CRDs' schemas over plain HTTP, refuses non-loopback
//! addresses, and stops on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_kube-fake-apiserver");

fn start(kubeconfig: &std::path::Path) -> (Child, String) {
    start_with_crds(kubeconfig, &["velero-1.18"])
}

fn start_with_crds(kubeconfig: &std::path::Path, crds: &[&str]) -> (Child, String) {
    let mut command = Command::new(BIN);
    command.args(["--listen", "127.0.0.1:0"]);
    for crd in crds {
        command
            .arg("--crds")
            .arg(kube_fake_api::crds::dir().join(crd));
    }
    let mut child = command
        .arg("--kubeconfig-out")
        .arg(kubeconfig)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    (child, url)
}

fn wait(child: &mut Child, within: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        assert!(start.elapsed() < within, "did not exit within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn serves_kube_rs_through_the_kubeconfig_it_writes_and_stops_on_sigterm() {
    let dir = std::env::temp_dir().join(format!("kube-fake-loopback-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("kubeconfig");
    let (mut child, url) = start(&path);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    assert_eq!(config.cluster_url.to_string().trim_end_matches('/'), url);
    let client = kube::Client::try_from(config).unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("velero.io", "v1", "Backup"),
        "backups",
    );
    let backups: Api<DynamicObject> = Api::namespaced_with(client.clone(), "velero", &ar);

    // A watch over HTTP sees a create.
    let mut events = kube::runtime::watcher(backups.clone(), Default::default()).boxed();
    let b = DynamicObject::new("b1", &ar)
        .within("velero")
        .data(json!({"spec": {}}));
    backups.create(&PostParams::default(), &b).await.unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(event) = events.next().await {
            if let Ok(
                kube::runtime::watcher::Event::Apply(o)
                | kube::runtime::watcher::Event::InitApply(o),
            ) = event
                && o.metadata.name.as_deref() == Some("b1")
            {
                return true;
            }
        }
        false
    })
    .await
    .unwrap();
    assert!(seen);
    // The CRD's schema applies.
    let err = backups
        .patch(
            "b1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Bogus"}})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422),
        "{err:?}"
    );

    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(wait(&mut child, Duration::from_secs(5)), Some(0));
}

#[test]
fn refuses_a_non_loopback_address() {
    let out = Command::new(BIN)
        .args(["--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("only loopback addresses"), "{stderr}");
}

/// A server process, stopped when dropped (also when a test fails).
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The recipe of `examples/README.md`: with Velero's and Cluster API's
/// CRDs (the bed's, from the products' own modules) installed, `kubectl
/// apply` of the Namespaces and then of the example cluster creates every
/// object (Nodes, Pods, PersistentVolumes and claims, StorageClasses,
/// VolumeAttachments, workloads, Velero and Cluster API objects, and the
/// HostInventory in its ConfigMap) without an error.
#[test]
fn kubectl_apply_loads_every_object_of_the_example_cluster() {
    let bed = kube_testbed::Layout::discover();
    let (kubectl, versions) = match (bed.binary("kubectl"), bed.versions()) {
        (Ok(kubectl), Ok(versions)) => (kubectl, versions),
        (Err(error), _) | (_, Err(error)) => panic!("{error}"),
    };
    let crds = [
        bed.crds("velero", &versions.velero).unwrap(),
        bed.crds("cluster-api", &versions.cluster_api).unwrap(),
    ];
    let dir = std::env::temp_dir().join(format!("kube-fake-apply-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("kubeconfig");
    let mut command = Command::new(BIN);
    command.args(["--listen", "127.0.0.1:0", "--kubeconfig-out"]);
    command.arg(&config);
    for crd in &crds {
        command.arg("--crds").arg(crd);
    }
    let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    assert!(line.starts_with("listening on "), "{line}");

    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/cluster")
        .canonicalize()
        .unwrap();
    let kubectl_run = |args: &[&str]| {
        let output = Command::new(&kubectl)
            .arg("--kubeconfig")
            .arg(&config)
            .args(args)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let namespaces = examples.join("namespaces.yaml");
    let (code, _, stderr) = kubectl_run(&[
        "apply",
        "--validate=false",
        "-f",
        namespaces.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stdout, stderr) = kubectl_run(&[
        "apply",
        "--validate=false",
        "-f",
        examples.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr, "");
    for created in [
        "node/cp-1 created",
        "configmap/host-inventory created",
        "persistentvolumeclaim/",
        "persistentvolume/",
        "storageclass.storage.k8s.io/",
        "volumeattachment.storage.k8s.io/",
        "deployment.apps/",
        "configmap/node-agent-config created",
        "backup.velero.io/",
        "backuprepository.velero.io/",
        "priorityclass.scheduling.k8s.io/velero-maintenance created",
        "dataupload.velero.io/",
        "machine.cluster.x-k8s.io/",
    ] {
        assert!(stdout.contains(created), "{created} not in\n{stdout}");
    }
    let created: std::collections::BTreeSet<&str> = stdout
        .lines()
        .filter_map(|line| line.strip_suffix(" created"))
        .collect();
    // Machines at both served versions: the example mixes v1beta1 and
    // v1beta2, and the stand-in keeps each version's objects apart (see
    // docs/kube-fake-api.md).
    let (code, listed, stderr) = kubectl_run(&[
        "get",
        "nodes,pods,persistentvolumeclaims,persistentvolumes,storageclasses,volumeattachments,configmaps,deployments,priorityclasses,backups,backuprepositories,datauploads,datadownloads,podvolumebackups,podvolumerestores,machines.v1beta1.cluster.x-k8s.io,machines.v1beta2.cluster.x-k8s.io",
        "-A",
        "-o",
        "name",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let listed: std::collections::BTreeSet<&str> = listed.lines().collect();
    assert_eq!(listed, created, "every object kubectl created is listed");
    assert_eq!(created.len(), 78, "{created:#?}");
    // The statuses, where a kind has a status subresource (a create
    // drops them there).
    let file = |name: &str| examples.join(name).display().to_string();
    let (code, _, stderr) = kubectl_run(&[
        "apply",
        "--validate=false",
        "--server-side",
        "--subresource=status",
        "-f",
        &file("nodes.yaml"),
        "-f",
        &file("pods.yaml"),
        "-f",
        &file("machines.yaml"),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let (_, allocatable, _) = kubectl_run(&[
        "get",
        "node",
        "cp-1",
        "-o",
        "jsonpath={.status.allocatable.pods}",
    ]);
    assert_eq!(allocatable, "110");
}
