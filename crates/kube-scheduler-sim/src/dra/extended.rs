//! Extended resources backed by DRA (DR.11, DRAExtendedResource, on by
//! default from 1.36): a container request such as `example.com/gpu: 2`
//! that a DeviceClass names (`spec.extendedResourceName`, or the implicit
//! `deviceclass.resource.kubernetes.io/<class>`) is, on a node that does
//! not advertise the resource in its allocatable, served by devices of
//! that class: NodeResourcesFit leaves it to DynamicResources, which
//! allocates a claim of its own for the pod.
//!
//! This module holds the name-to-class mapping (the scheduler's
//! `ExtendedResourceCache`), what a pod asks for per container, and the
//! device requests kube-scheduler builds from it
//! (`createRequestsAndMappings`).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::DeviceClass;
use kube_validation::Quantity;

use crate::resources::is_extended_resource_name;

/// The prefix of every DeviceClass's implicit extended resource name.
pub const IMPLICIT_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// `IsDRAExtendedResourceName`: an extended resource name, or an implicit
/// DeviceClass name.
pub fn is_dra_extended_resource_name(name: &str) -> bool {
    is_extended_resource_name(name) || name.starts_with(IMPLICIT_PREFIX)
}

/// The classes that serve each extended resource name, as the scheduler's
/// cache holds them after it has seen `classes` (an informer lists them in
/// name order). A class's explicit name goes to the newest class naming it
/// (by `creationTimestamp`; a tie keeps the class seen first); a class that
/// loses its explicit name gets no implicit name either, as upstream's
/// cache returns before adding it.
pub(crate) fn class_mapping(classes: &[&DeviceClass]) -> HashMap<String, String> {
    let mut sorted: Vec<&DeviceClass> = classes.to_vec();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut by_name: HashMap<String, (String, Option<k8s_openapi::jiff::Timestamp>)> =
        HashMap::new();
    for class in sorted {
        let name = class.metadata.name.clone().unwrap_or_default();
        let created = class.metadata.creation_timestamp.as_ref().map(|t| t.0);
        let explicit = class
            .spec
            .extended_resource_name
            .as_ref()
            .filter(|n| !n.is_empty());
        if let Some(explicit) = explicit
            && let Some((_, current)) = by_name.get(explicit)
            && created.unwrap_or_default() <= current.unwrap_or_default()
        {
            // Older, or as old and a later name: the class seen first keeps it.
            continue;
        }
        if let Some(explicit) = explicit {
            by_name.insert(explicit.clone(), (name.clone(), created));
        }
        by_name.insert(format!("{IMPLICIT_PREFIX}{name}"), (name, created));
    }
    by_name
        .into_iter()
        .map(|(resource, (class, _))| (resource, class))
        .collect()
}

/// The pod's requested resources (`requests`, its effective requests) that
/// a DeviceClass of `dra` serves, each with that class
/// (`preFilterExtendedResources`, and `shouldDelegateResourceToDRA` before
/// it looks at the node); none while DRAExtendedResource is off.
pub(crate) fn served_resources(
    dra: &super::Dra,
    requests: &crate::resources::Resources,
    features: super::DraFeatures,
) -> BTreeMap<String, String> {
    if !features.extended_resources {
        return BTreeMap::new();
    }
    requests
        .scalar
        .iter()
        .filter(|(name, want)| **want > 0 && is_dra_extended_resource_name(name))
        .filter_map(|(name, _)| Some((name.clone(), dra.extended.get(name.as_str())?.clone())))
        .collect()
}

/// One container's requests, as the device requests are built from them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContainerRequests {
    /// The container's name.
    pub(crate) name: String,
    /// A regular container or a sidecar (restartable init container):
    /// running for the pod's whole life.
    pub(crate) long_lived: bool,
    /// Every request key of the container, sorted: a request's index here
    /// names the device request.
    pub(crate) keys: Vec<String>,
    /// The amounts of its DRA extended resource requests, as whole units
    /// (`AsInt64`; none when not a whole number).
    pub(crate) amounts: BTreeMap<String, Option<i64>>,
}

/// Per container, init containers first: what a pod asks for, when some
/// container requests a DRA extended resource name; `None` otherwise.
pub(crate) fn pod_requests(pod: &Pod) -> Option<Vec<ContainerRequests>> {
    let spec = pod.spec.as_ref()?;
    let inits = spec.init_containers.iter().flatten().map(|c| {
        let sidecar = c.restart_policy.as_deref() == Some("Always");
        (c, sidecar)
    });
    let regular = spec.containers.iter().map(|c| (c, true));
    let containers: Vec<ContainerRequests> = inits
        .chain(regular)
        .map(|(c, long_lived)| {
            let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
            let keys: Vec<String> = requests
                .into_iter()
                .flatten()
                .map(|(k, _)| k.clone())
                .collect();
            let amounts = requests
                .into_iter()
                .flatten()
                .filter(|(k, _)| is_dra_extended_resource_name(k))
                .map(|(k, q)| (k.clone(), Quantity::parse(&q.0).ok().and_then(whole_units)))
                .collect();
            ContainerRequests {
                name: c.name.clone(),
                long_lived,
                keys,
                amounts,
            }
        })
        .collect();
    containers
        .iter()
        .any(|c| !c.amounts.is_empty())
        .then_some(containers)
}

