//! The node features a pod needs and a node declares (C.76): what
//! kube-scheduler's NodeDeclaredFeatures filter compares, as the release's
//! registry (`k8s.io/component-helpers/nodedeclaredfeatures`) infers and
//! maps them.
//!
//! What a pod needs is read from its spec alone, feature by feature. A
//! node's `status.declaredFeatures` is read as the scheduler's `TryMap`
//! reads it: a merge walk over the sorted registry that ignores unknown
//! names. The API server keeps the list sorted and free of duplicates; an
//! unsorted list written past it loses the names that come after a larger
//! one, as upstream does.
//!
//! 1.37 also infers `VolumeBindMountOptions` from a volume mount's
//! `bindMountOptions`. The API server drops that field unless the alpha
//! VolumeBindMountOptions gate is on, so no pod of a cluster with the
//! default gates has it, and it is not read here.

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::KubernetesVersion;

/// The features registered in 1.36 (`features.AllFeatures`), sorted.
const REGISTRY_1_36: [&str; 5] = [
    "ExtendWebSocketsToKubelet",
    "InPlacePodLevelResourcesVerticalScaling",
    "InPlacePodVerticalScalingInitContainers",
    "RestartAllContainersOnContainerExits",
    "UserNamespacesHostNetworkSupport",
];

/// The features registered in 1.37, sorted.
const REGISTRY_1_37: [&str; 9] = [
    "DRANodeAllocatableResources",
    "DRAOptionalNodeOperations",
    "ExtendWebSocketsToKubelet",
    "InPlacePodLevelResourcesVerticalScaling",
    "InPlacePodVerticalScalingInitContainers",
    "InPlacePodVerticalScalingMemoryBackedVolumes",
    "RestartAllContainersOnContainerExits",
    "UserNamespacesHostNetworkSupport",
    "VolumeBindMountOptions",
];

/// The node features a release's scheduler knows, sorted by name; none
/// before 1.36, where the plugin is not in the default profile.
pub fn registry(version: KubernetesVersion) -> &'static [&'static str] {
    match version {
        KubernetesVersion::V1_34 | KubernetesVersion::V1_35 => &[],
        KubernetesVersion::V1_36 => &REGISTRY_1_36,
        KubernetesVersion::V1_37 => &REGISTRY_1_37,
    }
}

/// A node feature a pod's spec can require. The other registered features
/// matter only to in-place updates, never to scheduling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RequiredFeature {
    /// A container or init container has a `restartPolicyRules` entry
    /// whose action is `RestartAllContainers`.
    RestartAllContainersOnContainerExits,
    /// `hostNetwork: true` with `hostUsers: false`.
    UserNamespacesHostNetworkSupport,
}

impl RequiredFeature {
    /// The feature's registered name.
    pub fn name(self) -> &'static str {
        match self {
            Self::RestartAllContainersOnContainerExits => "RestartAllContainersOnContainerExits",
            Self::UserNamespacesHostNetworkSupport => "UserNamespacesHostNetworkSupport",
        }
    }

    /// `InferForScheduling`: whether `pod` needs the feature.
    fn required_by(self, pod: &Pod) -> bool {
        let Some(spec) = pod.spec.as_ref() else {
            return false;
        };
        match self {
            Self::RestartAllContainersOnContainerExits => spec
                .containers
                .iter()
                .chain(spec.init_containers.iter().flatten())
                .any(restarts_all),
            Self::UserNamespacesHostNetworkSupport => {
                spec.host_network == Some(true) && spec.host_users == Some(false)
            }
        }
    }
}

fn restarts_all(c: &Container) -> bool {
    c.restart_policy_rules
        .iter()
        .flatten()
        .any(|rule| rule.action == "RestartAllContainers")
}

/// `InferForPodScheduling`: the features `pod` needs in `version`'s
/// registry, in name order (none before 1.36).
pub fn required_features(pod: &Pod, version: KubernetesVersion) -> Vec<RequiredFeature> {
    let registry = registry(version);
    [
        RequiredFeature::RestartAllContainersOnContainerExits,
        RequiredFeature::UserNamespacesHostNetworkSupport,
    ]
    .into_iter()
    .filter(|f| registry.contains(&f.name()) && f.required_by(pod))
    .collect()
}

