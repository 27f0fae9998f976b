//! A leader cut off from the real kube-apiserver (the test bed) stops
//! writing before its Lease can pass to another replica: two replicas of a
//! small controller run `run_controller` against one kube-apiserver, the
//! leader's connection goes through a relay that then drops everything
//! (a network partition), and the server's audit log shows that the new
//! leader's first write comes after the old leader's last, also after the
//! partition heals.
//!
//! The controller writes a heartbeat ConfigMap every 100 ms and, when a
//! write fails, records the failure as an Event before it looks at the
//! shutdown signal again, as a reconcile and its error path do.

use std::time::Duration;

use controller_kit::events::EventPublisher;
use controller_kit::runner::{RunSettings, run_controller};
use controller_kit::server::Readiness;
use controller_kit::{LeaderElectionConfig, Shutdown, ShutdownReason, WriteFence};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::events::{Event, EventType};
use kube_testbed::Testbed;
use kube_testbed::deploy::{self, AuditedRequest};
use prometheus_client::registry::Registry;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The state of a [`Link`]: whether it drops everything now, and a
/// generation that changes at every cut and heal.
#[derive(Debug, Clone, Copy, Default)]
struct LinkState {
    cut: bool,
    generation: u64,
}

/// A loopback TCP relay to kube-apiserver that can be cut: while cut, it
/// drops every byte both ways (a partition: nothing sent meanwhile
/// arrives); when it heals, the connections that lived through the cut are
/// closed (their streams lost bytes) and new ones go through.
struct Link {
    port: u16,
    state: watch::Sender<LinkState>,
}

impl Link {
    async fn start(target: String) -> Link {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (state, _) = watch::channel(LinkState::default());
        let states = state.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&target).await else {
                    continue;
                };
                let born = states.borrow().generation;
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pump(client_read, server_write, states.subscribe(), born));
                tokio::spawn(pump(server_read, client_write, states.subscribe(), born));
            }
        });
        Link { port, state }
    }

    fn set(&self, cut: bool) {
        self.state.send_modify(|s| {
            s.cut = cut;
            s.generation += 1;
        });
    }
}

/// Copies `from` to `to` while the link is up; drops what it reads while
/// the link is cut; ends (closing `to`) when the link heals after a cut
/// this connection lived through.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut state: watch::Receiver<LinkState>,
    born: u64,
) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            read = from.read(&mut buffer) => {
                let n = match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let now = *state.borrow();
                if now.cut {
                    continue;
                }
                if now.generation != born || to.write_all(&buffer[..n]).await.is_err() {
                    break;
                }
            }
            changed = state.changed() => {
                let now = *state.borrow_and_update();
                if changed.is_err() || (!now.cut && now.generation != born) {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown().await;
}

/// What `run_controller` reports when leader election itself fails.
#[derive(Debug)]
struct Failed(String);
impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl From<controller_kit::Error> for Failed {
    fn from(e: controller_kit::Error) -> Self {
        Self(e.to_string())
    }
}

const LEASE: &str = "partitioned-leader";

fn election(namespace: &str, identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_name: LEASE.to_owned(),
        lease_namespace: namespace.to_owned(),
        identity: identity.to_owned(),
        duration: Duration::from_secs(4),
        renew_before_expiry: Duration::from_secs(2),
    }
}

/// A client authenticating as `user` (in `system:masters`) that reaches
/// kube-apiserver on `port` of 127.0.0.1 (the bed's own, or a relay's).
async fn client_as(bed: &Testbed, user: &str, port: u16) -> kube::Client {
    let path = bed.user_kubeconfig(user, &["system:masters"]).unwrap();
    let kubeconfig = Kubeconfig::read_from(&path).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
    config.cluster_url = format!("https://127.0.0.1:{port}").parse().unwrap();
    kube::Client::try_from(config).unwrap()
}

/// One replica: leader election on `client`, and while leading the
/// heartbeat work on the client guarded by the run's write fence.
fn replica(
    client: kube::Client,
    namespace: String,
    identity: &'static str,
    shutdown: Shutdown,
) -> tokio::task::JoinHandle<ShutdownReason> {
    let fence = WriteFence::new();
    let settings = RunSettings {
        metrics_addr: None,
        leader: Some(election(&namespace, identity)),
        dry_run: false,
        registry: Registry::default(),
        readiness: Readiness::new(),
        fence: fence.clone(),
    };
    let work_client = fence.guard(client.clone());
    tokio::spawn(async move {
        let signal = shutdown.clone();
        let work = move || heartbeat(work_client, namespace, identity, signal);
        run_controller(client, settings, shutdown, work)
            .await
            .unwrap_or_else(|e: Failed| panic!("{identity}: {}", e.0))
    })
}

