//! Live mode: the objects a command needs, listed from a cluster instead of
//! read from `-f` files, into the same [`Inventory`].
//!
//! - `--kubeconfig FILE` (with `--context`), `--context` alone (the default
//!   kubeconfig: `KUBECONFIG` or `~/.kube/config`), or `--live` (the default
//!   kubeconfig, else the in-cluster service account) select it; so does
//!   running as the `kubectl-policy` plugin without `-f`.
//! - Each command declares its kinds ([`kinds::needs`]); each is listed in
//!   pages of `--chunk-size` objects (`limit` and `continue`), cluster-wide
//!   or, for the Velero kinds and the node-agent ConfigMap, in Velero's
//!   namespace (`--namespace`).
//! - Every page goes through [`manifest::add_value`], the reader's own
//!   decoding of a `kind: List` document, so both modes build the same
//!   inventory from the same objects.
//! - Only `list` requests are made. A kind the user may not list (403),
//!   that the server does not serve (404: its CRD is not installed) or whose
//!   list the server fails (any other status) is a note on standard error
//!   and the command goes on without it, recording why in the inventory
//!   ([`crate::completeness`]: the output states it, and an answer that
//!   depends on a forbidden or failed kind exits 3). A server that cannot be
//!   reached, or does not answer within `--request-timeout`, ends the run
//!   with one line naming the server or the file.
//!
//! policyctl is synchronous; a current-thread tokio runtime is built only
//! here.

pub mod kinds;
pub mod rbac;

use std::io::Write;

use kube::api::ListParams;
use serde_json::Value;

use crate::cli::{Command, GlobalArgs};
pub use crate::cli::{DEFAULT_CHUNK_SIZE, LiveArgs};
use crate::error::CommandError;
use crate::manifest::{self, Inventory, Origin};
use crate::reading::{Status, Unread};

pub use kinds::{Kind, Needs, Resource, Scope};

/// Velero's namespace when `--namespace` is not given.
pub const DEFAULT_VELERO_NAMESPACE: &str = "velero";

/// Whether this run reads a cluster rather than files.
pub fn requested(global: &GlobalArgs) -> bool {
    let live = &global.live;
    live.kubeconfig.is_some()
        || live.context.is_some()
        || live.live
        || (live.kubectl_plugin && global.filenames.is_empty())
}

/// Checks the live-only options are not given to a run that reads files.
pub fn check_file_mode(global: &GlobalArgs) -> Result<(), CommandError> {
    if let Some(namespace) = &global.live.namespace {
        return Err(CommandError::Usage(format!(
            "--namespace {namespace} applies to live mode only (--kubeconfig, --context or --live); with -f every object of the files is read"
        )));
    }
    Ok(())
}

