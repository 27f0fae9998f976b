//! The loads the gate governs (documented on [`Load`]).

use std::fmt;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// The four kinds of load that share one prepare queue (L3.9).
///
/// The declaration order is the tie-break order of [`FifoKey`] and the order
/// of every per-kind listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum LoadKind {
    /// `datauploads.velero.io`: CSI snapshot data movement, backup side.
    DataUpload,
    /// `datadownloads.velero.io`: CSI snapshot data movement, restore side.
    DataDownload,
    /// `podvolumebackups.velero.io`: fs-backup.
    PodVolumeBackup,
    /// `podvolumerestores.velero.io`: fs-restore.
    PodVolumeRestore,
}

impl LoadKind {
    /// All four kinds, in declaration order.
    pub const ALL: [LoadKind; 4] = [
        LoadKind::DataUpload,
        LoadKind::DataDownload,
        LoadKind::PodVolumeBackup,
        LoadKind::PodVolumeRestore,
    ];

    /// Number of kinds (the `kinds` factor of the optimistic overshoot bound,
    /// L3.14).
    pub const COUNT: usize = 4;

    /// Position of the kind in [`LoadKind::ALL`].
    pub fn index(self) -> usize {
        match self {
            LoadKind::DataUpload => 0,
            LoadKind::DataDownload => 1,
            LoadKind::PodVolumeBackup => 2,
            LoadKind::PodVolumeRestore => 3,
        }
    }

    /// The Kubernetes `kind` string.
    pub fn as_str(self) -> &'static str {
        match self {
            LoadKind::DataUpload => "DataUpload",
            LoadKind::DataDownload => "DataDownload",
            LoadKind::PodVolumeBackup => "PodVolumeBackup",
            LoadKind::PodVolumeRestore => "PodVolumeRestore",
        }
    }
}

impl fmt::Display for LoadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `status.phase` of a load. All four kinds use the same phase names.
///
/// Phases only move forward: `New → Accepted → Prepared → InProgress →
/// {Completed, Failed, Canceled}`, with `Canceling` before `Canceled` and
/// jumps to `Failed`/`Canceled` from any non-terminal phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Phase {
    /// `""` or `New`: created, not yet accepted by any node-agent. The only
    /// phase the gate is evaluated for (L3.13).
    New,
    /// Accepted by a node-agent; the expose (snapshot, PVC, data-mover pod)
    /// is being created.
    Accepted,
    /// The data-mover pod is running; waiting for a data-path slot (L3.6).
    Prepared,
    /// Data is being transferred.
    InProgress,
    /// Cancellation requested while running.
    Canceling,
    /// Terminal: cancelled.
    Canceled,
    /// Terminal: completed.
    Completed,
    /// Terminal: failed.
    Failed,
    /// A phase string this crate does not know. Never "in preparation" by
    /// phase, never a recount trigger, never gated.
    Unrecognized,
}

impl Phase {
    /// Every phase, in declaration order (for exhaustive tests and tables).
    pub const ALL: [Phase; 9] = [
        Phase::New,
        Phase::Accepted,
        Phase::Prepared,
        Phase::InProgress,
        Phase::Canceling,
        Phase::Canceled,
        Phase::Completed,
        Phase::Failed,
        Phase::Unrecognized,
    ];

    /// Maps `status.phase` as read from the API (`None` or `""` mean `New`).
    pub fn from_api(phase: Option<&str>) -> Phase {
        match phase.unwrap_or("") {
            "" | "New" => Phase::New,
            "Accepted" => Phase::Accepted,
            "Prepared" => Phase::Prepared,
            "InProgress" => Phase::InProgress,
            "Canceling" => Phase::Canceling,
            "Canceled" => Phase::Canceled,
            "Completed" => Phase::Completed,
            "Failed" => Phase::Failed,
            _ => Phase::Unrecognized,
        }
    }

