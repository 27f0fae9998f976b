//! The snapshot runtime against kube-fake-api, with a tiny controller that
//! labels every ConfigMap with the number of ConfigMaps it saw: passes start
//! after the initial sync, a burst is one pass, the echo of the
//! controller's own writes does not cause another pass (nor counts as news
//! between writes), a change made during a long plan supersedes the rest of
//! it, a 409 refreshes the index and the pass is made again, dry-run writes
//! nothing.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use controller_kit::metrics::{ControllerMetrics, WriteLabels};
use controller_kit::server::Readiness;
use controller_kit::snapshot::{
    IndexResource, Outcome, Reconciler, Runtime, Settings, Target, Watch, Writer,
};
use controller_kit::{Shutdown, ShutdownReason};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube_fake_api::{FakeApi, Fault, Verb, eventually, id_of};
use prometheus_client::registry::Registry;
use serde_json::json;

const NS: &str = "default";

#[derive(Default)]
struct Index(BTreeMap<String, ConfigMap>);

impl IndexResource<ConfigMap> for Index {
    fn apply(&mut self, cm: ConfigMap) {
        self.0.insert(cm.name_any(), cm);
    }
    fn delete(&mut self, key: ObjectRef<ConfigMap>) {
        self.0.remove(&key.name);
    }
}

/// Label every ConfigMap with `seen=<number of ConfigMaps>`.
struct Labeller {
    client: kube::Client,
}

/// (name, resourceVersion, label value)
type Plan = Vec<(String, Option<String>, String)>;

impl Reconciler for Labeller {
    type Index = Index;
    type Plan = Plan;

    fn plan(&self, index: &Index, _now: jiff::Timestamp) -> Plan {
        let seen = index.0.len().to_string();
        index
            .0
            .values()
            .filter(|cm| cm.labels().get("seen") != Some(&seen))
            .map(|cm| (cm.name_any(), cm.resource_version(), seen.clone()))
            .collect()
    }

    fn execute(
        &mut self,
        plan: Plan,
        writer: &mut Writer<'_, Index>,
    ) -> impl Future<Output = Outcome> + Send {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), NS);
        async move {
            let mut outcome = Outcome::Done;
            for (name, rv, seen) in plan {
                let body = json!({"metadata": {"labels": {"seen": seen}}});
                if let Err(refused) = writer
                    .patch(&api, &name, rv.as_deref(), body, Target::Object)
                    .await
                {
                    outcome = outcome.and(refused.outcome());
                } else if writer.news() {
                    return outcome.and(Outcome::Superseded);
                }
            }
            outcome
        }
    }
}

fn seed(fake: &FakeApi, name: &str) {
    fake.seed_value(
        &id_of::<ConfigMap>(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}}),
    )
    .unwrap();
}

fn labels(fake: &FakeApi) -> Vec<Option<String>> {
    fake.list::<ConfigMap>(Some(NS))
        .unwrap()
        .iter()
        .map(|cm| cm.labels().get("seen").cloned())
        .collect()
}

struct Running {
    metrics: ControllerMetrics,
    readiness: Readiness,
    shutdown: Shutdown,
    task: tokio::task::JoinHandle<Result<(), controller_kit::Error>>,
}

impl Running {
    fn writes(&self, outcome: &'static str) -> u64 {
        self.metrics
            .writes
            .get_or_create(&WriteLabels { outcome })
            .get()
    }

    async fn stop(self) {
        self.shutdown.trigger(ShutdownReason::Requested);
        tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .expect("the runtime stops on shutdown")
            .unwrap()
            .unwrap();
    }
}

fn start(fake: &FakeApi, dry_run: bool) -> Running {
    let metrics = ControllerMetrics::register(&mut Registry::default(), "test");
    let readiness = Readiness::new();
    let shutdown = Shutdown::new();
    let mut settings = Settings::new("labeller");
    settings.dry_run = dry_run;
    let client = fake.client();
    let runtime = Runtime::new(
        client.clone(),
        settings,
        Index::default(),
        Labeller {
            client: client.clone(),
        },
        metrics.clone(),
        readiness.clone(),
    )
    .watch(Watch::new(
        Api::<ConfigMap>::namespaced(client, NS),
        watcher::Config::default(),
    ));
    let task = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { runtime.run(&shutdown).await }
    });
    Running {
        metrics,
        readiness,
        shutdown,
        task,
    }
}

