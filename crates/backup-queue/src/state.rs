//! The incremental queue state: resolved namespace sets kept up to date by
//! one event at a time, so that planning never re-resolves wildcards.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use jiff::Timestamp;
use smallvec::SmallVec;

use crate::input::{BackupInput, NamespaceFilter, Phase, QueueInput};
use kube_validation::is_namespace_name;

use crate::namespaces::{NamespaceMatcher, PatternCache, PatternError, Shape};
use crate::universe::Universe;

/// One change observed by a watch.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueueEvent {
    /// A backup was created or changed (a backup whose phase is
    /// [`Phase::Other`] leaves the queue, like a deletion).
    UpsertBackup(BackupInput),
    /// A backup was deleted.
    DeleteBackup(String),
    /// A Namespace was created.
    AddNamespace(String),
    /// A Namespace was deleted.
    DeleteNamespace(String),
    /// `--concurrent-backups` changed (values below 1 mean 1).
    SetConcurrency(u32),
}

/// Sorted namespace ids; most backups name one to three namespaces, which
/// are stored inline so the planning pass does not chase a pointer for them.
pub(crate) type Ids = SmallVec<[u32; 4]>;

/// A backup's namespace set over the universe's live ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NsSet {
    /// Every live namespace, present and future.
    All,
    /// Sorted live ids.
    Ids(Ids),
}

/// Where a backup sorts in the queue: Queued ones by (position, creation,
/// name), then New ones by (creation, name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct OrderKey {
    pub(crate) new: bool,
    pub(crate) position: u32,
    pub(crate) created: Timestamp,
    pub(crate) name: Arc<str>,
}

/// One tracked backup. The fields every planning pass reads stay inline and
/// small; the compiled filter, read only when a backup or namespace changes,
/// lives behind a pointer ([`CompiledFilter`]).
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub(crate) phase: Phase,
    pub(crate) position: u32,
    pub(crate) name: Arc<str>,
    pub(crate) resource_version: Option<Arc<str>>,
    pub(crate) set: NsSet,
    pub(crate) created: Timestamp,
    pub(crate) compiled: Box<CompiledFilter>,
}

/// A backup's namespace filter as written and as compiled.
#[derive(Debug, Clone)]
pub(crate) struct CompiledFilter {
    pub(crate) filter: NamespaceFilter,
    pub(crate) matcher: Result<NamespaceMatcher, PatternError>,
    /// Literal includes counted in the universe.
    pub(crate) literals: Vec<String>,
}

impl Record {
    fn order_key(&self) -> OrderKey {
        let new = self.phase == Phase::New;
        OrderKey {
            new,
            position: if new { 0 } else { self.position },
            created: self.created,
            name: self.name.clone(),
        }
    }
}

/// The queue of one Velero namespace, kept incrementally.
///
/// Feed it every watch event with [`QueueState::apply`]; [`QueueState::plan`]
/// then gives the same [`crate::Plan`] as [`crate::plan`] on a full snapshot, without
/// resolving any namespace pattern again. An event costs work proportional
/// to the namespaces of the changed backup (plus one match per queued backup
/// when a namespace appears or disappears), never backups × namespaces.
#[derive(Debug, Clone)]
pub struct QueueState {
    pub(crate) limit: u32,
    pub(crate) universe: Universe,
    pub(crate) slots: Vec<Option<Record>>,
    free: Vec<u32>,
    by_name: HashMap<Arc<str>, u32>,
    /// Waiting (New and Queued) backups in queue order.
    pub(crate) waiting: BTreeMap<OrderKey, u32>,
    /// Active (ReadyToStart and InProgress) backups by name.
    pub(crate) active: BTreeMap<Arc<str>, u32>,
    /// Backups whose namespace filter does not compile, by name.
    pub(crate) invalid: BTreeMap<Arc<str>, u32>,
    patterns: PatternCache,
}

impl QueueState {
    /// An empty queue with the given `--concurrent-backups` (below 1 means 1).
    pub fn new(concurrent_backups: u32) -> Self {
        Self {
            limit: concurrent_backups.max(1),
            universe: Universe::default(),
            slots: Vec::new(),
            free: Vec::new(),
            by_name: HashMap::new(),
            waiting: BTreeMap::new(),
            active: BTreeMap::new(),
            invalid: BTreeMap::new(),
            patterns: PatternCache::default(),
        }
    }

