//! How the objects of an inventory were read: the vocabulary that the
//! reader, live mode and the completeness of an answer share.

use std::collections::BTreeMap;

/// How a kind the command needs was read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Read, with this many objects (at least one).
    Read(usize),
    /// Listed from the cluster: it holds none.
    Empty,
    /// The `-f` input (or the bundled example) holds none; taken as none.
    NotInInput,
    /// The user may not list it (403).
    Forbidden,
    /// The server does not serve it (404: its CRD is not installed).
    NotServed,
    /// Listing it failed; the message says how.
    Failed(String),
}

impl Status {
    /// The stable name of the status in `-o json` (`inputs`).
    pub fn name(&self) -> &'static str {
        match self {
            Status::Read(_) => "read",
            Status::Empty => "empty",
            Status::NotInInput => "not in input",
            Status::Forbidden => "forbidden",
            Status::NotServed => "not served",
            Status::Failed(_) => "failed",
        }
    }

    /// Whether objects of the kind may exist that the answer did not see.
    pub fn is_missing(&self) -> bool {
        matches!(self, Status::Forbidden | Status::Failed(_))
    }

    /// How the table states it.
    pub fn describe(&self) -> String {
        match self {
            Status::Read(count) => format!("read ({count})"),
            Status::Empty => "none in the cluster".to_owned(),
            Status::NotInInput => "not in the input (taken as none)".to_owned(),
            Status::Forbidden => "forbidden (403): the user may not list them".to_owned(),
            Status::NotServed => {
                "not served (404): its CustomResourceDefinition is not installed".to_owned()
            }
            Status::Failed(message) => format!("failed: {message}"),
        }
    }
}

/// A kind live mode could not list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unread {
    /// Why: [`Status::Forbidden`], [`Status::NotServed`] or
    /// [`Status::Failed`].
    pub status: Status,
    /// What was listed, for messages (`velero.io/v1 Backup in namespace
    /// velero`).
    pub what: String,
}

/// How the objects of an `Inventory` were read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// Listed from a cluster (live mode) rather than read from files.
    pub live: bool,
    /// The kinds live mode could not list, by the key a kind gives itself
    /// (the first failure of a kind listed in several namespaces).
    pub unread: BTreeMap<String, Unread>,
}

impl Reading {
    /// Records a kind that could not be listed; the first reason stays.
    pub fn note_unread(&mut self, kind: String, unread: Unread) {
        self.unread.entry(kind).or_insert(unread);
    }

    /// Why `kind` could not be listed, if it could not.
    pub fn unread(&self, kind: String) -> Option<&Unread> {
        self.unread.get(&kind)
    }
}
