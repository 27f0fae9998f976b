//! Starting, using and stopping a bed.

use std::collections::BTreeMap;
use std::fmt;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, PostParams};
use kube::client::Body;
use serde_json::Value;

use crate::admission::{DISABLED_ADMISSION_PLUGINS, DISABLED_CONTROLLERS, flag_value};
use crate::error::Error;
use crate::kubeconfig::{self, Credentials};
use crate::locate::{Layout, Versions};
use crate::pki::{self, Pki};
use crate::supervise::{Cleaner, Supervised};

/// The audience of the service-account tokens the bed issues (and the
/// issuer), as kubeadm sets them.
pub const SERVICE_ACCOUNT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The range kube-apiserver allocates Service cluster IPs from. Nothing
/// routes to it: the bed has no kube-proxy and no network.
pub const SERVICE_CLUSTER_IP_RANGE: &str = "10.96.0.0/16";

/// The admin user of the bed's kubeconfig (client certificate, group
/// `system:masters`) and of its static token.
pub const ADMIN_USER: &str = "kube-testbed-admin";

/// A program of the control plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Component {
    /// etcd, the store.
    Etcd,
    /// kube-apiserver.
    KubeApiserver,
    /// kube-controller-manager.
    KubeControllerManager,
    /// kube-scheduler.
    KubeScheduler,
    /// The Velero server (`velero server`).
    Velero,
}

impl Component {
    /// The program's name in the bed's `bin/`.
    pub fn program(self) -> &'static str {
        match self {
            Component::Etcd => "etcd",
            Component::KubeApiserver => "kube-apiserver",
            Component::KubeControllerManager => "kube-controller-manager",
            Component::KubeScheduler => "kube-scheduler",
            Component::Velero => "velero",
        }
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.program())
    }
}

/// Chooses what a bed runs; [`Testbed::builder`] makes one.
#[derive(Debug, Clone)]
pub struct Builder {
    layout: Option<Layout>,
    scheduler: bool,
    percentage_of_nodes_to_score: Option<u8>,
    controller_manager: bool,
    velero: bool,
    watch_cache: bool,
    apiserver_args: Vec<String>,
    velero_args: Vec<String>,
    ready_timeout: Duration,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            layout: None,
            scheduler: false,
            percentage_of_nodes_to_score: None,
            controller_manager: false,
            velero: false,
            watch_cache: true,
            apiserver_args: Vec::new(),
            velero_args: Vec::new(),
            ready_timeout: Duration::from_secs(120),
        }
    }
}

impl Builder {
    /// Uses the built bed at `layout` instead of [`Layout::discover`]'s.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Also runs kube-scheduler (default profile, no leader election).
    pub fn with_scheduler(mut self) -> Self {
        self.scheduler = true;
        self
    }

    /// Runs kube-scheduler (see [`Builder::with_scheduler`]) with
    /// `percentageOfNodesToScore` set (1–100), in a
    /// KubeSchedulerConfiguration file. By default kube-scheduler stops
    /// filtering in clusters of 100 nodes or more once it has found an
    /// adaptive share of feasible nodes; 100 makes it filter and score
    /// every node, as the simulator does.
    pub fn scheduler_percentage_of_nodes_to_score(mut self, percentage: u8) -> Self {
        self.scheduler = true;
        self.percentage_of_nodes_to_score = Some(percentage.clamp(1, 100));
        self
    }

    /// Also runs kube-controller-manager (every default controller but the
    /// node lifecycle one, see [`crate::DISABLED_CONTROLLERS`]; no leader
    /// election; a ServiceAccount per controller). With it, namespaces
    /// finish deleting, garbage collection runs, and each namespace gets
    /// its `default` ServiceAccount (so ServiceAccount admission is on).
    pub fn with_controller_manager(mut self) -> Self {
        self.controller_manager = true;
        self
    }

    /// Also runs the Velero server in namespace `velero`, after applying
    /// the Velero CRDs of the bed's `VELERO_VERSION`. It runs as the
    /// ServiceAccount `velero/velero`, bound to `cluster-admin` as
    /// `velero install` binds it, with no backup storage location.
    pub fn with_velero(mut self) -> Self {
        self.velero = true;
        self
    }

    /// Turns kube-apiserver's watch cache off (`--watch-cache=false`), so
    /// every watch is served by etcd and answers 410 Gone for a compacted
    /// resourceVersion. With the cache on (the default, as in clusters),
    /// only resources without a cache (Events) answer so right after
    /// [`Testbed::compact_etcd`].
    pub fn watch_cache(mut self, enabled: bool) -> Self {
        self.watch_cache = enabled;
        self
    }

    /// Adds arguments to kube-apiserver's (`--feature-gates=...`,
    /// `--runtime-config=...`); later flags override the bed's.
    pub fn apiserver_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.apiserver_args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds arguments to `velero server`'s (with [`Builder::with_velero`]),
    /// e.g. `--disable-controllers=backup-queue`.
    pub fn velero_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.velero_args.extend(args.into_iter().map(Into::into));
        self
    }

    /// How long each component may take to become ready (default 120 s).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Starts the bed: etcd, kube-apiserver, then the chosen components,
    /// each ready before the next starts.
    ///
    /// Ports are picked free and then handed to the programs, so another
    /// process may take one in between; a start that fails because an
    /// address is in use is tried again with new ports (three tries).
    pub async fn start(self) -> Result<Testbed, Error> {
        let mut tries = 1;
        loop {
            match Testbed::start(self.clone()).await {
                Err(error) if tries < 3 && address_in_use(&error) => tries += 1,
                result => return result,
            }
        }
    }
}

/// Where a bed keeps its files, under its temporary directory.
#[derive(Debug)]
struct Files {
    root: PathBuf,
}

impl Files {
    fn pki(&self, name: &str) -> PathBuf {
        self.root.join("pki").join(name)
    }
    fn log(&self, component: Component) -> PathBuf {
        self.root.join("logs").join(format!("{component}.log"))
    }
    fn pid(&self, component: Component) -> PathBuf {
        self.root.join("run").join(format!("{component}.pid"))
    }
    fn identity(&self, name: &str) -> PathBuf {
        self.root
            .join("identities")
            .join(format!("{name}.kubeconfig"))
    }
}

