//! The recount transition table (documented on [`recount()`]).

use serde::Serialize;

use crate::model::{Phase, in_preparation};

/// The state of one load relevant to the table, or `None` before a create
/// or after a delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Observed {
    /// `status.phase`.
    pub phase: Phase,
    /// The `velero.io/expose-on-going=true` label.
    pub expose_on_going: bool,
}

impl Observed {
    /// Whether this state counts as "in preparation".
    pub fn in_preparation(self) -> bool {
        in_preparation(self.phase, self.expose_on_going)
    }
}

/// Which table the count cache applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum RecountPolicy {
    /// Velero's triggers only (L3.12).
    Velero,
    /// Velero's triggers plus every event that changes whether the load is in
    /// preparation (creates, deletes, label-only changes).
    Fixed,
}

/// Outcome of one event in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Recount {
    /// The cached count stays.
    No,
    /// A Velero trigger (L3.12); the cached count is refreshed.
    Velero(VeleroTrigger),
    /// Not a Velero trigger, but the event changed whether the load is in
    /// preparation, so the fixed table refreshes the count.
    Fix(FixTrigger),
}

impl Recount {
    /// Whether the count is refreshed.
    pub fn refreshes(self) -> bool {
        !matches!(self, Recount::No)
    }
}

/// The three update triggers of L3.12. All require a phase change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum VeleroTrigger {
    /// The new phase is `Accepted`.
    EnteredAccepted,
    /// The old phase is `Prepared`.
    LeftPrepared,
    /// The old phase is `Accepted` and the new one is not `Prepared`.
    LeftAcceptedNotForPrepared,
}

/// The fixes: events Velero ignores although they change the count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum FixTrigger {
    /// A load created already in preparation (or first seen so, e.g. after a
    /// node-agent restart or a re-list).
    CreatedInPreparation,
    /// A load in preparation deleted (Velero leaves a stale count, W3.3).
    DeletedInPreparation,
    /// An update that changed "in preparation" without a Velero trigger, e.g.
    /// the label removed or added without a phase change.
    UpdateChangedPreparation,
}

/// The table: whether an event from `old` to `new` refreshes the count.
/// `old == None` is a create, `new == None` a delete.
///
/// The recount transition table: which watch events make a gate's cached
/// count of loads in preparation out of date (L3.9–L3.12) and the fixes.
///
/// Velero keeps, per kind, a change id and a cached count; an informer event
/// that is a *trigger* bumps the change id, and the next gate evaluation
/// re-lists that kind (L3.10). Every other event leaves the cached count as it
/// was, even when it changed which loads are in preparation. The table is a
/// pure function of the event's old and new state so it can be tested
/// exhaustively.
pub fn recount(policy: RecountPolicy, old: Option<Observed>, new: Option<Observed>) -> Recount {
    if let (Some(o), Some(n)) = (old, new)
        && let Some(trigger) = velero_trigger(o.phase, n.phase)
    {
        return Recount::Velero(trigger);
    }
    if policy == RecountPolicy::Velero {
        return Recount::No;
    }
    let was = old.is_some_and(Observed::in_preparation);
    let is = new.is_some_and(Observed::in_preparation);
    if was == is {
        return Recount::No;
    }
    Recount::Fix(match (old, new) {
        (None, _) => FixTrigger::CreatedInPreparation,
        (_, None) => FixTrigger::DeletedInPreparation,
        _ => FixTrigger::UpdateChangedPreparation,
    })
}

/// Velero's update rule (L3.12): the phase changed and (the new phase is
/// `Accepted`, or the old one is `Prepared`, or the old one is `Accepted` and
/// the new one is not `Prepared`).
fn velero_trigger(old: Phase, new: Phase) -> Option<VeleroTrigger> {
    if old == new {
        return None;
    }
    if new == Phase::Accepted {
        Some(VeleroTrigger::EnteredAccepted)
    } else if old == Phase::Prepared {
        Some(VeleroTrigger::LeftPrepared)
    } else if old == Phase::Accepted && new != Phase::Prepared {
        Some(VeleroTrigger::LeftAcceptedNotForPrepared)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(phase: Phase, label: bool) -> Option<Observed> {
        Some(Observed {
            phase,
            expose_on_going: label,
        })
    }

    #[test]
    fn accepted_to_prepared_does_not_recount() {
        let r = recount(
            RecountPolicy::Velero,
            obs(Phase::Accepted, true),
            obs(Phase::Prepared, true),
        );
        assert_eq!(r, Recount::No);
        let r = recount(
            RecountPolicy::Fixed,
            obs(Phase::Accepted, true),
            obs(Phase::Prepared, true),
        );
        assert_eq!(r, Recount::No);
    }

    #[test]
    fn velero_ignores_delete_of_a_load_in_preparation_but_fixed_recounts() {
        let old = obs(Phase::Prepared, true);
        assert_eq!(recount(RecountPolicy::Velero, old, None), Recount::No);
        assert_eq!(
            recount(RecountPolicy::Fixed, old, None),
            Recount::Fix(FixTrigger::DeletedInPreparation)
        );
    }

    #[test]
    fn label_removed_without_phase_change_is_a_fix() {
        let r = recount(
            RecountPolicy::Fixed,
            obs(Phase::InProgress, true),
            obs(Phase::InProgress, false),
        );
        assert_eq!(r, Recount::Fix(FixTrigger::UpdateChangedPreparation));
    }
}
