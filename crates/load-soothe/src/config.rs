//! Enablement and mode of the gate (L3.8).

use std::num::NonZeroU64;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Fixed delay after which a held load is reconciled again (L3.13: 5 s, not
/// rate-limited).
pub const HOLD_REQUEUE_AFTER: Duration = Duration::from_secs(5);

/// Whether the gate is on, from `loadConcurrency.prepareQueueLength`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enablement {
    /// No gate: new loads are never held back (L3.8).
    Disabled(DisabledBecause),
    /// The gate admits loads while fewer than this many are in preparation.
    Enabled(Limit),
}

/// Why the gate is off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisabledBecause {
    /// `prepareQueueLength` is absent.
    Absent,
    /// `prepareQueueLength` is 0 (Velero disables the feature for 0 as well
    /// as for negative numbers, D3.2).
    Zero,
    /// `prepareQueueLength` is negative.
    Negative,
}

/// The maximum number of loads in preparation (a positive number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Limit(NonZeroU64);

impl Limit {
    /// A limit from a positive number; `None` for 0.
    pub fn new(n: u64) -> Option<Limit> {
        NonZeroU64::new(n).map(Limit)
    }

    /// The number.
    pub fn get(self) -> u64 {
        self.0.get()
    }
}

impl Enablement {
    /// Maps `loadConcurrency.prepareQueueLength` (a Go `int`, so 64-bit):
    /// absent, zero or negative disables the gate, a positive number enables
    /// it with that limit (L3.8).
    pub fn from_prepare_queue_length(value: Option<i64>) -> Enablement {
        match value {
            None => Enablement::Disabled(DisabledBecause::Absent),
            Some(0) => Enablement::Disabled(DisabledBecause::Zero),
            Some(n) if n < 0 => Enablement::Disabled(DisabledBecause::Negative),
            Some(n) => match Limit::new(n.unsigned_abs()) {
                Some(limit) => Enablement::Enabled(limit),
                None => Enablement::Disabled(DisabledBecause::Zero),
            },
        }
    }

    /// The limit, if the gate is on.
    pub fn limit(self) -> Option<Limit> {
        match self {
            Enablement::Enabled(limit) => Some(limit),
            Enablement::Disabled(_) => None,
        }
    }
}

/// How the gate decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mode {
    /// Exactly Velero's behaviour, kept for comparison and for fleets that mix
    /// this gate with upstream node-agents: the count is refreshed only on the
    /// phase transitions of L3.12 (stale after creates and deletes), any
    /// waiting load may be admitted while the count is below the limit (no
    /// order), and a gate does not remember its own admissions until its
    /// cache shows them.
    Velero,
    /// Velero's soft limit with the fixes: the count follows every change of
    /// "in preparation" (creates and deletes included), waiting loads are
    /// admitted first-in first-out across kinds, and a gate counts its own
    /// admissions until its cache shows them. Overshoot stays possible when
    /// several nodes decide on the same stale view (at most nodes × kinds
    /// loads, L3.14), but no API object besides the load is written.
    Optimistic,
    /// Admission through a shared ledger object written with
    /// compare-and-swap on its resourceVersion: the number of loads in
    /// preparation never exceeds the limit, however many nodes race.
    Exact,
}

/// Everything the gate needs besides the observed loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateConfig {
    /// From `prepareQueueLength`.
    pub enablement: Enablement,
    /// Decision mode.
    pub mode: Mode,
}

impl GateConfig {
    /// A gate from the raw `prepareQueueLength` value and a mode.
    pub fn new(prepare_queue_length: Option<i64>, mode: Mode) -> GateConfig {
        GateConfig {
            enablement: Enablement::from_prepare_queue_length(prepare_queue_length),
            mode,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_zero_and_negative_disable() {
        assert_eq!(
            Enablement::from_prepare_queue_length(None),
            Enablement::Disabled(DisabledBecause::Absent)
        );
        assert_eq!(
            Enablement::from_prepare_queue_length(Some(0)),
            Enablement::Disabled(DisabledBecause::Zero)
        );
        assert_eq!(
            Enablement::from_prepare_queue_length(Some(-3)),
            Enablement::Disabled(DisabledBecause::Negative)
        );
        assert_eq!(
            Enablement::from_prepare_queue_length(Some(i64::MIN)),
            Enablement::Disabled(DisabledBecause::Negative)
        );
        assert_eq!(
            Enablement::from_prepare_queue_length(Some(2))
                .limit()
                .map(Limit::get),
            Some(2)
        );
    }
}