/// A running control plane on loopback: etcd and kube-apiserver, and the
/// components its [`Builder`] chose.
///
/// Dropping it stops every component (also while a panic unwinds) and
/// removes its directory. A bed that is never dropped (a `static`, a
/// process that exits or is killed) stops all the same: each component's
/// supervisor sees this process's end and stops it, see the crate
/// documentation.
pub struct Testbed {
    layout: Layout,
    versions: Versions,
    dir: Option<tempfile::TempDir>,
    files: Files,
    cleaner: Option<Cleaner>,
    pki: Pki,
    server_url: String,
    etcd_url: String,
    admin_token: String,
    kubeconfig: PathBuf,
    config: kube::Config,
    kubectl: PathBuf,
    apiserver: (PathBuf, Vec<String>),
    processes: Mutex<BTreeMap<Component, Supervised>>,
    restarting: tokio::sync::Mutex<()>,
    logs: BTreeMap<Component, PathBuf>,
    /// How each component [`Testbed::launch`] started was started, to start
    /// it again the same way ([`Testbed::start_component`]).
    launched: BTreeMap<Component, Launch>,
    startup: Vec<(Component, Duration)>,
    controller_manager: bool,
    /// kube-scheduler's secure port, when the bed runs it.
    scheduler_port: Option<u16>,
    ready_timeout: Duration,
}

