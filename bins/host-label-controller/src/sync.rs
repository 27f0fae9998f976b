//! The watch-driven loop: reflectors feed snapshots to the pure planner and
//! audit; this module carries out their plans (Node patches, Events, the
//! status ConfigMap).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use anti_affinity_placement::labels::{NodeLabelPlan, audit};
use controller_kit::events::EventPublisher;
use controller_kit::server::Readiness;
use controller_kit::{ApiErrorKind, Shutdown};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Node, ObjectReference, Pod};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use kube_adapters::capi::{Machine, host_map};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::cli::{CONTROLLER_NAME, Config, HostSource, STATUS_DATA_KEY};
use crate::error::Error;
use crate::metrics::Metrics;
use crate::report::{self, StatusSummary};
use crate::source;

/// Attempts per Node patch when the API answers 409.
const PATCH_ATTEMPTS: u32 = 5;
/// Wait before retrying a pass that failed; doubled per consecutive
/// failure up to [`MAX_RETRY_AFTER`].
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// Upper bound of the retry wait.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The wait before the next pass after `failures` consecutive failed passes
/// (0 = the last pass succeeded: wait for a change or the resync).
fn retry_wait(failures: u32, resync: Duration) -> Duration {
    if failures == 0 {
        return resync;
    }
    RETRY_AFTER
        .saturating_mul(1 << failures.saturating_sub(1).min(6))
        .min(MAX_RETRY_AFTER)
}

/// A watcher error, counted with a bounded kind.
struct WatchError;
impl controller_kit::metrics::ErrorKind for WatchError {
    fn kind(&self) -> &'static str {
        "watch"
    }
}

fn spawn_watch<K>(
    api: Api<K>,
    config: watcher::Config,
    notify: Arc<Notify>,
    metrics: Metrics,
    shutdown: Shutdown,
) -> (Store<K>, JoinHandle<()>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let stream = watcher(api, config).default_backoff().reflect(writer);
    let handle = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        let stop = shutdown.signalled();
        let mut stop = std::pin::pin!(stop);
        loop {
            tokio::select! {
                event = stream.next() => match event {
                    Some(Ok(_)) => notify.notify_one(),
                    Some(Err(error)) => {
                        tracing::warn!(kind = %K::kind(&()), %error, "watch failed; retrying with backoff");
                        metrics.controller.record_error(&WatchError);
                    }
                    None => return,
                },
                () = &mut stop => return,
            }
        }
    });
    (reader, handle)
}

enum HostStore {
    Machines(Store<Machine>),
    Inventory {
        store: Store<ConfigMap>,
        key: String,
    },
}

struct Stores {
    nodes: Store<Node>,
    pods: Store<Pod>,
    hosts: HostStore,
}

impl Stores {
    async fn wait_until_ready(&self) -> bool {
        let hosts = match &self.hosts {
            HostStore::Machines(s) => s.wait_until_ready().await.is_ok(),
            HostStore::Inventory { store, .. } => store.wait_until_ready().await.is_ok(),
        };
        hosts
            && self.nodes.wait_until_ready().await.is_ok()
            && self.pods.wait_until_ready().await.is_ok()
    }
}

