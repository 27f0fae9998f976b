//! Deterministic helpers shared by the workspace's simulations, benchmarks
//! and generated workloads, so that a seed means the same sequence
//! everywhere.
//!
//! - [`SplitMix64`]: the one pseudo-random generator (Steele, Lea and
//!   Flood's SplitMix64 with Vigna's constants), seeded explicitly: the
//!   same seed always gives the same numbers, on every platform.
//! - [`cluster_dump`]: `kubectl get nodes,pods -A -o json|yaml` dumps of a
//!   large cluster, generated from a seed (for reader benchmarks and tests).
#![warn(missing_docs)]

pub mod cluster_dump;

/// SplitMix64: a tiny, well-distributed, deterministic generator. Not for
/// anything that needs unpredictability.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi` (`lo` if `hi <= lo`). Slightly biased towards
    /// small values when the range does not divide 2⁶⁴, which does not
    /// matter for workloads.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// A number in `0..n` (0 if `n` is 0).
    pub fn below(&mut self, n: u32) -> u32 {
        if n == 0 {
            return 0;
        }
        // The remainder is below `n`, so it fits.
        (self.next_u64() % u64::from(n)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference sequence for seed 0 (from the algorithm's published
    /// test vectors: 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, ...).
    #[test]
    fn seed_zero_gives_the_reference_sequence() {
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(rng.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn ranges_stay_in_bounds() {
        let mut rng = SplitMix64::new(42);
        for _ in 0..1000 {
            let x = rng.range(10, 20);
            assert!((10..=20).contains(&x));
            assert!(rng.below(7) < 7);
        }
        assert_eq!(rng.range(5, 5), 5);
        assert_eq!(rng.range(9, 3), 9);
        assert_eq!(rng.below(0), 0);
    }
}
