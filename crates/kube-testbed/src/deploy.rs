//! Deploying a controller onto a bed as its users deploy it, and the
//! faults a test inflicts on its connection.
//!
//! - [`deploy_manifests`] applies a controller's generated manifests (its
//!   ServiceAccount, RBAC, ConfigMaps, ...) with the bed's `kubectl`, all
//!   but the workload (Deployment, DaemonSet), which would need a kubelet.
//!   The workload is kept ([`Deployed::container_args`]) so that a test
//!   runs the controller's binary with the arguments and environment the
//!   pod would have.
//! - [`ControllerProcess`] runs that binary as a process with the
//!   ServiceAccount's TokenRequest kubeconfig
//!   ([`crate::Testbed::service_account_kubeconfig`]), so that the real
//!   RBAC authorizer judges every request against the generated rules,
//!   and stops it with SIGTERM as a kubelet does.
//! - [`Relay`] is a loopback TCP relay in front of kube-apiserver whose
//!   [`Relay::cut`] closes every open connection, so that a controller's
//!   watches break and restart from their last resourceVersion without
//!   kube-apiserver restarting (after [`crate::Testbed::compact_etcd`],
//!   that re-watch is answered 410 Gone).
//! - [`audit_args`] and [`audited_requests`] record, through
//!   kube-apiserver's audit log, every request a user made and its answer:
//!   which rules a controller used, and whether any was refused.

use std::collections::BTreeMap;
use std::future::Future;
use std::io::Read;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::Error;
use crate::kubeconfig;
use crate::testbed::Testbed;

/// The kinds [`deploy_manifests`] does not apply: they run pods, and the
/// bed has no kubelet.
pub const WORKLOAD_KINDS: &[&str] = &["Deployment", "DaemonSet", "StatefulSet", "Job", "Pod"];

/// What [`deploy_manifests`] applied, and the workload it left out.
#[derive(Debug, Clone)]
pub struct Deployed {
    /// `Kind/name` (`Kind/namespace/name` when namespaced) of every applied
    /// object, in the manifests' order, names as applied.
    pub applied: Vec<String>,
    /// The first workload of the manifests (a Deployment or DaemonSet), as
    /// written there.
    pub workload: Option<Value>,
}

/// The pod a test pretends to run the workload in, for the downward API
/// (`fieldRef`) values of the container's environment.
#[derive(Debug, Clone)]
pub struct Pod<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// `spec.nodeName`.
    pub node: &'a str,
}

impl Deployed {
    /// The namespace and name of the ServiceAccount the workload runs as
    /// (`default` when it names none).
    pub fn service_account(&self) -> Option<(String, String)> {
        let workload = self.workload.as_ref()?;
        let namespace = workload["metadata"]["namespace"].as_str()?.to_owned();
        let name = workload["spec"]["template"]["spec"]["serviceAccountName"]
            .as_str()
            .unwrap_or("default")
            .to_owned();
        Some((namespace, name))
    }

    /// The environment of the workload's first container in `pod`: plain
    /// values, and the downward API's `metadata.name`,
    /// `metadata.namespace`, `spec.nodeName`, `spec.serviceAccountName`
    /// and `status.podIP` (loopback). Other sources are left out.
    pub fn container_env(&self, pod: &Pod<'_>) -> Vec<(String, String)> {
        let Some(workload) = self.workload.as_ref() else {
            return Vec::new();
        };
        let namespace = workload["metadata"]["namespace"].as_str().unwrap_or("");
        let account = self
            .service_account()
            .map(|(_, name)| name)
            .unwrap_or_default();
        let container = &workload["spec"]["template"]["spec"]["containers"][0];
        let mut env = Vec::new();
        for entry in container["env"].as_array().into_iter().flatten() {
            let Some(name) = entry["name"].as_str() else {
                continue;
            };
            let value = if let Some(value) = entry["value"].as_str() {
                Some(value.to_owned())
            } else {
                match entry["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                    Some("metadata.name") => Some(pod.name.to_owned()),
                    Some("metadata.namespace") => Some(namespace.to_owned()),
                    Some("spec.nodeName") => Some(pod.node.to_owned()),
                    Some("spec.serviceAccountName") => Some(account.clone()),
                    Some("status.podIP" | "status.hostIP") => Some("127.0.0.1".to_owned()),
                    _ => None,
                }
            };
            if let Some(value) = value {
                env.push((name.to_owned(), value));
            }
        }
        env
    }