/// Runs until `shutdown` fires.
pub(crate) async fn run_loop(
    client: kube::Client,
    config: Config,
    metrics: Metrics,
    readiness: Readiness,
    shutdown: Shutdown,
) -> Result<(), Error> {
    // Host-relevant changes (Nodes, Machines, inventory) act after the short
    // debounce; Pod churn only matters to the audit and is coalesced longer.
    let notify = Arc::new(Notify::new());
    let pod_notify = Arc::new(Notify::new());
    let watch = |m: &Metrics| (notify.clone(), m.clone(), shutdown.clone());
    let mut tasks = Vec::new();
    let (n, m, s) = watch(&metrics);
    let (nodes, t) = spawn_watch(
        Api::<Node>::all(client.clone()),
        watcher::Config::default(),
        n,
        m,
        s,
    );
    tasks.push(t);
    let (_, m, s) = watch(&metrics);
    let n = pod_notify.clone();
    let (pods, t) = spawn_watch(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default(),
        n,
        m,
        s,
    );
    tasks.push(t);
    let (n, m, s) = watch(&metrics);
    let hosts = match &config.source {
        HostSource::Machines => {
            let (store, t) = spawn_watch(
                Api::<Machine>::all(client.clone()),
                watcher::Config::default(),
                n,
                m,
                s,
            );
            tasks.push(t);
            HostStore::Machines(store)
        }
        HostSource::Inventory { configmap, key } => {
            let (store, t) = spawn_watch(
                Api::<ConfigMap>::namespaced(client.clone(), &configmap.namespace),
                watcher::Config::default().fields(&format!("metadata.name={}", configmap.name)),
                n,
                m,
                s,
            );
            tasks.push(t);
            HostStore::Inventory {
                store,
                key: key.clone(),
            }
        }
    };
    let stores = Stores { nodes, pods, hosts };
    let ready = tokio::select! {
        ready = stores.wait_until_ready() => ready,
        () = shutdown.signalled() => false,
    };
    if ready {
        readiness.set_ready(true);
        tracing::info!("caches synced");
        let mut pass = Pass::new(client, config, metrics, stores);
        let mut failures = 0u32;
        let stop = shutdown.signalled();
        let mut stop = std::pin::pin!(stop);
        loop {
            let wait = {
                let _timer = pass.metrics.controller.reconcile_started();
                match pass.reconcile().await {
                    Ok(()) => failures = 0,
                    Err(error) => {
                        failures = failures.saturating_add(1);
                        tracing::warn!(%error, failures, "pass failed; retrying");
                        pass.metrics.controller.record_error(&error);
                    }
                }
                retry_wait(failures, pass.config.resync)
            };
            let host_change = tokio::select! {
                () = notify.notified() => true,
                () = pod_notify.notified() => false,
                () = tokio::time::sleep(wait) => true,
                () = &mut stop => break,
            };
            if !host_change {
                // Only Pods changed: wait for the audit interval, unless a
                // host-relevant change comes first.
                tokio::select! {
                    () = notify.notified() => {}
                    () = tokio::time::sleep(pass.config.audit_debounce) => {}
                    () = &mut stop => break,
                }
            }
            // Coalesce a burst of watch events into one pass.
            tokio::select! {
                () = tokio::time::sleep(pass.config.debounce) => {}
                () = &mut stop => break,
            }
        }
    }
    for t in tasks {
        t.abort();
    }
    Ok(())
}

struct Pass {
    config: Config,
    metrics: Metrics,
    stores: Stores,
    node_api: Api<Node>,
    status_api: Api<ConfigMap>,
    events: EventPublisher,
    /// Occurrences already reported as Events (reported once each; an
    /// occurrence that disappears and comes back is reported again).
    reported: BTreeSet<String>,
    last_status: Option<String>,
    last_good_inventory: BTreeMap<String, String>,
    last_inventory_problem: Option<String>,
}