    /// Builds the state for a full snapshot, resolving every backup once
    /// against the complete namespace universe (and every distinct wildcard
    /// once).
    pub fn from_input(input: &QueueInput) -> Self {
        let mut state = Self::new(input.concurrent_backups);
        state.universe = Universe::with_cluster(&input.cluster_namespaces);
        let mut latest: HashMap<&str, &BackupInput> = HashMap::new();
        for b in &input.backups {
            latest.insert(b.name.as_str(), b);
        }
        let mut records: Vec<Record> = Vec::new();
        let mut names: Vec<&str> = latest.keys().copied().collect();
        names.sort_unstable();
        for name in names {
            let b = latest[name];
            if b.phase == Phase::Other {
                continue;
            }
            let record = new_record(b, &mut state.patterns);
            for lit in &record.compiled.literals {
                state.universe.add_ref(lit);
            }
            records.push(record);
        }
        let mut cache = HashMap::new();
        for mut record in records {
            record.set = resolve(&record.compiled.matcher, &state.universe, Some(&mut cache));
            state.insert_record(record);
        }
        state
    }

    /// The effective concurrency limit (at least 1).
    pub fn concurrent_backups(&self) -> u32 {
        self.limit
    }

    /// Number of backups the queue tracks (New, Queued, ReadyToStart,
    /// InProgress).
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// True if the queue tracks no backup.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Applies one watch event.
    pub fn apply(&mut self, event: QueueEvent) {
        match event {
            QueueEvent::UpsertBackup(b) => self.upsert(b),
            QueueEvent::DeleteBackup(name) => {
                self.remove(&name);
            }
            QueueEvent::AddNamespace(ns) => {
                if let Some(id) = self.universe.add_cluster(&ns) {
                    self.namespace_appeared(id);
                }
            }
            QueueEvent::DeleteNamespace(ns) => {
                if let Some(id) = self.universe.remove_cluster(&ns) {
                    self.namespace_vanished(id);
                }
            }
            QueueEvent::SetConcurrency(n) => self.limit = n.max(1),
        }
    }

    pub(crate) fn record(&self, slot: u32) -> &Record {
        match &self.slots[slot as usize] {
            Some(r) => r,
            None => unreachable!("index points at an empty slot"),
        }
    }

    fn upsert(&mut self, b: BackupInput) {
        if b.phase == Phase::Other {
            self.remove(&b.name);
            return;
        }
        if let Some(&slot) = self.by_name.get(b.name.as_str()) {
            let same_filter = self.record(slot).compiled.filter == b.namespaces;
            if same_filter {
                self.unindex(slot);
                if let Some(r) = self.slots[slot as usize].as_mut() {
                    r.resource_version = b.resource_version.as_deref().map(Arc::from);
                    r.phase = b.phase;
                    r.position = b.queue_position;
                    r.created = b.created;
                }
                self.index(slot);
                return;
            }
            self.remove(&b.name);
        }
        if self.patterns.len() > 4 * self.len() + 1024 {
            self.patterns.clear();
        }
        let mut record = new_record(&b, &mut self.patterns);
        for lit in &record.compiled.literals {
            if let Some(id) = self.universe.add_ref(lit) {
                self.namespace_appeared(id);
            }
        }
        record.set = resolve(&record.compiled.matcher, &self.universe, None);
        self.insert_record(record);
    }

