//! Velero's own backup queue controller: detected before this controller
//! writes, so that there is never a second queue beside Velero's.
//!
//! Velero 1.18's server runs its backup queue controller unless it is
//! started with `--disable-controllers=backup-queue`. Two sources say
//! whether it runs:
//!
//! 1. **The Velero server's Deployment** (`--velero-deployment`, default
//!    `velero`, in the Velero namespace): the arguments of its `velero`
//!    container (else its first container). `--disable-controllers` listing
//!    `backup-queue`, with the rollout finished, means disabled; anything
//!    else means enabled (or not yet disabled everywhere). When the
//!    Deployment can be read, it decides.
//! 2. **Velero's own writes**, when the Deployment cannot be read (not
//!    found, forbidden): a field manager whose name starts with `velero`
//!    (Velero's server writes as `velero-server`) setting `status.phase` to
//!    `Queued` or `ReadyToStart`, or setting `status.queuePosition`, as the
//!    watch shows it. Velero's dequeue sets `queuePosition` to 0, which its
//!    patch drops (`omitempty`), so no manager owns the position
//!    afterwards: the phase `ReadyToStart` owned by Velero's manager is what
//!    shows the dequeue. A sighting is forgotten once a `New` Backup has
//!    stayed `New` for the re-check interval with no sighting in that time:
//!    Velero's queue controller queues every new Backup at once, so it is
//!    not running.
//!
//! While Velero's queue runs, [`Gate::decide`] says [`Decision::Closed`]
//! with a message naming the flag to set; the executor then writes nothing
//! and `/readyz` fails with that message.
//!
//! A Velero server older than 1.18 has no queue: its backup controller
//! starts every `New` Backup itself (rule Q4.24), beside this controller's
//! queue, and it refuses `--disable-controllers=backup-queue` as an
//! unknown controller. Such a
//! server is told by the same two sources: the Deployment's image tag
//! (`velero/velero:v1.17.2`), and a Velero field manager moving a Backup
//! this controller saw `New` or `Queued` to any phase but `Queued`,
//! `ReadyToStart` or `Deleting` (Velero 1.18's backup controller takes only `ReadyToStart`
//! Backups, v1.18.3 `backup_controller.go`, `SetupWithManager`). Either
//! makes [`Gate::decide`] say [`Decision::VeleroTooOld`]; a sighting is
//! forgotten as a queue sighting is (a `New` Backup left alone).

use std::time::Duration;

use controller_kit::snapshot::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use velero_api::{Backup, BackupPhase};

/// The `/readyz` key while Velero's queue controller runs.
pub const READINESS_KEY: &str = "velero-queue";

/// What to add to the Velero server's arguments.
pub const DISABLE_FLAG: &str = "--disable-controllers=backup-queue";

/// Velero's name for its queue controller (`constant.ControllerBackupQueue`).
pub const VELERO_QUEUE_CONTROLLER: &str = "backup-queue";

/// The Velero server Deployment's default name (`velero install`, Helm).
pub const DEFAULT_VELERO_DEPLOYMENT: &str = "velero";

/// Field managers starting with this are Velero's (its server writes as
/// `velero-server`, the first segment of its User-Agent).
pub const VELERO_MANAGER_PREFIX: &str = "velero";

/// The oldest Velero release with the backup queue (`major`, `minor`).
pub const FIRST_QUEUED_RELEASE: (u64, u64) = (1, 18);

/// What the Velero server Deployment says about the queue controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeploymentVerdict {
    /// The server's image is tagged with a release older than
    /// [`FIRST_QUEUED_RELEASE`]: the image reference.
    ServerTooOld(String),
    /// The server runs without `--disable-controllers=backup-queue`.
    QueueEnabled,
    /// `--disable-controllers` lists `backup-queue` and every replica runs
    /// the current template.
    QueueDisabled,
    /// `--disable-controllers` lists `backup-queue`, but the rollout is not
    /// finished: `(updated, replicas)`.
    RollingOut(i32, i32),
}

