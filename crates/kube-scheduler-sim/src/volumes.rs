//! The storage objects the volume filters read (C.50–C.54): claims,
//! volumes, storage classes and CSINodes, indexed once, and what a pod's
//! `spec.volumes` asks of them.
//!
//! Placed pods contribute to three counts kept incrementally by
//! [`crate::ClusterState`]: the pods using each claim (ReadWriteOncePod,
//! VolumeRestrictions), the inline disks on each node (VolumeRestrictions)
//! and the unique CSI volumes attached to each node per driver
//! (NodeVolumeLimits). Each update is proportional to the pod's own volumes.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod, Volume};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube_validation::namespace_or_default;

/// Annotation the PV controller sets once a claim is bound
/// (`pv.kubernetes.io/bind-completed`).
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// Annotation naming the node chosen for a delayed claim
/// (`volume.kubernetes.io/selected-node`).
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The beta storage-class annotation, read before `spec.storageClassName`.
pub const ANN_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// A class whose volumes are never provisioned dynamically.
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// The storage objects of a cluster snapshot, as read from the API.
#[derive(Debug, Clone, Default)]
pub struct StorageObjects {
    /// PersistentVolumeClaims.
    pub claims: Vec<PersistentVolumeClaim>,
    /// PersistentVolumes.
    pub volumes: Vec<PersistentVolume>,
    /// StorageClasses.
    pub classes: Vec<StorageClass>,
    /// CSINodes (per-node attach limits).
    pub csi_nodes: Vec<CSINode>,
}

/// The indexed storage objects of a [`crate::ClusterState`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Storage {
    pub(crate) claims: HashMap<(String, String), PersistentVolumeClaim>,
    /// By name (sorted: a deterministic order for volume matching).
    pub(crate) volumes: BTreeMap<String, PersistentVolume>,
    pub(crate) classes: HashMap<String, StorageClass>,
    /// Node name → CSI driver → attachable volume count.
    pub(crate) csi_limits: HashMap<String, BTreeMap<String, i64>>,
    /// Pods using each claim (`StorageInfos().IsPVCUsedByPods`).
    pub(crate) claim_users: HashMap<(String, String), u32>,
}

impl Storage {
    pub(crate) fn new(objects: &StorageObjects) -> Self {
        let mut s = Storage::default();
        for c in &objects.claims {
            let ns = namespace_or_default(c.metadata.namespace.as_deref()).to_owned();
            let name = c.metadata.name.clone().unwrap_or_default();
            s.claims.entry((ns, name)).or_insert_with(|| c.clone());
        }
        for v in &objects.volumes {
            let name = v.metadata.name.clone().unwrap_or_default();
            s.volumes.entry(name).or_insert_with(|| v.clone());
        }
        for c in &objects.classes {
            let name = c.metadata.name.clone().unwrap_or_default();
            s.classes.entry(name).or_insert_with(|| c.clone());
        }
        for n in &objects.csi_nodes {
            let limits = n
                .spec
                .drivers
                .iter()
                .filter_map(|d| {
                    let count = d.allocatable.as_ref()?.count?;
                    Some((d.name.clone(), i64::from(count)))
                })
                .collect();
            s.csi_limits
                .entry(n.metadata.name.clone().unwrap_or_default())
                .or_insert(limits);
        }
        s
    }

    pub(crate) fn claim(&self, namespace: &str, name: &str) -> Option<&PersistentVolumeClaim> {
        self.claims.get(&(namespace.to_owned(), name.to_owned()))
    }

    /// The unique CSI volume (`driver/handle`) and its driver that a claim
    /// attaches (`getCSIDriverInfo`): the bound PV's CSI source, else (no
    /// volume name, or the PV is missing) the class's provisioner with a
    /// per-claim handle. In-tree volumes and provisioners are not counted.
    pub(crate) fn attachment(&self, claim: &PersistentVolumeClaim) -> Option<(String, String)> {
        let volume_name = claim_volume_name(claim);
        if !volume_name.is_empty()
            && let Some(pv) = self.volumes.get(volume_name)
        {
            let csi = pv.spec.as_ref()?.csi.as_ref()?;
            if csi.driver.is_empty() || csi.volume_handle.is_empty() {
                return None;
            }
            return Some((
                format!("{}/{}", csi.driver, csi.volume_handle),
                csi.driver.clone(),
            ));
        }
        let class = self.classes.get(claim_class(claim))?;
        let provisioner = class.provisioner.as_str();
        if provisioner.is_empty() || provisioner.starts_with("kubernetes.io/") {
            return None;
        }
        let ns = namespace_or_default(claim.metadata.namespace.as_deref());
        let name = claim.metadata.name.as_deref().unwrap_or_default();
        Some((
            format!("{provisioner}/unbound-claim-{ns}/{name}"),
            provisioner.to_owned(),
        ))
    }
}