    /// `Accepted` or `Prepared`: the phases of a load under expose.
    pub fn is_preparing(self) -> bool {
        matches!(self, Phase::Accepted | Phase::Prepared)
    }

    /// A phase the load can never return to preparation from (phases only
    /// move forward). Used by the exact-mode ledger clean-up.
    pub fn is_past_preparation(self) -> bool {
        matches!(
            self,
            Phase::InProgress
                | Phase::Canceling
                | Phase::Canceled
                | Phase::Completed
                | Phase::Failed
        )
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Identity of a load: kind, namespace, name and UID. The UID distinguishes a
/// load from a later one that reuses the name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LoadId {
    /// Kind of the load.
    pub kind: LoadKind,
    /// `metadata.namespace` (Velero's namespace in practice).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
}

impl LoadId {
    /// Builds an id.
    pub fn new(
        kind: LoadKind,
        namespace: impl Into<String>,
        name: impl Into<String>,
        uid: impl Into<String>,
    ) -> Self {
        LoadId {
            kind,
            namespace: namespace.into(),
            name: name.into(),
            uid: uid.into(),
        }
    }
}

impl fmt::Display for LoadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// What the gate needs to know about one load object.
///
/// The loads the gate governs: their kinds, phases, identity and the
/// "in preparation" predicate (L3.11).
///
/// These are plain values, not Velero CRD types: a controller maps each
/// DataUpload, DataDownload, PodVolumeBackup or PodVolumeRestore object to a
/// [`Load`] (kind, metadata, `status.phase`, the `velero.io/expose-on-going`
/// label and `spec.cancel`) and hands it to the count cache and the gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Load {
    /// Identity.
    pub id: LoadId,
    /// `status.phase`.
    pub phase: Phase,
    /// The `velero.io/expose-on-going` label is `"true"` (Velero sets it
    /// while the load is being exposed: added in the update that moves the
    /// load to `Accepted`, removed in the update that moves it to
    /// `InProgress` or to a terminal or cancel phase, L3.11).
    pub expose_on_going: bool,
    /// `spec.cancel`: a cancelled `New` load is not gated (L3.13) and does
    /// not wait in the queue.
    pub cancel_requested: bool,
    /// `metadata.creationTimestamp`: first key of the FIFO order.
    pub created: Timestamp,
    /// `metadata.resourceVersion`, if known. The accept update must be
    /// conditional on it (optimistic concurrency), as Velero's is.
    pub resource_version: Option<String>,
    /// Whether this node-agent processes the load: always for DataUpload and
    /// DataDownload (all node-agents race to accept them), for a
    /// PodVolumeBackup only if `spec.node` is this node, for a
    /// PodVolumeRestore only if Velero's `shouldProcess` says so (L3.13).
    /// Loads not handled here still count when in preparation, but never
    /// wait in this node's queue, so a load whose node is down cannot block
    /// the head of the queue on the other nodes.
    pub handled_here: bool,
}

impl Load {
    /// "In preparation": the expose label is set, or the phase is `Accepted`
    /// or `Prepared`. Velero counts the label only (L3.10, L3.11); the two
    /// coincide because the label is added and removed in the same updates
    /// that enter and leave those phases. Counting either makes a load whose
    /// label was lost still count (see docs/compatibility.md).
    pub fn in_preparation(&self) -> bool {
        in_preparation(self.phase, self.expose_on_going)
    }

    /// Waiting for admission: phase `New` and no cancellation requested.
    pub fn is_waiting(&self) -> bool {
        self.phase == Phase::New && !self.cancel_requested && !self.in_preparation()
    }

    /// Waiting, and handled by this node: a member of this node's queue.
    pub fn is_queued_here(&self) -> bool {
        self.handled_here && self.is_waiting()
    }

    /// The key of the first-in first-out order of waiting loads.
    pub fn fifo_key(&self) -> FifoKey {
        FifoKey {
            created: self.created,
            namespace: self.id.namespace.clone(),
            name: self.id.name.clone(),
            kind: self.id.kind,
            uid: self.id.uid.clone(),
        }
    }
}