async fn heartbeat(
    client: kube::Client,
    namespace: String,
    identity: &'static str,
    shutdown: Shutdown,
) -> Result<(), Failed> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let events = EventPublisher::new(client, "partition-test", Some(identity.to_owned()), false);
    let name = format!("heartbeat-{identity}");
    let apply = PatchParams::apply(identity).force();
    for beat in 0u64.. {
        let body = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name},
            "data": {"beat": beat.to_string()},
        });
        if let Err(error) = config_maps.patch(&name, &apply, &Patch::Apply(&body)).await {
            let reference = k8s_openapi::api::core::v1::ObjectReference {
                api_version: Some(ConfigMap::api_version(&()).into_owned()),
                kind: Some(ConfigMap::kind(&()).into_owned()),
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..Default::default()
            };
            let event = Event {
                type_: EventType::Warning,
                reason: "HeartbeatFailed".to_owned(),
                note: Some(error.to_string()),
                action: "Heartbeat".to_owned(),
                secondary: None,
            };
            let _ = events.publish(&event, &reference).await;
        }
        if shutdown.is_triggered() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

fn writes(requests: Vec<AuditedRequest>) -> Vec<(jiff::Timestamp, AuditedRequest)> {
    let mut writes: Vec<_> = requests
        .into_iter()
        .filter(|r| !matches!(r.verb.as_str(), "get" | "list" | "watch"))
        .map(|r| (r.time.parse::<jiff::Timestamp>().unwrap(), r))
        .collect();
    writes.sort();
    writes
}

async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get_opt(LEASE)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
}

async fn until(what: &str, limit: Duration, mut check: impl AsyncFnMut() -> bool) {
    let end = tokio::time::Instant::now() + limit;
    while !check().await {
        assert!(tokio::time::Instant::now() < end, "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_leader_writes_nothing_after_its_successor_starts() {
    if kube_testbed::skip_requested() {
        return;
    }
    let audit = tempfile::tempdir().unwrap();
    let (args, audit_log) = deploy::audit_args(audit.path()).unwrap();
    let bed = Testbed::builder()
        .apiserver_args(args)
        .start()
        .await
        .unwrap_or_else(|e| panic!("the test bed did not start: {e}"));
    let namespace = bed.namespace("partition").await.unwrap();
    let leases: Api<Lease> = Api::namespaced(bed.client(), &namespace);
    let config_maps: Api<ConfigMap> = Api::namespaced(bed.client(), &namespace);
    let server_port: u16 = bed
        .server_url()
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .unwrap();
    let link = Link::start(format!("127.0.0.1:{server_port}")).await;

    let (a_shutdown, b_shutdown) = (Shutdown::new(), Shutdown::new());
    let a = replica(
        client_as(&bed, "replica-a", link.port).await,
        namespace.clone(),
        "replica-a",
        a_shutdown.clone(),
    );
    until("replica-a leads", Duration::from_secs(20), async || {
        holder(&leases).await.as_deref() == Some("replica-a")
    })
    .await;
    let b = replica(
        client_as(&bed, "replica-b", server_port).await,
        namespace.clone(),
        "replica-b",
        b_shutdown.clone(),
    );
    until("replica-a writes", Duration::from_secs(10), async || {
        config_maps
            .get_opt("heartbeat-replica-a")
            .await
            .ok()
            .flatten()
            .is_some()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(holder(&leases).await.as_deref(), Some("replica-a"));

    // The partition: replica-a's requests (its renewals among them) hang.
    link.set(true);
    until(
        "replica-b takes over",
        Duration::from_secs(20),
        async || holder(&leases).await.as_deref() == Some("replica-b"),
    )
    .await;
    until("replica-b writes", Duration::from_secs(10), async || {
        config_maps
            .get_opt("heartbeat-replica-b")
            .await
            .ok()
            .flatten()
            .is_some()
    })
    .await;
    // The network comes back while both processes still run.
    tokio::time::sleep(Duration::from_secs(1)).await;
    link.set(false);
    tokio::time::sleep(Duration::from_secs(3)).await;

    let a_reason = tokio::time::timeout(Duration::from_secs(10), a)
        .await
        .expect("the partitioned leader stops")
        .unwrap();
    assert_eq!(a_reason, ShutdownReason::LeaseLost);
    assert_eq!(a_shutdown.reason(), Some(ShutdownReason::LeaseLost));
    assert_eq!(holder(&leases).await.as_deref(), Some("replica-b"));
    b_shutdown.trigger(ShutdownReason::Requested);
    let b_reason = tokio::time::timeout(Duration::from_secs(10), b)
        .await
        .expect("replica-b stops")
        .unwrap();
    assert_eq!(b_reason, ShutdownReason::Requested);

    let a_writes = writes(deploy::audited_requests(&audit_log, "replica-a").unwrap());
    let b_writes = writes(deploy::audited_requests(&audit_log, "replica-b").unwrap());
    let (Some((a_last, a_request)), Some((b_first, b_request))) =
        (a_writes.last(), b_writes.first())
    else {
        panic!("both replicas wrote: {a_writes:?} / {b_writes:?}");
    };
    assert!(
        a_last < b_first,
        "replica-a's last write ({a_last}: {} {}/{}) comes after replica-b's first ({b_first}: {} {}/{})",
        a_request.verb,
        a_request.resource,
        a_request.name,
        b_request.verb,
        b_request.resource,
        b_request.name,
    );
    assert!(
        b_writes.iter().any(|(_, r)| r.resource == "configmaps"),
        "replica-b acted as leader"
    );
}
