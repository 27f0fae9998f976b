//! Plain-text renderings of Kubernetes scheduling objects for tables.

use k8s_openapi::api::core::v1::{Affinity, NodeSelectorRequirement, NodeSelectorTerm, Toleration};

/// `key Op [v1, v2]` (values omitted for `Exists`/`DoesNotExist` without
/// values).
pub fn requirement(requirement: &NodeSelectorRequirement) -> String {
    match requirement.values.as_deref() {
        Some(values) if !values.is_empty() => format!(
            "{} {} [{}]",
            requirement.key,
            requirement.operator,
            values.join(", ")
        ),
        _ => format!("{} {}", requirement.key, requirement.operator),
    }
}

/// One node selector term: its expressions and fields joined with ` AND `.
pub fn term(term: &NodeSelectorTerm) -> String {
    let expressions = term.match_expressions.iter().flatten().map(requirement);
    let fields = term
        .match_fields
        .iter()
        .flatten()
        .map(|field| format!("field {}", requirement(field)));
    let parts: Vec<String> = expressions.chain(fields).collect();
    if parts.is_empty() {
        "(empty term: matches no node)".to_owned()
    } else {
        parts.join(" AND ")
    }
}

/// The required node affinity terms of an affinity, one string per term
/// (terms are OR-ed).
pub fn required_terms(affinity: Option<&Affinity>) -> Vec<String> {
    affinity
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|selector| selector.node_selector_terms.iter().map(term).collect())
        .unwrap_or_default()
}

/// `key=value:Effect` or `key:Effect` (`operator` Exists shown as `key*`).
pub fn toleration(toleration: &Toleration) -> String {
    let key = toleration.key.as_deref().unwrap_or("*");
    let value = match (toleration.operator.as_deref(), toleration.value.as_deref()) {
        (Some("Exists"), _) => String::new(),
        (_, Some(value)) => format!("={value}"),
        _ => String::new(),
    };
    let effect = toleration.effect.as_deref().unwrap_or("*");
    format!("{key}{value}:{effect}")
}
