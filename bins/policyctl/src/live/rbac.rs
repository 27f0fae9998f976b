//! `policyctl rbac`: the read-only RBAC live mode needs, generated from the
//! same kind list live mode reads ([`Kind::ALL`]): a ClusterRole listing the
//! cluster-wide kinds, a Role in Velero's namespace listing the Velero kinds
//! and ConfigMaps (and one listing ConfigMaps in each other namespace
//! `--config-map` or `--inventory-config-map` names), and bindings for the
//! subjects given.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{DEFAULT_VELERO_NAMESPACE, Kind, Scope};
use crate::cli::GlobalArgs;
pub use crate::cli::RbacArgs;
use crate::output::Output;

/// Name of the generated ClusterRole, Role and bindings.
pub const ROLE_NAME: &str = "policyctl-reader";

/// Rules of one role: `(API group, sorted plural resource names)`, all with
/// the `list` verb only.
pub type Rules = Vec<(String, Vec<String>)>;

/// The rules for the ClusterRole and for the Role in Velero's namespace.
pub fn rules() -> (Rules, Rules) {
    let mut cluster: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut velero: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for kind in Kind::ALL {
        let resource = kind.resource();
        let target = match resource.scope {
            Scope::Cluster | Scope::AllNamespaces => &mut cluster,
            Scope::VeleroNamespace => &mut velero,
        };
        target
            .entry(resource.group)
            .or_default()
            .push(resource.plural.to_owned());
    }
    let finish = |map: BTreeMap<&str, Vec<String>>| {
        map.into_iter()
            .map(|(group, mut plurals)| {
                plurals.sort();
                plurals.dedup();
                (group.to_owned(), plurals)
            })
            .collect()
    };
    (finish(cluster), finish(velero))
}

fn rule_values(rules: &Rules) -> Vec<Value> {
    rules
        .iter()
        .map(|(group, plurals)| {
            json!({
                "apiGroups": [group],
                "resources": plurals,
                "verbs": ["list"],
            })
        })
        .collect()
}

/// The manifests: ClusterRole, Role, and with subjects their bindings.
/// Each of `config_map_namespaces` (where `--config-map` or
/// `--inventory-config-map` names a ConfigMap outside Velero's namespace)
/// gets a Role listing ConfigMaps only, and its binding.
pub fn manifests(args: &RbacArgs, namespace: &str, config_map_namespaces: &[&str]) -> Vec<Value> {
    let (cluster, velero) = rules();
    let labels = json!({"app.kubernetes.io/name": "policyctl"});
    let mut objects = vec![
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": ROLE_NAME, "labels": labels},
            "rules": rule_values(&cluster),
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": ROLE_NAME, "namespace": namespace, "labels": labels},
            "rules": rule_values(&velero),
        }),
    ];
    let config_maps: Rules = vec![(String::new(), vec!["configmaps".to_owned()])];
    for other in config_map_namespaces {
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": ROLE_NAME, "namespace": other, "labels": labels},
            "rules": rule_values(&config_maps),
        }));
    }
    let mut subjects: Vec<Value> = Vec::new();
    for account in &args.service_account {
        subjects.push(json!({
            "kind": "ServiceAccount",
            "namespace": account.namespace,
            "name": account.name,
        }));
    }
    for (kind, names) in [("User", &args.user), ("Group", &args.group)] {
        for name in names {
            subjects.push(json!({
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": kind,
                "name": name,
            }));
        }
    }
    if !subjects.is_empty() {
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": ROLE_NAME, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE_NAME},
            "subjects": subjects,
        }));
        for bound in std::iter::once(&namespace).chain(config_map_namespaces) {
            objects.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": ROLE_NAME, "namespace": bound, "labels": labels},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE_NAME},
                "subjects": subjects,
            }));
        }
    }
    objects
}

/// Runs `rbac`: the manifests as YAML documents (`-o table`, ready for
/// `kubectl apply -f -`) or as a `kind: List` (`-o json`, `-o yaml`).
pub fn run(args: &RbacArgs, global: &GlobalArgs) -> Result<Output, String> {
    let namespace = global
        .live
        .namespace
        .as_deref()
        .unwrap_or(DEFAULT_VELERO_NAMESPACE);
    let mut others: Vec<&str> = [&global.config_map, &global.inventory_config_map]
        .into_iter()
        .filter_map(|named| named.as_ref()?.namespace.as_deref())
        .filter(|other| *other != namespace)
        .collect();
    others.sort_unstable();
    others.dedup();
    let objects = manifests(args, namespace, &others);
    let mut text =
        String::from("# Read-only access for policyctl's live mode: list only, nothing else.\n");
    for object in &objects {
        text.push_str("---\n");
        text.push_str(&serde_saphyr::to_string(object).map_err(|error| error.to_string())?);
    }
    Ok(Output {
        document: json!({"apiVersion": "v1", "kind": "List", "items": objects}),
        table: text,
    })
}
