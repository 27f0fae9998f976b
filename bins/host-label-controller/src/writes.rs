//! The executor: carries out a pass's plan through the runtime's writer.
//!
//! 1. Node label patches: JSON merge patches of labels and the bookkeeping
//!    annotation only, conditioned (by the runtime's writer) on the
//!    resourceVersion they were planned from. A `409` makes the writer read
//!    the Node again and the pass is made again; other failures are retried
//!    with backoff.
//! 2. Audit: metrics; Events `ReplicasShareHost` (on the pods' owner),
//!    `HostLabelMissing` (on the Node) and, with `--audit-cluster-modules`,
//!    `ModuleMembersShareHost` (on each Machine sharing an ESXi host with
//!    another member of its cluster module), each once per occurrence (an
//!    occurrence that disappears and comes back is reported again); the
//!    summary (and `modules.json`) in the status ConfigMap (server-side
//!    apply) when it changed, where [`crate::status`] says: with
//!    `--all-clusters`, in the management cluster. Gauges carry the
//!    workload cluster's `cluster` label; a labeller that is dropped (its
//!    loop stopped) removes its series.

use std::collections::BTreeSet;
use std::future::Future;

use anti_affinity_placement::labels::NodeLabelPlan;
use controller_kit::ApiErrorKind;
use controller_kit::snapshot::{Outcome, Reconciler, Refused, Target, Timestamp, Writer};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::Api;
use kube::runtime::events::{Event, EventType};
use serde_json::{Map, Value, json};

use crate::config::{Config, MODULES_DATA_KEY, STATUS_DATA_KEY};
use crate::index::HostIndex;
use crate::metrics::{ClusterGauges, Labels, Metrics};
use crate::pass::{self, NodePatch, Plan};
use crate::status::{self, StatusPlace, StatusWriteFailed};

