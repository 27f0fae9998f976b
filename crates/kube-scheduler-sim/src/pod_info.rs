//! A pod compiled once for placement: its selectors parsed and validated,
//! its terms' namespaces resolved (C.7, C.16, C.23).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    NodeSelectorTerm, Pod, PodAffinityTerm, Toleration, WeightedPodAffinityTerm,
};

use kube_validation::node_selector::{NodeTerm, RequiredNodeAffinity, parse_preferred};
use kube_validation::{ParseError, namespace_or_default};

use crate::KubernetesVersion;
use crate::images::pod_images;
use crate::ports::{HostPort, host_ports};
use crate::resources::{QuantityProblem, Resources, pod_non_zero_requests, pod_requests};
use kube_validation::LabelSelectorMatcher as PodSelector;

/// Which namespaces a term looks at (C.7): a name set, or namespaces whose
/// labels match a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NamespaceScope {
    pub(crate) names: BTreeSet<String>,
    pub(crate) selector: PodSelector,
}

impl NamespaceScope {
    pub(crate) fn matches(
        &self,
        namespace: &str,
        namespace_labels: &BTreeMap<String, String>,
    ) -> bool {
        self.names.contains(namespace) || self.selector.matches(namespace_labels)
    }

    /// C.8, `mergeAffinityTermNamespacesIfNotEmpty`: for the incoming pod's
    /// own terms a non-empty namespaceSelector is resolved once against the
    /// namespace inventory; `{}` stays "all namespaces".
    pub(crate) fn resolve(&mut self, namespaces: &BTreeMap<String, BTreeMap<String, String>>) {
        if let PodSelector::Matching(_) = &self.selector
            && !self.selector.is_everything()
        {
            for (name, labels) in namespaces {
                if self.selector.matches(labels) {
                    self.names.insert(name.clone());
                }
            }
            self.selector = PodSelector::Nothing;
        }
    }
}

/// A parsed pod (anti-)affinity term (`framework.AffinityTerm`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AffinityTerm {
    pub(crate) scope: NamespaceScope,
    pub(crate) selector: PodSelector,
    pub(crate) topology_key: String,
}

impl AffinityTerm {
    /// `AffinityTerm.Matches`: namespace in scope, then labels.
    pub(crate) fn matches(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
        namespace_labels: &BTreeMap<String, String>,
    ) -> bool {
        self.scope.matches(namespace, namespace_labels) && self.selector.matches(labels)
    }

    /// `newAffinityTerm`: label selector, then namespace selector.
    fn compile(owner_namespace: &str, term: &PodAffinityTerm) -> Result<Self, ParseError> {
        let selector = PodSelector::compile(term.label_selector.as_ref())?;
        let ns_selector = PodSelector::compile(term.namespace_selector.as_ref())?;
        let mut names: BTreeSet<String> = term.namespaces.iter().flatten().cloned().collect();
        if names.is_empty() && term.namespace_selector.is_none() {
            names.insert(owner_namespace.to_owned());
        }
        Ok(Self {
            scope: NamespaceScope {
                names,
                selector: ns_selector,
            },
            selector,
            topology_key: term.topology_key.clone(),
        })
    }
}

/// A preferred term with its weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WeightedTerm {
    pub(crate) weight: i64,
    pub(crate) term: AffinityTerm,
}

/// A `DoNotSchedule` topology spread constraint (C.23).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpreadConstraint {
    pub(crate) max_skew: i64,
    pub(crate) topology_key: String,
    pub(crate) selector: PodSelector,
    pub(crate) min_domains: i64,
    pub(crate) honor_node_affinity: bool,
    pub(crate) honor_node_taints: bool,
}

