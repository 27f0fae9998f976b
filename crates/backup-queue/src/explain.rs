//! Why a backup stays `Queued`: typed reasons for status messages, Events
//! and the CLI.

use std::fmt;
use std::sync::Arc;

use crate::input::Phase;

/// How many shared namespace names an explanation lists.
pub const SHARED_NAMES_SHOWN: usize = 5;

/// The namespaces two backups share: the first few by name and the total.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SharedNamespaces {
    /// Up to [`SHARED_NAMES_SHOWN`] shared namespaces, smallest names first.
    pub first: Vec<Arc<str>>,
    /// How many namespaces are shared in total.
    pub total: usize,
}

/// Builds a [`SharedNamespaces`] from an unsorted stream of names, keeping
/// only the smallest few (no allocation until `finish`).
pub(crate) struct SharedCollector<'a> {
    smallest: [Option<&'a Arc<str>>; SHARED_NAMES_SHOWN],
    len: usize,
    total: usize,
}

impl SharedNamespaces {
    pub(crate) fn collector<'a>() -> SharedCollector<'a> {
        SharedCollector {
            smallest: [None; SHARED_NAMES_SHOWN],
            len: 0,
            total: 0,
        }
    }
}

impl<'a> SharedCollector<'a> {
    pub(crate) fn add(&mut self, name: &'a Arc<str>) {
        self.total += 1;
        fn key<'k>(n: &Option<&'k Arc<str>>) -> Option<&'k str> {
            n.map(|a| &**a)
        }
        if self.len == SHARED_NAMES_SHOWN
            && key(&self.smallest[SHARED_NAMES_SHOWN - 1]).is_some_and(|last| last <= &**name)
        {
            return;
        }
        let pos =
            self.smallest[..self.len].partition_point(|n| key(n).is_some_and(|n| n < &**name));
        let end = self.len.min(SHARED_NAMES_SHOWN - 1);
        self.smallest.copy_within(pos..end, pos + 1);
        self.smallest[pos] = Some(name);
        self.len = (self.len + 1).min(SHARED_NAMES_SHOWN);
    }

    pub(crate) fn finish(self) -> SharedNamespaces {
        SharedNamespaces {
            first: self.smallest[..self.len]
                .iter()
                .flatten()
                .map(|a| Arc::clone(a))
                .collect(),
            total: self.total,
        }
    }
}

impl fmt::Display for SharedNamespaces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, n) in self.first.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(n)?;
        }
        let more = self.total.saturating_sub(self.first.len());
        if more > 0 {
            write!(f, ", and {more} more")?;
        }
        f.write_str("]")
    }
}

/// Why a backup stays `Queued`. The first applicable reason is given, in
/// this order: an overlap with an active backup, an overlap with an earlier
/// queued backup, then capacity — so the reason names what has to finish
/// before this backup can start.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WaitReason {
    /// It shares namespaces with a `ReadyToStart`/`InProgress` backup
    /// (after the plan). The blamed backup is the one with the smallest
    /// name.
    OverlapsActive {
        /// The active backup.
        backup: Arc<str>,
        /// Its phase after the plan.
        phase: Phase,
        /// The namespaces they share.
        namespaces: SharedNamespaces,
    },
    /// It shares namespaces with a backup ahead of it in the queue, which
    /// must start first (the design's rule against starvation). The blamed
    /// backup is the earliest one.
    BehindEarlier {
        /// The earlier queued backup.
        backup: Arc<str>,
        /// Its position after the plan.
        position: u32,
        /// The namespaces they share.
        namespaces: SharedNamespaces,
    },
    /// It overlaps nothing, but all concurrency slots are taken.
    CapacityFull {
        /// `--concurrent-backups`.
        limit: u32,
    },
}

impl fmt::Display for WaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OverlapsActive {
                backup,
                phase,
                namespaces,
            } => write!(
                f,
                "overlaps {phase} backup {backup} on namespaces {namespaces}"
            ),
            Self::BehindEarlier {
                backup,
                position,
                namespaces,
            } => write!(
                f,
                "waiting behind earlier backup {backup} (position {position}), which shares namespaces {namespaces}"
            ),
            Self::CapacityFull { limit } => write!(
                f,
                "capacity full: all {limit} concurrent backup slots are taken"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collector_keeps_the_smallest_names_and_counts_all() {
        let names: Vec<Arc<str>> = ["h", "b", "g", "a", "f", "e", "d", "c"]
            .map(Arc::from)
            .to_vec();
        let mut c = SharedNamespaces::collector();
        for n in &names {
            c.add(n);
        }
        let s = c.finish();
        let first: Vec<&str> = s.first.iter().map(|a| &**a).collect();
        assert_eq!(first, ["a", "b", "c", "d", "e"]);
        assert_eq!(s.total, 8);
        assert_eq!(s.to_string(), "[a, b, c, d, e, and 3 more]");
    }
}
