//! A deliberately straightforward model of Velero's queue controller, the
//! baseline for tests and benchmarks. Not for production use.
//!
//! It follows the rules Q4.1–Q4.22 literally and shares no code with the
//! planner: namespace sets are resolved per reconcile from the patterns and
//! the cluster namespace list (Q4.5–Q4.9, compiling each pattern once per
//! resolution and caching sets only within one reconcile, which Velero does
//! not); New backups are queued at `max + 1` (Q4.10); Queued backups are
//! reconciled in ascending position with the checks of Q4.11–Q4.15, the
//! running count taken from the objects' phases (no in-memory tracker), and
//! every dequeue renumbers all other Queued backups with one write each.
//! This is iterated until nothing changes.
//!
//! Differences from the planner it exposes (see `docs/backup-queue.md`):
//! namespaces that do not exist yet never conflict here, equal positions
//! are not "earlier" than each other, and a Queued backup at position 0
//! skips the conflict checks.

use std::collections::{BTreeSet, HashMap};

use crate::input::{BackupInput, Phase, QueueInput};

/// A backup's final state in the reference model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceBackup {
    /// Its name.
    pub name: String,
    /// Its phase.
    pub phase: Phase,
    /// Its `queuePosition`.
    pub queue_position: u32,
}

/// The fixed point of the reference model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceOutcome {
    /// Every backup of the input, in input order.
    pub backups: Vec<ReferenceBackup>,
    /// Status PATCHes Velero issues to get there (W4.3).
    pub writes: u64,
}

/// Velero's wildcard validation (Q4.7), written out independently.
fn velero_valid(pattern: &str) -> bool {
    if pattern.contains(['|', '(', ')', '!', '{', '}', ',']) || pattern.contains("**") {
        return false;
    }
    let mut open = false;
    let mut len = 0;
    for c in pattern.chars() {
        if c == '[' && !open {
            open = true;
            len = 0;
        } else if c == ']' {
            if !open || len == 0 {
                return false;
            }
            open = false;
        } else if open {
            len += 1;
        }
    }
    !open
}

fn has_wildcard(p: &str) -> bool {
    p.contains(['*', '?', '['])
}

fn glob(p: &str) -> Option<globset::GlobMatcher> {
    globset::GlobBuilder::new(p)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// Velero's `namespacesForBackup` (Q4.6–Q4.9): the cluster namespaces in
/// the backup's set, in cluster order.
pub fn velero_namespaces(b: &BackupInput, cluster: &[String]) -> Vec<String> {
    let mut inc: Vec<String> = b.namespaces.included.clone();
    let mut exc: Vec<String> = b.namespaces.excluded.clone();
    inc.sort();
    inc.dedup();
    exc.sort();
    exc.dedup();
    let expand = !inc.is_empty()
        && !inc.iter().any(|i| i == "*")
        && inc.iter().chain(exc.iter()).any(|p| has_wildcard(p));
    if expand {
        if !inc.iter().chain(exc.iter()).all(|p| velero_valid(p)) {
            return Vec::new();
        }
        let expand_list = |list: &[String]| -> Vec<String> {
            let mut out = Vec::new();
            for p in list {
                if has_wildcard(p) {
                    if let Some(g) = glob(p) {
                        out.extend(cluster.iter().filter(|n| g.is_match(n.as_str())).cloned());
                    }
                } else {
                    out.push(p.clone());
                }
            }
            out
        };
        inc = expand_list(&inc);
        exc = expand_list(&exc);
        if inc.is_empty() {
            return Vec::new();
        }
    }
    let inc_all = inc.is_empty() || inc.iter().any(|i| i == "*");
    let inc_globs: Vec<_> = inc.iter().filter_map(|p| glob(p)).collect();
    let exc_globs: Vec<_> = exc.iter().filter_map(|p| glob(p)).collect();
    cluster
        .iter()
        .filter(|n| {
            !exc_globs.iter().any(|g| g.is_match(n.as_str()))
                && (inc_all || inc_globs.iter().any(|g| g.is_match(n.as_str())))
        })
        .cloned()
        .collect()
}

struct Model<'a> {
    backups: Vec<BackupInput>,
    cluster: &'a [String],
    limit: usize,
    writes: u64,
}