    /// The arguments of the workload's first container in `pod`, with
    /// `$(VAR)` references to its environment expanded as the kubelet
    /// expands them.
    pub fn container_args(&self, pod: &Pod<'_>) -> Vec<String> {
        let Some(workload) = self.workload.as_ref() else {
            return Vec::new();
        };
        let env: BTreeMap<String, String> = self.container_env(pod).into_iter().collect();
        workload["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|arg| expand(arg, &env))
            .collect()
    }
}

impl Deployed {
    /// Prepares running `program` as the workload's container would run
    /// in `pod`: its arguments and environment, `--metrics-addr` on a free
    /// loopback port instead of the container's, and `--kubeconfig` with a
    /// TokenRequest token of the workload's ServiceAccount (so the
    /// generated RBAC is all it has).
    pub async fn launch(
        &self,
        bed: &Testbed,
        program: &Path,
        pod: &Pod<'_>,
    ) -> Result<Launch, Error> {
        let (namespace, account) = self.service_account().ok_or_else(|| {
            Error::InvalidArgument("the manifests have no Deployment or DaemonSet".to_owned())
        })?;
        let kubeconfig = bed.service_account_kubeconfig(&namespace, &account).await?;
        let metrics_port = free_port()?;
        let mut args = self.container_args(pod);
        set_flag(
            &mut args,
            "--metrics-addr",
            &format!("127.0.0.1:{metrics_port}"),
        );
        let env = self.container_env(pod);
        let program_name = program
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let logs = bed.dir().join("controllers");
        std::fs::create_dir_all(&logs)
            .map_err(|e| Error::io(format!("cannot create {}", logs.display()), e))?;
        let log = logs.join(format!(
            "{program_name}-{namespace}-{}-{metrics_port}.log",
            pod.name
        ));
        Ok(Launch {
            program: program.to_owned(),
            args,
            env,
            kubeconfig,
            metrics_port,
            log,
        })
    }
}

/// A controller process about to start ([`Deployed::launch`]); adjust it,
/// then [`Launch::spawn`].
#[derive(Debug, Clone)]
pub struct Launch {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    kubeconfig: PathBuf,
    metrics_port: u16,
    log: PathBuf,
}

impl Launch {
    /// Sets `--flag=value`, replacing the container's value if it has one.
    pub fn arg(mut self, flag: &str, value: &str) -> Self {
        set_flag(&mut self.args, flag, value);
        self
    }

    /// Adds the switch `--flag` (no value) unless it is there.
    pub fn switch(mut self, flag: &str) -> Self {
        if !self.args.iter().any(|arg| arg == flag) {
            self.args.push(flag.to_owned());
        }
        self
    }

