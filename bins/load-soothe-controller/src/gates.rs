//! The scheduling-gate queue's controller loop: it reads the loads of the
//! four kinds and the mover pods in Velero's namespace, asks
//! [`load_soothe::plan_lifts`] (or, in exact mode,
//! [`load_soothe::plan_exact_lifts`] with the shared ledger) which gates to
//! lift, and removes them. It never writes a load: the mover accepts and
//! exposes its loads itself (L3.15).
//!
//! A pass reads everything afresh (lists, not a watch cache) every
//! `interval`, so that each decision sees the API server's current state;
//! the cost is a few lists per interval in one namespace.

use std::collections::BTreeSet;
use std::time::Duration;

use controller_kit::Shutdown;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube_adapters::velero::{GateScope, LoadObject, load};
use load_soothe::{
    GateConfig, LEDGER_DATA_KEY, Ledger, LedgerSnapshot, LedgerWrite, Limit, Load, LoadId,
    LoadKind, Mode, MoverPod, PREPARE_QUEUE_GATE, PodRef, plan_exact_lifts, plan_lifts,
};
use serde_json::json;
use velero_api::{DataDownload, DataUpload, PodVolumeBackup, PodVolumeRestore};

use crate::webhook::MOVER_POD_LABELS;

/// How the loop keeps the limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateKeeping {
    /// One replica: at most the limit in preparation as far as it sees.
    Soft,
    /// Any number of replicas: gates are lifted only for loads listed in
    /// the ledger ConfigMap `ledger`, written with compare-and-swap as
    /// `replica`.
    Exact {
        /// The ledger ConfigMap's name (in Velero's namespace).
        ledger: String,
        /// This replica's name in the ledger entries.
        replica: String,
    },
}

/// Where the limit comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitSource {
    /// A fixed limit (tests).
    Fixed(Limit),
    /// `loadConcurrency.prepareQueueLength` of Velero's node-agent
    /// ConfigMap of this name, read at every pass (edits apply at once;
    /// absent or 0: no queue, every gate is lifted; unreadable: the last
    /// good value is kept, and nothing is lifted before one was read).
    NodeAgentConfigMap(String),
}

/// The loop's settings.
#[derive(Clone, Debug)]
pub struct GateLoopConfig {
    /// Velero's namespace (loads and mover pods).
    pub namespace: String,
    /// `prepareQueueLength`.
    pub limit: LimitSource,
    /// Soft or exact.
    pub keeping: GateKeeping,
    /// Time between passes.
    pub interval: Duration,
    /// Decide and log; lift no gate, write no ledger.
    pub dry_run: bool,
}

/// The load a mover pod serves, from its load label and its controller
/// owner reference (which carries the load's UID).
pub fn mover_pod(pod: &Pod) -> Option<MoverPod> {
    let labels = pod.metadata.labels.as_ref()?;
    let (kind, name) = LoadKind::ALL
        .iter()
        .zip(MOVER_POD_LABELS)
        .find_map(|(kind, label)| labels.get(label).map(|name| (*kind, name.clone())))?;
    let uid = pod
        .owner_references()
        .iter()
        .find(|o| o.kind == kind.as_str() && o.name == name)
        .map(|o| o.uid.clone())
        .unwrap_or_default();
    let gated = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|gates| gates.iter().any(|g| g.name == PREPARE_QUEUE_GATE));
    Some(MoverPod {
        namespace: pod.namespace().unwrap_or_default(),
        name: pod.name_any(),
        load: LoadId::new(kind, pod.namespace().unwrap_or_default(), name, uid),
        gated,
    })
}

async fn list_loads<K: LoadObject>(
    client: &kube::Client,
    namespace: &str,
) -> kube::Result<Vec<Load>> {
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .iter()
        .map(|o| load(o, GateScope::Everything))
        .collect())
}

/// Lists the loads of the four kinds (a kind whose CRD is missing has
/// none).
async fn all_loads(client: &kube::Client, namespace: &str) -> kube::Result<Vec<Load>> {
    let mut loads = Vec::new();
    for listed in [
        list_loads::<DataUpload>(client, namespace).await,
        list_loads::<DataDownload>(client, namespace).await,
        list_loads::<PodVolumeBackup>(client, namespace).await,
        list_loads::<PodVolumeRestore>(client, namespace).await,
    ] {
        match listed {
            Ok(more) => loads.extend(more),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error),
        }
    }
    Ok(loads)
}

/// Removes the gate from `pod` (a strategic merge patch deleting the gate
/// by its name, the list's merge key; other gates stay).
async fn lift(pods: &Api<Pod>, pod: &PodRef) -> kube::Result<()> {
    let patch = json!({
        "spec": { "schedulingGates": [{ "name": PREPARE_QUEUE_GATE, "$patch": "delete" }] }
    });
    pods.patch(&pod.name, &PatchParams::default(), &Patch::Strategic(patch))
        .await?;
    tracing::info!(pod = %pod.name, namespace = %pod.namespace, "lifted the prepare-queue gate");
    Ok(())
}

async fn read_ledger(api: &Api<ConfigMap>, name: &str) -> kube::Result<Option<LedgerSnapshot>> {
    let Some(config_map) = api.get_opt(name).await? else {
        return Ok(Some(LedgerSnapshot::absent()));
    };
    let data = config_map.data.unwrap_or_default();
    let Some(text) = data.get(LEDGER_DATA_KEY) else {
        return Ok(Some(LedgerSnapshot {
            resource_version: config_map.metadata.resource_version,
            ledger: Ledger::empty(),
        }));
    };
    match Ledger::from_json(text) {
        Ok(ledger) => Ok(Some(LedgerSnapshot {
            resource_version: config_map.metadata.resource_version,
            ledger,
        })),
        Err(error) => {
            tracing::error!(%error, ledger = name, "the ledger does not parse; lifting nothing");
            Ok(None)
        }
    }
}