/// The "in preparation" predicate on its two inputs (see
/// [`Load::in_preparation`]).
pub fn in_preparation(phase: Phase, expose_on_going: bool) -> bool {
    expose_on_going || phase.is_preparing()
}

/// Order in which waiting loads are admitted, across all four kinds: by
/// creation timestamp, then namespace, then name, then kind (in
/// [`LoadKind::ALL`] order), then UID.
///
/// `creationTimestamp` has a resolution of one second, so loads of a burst
/// often tie on it; the name tie-break makes the order total and identical on
/// every node, which is what lets independent gates agree on who is next.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FifoKey {
    /// `metadata.creationTimestamp`.
    pub created: Timestamp,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// Kind.
    pub kind: LoadKind,
    /// `metadata.uid`.
    pub uid: String,
}

impl FifoKey {
    /// The load id this key belongs to.
    pub fn id(&self) -> LoadId {
        LoadId::new(self.kind, &self.namespace, &self.name, &self.uid)
    }
}

/// A count for each of the four kinds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KindCounts {
    /// DataUpload count.
    #[serde(rename = "DataUpload")]
    pub data_upload: u32,
    /// DataDownload count.
    #[serde(rename = "DataDownload")]
    pub data_download: u32,
    /// PodVolumeBackup count.
    #[serde(rename = "PodVolumeBackup")]
    pub pod_volume_backup: u32,
    /// PodVolumeRestore count.
    #[serde(rename = "PodVolumeRestore")]
    pub pod_volume_restore: u32,
}

impl KindCounts {
    /// The count of one kind.
    pub fn get(&self, kind: LoadKind) -> u32 {
        match kind {
            LoadKind::DataUpload => self.data_upload,
            LoadKind::DataDownload => self.data_download,
            LoadKind::PodVolumeBackup => self.pod_volume_backup,
            LoadKind::PodVolumeRestore => self.pod_volume_restore,
        }
    }

    /// Mutable access to the count of one kind.
    pub fn get_mut(&mut self, kind: LoadKind) -> &mut u32 {
        match kind {
            LoadKind::DataUpload => &mut self.data_upload,
            LoadKind::DataDownload => &mut self.data_download,
            LoadKind::PodVolumeBackup => &mut self.pod_volume_backup,
            LoadKind::PodVolumeRestore => &mut self.pod_volume_restore,
        }
    }

    /// Sum over the four kinds (what the gate compares with the limit,
    /// L3.10).
    pub fn total(&self) -> u64 {
        LoadKind::ALL.iter().map(|k| u64::from(self.get(*k))).sum()
    }
}

impl fmt::Display for KindCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DataUpload {}, DataDownload {}, PodVolumeBackup {}, PodVolumeRestore {}",
            self.data_upload, self.data_download, self.pod_volume_backup, self.pod_volume_restore
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_from_api_maps_empty_and_new_to_new() {
        assert_eq!(Phase::from_api(None), Phase::New);
        assert_eq!(Phase::from_api(Some("")), Phase::New);
        assert_eq!(Phase::from_api(Some("New")), Phase::New);
        assert_eq!(Phase::from_api(Some("Prepared")), Phase::Prepared);
        assert_eq!(Phase::from_api(Some("accepted")), Phase::Unrecognized);
    }

    #[test]
    fn in_preparation_is_label_or_accepted_or_prepared() {
        for phase in Phase::ALL {
            assert!(in_preparation(phase, true));
            assert_eq!(
                in_preparation(phase, false),
                phase == Phase::Accepted || phase == Phase::Prepared
            );
        }
    }

    #[test]
    fn kind_index_matches_all_order() {
        for (i, k) in LoadKind::ALL.iter().enumerate() {
            assert_eq!(k.index(), i);
        }
    }
}
