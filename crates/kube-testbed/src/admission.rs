//! What the bed turns off in kube-apiserver and kube-controller-manager,
//! and why. Everything else runs with its defaults.
//!
//! The bed has no kubelet (Nodes are objects that tests create) and runs
//! kube-controller-manager only when asked, so it turns off the parts that
//! wait for one of those to do something that never happens here.

/// When an entry of a table applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// In every bed.
    Always,
    /// Only in a bed started without kube-controller-manager.
    WithoutControllerManager,
}

/// A default that the bed turns off, with the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disabled {
    /// The admission plugin or controller, as its flag names it.
    pub name: &'static str,
    /// When it is turned off.
    pub when: When,
    /// The first Kubernetes minor release that has it (0: every release
    /// the bed runs); an older release would refuse its name.
    pub since_minor: u32,
    /// Why.
    pub reason: &'static str,
}

impl Disabled {
    /// Whether this entry applies to a bed of Kubernetes 1.`minor`, with
    /// or without kube-controller-manager.
    pub fn applies(&self, controller_manager: bool, minor: u32) -> bool {
        minor >= self.since_minor
            && match self.when {
                When::Always => true,
                When::WithoutControllerManager => !controller_manager,
            }
    }
}

/// The admission plugins of kube-apiserver's default set (the list
/// `kube-apiserver --help` gives for `--enable-admission-plugins` in the
/// pinned version) that the bed passes to `--disable-admission-plugins`.
pub const DISABLED_ADMISSION_PLUGINS: &[Disabled] = &[
    Disabled {
        name: "TaintNodesByCondition",
        when: When::Always,
        since_minor: 0,
        reason: "taints every new Node node.kubernetes.io/not-ready:NoSchedule; only \
                 kube-controller-manager's node-lifecycle-controller lifts it once a kubelet \
                 reports Ready, and the bed has no kubelet and never runs that controller (see \
                 DISABLED_CONTROLLERS), so pods would never schedule on the Nodes tests create",
    },
    Disabled {
        name: "ServiceAccount",
        when: When::WithoutControllerManager,
        since_minor: 0,
        reason: "rejects every pod whose ServiceAccount (`default` when none is named) does not \
                 exist; kube-controller-manager's serviceaccount-controller creates `default` \
                 in each namespace",
    },
    Disabled {
        name: "ResourceQuota",
        when: When::WithoutControllerManager,
        since_minor: 0,
        reason: "rejects writes in a namespace with a ResourceQuota until the quota's status is \
                 filled in, which kube-controller-manager's resourcequota-controller does",
    },
    Disabled {
        name: "StorageObjectInUseProtection",
        when: When::WithoutControllerManager,
        since_minor: 0,
        reason: "adds the kubernetes.io/pvc-protection and kubernetes.io/pv-protection \
                 finalizers, which only kube-controller-manager's \
                 persistentvolumeclaim-protection-controller and \
                 persistentvolume-protection-controller remove: deleted claims and volumes \
                 would stay forever",
    },
    Disabled {
        name: "PodGroupProtection",
        when: When::WithoutControllerManager,
        since_minor: 36,
        reason: "adds a finalizer to every PodGroup that only kube-controller-manager's \
                 podgroup-protection-controller removes: deleted PodGroups would stay forever \
                 (PodGroups exist only with the GenericWorkload feature gate, off by default)",
    },
];

/// The kube-controller-manager controllers that the bed turns off (with
/// `--controllers=*,-<name>`), all others running as by default.
pub const DISABLED_CONTROLLERS: &[Disabled] = &[Disabled {
    name: "node-lifecycle-controller",
    when: When::Always,
    since_minor: 0,
    reason: "marks every Node Unknown after the grace period without kubelet heartbeats \
             (there is no kubelet), taints it unreachable and evicts its pods: the Nodes \
             tests create would lose their pods within minutes",
}];

/// The names of the entries of `table` that apply to a bed of Kubernetes
/// 1.`minor`, comma-separated.
pub(crate) fn flag_value(table: &[Disabled], controller_manager: bool, minor: u32) -> String {
    table
        .iter()
        .filter(|entry| entry.applies(controller_manager, minor))
        .map(|entry| entry.name)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_admission_runs_with_the_controller_manager() {
        assert_eq!(
            flag_value(DISABLED_ADMISSION_PLUGINS, true, 37),
            "TaintNodesByCondition"
        );
        assert_eq!(
            flag_value(DISABLED_ADMISSION_PLUGINS, false, 37),
            "TaintNodesByCondition,ServiceAccount,ResourceQuota,\
             StorageObjectInUseProtection,PodGroupProtection"
        );
    }

    #[test]
    fn a_plugin_newer_than_the_release_is_not_named() {
        assert_eq!(
            flag_value(DISABLED_ADMISSION_PLUGINS, false, 35),
            "TaintNodesByCondition,ServiceAccount,ResourceQuota,StorageObjectInUseProtection"
        );
    }
}