/// A pod ready for evaluation.
#[derive(Debug, Clone)]
pub struct PodInfo {
    pub(crate) name: String,
    pub(crate) namespace: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) node_name: Option<String>,
    pub(crate) terminating: bool,
    pub(crate) required_node: RequiredNodeAffinity,
    /// NodeAffinity's PreFilter (C.4): the union of the `metadata.name In`
    /// names when every required term pins some; `Some(empty)` is a
    /// conflict.
    pub(crate) node_name_shortcut: Option<BTreeSet<String>>,
    /// Preferred node affinity terms; `None` when the pod has no preferred
    /// list at all (NodeAffinity PreScore then skips, C.5).
    pub(crate) preferred_node: Option<Result<Vec<(i64, NodeTerm)>, ParseError>>,
    pub(crate) required_affinity: Vec<AffinityTerm>,
    pub(crate) required_anti_affinity: Vec<AffinityTerm>,
    pub(crate) preferred_affinity: Vec<WeightedTerm>,
    pub(crate) preferred_anti_affinity: Vec<WeightedTerm>,
    /// Whether the pod declares any preferred pod (anti-)affinity term (C.20).
    pub(crate) has_preferred_pod_terms: bool,
    /// C.16: `parsing pod: ...` when any (anti-)affinity term is unparsable.
    pub(crate) affinity_error: Option<String>,
    pub(crate) spread: Result<Vec<SpreadConstraint>, ParseError>,
    /// The `ScheduleAnyway` constraints (PodTopologySpread's score, C.44).
    pub(crate) soft_spread: Result<Vec<SpreadConstraint>, ParseError>,
    /// Whether the pod declares any topology spread constraint (else the
    /// system defaults apply to the score, C.46).
    pub(crate) has_spread_constraints: bool,
    /// The controller owner reference: (apiVersion, kind, name) (C.46).
    pub(crate) controller: Option<(String, String, String)>,
    pub(crate) tolerations: Vec<Toleration>,
    /// Effective requests (NodeResourcesFit), or the quantity that does not
    /// parse.
    pub(crate) requests: Result<Resources, QuantityProblem>,
    /// Host ports (NodePorts).
    pub(crate) host_ports: Vec<HostPort>,
    /// Claims and inline disks (the volume filters, C.50–C.53).
    pub(crate) volumes: crate::volumes::PodVolumes,
    /// CPU (millicores) and memory counted by the resource scores, with
    /// the 100m / 200 MiB defaults (C.42); zero when a quantity does not
    /// parse (`requests` then holds the error).
    pub(crate) non_zero_requests: (i64, i64),
    /// Normalised images of the init and regular containers (C.45).
    pub(crate) images: Vec<String>,
    /// Init and regular containers (ImageLocality's upper threshold).
    pub(crate) container_count: usize,
    /// `metadata.uid` (a claim reserved for the pod names it).
    pub(crate) uid: Option<String>,
    /// The DRA claims of `spec.resourceClaims` (DynamicResources, DR.1).
    pub(crate) claims: Vec<crate::dra::PodClaim>,
    /// Per container, when one requests a DRA extended resource name: the
    /// requests DynamicResources may serve with devices (DR.11).
    pub(crate) extended: Option<Vec<crate::dra::extended::ContainerRequests>>,
    /// The node features the pod needs (C.76).
    pub(crate) required_features: Vec<crate::node_features::RequiredFeature>,
}

