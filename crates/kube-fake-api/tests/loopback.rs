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
    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--crds"])
        .arg(kube_fake_api::crds::dir().join("velero-1.18"))
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
