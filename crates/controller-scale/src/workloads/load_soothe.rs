//! `load-soothe-controller` (exact mode, `--admission accept`, one
//! replica) with Velero 1.18's load CRDs.
//!
//! At size N, namespace `velero` holds N DataUploads, all `Completed`,
//! accepted on `nodes` Nodes (which exist), half of them by the gated
//! third-party data mover and half by Velero's built-in one, as a cluster
//! that has run backups for a while keeps them. The node-agent ConfigMap
//! sets `prepareQueueLength` 10. This program plays the data mover: a
//! load the controller accepts is completed at once (phase `Completed`,
//! `velero.io/expose-on-going` removed), which frees its slot.
//!
//! Event: a new DataUpload of the gated data mover (the controller accepts
//! it: one merge patch, plus its ledger write and Event).

use anyhow::Context as _;
use kube::api::{Api, DynamicObject};
use kube_testbed::Testbed;
use serde_json::json;

use super::{EventKind, Mirror, Reaction, Target, Workload};
use crate::Controller;

const NAMESPACE: &str = "velero";
const MOVER: &str = "acme.example/mover";
const EXPOSING: &str = "velero.io/expose-on-going";
const DATA_UPLOAD: (&str, &str, &str, &str) =
    ("velero.io", "v2alpha1", "DataUpload", "datauploads");
const LOAD_CRDS: [&str; 4] = [
    "velero.io_datauploads.yaml",
    "velero.io_datadownloads.yaml",
    "velero.io_podvolumebackups.yaml",
    "velero.io_podvolumerestores.yaml",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    phase: String,
    gated: bool,
}

fn summarize(object: &DynamicObject) -> Summary {
    Summary {
        phase: object.data["status"]["phase"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        gated: object.data["spec"]["datamover"] == MOVER,
    }
}

pub(crate) struct LoadSoothe {
    nodes: usize,
    api: Option<Api<DynamicObject>>,
    mirror: Option<Mirror<Summary>>,
    created: usize,
    events: usize,
}

impl LoadSoothe {
    pub(crate) fn new(nodes: usize) -> Self {
        LoadSoothe {
            nodes: nodes.max(1),
            api: None,
            mirror: None,
            created: 0,
            events: 0,
        }
    }

    fn api(&self) -> anyhow::Result<&Api<DynamicObject>> {
        self.api.as_ref().context("setup has not run")
    }

    fn with<R>(&self, read: impl FnOnce(&std::collections::HashMap<String, Summary>) -> R) -> R {
        match &self.mirror {
            Some(mirror) => mirror.with(read),
            None => read(&std::collections::HashMap::new()),
        }
    }

    fn data_upload(&self, name: &str, i: usize, completed: bool) -> serde_json::Value {
        let mover = if completed && i % 2 == 1 {
            "velero"
        } else {
            MOVER
        };
        let node = format!("node-{:04}", i % self.nodes);
        let status = if completed {
            json!({
                "phase": "Completed", "node": node, "acceptedByNode": node,
                "acceptedTimestamp": "2026-11-01T00:00:00Z",
                "startTimestamp": "2026-11-01T00:00:01Z",
                "completionTimestamp": "2026-11-01T00:01:00Z",
                "progress": {"totalBytes": 1_073_741_824_u64, "bytesDone": 1_073_741_824_u64},
            })
        } else {
            json!({"phase": "New"})
        };
        json!({
            "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {
                "velero.io/backup-name": format!("daily-{:03}", i / 200),
            }},
            "spec": {
                "snapshotType": "CSI",
                "csiSnapshot": {"volumeSnapshot": format!("snap-{i}"), "storageClass": "standard"},
                "sourcePVC": format!("data-{i}"),
                "sourceNamespace": format!("app-{:02}", i % 50),
                "datamover": mover,
                "backupStorageLocation": "default",
                "operationTimeout": "10m0s",
            },
            "status": status,
        })
    }
}

impl Workload for LoadSoothe {
    fn controller(&self) -> Controller {
        Controller::LoadSoothe
    }

