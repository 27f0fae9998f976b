//! Why a backup stays `Queued`: typed reasons for status messages, Events
//! and the CLI.

use std::fmt;

use crate::input::Phase;

/// How many shared namespace names an explanation lists.
pub const SHARED_NAMES_SHOWN: usize = 5;

/// The namespaces two backups share: the first few by name and the total.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SharedNamespaces {
    /// Up to [`SHARED_NAMES_SHOWN`] shared namespaces, smallest names first.
    pub first: Vec<String>,
    /// How many namespaces are shared in total.
    pub total: usize,
}

/// Builds a [`SharedNamespaces`] from an unsorted stream of names, keeping
/// only the smallest few.
pub(crate) struct SharedCollector<'a> {
    smallest: Vec<&'a str>,
    total: usize,
}

impl SharedNamespaces {
    pub(crate) fn collector<'a>() -> SharedCollector<'a> {
        SharedCollector {
            smallest: Vec::with_capacity(SHARED_NAMES_SHOWN + 1),
            total: 0,
        }
    }
}

impl<'a> SharedCollector<'a> {
    pub(crate) fn add(&mut self, name: &'a str) {
        self.total += 1;
        if self.smallest.len() == SHARED_NAMES_SHOWN
            && self.smallest.last().is_some_and(|last| *last <= name)
        {
            return;
        }
        let pos = self.smallest.partition_point(|n| *n < name);
        self.smallest.insert(pos, name);
        self.smallest.truncate(SHARED_NAMES_SHOWN);
    }

    pub(crate) fn finish(self) -> SharedNamespaces {
        SharedNamespaces {
            first: self.smallest.into_iter().map(str::to_owned).collect(),
            total: self.total,
        }
    }
}

impl fmt::Display for SharedNamespaces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}", self.first.join(", "))?;
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
        backup: String,
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
        backup: String,
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
        let mut c = SharedNamespaces::collector();
        for n in ["h", "b", "g", "a", "f", "e", "d", "c"] {
            c.add(n);
        }
        let s = c.finish();
        assert_eq!(s.first, ["a", "b", "c", "d", "e"]);
        assert_eq!(s.total, 8);
        assert_eq!(s.to_string(), "[a, b, c, d, e, and 3 more]");
    }
}
