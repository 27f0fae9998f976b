//! Taints and tolerations, as `k8s.io/api/core/v1`'s
//! `Toleration.ToleratesTaint` and `pkg/apis/core/v1/helper`'s
//! `TolerationsTolerateTaint` / `FindMatchingUntoleratedTaint` decide them.
//!
//! The one implementation of tolerations in the workspace (the
//! TaintToleration, NodeUnschedulable and PodTopologySpread plugins, and
//! `affinity-translate`'s data-mover diagnosis use it). The rules, literally:
//! - an empty toleration `effect` matches every effect, else it must equal
//!   the taint's;
//! - an empty toleration `key` matches every key, else it must equal the
//!   taint's;
//! - operator `Exists` matches every value; operator `Equal` **or empty**
//!   needs equal values (absent counts as `""`); any other operator matches
//!   nothing.
//!
//! So `{operator: ""}` behaves as `Equal`, and an empty key with `Equal`
//! (which the API server rejects on create) tolerates every taint whose
//! value equals the toleration's value.

use k8s_openapi::api::core::v1::{Taint, Toleration};

/// `NoSchedule`.
pub const NO_SCHEDULE: &str = "NoSchedule";
/// `PreferNoSchedule`.
pub const PREFER_NO_SCHEDULE: &str = "PreferNoSchedule";
/// `NoExecute`.
pub const NO_EXECUTE: &str = "NoExecute";

/// `Toleration.ToleratesTaint`.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or_default()
                == taint.value.as_deref().unwrap_or_default()
        }
        "Exists" => true,
        _ => false,
    }
}

/// `TolerationsTolerateTaint`: some toleration tolerates the taint.
pub fn tolerated(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint))
}

/// Whether a taint keeps pods off a node (`NoSchedule` or `NoExecute`,
/// `DoNotScheduleTaintsFilterFunc`).
pub fn blocks_scheduling(taint: &Taint) -> bool {
    taint.effect == NO_SCHEDULE || taint.effect == NO_EXECUTE
}

/// `FindMatchingUntoleratedTaint` with `DoNotScheduleTaintsFilterFunc`: the
/// first `NoSchedule`/`NoExecute` taint no toleration tolerates.
pub fn first_untolerated<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| blocks_scheduling(t))
        .find(|t| !tolerated(tolerations, t))
}

/// How a taint is usually written: `key=value:Effect` (`key:Effect` without
/// a value).
pub fn describe(taint: &Taint) -> String {
    match taint.value.as_deref().filter(|v| !v.is_empty()) {
        Some(value) => format!("{}={value}:{}", taint.key, taint.effect),
        None => format!("{}:{}", taint.key, taint.effect),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: (!value.is_empty()).then(|| value.into()),
            effect: effect.into(),
            ..Default::default()
        }
    }

    fn toleration(key: &str, op: Option<&str>, value: &str, effect: &str) -> Toleration {
        Toleration {
            key: (!key.is_empty()).then(|| key.into()),
            operator: op.map(Into::into),
            value: (!value.is_empty()).then(|| value.into()),
            effect: (!effect.is_empty()).then(|| effect.into()),
            toleration_seconds: None,
        }
    }

    #[test]
    fn the_rules_of_tolerates_taint() {
        let t = taint("dedicated", "db", NO_SCHEDULE);
        // Equal, explicit or empty operator.
        assert!(tolerates(
            &toleration("dedicated", Some("Equal"), "db", ""),
            &t
        ));
        assert!(tolerates(&toleration("dedicated", Some(""), "db", ""), &t));
        assert!(tolerates(
            &toleration("dedicated", None, "db", NO_SCHEDULE),
            &t
        ));
        assert!(!tolerates(
            &toleration("dedicated", Some("Equal"), "web", ""),
            &t
        ));
        // Effect must match when given.
        assert!(!tolerates(
            &toleration("dedicated", Some("Equal"), "db", NO_EXECUTE),
            &t
        ));
        // Exists with or without a key.
        assert!(tolerates(
            &toleration("dedicated", Some("Exists"), "", ""),
            &t
        ));
        assert!(tolerates(&toleration("", Some("Exists"), "", ""), &t));
        // Empty key with Equal matches any key with the same value.
        assert!(tolerates(&toleration("", Some("Equal"), "db", ""), &t));
        assert!(!tolerates(&toleration("", Some("Equal"), "", ""), &t));
        assert!(tolerates(
            &toleration("", Some("Equal"), "", ""),
            &taint("x", "", NO_SCHEDULE)
        ));
        // Unknown operators match nothing.
        assert!(!tolerates(
            &toleration("dedicated", Some("In"), "db", ""),
            &t
        ));
    }

    #[test]
    fn only_no_schedule_and_no_execute_taints_block() {
        let taints = [
            taint("soft", "", PREFER_NO_SCHEDULE),
            taint("a", "1", NO_EXECUTE),
            taint("b", "", NO_SCHEDULE),
        ];
        assert_eq!(
            first_untolerated(&taints, &[]).map(|t| t.key.as_str()),
            Some("a")
        );
        let tolerate_a = [toleration("a", Some("Exists"), "", "")];
        assert_eq!(
            first_untolerated(&taints, &tolerate_a).map(|t| t.key.as_str()),
            Some("b")
        );
        assert_eq!(describe(&taints[1]), "a=1:NoExecute");
        assert_eq!(describe(&taints[2]), "b:NoSchedule");
    }
}
