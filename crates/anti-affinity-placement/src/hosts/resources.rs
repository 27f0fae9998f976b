//! Free capacity per host as dense resource vectors, and the "most free
//! capacity" order used as the second tie-break (SA2).

use std::cmp::Ordering;

use super::model::CheckedInventory;

/// The free share of a host: the smallest `free / capacity` over the
/// resources the host has (capacity > 0), i.e. the share left of its
/// scarcest resource. A host without any positive capacity has share 1.
/// Compared exactly (cross-multiplication), never with floats.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FreeShare {
    num: u64,
    den: u64,
}

impl Ord for FreeShare {
    fn cmp(&self, other: &Self) -> Ordering {
        (u128::from(self.num) * u128::from(other.den))
            .cmp(&(u128::from(other.num) * u128::from(self.den)))
    }
}
impl PartialOrd for FreeShare {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for FreeShare {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for FreeShare {}

/// Free amounts of every host (may go negative when existing VMs overcommit
/// a host; such a host then fits nothing that requests that resource).
#[derive(Debug, Clone)]
pub(crate) struct FreeCapacity {
    dims: usize,
    free: Vec<i128>,
}

impl FreeCapacity {
    /// Capacity minus the requests of every VM that has a host in `host_of`.
    pub(crate) fn new(inventory: &CheckedInventory, host_of: &[Option<usize>]) -> Self {
        let dims = inventory.resources.len();
        let mut free = Vec::with_capacity(dims * inventory.hosts.len());
        for host in &inventory.hosts {
            free.extend(host.capacity.iter().map(|&c| i128::from(c)));
        }
        let mut this = Self { dims, free };
        for (vm, host) in inventory.vms.iter().zip(host_of) {
            if let Some(h) = host {
                this.take(*h, &vm.requests);
            }
        }
        this
    }

    fn row(&self, host: usize) -> &[i128] {
        &self.free[host * self.dims..(host + 1) * self.dims]
    }

    /// Whether `requests` fit in what `host` has left.
    pub(crate) fn fits(&self, host: usize, requests: &[u64]) -> bool {
        self.row(host)
            .iter()
            .zip(requests)
            .all(|(&f, &r)| i128::from(r) <= f)
    }

    /// Reserve `requests` on `host`.
    pub(crate) fn take(&mut self, host: usize, requests: &[u64]) {
        let row = &mut self.free[host * self.dims..(host + 1) * self.dims];
        for (f, &r) in row.iter_mut().zip(requests) {
            *f -= i128::from(r);
        }
    }

    /// Release `requests` on `host`.
    pub(crate) fn give(&mut self, host: usize, requests: &[u64]) {
        let row = &mut self.free[host * self.dims..(host + 1) * self.dims];
        for (f, &r) in row.iter_mut().zip(requests) {
            *f += i128::from(r);
        }
    }

    /// The host's [`FreeShare`].
    pub(crate) fn share(&self, host: usize, capacity: &[u64]) -> FreeShare {
        let mut best = FreeShare { num: 1, den: 1 };
        for (&f, &c) in self.row(host).iter().zip(capacity) {
            if c == 0 {
                continue;
            }
            let free = u64::try_from(f.clamp(0, i128::from(c))).unwrap_or(0);
            let candidate = FreeShare { num: free, den: c };
            if candidate < best {
                best = candidate;
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_compare_exactly() {
        let half = FreeShare { num: 1, den: 2 };
        let two_quarters = FreeShare { num: 2, den: 4 };
        let third = FreeShare { num: 1, den: 3 };
        assert_eq!(half, two_quarters);
        assert!(third < half);
        assert!(
            FreeShare {
                num: u64::MAX - 1,
                den: u64::MAX
            } < FreeShare { num: 1, den: 1 }
        );
    }
}
