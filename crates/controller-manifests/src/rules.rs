//! RBAC rules declared once per binary, as `const` lists, and their
//! normalised form.
//!
//! Output is deterministic: rules with the same API group, verbs and
//! resource names are merged, resources, resource names and rules are
//! sorted, verbs follow the order of [`RbacVerb`].
//!
//! A rule can be restricted to objects by name with [`Rule::named`]
//! (`resourceNames`). Kubernetes RBAC limits what that achieves:
//! - `create` (and `deletecollection`) can never be restricted by name: the
//!   name of a new object is not known when the request is authorized, so a
//!   rule with `create` and `resourceNames` never allows a create. Declare
//!   `create` in a separate, unnamed rule.
//! - `list` and `watch` restricted by name are allowed only for requests
//!   carrying a `metadata.name=<name>` field selector (single-object
//!   watches, as `kube::runtime::watcher` does with `Config::fields`); a
//!   plain namespace-wide list or watch needs an unnamed rule.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::PolicyRule;

/// An RBAC verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RbacVerb {
    /// `get`
    Get,
    /// `list`
    List,
    /// `watch`
    Watch,
    /// `create`
    Create,
    /// `update`
    Update,
    /// `patch`
    Patch,
    /// `delete`
    Delete,
    /// `deletecollection`
    DeleteCollection,
}

impl RbacVerb {
    /// The verb as written in RBAC rules.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Watch => "watch",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::DeleteCollection => "deletecollection",
        }
    }
}

/// One declared permission: verbs on resources of an API group (`""` = core),
/// optionally only on objects with given names (see the module docs for
/// what `resourceNames` cannot restrict). Subresources are written
/// `backups/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// API group (`""` for core).
    pub api_group: &'static str,
    /// Resources (plural names, optionally `/subresource`).
    pub resources: &'static [&'static str],
    /// Allowed verbs.
    pub verbs: &'static [RbacVerb],
    /// Object names the rule is restricted to (`resourceNames`); empty: all
    /// objects.
    pub resource_names: &'static [&'static str],
}

impl Rule {
    /// Declares a rule (usable in `const` lists).
    pub const fn new(
        api_group: &'static str,
        resources: &'static [&'static str],
        verbs: &'static [RbacVerb],
    ) -> Self {
        Self {
            api_group,
            resources,
            verbs,
            resource_names: &[],
        }
    }

    /// Restricts the rule to the objects with these names (`resourceNames`).
    /// Do not combine with `create` or `deletecollection`, which Kubernetes
    /// never authorizes by name; `list`/`watch` then need a `metadata.name`
    /// field selector (see the module docs).
    pub const fn named(self, names: &'static [&'static str]) -> Self {
        Self {
            resource_names: names,
            ..self
        }
    }
}

/// Events published by `events::Recorder` (`events.k8s.io`: create, patch).
pub const EVENTS_RULE: Rule = Rule::new(
    "events.k8s.io",
    &["events"],
    &[RbacVerb::Create, RbacVerb::Patch],
);

/// The Lease verbs kube-lease-manager needs (get, create, patch).
pub const LEASE_RULE: Rule = Rule::new(
    "coordination.k8s.io",
    &["leases"],
    &[RbacVerb::Get, RbacVerb::Create, RbacVerb::Patch],
);

/// Rules merged by (API group, verbs, resource names).
type MergeKey<'a> = (&'a str, BTreeSet<RbacVerb>, BTreeSet<&'a str>);

