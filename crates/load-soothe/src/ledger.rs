//! The exact-mode ledger object (documented on [`Ledger`]).

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::model::{FifoKey, LoadId, LoadKind};

/// The ConfigMap data key holding the ledger JSON.
pub const LEDGER_DATA_KEY: &str = "ledger.json";

/// Default name of the ledger ConfigMap.
pub const DEFAULT_LEDGER_NAME: &str = "velero-prepare-queue-ledger";

/// Format version written in [`Ledger::version`].
pub const LEDGER_FORMAT_VERSION: u32 = 1;

/// How long other nodes leave the acceptance of a load to the node that
/// admitted it (see [`LedgerEntry::admitted_by`]).
pub const ACCEPT_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// What exact mode needs besides the count cache: the ledger as last read
/// and this node-agent's name (written into the entries it adds).
#[derive(Clone, Copy, Debug)]
pub struct ExactView<'a> {
    /// The ledger as last read (watch, own write, or GET after a conflict;
    /// keep the one with the newest resourceVersion).
    pub ledger: &'a LedgerSnapshot,
    /// This node-agent's node name.
    pub node: &'a str,
}

/// One admitted load. Serialised flat: `kind`, `namespace`, `name`, `uid`,
/// `admittedAt`, `admittedBy`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "RawEntry", from = "RawEntry")]
pub struct LedgerEntry {
    /// The admitted load.
    pub id: LoadId,
    /// When it was admitted.
    pub admitted_at: Timestamp,
    /// The node-agent that admitted it. Only that node accepts the load
    /// during [`ACCEPT_GRACE`] after `admitted_at` (so DataUpload/DataDownload
    /// are not accepted by every node in a race); after that any node does,
    /// in case the admitting node died.
    pub admitted_by: String,
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawEntry {
    kind: LoadKind,
    namespace: String,
    name: String,
    uid: String,
    admitted_at: Timestamp,
    admitted_by: String,
}

impl From<RawEntry> for LedgerEntry {
    fn from(r: RawEntry) -> Self {
        LedgerEntry {
            id: LoadId::new(r.kind, r.namespace, r.name, r.uid),
            admitted_at: r.admitted_at,
            admitted_by: r.admitted_by,
        }
    }
}

impl From<LedgerEntry> for RawEntry {
    fn from(e: LedgerEntry) -> Self {
        RawEntry {
            kind: e.id.kind,
            namespace: e.id.namespace,
            name: e.id.name,
            uid: e.id.uid,
            admitted_at: e.admitted_at,
            admitted_by: e.admitted_by,
        }
    }
}

impl LedgerEntry {
    pub(crate) fn new(id: &LoadId, admitted_at: Timestamp, admitted_by: &str) -> Self {
        LedgerEntry {
            id: id.clone(),
            admitted_at,
            admitted_by: admitted_by.to_owned(),
        }
    }

    pub(crate) fn is_key(&self, k: &FifoKey) -> bool {
        self.id.uid == k.uid
            && self.id.kind == k.kind
            && self.id.name == k.name
            && self.id.namespace == k.namespace
    }
}

/// The ledger content.
///
/// The exact-mode ledger object: what it holds, how it is read and written.
///
/// # The ledger object
///
/// A ConfigMap (default name [`DEFAULT_LEDGER_NAME`], in Velero's namespace)
/// whose data key [`LEDGER_DATA_KEY`] holds JSON:
///
/// ```json
/// {"version":1,"admitted":[{"kind":"DataUpload","namespace":"velero","name":"b1-x7k2p","uid":"6f1c…","admittedAt":"2026-11-22T03:00:00Z"}]}
/// ```
///
/// `admitted` is sorted by (kind, namespace, name, uid) and has no
/// duplicates, so the same ledger always serialises to the same bytes. The
/// object is only ever written with a precondition on its
/// `metadata.resourceVersion` (a merge patch carrying the resourceVersion, or
/// an update): two gates that read the same version cannot both write.
///
///
/// Admission through it is in `exact` ([`crate::plan_admissions`], and
/// [`crate::decide`] in [`crate::Mode::Exact`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ledger {
    /// Format version, [`LEDGER_FORMAT_VERSION`].
    pub version: u32,
    /// Admitted loads, sorted by id, unique.
    pub admitted: Vec<LedgerEntry>,
}