/// Whether `args` (command and arguments of the Velero server container)
/// disable the queue controller: `--disable-controllers=a,b` or
/// `--disable-controllers a,b`, possibly repeated (Velero's flag is a string
/// slice, so occurrences add up).
pub fn disables_backup_queue(args: &[String]) -> bool {
    let mut values = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if let Some(value) = arg.strip_prefix("--disable-controllers=") {
            values.push(value.to_owned());
        } else if arg == "--disable-controllers"
            && let Some(value) = iter.next()
        {
            values.push(value.clone());
        }
    }
    values
        .iter()
        .flat_map(|v| v.split(','))
        .any(|name| name.trim() == VELERO_QUEUE_CONTROLLER)
}

/// The release an image reference is tagged with: `(major, minor)` of a
/// tag like `v1.17.2`, `1.18` or `v1.18.0-rc.1`, after the last `/`,
/// ignoring a digest (`@sha256:…`). `None` for any other tag (`latest`,
/// `main`, a custom name) or no tag.
pub fn image_release(image: &str) -> Option<(u64, u64)> {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    let (_, tag) = last.split_once(':')?;
    let version = tag.strip_prefix('v').unwrap_or(tag);
    let mut parts = version.splitn(3, ['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The verdict of a Velero server Deployment.
pub fn deployment_verdict(deployment: &Deployment) -> DeploymentVerdict {
    let containers = deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    let container = containers
        .iter()
        .find(|c| c.name == "velero")
        .or_else(|| containers.first());
    if let Some(image) = container.and_then(|c| c.image.as_deref())
        && image_release(image).is_some_and(|release| release < FIRST_QUEUED_RELEASE)
    {
        return DeploymentVerdict::ServerTooOld(image.to_owned());
    }
    let args: Vec<String> = container
        .map(|c| {
            c.command
                .iter()
                .flatten()
                .chain(c.args.iter().flatten())
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if !disables_backup_queue(&args) {
        return DeploymentVerdict::QueueEnabled;
    }
    let status = deployment.status.clone().unwrap_or_default();
    let generation = deployment.metadata.generation.unwrap_or(0);
    let replicas = status.replicas.unwrap_or(0);
    let updated = status.updated_replicas.unwrap_or(0);
    if status.observed_generation.unwrap_or(0) < generation || updated != replicas {
        return DeploymentVerdict::RollingOut(updated, replicas);
    }
    DeploymentVerdict::QueueDisabled
}

fn status_field(
    entry: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry,
    field: &str,
) -> bool {
    entry
        .fields_v1
        .as_ref()
        .and_then(|f| f.0.get("f:status"))
        .and_then(|s| s.get(field))
        .is_some_and(|v| !v.is_null())
}

/// The Velero field manager whose write `new` shows, if it is a queue
/// write: compared with `old` (the previous version the controller saw;
/// `None` for a Backup seen for the first time), the phase changed to
/// `Queued` or `ReadyToStart` and a Velero manager owns `status.phase`, or
/// the position changed to a non-zero value and a Velero manager owns
/// `status.queuePosition`. `ours` (this controller's manager) never counts.
pub fn velero_queue_write(old: Option<&Backup>, new: &Backup, ours: &str) -> Option<String> {
    let phase = new.phase();
    let position = new.queue_position();
    let phase_write = matches!(phase, BackupPhase::Queued | BackupPhase::ReadyToStart)
        && old.is_none_or(|o| o.phase() != phase);
    let position_write = position > 0 && old.is_none_or(|o| o.queue_position() != position);
    if !phase_write && !position_write {
        return None;
    }
    new.managed_fields()
        .iter()
        .filter(|e| {
            e.manager
                .as_deref()
                .is_some_and(|m| m != ours && m.starts_with(VELERO_MANAGER_PREFIX))
        })
        .find(|e| {
            (phase_write && status_field(e, "f:phase"))
                || (position_write && status_field(e, "f:queuePosition"))
        })
        .and_then(|e| e.manager.clone())
}

/// The Velero field manager and the phase, when `new` shows a Velero
/// server older than 1.18 starting a Backup: compared with `old` (the
/// previous version the controller saw, by a watch event: a relist may
/// skip versions), the phase went from `New` (or none) or `Queued` to one
/// other than `Queued`, `ReadyToStart` and `Deleting`, and a Velero
/// manager owns `status.phase`. In 1.18 a Backup leaves `Queued` only for
/// `ReadyToStart` (a queue's write) or `Deleting`, and only its backup
/// controller starts Backups, from `ReadyToStart`. `None` when `old` is
/// unknown: a first sighting shows no move.
pub fn pre_queue_start(old: Option<&Backup>, new: &Backup, ours: &str) -> Option<(String, Seen)> {
    let old = old?;
    let phase = new.phase();
    if !matches!(old.phase(), BackupPhase::New | BackupPhase::Queued)
        || matches!(
            phase,
            BackupPhase::New
                | BackupPhase::Queued
                | BackupPhase::ReadyToStart
                | BackupPhase::Deleting
        )
    {
        return None;
    }
    new.managed_fields()
        .iter()
        .filter(|e| {
            e.manager
                .as_deref()
                .is_some_and(|m| m != ours && m.starts_with(VELERO_MANAGER_PREFIX))
        })
        .find(|e| status_field(e, "f:phase"))
        .and_then(|e| e.manager.clone())
        .map(|manager| {
            let seen = Seen::PreQueueStart {
                from: old.phase().as_str().to_owned(),
                to: phase.as_str().to_owned(),
            };
            (manager, seen)
        })
}

/// What the controller knows of the Deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeploymentRead {
    /// Read, with its verdict.
    Read(DeploymentVerdict),
    /// Not read: not found, forbidden, or another error (the text says
    /// which); Velero's writes decide.
    Unavailable(String),
}

impl std::fmt::Display for DeploymentRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Read(DeploymentVerdict::ServerTooOld(image)) => {
                write!(f, "Velero older than 1.18 ({image})")
            }
            Self::Read(DeploymentVerdict::QueueEnabled) => {
                write!(f, "queue controller enabled (no {DISABLE_FLAG})")
            }
            Self::Read(DeploymentVerdict::QueueDisabled) => {
                write!(f, "queue controller disabled ({DISABLE_FLAG}, rolled out)")
            }
            Self::Read(DeploymentVerdict::RollingOut(updated, replicas)) => write!(
                f,
                "{DISABLE_FLAG} rolling out ({updated} of {replicas} replicas updated)"
            ),
            Self::Unavailable(why) => write!(f, "not read: {why}"),
        }
    }
}

/// What a write by Velero showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Velero's queue controller queued or started a Backup.
    QueueWrite,
    /// A Velero server older than 1.18 started a `New` or `Queued` Backup.
    PreQueueStart {
        /// The phase the controller saw before.
        from: String,
        /// The phase Velero wrote.
        to: String,
    },
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::QueueWrite => f.write_str("a queue write"),
            Self::PreQueueStart { from, to } => write!(f, "a start from {from} to {to}"),
        }
    }
}