/// Merges and sorts rules (see the module docs). Rules are merged only when
/// API group, verbs and resource names are all equal, so merging never
/// widens a name restriction.
pub fn normalize(rules: &[Rule]) -> Vec<PolicyRule> {
    let mut merged: BTreeMap<MergeKey<'_>, BTreeSet<&str>> = BTreeMap::new();
    for r in rules {
        let verbs: BTreeSet<RbacVerb> = r.verbs.iter().copied().collect();
        let names: BTreeSet<&str> = r.resource_names.iter().copied().collect();
        merged
            .entry((r.api_group, verbs, names))
            .or_default()
            .extend(r.resources.iter().copied());
    }
    let mut out: Vec<PolicyRule> = merged
        .into_iter()
        .map(|((group, verbs, names), resources)| PolicyRule {
            api_groups: Some(vec![group.to_owned()]),
            resources: Some(resources.into_iter().map(str::to_owned).collect()),
            verbs: verbs.into_iter().map(|v| v.as_str().to_owned()).collect(),
            resource_names: (!names.is_empty())
                .then(|| names.into_iter().map(str::to_owned).collect()),
            ..PolicyRule::default()
        })
        .collect();
    // Unnamed rules (`None`) sort before named ones with the same group,
    // resources and verbs.
    out.sort_by(|a, b| {
        (&a.api_groups, &a.resources, &a.verbs, &a.resource_names).cmp(&(
            &b.api_groups,
            &b.resources,
            &b.verbs,
            &b.resource_names,
        ))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::RbacVerb::*;
    use super::*;

    #[test]
    fn normalize_merges_same_group_and_verbs_and_sorts() {
        let rules = [
            Rule::new("velero.io", &["backups"], &[Watch, Get, List]),
            Rule::new("", &["namespaces"], &[Get, List, Watch]),
            Rule::new(
                "velero.io",
                &["podvolumebackups", "backups"],
                &[List, Get, Watch],
            ),
            Rule::new("velero.io", &["backups"], &[Patch]),
        ];
        let out = normalize(&rules);
        let flat: Vec<(String, Vec<String>, Vec<String>)> = out
            .into_iter()
            .map(|r| {
                (
                    r.api_groups.unwrap().join(","),
                    r.resources.unwrap(),
                    r.verbs,
                )
            })
            .collect();
        assert_eq!(
            flat,
            vec![
                (
                    "".into(),
                    vec!["namespaces".into()],
                    vec!["get".into(), "list".into(), "watch".into()]
                ),
                (
                    "velero.io".into(),
                    vec!["backups".into()],
                    vec!["patch".into()]
                ),
                (
                    "velero.io".into(),
                    vec!["backups".into(), "podvolumebackups".into()],
                    vec!["get".into(), "list".into(), "watch".into()]
                ),
            ]
        );
    }
    #[test]
    fn rule_order_does_not_change_the_output() {
        let a = [
            Rule::new("a", &["x"], &[Get]),
            Rule::new("b", &["y"], &[List]),
        ];
        let b = [a[1], a[0]];
        assert_eq!(normalize(&a), normalize(&b));
    }
    #[test]
    fn rules_with_different_resource_names_are_never_merged() {
        let rules = [
            Rule::new("", &["configmaps"], &[Get, Patch]).named(&["ledger"]),
            Rule::new("", &["configmaps"], &[Get, Patch]),
            Rule::new("", &["secrets"], &[Get, Patch]).named(&["ledger"]),
            Rule::new("", &["configmaps"], &[Get, Patch]).named(&["b", "a"]),
        ];
        let flat: Vec<(Vec<String>, Option<Vec<String>>)> = normalize(&rules)
            .into_iter()
            .map(|r| (r.resources.unwrap(), r.resource_names))
            .collect();
        assert_eq!(
            flat,
            vec![
                (vec!["configmaps".into()], None),
                (
                    vec!["configmaps".into()],
                    Some(vec!["a".into(), "b".into()])
                ),
                (
                    vec!["configmaps".into(), "secrets".into()],
                    Some(vec!["ledger".into()])
                ),
            ]
        );
    }
    #[test]
    fn unnamed_rules_emit_no_resource_names() {
        let out = normalize(&[Rule::new("", &["configmaps"], &[Create])]);
        assert_eq!(out[0].resource_names, None);
    }
}