/// `TryMap`: the registered features of `version` a node's
/// `status.declaredFeatures` declares. Walks the list and the sorted
/// registry together, skipping names the registry lacks.
pub fn declared_features(declared: &[String], version: KubernetesVersion) -> Vec<&'static str> {
    let registry = registry(version);
    let (mut i, mut j) = (0, 0);
    let mut found = Vec::new();
    while i < declared.len() && j < registry.len() {
        match declared[i].as_str().cmp(registry[j]) {
            std::cmp::Ordering::Equal => {
                found.push(registry[j]);
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    found
}

/// Whether a node declaring `declared` has every feature of `required`.
pub fn node_has(
    declared: &[String],
    required: &[RequiredFeature],
    version: KubernetesVersion,
) -> bool {
    let known = declared_features(declared, version);
    required.iter().all(|f| known.contains(&f.name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).unwrap()
    }

    fn names(pod: &Pod, version: KubernetesVersion) -> Vec<&'static str> {
        required_features(pod, version)
            .into_iter()
            .map(RequiredFeature::name)
            .collect()
    }

    fn rule_container(name: &str) -> serde_json::Value {
        json!({"name": name, "image": "x", "restartPolicy": "Never", "restartPolicyRules": [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}]})
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    // TestInferForScheduling (restartallcontainers, component-helpers
    // v0.36.3 and v0.37.2).
    #[test]
    fn restart_all_containers_is_required_by_a_rule_in_any_container() {
        let plain = json!({"name": "plain", "image": "x"});
        let in_init = pod(json!({"initContainers": [rule_container("i")], "containers": [plain]}));
        let in_main = pod(json!({"initContainers": [plain], "containers": [rule_container("c")]}));
        let none = pod(json!({"containers": [plain]}));
        for version in [KubernetesVersion::V1_36, KubernetesVersion::V1_37] {
            assert_eq!(
                names(&in_init, version),
                ["RestartAllContainersOnContainerExits"]
            );
            assert_eq!(
                names(&in_main, version),
                ["RestartAllContainersOnContainerExits"]
            );
            assert!(names(&none, version).is_empty());
        }
    }

    // TestInferForScheduling (usernamespaceshostnetwork, v0.37.2).
    #[test]
    fn host_network_without_host_users_requires_user_namespaces_support() {
        let cases = [
            (json!(true), json!(false), true),
            (json!(true), serde_json::Value::Null, false),
            (json!(true), json!(true), false),
            (json!(false), json!(false), false),
        ];
        for (host_network, host_users, want) in cases {
            let p = pod(json!({"hostNetwork": host_network, "hostUsers": host_users,
                "containers": [{"name": "c", "image": "x"}]}));
            assert_eq!(
                names(&p, KubernetesVersion::V1_37) == ["UserNamespacesHostNetworkSupport"],
                want,
                "{host_network} {host_users}"
            );
        }
    }

    #[test]
    fn nothing_is_required_before_1_36() {
        let p = pod(json!({"hostNetwork": true, "hostUsers": false,
            "containers": [rule_container("c")]}));
        for version in [KubernetesVersion::V1_34, KubernetesVersion::V1_35] {
            assert!(names(&p, version).is_empty());
        }
        assert_eq!(
            names(&p, KubernetesVersion::V1_36),
            [
                "RestartAllContainersOnContainerExits",
                "UserNamespacesHostNetworkSupport"
            ]
        );
    }

    // TestFeatureMapper (featureset_test.go, v0.37.2), over the 1.36
    // registry's names in place of a, b, c, d.
    #[test]
    fn declared_features_are_read_by_a_merge_walk_that_skips_unknown_names() {
        let v = KubernetesVersion::V1_36;
        let [a, b, c, d, _] = REGISTRY_1_36;
        assert!(declared_features(&[], v).is_empty());
        assert_eq!(declared_features(&strings(&[a]), v), [a]);
        assert_eq!(declared_features(&strings(&[a, c]), v), [a, c]);
        assert_eq!(declared_features(&strings(&[a, b, c, d]), v), [a, b, c, d]);
        assert_eq!(declared_features(&strings(&["0", a]), v), [a]);
        assert_eq!(declared_features(&strings(&[a, "F", b]), v), [a, b]);
        assert_eq!(declared_features(&strings(&[d, "Zz"]), v), [d]);
        // Unsorted: the walk passes the first name and loses the second.
        let [.., r, u] = REGISTRY_1_36;
        assert_eq!(declared_features(&strings(&[u, r]), v), [u]);
    }
}