/// A write by Velero that shows its queue controller or an old server
/// running, as the watch showed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sighting {
    /// The Backup written.
    pub backup: String,
    /// Velero's field manager.
    pub manager: String,
    /// What the write showed.
    pub seen: Seen,
    /// When the controller saw it.
    pub at: Timestamp,
}

/// Whether this controller may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Velero's queue is disabled (or nothing shows it runs).
    Open,
    /// Velero's queue runs.
    Closed(Stop),
    /// The Velero server is older than 1.18.
    VeleroTooOld(Stop),
}

/// Why the controller stops writing, as [`Gate::decide`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// The message for logs, the Event and `/readyz`.
    pub message: String,
    /// The Backup whose write by Velero decided; `None` when the Velero
    /// Deployment did.
    pub backup: Option<String>,
}

impl Stop {
    fn by_deployment(message: String) -> Self {
        Stop {
            message,
            backup: None,
        }
    }

    fn by_sighting(message: String, sighting: &Sighting) -> Self {
        Stop {
            message,
            backup: Some(sighting.backup.clone()),
        }
    }
}

/// The state behind [`Decision`]: the last Deployment read and the last
/// sighting of a Velero queue write. Pure: the caller reads the Deployment
/// and passes `now`.
#[derive(Debug, Clone, Default)]
pub struct Gate {
    /// The last read of the Deployment.
    pub deployment: Option<DeploymentRead>,
    /// The last queue sighting still believed.
    pub sighting: Option<Sighting>,
    /// The last sighting of a server older than 1.18 still believed.
    pub old_server: Option<Sighting>,
}