#[tokio::test]
async fn passes_start_after_the_initial_sync_and_own_writes_cause_no_further_pass() {
    let fake = FakeApi::new();
    for name in ["a", "b", "c"] {
        seed(&fake, name);
    }
    let slow = fake.inject(Fault::latency(Duration::from_millis(400)).on_verb(Verb::List));
    let run = start(&fake, false);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!run.readiness.is_ready(), "not ready before the list");
    assert_eq!(run.metrics.reconciles.get(), 0, "no pass before the list");
    fake.remove_fault(slow);
    eventually("all labelled", Duration::from_secs(5), || {
        labels(&fake) == [Some("3".into()), Some("3".into()), Some("3".into())]
    })
    .await;
    assert!(run.readiness.is_ready());
    // The echoes of the three writes are recognised: one pass did it all.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(run.metrics.reconciles.get(), 1);
    assert_eq!(run.writes("written"), 3);
    // A change by someone else is one more pass (and three more writes).
    seed(&fake, "d");
    eventually("relabelled", Duration::from_secs(5), || {
        labels(&fake).iter().all(|l| l.as_deref() == Some("4"))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(run.metrics.reconciles.get(), 2);
    run.stop().await;
}

#[tokio::test]
async fn a_change_made_during_a_long_plan_supersedes_the_rest_of_it() {
    let fake = FakeApi::new();
    let names: Vec<String> = (0..10).map(|i| format!("cm-{i}")).collect();
    for name in &names {
        seed(&fake, name);
    }
    // Each write takes a while, so the plan of ten is still being written
    // when someone else adds a ConfigMap.
    fake.inject(Fault::latency(Duration::from_millis(100)).on_verb(Verb::Patch));
    let run = start(&fake, false);
    eventually(
        "the first write is in flight",
        Duration::from_secs(5),
        || run.metrics.reconciles.get() >= 1,
    )
    .await;
    seed(&fake, "late");
    eventually("all relabelled", Duration::from_secs(10), || {
        labels(&fake).iter().all(|l| l.as_deref() == Some("11"))
    })
    .await;
    // Written to the end, the first plan would make 10 writes and the
    // second 11.
    let writes = fake
        .requests()
        .iter()
        .filter(|r| r.is(Verb::Patch, "configmaps"))
        .count();
    assert!(
        writes < 21,
        "the first plan stopped once the news arrived ({writes} writes in all)"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        run.metrics.reconciles.get(),
        2,
        "the news made one more pass"
    );
    run.stop().await;
}

#[tokio::test]
async fn a_conflict_refreshes_the_index_and_the_pass_is_made_again() {
    let fake = FakeApi::new();
    seed(&fake, "a");
    // Hold the first patch long enough for someone else to change `a`.
    fake.inject(
        Fault::latency(Duration::from_millis(300))
            .on_verb(Verb::Patch)
            .times(1),
    );
    let run = start(&fake, false);
    eventually("the patch is in flight", Duration::from_secs(5), || {
        run.metrics.reconciles.get() >= 1
    })
    .await;
    fake.modify_value(&id_of::<ConfigMap>(), Some(NS), "a", |v| {
        v["data"] = json!({"x": "y"});
    })
    .unwrap();
    eventually("labelled after the 409", Duration::from_secs(5), || {
        labels(&fake) == [Some("1".into())]
    })
    .await;
    assert_eq!(run.writes("conflict"), 1);
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.is(Verb::Get, "configmaps"))
    );
    // The other writer's change is kept (the write was conditional).
    let a = fake.get::<ConfigMap>(Some(NS), "a").unwrap().unwrap();
    assert_eq!(a.data.unwrap()["x"], "y");
    run.stop().await;
}

#[tokio::test]
async fn failed_writes_are_retried_with_backoff_and_counted() {
    let fake = FakeApi::new();
    seed(&fake, "a");
    fake.inject(Fault::internal_error().on_verb(Verb::Patch).times(2));
    let run = start(&fake, false);
    eventually("labelled after two 500s", Duration::from_secs(5), || {
        labels(&fake) == [Some("1".into())]
    })
    .await;
    assert_eq!(run.writes("failed"), 2);
    assert_eq!(
        run.metrics
            .errors
            .get_or_create(&controller_kit::metrics::ErrorLabels { kind: "kube_api" })
            .get(),
        2
    );
    run.stop().await;
}

#[tokio::test]
async fn dry_run_plans_and_writes_nothing() {
    let fake = FakeApi::new();
    seed(&fake, "a");
    let run = start(&fake, true);
    eventually("a pass was made", Duration::from_secs(5), || {
        run.writes("dry_run") >= 1
    })
    .await;
    run.stop().await;
    assert!(fake.requests().iter().all(|r| !r.is_write()));
    assert_eq!(labels(&fake), [None]);
}