impl Model<'_> {
    fn position(&self, i: usize) -> u32 {
        if self.backups[i].phase.is_active() {
            0
        } else {
            self.backups[i].queue_position
        }
    }

    fn is_listed(&self, i: usize) -> bool {
        matches!(
            self.backups[i].phase,
            Phase::Queued | Phase::ReadyToStart | Phase::InProgress
        )
    }

    /// Q4.10 for one New backup.
    fn enqueue(&mut self, i: usize) {
        let max = (0..self.backups.len())
            .filter(|&j| self.backups[j].phase == Phase::Queued)
            .map(|j| self.backups[j].queue_position)
            .max()
            .unwrap_or(0);
        self.backups[i].phase = Phase::Queued;
        self.backups[i].queue_position = max + 1;
        self.writes += 1;
    }

    /// Q4.11–Q4.15 for one Queued backup; true if it was dequeued.
    fn reconcile_queued(&mut self, b: usize) -> bool {
        let listed: Vec<usize> = (0..self.backups.len())
            .filter(|&j| self.is_listed(j))
            .collect();
        let running = listed
            .iter()
            .filter(|&&j| self.backups[j].phase.is_active())
            .count();
        if running >= self.limit {
            return false;
        }
        // Sets are resolved at most once per reconcile (Velero resolves
        // them again for every comparison).
        let mut sets: HashMap<usize, BTreeSet<String>> = HashMap::new();
        let cluster = self.cluster;
        let resolve =
            |j: usize, backups: &[BackupInput], sets: &mut HashMap<usize, BTreeSet<String>>| {
                sets.entry(j).or_insert_with(|| {
                    velero_namespaces(&backups[j], cluster)
                        .into_iter()
                        .collect()
                });
            };
        let pos_b = self.position(b);
        let earlier: Vec<usize> = listed
            .iter()
            .copied()
            .filter(|&j| j != b && self.position(j) < pos_b)
            .collect();
        resolve(b, &self.backups, &mut sets);
        for &e in &earlier {
            resolve(e, &self.backups, &mut sets);
            if !sets[&e].is_disjoint(&sets[&b]) {
                return false;
            }
        }
        for &e in &earlier {
            if self.backups[e].phase != Phase::Queued {
                continue;
            }
            let pos_e = self.position(e);
            let blocked = earlier.iter().any(|&x| {
                x != e
                    && (self.backups[x].phase.is_active()
                        || (self.backups[x].phase == Phase::Queued && self.position(x) < pos_e))
                    && !sets[&x].is_disjoint(&sets[&e])
            });
            if !blocked {
                return false;
            }
        }
        // Q4.14, Q4.15
        let mut queued: Vec<usize> = listed
            .iter()
            .copied()
            .filter(|&j| self.backups[j].phase == Phase::Queued)
            .collect();
        queued.sort_by(|&x, &y| {
            (self.backups[x].queue_position, &self.backups[x].name)
                .cmp(&(self.backups[y].queue_position, &self.backups[y].name))
        });
        self.backups[b].phase = Phase::ReadyToStart;
        self.backups[b].queue_position = 0;
        self.writes += 1;
        let mut next = 0;
        for j in queued {
            if j == b {
                continue;
            }
            next += 1;
            self.backups[j].queue_position = next;
            self.writes += 1;
        }
        true
    }
}

/// Runs Velero's queue reconciles until nothing changes: New backups are
/// queued in creation order (ties by name), then Queued backups are
/// reconciled in ascending position until one is dequeued, and again.
pub fn run_to_fixed_point(input: &QueueInput) -> ReferenceOutcome {
    let mut model = Model {
        backups: input.backups.clone(),
        cluster: &input.cluster_namespaces,
        limit: input.concurrent_backups.max(1) as usize,
        writes: 0,
    };
    loop {
        let mut new: Vec<usize> = (0..model.backups.len())
            .filter(|&i| model.backups[i].phase == Phase::New)
            .collect();
        new.sort_by(|&x, &y| {
            (model.backups[x].created, &model.backups[x].name)
                .cmp(&(model.backups[y].created, &model.backups[y].name))
        });
        for i in new {
            model.enqueue(i);
        }
        let mut queued: Vec<usize> = (0..model.backups.len())
            .filter(|&i| model.backups[i].phase == Phase::Queued)
            .collect();
        queued.sort_by(|&x, &y| {
            (model.backups[x].queue_position, &model.backups[x].name)
                .cmp(&(model.backups[y].queue_position, &model.backups[y].name))
        });
        if !queued.into_iter().any(|b| model.reconcile_queued(b)) {
            break;
        }
    }
    ReferenceOutcome {
        backups: model
            .backups
            .iter()
            .map(|b| ReferenceBackup {
                name: b.name.clone(),
                phase: b.phase,
                queue_position: b.queue_position,
            })
            .collect(),
        writes: model.writes,
    }
}

/// The fuzzing entry point for namespace filters
/// (`fuzz/fuzz_targets/namespace_filter.rs` and the corpus replay test).
///
/// `data` is text, one entry per line: `+pattern` adds an include,
/// `-pattern` an exclude, `=name` a cluster namespace (names that cannot be
/// namespaces and repeated names are dropped, as no cluster has them); other
/// lines are ignored. Compiling and matching must never panic, and a filter
/// that compiles must resolve to exactly the namespaces Velero's own
/// resolution gives ([`velero_namespaces`], Q4.6–Q4.9). Panics otherwise:
/// that is what the fuzzer looks for.
pub fn fuzz_namespace_filter(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut filter = crate::NamespaceFilter::default();
    let mut cluster: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(p) = line.strip_prefix('+') {
            filter.included.push(p.to_owned());
        } else if let Some(p) = line.strip_prefix('-') {
            filter.excluded.push(p.to_owned());
        } else if let Some(n) = line.strip_prefix('=')
            && kube_validation::is_namespace_name(n)
            && !cluster.iter().any(|c| c == n)
        {
            cluster.push(n.to_owned());
        }
    }
    for pattern in filter.included.iter().chain(&filter.excluded) {
        let _ = crate::validate_pattern(pattern);
    }
    let Ok(matcher) = crate::NamespaceMatcher::compile(&filter) else {
        return;
    };
    let ours: Vec<&str> = matcher.resolve(cluster.iter().map(String::as_str));
    let backup = BackupInput {
        name: "fuzz".into(),
        resource_version: None,
        phase: Phase::Queued,
        queue_position: 1,
        created: jiff::Timestamp::UNIX_EPOCH,
        namespaces: filter,
    };
    let velero = velero_namespaces(&backup, &cluster);
    assert_eq!(
        ours, velero,
        "resolution differs from Velero's for {:?} over {cluster:?}",
        backup.namespaces
    );
}