    fn insert_record(&mut self, record: Record) {
        let name = record.name.clone();
        let invalid = record.compiled.matcher.is_err();
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(record);
                s
            }
            None => {
                self.slots.push(Some(record));
                u32::try_from(self.slots.len() - 1).unwrap_or(u32::MAX)
            }
        };
        if invalid {
            self.invalid.insert(name.clone(), slot);
        }
        self.by_name.insert(name, slot);
        self.index(slot);
    }

    fn index(&mut self, slot: u32) {
        let r = self.record(slot);
        if r.phase.is_waiting() {
            let key = r.order_key();
            self.waiting.insert(key, slot);
        } else if r.phase.is_active() {
            let name = r.name.clone();
            self.active.insert(name, slot);
        }
    }

    fn unindex(&mut self, slot: u32) {
        let r = self.record(slot);
        if r.phase.is_waiting() {
            let key = r.order_key();
            self.waiting.remove(&key);
        } else if r.phase.is_active() {
            let name = r.name.clone();
            self.active.remove(&name);
        }
    }

    fn remove(&mut self, name: &str) -> bool {
        let Some(slot) = self.by_name.remove(name) else {
            return false;
        };
        self.unindex(slot);
        self.invalid.remove(name);
        let Some(record) = self.slots[slot as usize].take() else {
            return false;
        };
        self.free.push(slot);
        for lit in &record.compiled.literals {
            if let Some(id) = self.universe.remove_ref(lit) {
                self.namespace_vanished(id);
            }
        }
        true
    }

    /// Adds a newly live namespace to every set that contains it.
    fn namespace_appeared(&mut self, id: u32) {
        let name = Arc::clone(self.universe.name(id));
        for r in self.slots.iter_mut().flatten() {
            let NsSet::Ids(ids) = &mut r.set else {
                continue;
            };
            if r.compiled.matcher.as_ref().is_ok_and(|m| m.is_match(&name))
                && let Err(pos) = ids.binary_search(&id)
            {
                ids.insert(pos, id);
            }
        }
    }

    /// Removes a namespace that stopped being live from every set.
    fn namespace_vanished(&mut self, id: u32) {
        for r in self.slots.iter_mut().flatten() {
            if let NsSet::Ids(ids) = &mut r.set
                && let Ok(pos) = ids.binary_search(&id)
            {
                ids.remove(pos);
            }
        }
    }
}

fn new_record(b: &BackupInput, patterns: &mut PatternCache) -> Record {
    let matcher = NamespaceMatcher::compile_cached(&b.namespaces, patterns);
    // A literal include counts as a namespace even before it exists, unless
    // the backup excludes it or it can never be a namespace name.
    let literals = match &matcher {
        Ok(m) => m
            .literals()
            .iter()
            .filter(|l| is_namespace_name(l) && !m.is_excluded(l))
            .cloned()
            .collect(),
        Err(_) => Vec::new(),
    };
    Record {
        phase: b.phase,
        position: b.queue_position,
        set: NsSet::Ids(Ids::new()),
        name: Arc::from(b.name.as_str()),
        resource_version: b.resource_version.as_deref().map(Arc::from),
        created: b.created,
        compiled: Box::new(CompiledFilter {
            filter: b.namespaces.clone(),
            matcher,
            literals,
        }),
    }
}

/// Resolves a matcher against the live universe. `cache` memoises the ids
/// matched by each distinct include wildcard (valid while the universe does
/// not change).
fn resolve(
    matcher: &Result<NamespaceMatcher, PatternError>,
    universe: &Universe,
    mut cache: Option<&mut HashMap<String, Vec<u32>>>,
) -> NsSet {
    let Ok(m) = matcher else {
        // Velero gives an invalid filter the empty set (Q4.9), which lets the
        // backup run next to anything; we hold it as covering everything.
        return NsSet::All;
    };
    let mut ids = Ids::new();
    match m.shape() {
        Shape::All => return NsSet::All,
        Shape::AllExcept => {
            ids.extend(
                universe
                    .live()
                    .filter(|(n, _)| !m.is_excluded(n))
                    .map(|(_, id)| id),
            );
        }
        Shape::Listed => {
            ids.extend(
                m.literals()
                    .iter()
                    .filter(|l| !m.is_excluded(l))
                    .filter_map(|l| universe.live_id(l)),
            );
            for g in m.globs() {
                let matched: &[u32] = match cache.as_deref_mut() {
                    Some(cache) => {
                        if !cache.contains_key(&g.pattern) {
                            let matched = universe
                                .live_with_prefix(&g.prefix)
                                .filter(|(n, _)| g.matcher.is_match(n))
                                .map(|(_, id)| id)
                                .collect();
                            cache.insert(g.pattern.clone(), matched);
                        }
                        cache.get(&g.pattern).map_or(&[], Vec::as_slice)
                    }
                    None => {
                        ids.extend(
                            universe
                                .live_with_prefix(&g.prefix)
                                .filter(|(n, _)| g.matcher.is_match(n) && !m.is_excluded(n))
                                .map(|(_, id)| id),
                        );
                        continue;
                    }
                };
                ids.extend(
                    matched
                        .iter()
                        .copied()
                        .filter(|&id| !m.is_excluded(universe.name(id))),
                );
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    NsSet::Ids(ids)
}