    /// Drops `--flag` (a switch, `--flag=value` or `--flag value`).
    pub fn without(mut self, flag: &str) -> Self {
        remove_flag(&mut self.args, flag);
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.retain(|(key, _)| key != name);
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Uses another kubeconfig (a [`Relay::kubeconfig`] of the
    /// ServiceAccount's, say).
    pub fn kubeconfig(mut self, path: &Path) -> Self {
        path.clone_into(&mut self.kubeconfig);
        self
    }

    /// The ServiceAccount's kubeconfig the process will use.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The arguments so far (without `--kubeconfig`).
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// Starts the process.
    pub fn spawn(self) -> Result<ControllerProcess, Error> {
        let mut args = self.args;
        args.push(format!("--kubeconfig={}", self.kubeconfig.display()));
        let mut process = ControllerProcess::spawn(&self.program, &args, &self.env, &self.log)?;
        process.metrics_port = Some(self.metrics_port);
        Ok(process)
    }
}

/// Sets `--flag=value` in `args`, replacing `--flag=old` or `--flag old`.
fn set_flag(args: &mut Vec<String>, flag: &str, value: &str) {
    remove_flag(args, flag);
    args.push(format!("{flag}={value}"));
}

/// Removes `--flag`, `--flag=value` and `--flag value` from `args` (a
/// following argument that starts with `-` is not taken as the value).
fn remove_flag(args: &mut Vec<String>, flag: &str) {
    let mut kept = Vec::with_capacity(args.len());
    let mut iter = args.drain(..).peekable();
    while let Some(arg) = iter.next() {
        if arg == flag {
            if iter.peek().is_some_and(|next| !next.starts_with('-')) {
                iter.next();
            }
        } else if !arg.starts_with(&format!("{flag}=")) {
            kept.push(arg);
        }
    }
    drop(iter);
    *args = kept;
}

/// `$(NAME)` replaced by `env[NAME]` when set; `$$` is a literal `$`.
fn expand(arg: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = arg;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some(open) = tail.strip_prefix("$(")
            && let Some(close) = open.find(')')
            && let Some(value) = env.get(&open[..close])
        {
            out.push_str(value);
            rest = &open[close + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Applies a controller's generated `manifests` (multi-document YAML) to
/// `bed` with `kubectl apply --server-side`, all but the workloads
/// ([`WORKLOAD_KINDS`]).
///
/// With `cluster_suffix`, the names of the cluster-scoped RBAC objects
/// (ClusterRole, ClusterRoleBinding, and the references to those
/// ClusterRoles) get `-<suffix>`, so that tests deploying the same
/// controller into several namespaces of one bed do not overwrite each
/// other's bindings. Rules and subjects are never changed.
pub async fn deploy_manifests(
    bed: &Testbed,
    manifests: &str,
    cluster_suffix: Option<&str>,
) -> Result<Deployed, Error> {
    let documents: Vec<Value> = serde_saphyr::from_multiple(manifests)
        .map_err(|e| Error::InvalidArgument(format!("the manifests do not parse: {e}")))?;
    let mut objects = Vec::new();
    let mut workload = None;
    for document in documents {
        if document.is_null() {
            continue;
        }
        let kind = document["kind"].as_str().unwrap_or_default();
        if WORKLOAD_KINDS.contains(&kind) {
            if workload.is_none() {
                workload = Some(document);
            }
        } else {
            objects.push(document);
        }
    }
    if let Some(suffix) = cluster_suffix {
        rename_cluster_rbac(&mut objects, suffix);
    }
    let applied = objects
        .iter()
        .map(|object| {
            let meta = &object["metadata"];
            let name = meta["name"].as_str().unwrap_or_default();
            match meta["namespace"].as_str() {
                Some(namespace) => format!(
                    "{}/{namespace}/{name}",
                    object["kind"].as_str().unwrap_or_default()
                ),
                None => format!("{}/{name}", object["kind"].as_str().unwrap_or_default()),
            }
        })
        .collect();
    if !objects.is_empty() {
        let list = serde_json::json!({ "apiVersion": "v1", "kind": "List", "items": objects });
        bed.apply_yaml(&list.to_string()).await?;
    }
    Ok(Deployed { applied, workload })
}

fn rename_cluster_rbac(objects: &mut [Value], suffix: &str) {
    let cluster_roles: Vec<String> = objects
        .iter()
        .filter(|o| o["kind"] == "ClusterRole")
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    for object in objects.iter_mut() {
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        if matches!(kind.as_str(), "ClusterRole" | "ClusterRoleBinding")
            && let Some(name) = object["metadata"]["name"].as_str()
        {
            object["metadata"]["name"] = Value::String(format!("{name}-{suffix}"));
        }
        if matches!(kind.as_str(), "ClusterRoleBinding" | "RoleBinding")
            && object["roleRef"]["kind"] == "ClusterRole"
            && let Some(name) = object["roleRef"]["name"].as_str()
            && cluster_roles.iter().any(|role| role == name)
        {
            object["roleRef"]["name"] = Value::String(format!("{name}-{suffix}"));
        }
    }
}

/// A free loopback port (bound, then freed).
pub fn free_port() -> Result<u16, Error> {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| Error::io("cannot find a free loopback port", e))
}

/// A controller binary running as a process, its standard output and
/// error in a log file. Dropping it kills the process (SIGKILL) if it is
/// still running.
#[derive(Debug)]
pub struct ControllerProcess {
    child: Mutex<Child>,
    pid: u32,
    log: PathBuf,
    metrics_port: Option<u16>,
}

impl ControllerProcess {
    /// Starts `program` with `args` and only the environment `env` (as in
    /// a container; `PATH` is kept), writing its output to `log`.
    pub fn spawn(
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        log: &Path,
    ) -> Result<ControllerProcess, Error> {
        let file = std::fs::File::create(log)
            .map_err(|e| Error::io(format!("cannot create {}", log.display()), e))?;
        let err = file
            .try_clone()
            .map_err(|e| Error::io(format!("cannot reopen {}", log.display()), e))?;
        let child = Command::new(program)
            .args(args)
            .env_clear()
            .envs(std::env::var_os("PATH").map(|path| ("PATH", path)))
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| Error::io(format!("cannot run {}", program.display()), e))?;
        Ok(ControllerProcess {
            pid: child.id(),
            child: Mutex::new(child),
            log: log.to_owned(),
            metrics_port: None,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// How the process exited, if it has.
    pub fn exited(&self) -> Option<ExitStatus> {
        self.child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .try_wait()
            .ok()
            .flatten()
    }

    /// Waits up to `limit` for the process to exit by itself.
    pub async fn wait(&self, limit: Duration) -> Result<ExitStatus, Error> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.exited() {
                return Ok(status);
            }
            if started.elapsed() > limit {
                return Err(Error::Timeout {
                    what: format!("the exit of pid {}", self.pid),
                    waited: limit,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sends SIGTERM (as a kubelet stopping the pod does) and waits up to
    /// `limit` for the exit.
    pub async fn terminate(&self, limit: Duration) -> Result<ExitStatus, Error> {
        if let Some(status) = self.exited() {
            return Ok(status);
        }
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .status()
            .map_err(|e| Error::io("cannot run kill", e))?;
        if !sent.success() && self.exited().is_none() {
            return Err(Error::InvalidArgument(format!(
                "kill -TERM {} failed: {sent}",
                self.pid
            )));
        }
        self.wait(limit).await
    }

    /// `GET path` on the controller's metrics server (`/healthz`,
    /// `/readyz`, `/metrics`; [`Launch`] put it on a loopback port): the
    /// status code and the body.
    pub async fn http_get(&self, path: &str) -> Result<(u16, String), Error> {
        let port = self.metrics_port.ok_or_else(|| {
            Error::InvalidArgument("this process was not started by a Launch".to_owned())
        })?;
        let path = path.to_owned();
        tokio::task::spawn_blocking(move || http_get(port, &path))
            .await
            .map_err(|e| Error::InvalidArgument(format!("the HTTP request's task failed: {e}")))?
    }

    /// Polls `check` every 100 ms for up to `limit` until it gives `Ok`.
    ///
    /// # Panics
    ///
    /// When time runs out or the process exits first, with `what`, the
    /// last `Err` of `check` (what it saw) and the end of the log: this is
    /// test support.
    pub async fn until<F, Fut>(&self, what: &str, limit: Duration, mut check: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<(), String>>,
    {
        let started = Instant::now();
        loop {
            let seen = match check().await {
                Ok(()) => return,
                Err(seen) => seen,
            };
            if let Some(status) = self.exited() {
                panic!(
                    "the controller exited ({status}) while waiting for {what} (last seen: {seen}); its log:\n{}",
                    self.log_tail(60)
                );
            }
            assert!(
                started.elapsed() < limit,
                "timed out after {limit:?} waiting for {what} (last seen: {seen}); the controller's log:\n{}",
                self.log_tail(60)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGTERM, as a kubelet stopping the pod sends it.
    ///
    /// # Panics
    ///
    /// Unless the process exits with status 0 within 15 s (with the end of
    /// its log): this is test support.
    pub async fn stop_cleanly(&self) {
        match self.terminate(Duration::from_secs(15)).await {
            Ok(status) => assert_eq!(
                status.code(),
                Some(0),
                "the exit after SIGTERM; the controller's log:\n{}",
                self.log_tail(60)
            ),
            Err(error) => panic!("{error}; the controller's log:\n{}", self.log_tail(60)),
        }
    }

    /// The last `lines` lines of the log.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = self.log();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// The log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Everything the process has written so far.
    pub fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = std::fs::File::open(&self.log) {
            let mut bytes = Vec::new();
            let _ = file.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    }
}

impl Drop for ControllerProcess {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(PoisonError::into_inner);
        if matches!(child.try_wait(), Ok(None)) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `Ok` when `holds`, else `Err` showing `seen`: the answer of a check
/// given to [`ControllerProcess::until`].
pub fn seen<T: std::fmt::Debug>(holds: bool, seen: T) -> Result<(), String> {
    if holds {
        Ok(())
    } else {
        Err(format!("{seen:?}"))
    }
}

/// The value of a Prometheus metric in a `/metrics` body (every series of
/// that name summed; 0 when absent).
pub fn metric(body: &str, name: &str) -> f64 {
    body.lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// How a watch of `api` from `resource_version` starts: `Ok(())` once it
/// delivers an event or stays open for two seconds, `Err(code)` when the
/// server refuses it (with an HTTP error or an error event): `Err(410)`
/// once etcd has compacted that revision.
pub async fn watch_from<K>(api: &kube::Api<K>, resource_version: &str) -> Result<(), u16>
where
    K: kube::Resource
        + Clone
        + k8s_openapi::serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    use futures::StreamExt;
    let code = |error: &kube::Error| match error {
        kube::Error::Api(status) => status.code,
        _ => 0,
    };
    let stream = api
        .watch(&kube::api::WatchParams::default(), resource_version)
        .await
        .map_err(|e| code(&e))?;
    let mut stream = Box::pin(stream);
    match tokio::time::timeout(Duration::from_secs(2), stream.next()).await {
        Ok(Some(Ok(kube::api::WatchEvent::Error(status)))) => Err(status.code),
        Ok(Some(Err(error))) => Err(code(&error)),
        _ => Ok(()),
    }
}

/// A blocking `GET path` on `127.0.0.1:port` (HTTP/1.1, no TLS).
fn http_get(port: u16, path: &str) -> Result<(u16, String), Error> {
    use std::io::Write;
    let context = || format!("GET http://127.0.0.1:{port}{path}");
    let mut stream =
        TcpStream::connect(("127.0.0.1", port)).map_err(|e| Error::io(context(), e))?;
    let limit = Some(Duration::from_secs(10));
    stream
        .set_read_timeout(limit)
        .and_then(|()| stream.set_write_timeout(limit))
        .map_err(|e| Error::io(context(), e))?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| Error::io(context(), e))?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .map_err(|e| Error::io(context(), e))?;
    let response = String::from_utf8_lossy(&response).into_owned();
    let code = response
        .get(9..12)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| {
            Error::InvalidArgument(format!("{}: no HTTP status in {response:?}", context()))
        })?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    Ok((code, body))
}

/// A loopback TCP relay to kube-apiserver: clients that connect to it
/// reach the server (TLS passes through unchanged; the serving
/// certificate is valid for 127.0.0.1), and [`Relay::cut`] closes every
/// connection open at that moment, as a network interruption or a load
/// balancer dropping its connections would. Dropping it stops it.
#[derive(Debug)]
pub struct Relay {
    port: u16,
    stop: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    /// Starts a relay to `target` (`host:port`) on a free loopback port.
    pub fn start(target: &str) -> Result<Relay, Error> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| Error::io("cannot bind the relay", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::io("cannot bind the relay", e))?
            .port();
        let stop = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let target = target.to_owned();
        let (thread_stop, thread_open) = (stop.clone(), open.clone());
        std::thread::Builder::new()
            .name("kube-testbed-relay".to_owned())
            .spawn(move || {
                for client in listener.incoming() {
                    if thread_stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let Ok(server) = TcpStream::connect(&target) else {
                        let _ = client.shutdown(Shutdown::Both);
                        continue;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (Ok(client_read), Ok(server_read)) =
                        (client.try_clone(), server.try_clone())
                    else {
                        continue;
                    };
                    {
                        let mut open = thread_open.lock().unwrap_or_else(PoisonError::into_inner);
                        open.retain(|stream| stream.peer_addr().is_ok());
                        if let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) {
                            open.push(c);
                            open.push(s);
                        }
                    }
                    pump(client_read, server);
                    pump(server_read, client);
                }
            })
            .map_err(|e| Error::io("cannot start the relay's thread", e))?;
        Ok(Relay { port, stop, open })
    }

    /// The relay's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Closes every connection open now; later ones go through.
    pub fn cut(&self) -> usize {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let cut = open.len() / 2;
        for stream in open.drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
        cut
    }

    /// A copy of the kubeconfig at `path` (one written by the bed) whose
    /// server is this relay, written beside it with the suffix `-relay`.
    pub fn kubeconfig(&self, path: &Path) -> Result<PathBuf, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
        let mut document: Value = serde_saphyr::from_str(&text).map_err(|e| {
            Error::InvalidArgument(format!("{} does not parse: {e}", path.display()))
        })?;
        for cluster in document["clusters"].as_array_mut().into_iter().flatten() {
            cluster["cluster"]["server"] =
                Value::String(format!("https://127.0.0.1:{}", self.port));
        }
        let mut name = path.as_os_str().to_owned();
        name.push("-relay");
        let relayed = PathBuf::from(name);
        kubeconfig::write(&relayed, &document)?;
        Ok(relayed)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.cut();
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Copies `from` to `to` on a thread of its own until either side closes.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::thread::Builder::new()
        .name("kube-testbed-relay-pump".to_owned())
        .spawn(move || {
            let _ = std::io::copy(&mut from, &mut to);
            let _ = to.shutdown(Shutdown::Both);
            let _ = from.shutdown(Shutdown::Both);
        });
}

/// The audit policy of [`audit_args`]: every request at `Metadata` level
/// (who, verb, resource, name, answer), from the response only.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
";

/// kube-apiserver arguments ([`crate::Builder::apiserver_args`]) that
/// write an audit log of every request to `dir/audit.log` (the policy goes
/// to `dir/audit-policy.yaml`); returns them and the log's path.
pub fn audit_args(dir: &Path) -> Result<(Vec<String>, PathBuf), Error> {
    let policy = dir.join("audit-policy.yaml");
    std::fs::write(&policy, AUDIT_POLICY)
        .map_err(|e| Error::io(format!("cannot write {}", policy.display()), e))?;
    let log = dir.join("audit.log");
    Ok((
        vec![
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", log.display()),
            "--audit-log-mode=blocking".to_owned(),
            "--audit-log-format=json".to_owned(),
        ],
        log,
    ))
}

/// One request of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AuditedRequest {
    /// The authorizer's verb (`get`, `list`, `watch`, `patch`, ...).
    pub verb: String,
    /// The API group (empty for the core group).
    pub group: String,
    /// The resource, with `/subresource` when there is one.
    pub resource: String,
    /// The namespace, empty for cluster-scoped requests.
    pub namespace: String,
    /// The object's name, empty for collections.
    pub name: String,
    /// The HTTP status code of the answer.
    pub code: u16,
    /// When the answer was sent (`stageTimestamp`, RFC 3339 with
    /// microseconds, UTC).
    pub time: String,
}

/// The resource requests `user` made, as the audit log at `log` recorded
/// them (non-resource requests such as `/version` are left out), one per
/// request: a long-running request (a watch) is recorded when its answer
/// starts and again when it completes, and is listed once, as last
/// recorded. A watch whose completion kube-apiserver never logged (it was
/// stopped, or the log is read before the client's disconnect reaches it)
/// is still listed.
pub fn audited_requests(log: &Path, user: &str) -> Result<Vec<AuditedRequest>, Error> {
    let text = std::fs::read_to_string(log)
        .map_err(|e| Error::io(format!("cannot read {}", log.display()), e))?;
    let mut requests = Vec::new();
    let mut by_audit_id: BTreeMap<String, usize> = BTreeMap::new();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if event["user"]["username"] != user || event["objectRef"].is_null() {
            continue;
        }
        let object = &event["objectRef"];
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        let mut resource = text(&object["resource"]);
        if let Some(sub) = object["subresource"].as_str() {
            resource = format!("{resource}/{sub}");
        }
        let request = AuditedRequest {
            verb: text(&event["verb"]),
            group: text(&object["apiGroup"]),
            resource,
            namespace: text(&object["namespace"]),
            name: text(&object["name"]),
            code: event["responseStatus"]["code"]
                .as_u64()
                .and_then(|code| u16::try_from(code).ok())
                .unwrap_or(0),
            time: text(&event["stageTimestamp"]),
        };
        match event["auditID"].as_str() {
            Some(id) => match by_audit_id.get(id) {
                Some(&at) => requests[at] = request,
                None => {
                    by_audit_id.insert(id.to_owned(), requests.len());
                    requests.push(request);
                }
            },
            None => requests.push(request),
        }
    }
    Ok(requests)
}

/// One permission of an RBAC rule: a verb on a resource of a group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Grant {
    /// The API group (empty for the core group).
    pub group: String,
    /// The resource, with `/subresource` when there is one.
    pub resource: String,
    /// The verb.
    pub verb: String,
}

impl std::fmt::Display for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        write!(f, "{} {group}/{}", self.verb, self.resource)
    }
}

/// Every permission the Roles and ClusterRoles of `manifests` grant, one
/// [`Grant`] per group, resource and verb (names are not kept).
pub fn granted(manifests: &str) -> Result<Vec<Grant>, Error> {
    let documents: Vec<Value> = serde_saphyr::from_multiple(manifests)
        .map_err(|e| Error::InvalidArgument(format!("the manifests do not parse: {e}")))?;
    let mut grants = Vec::new();
    for document in documents
        .iter()
        .filter(|d| d["kind"] == "Role" || d["kind"] == "ClusterRole")
    {
        for rule in document["rules"].as_array().into_iter().flatten() {
            let list = |key: &str| -> Vec<String> {
                rule[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            };
            for group in list("apiGroups") {
                for resource in list("resources") {
                    for verb in list("verbs") {
                        grants.push(Grant {
                            group: group.clone(),
                            resource: resource.clone(),
                            verb,
                        });
                    }
                }
            }
        }
    }
    grants.sort();
    grants.dedup();
    Ok(grants)
}

/// The grants no request in `requests` used (an allowed request of that
/// verb on that group and resource).
pub fn unused<'a>(grants: &'a [Grant], requests: &[AuditedRequest]) -> Vec<&'a Grant> {
    grants
        .iter()
        .filter(|grant| {
            !requests.iter().any(|request| {
                request.code < 400
                    && request.verb == grant.verb
                    && request.group == grant.group
                    && request.resource == grant.resource
            })
        })
        .collect()
}

/// Least privilege, as far as a run can show it: every grant of the
/// generated `manifests` was used by an allowed request of `requests`, or
/// is listed in `unexercised` with the reason this run cannot use it (a
/// re-read after a `409` that did not happen, an apply that creates, which
/// the authorizer checks as `create` but the audit log records as
/// `patch`, ...). `unexercised` names grants as [`Grant`]'s `Display`
/// does (`verb group/resource`, `core` for the core group). Fails naming
/// each grant neither used nor explained, and each explanation that no
/// longer names a grant (an explanation list must not go stale).
pub fn assert_least_privilege(
    manifests: &str,
    requests: &[AuditedRequest],
    unexercised: &[(&str, &str)],
    what: &str,
) {
    let grants = match granted(manifests) {
        Ok(grants) => grants,
        Err(error) => panic!("{what}: cannot read the generated RBAC: {error}"),
    };
    let unused: Vec<String> = unused(&grants, requests)
        .iter()
        .map(ToString::to_string)
        .collect();
    let unexplained: Vec<&String> = unused
        .iter()
        .filter(|grant| !unexercised.iter().any(|(g, _)| g == grant))
        .collect();
    assert!(
        unexplained.is_empty(),
        "{what}: the generated RBAC grants what the run never used and no reason explains: {unexplained:?}; drop the grant, or explain why a run cannot use it"
    );
    let all: Vec<String> = grants.iter().map(ToString::to_string).collect();
    let stale: Vec<&str> = unexercised
        .iter()
        .map(|(grant, _)| *grant)
        .filter(|grant| !all.iter().any(|g| g == grant))
        .collect();
    assert!(
        stale.is_empty(),
        "{what}: explained as unexercised but not granted at all: {stale:?}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD_READER: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get, list]\n";

    fn listed_pods() -> Vec<AuditedRequest> {
        vec![AuditedRequest {
            verb: "list".into(),
            group: String::new(),
            resource: "pods".into(),
            namespace: String::new(),
            name: String::new(),
            code: 200,
            time: String::new(),
        }]
    }

    #[test]
    fn a_grant_neither_used_nor_explained_is_not_least_privilege() {
        let failed = std::panic::catch_unwind(|| {
            assert_least_privilege(POD_READER, &listed_pods(), &[], "reader");
        });
        let message = failed.unwrap_err();
        let message = message.downcast_ref::<String>().unwrap();
        assert!(message.contains("[\"get core/pods\"]"), "{message}");
        assert_least_privilege(
            POD_READER,
            &listed_pods(),
            &[("get core/pods", "re-read after a 409")],
            "reader",
        );
    }

    #[test]
    fn an_explanation_of_a_grant_that_is_not_there_is_stale() {
        let failed = std::panic::catch_unwind(|| {
            assert_least_privilege(
                POD_READER,
                &listed_pods(),
                &[("get core/pods", "re-read"), ("patch core/pods", "gone")],
                "reader",
            );
        });
        let message = failed.unwrap_err();
        let message = message.downcast_ref::<String>().unwrap();
        assert!(message.contains("patch core/pods"), "{message}");
    }

    #[test]
    fn arguments_expand_the_containers_environment_as_the_kubelet_does() {
        let env = BTreeMap::from([("POD_NAME".to_owned(), "p-1".to_owned())]);
        assert_eq!(expand("--node=$(POD_NAME)", &env), "--node=p-1");
        assert_eq!(expand("--x=$(UNSET)", &env), "--x=$(UNSET)");
        assert_eq!(expand("a$$(POD_NAME)b", &env), "a$(POD_NAME)b");
        assert_eq!(expand("$", &env), "$");
    }

    #[test]
    fn flags_are_replaced_in_both_spellings_and_switches_dropped() {
        let mut args: Vec<String> = ["--a=1", "--b", "2", "--leader-elect", "--c=3"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        set_flag(&mut args, "--b", "5");
        set_flag(&mut args, "--a", "4");
        remove_flag(&mut args, "--leader-elect");
        assert_eq!(args, ["--c=3", "--b=5", "--a=4"]);
    }

    #[test]
    fn cluster_rbac_names_get_the_suffix_and_rules_stay() {
        let mut objects = vec![
            serde_json::json!({"kind": "ClusterRole", "metadata": {"name": "c"}, "rules": [1]}),
            serde_json::json!({"kind": "ClusterRoleBinding", "metadata": {"name": "c"},
                "roleRef": {"kind": "ClusterRole", "name": "c"}}),
            serde_json::json!({"kind": "RoleBinding", "metadata": {"name": "r", "namespace": "n"},
                "roleRef": {"kind": "ClusterRole", "name": "view"}}),
            serde_json::json!({"kind": "Role", "metadata": {"name": "r", "namespace": "n"}}),
        ];
        rename_cluster_rbac(&mut objects, "ns1");
        assert_eq!(objects[0]["metadata"]["name"], "c-ns1");
        assert_eq!(objects[0]["rules"], serde_json::json!([1]));
        assert_eq!(objects[1]["metadata"]["name"], "c-ns1");
        assert_eq!(objects[1]["roleRef"]["name"], "c-ns1");
        assert_eq!(objects[2]["roleRef"]["name"], "view");
        assert_eq!(objects[3]["metadata"]["name"], "r");
    }

    #[test]
    fn the_container_environment_follows_the_downward_api() {
        let deployed = Deployed {
            applied: vec![],
            workload: Some(serde_json::json!({
                "kind": "DaemonSet", "metadata": {"name": "c", "namespace": "ns"},
                "spec": {"template": {"spec": {"serviceAccountName": "c", "containers": [{
                    "args": ["--node=$(NODE_NAME)", "--ns=$(POD_NAMESPACE)"],
                    "env": [
                        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        {"name": "PLAIN", "value": "v"},
                    ]}]}}}
            })),
        };
        let pod = Pod {
            name: "c-x",
            node: "n1",
        };
        assert_eq!(
            deployed.container_args(&pod),
            vec!["--node=n1".to_owned(), "--ns=ns".to_owned()]
        );
        assert_eq!(
            deployed.service_account(),
            Some(("ns".to_owned(), "c".to_owned()))
        );
        assert!(
            deployed
                .container_env(&pod)
                .contains(&("PLAIN".to_owned(), "v".to_owned()))
        );
    }
}