    fn manifest_args(&self) -> Vec<String> {
        [
            "--mode=exact",
            "--admission=accept",
            "--namespace",
            NAMESPACE,
            "--datamover",
            MOVER,
        ]
        .map(str::to_owned)
        .to_vec()
    }

    fn describe(&self, size: usize) -> String {
        format!(
            "{size} DataUploads (Completed) on {} Nodes",
            self.nodes.min(size.max(1))
        )
    }

    async fn setup(&mut self, bed: &Testbed) -> anyhow::Result<()> {
        let dir = bed.layout().crds("velero", &bed.versions().velero)?;
        let files: Vec<_> = LOAD_CRDS.iter().map(|file| dir.join(file)).collect();
        bed.install_crd_files(&files).await?;
        let client = bed.client();
        super::ensure_namespace(&client, NAMESPACE).await?;
        let nodes = super::dynamic_api(&client, ("", "v1", "Node", "nodes"), None);
        super::create_all(
            &nodes,
            (0..self.nodes).map(|n| {
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {
                    "name": format!("node-{n:04}"),
                    "labels": {"kubernetes.io/hostname": format!("node-{n:04}")},
                }})
            }),
            16,
        )
        .await?;
        let configmaps = super::dynamic_api(
            &client,
            ("", "v1", "ConfigMap", "configmaps"),
            Some(NAMESPACE),
        );
        super::create(
            &configmaps,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "node-agent-config", "namespace": NAMESPACE},
                "data": {"node-agent-config.json": r#"{"loadConcurrency":{"prepareQueueLength":10}}"#}}),
        )
        .await?;
        let api = super::dynamic_api(&client, DATA_UPLOAD, Some(NAMESPACE));
        // The data mover's part: an accepted load is done at once.
        let react: Reaction = Box::new(|object| {
            (object.data["spec"]["datamover"] == MOVER
                && object.data["status"]["phase"] == "Accepted")
                .then(|| {
                    json!({
                        "metadata": {"labels": {EXPOSING: null}},
                        "status": {"phase": "Completed", "completionTimestamp": jiff::Timestamp::now().to_string()},
                    })
                })
        });
        self.mirror = Some(Mirror::start(api.clone(), summarize, Some(react)));
        self.api = Some(api);
        Ok(())
    }

    async fn populate(
        &mut self,
        from: usize,
        to: usize,
        concurrency: usize,
    ) -> anyhow::Result<usize> {
        let api = self.api()?.clone();
        let objects: Vec<_> = (from..to)
            .map(|i| self.data_upload(&format!("du-{i:06}"), i, true))
            .collect();
        super::create_all(&api, objects.into_iter(), concurrency).await?;
        self.created += to - from;
        Ok(0)
    }

    fn mirrored(&self) -> bool {
        self.with(|state| state.len()) >= self.created + self.events
    }

    fn event_kinds(&self) -> Vec<EventKind> {
        vec![EventKind {
            name: "a DataUpload of the gated data mover created (accepted)",
            paced: true,
        }]
    }

    async fn event(&mut self, kind: usize, _i: usize) -> anyhow::Result<Option<Target>> {
        let api = self.api()?.clone();
        self.events += 1;
        let name = format!("new-{:06}", self.events);
        let object = self.data_upload(&name, self.events, false);
        super::create(&api, object).await?;
        Ok(Some(Target {
            resource: "datauploads",
            name,
            kind,
        }))
    }

    fn handled(&self, target: &Target) -> bool {
        self.with(|state| {
            state
                .get(&target.name)
                .is_some_and(|s| !matches!(s.phase.as_str(), "" | "New"))
        })
    }

    fn converged(&self) -> Result<(), String> {
        self.with(|state| {
            let waiting = state
                .values()
                .filter(|s| s.gated && matches!(s.phase.as_str(), "" | "New" | "Accepted"))
                .count();
            if waiting == 0 {
                Ok(())
            } else {
                Err(format!("{waiting} loads New or Accepted"))
            }
        })
    }
}