/// The JSON merge patch for `plan`, conditioned on `resource_version`:
/// labels to set/remove and the annotation update, nothing else.
pub(crate) fn patch_body(plan: &NodeLabelPlan, resource_version: Option<&str>) -> Value {
    let mut metadata = Map::new();
    if let Some(rv) = resource_version {
        metadata.insert("resourceVersion".into(), json!(rv));
    }
    let mut labels = Map::new();
    for key in &plan.remove {
        labels.insert(key.clone(), Value::Null);
    }
    for (key, value) in &plan.set {
        labels.insert(key.clone(), json!(value));
    }
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    if !plan.annotations.is_empty() {
        let annotations: Map<String, Value> = plan
            .annotations
            .iter()
            .map(|(k, v)| (k.clone(), v.as_ref().map_or(Value::Null, |v| json!(v))))
            .collect();
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    json!({ "metadata": metadata })
}

/// Whether `pod` has pod anti-affinity or topology spread constraints at all
/// (a cheap pre-filter; the audit checks the keys).
fn may_spread_over_hosts(pod: &Pod) -> bool {
    pod.spec.as_ref().is_some_and(|s| {
        s.affinity
            .as_ref()
            .is_some_and(|a| a.pod_anti_affinity.is_some())
            || s.topology_spread_constraints
                .as_ref()
                .is_some_and(|t| !t.is_empty())
    })
}

impl Pass {
    fn new(client: kube::Client, config: Config, metrics: Metrics, stores: Stores) -> Self {
        let events = EventPublisher::new(
            client.clone(),
            CONTROLLER_NAME,
            config.instance.clone(),
            config.dry_run,
        );
        Self {
            node_api: Api::all(client.clone()),
            status_api: Api::namespaced(client, &config.status_configmap.namespace),
            config,
            metrics,
            stores,
            events,
            reported: BTreeSet::new(),
            last_status: None,
            last_good_inventory: BTreeMap::new(),
            last_inventory_problem: None,
        }
    }

    fn source_name(&self) -> String {
        match &self.config.source {
            HostSource::Machines => "machines".into(),
            HostSource::Inventory { configmap, key } => format!("inventory {configmap} ({key})"),
        }
    }

    /// Node name → host. An unusable inventory keeps the last good one.
    fn host_information(&mut self) -> BTreeMap<String, String> {
        match &self.stores.hosts {
            HostStore::Machines(store) => {
                let machines = store.state();
                host_map(machines.iter().map(AsRef::as_ref)).hosts
            }
            HostStore::Inventory { store, key } => {
                let problem = match store.state().first() {
                    None => Some("the inventory ConfigMap does not exist".to_owned()),
                    Some(cm) => match source::hosts_from_inventory(cm, key) {
                        Ok(hosts) => {
                            self.last_good_inventory = hosts;
                            None
                        }
                        Err(e) => Some(e.to_string()),
                    },
                };
                if problem != self.last_inventory_problem {
                    if let Some(p) = &problem {
                        tracing::warn!(problem = %p, "cannot use the host inventory; keeping the last good one");
                    }
                    self.last_inventory_problem = problem;
                }
                self.last_good_inventory.clone()
            }
        }
    }

    async fn reconcile(&mut self) -> Result<(), Error> {
        let hosts = self.host_information();
        let mut nodes: Vec<Node> = self
            .stores
            .nodes
            .state()
            .iter()
            .map(|n| (**n).clone())
            .collect();
        nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut first_error = None;
        for node in &mut nodes {
            let name = node.name_any();
            let Some(host) = hosts.get(&name).filter(|h| !h.is_empty()) else {
                continue;
            };
            let plan = self.config.labels.plan_node(node, host);
            if plan.is_empty() {
                continue;
            }
            self.metrics.node_patches.inc();
            if self.config.dry_run {
                tracing::info!(dry_run = true, node = %name, %host, set = ?plan.set, remove = ?plan.remove, "would patch Node labels");
                let mut labels = node.metadata.labels.take().unwrap_or_default();
                let mut annotations = node.metadata.annotations.take().unwrap_or_default();
                plan.apply(&mut labels, &mut annotations);
                node.metadata.labels = Some(labels);
                node.metadata.annotations = Some(annotations);
                continue;
            }
            match self.patch_node(node.clone(), host).await {
                Ok(updated) => *node = updated,
                Err(error) => {
                    tracing::warn!(node = %name, %error, "could not label Node");
                    first_error.get_or_insert(error);
                }
            }
        }
        self.audit(&nodes, &hosts).await?;
        first_error.map_or(Ok(()), Err)
    }

    /// Patches one Node until its plan for `host` is empty; a 409 re-reads it.
    async fn patch_node(&self, mut node: Node, host: &str) -> Result<Node, Error> {
        let name = node.name_any();
        let params = PatchParams {
            field_manager: Some(CONTROLLER_NAME.into()),
            ..PatchParams::default()
        };
        for _ in 0..PATCH_ATTEMPTS {
            let plan = self.config.labels.plan_node(&node, host);
            if plan.is_empty() {
                return Ok(node);
            }
            let body = patch_body(&plan, node.metadata.resource_version.as_deref());
            match self
                .node_api
                .patch(&name, &params, &Patch::Merge(&body))
                .await
            {
                Ok(updated) => {
                    tracing::info!(node = %name, %host, set = ?plan.set, remove = ?plan.remove, "labelled Node");
                    return Ok(updated);
                }
                Err(error) if ApiErrorKind::of(&error) == ApiErrorKind::Conflict => {
                    self.metrics.node_patch_conflicts.inc();
                    tracing::debug!(node = %name, "Node changed since it was read (409); re-reading");
                    node = self
                        .node_api
                        .get(&name)
                        .await
                        .map_err(|e| Error::kube(format!("re-reading Node {name}"), e))?;
                }
                Err(error) if ApiErrorKind::of(&error) == ApiErrorKind::NotFound => {
                    tracing::debug!(node = %name, "Node was deleted before it could be labelled");
                    return Ok(node);
                }
                Err(error) => return Err(Error::kube(format!("patching Node {name}"), error)),
            }
        }
        Err(Error::Conflicts {
            node: name,
            attempts: PATCH_ATTEMPTS,
        })
    }

    async fn audit(
        &mut self,
        nodes: &[Node],
        hosts: &BTreeMap<String, String>,
    ) -> Result<(), Error> {
        let pods: Vec<Pod> = self
            .stores
            .pods
            .state()
            .iter()
            .filter(|p| may_spread_over_hosts(p))
            .map(|p| (**p).clone())
            .collect();
        let result = audit(nodes, &pods, self.config.labels.keys(), hosts);
        let index: BTreeMap<String, &Pod> = pods.iter().map(|p| (report::pod_key(p), p)).collect();
        let violations = report::violations(&result, &index);
        let without_info = nodes
            .iter()
            .filter(|n| hosts.get(&n.name_any()).is_none_or(String::is_empty))
            .count();
        let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.metrics
            .shared_host_violations
            .set(gauge(violations.len()));
        self.metrics
            .unlabelled_nodes
            .set(gauge(result.unlabelled_nodes.len()));
        self.metrics
            .nodes_without_host_information
            .set(gauge(without_info));

        let keys: Vec<String> = self
            .config
            .labels
            .keys()
            .iter()
            .map(|k| k.as_str().to_owned())
            .collect();
        let mut current = BTreeSet::new();
        for v in &violations {
            let id = format!("shared {} {}", v.host, v.pods.join(","));
            if !self.reported.contains(&id) {
                let event = Event {
                    type_: EventType::Warning,
                    reason: "ReplicasShareHost".into(),
                    note: Some(v.note()),
                    action: "Audit".into(),
                    secondary: None,
                };
                if !self.publish(&event, &v.owner).await {
                    continue;
                }
            }
            current.insert(id);
        }
        for name in &result.unlabelled_nodes {
            let id = format!("unlabelled {name}");
            if !self.reported.contains(&id) {
                let Some(node) = nodes
                    .iter()
                    .find(|n| n.metadata.name.as_ref() == Some(name))
                else {
                    continue;
                };
                let why = if hosts.get(name).is_some_and(|h| !h.is_empty()) {
                    "the controller could not label it yet"
                } else {
                    "the host information source has no host for it"
                };
                let event = Event {
                    type_: EventType::Warning,
                    reason: "HostLabelMissing".into(),
                    note: Some(format!(
                        "Node lacks host label(s) {}: {why} ({}); anti-affinity and topology spread on these keys ignore it",
                        keys.join(", "),
                        self.source_name()
                    )),
                    action: "Audit".into(),
                    secondary: None,
                };
                if !self.publish(&event, &node.object_ref(&())).await {
                    continue;
                }
            }
            current.insert(id);
        }
        self.reported = current;

        let summary = StatusSummary {
            source: self.source_name(),
            label_keys: keys,
            nodes: nodes.len(),
            nodes_with_host_information: nodes.len() - without_info,
            unlabelled_nodes: result.unlabelled_nodes.clone(),
            shared_hosts: report::summary_violations(&violations),
        };
        self.write_status(summary.to_json()).await
    }

    /// Publishes an Event; `false` if it failed (it is retried on the next pass).
    async fn publish(&self, event: &Event, reference: &ObjectReference) -> bool {
        match self.events.publish(event, reference).await {
            Ok(()) => {
                self.metrics.events.inc();
                true
            }
            Err(error) => {
                tracing::warn!(%error, reason = %event.reason, "could not publish Event");
                false
            }
        }
    }

    async fn write_status(&mut self, content: String) -> Result<(), Error> {
        if self.last_status.as_ref() == Some(&content) {
            return Ok(());
        }
        let target = &self.config.status_configmap;
        if self.config.dry_run {
            tracing::info!(dry_run = true, configmap = %target, summary = %content, "would write the audit summary");
        } else {
            let cm = json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": target.name,
                    "namespace": target.namespace,
                    "labels": { "app.kubernetes.io/name": CONTROLLER_NAME },
                },
                "data": { STATUS_DATA_KEY: content },
            });
            self.status_api
                .patch(
                    &target.name,
                    &PatchParams::apply(CONTROLLER_NAME).force(),
                    &Patch::Apply(&cm),
                )
                .await
                .map_err(|e| Error::kube(format!("writing the status ConfigMap {target}"), e))?;
        }
        self.last_status = Some(content);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_exponentially_up_to_a_minute() {
        let resync = Duration::from_secs(600);
        let waits: Vec<u64> = (0..10).map(|f| retry_wait(f, resync).as_secs()).collect();
        assert_eq!(waits, [600, 1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    #[test]
    fn patch_body_touches_only_labels_and_annotation_and_carries_the_version() {
        let plan = NodeLabelPlan {
            set: [("a/host".to_owned(), "esx1".to_owned())].into(),
            remove: vec!["old/host".into()],
            annotations: [("x/managed".to_owned(), Some("a/host".to_owned()))].into(),
        };
        let body = patch_body(&plan, Some("42"));
        assert_eq!(
            body,
            json!({"metadata": {
                "resourceVersion": "42",
                "labels": {"a/host": "esx1", "old/host": null},
                "annotations": {"x/managed": "a/host"},
            }})
        );
        let removal = NodeLabelPlan {
            annotations: [("x/managed".to_owned(), None)].into(),
            ..NodeLabelPlan::default()
        };
        assert_eq!(
            patch_body(&removal, None),
            json!({"metadata": {"annotations": {"x/managed": null}}})
        );
    }

    mod properties {
        use std::collections::BTreeMap;

        use anti_affinity_placement::labels::plan_node_labels;
        use proptest::prelude::*;
        use serde_json::{Value, json};

        use super::super::patch_body;

        const ANNOTATION: &str = "x.example/managed";
        const OURS: [&str; 3] = ["a.example/host", "b.example/host", "c.example/host"];
        const FOREIGN: [&str; 3] = ["team", "kubernetes.io/hostname", "other.example/host"];

        fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
            let keys: Vec<&str> = OURS.iter().chain(FOREIGN.iter()).copied().collect();
            proptest::collection::btree_map(
                proptest::sample::select(keys).prop_map(str::to_owned),
                "[a-z0-9]{1,4}",
                0..6,
            )
        }

        fn subset_of_ours() -> impl Strategy<Value = Vec<String>> {
            proptest::sample::subsequence(OURS.to_vec(), 0..=3)
                .prop_map(|v| v.into_iter().map(str::to_owned).collect())
        }

        fn as_map(v: &Value) -> BTreeMap<String, String> {
            v.as_object()
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                        .collect()
                })
                .unwrap_or_default()
        }

        proptest! {
            #[test]
            fn merge_patch_of_a_plan_has_the_effect_of_the_plan_and_spares_foreign_labels(
                labels in labels(),
                recorded in subset_of_ours(),
                desired_keys in subset_of_ours(),
                host in "[a-z0-9]{1,6}",
            ) {
                let mut annotations = BTreeMap::from([("keep".to_owned(), "me".to_owned())]);
                if !recorded.is_empty() {
                    annotations.insert(ANNOTATION.to_owned(), recorded.join(","));
                }
                let desired: BTreeMap<String, String> =
                    desired_keys.iter().map(|k| (k.clone(), host.clone())).collect();
                let plan = plan_node_labels(&labels, &annotations, &desired, ANNOTATION);

                let mut node = json!({"metadata": {"labels": labels, "annotations": annotations, "resourceVersion": "7"}, "spec": {"x": 1}});
                let before = node.clone();
                json_patch::merge(&mut node, &patch_body(&plan, Some("7")));
                let got_labels = as_map(&node["metadata"]["labels"]);
                let got_annotations = as_map(&node["metadata"]["annotations"]);

                let (mut want_labels, mut want_annotations) = (labels.clone(), annotations.clone());
                plan.apply(&mut want_labels, &mut want_annotations);
                prop_assert_eq!(&got_labels, &want_labels);
                prop_assert_eq!(&got_annotations, &want_annotations);
                // Independent invariants: foreign labels are untouched, the
                // rest of the object too, and the desired values are set.
                for key in FOREIGN {
                    prop_assert_eq!(got_labels.get(key), labels.get(key));
                }
                for (key, value) in &desired {
                    prop_assert_eq!(got_labels.get(key), Some(value));
                }
                prop_assert_eq!(&node["spec"], &before["spec"]);
                prop_assert_eq!(got_annotations.get("keep").map(String::as_str), Some("me"));
            }
        }
    }
}
