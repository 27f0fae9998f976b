//! Counts per topology pair, dense per topology key.

use crate::state::ClusterState;

/// Counts per topology pair `(key, value)`, dense per key; tracks how many
/// pairs are non-zero so "the count map is empty" (C.12) is O(1).
#[derive(Debug, Clone, Default)]
pub(crate) struct PairCounts {
    per_key: Vec<Option<Vec<i64>>>,
    nonzero: usize,
}

impl PairCounts {
    pub(crate) fn add(&mut self, state: &ClusterState, key: u32, dom: u32, delta: i64) {
        let k = key as usize;
        if self.per_key.len() <= k {
            self.per_key.resize(k + 1, None);
        }
        let v = self.per_key[k].get_or_insert_with(|| vec![0; state.domain_count(key)]);
        let d = dom as usize;
        if v.len() <= d {
            v.resize(d + 1, 0);
        }
        let before = v[d];
        v[d] += delta;
        match (before == 0, v[d] == 0) {
            (true, false) => self.nonzero += 1,
            (false, true) => self.nonzero -= 1,
            _ => {}
        }
    }

    #[inline]
    pub(crate) fn get(&self, key: u32, dom: u32) -> i64 {
        match self.per_key.get(key as usize) {
            Some(Some(v)) => v.get(dom as usize).copied().unwrap_or(0),
            _ => 0,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.nonzero == 0
    }
}