/// The ledger could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum LedgerError {
    /// The JSON does not parse.
    #[error("data.{key} of the prepare-queue ledger is not valid JSON: {message}")]
    Json {
        /// The data key.
        key: String,
        /// serde_json's message (with line and column).
        message: String,
    },
    /// A version this crate does not know.
    #[error(
        "data.{key} of the prepare-queue ledger has version {found}, this gate understands version {LEDGER_FORMAT_VERSION}"
    )]
    Version {
        /// The data key.
        key: String,
        /// The version found.
        found: u32,
    },
    /// The same load listed twice.
    #[error("data.{key}.admitted of the prepare-queue ledger lists {id} twice")]
    Duplicate {
        /// The data key.
        key: String,
        /// The duplicate.
        id: String,
    },
}

impl Ledger {
    /// An empty ledger.
    pub fn empty() -> Ledger {
        Ledger {
            version: LEDGER_FORMAT_VERSION,
            admitted: Vec::new(),
        }
    }

    /// Reads the ledger from a ConfigMap's `data`. A missing map or key is
    /// an empty ledger. Entries are sorted on read.
    pub fn from_config_map_data(
        data: Option<&BTreeMap<String, String>>,
    ) -> Result<Ledger, LedgerError> {
        let Some(text) = data.and_then(|d| d.get(LEDGER_DATA_KEY)) else {
            return Ok(Ledger::empty());
        };
        Ledger::from_json(text)
    }

    /// Parses the JSON form.
    pub fn from_json(text: &str) -> Result<Ledger, LedgerError> {
        let key = LEDGER_DATA_KEY.to_owned();
        let mut ledger: Ledger = serde_json::from_str(text).map_err(|e| LedgerError::Json {
            key: key.clone(),
            message: e.to_string(),
        })?;
        if ledger.version != LEDGER_FORMAT_VERSION {
            return Err(LedgerError::Version {
                key,
                found: ledger.version,
            });
        }
        ledger.admitted.sort_by(|a, b| a.id.cmp(&b.id));
        for pair in ledger.admitted.windows(2) {
            if pair[0].id == pair[1].id {
                return Err(LedgerError::Duplicate {
                    key,
                    id: pair[0].id.to_string(),
                });
            }
        }
        Ok(ledger)
    }

    /// The canonical JSON form (compact, entries sorted).
    pub fn to_json(&self) -> String {
        let mut sorted = self.clone();
        sorted.admitted.sort_by(|a, b| a.id.cmp(&b.id));
        serde_json::to_string(&sorted).unwrap_or_default()
    }

    /// The ids listed.
    pub fn ids(&self) -> BTreeSet<LoadId> {
        self.admitted.iter().map(|e| e.id.clone()).collect()
    }

    /// Whether a load is listed.
    pub fn contains(&self, id: &LoadId) -> bool {
        self.entry(id).is_some()
    }

    /// The entry of a load.
    pub fn entry(&self, id: &LoadId) -> Option<&LedgerEntry> {
        self.admitted.iter().find(|e| e.id == *id)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.admitted.len()
    }

    /// Whether the ledger is empty.
    pub fn is_empty(&self) -> bool {
        self.admitted.is_empty()
    }
}

/// The ledger as a gate last read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerSnapshot {
    /// `metadata.resourceVersion` of the ConfigMap; `None` if it does not
    /// exist (the first write creates it).
    pub resource_version: Option<String>,
    /// The content.
    pub ledger: Ledger,
}

impl LedgerSnapshot {
    /// The ledger object does not exist yet.
    pub fn absent() -> LedgerSnapshot {
        LedgerSnapshot {
            resource_version: None,
            ledger: Ledger::empty(),
        }
    }
}

/// A ledger write: the new content and the resourceVersion it must replace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerWrite {
    /// The write must fail unless the object is still at this version;
    /// `None`: create the object (fails if it exists).
    pub expected_resource_version: Option<String>,
    /// The new content.
    pub ledger: Ledger,
    /// Loads this write admits, in admission order (the load decided on is
    /// among them).
    pub admitted: Vec<LoadId>,
    /// Entries this write removes (their loads left preparation).
    pub removed: Vec<LoadId>,
}

impl LedgerWrite {
    /// The ConfigMap `data` to write.
    pub fn data(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(LEDGER_DATA_KEY.to_owned(), self.ledger.to_json())])
    }

    /// A JSON merge patch for the ConfigMap that the API server applies only
    /// if the object is still at [`LedgerWrite::expected_resource_version`]
    /// (a resourceVersion in a patch is a precondition; a mismatch is 409).
    /// Only for updates: when `expected_resource_version` is `None`, create
    /// the ConfigMap with [`LedgerWrite::data`] instead.
    pub fn merge_patch(&self) -> serde_json::Value {
        serde_json::json!({
            "metadata": { "resourceVersion": self.expected_resource_version },
            "data": self.data(),
        })
    }
}