impl fmt::Debug for Testbed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Testbed")
            .field("dir", &self.files.root)
            .field("server_url", &self.server_url)
            .field("components", &self.logs.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Testbed {
    /// A builder for a bed of etcd and kube-apiserver, to which
    /// components can be added.
    pub fn builder() -> Builder {
        Builder::default()
    }

    async fn start(options: Builder) -> Result<Testbed, Error> {
        let layout = options.layout.clone().unwrap_or_else(Layout::discover);
        let etcd = layout.binary("etcd")?;
        let apiserver = layout.binary("kube-apiserver")?;
        let kubectl = layout.binary("kubectl")?;
        if options.controller_manager {
            layout.binary("kube-controller-manager")?;
        }
        if options.scheduler {
            layout.binary("kube-scheduler")?;
        }
        let versions = layout.versions()?;
        if options.velero {
            layout.binary("velero")?;
            layout.crds("velero", &versions.velero)?;
        }

        let dir = tempfile::Builder::new()
            .prefix("kube-testbed-")
            .tempdir()
            .map_err(|e| Error::io("cannot create the bed's temporary directory", e))?;
        let files = Files {
            root: dir.path().to_owned(),
        };
        for sub in ["pki", "logs", "run", "identities", "etcd"] {
            let path = files.root.join(sub);
            std::fs::create_dir_all(&path)
                .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))?;
        }
        let cleaner = Cleaner::spawn(&files.root)?;

        let pki = Pki::new()?;
        let [etcd_client, etcd_peer, apiserver_port] = free_ports()?;
        let etcd_url = format!("http://127.0.0.1:{etcd_client}");
        let server_url = format!("https://127.0.0.1:{apiserver_port}");
        let admin_token = pki::random_hex(32, "the admin token")?;

        let mut processes = BTreeMap::new();
        let mut logs = BTreeMap::new();
        let mut startup = Vec::new();

        // etcd.
        let started = Instant::now();
        let etcd_peer_url = format!("http://127.0.0.1:{etcd_peer}");
        let etcd_args = vec![
            "--name=kube-testbed".to_owned(),
            format!(
                "--data-dir={}",
                files.root.join("etcd").join("data").display()
            ),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls={etcd_peer_url}"),
            format!("--initial-advertise-peer-urls={etcd_peer_url}"),
            format!("--initial-cluster=kube-testbed={etcd_peer_url}"),
            // A test bed's data is thrown away; fsync would only slow it.
            "--unsafe-no-fsync=true".to_owned(),
            "--log-level=warn".to_owned(),
        ];
        let mut etcd_process = Supervised::spawn(
            Component::Etcd,
            &etcd,
            &etcd_args,
            &files.log(Component::Etcd),
            &files.pid(Component::Etcd),
        )?;
        let etcd_client_config = plain_config(&etcd_url)?;
        wait_ready(&mut etcd_process, options.ready_timeout, || {
            let config = etcd_client_config.clone();
            async move {
                let (status, body) = call(&config, http::Method::GET, "/health", None).await?;
                if status.is_success() && body.contains(r#""health":"true""#) {
                    Ok(())
                } else {
                    Err(format!("{status}: {body}"))
                }
            }
        })
        .await?;
        logs.insert(Component::Etcd, files.log(Component::Etcd));
        processes.insert(Component::Etcd, etcd_process);
        startup.push((Component::Etcd, started.elapsed()));

        // kube-apiserver.
        let started = Instant::now();
        let serving = pki.serving("kube-apiserver")?;
        let (sa_key, sa_pub) = pki::service_account_key()?;
        let admin = pki.client(ADMIN_USER, &["system:masters"])?;
        let write =
            |name: &str, text: &str| kubeconfig::write_private(&files.pki(name), text.as_bytes());
        write("ca.crt", pki.ca_pem())?;
        write("ca.key", &pki.ca_key_pem())?;
        write("apiserver.crt", &serving.cert_pem)?;
        write("apiserver.key", &serving.key_pem)?;
        write("sa.key", &sa_key)?;
        write("sa.pub", &sa_pub)?;
        write(
            "tokens.csv",
            &format!("{admin_token},{ADMIN_USER},{ADMIN_USER},\"system:masters\"\n"),
        )?;
        let pki_path = |name: &str| files.pki(name).display().to_string();
        let mut apiserver_args = vec![
            format!("--etcd-servers={etcd_url}"),
            "--bind-address=127.0.0.1".to_owned(),
            "--advertise-address=127.0.0.1".to_owned(),
            format!("--secure-port={apiserver_port}"),
            format!("--tls-cert-file={}", pki_path("apiserver.crt")),
            format!("--tls-private-key-file={}", pki_path("apiserver.key")),
            format!("--client-ca-file={}", pki_path("ca.crt")),
            format!("--token-auth-file={}", pki_path("tokens.csv")),
            "--authorization-mode=RBAC".to_owned(),
            format!("--service-account-issuer={SERVICE_ACCOUNT_ISSUER}"),
            format!("--api-audiences={SERVICE_ACCOUNT_ISSUER}"),
            format!("--service-account-key-file={}", pki_path("sa.pub")),
            format!("--service-account-signing-key-file={}", pki_path("sa.key")),
            format!("--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}"),
            // The advertised address is loopback: no Endpoints for the
            // `kubernetes` Service (nothing could reach them anyway).
            "--endpoint-reconciler-type=none".to_owned(),
            "--allow-privileged=true".to_owned(),
            format!(
                "--disable-admission-plugins={}",
                flag_value(
                    DISABLED_ADMISSION_PLUGINS,
                    options.controller_manager,
                    versions.kubernetes_minor()
                )
            ),
            "--profiling=false".to_owned(),
        ];
        if !options.watch_cache {
            apiserver_args.push("--watch-cache=false".to_owned());
        }
        apiserver_args.extend(options.apiserver_args.iter().cloned());

        let kubeconfig_path = files.root.join("kubeconfig");
        kubeconfig::write(
            &kubeconfig_path,
            &kubeconfig::document(
                &server_url,
                pki.ca_pem(),
                ADMIN_USER,
                &Credentials::Certificate {
                    cert_pem: &admin.cert_pem,
                    key_pem: &admin.key_pem,
                },
                None,
            ),
        )?;
        let config = kubeconfig::config_from_file(&kubeconfig_path).await?;
        // Checks once that a client can be made (TLS material parses), so
        // that `client()` need not return an error.
        kube::Client::try_from(config.clone())
            .map_err(|e| Error::kube("cannot make a client of the admin kubeconfig", e))?;

        let mut apiserver_process = Supervised::spawn(
            Component::KubeApiserver,
            &apiserver,
            &apiserver_args,
            &files.log(Component::KubeApiserver),
            &files.pid(Component::KubeApiserver),
        )?;
        wait_apiserver_ready(&mut apiserver_process, &config, options.ready_timeout).await?;
        logs.insert(
            Component::KubeApiserver,
            files.log(Component::KubeApiserver),
        );
        processes.insert(Component::KubeApiserver, apiserver_process);
        startup.push((Component::KubeApiserver, started.elapsed()));

        let mut bed = Testbed {
            layout,
            versions,
            dir: Some(dir),
            files,
            cleaner: Some(cleaner),
            pki,
            server_url,
            etcd_url,
            admin_token,
            kubeconfig: kubeconfig_path,
            config,
            kubectl,
            apiserver: (apiserver, apiserver_args),
            processes: Mutex::new(processes),
            restarting: tokio::sync::Mutex::new(()),
            logs,
            launched: BTreeMap::new(),
            startup,
            controller_manager: options.controller_manager,
            scheduler_port: None,
            ready_timeout: options.ready_timeout,
        };
        if options.controller_manager {
            bed.start_controller_manager().await?;
        }
        if options.scheduler {
            bed.start_scheduler(options.percentage_of_nodes_to_score)
                .await?;
        }
        if options.velero {
            bed.start_velero(&options.velero_args).await?;
        }
        Ok(bed)
    }

    async fn start_controller_manager(&mut self) -> Result<(), Error> {
        let started = Instant::now();
        let component = Component::KubeControllerManager;
        let [port] = free_ports()?;
        let identity = self.component_kubeconfig("system:kube-controller-manager")?;
        let (cert, key) = self.serving_files("kube-controller-manager")?;
        let pki = |name: &str| self.files.pki(name).display().to_string();
        let kubeconfig = identity.display().to_string();
        let disabled: Vec<String> = DISABLED_CONTROLLERS
            .iter()
            .filter(|entry| entry.applies(true, self.versions.kubernetes_minor()))
            .map(|entry| format!(",-{}", entry.name))
            .collect();
        let args = vec![
            format!("--kubeconfig={kubeconfig}"),
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
            "--bind-address=127.0.0.1".to_owned(),
            format!("--secure-port={port}"),
            format!("--tls-cert-file={cert}"),
            format!("--tls-private-key-file={key}"),
            format!("--client-ca-file={}", pki("ca.crt")),
            "--leader-elect=false".to_owned(),
            format!("--controllers=*{}", disabled.concat()),
            // Each controller acts as its own ServiceAccount under its
            // bootstrap role, as in kubeadm clusters.
            "--use-service-account-credentials=true".to_owned(),
            format!("--service-account-private-key-file={}", pki("sa.key")),
            format!("--root-ca-file={}", pki("ca.crt")),
            format!("--cluster-signing-cert-file={}", pki("ca.crt")),
            format!("--cluster-signing-key-file={}", pki("ca.key")),
            "--cluster-name=kube-testbed".to_owned(),
            format!("--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}"),
            "--kube-api-qps=100".to_owned(),
            "--kube-api-burst=200".to_owned(),
            "--profiling=false".to_owned(),
        ];
        let health = self.tls_probe_config(port).await?;
        // /healthz answers before the controllers run; the `default`
        // ServiceAccount of namespace `default`, which the
        // serviceaccount-controller creates with its own credentials, shows
        // that they do.
        let probe = Probe::ControllerManager {
            health,
            admin: Box::new(self.config.clone()),
        };
        self.launch(component, &args, &[], probe).await?;
        self.startup.push((component, started.elapsed()));
        Ok(())
    }

    async fn start_scheduler(
        &mut self,
        percentage_of_nodes_to_score: Option<u8>,
    ) -> Result<(), Error> {
        let started = Instant::now();
        let component = Component::KubeScheduler;
        let [port] = free_ports()?;
        let identity = self.component_kubeconfig("system:kube-scheduler")?;
        let (cert, key) = self.serving_files("kube-scheduler")?;
        let kubeconfig = identity.display().to_string();
        let mut args = vec![
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
            "--bind-address=127.0.0.1".to_owned(),
            format!("--secure-port={port}"),
            format!("--tls-cert-file={cert}"),
            format!("--tls-private-key-file={key}"),
            format!("--client-ca-file={}", self.files.pki("ca.crt").display()),
            "--profiling=false".to_owned(),
        ];
        match percentage_of_nodes_to_score {
            // Flags only: the default profile and kube-scheduler's defaults.
            None => args.extend([
                format!("--kubeconfig={kubeconfig}"),
                "--leader-elect=false".to_owned(),
                // As scheduler_perf runs it: the client is never the limit.
                "--kube-api-qps=5000".to_owned(),
                "--kube-api-burst=5000".to_owned(),
            ]),
            // The same settings in a configuration file (which makes
            // kube-scheduler ignore those flags), with the percentage.
            Some(percentage) => {
                let config = format!(
                    "apiVersion: kubescheduler.config.k8s.io/v1\n\
                     kind: KubeSchedulerConfiguration\n\
                     clientConnection:\n  kubeconfig: {kubeconfig:?}\n  qps: 5000\n  burst: 5000\n\
                     leaderElection:\n  leaderElect: false\n\
                     percentageOfNodesToScore: {percentage}\n"
                );
                let path = self.files.root.join("kube-scheduler-config.yaml");
                std::fs::write(&path, config).map_err(|source| Error::Io {
                    context: format!("writing {}", path.display()),
                    source,
                })?;
                args.push(format!("--config={}", path.display()));
            }
        }
        let health = self.tls_probe_config(port).await?;
        self.launch(component, &args, &[], Probe::Ok(health, "/readyz"))
            .await?;
        self.scheduler_port = Some(port);
        self.startup.push((component, started.elapsed()));
        Ok(())
    }

    /// kube-scheduler's `/metrics` (Prometheus text format), read over its
    /// secure port with the admin token, which the scheduler's delegated
    /// authentication and authorization accept.
    pub async fn scheduler_metrics(&self) -> Result<String, Error> {
        let Some(port) = self.scheduler_port else {
            return Err(Error::InvalidArgument(
                "the bed runs no kube-scheduler (Builder::with_scheduler)".to_owned(),
            ));
        };
        let mut config = self.tls_probe_config(port).await?;
        config.auth_info.token = Some(self.admin_token.clone().into());
        config.read_timeout = Some(Duration::from_secs(30));
        let client = kube::Client::try_from(config)
            .map_err(|e| Error::kube("cannot make a client for kube-scheduler", e))?;
        let request = http::Request::get("/metrics")
            .body(Vec::new())
            .map_err(|e| Error::InvalidArgument(format!("a /metrics request: {e}")))?;
        client
            .request_text(request)
            .await
            .map_err(|e| Error::kube("cannot read kube-scheduler's /metrics", e))
    }

    async fn start_velero(&mut self, extra_args: &[String]) -> Result<(), Error> {
        let started = Instant::now();
        let component = Component::Velero;
        // controller-runtime's metrics server inside `velero server` always
        // binds :8080 (velero has no flag for it); say so before it fails.
        if let Err(e) = TcpListener::bind(("0.0.0.0", 8080)) {
            return Err(Error::InvalidArgument(format!(
                "cannot start velero: port 8080 is taken ({e}); the Velero server's \
                 controller-runtime metrics server always binds :8080, so only one bed with \
                 Velero runs at a time on a machine"
            )));
        }
        let crds = self.layout.crds("velero", &self.versions.velero)?;
        self.install_crds(&crds).await?;
        self.apply_yaml(VELERO_IDENTITY).await?;
        let identity = self.service_account_kubeconfig("velero", "velero").await?;
        let [metrics, profiler] = free_ports()?;
        let mut args = vec![
            "server".to_owned(),
            format!("--kubeconfig={}", identity.display()),
            "--namespace=velero".to_owned(),
            format!("--metrics-address=127.0.0.1:{metrics}"),
            format!("--profiler-address=127.0.0.1:{profiler}"),
            "--log-level=info".to_owned(),
        ];
        args.extend(extra_args.iter().cloned());
        // Velero keeps credential files under $TMPDIR/credentials: the
        // bed's own directory, not the machine's /tmp.
        let tmp = self.files.root.join("velero-tmp");
        std::fs::create_dir_all(&tmp)
            .map_err(|e| Error::io(format!("cannot create {}", tmp.display()), e))?;
        let env = [("TMPDIR".to_owned(), tmp.display().to_string())];
        let probe = plain_config(&format!("http://127.0.0.1:{metrics}"))?;
        self.launch(component, &args, &env, Probe::Status(probe, "/metrics"))
            .await?;
        self.startup.push((component, started.elapsed()));
        Ok(())
    }

    /// Starts `component` with `args`, waits until `probe` answers, and
    /// keeps it.
    async fn launch(
        &mut self,
        component: Component,
        args: &[String],
        env: &[(String, String)],
        probe: Probe,
    ) -> Result<(), Error> {
        let launch = Launch {
            args: args.to_vec(),
            env: env.to_vec(),
            probe,
        };
        let process = self.spawn_ready(component, &launch).await?;
        self.logs.insert(component, self.files.log(component));
        self.launched.insert(component, launch);
        self.lock_processes().insert(component, process);
        Ok(())
    }

    /// Spawns `component` as `launch` says and waits until its probe
    /// answers.
    async fn spawn_ready(
        &self,
        component: Component,
        launch: &Launch,
    ) -> Result<Supervised, Error> {
        let binary = self.layout.binary(component.program())?;
        let log = self.files.log(component);
        let pid = self.files.pid(component);
        let mut process = if launch.env.is_empty() {
            Supervised::spawn(component, &binary, &launch.args, &log, &pid)?
        } else {
            // The supervisor passes its environment on; `env` sets it.
            let mut full: Vec<String> = launch
                .env
                .iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect();
            full.push(binary.display().to_string());
            full.extend(launch.args.iter().cloned());
            Supervised::spawn(component, Path::new("env"), &full, &log, &pid)?
        };
        wait_ready(&mut process, self.ready_timeout, || {
            let probe = launch.probe.clone();
            async move {
                match probe {
                    Probe::Ok(config, path) => expect_ok(&config, path).await,
                    Probe::Status(config, path) => expect_status_ok(&config, path).await,
                    Probe::ControllerManager { health, admin } => {
                        expect_ok(&health, "/healthz").await?;
                        expect_status_ok(
                            &admin,
                            "/api/v1/namespaces/default/serviceaccounts/default",
                        )
                        .await
                    }
                }
            }
        })
        .await?;
        Ok(process)
    }

    /// Stops `component` (SIGTERM, then SIGKILL after a grace period) and
    /// waits until it is gone; [`Testbed::start_component`] starts it
    /// again. For kube-scheduler, kube-controller-manager and the Velero
    /// server; kube-apiserver has [`Testbed::restart_apiserver`].
    pub async fn stop_component(&self, component: Component) -> Result<(), Error> {
        let _one_at_a_time = self.restarting.lock().await;
        self.relaunchable(component)?;
        let old = self.lock_processes().remove(&component);
        if let Some(mut old) = old {
            old.stop().await;
        }
        Ok(())
    }

    /// Starts `component` again, after [`Testbed::stop_component`], with
    /// the arguments and environment it first ran with (its log continues
    /// in the same file), and waits until it is ready. Velero, for one,
    /// then starts as after a restart of its Deployment's pod: its informers
    /// list every object afresh.
    pub async fn start_component(&self, component: Component) -> Result<(), Error> {
        let _one_at_a_time = self.restarting.lock().await;
        let launch = self.relaunchable(component)?;
        if self.lock_processes().contains_key(&component) {
            return Err(Error::InvalidArgument(format!(
                "{component} is running; stop it first"
            )));
        }
        let process = self.spawn_ready(component, launch).await?;
        self.lock_processes().insert(component, process);
        Ok(())
    }

    /// How `component` was launched, or why it cannot be started again.
    fn relaunchable(&self, component: Component) -> Result<&Launch, Error> {
        self.launched.get(&component).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{component} is not a component this bed launched and can start again"
            ))
        })
    }

    fn lock_processes(&self) -> MutexGuard<'_, BTreeMap<Component, Supervised>> {
        self.processes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A kubeconfig with a client certificate for a component's user.
    fn component_kubeconfig(&self, user: &str) -> Result<PathBuf, Error> {
        let cert = self.pki.client(user, &[])?;
        let path = self.files.identity(&file_stem(user));
        kubeconfig::write(
            &path,
            &kubeconfig::document(
                &self.server_url,
                self.pki.ca_pem(),
                user,
                &Credentials::Certificate {
                    cert_pem: &cert.cert_pem,
                    key_pem: &cert.key_pem,
                },
                None,
            ),
        )?;
        Ok(path)
    }

    /// A serving certificate and key for a component, as files.
    fn serving_files(&self, name: &str) -> Result<(String, String), Error> {
        let serving = self.pki.serving(name)?;
        let cert = self.files.pki(&format!("{name}.crt"));
        let key = self.files.pki(&format!("{name}.key"));
        kubeconfig::write_private(&cert, serving.cert_pem.as_bytes())?;
        kubeconfig::write_private(&key, serving.key_pem.as_bytes())?;
        Ok((cert.display().to_string(), key.display().to_string()))
    }

    /// A client for a component's HTTPS health endpoints (anonymous,
    /// verifying the bed's CA).
    async fn tls_probe_config(&self, port: u16) -> Result<kube::Config, Error> {
        let document = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{ "name": "probe", "cluster": {
                "server": format!("https://127.0.0.1:{port}"),
                "certificate-authority-data": base64_encode(self.pki.ca_pem()),
            }}],
            "users": [{ "name": "anonymous", "user": {} }],
            "contexts": [{ "name": "probe", "context": { "cluster": "probe", "user": "anonymous" } }],
            "current-context": "probe",
        });
        let kubeconfig: kube::config::Kubeconfig = serde_json::from_value(document)
            .map_err(|e| Error::InvalidArgument(format!("a probe kubeconfig: {e}")))?;
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .map_err(|source| Error::Kubeconfig {
                path: PathBuf::from("(probe)"),
                source,
            })?;
        config.connect_timeout = Some(Duration::from_secs(2));
        config.read_timeout = Some(Duration::from_secs(5));
        Ok(config)
    }

    /// The admin kubeconfig (client certificate of [`ADMIN_USER`], group
    /// `system:masters`).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The bed's directory (certificates, logs, kubeconfigs, etcd's data);
    /// removed when the bed stops.
    pub fn dir(&self) -> &Path {
        &self.files.root
    }

    /// A client with the admin identity, made in the calling Tokio runtime
    /// (so each test's runtime has its own connections).
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime, as [`kube::Client::new`].
    pub fn client(&self) -> kube::Client {
        // The same configuration made a client when the bed started, so
        // its TLS material parses; only a missing runtime can fail here.
        #[allow(clippy::expect_used)]
        kube::Client::try_from(self.config.clone())
            .expect("the admin kubeconfig made a client when the bed started")
    }

    /// The admin client configuration, to adjust (timeouts, namespace)
    /// before making a client.
    pub fn client_config(&self) -> kube::Config {
        self.config.clone()
    }

    /// A client from a kubeconfig file (one of
    /// [`Testbed::service_account_kubeconfig`] or
    /// [`Testbed::user_kubeconfig`]).
    pub async fn client_from_kubeconfig(&self, path: &Path) -> Result<kube::Client, Error> {
        let config = kubeconfig::config_from_file(path).await?;
        kube::Client::try_from(config)
            .map_err(|e| Error::kube(format!("cannot make a client of {}", path.display()), e))
    }

    /// The bed's `kubectl`, with `--kubeconfig` set to the admin kubeconfig.
    pub fn kubectl(&self) -> std::process::Command {
        let mut command = std::process::Command::new(&self.kubectl);
        command.arg(format!("--kubeconfig={}", self.kubeconfig.display()));
        command
    }

    /// kube-apiserver's URL (`https://127.0.0.1:<port>`).
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// etcd's client URL (`http://127.0.0.1:<port>`, no TLS).
    pub fn etcd_url(&self) -> &str {
        &self.etcd_url
    }

    /// The CA that signed kube-apiserver's serving certificate and the
    /// client certificates (PEM).
    pub fn ca_pem(&self) -> &str {
        self.pki.ca_pem()
    }

    /// A bearer token of [`ADMIN_USER`] in `system:masters` (for raw
    /// HTTP requests).
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The versions of the bed's programs and CRDs.
    pub fn versions(&self) -> &Versions {
        &self.versions
    }

    /// The built bed the programs come from.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The log file of `component` (its standard output and error), if
    /// this bed runs it.
    pub fn log_path(&self, component: Component) -> Option<&Path> {
        self.logs.get(&component).map(PathBuf::as_path)
    }

    /// The process id of `component`, if it is running.
    pub fn pid(&self, component: Component) -> Option<u32> {
        self.lock_processes().get(&component).map(Supervised::pid)
    }

    /// The components this bed runs.
    pub fn components(&self) -> Vec<Component> {
        self.logs.keys().copied().collect()
    }

    /// How long each component took from its start until it was ready,
    /// in the order they started.
    pub fn startup_times(&self) -> &[(Component, Duration)] {
        &self.startup
    }

    /// Creates a namespace named `<prefix>-<random>` and returns its name.
    /// With kube-controller-manager, waits until its `default`
    /// ServiceAccount exists (pods need it).
    pub async fn namespace(&self, prefix: &str) -> Result<String, Error> {
        let prefix: String = prefix
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(48)
            .collect();
        let prefix = prefix.trim_matches('-');
        let prefix = if prefix.is_empty() { "test" } else { prefix };
        let name = format!("{prefix}-{}", pki::random_hex(4, "a namespace name")?);
        let client = self.client();
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let namespace = Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .map_err(|e| Error::kube(format!("cannot create namespace {name}"), e))?;
        if self.controller_manager {
            let accounts: Api<ServiceAccount> = Api::namespaced(client, &name);
            let waited = Duration::from_secs(60);
            let deadline = Instant::now() + waited;
            loop {
                match accounts.get_opt("default").await {
                    Ok(Some(_)) => break,
                    Ok(None) => {}
                    Err(e) => {
                        return Err(Error::kube(
                            format!("cannot read ServiceAccount {name}/default"),
                            e,
                        ));
                    }
                }
                if Instant::now() > deadline {
                    return Err(Error::Timeout {
                        what: format!("ServiceAccount {name}/default"),
                        waited,
                    });
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(name)
    }

    /// Writes a kubeconfig that authenticates as the existing
    /// ServiceAccount `namespace/name`, with a token from the TokenRequest
    /// API (valid 24 hours, audience [`SERVICE_ACCOUNT_ISSUER`]), its
    /// default namespace `namespace`. Run a controller with it to give the
    /// controller exactly that account's RBAC.
    pub async fn service_account_kubeconfig(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<PathBuf, Error> {
        if namespace.is_empty() || name.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "a ServiceAccount needs a namespace and a name, not {namespace:?}/{name:?}"
            )));
        }
        let accounts: Api<ServiceAccount> = Api::namespaced(self.client(), namespace);
        let request = TokenRequest {
            spec: TokenRequestSpec {
                audiences: vec![SERVICE_ACCOUNT_ISSUER.to_owned()],
                expiration_seconds: Some(24 * 3600),
                bound_object_ref: None,
            },
            ..Default::default()
        };
        let answer = accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .map_err(|e| {
                Error::kube(
                    format!("cannot get a token for ServiceAccount {namespace}/{name}"),
                    e,
                )
            })?;
        let token = answer.status.map(|status| status.token).unwrap_or_default();
        if token.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "the TokenRequest for ServiceAccount {namespace}/{name} answered no token"
            )));
        }
        let user = format!("system:serviceaccount:{namespace}:{name}");
        let path = self
            .files
            .identity(&format!("sa-{}-{}", file_stem(namespace), file_stem(name)));
        kubeconfig::write(
            &path,
            &kubeconfig::document(
                &self.server_url,
                self.pki.ca_pem(),
                &user,
                &Credentials::Token(&token),
                Some(namespace),
            ),
        )?;
        Ok(path)
    }

    /// Writes a kubeconfig that authenticates as `user` in `groups` with a
    /// client certificate signed by the bed's CA (the subject's common
    /// name and one organization per group, as kube-apiserver reads them;
    /// at most 28 groups). Every authenticated user is also in
    /// `system:authenticated`.
    pub fn user_kubeconfig(&self, user: &str, groups: &[&str]) -> Result<PathBuf, Error> {
        if user.is_empty() {
            return Err(Error::InvalidArgument("a user needs a name".to_owned()));
        }
        let suffix = pki::random_hex(3, "a kubeconfig name")?;
        let cert = self.pki.client(user, groups)?;
        let path = self
            .files
            .identity(&format!("user-{}-{suffix}", file_stem(user)));
        kubeconfig::write(
            &path,
            &kubeconfig::document(
                &self.server_url,
                self.pki.ca_pem(),
                user,
                &Credentials::Certificate {
                    cert_pem: &cert.cert_pem,
                    key_pem: &cert.key_pem,
                },
                None,
            ),
        )?;
        Ok(path)
    }

    /// Stops kube-apiserver (SIGTERM, as a rolling restart does) and
    /// starts it again on the same port with the same flags, and waits
    /// until it is ready. Data stays (it is in etcd); watches break and
    /// clients reconnect; the watch cache starts afresh, so a watch from a
    /// resourceVersion older than the restart answers 410 Gone.
    pub async fn restart_apiserver(&self) -> Result<(), Error> {
        let _one_at_a_time = self.restarting.lock().await;
        let component = Component::KubeApiserver;
        let old = self.lock_processes().remove(&component);
        if let Some(mut old) = old {
            old.stop().await;
        }
        let (binary, args) = &self.apiserver;
        let mut process = Supervised::spawn(
            component,
            binary,
            args,
            &self.files.log(component),
            &self.files.pid(component),
        )?;
        let ready = wait_apiserver_ready(&mut process, &self.config, self.ready_timeout).await;
        self.lock_processes().insert(component, process);
        ready
    }

    /// Compacts etcd physically, as kube-apiserver's own compactor does
    /// every 5 minutes, to its newest revision, and returns that revision.
    /// Like kube-apiserver, it records the compaction under etcd's
    /// `compact_rev_key`, which kube-apiserver watches to learn of
    /// compactions: the first write gives the revision to compact to, the
    /// second records it.
    ///
    /// etcd keeps the revision it compacted to, so afterwards a watch from
    /// any resourceVersion older than that of the newest change (a watch
    /// starts after its resourceVersion) is refused by etcd: on a resource
    /// that kube-apiserver does not cache (Events, or every resource with
    /// [`Builder::watch_cache`]`(false)`) it answers 410 Gone. A cached
    /// resource keeps answering such watches from the cache's history
    /// until that history moves past them or kube-apiserver restarts.
    pub async fn compact_etcd(&self) -> Result<i64, Error> {
        const RANGE: &str = "POST /v3/kv/range";
        const PUT: &str = "POST /v3/kv/put";
        const COMPACTION: &str = "POST /v3/kv/compaction";
        let config = plain_config(&self.etcd_url)?;
        let etcd_call = |request: &'static str, path: &'static str, body: serde_json::Value| {
            let config = config.clone();
            async move {
                let (status, text) = call(
                    &config,
                    http::Method::POST,
                    path,
                    Some(body.to_string().into_bytes()),
                )
                .await
                .map_err(|detail| Error::Etcd { request, detail })?;
                if !status.is_success() {
                    return Err(Error::Etcd {
                        request,
                        detail: format!("{status}: {text}"),
                    });
                }
                let answer =
                    serde_json::from_str::<serde_json::Value>(&text).map_err(|e| Error::Etcd {
                        request,
                        detail: format!("{e}: {text}"),
                    })?;
                // int64 fields are JSON strings in etcd's gateway.
                answer
                    .pointer("/header/revision")
                    .and_then(|value| match value {
                        serde_json::Value::String(text) => text.parse::<i64>().ok(),
                        other => other.as_i64(),
                    })
                    .ok_or_else(|| Error::Etcd {
                        request,
                        detail: format!("no header.revision in {answer}"),
                    })
            }
        };
        let key = base64_encode("compact_rev_key");
        let current = etcd_call(RANGE, "/v3/kv/range", serde_json::json!({ "key": key })).await?;
        let put = |revision: i64| serde_json::json!({ "key": key, "value": base64_encode(&revision.to_string()) });
        let revision = etcd_call(PUT, "/v3/kv/put", put(current)).await?;
        etcd_call(
            COMPACTION,
            "/v3/kv/compaction",
            serde_json::json!({ "revision": revision.to_string(), "physical": true }),
        )
        .await?;
        etcd_call(PUT, "/v3/kv/put", put(revision)).await?;
        Ok(revision)
    }

    /// `kubectl apply --server-side` of the YAML or JSON `manifests`
    /// (several documents allowed).
    pub async fn apply_yaml(&self, manifests: &str) -> Result<String, Error> {
        self.kubectl_output(
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager=kube-testbed",
                "-f",
                "-",
            ],
            Some(manifests.as_bytes()),
        )
        .await
    }

    /// `kubectl apply --server-side` of files or directories.
    pub async fn apply_files<P: AsRef<Path>>(&self, paths: &[P]) -> Result<String, Error> {
        let mut args: Vec<String> = [
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=kube-testbed",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        for path in paths {
            args.push("-f".to_owned());
            args.push(path.as_ref().display().to_string());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.kubectl_output(&args, None).await
    }

    /// Applies the CustomResourceDefinitions in `files` and waits until each is
    /// Established and discovery lists it ([`Testbed::wait_until_discovered`]); returns
    /// their names.
    pub async fn install_crd_files<P: AsRef<Path>>(
        &self,
        files: &[P],
    ) -> Result<Vec<String>, Error> {
        let mut args: Vec<String> = [
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=kube-testbed",
            "-o",
            "name",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        for file in files {
            let file = file.as_ref();
            if !file.is_file() {
                return Err(Error::MissingFile {
                    what: "a CRD manifest".to_owned(),
                    path: file.to_owned(),
                });
            }
            args.push("-f".to_owned());
            args.push(file.display().to_string());
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let applied = self.kubectl_output(&refs, None).await?;
        let names: Vec<String> = applied
            .lines()
            .map(str::trim)
            .filter(|line| line.starts_with("customresourcedefinition"))
            .map(str::to_owned)
            .collect();
        if names.is_empty() {
            return Err(Error::InvalidArgument(
                "the files hold no CustomResourceDefinition".to_owned(),
            ));
        }
        let mut wait = vec![
            "wait".to_owned(),
            "--for=condition=Established".to_owned(),
            "--timeout=120s".to_owned(),
        ];
        wait.extend(names.iter().cloned());
        let refs: Vec<&str> = wait.iter().map(String::as_str).collect();
        self.kubectl_output(&refs, None).await?;
        self.wait_until_discovered(files).await?;
        Ok(names
            .iter()
            .map(|name| name.rsplit('/').next().unwrap_or(name).to_owned())
            .collect())
    }

    /// Waits until discovery lists, for every CustomResourceDefinition in
    /// `files` and every version it serves, the resource and (where the CRD
    /// has one) its `status` subresource.
    ///
    /// A CRD is Established a moment before discovery lists it, one CRD at a
    /// time: a group version may already be listed with some of its resources
    /// missing. A client that decides from discovery (kubectl's RESTMapper,
    /// whether a kind has a status subresource) needs every one listed.
    pub async fn wait_until_discovered<P: AsRef<Path>>(&self, files: &[P]) -> Result<(), Error> {
        let mut wanted: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for file in files {
            let file = file.as_ref();
            let text = std::fs::read_to_string(file)
                .map_err(|e| Error::io(format!("cannot read {}", file.display()), e))?;
            let documents: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| {
                Error::InvalidArgument(format!("{}: not YAML: {e}", file.display()))
            })?;
            for crd in documents
                .iter()
                .filter(|d| d["kind"] == "CustomResourceDefinition")
            {
                for (api_version, resource) in discovered_resources(crd) {
                    wanted.entry(api_version).or_default().push(resource);
                }
            }
        }
        let client = self.client();
        let deadline = Instant::now() + DISCOVERY_TIMEOUT;
        for (api_version, resources) in &wanted {
            loop {
                let listed = client.list_api_group_resources(api_version).await;
                let missing: Vec<&String> = match &listed {
                    Ok(list) => resources
                        .iter()
                        .filter(|name| !list.resources.iter().any(|r| &r.name == *name))
                        .collect(),
                    Err(_) => resources.iter().collect(),
                };
                if missing.is_empty() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(Error::Timeout {
                        what: format!("discovery to list {missing:?} in {api_version}"),
                        waited: DISCOVERY_TIMEOUT,
                    });
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    /// Applies every CRD manifest in `dir` (`*.yaml`, `*.yml`, `*.json`)
    /// as [`Testbed::install_crd_files`] does, and waits until each
    /// CRD is Established and discovered. Returns the CRDs' names.
    pub async fn install_crds(&self, dir: &Path) -> Result<Vec<String>, Error> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| Error::io(format!("cannot read {}", dir.display()), e))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| {
                matches!(
                    path.extension().and_then(|e| e.to_str()),
                    Some("yaml" | "yml" | "json")
                )
            })
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(Error::MissingFile {
                what: "CRD manifests".to_owned(),
                path: dir.to_owned(),
            });
        }
        self.install_crd_files(&files).await
    }

    /// Runs the bed's kubectl with the admin kubeconfig and `args`, with
    /// `stdin` as its input; its standard output, or an error with its
    /// standard error.
    pub async fn kubectl_output(
        &self,
        args: &[&str],
        stdin: Option<&[u8]>,
    ) -> Result<String, Error> {
        use tokio::io::AsyncWriteExt;
        let mut command = tokio::process::Command::new(&self.kubectl);
        command
            .arg(format!("--kubeconfig={}", self.kubeconfig.display()))
            .args(args)
            .stdin(if stdin.is_some() {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let shown = args.join(" ");
        let mut child = command
            .spawn()
            .map_err(|e| Error::io(format!("cannot run {}", self.kubectl.display()), e))?;
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(input)
                .await
                .map_err(|e| Error::io(format!("cannot write to `kubectl {shown}`"), e))?;
        }
        let output = child
            .wait_with_output()
            .await
            .map_err(|e| Error::io(format!("`kubectl {shown}`"), e))?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(Error::Kubectl {
                args: shown,
                status: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            })
        }
    }

    /// Stops every component now (the bed is unusable afterwards);
    /// dropping the bed does the same. etcd stops last, so that
    /// kube-apiserver shuts down cleanly.
    pub fn stop(&mut self) {
        let processes = self
            .processes
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let etcd = processes.remove(&Component::Etcd);
        // The others all at once, then etcd.
        for process in processes.values_mut() {
            process.request_stop();
        }
        for process in processes.values_mut() {
            process.stop_blocking();
        }
        processes.clear();
        if let Some(mut etcd) = etcd {
            etcd.stop_blocking();
        }
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        self.stop();
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
        self.cleaner = None;
    }
}