impl PodInfo {
    /// Compile a pod. The matchLabelKeys merge (C.9) must already have been
    /// applied (see [`crate::apply_match_label_keys`]).
    ///
    /// kube-scheduler's `PodInfo.Update` drops a whole term list when one of
    /// its terms is unparsable (derived from `getAffinityTerms`); the same is
    /// done here, and the error is kept so an *incoming* pod fails (C.16).
    ///
    /// Requests are counted as `version` counts them (C.75).
    pub fn new(pod: &Pod, version: KubernetesVersion) -> Self {
        let meta = &pod.metadata;
        let namespace = namespace_or_default(meta.namespace.as_deref()).to_owned();
        let spec = pod.spec.as_ref();
        let affinity = spec.and_then(|s| s.affinity.as_ref());
        let node_aff = affinity.and_then(|a| a.node_affinity.as_ref());
        let pa = affinity.and_then(|a| a.pod_affinity.as_ref());
        let paa = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
        let mut errors = Vec::new();
        let mut required =
            |terms: Option<&Vec<PodAffinityTerm>>, what: &str| -> Vec<AffinityTerm> {
                let r: Result<Vec<_>, _> = terms
                    .into_iter()
                    .flatten()
                    .map(|t| AffinityTerm::compile(&namespace, t))
                    .collect();
                r.unwrap_or_else(|e| {
                    errors.push(format!("{what}: {e}"));
                    Vec::new()
                })
            };
        let required_affinity = required(
            pa.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            }),
            "requiredAffinityTerms",
        );
        let required_anti_affinity = required(
            paa.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            }),
            "requiredAntiAffinityTerms",
        );
        let mut weighted =
            |terms: Option<&Vec<WeightedPodAffinityTerm>>, what: &str| -> Vec<WeightedTerm> {
                let r: Result<Vec<_>, _> = terms
                    .into_iter()
                    .flatten()
                    .map(|t| {
                        AffinityTerm::compile(&namespace, &t.pod_affinity_term).map(|term| {
                            WeightedTerm {
                                weight: i64::from(t.weight),
                                term,
                            }
                        })
                    })
                    .collect();
                r.unwrap_or_else(|e| {
                    errors.push(format!("{what}: {e}"));
                    Vec::new()
                })
            };
        let pref_aff_raw = pa.and_then(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        });
        let pref_anti_raw = paa.and_then(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        });
        let has_preferred_pod_terms = pref_aff_raw.is_some_and(|v| !v.is_empty())
            || pref_anti_raw.is_some_and(|v| !v.is_empty());
        let preferred_affinity = weighted(pref_aff_raw, "preferredAffinityTerms");
        let preferred_anti_affinity = weighted(pref_anti_raw, "preferredAntiAffinityTerms");
        let affinity_error = match errors.len() {
            0 => None,
            1 => Some(format!("parsing pod: {}", errors[0])),
            _ => Some(format!("parsing pod: [{}]", errors.join(", "))),
        };
        let labels = meta.labels.clone().unwrap_or_default();
        let spread = compile_spread(pod, &labels);
        let soft_spread = compile_constraints(pod, &labels, "ScheduleAnyway");
        let has_spread_constraints = spec
            .and_then(|s| s.topology_spread_constraints.as_ref())
            .is_some_and(|c| !c.is_empty());
        let controller = meta
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .map(|o| (o.api_version.clone(), o.kind.clone(), o.name.clone()));
        let (images, container_count) = pod_images(pod);
        Self {
            name: meta.name.clone().unwrap_or_default(),
            namespace,
            node_name: spec
                .and_then(|s| s.node_name.clone())
                .filter(|n| !n.is_empty()),
            terminating: meta.deletion_timestamp.is_some(),
            required_node: RequiredNodeAffinity::new(
                spec.and_then(|s| s.node_selector.as_ref()),
                node_aff.and_then(|n| {
                    n.required_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
            ),
            node_name_shortcut: node_aff
                .and_then(|n| {
                    n.required_during_scheduling_ignored_during_execution
                        .as_ref()
                })
                .and_then(|required| name_shortcut(&required.node_selector_terms)),
            preferred_node: node_aff
                .and_then(|n| {
                    n.preferred_during_scheduling_ignored_during_execution
                        .as_deref()
                })
                .map(parse_preferred),
            labels,
            required_affinity,
            required_anti_affinity,
            preferred_affinity,
            preferred_anti_affinity,
            has_preferred_pod_terms,
            affinity_error,
            spread,
            soft_spread,
            has_spread_constraints,
            controller,
            tolerations: spec.and_then(|s| s.tolerations.clone()).unwrap_or_default(),
            requests: pod_requests(pod, version),
            host_ports: host_ports(pod),
            volumes: crate::volumes::PodVolumes::new(pod),
            non_zero_requests: pod_non_zero_requests(pod, version).unwrap_or_default(),
            images,
            container_count,
            uid: meta.uid.clone(),
            claims: crate::dra::pod_claims(pod),
            extended: crate::dra::extended::pod_requests(pod),
            required_features: crate::node_features::required_features(pod, version),
        }
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The incoming pod's own terms with namespaceSelectors resolved (C.8).
    pub(crate) fn resolve_namespaces(
        &mut self,
        namespaces: &BTreeMap<String, BTreeMap<String, String>>,
    ) {
        for t in self
            .required_affinity
            .iter_mut()
            .chain(self.required_anti_affinity.iter_mut())
        {
            t.scope.resolve(namespaces);
        }
        for t in self
            .preferred_affinity
            .iter_mut()
            .chain(self.preferred_anti_affinity.iter_mut())
        {
            t.term.scope.resolve(namespaces);
        }
    }
}

/// `filterTopologySpreadConstraints` for `DoNotSchedule`, with matchLabelKeys
/// merged as `key In [own value]` (C.23).
fn compile_spread(
    pod: &Pod,
    labels: &BTreeMap<String, String>,
) -> Result<Vec<SpreadConstraint>, ParseError> {
    compile_constraints(pod, labels, "DoNotSchedule")
}

/// `filterTopologySpreadConstraints` for the constraints whose
/// `whenUnsatisfiable` is `when` (C.23, C.44).
fn compile_constraints(
    pod: &Pod,
    labels: &BTreeMap<String, String>,
    when: &str,
) -> Result<Vec<SpreadConstraint>, ParseError> {
    let mut out = Vec::new();
    let constraints = pod
        .spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_deref())
        .unwrap_or_default();
    for c in constraints {
        if c.when_unsatisfiable != when {
            continue;
        }
        let mut selector = PodSelector::compile(c.label_selector.as_ref())?;
        for key in c.match_label_keys.iter().flatten() {
            if let Some(v) = labels.get(key) {
                selector.and_equal(key, v);
            }
        }
        out.push(SpreadConstraint {
            max_skew: i64::from(c.max_skew),
            topology_key: c.topology_key.clone(),
            selector,
            min_domains: i64::from(c.min_domains.unwrap_or(1)),
            honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
            honor_node_taints: c.node_taints_policy.as_deref() == Some("Honor"),
        });
    }
    Ok(out)
}