/// `GetPersistentVolumeClaimClass`: the beta annotation, else
/// `spec.storageClassName`, else "".
pub fn claim_class(claim: &PersistentVolumeClaim) -> &str {
    if let Some(c) = claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANN_STORAGE_CLASS))
    {
        return c;
    }
    claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or_default()
}

/// `spec.volumeName` ("" when unset).
pub fn claim_volume_name(claim: &PersistentVolumeClaim) -> &str {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or_default()
}

/// Whether a claim is fully bound: a volume name and the
/// `pv.kubernetes.io/bind-completed` annotation, or (for hand-written
/// manifests that lack the annotation) `status.phase: Bound` (C.52).
pub fn claim_is_bound(claim: &PersistentVolumeClaim) -> bool {
    !claim_volume_name(claim).is_empty()
        && (claim
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(ANN_BIND_COMPLETED))
            || claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
}

/// Whether a class binds `WaitForFirstConsumer` (an absent mode is the API
/// server's default, `Immediate`).
pub fn class_waits_for_consumer(class: &StorageClass) -> bool {
    class.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer")
}

/// `LabelZonesToSet`: a `__`-separated list of zones, each trimmed; an
/// empty element makes the whole value invalid (`None`).
pub fn label_zones_to_set(value: &str) -> Option<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    for zone in value.split("__") {
        let z = zone.trim();
        if z.is_empty() {
            return None;
        }
        out.insert(z.to_owned());
    }
    Some(out)
}

/// An inline volume VolumeRestrictions checks for conflicts (C.50).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum DiskVolume {
    /// GCE persistent disk.
    Gce { pd: String, read_only: bool },
    /// AWS EBS volume.
    Ebs { id: String },
    /// iSCSI target.
    Iscsi { iqn: String, read_only: bool },
    /// Ceph RBD image.
    Rbd {
        monitors: Vec<String>,
        pool: String,
        image: String,
        read_only: bool,
    },
}

impl DiskVolume {
    fn of(v: &Volume) -> Option<Self> {
        if let Some(g) = &v.gce_persistent_disk {
            return Some(Self::Gce {
                pd: g.pd_name.clone(),
                read_only: g.read_only == Some(true),
            });
        }
        if let Some(e) = &v.aws_elastic_block_store {
            return Some(Self::Ebs {
                id: e.volume_id.clone(),
            });
        }
        if let Some(i) = &v.iscsi {
            return Some(Self::Iscsi {
                iqn: i.iqn.clone(),
                read_only: i.read_only == Some(true),
            });
        }
        if let Some(r) = &v.rbd {
            return Some(Self::Rbd {
                monitors: r.monitors.clone(),
                // The API server's default pool.
                pool: r.pool.clone().unwrap_or_else(|| "rbd".to_owned()),
                image: r.image.clone(),
                read_only: r.read_only == Some(true),
            });
        }
        None
    }

    /// `isVolumeConflict` for one pair of volumes.
    pub(crate) fn conflicts(&self, other: &DiskVolume) -> bool {
        match (self, other) {
            (
                Self::Gce { pd, read_only },
                Self::Gce {
                    pd: opd,
                    read_only: oro,
                },
            ) => pd == opd && !(*read_only && *oro),
            (Self::Ebs { id }, Self::Ebs { id: oid }) => id == oid,
            (
                Self::Iscsi { iqn, read_only },
                Self::Iscsi {
                    iqn: oiqn,
                    read_only: oro,
                },
            ) => iqn == oiqn && !(*read_only && *oro),
            (
                Self::Rbd {
                    monitors,
                    pool,
                    image,
                    read_only,
                },
                Self::Rbd {
                    monitors: om,
                    pool: op,
                    image: oi,
                    read_only: oro,
                },
            ) => {
                monitors.iter().any(|m| om.contains(m))
                    && pool == op
                    && image == oi
                    && !(*read_only && *oro)
            }
            _ => false,
        }
    }