/// `Quantity.AsInt64`: the amount when it is a whole number.
fn whole_units(q: Quantity) -> Option<i64> {
    let nanos = q.nanos();
    (nanos % 1_000_000_000 == 0)
        .then(|| i64::try_from(nanos / 1_000_000_000).ok())
        .flatten()
}

/// One device request of the pod's extended-resource claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExtendedRequest {
    /// `container-<i>-request-<j>`: the container's index (init containers
    /// first) and the resource's index among the container's sorted
    /// request keys.
    pub(crate) name: String,
    /// The DeviceClass serving the resource.
    pub(crate) class: String,
    /// Devices wanted (`ExactCount`).
    pub(crate) count: i64,
}

/// `createRequestsAndMappings`: the device requests for the resources in
/// `delegated` (resource name → class), sorted by name. Per resource, each
/// long-lived container asks for its own devices; an init container that
/// is not a sidecar first reuses the devices of the long-lived containers
/// that start after it and asks for the rest, and of those init requests
/// only the largest (the first of equal ones) is kept.
pub(crate) fn device_requests(
    containers: &[ContainerRequests],
    delegated: &BTreeMap<String, String>,
) -> Vec<ExtendedRequest> {
    let mut out = Vec::new();
    for (resource, class) in delegated {
        let request_for = |i: usize, reusable: &[Option<ExtendedRequest>]| {
            let container = &containers[i];
            let wanted = container.amounts.get(resource).copied().flatten()?;
            if wanted <= 0 {
                return None;
            }
            let reused: i64 = reusable.iter().flatten().map(|r| r.count).sum();
            if reused >= wanted {
                return None;
            }
            let index = container.keys.iter().position(|k| k == resource)?;
            Some(ExtendedRequest {
                name: format!("container-{i}-request-{index}"),
                class: class.clone(),
                count: wanted - reused,
            })
        };
        let long_lived: Vec<Option<ExtendedRequest>> = (0..containers.len())
            .map(|i| {
                if containers[i].long_lived {
                    request_for(i, &[])
                } else {
                    None
                }
            })
            .collect();
        let mut largest_short: Option<ExtendedRequest> = None;
        for i in (0..containers.len()).filter(|i| !containers[*i].long_lived) {
            if let Some(request) = request_for(i, &long_lived[i..])
                && largest_short
                    .as_ref()
                    .is_none_or(|largest| request.count > largest.count)
            {
                largest_short = Some(request);
            }
        }
        out.extend(largest_short);
        out.extend(long_lived.into_iter().flatten());
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const E: &str = "example.com/gpu";
    const E1: &str = "example.com/gpu1";
    const EINIT: &str = "example.com/gpuinit";

    /// A pod of (kind, requests) containers: kind `init`, `sidecar` or
    /// `con` (st's `InitReq`, `SidecarReq` and `Res`).
    fn pod(containers: &[(&str, Value)]) -> Pod {
        let mut inits = Vec::new();
        let mut regular = Vec::new();
        for (kind, requests) in containers {
            match *kind {
                "init" => inits.push(json!({"name": format!("init-con{}", inits.len()),
                    "resources": {"requests": requests}})),
                "sidecar" => inits.push(json!({"name": format!("sidecar-con{}", inits.len()),
                    "restartPolicy": "Always", "resources": {"requests": requests}})),
                _ => regular.push(json!({"name": format!("con{}", regular.len()),
                    "resources": {"requests": requests}})),
            }
        }
        serde_json::from_value(json!({"metadata": {"name": "p"},
            "spec": {"initContainers": inits, "containers": regular}}))
        .unwrap()
    }

    fn delegated(list: &[(&str, &str)]) -> BTreeMap<String, String> {
        list.iter()
            .map(|(r, c)| ((*r).to_owned(), (*c).to_owned()))
            .collect()
    }

    fn requests(pod: &Pod, list: &[(&str, &str)]) -> Vec<(String, String, i64)> {
        let containers = pod_requests(pod).unwrap_or_default();
        device_requests(&containers, &delegated(list))
            .into_iter()
            .map(|r| (r.name, r.class, r.count))
            .collect()
    }

    fn want(list: &[(&str, &str, i64)]) -> Vec<(String, String, i64)> {
        list.iter()
            .map(|(n, c, k)| ((*n).to_owned(), (*c).to_owned(), *k))
            .collect()
    }

    // Test_createRequestsAndMappings_requests
    // (dynamicresources/extendeddynamicresources_test.go, v1.37.2).
    #[test]
    fn device_requests_table() {
        let one = pod(&[("con", json!({E: "1", E1: "2"}))]);
        assert_eq!(requests(&one, &[]), want(&[]));
        assert_eq!(
            requests(&one, &[(E, "class")]),
            want(&[("container-0-request-0", "class", 1)])
        );
        assert_eq!(
            requests(&one, &[(E, "class"), (E1, "class1")]),
            want(&[
                ("container-0-request-0", "class", 1),
                ("container-0-request-1", "class1", 2)
            ])
        );
        let two = pod(&[("con", json!({E: "1"})), ("con", json!({E1: "2"}))]);
        assert_eq!(
            requests(&two, &[(E, "class"), (E1, "class1")]),
            want(&[
                ("container-0-request-0", "class", 1),
                ("container-1-request-0", "class1", 2)
            ])
        );
        let classes = [(E, "class"), (EINIT, "classInit")];
        let init_regular = pod(&[("init", json!({EINIT: "2"})), ("con", json!({E: "1"}))]);
        assert_eq!(
            requests(&init_regular, &classes),
            want(&[
                ("container-0-request-0", "classInit", 2),
                ("container-1-request-0", "class", 1)
            ])
        );
        let two_inits = pod(&[
            ("init", json!({EINIT: "1"})),
            ("init", json!({EINIT: "2"})),
            ("con", json!({E: "1"})),
        ]);
        assert_eq!(
            requests(&two_inits, &classes),
            want(&[
                ("container-1-request-0", "classInit", 2),
                ("container-2-request-0", "class", 1)
            ])
        );
        let with_sidecar = pod(&[
            ("init", json!({EINIT: "1"})),
            ("sidecar", json!({EINIT: "1"})),
            ("init", json!({EINIT: "2"})),
            ("con", json!({E: "1"})),
        ]);
        assert_eq!(
            requests(&with_sidecar, &classes),
            want(&[
                ("container-1-request-0", "classInit", 1),
                ("container-2-request-0", "classInit", 2),
                ("container-3-request-0", "class", 1)
            ])
        );
    }

    // The example of `createRequestsAndMappings`' comment: the index counts
    // every request key of the container, cpu and memory included.
    #[test]
    fn a_request_is_named_by_its_key_among_all_the_container_requests() {
        let p = pod(&[("con", json!({"cpu": "1", "memory": "1Gi", E: "2"}))]);
        assert_eq!(
            requests(&p, &[(E, "gpu")]),
            want(&[("container-0-request-1", "gpu", 2)])
        );
    }

    fn class(name: &str, extended: Option<&str>, created: &str) -> DeviceClass {
        serde_json::from_value(
            json!({"metadata": {"name": name, "creationTimestamp": created},
            "spec": {"extendedResourceName": extended}}),
        )
        .unwrap()
    }

    // TestExtendedResourceCache (deviceclass/extendedresourcecache,
    // dynamic-resource-allocation v0.37.2): the newer class wins a name,
    // a tie goes to the lower name, every class has its implicit name.
    #[test]
    fn the_newest_class_naming_a_resource_serves_it() {
        let old = class("a-old", Some(E), "2026-01-01T00:00:00Z");
        let new = class("b-new", Some(E), "2026-02-01T00:00:00Z");
        let tie = class("c-tie", Some(E), "2026-02-01T00:00:00Z");
        let plain = class("d-plain", None, "2026-01-01T00:00:00Z");
        let map = class_mapping(&[&tie, &plain, &new, &old]);
        assert_eq!(map[E], "b-new");
        assert_eq!(map[&format!("{IMPLICIT_PREFIX}a-old")], "a-old");
        assert_eq!(map[&format!("{IMPLICIT_PREFIX}b-new")], "b-new");
        assert_eq!(map[&format!("{IMPLICIT_PREFIX}d-plain")], "d-plain");
        // The tie lost its explicit name, and with it its implicit one.
        assert!(!map.contains_key(&format!("{IMPLICIT_PREFIX}c-tie")));
        assert_eq!(map.len(), 4);
    }

    #[test]
    fn implicit_class_names_are_dra_extended_resource_names() {
        assert!(is_dra_extended_resource_name(
            "deviceclass.resource.kubernetes.io/gpu"
        ));
        assert!(is_dra_extended_resource_name(E));
        assert!(!is_dra_extended_resource_name("cpu"));
        assert!(!is_dra_extended_resource_name("kubernetes.io/foo"));
    }
}