impl Gate {
    /// Records a write by Velero's `manager` on `backup` showing `seen`.
    pub fn sighted(&mut self, backup: String, manager: String, seen: Seen, now: Timestamp) {
        let sighting = Sighting {
            backup,
            manager,
            seen,
            at: now,
        };
        match sighting.seen {
            Seen::QueueWrite => self.sighting = Some(sighting),
            Seen::PreQueueStart { .. } => self.old_server = Some(sighting),
        }
    }

    /// Decides, given `deployment_name`/`namespace` (for the message), the
    /// creation time of the oldest `New` Backup, `now` and the re-check
    /// interval `grace`.
    pub fn decide(
        &mut self,
        namespace: &str,
        deployment_name: &str,
        oldest_new: Option<Timestamp>,
        now: Timestamp,
        grace: Duration,
    ) -> Decision {
        let older_than_grace =
            |t: Timestamp| Duration::try_from(now.duration_since(t)).is_ok_and(|d| d >= grace);
        // A New Backup nobody started for the grace period: no Velero
        // server older than 1.18 runs (it starts New Backups at once), nor
        // Velero's queue (it queues them at once).
        let left_alone = |sighting: &Sighting| {
            older_than_grace(sighting.at) && oldest_new.is_some_and(older_than_grace)
        };
        if let Some(DeploymentRead::Read(DeploymentVerdict::ServerTooOld(image))) = &self.deployment
        {
            return Decision::VeleroTooOld(Stop::by_deployment(format!(
                "Deployment {namespace}/{deployment_name} runs the Velero server image {image}, older than 1.18: it has no backup queue and starts every New Backup itself, beside this controller's queue; upgrade Velero to 1.18 or later. backup-queue-controller writes nothing until then"
            )));
        }
        if self.old_server.as_ref().is_some_and(left_alone) {
            self.old_server = None;
        }
        if let Some(old) = &self.old_server {
            let (from, to) = match &old.seen {
                Seen::PreQueueStart { from, to } => (from.as_str(), to.as_str()),
                Seen::QueueWrite => ("New", "a started phase"),
            };
            let message = format!(
                "a Velero server older than 1.18 is running: field manager {:?} moved Backup {} from {from} to {to}, which Velero 1.18's backup controller never does (it starts only ReadyToStart Backups); upgrade Velero to 1.18 or later. backup-queue-controller writes nothing until then",
                old.manager, old.backup
            );
            return Decision::VeleroTooOld(Stop::by_sighting(message, old));
        }
        match &self.deployment {
            Some(DeploymentRead::Read(DeploymentVerdict::QueueEnabled)) => {
                return Decision::Closed(Stop::by_deployment(format!(
                    "Velero's own backup queue controller is enabled: Deployment {namespace}/{deployment_name} runs the Velero server without {DISABLE_FLAG}; add {DISABLE_FLAG} to the Velero server's args. backup-queue-controller writes nothing until then"
                )));
            }
            Some(DeploymentRead::Read(DeploymentVerdict::RollingOut(updated, replicas))) => {
                return Decision::Closed(Stop::by_deployment(format!(
                    "Deployment {namespace}/{deployment_name} has {DISABLE_FLAG}, but its rollout is not finished ({updated} of {replicas} replicas updated): Velero's own backup queue controller may still run. backup-queue-controller writes nothing until the rollout finishes"
                )));
            }
            Some(DeploymentRead::Read(DeploymentVerdict::QueueDisabled)) => return Decision::Open,
            Some(DeploymentRead::Read(DeploymentVerdict::ServerTooOld(_)))
            | Some(DeploymentRead::Unavailable(_))
            | None => {}
        }
        let Some(sighting) = &self.sighting else {
            return Decision::Open;
        };
        if left_alone(sighting) {
            self.sighting = None;
            return Decision::Open;
        }
        let why = match &self.deployment {
            Some(DeploymentRead::Unavailable(why)) => {
                format!(" (Deployment {namespace}/{deployment_name} not read: {why})")
            }
            _ => String::new(),
        };
        let message = format!(
            "Velero's own backup queue controller is running: field manager {:?} queued or started Backup {}{why}; start the Velero server with {DISABLE_FLAG}. backup-queue-controller writes nothing until then",
            sighting.manager, sighting.backup
        );
        Decision::Closed(Stop::by_sighting(message, sighting))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_disable_flag_is_read_in_every_spelling() {
        assert!(disables_backup_queue(&args(&[
            "server",
            "--disable-controllers=backup-queue"
        ])));
        assert!(disables_backup_queue(&args(&[
            "server",
            "--disable-controllers",
            "schedule,backup-queue"
        ])));
        assert!(disables_backup_queue(&args(&[
            "server",
            "--disable-controllers=schedule",
            "--disable-controllers= backup-queue"
        ])));
        assert!(!disables_backup_queue(&args(&["server"])));
        assert!(!disables_backup_queue(&args(&[
            "server",
            "--disable-controllers=backup,schedule"
        ])));
        assert!(!disables_backup_queue(&args(&[
            "server",
            "--disable-controllers"
        ])));
    }

    fn deployment(
        args: &[&str],
        generation: i64,
        observed: i64,
        updated: i32,
        replicas: i32,
    ) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "velero", "generation": generation},
            "spec": {"selector": {}, "template": {"spec": {"containers": [
                {"name": "sidecar", "args": ["--disable-controllers=backup-queue"]},
                {"name": "velero", "command": ["/velero"], "args": args},
            ]}}},
            "status": {"observedGeneration": observed, "updatedReplicas": updated, "replicas": replicas}
        }))
        .unwrap()
    }

    #[test]
    fn the_velero_container_decides_and_a_rollout_must_finish() {
        assert_eq!(
            deployment_verdict(&deployment(&["server"], 1, 1, 1, 1)),
            DeploymentVerdict::QueueEnabled
        );
        let flag = ["server", "--disable-controllers=backup-queue"];
        assert_eq!(
            deployment_verdict(&deployment(&flag, 2, 2, 1, 1)),
            DeploymentVerdict::QueueDisabled
        );
        assert_eq!(
            deployment_verdict(&deployment(&flag, 2, 1, 1, 1)),
            DeploymentVerdict::RollingOut(1, 1)
        );
        assert_eq!(
            deployment_verdict(&deployment(&flag, 2, 2, 1, 2)),
            DeploymentVerdict::RollingOut(1, 2)
        );
    }

    fn backup(phase: &str, position: i64, manager: &str, fields: serde_json::Value) -> Backup {
        serde_json::from_value(json!({
            "metadata": {"name": "b", "managedFields": [
                {"manager": manager, "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:status": fields}}
            ]},
            "spec": {},
            "status": {"phase": phase, "queuePosition": position}
        }))
        .unwrap()
    }

    #[test]
    fn velero_queue_writes_are_phase_or_position_changes_by_velero() {
        let ours = "backup-queue-controller";
        let queued = backup(
            "Queued",
            1,
            "velero-server",
            json!({"f:phase": {}, "f:queuePosition": {}}),
        );
        assert_eq!(
            velero_queue_write(None, &queued, ours).as_deref(),
            Some("velero-server")
        );
        // The dequeue: position dropped, phase ReadyToStart owned by Velero.
        let started = backup("ReadyToStart", 0, "velero-server", json!({"f:phase": {}}));
        assert_eq!(
            velero_queue_write(Some(&queued), &started, ours).as_deref(),
            Some("velero-server")
        );
        // Unchanged: an echo, a label change.
        assert_eq!(velero_queue_write(Some(&started), &started, ours), None);
        // Velero's backup controller, not its queue.
        let running = backup("InProgress", 0, "velero-server", json!({"f:phase": {}}));
        assert_eq!(velero_queue_write(Some(&started), &running, ours), None);
        // Ours, or a manager that is not Velero's.
        assert_eq!(
            velero_queue_write(
                None,
                &backup("Queued", 1, ours, json!({"f:phase": {}})),
                ours
            ),
            None
        );
        assert_eq!(
            velero_queue_write(
                None,
                &backup("Queued", 1, "kubectl", json!({"f:phase": {}})),
                ours
            ),
            None
        );
    }

    #[test]
    fn the_deployment_decides_when_read_and_sightings_otherwise() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let later = |s: i64| t0 + jiff::SignedDuration::from_secs(s);
        let grace = Duration::from_secs(10);
        let mut gate = Gate::default();
        assert_eq!(
            gate.decide("velero", "velero", None, t0, grace),
            Decision::Open
        );
        gate.sighted("b1".into(), "velero-server".into(), Seen::QueueWrite, t0);
        let Decision::Closed(Stop {
            message: msg,
            backup,
        }) = gate.decide("velero", "velero", None, later(1), grace)
        else {
            panic!("a sighting closes the gate");
        };
        assert_eq!(backup.as_deref(), Some("b1"));
        assert!(
            msg.contains(DISABLE_FLAG) && msg.contains("velero-server"),
            "{msg}"
        );
        // A New backup left alone for the grace period: the sighting is stale.
        assert!(matches!(
            gate.decide("velero", "velero", Some(later(2)), later(5), grace),
            Decision::Closed(_)
        ));
        assert_eq!(
            gate.decide("velero", "velero", Some(later(2)), later(12), grace),
            Decision::Open
        );
        assert!(gate.sighting.is_none());
        // A Deployment read wins over sightings either way.
        gate.sighted(
            "b2".into(),
            "velero-server".into(),
            Seen::QueueWrite,
            later(13),
        );
        gate.deployment = Some(DeploymentRead::Read(DeploymentVerdict::QueueDisabled));
        assert_eq!(
            gate.decide("velero", "velero", None, later(14), grace),
            Decision::Open
        );
        gate.deployment = Some(DeploymentRead::Read(DeploymentVerdict::QueueEnabled));
        gate.sighting = None;
        let Decision::Closed(Stop {
            message: msg,
            backup,
        }) = gate.decide("velero", "velero", None, later(14), grace)
        else {
            panic!("an enabled queue closes the gate");
        };
        assert_eq!(backup.as_deref(), None);
        assert!(
            msg.contains("Deployment velero/velero") && msg.contains(DISABLE_FLAG),
            "{msg}"
        );
    }

    #[test]
    fn image_tags_name_their_release_and_nothing_else_does() {
        for (image, release) in [
            ("velero/velero:v1.17.2", Some((1, 17))),
            ("velero/velero:v1.18.3", Some((1, 18))),
            ("registry.example:5000/velero/velero:1.16", Some((1, 16))),
            ("velero/velero:v1.18.0-rc.1", Some((1, 18))),
            ("velero/velero:v1.17.2@sha256:0123abcd", Some((1, 17))),
            ("velero/velero@sha256:0123abcd", None),
            ("registry.example:5000/velero/velero", None),
            ("velero/velero:latest", None),
            ("velero/velero:main", None),
            ("velero/velero", None),
        ] {
            assert_eq!(image_release(image), release, "{image}");
        }
    }

    #[test]
    fn a_deployment_running_velero_1_17_is_too_old_whatever_its_flags() {
        let with_images = |sidecar: &str, velero: &str| {
            let mut d = deployment(&["server"], 1, 1, 1, 1);
            let spec = d
                .spec
                .as_mut()
                .and_then(|s| s.template.spec.as_mut())
                .unwrap();
            spec.containers[0].image = Some(sidecar.into());
            spec.containers[1].image = Some(velero.into());
            d
        };
        assert_eq!(
            deployment_verdict(&with_images(
                "velero/velero:v1.18.3",
                "velero/velero:v1.17.2"
            )),
            DeploymentVerdict::ServerTooOld("velero/velero:v1.17.2".into())
        );
        // The velero container decides, and an unknown tag is no finding.
        assert_eq!(
            deployment_verdict(&with_images("velero/velero:v1.17.2", "velero/velero:main")),
            DeploymentVerdict::QueueEnabled
        );
    }

    #[test]
    fn only_a_velero_start_of_a_new_backup_shows_a_server_older_than_1_18() {
        let ours = "backup-queue-controller";
        let pre = |from: &str, to: &str| Seen::PreQueueStart {
            from: from.into(),
            to: to.into(),
        };
        let new = backup("New", 0, "kubectl", json!({}));
        let started = backup("InProgress", 0, "velero-server", json!({"f:phase": {}}));
        assert_eq!(
            pre_queue_start(Some(&new), &started, ours),
            Some(("velero-server".into(), pre("New", "InProgress")))
        );
        let failed = backup(
            "FailedValidation",
            0,
            "velero-server",
            json!({"f:phase": {}}),
        );
        assert_eq!(
            pre_queue_start(Some(&new), &failed, ours),
            Some(("velero-server".into(), pre("New", "FailedValidation")))
        );
        // Velero 1.18's own moves, a deletion, a Backup first seen started,
        // and writers that are not Velero's show nothing.
        for (old, new) in [
            (
                Some(&new),
                backup("Queued", 1, "velero-server", json!({"f:phase": {}})),
            ),
            (
                Some(&new),
                backup("ReadyToStart", 0, "velero-server", json!({"f:phase": {}})),
            ),
            (
                Some(&new),
                backup("Deleting", 0, "velero-server", json!({"f:phase": {}})),
            ),
            (None, started.clone()),
            (
                Some(&new),
                backup("InProgress", 0, ours, json!({"f:phase": {}})),
            ),
            (
                Some(&new),
                backup("InProgress", 0, "kubectl", json!({"f:phase": {}})),
            ),
        ] {
            assert_eq!(pre_queue_start(old, &new, ours), None, "{new:?}");
        }
        // From Queued (this controller won the race to the New Backup).
        let queued = backup("Queued", 1, ours, json!({"f:phase": {}}));
        assert_eq!(
            pre_queue_start(Some(&queued), &started, ours),
            Some(("velero-server".into(), pre("Queued", "InProgress")))
        );
        let ready = backup("ReadyToStart", 0, ours, json!({"f:phase": {}}));
        assert_eq!(pre_queue_start(Some(&ready), &started, ours), None);
    }

    #[test]
    fn an_old_server_stops_the_controller_until_a_new_backup_is_left_alone() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let later = |s: i64| t0 + jiff::SignedDuration::from_secs(s);
        let grace = Duration::from_secs(10);
        let mut gate = Gate {
            deployment: Some(DeploymentRead::Read(DeploymentVerdict::QueueDisabled)),
            ..Gate::default()
        };
        gate.sighted(
            "b1".into(),
            "velero-server".into(),
            Seen::PreQueueStart {
                from: "New".into(),
                to: "InProgress".into(),
            },
            t0,
        );
        // The Deployment's flag does not outweigh an old server seen at work.
        let Decision::VeleroTooOld(Stop {
            message: msg,
            backup,
        }) = gate.decide("velero", "velero", None, later(1), grace)
        else {
            panic!("an old server closes the gate");
        };
        assert_eq!(backup.as_deref(), Some("b1"));
        assert!(
            msg.contains("velero-server")
                && msg.contains("from New to InProgress")
                && msg.contains("1.18"),
            "{msg}"
        );
        assert!(matches!(
            gate.decide("velero", "velero", Some(later(2)), later(5), grace),
            Decision::VeleroTooOld(_)
        ));
        assert_eq!(
            gate.decide("velero", "velero", Some(later(2)), later(12), grace),
            Decision::Open
        );
        // The Deployment's image decides at once.
        gate.deployment = Some(DeploymentRead::Read(DeploymentVerdict::ServerTooOld(
            "velero/velero:v1.17.2".into(),
        )));
        let Decision::VeleroTooOld(Stop {
            message: msg,
            backup,
        }) = gate.decide("velero", "velero", None, later(13), grace)
        else {
            panic!("an old image closes the gate");
        };
        assert_eq!(backup.as_deref(), None);
        assert!(
            msg.contains("Deployment velero/velero") && msg.contains("velero/velero:v1.17.2"),
            "{msg}"
        );
    }
}
