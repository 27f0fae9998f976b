//! The index: everything one gate knows, kept up to date from the watches
//! (the four load kinds, the node-agent ConfigMap and, in exact mode, the
//! ledger ConfigMap) and from the controller's own writes and reads.
//! Synchronous and free of I/O: unit-tested by feeding it objects.
//!
//! - loads go into a `load_soothe::CountCache`; a change older than the
//!   state held (by resourceVersion, compared as integers: etcd revisions)
//!   is ignored, so a replica never forgets its own accepts; a load
//!   recreated under the same name (another UID) replaces the old one;
//! - the node-agent ConfigMap gives the gate's `prepareQueueLength`; an
//!   unreadable edit keeps the last good value (if none was ever read,
//!   nothing is decided);
//! - the ledger (exact mode) is kept with the newest resourceVersion; an
//!   unparsable one holds every load until it is fixed or deleted;
//! - tombstones of deleted loads are kept only while the ledger lists them
//!   (`load_soothe::retain_tombstones`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use load_soothe::{CountCache, ExactInput, GateConfig, Load, LoadId, LoadKind, RecountPolicy};
use load_soothe::{ExactView, Ledger, LedgerSnapshot};
use velero_api::{DataDownload, DataUpload, PodVolumeBackup, PodVolumeRestore};

use controller_kit::ApiErrorKind;
use controller_kit::snapshot::{IndexResource, Reconciler, Runtime, Watch};

use crate::config::{Config, GateMode};
use kube_adapters::velero::{LoadObject, load};

/// The ledger as this instance last read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LedgerState {
    /// Read (or absent: an empty snapshot without resourceVersion).
    Valid(LedgerSnapshot),
    /// Present but unreadable: what is wrong.
    Invalid(String),
}

/// One gate's view (see the module docs).
#[derive(Debug)]
pub struct GateIndex {
    config: Config,
    gate: GateConfig,
    /// False while the node-agent ConfigMap exists but none of its versions
    /// could be read yet: nothing is decided then.
    gate_known: bool,
    /// Whether a version of the node-agent ConfigMap (or its absence) was
    /// ever taken.
    config_read: bool,
    cache: CountCache,
    ledger: LedgerState,
    by_name: BTreeMap<(LoadKind, String, String), LoadId>,
    config_errors: u64,
}

fn rv_number(rv: Option<&str>) -> Option<u64> {
    rv.and_then(|s| s.parse().ok())
}

/// Whether `incoming` is older than `current` (both numeric).
fn is_older(incoming: Option<&str>, current: Option<&str>) -> bool {
    matches!((rv_number(incoming), rv_number(current)), (Some(i), Some(c)) if i < c)
}

