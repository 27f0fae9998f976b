//! Taints and tolerations, as `k8s.io/api/core/v1`'s
//! `Toleration.ToleratesTaint` (`toleration.go`) and
//! `pkg/apis/core/v1/helper`'s `TolerationsTolerateTaint` /
//! `FindMatchingUntoleratedTaint` (`helpers.go`) decide them (Kubernetes
//! v1.35.4; C.25, C.27).
//!
//! The rules, literally:
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
//!
//! A cordon (`spec.unschedulable: true`) stands for the taint
//! `node.kubernetes.io/unschedulable:NoSchedule` (kube-scheduler's
//! NodeUnschedulable plugin, `pkg/scheduler/framework/plugins/nodeunschedulable`
//! `Filter`): [`cordon_admits`].
//!
//! kube-scheduler's plugins (`kube-scheduler-sim`) and `affinity-translate`'s
//! data-mover diagnosis decide with these functions, so they never disagree.

use k8s_openapi::api::core::v1::{Node, Taint, Toleration};

/// The taint effect `NoSchedule`.
pub const NO_SCHEDULE: &str = "NoSchedule";
/// The taint effect `PreferNoSchedule`.
pub const PREFER_NO_SCHEDULE: &str = "PreferNoSchedule";
/// The taint effect `NoExecute`.
pub const NO_EXECUTE: &str = "NoExecute";

/// The key of the taint a cordon stands for (`v1.TaintNodeUnschedulable`).
pub const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";

/// `Toleration.ToleratesTaint`.
#[inline]
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
#[inline]
pub fn tolerated(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint))
}

/// Whether a taint keeps pods off a node (`NoSchedule` or `NoExecute`,
/// `DoNotScheduleTaintsFilterFunc`); `PreferNoSchedule` only scores.
#[inline]
pub fn blocks_scheduling(taint: &Taint) -> bool {
    taint.effect == NO_SCHEDULE || taint.effect == NO_EXECUTE
}

/// `FindMatchingUntoleratedTaint` with `DoNotScheduleTaintsFilterFunc`: the
/// first `NoSchedule`/`NoExecute` taint no toleration tolerates.
#[inline]
pub fn first_untolerated<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| blocks_scheduling(t))
        .find(|t| !tolerated(tolerations, t))
}

/// Every `NoSchedule`/`NoExecute` taint no toleration tolerates, in the
/// node's order ([`first_untolerated`] is the first of them).
pub fn untolerated<'a>(
    taints: &'a [Taint],
    tolerations: &'a [Toleration],
) -> impl Iterator<Item = &'a Taint> + 'a {
    taints
        .iter()
        .filter(|t| blocks_scheduling(t))
        .filter(move |t| !tolerated(tolerations, t))
}

/// How a taint is written (`Taint.ToString` in `k8s.io/api/core/v1`,
/// `taint.go`): `key=value:Effect`, or `key:Effect` when the value is empty.
pub fn describe(taint: &Taint) -> String {
    match taint.value.as_deref().filter(|v| !v.is_empty()) {
        Some(value) => format!("{}={value}:{}", taint.key, taint.effect),
        None => format!("{}:{}", taint.key, taint.effect),
    }
}

/// Whether the node is cordoned (`spec.unschedulable: true`).
#[inline]
pub fn is_cordoned(node: &Node) -> bool {
    node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
}

/// Whether the tolerations tolerate the cordon taint
/// `node.kubernetes.io/unschedulable:NoSchedule`.
pub fn tolerates_cordon(tolerations: &[Toleration]) -> bool {
    tolerated(
        tolerations,
        &Taint {
            key: UNSCHEDULABLE_TAINT_KEY.to_owned(),
            effect: NO_SCHEDULE.to_owned(),
            ..Taint::default()
        },
    )
}

/// NodeUnschedulable's Filter: a node that is not cordoned admits every
/// pod, a cordoned one only pods whose tolerations tolerate
/// `node.kubernetes.io/unschedulable:NoSchedule`.
pub fn cordon_admits(node: &Node, tolerations: &[Toleration]) -> bool {
    !is_cordoned(node) || tolerates_cordon(tolerations)
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
        let all: Vec<&str> = untolerated(&taints, &[]).map(|t| t.key.as_str()).collect();
        assert_eq!(all, ["a", "b"]);
        assert_eq!(describe(&taints[1]), "a=1:NoExecute");
        assert_eq!(describe(&taints[2]), "b:NoSchedule");
    }

    /// `Taint.ToString`: the `=` only appears with a value, so an empty
    /// value (absent or `""`) reads `key:Effect` — never `key=:Effect`.
    #[test]
    fn a_taint_without_a_value_is_written_key_colon_effect() {
        let mut empty = taint("node-role.kubernetes.io/control-plane", "", NO_SCHEDULE);
        assert_eq!(
            describe(&empty),
            "node-role.kubernetes.io/control-plane:NoSchedule"
        );
        empty.value = Some(String::new());
        assert_eq!(
            describe(&empty),
            "node-role.kubernetes.io/control-plane:NoSchedule"
        );
    }

    #[test]
    fn a_cordon_admits_only_pods_tolerating_the_unschedulable_taint() {
        let node = |unschedulable: Option<bool>| Node {
            spec: Some(k8s_openapi::api::core::v1::NodeSpec {
                unschedulable,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(cordon_admits(&node(None), &[]));
        assert!(cordon_admits(&node(Some(false)), &[]));
        assert!(!cordon_admits(&node(Some(true)), &[]));
        let exists = |key: &str, effect: &str| toleration(key, Some("Exists"), "", effect);
        assert!(cordon_admits(
            &node(Some(true)),
            &[exists(UNSCHEDULABLE_TAINT_KEY, NO_SCHEDULE)]
        ));
        assert!(!cordon_admits(
            &node(Some(true)),
            &[exists(UNSCHEDULABLE_TAINT_KEY, NO_EXECUTE)]
        ));
        assert!(cordon_admits(&node(Some(true)), &[exists("", "")]));
    }
}