/// The JSON merge patch for `plan`: labels to set/remove and the annotation
/// update, nothing else (the writer adds the resourceVersion precondition).
pub(crate) fn patch_body(plan: &NodeLabelPlan) -> Value {
    let mut metadata = Map::new();
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

/// The pass and the executor, with what the executor remembers.
pub struct Labeller {
    client: kube::Client,
    config: Config,
    metrics: Metrics,
    /// The `cluster` label of this labeller's gauges.
    cluster: String,
    /// This cluster's audit gauges.
    gauges: ClusterGauges,
    /// The `module_host_violations` series this labeller set.
    module_series: BTreeSet<Labels>,
    /// Where the status summary goes.
    status: StatusPlace,
    /// Occurrences already reported as Events.
    reported: BTreeSet<String>,
    /// The status ConfigMap data last written.
    last_status: Option<Map<String, Value>>,
    /// The inventory problem last logged.
    last_inventory_problem: Option<String>,
    /// The Nodes whose Machine label sync was last logged as left to
    /// Cluster API.
    last_sync_deferred: Vec<(String, String)>,
}

impl Labeller {
    /// A labeller writing through `client`, its status into the workload
    /// cluster.
    pub fn new(client: kube::Client, config: Config, metrics: Metrics) -> Self {
        Self::with_status(client, config, metrics, StatusPlace::Workload)
    }

    /// A labeller writing through `client`, its status where `status` says.
    pub fn with_status(
        client: kube::Client,
        config: Config,
        metrics: Metrics,
        status: StatusPlace,
    ) -> Self {
        let cluster = config
            .cluster
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let gauges = metrics.gauges(&cluster);
        Self {
            client,
            config,
            metrics,
            cluster,
            gauges,
            module_series: BTreeSet::new(),
            status,
            reported: BTreeSet::new(),
            last_status: None,
            last_inventory_problem: None,
            last_sync_deferred: Vec::new(),
        }
    }

    async fn carry_out(&mut self, plan: Plan, writer: &mut Writer<'_, HostIndex>) -> Outcome {
        if plan.inventory_problem != self.last_inventory_problem {
            if let Some(p) = &plan.inventory_problem {
                tracing::warn!(problem = %p, "cannot use the host inventory; keeping the last good one");
            }
            self.last_inventory_problem
                .clone_from(&plan.inventory_problem);
        }
        if plan.sync_deferred != self.last_sync_deferred {
            for (node, manager) in &plan.sync_deferred {
                if !self
                    .last_sync_deferred
                    .contains(&(node.clone(), manager.clone()))
                {
                    tracing::info!(%node, %manager, "another writer (Cluster API) syncs this Node's Machine labels; --sync-machine-labels leaves them to it");
                }
            }
            self.last_sync_deferred.clone_from(&plan.sync_deferred);
        }
        let api: Api<Node> = Api::all(self.client.clone());
        let mut outcome = Outcome::Done;
        for patch in &plan.patches {
            outcome = outcome.and(self.patch(&api, patch, writer).await);
        }
        self.audit(&plan, writer).await;
        let mut data = Map::new();
        data.insert(STATUS_DATA_KEY.to_owned(), json!(plan.summary.to_json()));
        if let Some(modules) = &plan.modules {
            data.insert(MODULES_DATA_KEY.to_owned(), json!(modules.to_json()));
        }
        outcome.and(self.write_status(data, writer).await)
    }

    async fn patch(
        &self,
        api: &Api<Node>,
        patch: &NodePatch,
        writer: &mut Writer<'_, HostIndex>,
    ) -> Outcome {
        self.metrics.node_patches.inc();
        let body = patch_body(&patch.labels);
        let result = writer
            .patch(
                api,
                &patch.node,
                patch.resource_version.as_deref(),
                body,
                Target::Object,
            )
            .await;
        match result {
            Ok(_) => {
                // `set` as `kubectl label` takes it (`KEY=VALUE,…`), `remove`
                // as `KEY,…`: plain strings, not Rust debug text.
                let set = patch
                    .labels
                    .set
                    .iter()
                    .map(|(key, value)| format!("{key}={value}"))
                    .collect::<Vec<_>>()
                    .join(",");
                let remove = patch.labels.remove.join(",");
                let dry_run = writer.dry_run();
                tracing::info!(
                    node = %patch.node,
                    host = patch.host.as_deref(),
                    set = (!set.is_empty()).then_some(set.as_str()),
                    remove = (!remove.is_empty()).then_some(remove.as_str()),
                    dry_run,
                    "{}",
                    if dry_run { "would label Node (--dry-run)" } else { "labelled Node" }
                );
                Outcome::Done
            }
            Err(Refused::Conflict) => {
                self.metrics.node_patch_conflicts.inc();
                tracing::debug!(node = %patch.node, "Node changed since it was read (409); planning again");
                Outcome::Replan
            }
            Err(Refused::Gone) => {
                tracing::debug!(node = %patch.node, "Node was deleted before it could be labelled");
                Outcome::Done
            }
            Err(refused) => refused.outcome(),
        }
    }

    async fn audit(&mut self, plan: &Plan, writer: &Writer<'_, HostIndex>) {
        let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.gauges
            .shared_host_violations
            .set(gauge(plan.violations.len()));
        self.gauges.preferred_shared_hosts.set(gauge(
            plan.summary
                .preferred_sharing
                .iter()
                .map(|group| group.hosts)
                .sum(),
        ));
        self.gauges
            .unlabelled_nodes
            .set(gauge(plan.summary.unlabelled_nodes.len()));
        self.gauges
            .nodes_without_host_information
            .set(gauge(plan.without_host_information));
        let mut current = BTreeSet::new();
        for v in &plan.violations {
            let id = format!("shared {} {}", v.host, v.pods.join(","));
            if !self.reported.contains(&id) {
                let event = warning("ReplicasShareHost", v.note());
                if !self.publish(&event, &v.owner, writer).await {
                    continue;
                }
            }
            current.insert(id);
        }
        for u in &plan.unlabelled {
            let id = format!("unlabelled {}", u.node);
            if !self.reported.contains(&id) {
                let event = warning("HostLabelMissing", u.note.clone());
                if !self.publish(&event, &u.reference, writer).await {
                    continue;
                }
            }
            current.insert(id);
        }
        if let Some(modules) = &plan.modules {
            let mut series = BTreeSet::new();
            for group in &modules.groups {
                let labels = vec![
                    ("cluster".to_owned(), self.cluster.clone()),
                    ("group".to_owned(), group.group.clone()),
                    ("forced".to_owned(), group.forced.to_string()),
                ];
                self.metrics
                    .module_host_violations
                    .get_or_create(&labels)
                    .set(gauge(
                        usize::try_from(group.violations).unwrap_or(usize::MAX),
                    ));
                series.insert(labels);
            }
            // Only this cluster's series that are gone; other clusters'
            // loops own theirs.
            for gone in self.module_series.difference(&series) {
                self.metrics.module_host_violations.remove(gone);
            }
            self.module_series = series;
            for shared in &modules.shared {
                if !self.reported.contains(&shared.id) {
                    let event = warning("ModuleMembersShareHost", shared.note.clone());
                    if !self.publish(&event, &shared.machine, writer).await {
                        continue;
                    }
                }
                current.insert(shared.id.clone());
            }
        }
        self.reported = current;
    }

    /// Publishes an Event; `false` if it failed (it is retried on the next pass).
    async fn publish(
        &self,
        event: &Event,
        reference: &k8s_openapi::api::core::v1::ObjectReference,
        writer: &Writer<'_, HostIndex>,
    ) -> bool {
        let published = writer.publish(event, reference).await;
        if published {
            self.metrics.events.inc();
        }
        published
    }

    async fn write_status(
        &mut self,
        data: Map<String, Value>,
        writer: &mut Writer<'_, HostIndex>,
    ) -> Outcome {
        if self.last_status.as_ref() == Some(&data) {
            return Outcome::Done;
        }
        let target = &self.config.status_configmap;
        let written = match &self.status {
            StatusPlace::Workload => {
                let cm = status::body(target, &data);
                let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &target.namespace);
                writer
                    .apply_unwatched(&api, &target.name, &cm)
                    .await
                    .map(|_| ())
            }
            StatusPlace::Management { client, .. } => {
                if writer.stopping() {
                    Err(Refused::Stopping)
                } else if writer.dry_run() {
                    tracing::info!(dry_run = true, configmap = %target, "would apply the status");
                    writer.metrics().record_write("dry_run");
                    Ok(())
                } else {
                    let entries = self.status.data(&data);
                    let manager = self.status.field_manager();
                    match status::apply_in_management(client, target, &manager, &entries).await {
                        Ok(()) => {
                            writer.metrics().record_write("written");
                            Ok(())
                        }
                        Err(error) => {
                            writer.metrics().record_write("failed");
                            writer
                                .metrics()
                                .record_error(&StatusWriteFailed(ApiErrorKind::of(&error)));
                            Err(Refused::Failed(error))
                        }
                    }
                }
            }
        };
        match written {
            Ok(()) => {
                self.last_status = Some(data);
                Outcome::Done
            }
            Err(refused) => {
                tracing::warn!(configmap = %target, place = %self.status, %refused, "cannot write the audit summary");
                refused.outcome()
            }
        }
    }
}