impl GateIndex {
    /// An empty view: no loads, the node-agent ConfigMap absent (gate
    /// disabled), the ledger absent.
    pub fn new(config: Config) -> Self {
        let mode = config.mode.mode();
        Self {
            gate: GateConfig::new(None, mode),
            gate_known: true,
            config_read: false,
            cache: CountCache::new(RecountPolicy::for_mode(mode)),
            ledger: LedgerState::Valid(LedgerSnapshot::absent()),
            by_name: BTreeMap::new(),
            config_errors: 0,
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The gate configuration in effect; `None` while the node-agent
    /// ConfigMap exists but has never been readable (nothing is decided
    /// then, rather than admitting everything as if the gate were off).
    pub fn gate(&self) -> Option<&GateConfig> {
        self.gate_known.then_some(&self.gate)
    }

    /// The count cache.
    pub fn cache(&self) -> &CountCache {
        &self.cache
    }

    /// The ledger as last read.
    pub fn ledger(&self) -> &LedgerState {
        &self.ledger
    }

    /// How many times the node-agent ConfigMap could not be loaded.
    pub fn config_errors(&self) -> u64 {
        self.config_errors
    }

    /// Exact mode's input to a pass (`None` in optimistic mode).
    pub fn exact_input(&self) -> Option<ExactInput<'_>> {
        if self.config.mode != GateMode::Exact {
            return None;
        }
        Some(match &self.ledger {
            LedgerState::Valid(snapshot) => ExactInput::Read(ExactView {
                ledger: snapshot,
                node: &self.config.node,
            }),
            LedgerState::Invalid(detail) => ExactInput::Unavailable(detail),
        })
    }

    /// Records the state of a load (from a watch, a write response or a GET).
    pub fn apply_load(&mut self, load: Load) {
        if let Some(current) = self.cache.get(&load.id)
            && is_older(
                load.resource_version.as_deref(),
                current.resource_version.as_deref(),
            )
        {
            return;
        }
        let name = (
            load.id.kind,
            load.id.namespace.clone(),
            load.id.name.clone(),
        );
        if let Some(previous) = self.by_name.get(&name)
            && *previous != load.id
        {
            // Recreated under the same name: the old load is gone.
            let previous = previous.clone();
            self.cache.delete(&previous);
        }
        self.by_name.insert(name, load.id.clone());
        self.cache.apply(load);
        self.drop_unneeded_tombstones();
    }

    /// Records the deletion of the load of that kind, namespace and name.
    pub fn delete_load(&mut self, kind: LoadKind, namespace: &str, name: &str) {
        let key = (kind, namespace.to_owned(), name.to_owned());
        if let Some(id) = self.by_name.remove(&key) {
            self.cache.delete(&id);
            self.drop_unneeded_tombstones();
        }
    }

    /// A live read found the load of a ledger entry gone (not found, or
    /// another UID): its slot is free.
    pub fn confirm_deleted(&mut self, id: &LoadId) {
        if self
            .by_name
            .get(&(id.kind, id.namespace.clone(), id.name.clone()))
            == Some(id)
        {
            self.by_name
                .remove(&(id.kind, id.namespace.clone(), id.name.clone()));
        }
        self.cache.confirm_deleted(id);
    }

    fn drop_unneeded_tombstones(&mut self) {
        let ledger = match &self.ledger {
            LedgerState::Valid(snapshot) => Some(&snapshot.ledger),
            LedgerState::Invalid(_) => None,
        };
        load_soothe::retain_tombstones(&mut self.cache, self.config.mode.mode(), ledger);
    }

    fn set_node_agent_config(&mut self, cm: Option<&ConfigMap>) {
        let prepare_queue_length = match cm {
            None => None,
            Some(cm) => match affinity_translate::load_config_map(cm) {
                Ok(loaded) => loaded
                    .config
                    .load_concurrency
                    .and_then(|l| l.prepare_queue_length),
                Err(e) => {
                    self.config_errors += 1;
                    if !self.config_read {
                        self.gate_known = false;
                    }
                    tracing::error!(
                        error = %e,
                        configmap = %self.config.node_agent_config_map,
                        kept = self.gate.enablement.limit().map(|l| l.get()),
                        "cannot load the node-agent ConfigMap; keeping the last good prepareQueueLength"
                    );
                    return;
                }
            },
        };
        let gate = GateConfig::new(prepare_queue_length, self.config.mode.mode());
        if gate != self.gate {
            tracing::info!(
                prepare_queue_length,
                limit = gate.enablement.limit().map(|l| l.get()),
                "prepare queue configuration in effect"
            );
        }
        self.gate = gate;
        self.gate_known = true;
        self.config_read = true;
    }

    /// Takes a ledger ConfigMap, unless it is older than the snapshot held
    /// (`None`: the ledger does not exist; the next admission creates it).
    fn set_ledger(&mut self, cm: Option<&ConfigMap>) {
        let (rv, parsed) = match cm {
            None => (None, Ok(Ledger::empty())),
            Some(cm) => (
                cm.metadata.resource_version.clone(),
                Ledger::from_config_map_data(cm.data.as_ref()),
            ),
        };
        if let LedgerState::Valid(current) = &self.ledger
            && cm.is_some()
            && is_older(rv.as_deref(), current.resource_version.as_deref())
        {
            return;
        }
        self.ledger = match parsed {
            Ok(ledger) => LedgerState::Valid(LedgerSnapshot {
                resource_version: rv,
                ledger,
            }),
            Err(e) => {
                tracing::error!(
                    error = %e,
                    configmap = %self.config.ledger_config_map,
                    "cannot parse the ledger; holding every load until it is fixed or deleted"
                );
                LedgerState::Invalid(format!(
                    "ConfigMap {}/{}: {e}",
                    self.config.namespace, self.config.ledger_config_map
                ))
            }
        };
        self.drop_unneeded_tombstones();
    }
}

impl GateIndex {
    fn apply_object<K: LoadObject>(&mut self, object: &K) {
        let load = load(object, self.config.gate_scope());
        self.apply_load(load);
    }