    /// In plain words.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Gce { pd, .. } => format!("GCE persistent disk {pd:?}"),
            Self::Ebs { id } => format!("AWS EBS volume {id:?}"),
            Self::Iscsi { iqn, .. } => format!("iSCSI target {iqn:?}"),
            Self::Rbd { pool, image, .. } => format!("Ceph RBD image {pool}/{image}"),
        }
    }
}

/// A claim a pod's volume uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClaimUse {
    /// The claim's name (`<pod>-<volume>` for a generic ephemeral volume).
    pub(crate) claim: String,
    /// A generic ephemeral volume.
    pub(crate) ephemeral: bool,
}

/// What a pod's `spec.volumes` asks of storage, in spec order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PodVolumes {
    /// The pod's UID (checks that an ephemeral claim is the pod's own).
    pub(crate) uid: Option<String>,
    /// Claims of `persistentVolumeClaim` and `ephemeral` volumes.
    pub(crate) claims: Vec<ClaimUse>,
    /// Inline GCE PD, AWS EBS, iSCSI and RBD volumes.
    pub(crate) disks: Vec<DiskVolume>,
    /// Whether `spec.volumes` is non-empty.
    pub(crate) any: bool,
}

impl PodVolumes {
    pub(crate) fn new(pod: &Pod) -> Self {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let volumes = pod
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_deref())
            .unwrap_or_default();
        let mut out = PodVolumes {
            uid: pod.metadata.uid.clone().filter(|u| !u.is_empty()),
            any: !volumes.is_empty(),
            ..Default::default()
        };
        for v in volumes {
            if let Some(c) = &v.persistent_volume_claim {
                out.claims.push(ClaimUse {
                    claim: c.claim_name.clone(),
                    ephemeral: false,
                });
            } else if v.ephemeral.is_some() {
                out.claims.push(ClaimUse {
                    claim: format!("{name}-{}", v.name),
                    ephemeral: true,
                });
            } else if let Some(d) = DiskVolume::of(v) {
                out.disks.push(d);
            }
        }
        out
    }
}

/// The volume state of one node, counted per pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NodeVolumes {
    /// Inline disks of the pods here, with the number of pods using each.
    pub(crate) disks: Vec<(DiskVolume, u32)>,
    /// Unique CSI volume → (driver, pods using it).
    pub(crate) attached: HashMap<String, (String, u32)>,
    /// Driver → unique volumes attached.
    pub(crate) per_driver: HashMap<String, i64>,
}

impl NodeVolumes {
    pub(crate) fn is_empty(&self) -> bool {
        self.disks.is_empty() && self.attached.is_empty()
    }

    pub(crate) fn add_disks(&mut self, disks: &[DiskVolume], add: bool) {
        for d in disks {
            match self.disks.iter().position(|(e, _)| e == d) {
                Some(i) if add => self.disks[i].1 += 1,
                Some(i) => {
                    self.disks[i].1 -= 1;
                    if self.disks[i].1 == 0 {
                        self.disks.swap_remove(i);
                    }
                }
                None if add => self.disks.push((d.clone(), 1)),
                None => {}
            }
        }
    }

    pub(crate) fn attach(&mut self, unique: &str, driver: &str, add: bool) {
        if add {
            let e = self
                .attached
                .entry(unique.to_owned())
                .or_insert_with(|| (driver.to_owned(), 0));
            e.1 += 1;
            if e.1 == 1 {
                *self.per_driver.entry(driver.to_owned()).or_default() += 1;
            }
        } else if let Some(e) = self.attached.get_mut(unique) {
            e.1 -= 1;
            if e.1 == 0 {
                self.attached.remove(unique);
                if let Some(n) = self.per_driver.get_mut(driver) {
                    *n -= 1;
                    if *n == 0 {
                        self.per_driver.remove(driver);
                    }
                }
            }
        }
    }

    /// A canonical text for the state fingerprint.
    pub(crate) fn fingerprint(&self) -> String {
        let mut disks: Vec<String> = self.disks.iter().map(|d| format!("{d:?}")).collect();
        disks.sort();
        let attached: BTreeMap<&String, &(String, u32)> = self.attached.iter().collect();
        format!("{disks:?} {attached:?}")
    }
}
