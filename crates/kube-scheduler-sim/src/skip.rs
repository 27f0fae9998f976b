//! Pods kube-scheduler's default profile never tries to place (C.70).
//!
//! Before any filter runs, kube-scheduler leaves a pending pod alone when:
//! 1. its `spec.schedulerName` names another scheduler: only pods whose
//!    name matches one of the profiles enter the scheduling queue
//!    (`responsibleForPod`, `pkg/scheduler/eventhandlers.go`); the default
//!    profile is `default-scheduler`, which the API server also writes into
//!    a pod created without the field;
//! 2. it has `spec.schedulingGates`: the SchedulingGates plugin's PreEnqueue
//!    keeps it out of the active queue (`waiting for scheduling gates: [...]`,
//!    `pkg/scheduler/framework/plugins/schedulinggates`);
//! 3. it is being deleted (`metadata.deletionTimestamp`): `skipPodSchedule`
//!    (`pkg/scheduler/schedule_one.go`) drops it ("skip schedule deleting
//!    pod").
//!
//! The checks run in that order, the order kube-scheduler meets them (queue
//! admission, PreEnqueue, the scheduling cycle). Bound pods are not
//! affected: kube-scheduler's cache counts every assigned pod, whichever
//! scheduler bound it and whether or not it is being deleted.

use std::fmt;

use k8s_openapi::api::core::v1::Pod;
use serde::{Deserialize, Serialize};

/// The scheduler name of kube-scheduler's default profile.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// Why kube-scheduler's default profile does not try to place a pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
#[non_exhaustive]
pub enum SchedulingSkip {
    /// `spec.schedulerName` names another scheduler.
    OtherScheduler {
        /// The scheduler named.
        scheduler_name: String,
    },
    /// `spec.schedulingGates` is not empty.
    SchedulingGated {
        /// The gates' names, in the pod's order.
        gates: Vec<String>,
    },
    /// `metadata.deletionTimestamp` is set.
    Deleting,
}

impl SchedulingSkip {
    /// A short label for tables and JSON (`other scheduler`,
    /// `scheduling gated`, `being deleted`).
    pub fn label(&self) -> &'static str {
        match self {
            SchedulingSkip::OtherScheduler { .. } => "other scheduler",
            SchedulingSkip::SchedulingGated { .. } => "scheduling gated",
            SchedulingSkip::Deleting => "being deleted",
        }
    }
}

impl fmt::Display for SchedulingSkip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedulingSkip::OtherScheduler { scheduler_name } => write!(
                f,
                "not placed by kube-scheduler's default profile: spec.schedulerName is {scheduler_name:?}, not {DEFAULT_SCHEDULER_NAME:?}, so the scheduler of that name places it"
            ),
            SchedulingSkip::SchedulingGated { gates } => write!(
                f,
                "not placed while it has scheduling gates: waiting for scheduling gates: [{}] (kube-scheduler tries it once spec.schedulingGates is empty)",
                gates.join(" ")
            ),
            SchedulingSkip::Deleting => f.write_str(
                "not placed: the pod is being deleted (metadata.deletionTimestamp is set; kube-scheduler skips deleting pods)",
            ),
        }
    }
}

/// Why kube-scheduler's default profile would not try to place `pod`, or
/// `None` when it would (see the module documentation). Only meaningful for
/// a pod without `spec.nodeName`; the caller decides whether the pod is
/// pending.
pub fn scheduling_skip(pod: &Pod) -> Option<SchedulingSkip> {
    let spec = pod.spec.as_ref();
    if let Some(name) = spec.and_then(|s| s.scheduler_name.as_deref())
        && !name.is_empty()
        && name != DEFAULT_SCHEDULER_NAME
    {
        return Some(SchedulingSkip::OtherScheduler {
            scheduler_name: name.to_owned(),
        });
    }
    let gates: Vec<String> = spec
        .and_then(|s| s.scheduling_gates.as_ref())
        .into_iter()
        .flatten()
        .map(|g| g.name.clone())
        .collect();
    if !gates.is_empty() {
        return Some(SchedulingSkip::SchedulingGated { gates });
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Some(SchedulingSkip::Deleting);
    }
    None
}

/// The node a pending pod is nominated to (`status.nominatedNodeName`, set
/// by preemption), or `None`. A bound pod or one kube-scheduler skips
/// ([`scheduling_skip`]) is never treated as nominated (C.71).
pub fn nominated_node(pod: &Pod) -> Option<&str> {
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if bound || scheduling_skip(pod).is_some() {
        return None;
    }
    pod.status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSchedulingGate, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn a_time() -> Time {
        serde_json::from_value(serde_json::json!("2026-01-01T00:00:00Z")).unwrap()
    }

    fn pod() -> Pod {
        Pod {
            spec: Some(PodSpec::default()),
            ..Default::default()
        }
    }

    #[test]
    fn a_plain_pod_is_not_skipped() {
        assert_eq!(scheduling_skip(&pod()), None);
        let mut p = pod();
        p.spec.as_mut().unwrap().scheduler_name = Some(DEFAULT_SCHEDULER_NAME.to_owned());
        assert_eq!(scheduling_skip(&p), None);
    }

    #[test]
    fn skips_in_kube_schedulers_order() {
        let mut p = pod();
        p.metadata.deletion_timestamp = Some(a_time());
        assert_eq!(scheduling_skip(&p), Some(SchedulingSkip::Deleting));
        p.spec.as_mut().unwrap().scheduling_gates = Some(vec![
            PodSchedulingGate {
                name: "example.com/a".into(),
            },
            PodSchedulingGate {
                name: "example.com/b".into(),
            },
        ]);
        let gated = scheduling_skip(&p).unwrap();
        assert_eq!(
            gated.to_string(),
            "not placed while it has scheduling gates: waiting for scheduling gates: [example.com/a example.com/b] (kube-scheduler tries it once spec.schedulingGates is empty)"
        );
        p.spec.as_mut().unwrap().scheduler_name = Some("volcano".into());
        assert_eq!(
            scheduling_skip(&p),
            Some(SchedulingSkip::OtherScheduler {
                scheduler_name: "volcano".into()
            })
        );
    }

    #[test]
    fn nominated_only_when_pending_and_not_skipped() {
        let mut p = pod();
        p.status = Some(PodStatus {
            nominated_node_name: Some("n1".into()),
            ..Default::default()
        });
        assert_eq!(nominated_node(&p), Some("n1"));
        p.metadata.deletion_timestamp = Some(a_time());
        assert_eq!(nominated_node(&p), None);
        p.metadata.deletion_timestamp = None;
        p.spec.as_mut().unwrap().node_name = Some("n2".into());
        assert_eq!(nominated_node(&p), None);
    }
}