    fn delete_object<K: LoadObject>(&mut self, key: &ObjectRef<K>) {
        self.delete_load(
            K::KIND,
            key.namespace.as_deref().unwrap_or_default(),
            &key.name,
        );
    }
}

/// The four load kinds feed the same count cache.
macro_rules! index_loads {
    ($($kind:ty),*) => {$(
        impl IndexResource<$kind> for GateIndex {
            fn apply(&mut self, object: $kind) {
                self.apply_object(&object);
            }

            fn delete(&mut self, key: ObjectRef<$kind>) {
                self.delete_object(&key);
            }
        }
    )*};
}

index_loads!(DataUpload, DataDownload, PodVolumeBackup, PodVolumeRestore);

impl IndexResource<ConfigMap> for GateIndex {
    fn apply(&mut self, cm: ConfigMap) {
        let name = cm.metadata.name.as_deref().unwrap_or_default();
        if name == self.config.node_agent_config_map {
            self.set_node_agent_config(Some(&cm));
        } else if name == self.config.ledger_config_map && self.config.mode == GateMode::Exact {
            self.set_ledger(Some(&cm));
        }
    }

    fn delete(&mut self, key: ObjectRef<ConfigMap>) {
        if key.name == self.config.node_agent_config_map {
            self.set_node_agent_config(None);
        } else if key.name == self.config.ledger_config_map && self.config.mode == GateMode::Exact {
            self.set_ledger(None);
        }
    }
}

/// Adds the watches that feed the index: the four load kinds in Velero's
/// namespace, and single-object watches (`metadata.name` field selector) of
/// the node-agent ConfigMap and, in exact mode, the ledger.
pub fn watches<R>(runtime: Runtime<R>, client: &kube::Client, config: &Config) -> Runtime<R>
where
    R: Reconciler<Index = GateIndex>,
{
    let ns = &config.namespace;
    let all = watcher::Config::default;
    let mut runtime = runtime
        .watch(Watch::new(
            Api::<DataUpload>::namespaced(client.clone(), ns),
            all(),
        ))
        .watch(Watch::new(
            Api::<DataDownload>::namespaced(client.clone(), ns),
            all(),
        ))
        .watch(Watch::new(
            Api::<PodVolumeBackup>::namespaced(client.clone(), ns),
            all(),
        ))
        .watch(Watch::new(
            Api::<PodVolumeRestore>::namespaced(client.clone(), ns),
            all(),
        ))
        .watch(config_map_watch(
            client,
            ns,
            &config.node_agent_config_map,
            "--node-agent-configmap",
        ));
    if config.mode == GateMode::Exact {
        runtime = runtime.watch(config_map_watch(
            client,
            ns,
            &config.ledger_config_map,
            "--ledger-configmap",
        ));
    }
    runtime
}

fn config_map_watch(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    flag: &'static str,
) -> Watch<ConfigMap> {
    let what = name.to_owned();
    Watch::new(
        Api::namespaced(client.clone(), namespace),
        watcher::Config::default().fields(&format!("metadata.name={name}")),
    )
    .describe_errors(move |e| config_map_watch_error(&what, flag, e))
}

/// The message for a failed ConfigMap watch. A 403 gets the likely fix: the
/// generated Role grants these ConfigMaps by name (`resourceNames`), so a
/// changed `--node-agent-configmap`/`--ledger-configmap` needs the Role
/// changed too.
fn config_map_watch_error(name: &str, flag: &str, error: &watcher::Error) -> String {
    if ApiErrorKind::of_watcher(error) != ApiErrorKind::Forbidden {
        return format!("ConfigMap {name} watch: {error}");
    }
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
    fn stale_resource_versions_are_detected_numerically_only() {
        assert!(is_older(Some("5"), Some("7")));
        assert!(!is_older(Some("7"), Some("7")));
        assert!(!is_older(Some("8"), Some("7")));
        assert!(!is_older(Some("abc"), Some("7")));
        assert!(!is_older(None, Some("7")));
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
        let message = config_map_watch_error("my-config", "--node-agent-configmap", &forbidden);
        assert!(
            message.contains("add \"my-config\" to its resourceNames"),
            "{message}"
        );
        assert!(message.contains("--node-agent-configmap"), "{message}");
        let ledger = config_map_watch_error("my-ledger", "--ledger-configmap", &forbidden);
        assert!(ledger.contains("--ledger-configmap"), "{ledger}");
    }

    #[test]
    fn other_config_map_watch_errors_carry_no_rbac_hint() {
        let failed = list_failed(Status::failure("etcd is down", "InternalError").with_code(500));
        let message = config_map_watch_error("my-config", "--node-agent-configmap", &failed);
        assert!(
            message.starts_with("ConfigMap my-config watch: "),
            "{message}"
        );
        assert!(!message.contains("resourceNames"), "{message}");
    }
}