/// Writes `write` with compare-and-swap; `false` on a conflict.
async fn write_ledger(api: &Api<ConfigMap>, name: &str, write: &LedgerWrite) -> kube::Result<bool> {
    let result = match &write.expected_resource_version {
        None => {
            let mut config_map = ConfigMap::default();
            config_map.metadata.name = Some(name.to_owned());
            config_map.data = Some(write.data());
            api.create(&PostParams::default(), &config_map)
                .await
                .map(drop)
        }
        Some(_) => api
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(write.merge_patch()),
            )
            .await
            .map(drop),
    };
    match result {
        Ok(()) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error),
    }
}

/// The limit in effect: `Ok(None)` when the queue is off.
async fn read_limit(
    client: &kube::Client,
    config: &GateLoopConfig,
) -> Result<Option<Limit>, String> {
    let name = match &config.limit {
        LimitSource::Fixed(limit) => return Ok(Some(*limit)),
        LimitSource::NodeAgentConfigMap(name) => name,
    };
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &config.namespace);
    let config_map = config_maps
        .get_opt(name)
        .await
        .map_err(|e| format!("cannot read the ConfigMap {}/{name}: {e}", config.namespace))?;
    let length = match config_map {
        None => None,
        Some(cm) => affinity_translate::load_config_map(&cm)
            .map_err(|e| e.to_string())?
            .config
            .load_concurrency
            .and_then(|l| l.prepare_queue_length),
    };
    Ok(GateConfig::new(length, Mode::Exact).enablement.limit())
}

/// One pass with the limit `limit` (`None`: the queue is off, every gate
/// is lifted): read, decide, write. Returns the number of gates lifted.
pub async fn pass(
    client: &kube::Client,
    config: &GateLoopConfig,
    limit: Option<Limit>,
) -> kube::Result<usize> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &config.namespace);
    let loads = all_loads(client, &config.namespace).await?;
    let movers: Vec<MoverPod> = pods
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter_map(mover_pod)
        .collect();
    let to_lift = match (&config.keeping, limit) {
        (_, None) => movers
            .iter()
            .filter(|p| p.gated)
            .map(|p| PodRef {
                namespace: p.namespace.clone(),
                name: p.name.clone(),
            })
            .collect(),
        (GateKeeping::Soft, Some(limit)) => plan_lifts(limit, &loads, &movers).lift,
        (GateKeeping::Exact { ledger, replica }, Some(limit)) => {
            let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &config.namespace);
            let Some(snapshot) = read_ledger(&config_maps, ledger).await? else {
                return Ok(0);
            };
            let seen: BTreeSet<&LoadId> = loads.iter().map(|l| &l.id).collect();
            // An entry whose load is not listed any more is gone (the list
            // is a fresh read, not a cache).
            let gone: BTreeSet<LoadId> = snapshot
                .ledger
                .admitted
                .iter()
                .filter(|e| !seen.contains(&e.id))
                .map(|e| e.id.clone())
                .collect();
            let plan = plan_exact_lifts(
                limit,
                &snapshot,
                &loads,
                &movers,
                &gone,
                replica,
                jiff::Timestamp::now(),
            );
            if let Some(write) = &plan.write
                && config.dry_run
            {
                tracing::info!(admitted = write.admitted.len(), "would write the ledger");
            } else if let Some(write) = &plan.write
                && !write_ledger(&config_maps, ledger, write).await?
            {
                tracing::debug!(ledger, "ledger conflict; deciding again next pass");
            }
            plan.lift
        }
    };
    if config.dry_run {
        for pod in &to_lift {
            tracing::info!(pod = %pod.name, "would lift the prepare-queue gate");
        }
        return Ok(0);
    }
    let mut lifted = 0;
    for pod in &to_lift {
        match lift(&pods, pod).await {
            Ok(()) => lifted += 1,
            Err(kube::Error::Api(status)) if matches!(status.code, 404 | 409 | 422) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(lifted)
}

/// Runs passes every `config.interval` until `shutdown` fires; a failed
/// pass is logged and the next one tries again.
pub async fn run(client: kube::Client, config: GateLoopConfig, shutdown: Shutdown) {
    let keeping = match &config.keeping {
        GateKeeping::Soft => "soft",
        GateKeeping::Exact { .. } => "exact",
    };
    let limit_source = match &config.limit {
        LimitSource::Fixed(limit) => limit.get().to_string(),
        LimitSource::NodeAgentConfigMap(name) => format!("ConfigMap {name}"),
    };
    tracing::info!(namespace = %config.namespace, limit = %limit_source, keeping, "prepare-queue gate running");
    let mut last_good: Option<Option<Limit>> = None;
    loop {
        match read_limit(&client, &config).await {
            Ok(limit) => {
                if last_good != Some(limit) {
                    tracing::info!(
                        limit = limit.map(Limit::get),
                        "prepare queue configuration in effect"
                    );
                }
                last_good = Some(limit);
            }
            Err(error) => {
                tracing::error!(%error, "cannot read prepareQueueLength; keeping the last good value")
            }
        }
        if let Some(limit) = last_good
            && let Err(error) = pass(&client, &config, limit).await
        {
            tracing::warn!(%error, "prepare-queue gate pass failed");
        }
        tokio::select! {
            () = tokio::time::sleep(config.interval) => {}
            () = shutdown.signalled() => return,
        }
    }
}