impl Drop for Labeller {
    /// The loop stopped: its cluster's series go (another loop for the
    /// same cluster creates them again).
    fn drop(&mut self) {
        self.metrics
            .forget_cluster(&self.cluster, &self.module_series);
    }
}

fn warning(reason: &str, note: String) -> Event {
    Event {
        type_: EventType::Warning,
        reason: reason.into(),
        note: Some(note),
        action: "Audit".into(),
        secondary: None,
    }
}

impl Reconciler for Labeller {
    type Index = HostIndex;
    type Plan = Plan;

    fn plan(&self, index: &HostIndex, _now: Timestamp) -> Plan {
        pass::plan(&self.config, index)
    }

    fn execute(
        &mut self,
        plan: Plan,
        writer: &mut Writer<'_, HostIndex>,
    ) -> impl Future<Output = Outcome> + Send {
        self.carry_out(plan, writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_body_touches_only_labels_and_annotation() {
        let plan = NodeLabelPlan {
            set: [("a/host".to_owned(), "esx1".to_owned())].into(),
            remove: vec!["old/host".into()],
            annotations: [("x/managed".to_owned(), Some("a/host".to_owned()))].into(),
        };
        let body = patch_body(&plan);
        assert_eq!(
            body,
            json!({"metadata": {
                "labels": {"a/host": "esx1", "old/host": null},
                "annotations": {"x/managed": "a/host"},
            }})
        );
        let removal = NodeLabelPlan {
            annotations: [("x/managed".to_owned(), None)].into(),
            ..NodeLabelPlan::default()
        };
        assert_eq!(
            patch_body(&removal),
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
                json_patch::merge(&mut node, &patch_body(&plan));
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