/// Lists the kinds `command` needs from the cluster into an inventory.
/// Notes about kinds that cannot be listed go to `stderr`.
pub fn load(
    global: &GlobalArgs,
    command: &Command,
    stderr: &mut dyn Write,
) -> Result<Inventory, CommandError> {
    let kinds = match kinds::needs(command) {
        Needs::Kinds(kinds) => kinds,
        Needs::Nothing => return Ok(Inventory::default()),
    };
    let namespace = global
        .live
        .namespace
        .clone()
        .unwrap_or_else(|| DEFAULT_VELERO_NAMESPACE.to_owned());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            CommandError::Input(format!("cannot start the runtime for live mode: {error}"))
        })?;
    runtime.block_on(async {
        let (client, server) = client(&global.live).await?;
        let mut inventory = Inventory::default();
        inventory.reading.live = true;
        for kind in kinds.iter().copied() {
            // The node-agent and repository-maintenance ConfigMaps may be
            // named in other namespaces (`--config-map NAMESPACE/NAME`,
            // `--maintenance-config-map NAMESPACE/NAME`); the ledger is in
            // Velero's. So may the HostInventory ConfigMap
            // (`--inventory-config-map NAMESPACE/NAME`).
            let mut namespaces = vec![namespace.as_str()];
            if kind == Kind::ConfigMap {
                let inventory_config_map = global
                    .inventory_config_map
                    .as_ref()
                    .filter(|_| kinds::reads_host_inventory(command));
                let named = [
                    global.config_map.as_ref(),
                    global.maintenance_config_map.as_ref(),
                    inventory_config_map,
                ];
                for other in named
                    .into_iter()
                    .filter_map(|config_map| config_map?.namespace.as_deref())
                {
                    if !namespaces.contains(&other) {
                        namespaces.push(other);
                    }
                }
            }
            for namespace in namespaces {
                let listed = List {
                    client: &client,
                    server: &server,
                    resource: kind.resource(),
                    namespace,
                    chunk_size: global.live.chunk_size,
                    timeout: global.live.request_timeout,
                };
                if let Some((status, note)) = listed.add_to(&mut inventory).await? {
                    // If standard error is gone there is nowhere to note it.
                    let _ = writeln!(stderr, "{note}");
                    inventory.reading.note_unread(
                        kind.reading_key(),
                        Unread {
                            status,
                            what: listed.what(),
                        },
                    );
                }
            }
        }
        // The Velero server's image says which Velero version the answers
        // follow; commands that do not list Deployments read just that one.
        if global.velero_version.is_none()
            && kinds.contains(&Kind::ConfigMap)
            && !kinds.contains(&Kind::Deployment)
            && !kinds::reads_host_inventory(command)
        {
            let listed = List {
                client: &client,
                server: &server,
                resource: Kind::Deployment.resource(),
                namespace: &namespace,
                chunk_size: 1,
                timeout: global.live.request_timeout,
            };
            listed.add_velero_deployment(&mut inventory).await;
        }
        // The API server's release is the one whose kube-scheduler the
        // scheduling answers follow, unless the flag names one.
        if global.kubernetes_version.is_none() && kinds::simulates_scheduler(command) {
            inventory.server_version =
                server_version(&client, global.live.request_timeout, stderr).await;
        }
        Ok(inventory)
    })
}

/// The API server's `/version`; when it cannot be read (in time), a note
/// says so and the answers follow the newest supported release.
async fn server_version(
    client: &kube::Client,
    timeout: crate::timeout::RequestTimeout,
    stderr: &mut dyn Write,
) -> Option<crate::release::ServerVersion> {
    let answer = client.apiserver_version();
    let read = match timeout.0 {
        None => answer.await.map_err(|error| chain(&error)),
        Some(limit) => match tokio::time::timeout(limit, answer).await {
            Ok(result) => result.map_err(|error| chain(&error)),
            Err(_) => Err(format!("no answer within {}s", limit.as_secs())),
        },
    };
    match read {
        Ok(info) => Some(crate::release::ServerVersion {
            major: info.major,
            minor: info.minor,
            git_version: info.git_version,
        }),
        Err(error) => {
            // If standard error is gone there is nowhere to note it.
            let _ = writeln!(
                stderr,
                "note: cannot read the API server's /version ({error}); the scheduling answers follow Kubernetes {}, the newest supported release (set --kubernetes-version to choose)",
                kube_scheduler_sim::KubernetesVersion::LATEST
            );
            None
        }
    }
}

