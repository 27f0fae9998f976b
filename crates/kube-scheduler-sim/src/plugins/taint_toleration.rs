//! TaintToleration (C.27, `pkg/scheduler/framework/plugins/tainttoleration`),
//! Filter part: a node is rejected by the first of its `NoSchedule` /
//! `NoExecute` taints that no toleration of the pod tolerates
//! (`FindMatchingUntoleratedTaint` with `DoNotScheduleTaintsFilterFunc`).
//! `PreferNoSchedule` taints only score. Toleration matching is
//! [`crate::taints`].

use k8s_openapi::api::core::v1::{Taint, Toleration};

use crate::taints::first_untolerated;

/// The Filter: the first untolerated `NoSchedule`/`NoExecute` taint, `None`
/// when the pod tolerates them all.
pub fn filter<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    first_untolerated(taints, tolerations)
}

/// kube-scheduler's reason for an untolerated taint:
/// `node(s) had untolerated taint {key: value}` (value empty when absent).
pub fn reason(taint: &Taint) -> String {
    format!(
        "node(s) had untolerated taint {{{}: {}}}",
        taint.key,
        taint.value.as_deref().unwrap_or_default()
    )
}