/// How a component was started: its arguments, environment and probe.
struct Launch {
    args: Vec<String>,
    env: Vec<(String, String)>,
    probe: Probe,
}

/// How a component shows it is ready.
#[derive(Clone)]
enum Probe {
    /// `GET path` answers 200 with `ok`.
    Ok(kube::Config, &'static str),
    /// `GET path` answers 200.
    Status(kube::Config, &'static str),
    /// kube-controller-manager's `/healthz` is `ok` and its controllers
    /// have written.
    ControllerManager {
        health: kube::Config,
        admin: Box<kube::Config>,
    },
}

/// The ServiceAccount the Velero server runs as, bound as `velero
/// install` binds it.
const VELERO_IDENTITY: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: velero
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: velero
  namespace: velero
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: velero
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  name: velero
  namespace: velero
"#;

/// Whether a component failed because a port was taken.
fn address_in_use(error: &Error) -> bool {
    match error {
        Error::Exited { log_tail, .. } | Error::NotReady { log_tail, .. } => {
            log_tail.contains("address already in use")
        }
        _ => false,
    }
}

/// `count` distinct free loopback ports (all bound at once, then freed).
fn free_ports<const N: usize>() -> Result<[u16; N], Error> {
    let listeners: Vec<TcpListener> = (0..N)
        .map(|_| TcpListener::bind(("127.0.0.1", 0)))
        .collect::<Result<_, _>>()
        .map_err(|e| Error::io("cannot find a free loopback port", e))?;
    let mut ports = [0_u16; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener
            .local_addr()
            .map_err(|e| Error::io("cannot find a free loopback port", e))?
            .port();
    }
    Ok(ports)
}

/// A file name made of `name` (letters, digits, `-`, `.`; the rest `_`).
fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn base64_encode(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// A client configuration for a plain-HTTP endpoint (etcd, Velero's
/// metrics).
fn plain_config(url: &str) -> Result<kube::Config, Error> {
    let uri = url
        .parse::<http::Uri>()
        .map_err(|e| Error::InvalidArgument(format!("{url}: {e}")))?;
    let mut config = kube::Config::new(uri);
    config.connect_timeout = Some(Duration::from_secs(2));
    config.read_timeout = Some(Duration::from_secs(10));
    Ok(config)
}

/// One HTTP request with a fresh client of `config`: the status and the
/// body as text.
async fn call(
    config: &kube::Config,
    method: http::Method,
    path: &str,
    body: Option<Vec<u8>>,
) -> Result<(http::StatusCode, String), String> {
    let client = kube::Client::try_from(config.clone()).map_err(|e| e.to_string())?;
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.unwrap_or_default()))
        .map_err(|e| e.to_string())?;
    let response = client.send(request).await.map_err(|e| e.to_string())?;
    let status = response.status();
    let bytes = response
        .into_body()
        .collect_bytes()
        .await
        .map_err(|e| e.to_string())?;
    Ok((status, String::from_utf8_lossy(&bytes).trim().to_owned()))
}

/// A health endpoint that answers `ok`.
async fn expect_ok(config: &kube::Config, path: &str) -> Result<(), String> {
    let (status, body) = call(config, http::Method::GET, path, None).await?;
    if status.is_success() && body == "ok" {
        Ok(())
    } else {
        Err(format!("GET {path}: {status}: {}", first_lines(&body)))
    }
}

/// An endpoint that answers 200.
async fn expect_status_ok(config: &kube::Config, path: &str) -> Result<(), String> {
    let (status, body) = call(config, http::Method::GET, path, None).await?;
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("GET {path}: {status}: {}", first_lines(&body)))
    }
}