/// The client of the options, and the server URL for messages.
async fn client(args: &LiveArgs) -> Result<(kube::Client, String), CommandError> {
    use kube::config::{Config, KubeConfigOptions, Kubeconfig};
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..KubeConfigOptions::default()
    };
    let context = args
        .context
        .as_deref()
        .map(|c| format!(" (context {c})"))
        .unwrap_or_default();
    let config = match (&args.kubeconfig, &args.context) {
        (Some(path), _) => {
            let file = path.display();
            let kubeconfig = Kubeconfig::read_from(path).map_err(|error| {
                CommandError::Input(format!(
                    "--kubeconfig {file}: cannot read the kubeconfig: {}",
                    chain_keeping_lines(&error)
                ))
            })?;
            let contexts = missing_context_hint(&kubeconfig, args.context.as_deref());
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|error| {
                    CommandError::Input(format!(
                        "--kubeconfig {file}{context}: {}{contexts}",
                        chain(&error)
                    ))
                })?
        }
        (None, Some(_)) => Config::from_kubeconfig(&options).await.map_err(|error| {
            let contexts = Kubeconfig::read()
                .map(|kubeconfig| missing_context_hint(&kubeconfig, args.context.as_deref()))
                .unwrap_or_default();
            CommandError::Input(format!(
                "the default kubeconfig (KUBECONFIG or ~/.kube/config){context}: {}{contexts}",
                chain(&error)
            ))
        })?,
        (None, None) => Config::infer().await.map_err(|error| {
            CommandError::Input(format!(
                "--live: no cluster found (neither the default kubeconfig, KUBECONFIG or ~/.kube/config, nor an in-cluster service account): {}",
                chain(&error)
            ))
        })?,
    };
    let mut config = config;
    if let Some(limit) = args.request_timeout.0 {
        // The limit bounds each request as a whole (see `List::page`). The
        // client's own limits (connecting with TLS, each read and write)
        // are set just past it, so that they never fire first with a
        // message that does not name --request-timeout, and so that no
        // default of the client is shorter than what the user asked for.
        let past = limit.saturating_add(std::time::Duration::from_secs(1));
        config.connect_timeout = Some(past);
        config.read_timeout = Some(past);
        config.write_timeout = Some(past);
    }
    let server = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_owned();
    let client = kube::Client::try_from(config).map_err(|error| {
        CommandError::Input(format!(
            "cannot make a client for {server}: {}",
            chain(&error)
        ))
    })?;
    Ok((client, server))
}

/// One kind to list.
struct List<'a> {
    client: &'a kube::Client,
    server: &'a str,
    resource: Resource,
    namespace: &'a str,
    chunk_size: u32,
    timeout: crate::timeout::RequestTimeout,
}

/// Why a list failed.
enum ListError {
    /// The client or the server said so.
    Kube(kube::Error),
    /// No whole answer within `--request-timeout`.
    TimedOut(std::time::Duration),
}

