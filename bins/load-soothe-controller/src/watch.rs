//! Watch tasks: one per load kind and one per ConfigMap, all feeding one
//! channel of [`Input`]s that the decision loop owns.

use controller_kit::ApiErrorKind;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube_adapters::velero::{LoadObject, load};
use load_soothe::{Load, LoadId, LoadKind};
use tokio::sync::mpsc::UnboundedSender;

use crate::config::Config;

/// What the watches report.
#[derive(Debug)]
pub(crate) enum Input {
    /// A load was created or changed.
    Apply(Load),
    /// A load was deleted.
    Delete(LoadId),
    /// A (re-)list of one kind finished: the complete set of that kind.
    Resync(LoadKind, Vec<Load>),
    /// The node-agent ConfigMap as it is now (`None`: absent).
    NodeAgentConfig(Option<ConfigMap>),
    /// The ledger ConfigMap as it is now (`None`: absent).
    Ledger(Option<ConfigMap>),
    /// A watch failed (it retries with backoff).
    WatchError(String),
}

/// Which ConfigMap a watch follows.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Watched {
    NodeAgentConfig,
    Ledger,
}

pub(crate) fn spawn_load_watch<K: LoadObject>(
    client: kube::Client,
    config: Config,
    tx: UnboundedSender<Input>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let api: Api<K> = Api::namespaced(client, &config.namespace);
        let mut stream =
            std::pin::pin!(watcher::watcher(api, watcher::Config::default()).default_backoff());
        let mut buffer: Vec<Load> = Vec::new();
        while let Some(event) = stream.next().await {
            let input = match event {
                Ok(Event::Apply(obj)) => Input::Apply(load(&obj, config.gate_scope())),
                Ok(Event::Delete(obj)) => Input::Delete(load(&obj, config.gate_scope()).id),
                Ok(Event::Init) => {
                    buffer.clear();
                    continue;
                }
                Ok(Event::InitApply(obj)) => {
                    buffer.push(load(&obj, config.gate_scope()));
                    continue;
                }
                Ok(Event::InitDone) => Input::Resync(K::KIND, std::mem::take(&mut buffer)),
                Err(e) => Input::WatchError(format!("{} watch: {e}", K::KIND)),
            };
            if tx.send(input).is_err() {
                return;
            }
        }
    })
}

pub(crate) fn spawn_config_map_watch(
    client: kube::Client,
    namespace: &str,
    name: &str,
    which: Watched,
    tx: UnboundedSender<Input>,
) -> tokio::task::JoinHandle<()> {
    let api: Api<ConfigMap> = Api::namespaced(client, namespace);
    let selector = format!("metadata.name={name}");
    let what = name.to_owned();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(
            watcher::watcher(api, watcher::Config::default().fields(&selector)).default_backoff()
        );
        let mut buffer: Option<ConfigMap> = None;
        let wrap = |cm: Option<ConfigMap>| match which {
            Watched::NodeAgentConfig => Input::NodeAgentConfig(cm),
            Watched::Ledger => Input::Ledger(cm),
        };
        while let Some(event) = stream.next().await {
            let input = match event {
                Ok(Event::Apply(cm)) => wrap(Some(cm)),
                Ok(Event::Delete(_)) => wrap(None),
                Ok(Event::Init) => {
                    buffer = None;
                    continue;
                }
                Ok(Event::InitApply(cm)) => {
                    buffer = Some(cm);
                    continue;
                }
                Ok(Event::InitDone) => wrap(buffer.take()),
                Err(e) => Input::WatchError(config_map_watch_error(&what, which, &e)),
            };
            if tx.send(input).is_err() {
                return;
            }
        }
    })
}

/// The message for a failed ConfigMap watch. A 403 gets the likely fix: the
/// generated Role grants these ConfigMaps by name (`resourceNames`), so a
/// changed `--node-agent-configmap`/`--ledger-configmap` needs the Role
/// changed too.
fn config_map_watch_error(name: &str, which: Watched, error: &watcher::Error) -> String {
    if ApiErrorKind::of_watcher(error) != ApiErrorKind::Forbidden {
        return format!("ConfigMap {name} watch: {error}");
    }
    let flag = match which {
        Watched::NodeAgentConfig => "--node-agent-configmap",
        Watched::Ledger => "--ledger-configmap",
    };
    format!(
        "ConfigMap {name} watch: {error}; the Role grants ConfigMaps by name: add {name:?} to its resourceNames (or set {flag} back to the name it lists), see docs/operations.md"
    )
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::*;

    fn list_failed(status: Status) -> watcher::Error {
        watcher::Error::InitialListFailed(kube::Error::Api(status.boxed()))
    }

    #[test]
    fn a_forbidden_config_map_watch_names_the_role_fix() {
        let forbidden = list_failed(
            Status::failure(
                "configmaps \"my-config\" is forbidden: User cannot list resource \"configmaps\"",
                "Forbidden",
            )
            .with_code(403),
        );
        let message = config_map_watch_error("my-config", Watched::NodeAgentConfig, &forbidden);
        assert!(
            message.contains("add \"my-config\" to its resourceNames"),
            "{message}"
        );
        assert!(message.contains("--node-agent-configmap"), "{message}");
        let ledger = config_map_watch_error("my-ledger", Watched::Ledger, &forbidden);
        assert!(ledger.contains("--ledger-configmap"), "{ledger}");
    }

    #[test]
    fn other_config_map_watch_errors_carry_no_rbac_hint() {
        let failed = list_failed(Status::failure("etcd is down", "InternalError").with_code(500));
        let message = config_map_watch_error("my-config", Watched::NodeAgentConfig, &failed);
        assert!(
            message.starts_with("ConfigMap my-config watch: "),
            "{message}"
        );
        assert!(!message.contains("resourceNames"), "{message}");
    }
}