fn first_lines(text: &str) -> String {
    // /readyz lists every check; the failing ones matter.
    let failing: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("failed") || line.starts_with("[-]"))
        .take(5)
        .collect();
    if failing.is_empty() {
        text.lines().take(3).collect::<Vec<_>>().join(" / ")
    } else {
        failing.join(" / ")
    }
}

async fn wait_apiserver_ready(
    process: &mut Supervised,
    config: &kube::Config,
    timeout: Duration,
) -> Result<(), Error> {
    let mut probe = config.clone();
    probe.connect_timeout = Some(Duration::from_secs(2));
    probe.read_timeout = Some(Duration::from_secs(5));
    wait_ready(process, timeout, move || {
        let config = probe.clone();
        async move { expect_ok(&config, "/readyz").await }
    })
    .await
}

/// Polls `probe` until it succeeds, the process exits, or `timeout`.
async fn wait_ready<F, Fut>(
    process: &mut Supervised,
    timeout: Duration,
    mut probe: F,
) -> Result<(), Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let started = Instant::now();
    let mut last;
    loop {
        if let Some(status) = process.exited() {
            return Err(process.exited_error(status));
        }
        match tokio::time::timeout(Duration::from_secs(10), probe()).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(error)) => last = error,
            Err(_) => last = "the probe got no answer in 10 s".to_owned(),
        }
        if started.elapsed() >= timeout {
            let log = process.log().to_owned();
            return Err(Error::NotReady {
                component: process.component(),
                waited: timeout,
                last,
                log_tail: crate::supervise::log_tail(&log),
                log,
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How long [`Testbed::wait_until_discovered`] waits for discovery.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(120);

/// The `(group/version, resource)` pairs discovery lists for a
/// CustomResourceDefinition: its plural, and `<plural>/status` where the
/// version has a status subresource, in every served version.
fn discovered_resources(crd: &Value) -> Vec<(String, String)> {
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
    let mut resources = Vec::new();
    for version in crd["spec"]["versions"].as_array().into_iter().flatten() {
        if version["served"] != true {
            continue;
        }
        let api_version = format!("{group}/{}", version["name"].as_str().unwrap_or_default());
        resources.push((api_version.clone(), plural.to_owned()));
        if version["subresources"].get("status").is_some() {
            resources.push((api_version, format!("{plural}/status")));
        }
    }
    resources
}