/// `FindMatchingUntoleratedTaint` restricted to `NoSchedule`/`NoExecute`
/// (used by `nodeTaintsPolicy: Honor`, C.23).
pub(crate) fn has_untolerated_taint(
    taints: &[k8s_openapi::api::core::v1::Taint],
    tolerations: &[Toleration],
) -> bool {
    kube_validation::taints::first_untolerated(taints, tolerations).is_some()
}

/// PreFilter (C.4, `PreFilter` in `node_affinity.go`): the node names a pod
/// may go to when every required term pins `metadata.name In` (names
/// intersected within a term, united over the terms); `None` when a term
/// pins none (or there are no terms), `Some(empty)` when the pins conflict.
pub(crate) fn name_shortcut(terms: &[NodeSelectorTerm]) -> Option<BTreeSet<String>> {
    if terms.is_empty() {
        return None;
    }
    let mut union = BTreeSet::new();
    for t in terms {
        let mut term_names: Option<BTreeSet<String>> = None;
        for r in t.match_fields.iter().flatten() {
            if r.key == "metadata.name" && r.operator == "In" {
                let s: BTreeSet<String> = r.values.iter().flatten().cloned().collect();
                term_names = Some(match term_names {
                    None => s,
                    Some(prev) => prev.intersection(&s).cloned().collect(),
                });
            }
        }
        union.extend(term_names?);
    }
    Some(union)
}
