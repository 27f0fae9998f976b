//! `backup-queue-controller` with Velero 1.18's Backup CRD.
//!
//! At size N, namespace `velero` holds N Backups: one whole-cluster
//! backup `InProgress` (so nothing can start and every waiting backup is
//! queued behind it), `queued_percent` % created `New` (the controller
//! queues them) and the rest `Completed` (history, as a namespace with
//! daily schedules accumulates). Each Backup includes one of 50
//! namespaces. This program plays Velero's backup controller: a Backup
//! the controller makes `ReadyToStart` is set `InProgress` at once.
//!
//! Events: a new Backup (the controller queues it at the end: one write),
//! and, one at a time, the completion of the running backup (the
//! controller starts the head of the queue and renumbers the rest: one
//! write per queued Backup).

use anyhow::Context as _;
use kube::api::{Api, DynamicObject};
use kube_testbed::Testbed;
use serde_json::json;

use super::{EventKind, Mirror, Reaction, Target, Workload};
use crate::Controller;

const NAMESPACE: &str = "velero";
const TEAMS: usize = 50;
const BACKUP: (&str, &str, &str, &str) = ("velero.io", "v1", "Backup", "backups");

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    phase: String,
    position: i64,
}

fn summarize(object: &DynamicObject) -> Summary {
    let status = &object.data["status"];
    Summary {
        phase: status["phase"].as_str().unwrap_or_default().to_owned(),
        position: status["queuePosition"].as_i64().unwrap_or(0),
    }
}

pub(crate) struct BackupQueue {
    queued_percent: usize,
    api: Option<Api<DynamicObject>>,
    mirror: Option<Mirror<Summary>>,
    created: usize,
    events: usize,
}

impl BackupQueue {
    pub(crate) fn new(queued_percent: u32) -> Self {
        BackupQueue {
            queued_percent: queued_percent.min(100) as usize,
            api: None,
            mirror: None,
            created: 0,
            events: 0,
        }
    }

    fn api(&self) -> anyhow::Result<&Api<DynamicObject>> {
        self.api.as_ref().context("setup has not run")
    }

    fn queued(&self, i: usize) -> bool {
        i > 0 && i % 100 < self.queued_percent
    }

    fn with<R>(&self, read: impl FnOnce(&std::collections::HashMap<String, Summary>) -> R) -> R {
        match &self.mirror {
            Some(mirror) => mirror.with(read),
            None => read(&std::collections::HashMap::new()),
        }
    }
}

fn backup(name: &str, namespaces: &[String], phase: Option<&str>) -> serde_json::Value {
    let mut object = json!({
        "apiVersion": "velero.io/v1", "kind": "Backup",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"includedNamespaces": namespaces, "storageLocation": "default", "ttl": "720h0m0s"},
    });
    if let Some(phase) = phase {
        // Velero's Backup CRD has no status subresource.
        object["status"] = json!({"phase": phase});
    }
    object
}

fn team(i: usize) -> Vec<String> {
    vec![format!("team-{:02}", i % TEAMS)]
}

impl Workload for BackupQueue {
    fn controller(&self) -> Controller {
        Controller::BackupQueue
    }

    fn manifest_args(&self) -> Vec<String> {
        ["--scope=namespaced", "--namespace", NAMESPACE]
            .map(str::to_owned)
            .to_vec()
    }

    fn describe(&self, size: usize) -> String {
        let queued = (1..size).filter(|&i| self.queued(i)).count();
        format!("{size} Backups ({queued} created New, 1 InProgress, the rest Completed)")
    }

    async fn setup(&mut self, bed: &Testbed) -> anyhow::Result<()> {
        let crds = bed
            .layout()
            .crds("velero", &bed.versions().velero)?
            .join("velero.io_backups.yaml");
        bed.install_crd_files(&[crds]).await?;
        let client = bed.client();
        super::ensure_namespace(&client, NAMESPACE).await?;
        for t in 0..TEAMS {
            super::ensure_namespace(&client, &format!("team-{t:02}")).await?;
        }
        let api = super::dynamic_api(&client, BACKUP, Some(NAMESPACE));
        // Velero's part: a Backup made ReadyToStart starts.
        let react: Reaction = Box::new(|object| {
            (object.data["status"]["phase"] == "ReadyToStart")
                .then(|| json!({"status": {"phase": "InProgress"}}))
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
            .map(|i| {
                if i == 0 {
                    backup("whole-cluster-0", &["*".to_owned()], Some("InProgress"))
                } else if self.queued(i) {
                    backup(&format!("backup-{i:06}"), &team(i), None)
                } else {
                    backup(&format!("backup-{i:06}"), &team(i), Some("Completed"))
                }
            })
            .collect();
        super::create_all(&api, objects.into_iter(), concurrency).await?;
        self.created += to - from;
        Ok((from..to).filter(|&i| self.queued(i)).count())
    }

    fn mirrored(&self) -> bool {
        self.with(|state| state.len()) >= self.created + self.events
    }

    fn event_kinds(&self) -> Vec<EventKind> {
        vec![
            EventKind {
                name: "a Backup created (queued at the end)",
                paced: true,
            },
            EventKind {
                name: "the running Backup completes (the head starts, the queue is renumbered)",
                paced: false,
            },
        ]
    }

    async fn event(&mut self, kind: usize, _i: usize) -> anyhow::Result<Option<Target>> {
        let api = self.api()?.clone();
        if kind == 0 {
            self.events += 1;
            let name = format!("event-{:06}", self.events);
            super::create(&api, backup(&name, &team(self.events), None)).await?;
            return Ok(Some(Target {
                resource: "backups",
                name,
                kind,
            }));
        }
        let (running, head) = self.with(|state| {
            let running: Vec<String> = state
                .iter()
                .filter(|(_, s)| s.phase == "InProgress")
                .map(|(name, _)| name.clone())
                .collect();
            let head = state
                .iter()
                .find(|(_, s)| s.phase == "Queued" && s.position == 1)
                .map(|(name, _)| name.clone());
            (running, head)
        });
        let Some(head) = head else { return Ok(None) };
        for name in running {
            super::patch(
                &api,
                &name,
                &json!({"status": {"phase": "Completed"}}),
                false,
            )
            .await?;
        }
        Ok(Some(Target {
            resource: "backups",
            name: head,
            kind,
        }))
    }

    fn handled(&self, target: &Target) -> bool {
        // A new Backup is handled once queued; the head of the queue once
        // it has started.
        let waiting: &[&str] = if target.kind == 0 {
            &["", "New"]
        } else {
            &["", "New", "Queued"]
        };
        self.with(|state| {
            state
                .get(&target.name)
                .is_some_and(|s| !waiting.contains(&s.phase.as_str()))
        })
    }

    fn converged(&self) -> Result<(), String> {
        self.with(|state| {
            let mut positions = Vec::new();
            let mut running = 0;
            for (name, summary) in state {
                match summary.phase.as_str() {
                    "" | "New" => return Err(format!("{name} is New")),
                    "ReadyToStart" => return Err(format!("{name} is ReadyToStart")),
                    "Queued" => positions.push(summary.position),
                    "InProgress" => running += 1,
                    _ => {}
                }
            }
            positions.sort_unstable();
            let dense = positions
                .iter()
                .enumerate()
                .all(|(i, &p)| p == i as i64 + 1);
            if !dense {
                return Err(format!(
                    "{} queued, positions not yet 1..{}",
                    positions.len(),
                    positions.len()
                ));
            }
            if running > 1 {
                return Err(format!("{running} backups InProgress"));
            }
            Ok(())
        })
    }
}