impl List<'_> {
    /// Lists every page of the first version the server serves and adds
    /// the objects; `Some((status, note))` when the kind cannot be listed
    /// (403, 404, or another status of the server).
    async fn add_to(
        &self,
        inventory: &mut Inventory,
    ) -> Result<Option<(Status, String)>, CommandError> {
        let resource = &self.resource;
        let mut versions = resource.versions.iter().peekable();
        while let Some(version) = versions.next() {
            let path = resource.list_path(version, self.namespace);
            match self.pages(&path).await {
                Ok(pages) => {
                    for (index, page) in pages.into_iter().enumerate() {
                        let origin = Origin {
                            file: format!("{}{path} (live)", self.server),
                            document: index + 1,
                            item: None,
                        };
                        manifest::add_value(inventory, origin, page)?;
                    }
                    return Ok(None);
                }
                Err(ListError::Kube(kube::Error::Api(status)))
                    if status.code == 404 && versions.peek().is_some() => {}
                Err(ListError::Kube(kube::Error::Api(status)))
                    if matches!(status.code, 403 | 404) =>
                {
                    let code = if status.code == 403 {
                        Status::Forbidden
                    } else {
                        Status::NotServed
                    };
                    return Ok(Some((code, self.note(status.code))));
                }
                // The server answered, but not with the list (a 500, a
                // 429 after its retries, a webhook's or an aggregated API's
                // failure): this kind is missing, the others may not be.
                // 401 means the credentials are wrong for every kind.
                Err(ListError::Kube(kube::Error::Api(status))) if status.code != 401 => {
                    let message =
                        format!("{} ({}): {}", status.reason, status.code, status.message)
                            .replace('\n', " ");
                    let note = format!(
                        "note: cannot list {}: the server answered {message}; going on without them",
                        self.what()
                    );
                    return Ok(Some((Status::Failed(message), note)));
                }
                Err(ListError::TimedOut(limit)) => {
                    return Err(CommandError::Input(format!(
                        "cannot list {} from {}: no answer within {limit:?} (--request-timeout); is the server reachable and serving? --request-timeout 0 waits without limit",
                        self.what(),
                        self.server,
                    )));
                }
                Err(ListError::Kube(error)) => {
                    return Err(CommandError::Input(format!(
                        "cannot list {}{} from {}: {}",
                        resource.display_name(),
                        self.where_(),
                        self.server,
                        chain(&error)
                    )));
                }
            }
        }
        Ok(None)
    }

    /// Adds the Velero server Deployment (`velero` in this namespace) when
    /// the server gives it; anything else (forbidden, absent, slow) leaves
    /// the version to its default, which the output states.
    async fn add_velero_deployment(&self, inventory: &mut Inventory) {
        let path = format!("/apis/apps/v1/namespaces/{}/deployments", self.namespace);
        let params = ListParams::default().fields("metadata.name=velero");
        let Ok(request) = kube::core::Request::new(&path).list(&params) else {
            return;
        };
        if let Ok(page) = self.page(request).await {
            let origin = Origin {
                file: format!("{}{path} (live)", self.server),
                document: 1,
                item: None,
            };
            // A page the reader refuses only loses the version hint.
            let _ = manifest::add_value(inventory, origin, page);
        }
    }

    /// Every page of one list, following `continue`.
    async fn pages(&self, path: &str) -> Result<Vec<Value>, ListError> {
        let mut pages = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut params = ListParams::default().limit(self.chunk_size);
            if let Some(token) = &token {
                params = params.continue_token(token);
            }
            let request = kube::core::Request::new(path)
                .list(&params)
                .map_err(|error| ListError::Kube(kube::Error::BuildRequest(error)))?;
            let page = self.page(request).await?;
            token = page
                .pointer("/metadata/continue")
                .and_then(Value::as_str)
                .filter(|token| !token.is_empty())
                .map(str::to_owned);
            pages.push(page);
            if token.is_none() {
                return Ok(pages);
            }
        }
    }

    /// One request, bounded as a whole by `--request-timeout`: connecting,
    /// TLS, the response headers and the whole body.
    async fn page(&self, request: http::Request<Vec<u8>>) -> Result<Value, ListError> {
        let answer = self.client.request::<Value>(request);
        match self.timeout.0 {
            None => answer.await.map_err(ListError::Kube),
            Some(limit) => match tokio::time::timeout(limit, answer).await {
                Ok(page) => page.map_err(ListError::Kube),
                Err(_) => Err(ListError::TimedOut(limit)),
            },
        }
    }

    /// The kind and where it is listed, for messages.
    fn what(&self) -> String {
        format!("{}{}", self.resource.display_name(), self.where_())
    }

    fn where_(&self) -> String {
        match self.resource.scope {
            Scope::VeleroNamespace => format!(" in namespace {}", self.namespace),
            Scope::Cluster | Scope::AllNamespaces => String::new(),
        }
    }

    fn note(&self, code: u16) -> String {
        let why = if code == 403 {
            "forbidden (403): the user may not list them (policyctl rbac prints the read-only roles live mode needs)"
        } else {
            "not found (404): the server does not serve this kind (is its CustomResourceDefinition installed?)"
        };
        format!(
            "note: cannot list {}{}: {why}; going on without them",
            self.resource.display_name(),
            self.where_()
        )
    }
}

/// An error and its sources on one line.
/// When `--context` names a context `kubeconfig` lacks: the contexts it
/// has, to choose from (as `kubectl config get-contexts` lists them).
fn missing_context_hint(kubeconfig: &kube::config::Kubeconfig, wanted: Option<&str>) -> String {
    let Some(wanted) = wanted else {
        return String::new();
    };
    let names: Vec<&str> = kubeconfig
        .contexts
        .iter()
        .map(|context| context.name.as_str())
        .collect();
    if names.contains(&wanted) {
        String::new()
    } else if names.is_empty() {
        format!("; there is no context {wanted:?}: the kubeconfig defines no contexts")
    } else {
        format!(
            "; there is no context {wanted:?}: the kubeconfig's contexts are {}",
            names.join(", ")
        )
    }
}

/// [`chain`] keeping the line breaks of the messages: a parser's excerpt
/// of the offending lines stays readable.
fn chain_keeping_lines(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(next) = source {
        let message = next.to_string();
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        source = next.source();
    }
    text
}

/// An error and its causes on one line.
fn chain(error: &dyn std::error::Error) -> String {
    chain_keeping_lines(error).replace('\n', " ")
}
