//! The namespace universe: cluster namespaces plus the namespaces that
//! queued or active backups name literally (see `docs/backup-queue.md`,
//! "Namespaces that do not exist yet"), interned as small integer ids.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;

/// Interned namespace names. An id is *live* while its namespace exists in
/// the cluster or some backup names it literally; only live ids are in
/// backup sets. Ids are never reused for another name.
#[derive(Debug, Clone, Default)]
pub(crate) struct Universe {
    names: Vec<Arc<str>>,
    in_cluster: Vec<bool>,
    refs: Vec<u32>,
    ids: HashMap<Arc<str>, u32>,
    /// Live names, sorted, for prefix ranges.
    live: BTreeMap<Arc<str>, u32>,
}

impl Universe {
    /// Number of ids ever handed out (sizes per-id arrays).
    pub(crate) fn id_count(&self) -> usize {
        self.names.len()
    }

    /// Number of live namespaces.
    pub(crate) fn live_count(&self) -> usize {
        self.live.len()
    }

    pub(crate) fn name(&self, id: u32) -> &Arc<str> {
        &self.names[id as usize]
    }

    /// The live id of `name`.
    pub(crate) fn live_id(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied().filter(|&id| self.is_live(id))
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let shared: Arc<str> = Arc::from(name);
        self.names.push(Arc::clone(&shared));
        self.in_cluster.push(false);
        self.refs.push(0);
        self.ids.insert(shared, id);
        id
    }

    fn is_live(&self, id: u32) -> bool {
        self.in_cluster[id as usize] || self.refs[id as usize] > 0
    }

    /// Runs `change` on `name`'s id; returns the id if its liveness flipped.
    fn update(&mut self, name: &str, change: impl FnOnce(&mut Self, usize)) -> Option<u32> {
        let id = self.intern(name);
        let before = self.is_live(id);
        change(self, id as usize);
        let after = self.is_live(id);
        match (before, after) {
            (false, true) => {
                self.live.insert(Arc::clone(&self.names[id as usize]), id);
                Some(id)
            }
            (true, false) => {
                self.live.remove(name);
                Some(id)
            }
            _ => None,
        }
    }

    /// A universe of the given cluster namespaces, built in bulk.
    pub(crate) fn with_cluster(names: &[String]) -> Self {
        let mut sorted: Vec<&str> = names.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let n = sorted.len();
        let names: Vec<Arc<str>> = sorted.into_iter().map(Arc::from).collect();
        let ids: HashMap<Arc<str>, u32> = names
            .iter()
            .enumerate()
            .map(|(i, a)| (Arc::clone(a), u32::try_from(i).unwrap_or(u32::MAX)))
            .collect();
        // Sorted input: the map is built in bulk.
        let live: BTreeMap<Arc<str>, u32> = names
            .iter()
            .enumerate()
            .map(|(i, a)| (Arc::clone(a), u32::try_from(i).unwrap_or(u32::MAX)))
            .collect();
        Self {
            names,
            in_cluster: vec![true; n],
            refs: vec![0; n],
            ids,
            live,
        }
    }

    /// Marks `name` as a cluster namespace; returns its id if it became live.
    pub(crate) fn add_cluster(&mut self, name: &str) -> Option<u32> {
        self.update(name, |u, i| u.in_cluster[i] = true)
    }

    /// Unmarks a cluster namespace; returns its id if it stopped being live.
    pub(crate) fn remove_cluster(&mut self, name: &str) -> Option<u32> {
        if !self.ids.contains_key(name) {
            return None;
        }
        self.update(name, |u, i| u.in_cluster[i] = false)
    }

    /// Counts one more backup naming `name`; returns its id if it became live.
    pub(crate) fn add_ref(&mut self, name: &str) -> Option<u32> {
        self.update(name, |u, i| u.refs[i] += 1)
    }

    /// Counts one backup fewer naming `name`; returns its id if it stopped
    /// being live.
    pub(crate) fn remove_ref(&mut self, name: &str) -> Option<u32> {
        if !self.ids.contains_key(name) {
            return None;
        }
        self.update(name, |u, i| u.refs[i] = u.refs[i].saturating_sub(1))
    }

    /// Live namespaces, sorted by name.
    pub(crate) fn live(&self) -> impl Iterator<Item = (&str, u32)> {
        self.live.iter().map(|(n, &id)| (&**n, id))
    }

    /// Live namespaces starting with `prefix`, sorted by name.
    pub(crate) fn live_with_prefix<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, u32)> + 'a {
        self.live
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |(n, _)| n.starts_with(prefix))
            .map(|(n, &id)| (&**n, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness_follows_cluster_and_references() {
        let mut u = Universe::default();
        let a = u.add_cluster("a").unwrap();
        assert_eq!(u.add_ref("a"), None);
        assert_eq!(u.remove_cluster("a"), None, "still referenced");
        assert_eq!(u.remove_ref("a"), Some(a));
        assert_eq!(u.live_count(), 0);
        assert_eq!(u.add_ref("a"), Some(a), "ids are stable");
        assert_eq!(u.remove_cluster("zzz"), None);
    }

    #[test]
    fn bulk_build_equals_one_by_one() {
        let names: Vec<String> = ["b", "a", "c", "a"].map(String::from).to_vec();
        let bulk = Universe::with_cluster(&names);
        let mut single = Universe::default();
        for n in &names {
            single.add_cluster(n);
        }
        let live = |u: &Universe| u.live().map(|(n, _)| n.to_owned()).collect::<Vec<_>>();
        assert_eq!(live(&bulk), live(&single));
        assert_eq!(bulk.live_count(), 3);
        assert!(bulk.live_id("c").is_some());
    }

    #[test]
    fn prefix_ranges_are_exact() {
        let mut u = Universe::default();
        for n in ["app", "app-a", "app-b", "apq", "ap"] {
            u.add_cluster(n);
        }
        let got: Vec<_> = u.live_with_prefix("app-").map(|(n, _)| n).collect();
        assert_eq!(got, ["app-a", "app-b"]);
        assert_eq!(u.live_with_prefix("").count(), 5);
    }
}
