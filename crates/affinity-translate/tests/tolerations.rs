//! The tolerations Velero copies from the node-agent DaemonSet onto
//! data-mover pods (A2.27).
//!
//! The first three cases are Velero's own unit-test table for reading an
//! allowlisted toleration from the DaemonSet, in our words and with the
//! real allowlist; the rest pin the order, the first match per key and
//! what is compared.

use affinity_translate::{
    BackupVolume, INHERITED_TOLERATION_KEYS, NodeAgentConfig, NodeOs, RestoreVolume,
    backup_fragment, data_mover_tolerations, diagnose, inherited_tolerations,
    node_agent_daemon_set_name, restore_fragment,
};
use k8s_openapi::api::core::v1::{Node, NodeSpec, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use proptest::prelude::*;

const SPOT: &str = "kubernetes.azure.com/scalesetpriority";
const CRITICAL: &str = "CriticalAddonsOnly";

fn toleration(key: &str, operator: &str, value: Option<&str>, effect: Option<&str>) -> Toleration {
    Toleration {
        key: Some(key.to_owned()),
        operator: Some(operator.to_owned()),
        value: value.map(str::to_owned),
        effect: effect.map(str::to_owned),
        toleration_seconds: None,
    }
}

fn spot() -> Toleration {
    toleration(SPOT, "Equal", Some("spot"), Some("NoSchedule"))
}

fn windows() -> Vec<Toleration> {
    ["NoSchedule", "NoExecute"]
        .into_iter()
        .map(|effect| toleration("os", "Equal", Some("windows"), Some(effect)))
        .collect()
}

#[test]
fn the_allowlist_is_velero_s() {
    assert_eq!(INHERITED_TOLERATION_KEYS, [SPOT, CRITICAL]);
    assert_eq!(node_agent_daemon_set_name(NodeOs::Linux), "node-agent");
    assert_eq!(
        node_agent_daemon_set_name(NodeOs::Windows),
        "node-agent-windows"
    );
}

// Velero's table, case 1: the DaemonSet has no tolerations at all.
#[test]
fn a_daemon_set_without_tolerations_gives_none() {
    assert_eq!(inherited_tolerations(&[]), Vec::<Toleration>::new());
}

// Velero's table, case 2: the DaemonSet tolerates only keys that are not
// on the allowlist.
#[test]
fn tolerations_with_other_keys_are_not_copied() {
    let other = Toleration {
        key: Some("other-toleration-key".to_owned()),
        ..Toleration::default()
    };
    let node_role = toleration(
        "node-role.kubernetes.io/control-plane",
        "Exists",
        None,
        Some("NoSchedule"),
    );
    assert_eq!(
        inherited_tolerations(&[other, node_role]),
        Vec::<Toleration>::new()
    );
}

// Velero's table, case 3: an allowlisted key is found and copied as it
// is (there: only a key and a value, no operator, no effect).
#[test]
fn an_allowlisted_toleration_is_copied_whole() {
    let bare = Toleration {
        key: Some(CRITICAL.to_owned()),
        value: Some("true".to_owned()),
        ..Toleration::default()
    };
    assert_eq!(
        inherited_tolerations(std::slice::from_ref(&bare)),
        vec![bare]
    );
    let timed = Toleration {
        toleration_seconds: Some(300),
        ..toleration(SPOT, "Exists", None, Some("NoExecute"))
    };
    assert_eq!(
        inherited_tolerations(std::slice::from_ref(&timed)),
        vec![timed]
    );
}

#[test]
fn allowlist_order_not_daemon_set_order() {
    let critical = toleration(CRITICAL, "Exists", None, None);
    let daemon_set = vec![critical.clone(), spot()];
    assert_eq!(inherited_tolerations(&daemon_set), vec![spot(), critical]);
}

#[test]
fn only_the_first_toleration_of_a_key_is_copied() {
    let execute = toleration(SPOT, "Equal", Some("spot"), Some("NoExecute"));
    let daemon_set = vec![spot(), execute];
    assert_eq!(inherited_tolerations(&daemon_set), vec![spot()]);
}

#[test]
fn keys_are_compared_exactly() {
    let daemon_set = vec![
        toleration("criticaladdonsonly", "Exists", None, None),
        toleration(" CriticalAddonsOnly", "Exists", None, None),
        toleration(
            "kubernetes.azure.com/scalesetpriority/",
            "Exists",
            None,
            None,
        ),
        // A toleration without a key (tolerates every taint) has no key to
        // match.
        Toleration {
            operator: Some("Exists".to_owned()),
            ..Toleration::default()
        },
    ];
    assert_eq!(inherited_tolerations(&daemon_set), Vec::<Toleration>::new());
}

#[test]
fn inherited_tolerations_come_before_the_os_tolerations() {
    assert_eq!(
        data_mover_tolerations(NodeOs::Linux, &[spot()]),
        vec![spot()]
    );
    let mut expected = vec![spot()];
    expected.extend(windows());
    assert_eq!(data_mover_tolerations(NodeOs::Windows, &[spot()]), expected);
    assert_eq!(data_mover_tolerations(NodeOs::Windows, &[]), windows());
}

#[test]
fn fragments_take_the_daemon_set_tolerations_and_keep_the_rest() {
    let config = NodeAgentConfig::default();
    let backup = backup_fragment(
        &config,
        &BackupVolume {
            source_storage_class: "managed-csi",
            ..BackupVolume::default()
        },
        NodeOs::Windows,
    );
    assert_eq!(backup.tolerations, windows());
    let with = backup.clone().with_node_agent_tolerations(&[spot()]);
    let mut expected = vec![spot()];
    expected.extend(windows());
    assert_eq!(with.tolerations, expected);
    assert_eq!(with.affinity, backup.affinity);
    // Replacing, not appending: a second call with no DaemonSet tolerations
    // gives the fragment without them.
    assert_eq!(with.with_node_agent_tolerations(&[]), backup);

    let restore = restore_fragment(&config, &RestoreVolume::default(), NodeOs::Linux)
        .with_node_agent_tolerations(&[spot(), toleration("team", "Exists", None, None)]);
    assert_eq!(restore.tolerations, vec![spot()]);
}

#[test]
fn the_spot_taint_is_no_problem_once_the_daemon_set_tolerates_it() {
    let node = Node {
        metadata: ObjectMeta {
            name: Some("aks-spot-1".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            taints: Some(vec![Taint {
                key: SPOT.to_owned(),
                value: Some("spot".to_owned()),
                effect: "NoSchedule".to_owned(),
                time_added: None,
            }]),
            ..NodeSpec::default()
        }),
        ..Node::default()
    };
    let running = std::collections::BTreeSet::from(["aks-spot-1".to_owned()]);
    let fragment = backup_fragment(
        &NodeAgentConfig::default(),
        &BackupVolume {
            source_storage_class: "managed-csi",
            ..BackupVolume::default()
        },
        NodeOs::Linux,
    );
    let without = diagnose(&fragment, std::slice::from_ref(&node), &running);
    assert_eq!(without.nodes[0].problems.len(), 1, "{without:?}");
    let with = diagnose(
        &fragment.with_node_agent_tolerations(&[spot()]),
        std::slice::from_ref(&node),
        &running,
    );
    assert!(with.nodes[0].problems.is_empty(), "{with:?}");
}

/// An independent statement of the rule: walk the allowlist, and for each
/// key scan the DaemonSet's tolerations until the first with that key.
fn oracle(node_agent: &[Toleration]) -> Vec<Toleration> {
    let mut copied = Vec::new();
    for key in [SPOT, CRITICAL] {
        for t in node_agent {
            if t.key.as_deref() == Some(key) {
                copied.push(t.clone());
                break;
            }
        }
    }
    copied
}

fn any_toleration() -> impl Strategy<Value = Toleration> {
    (
        proptest::option::of(proptest::sample::select(vec![
            SPOT,
            CRITICAL,
            "criticaladdonsonly",
            "os",
            "node-role.kubernetes.io/control-plane",
            "",
        ])),
        proptest::option::of(proptest::sample::select(vec!["Equal", "Exists"])),
        proptest::option::of(proptest::sample::select(vec!["spot", "true", ""])),
        proptest::option::of(proptest::sample::select(vec![
            "NoSchedule",
            "NoExecute",
            "PreferNoSchedule",
        ])),
        proptest::option::of(0i64..600),
    )
        .prop_map(|(key, operator, value, effect, seconds)| Toleration {
            key: key.map(str::to_owned),
            operator: operator.map(str::to_owned),
            value: value.map(str::to_owned),
            effect: effect.map(str::to_owned),
            toleration_seconds: seconds,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn only_allowlisted_keys_are_copied_at_most_one_per_key_in_allowlist_order(
        node_agent in proptest::collection::vec(any_toleration(), 0..8),
    ) {
        let copied = inherited_tolerations(&node_agent);
        let keys: Vec<&str> = copied.iter().filter_map(|t| t.key.as_deref()).collect();
        prop_assert_eq!(keys.len(), copied.len());
        for key in &keys {
            prop_assert!(INHERITED_TOLERATION_KEYS.contains(key));
        }
        let positions: Vec<usize> = keys
            .iter()
            .filter_map(|key| INHERITED_TOLERATION_KEYS.iter().position(|k| k == key))
            .collect();
        prop_assert!(positions.windows(2).all(|w| w[0] < w[1]), "{:?}", keys);
        prop_assert_eq!(copied, oracle(&node_agent));
    }

    #[test]
    fn data_mover_tolerations_are_the_inherited_ones_then_exactly_the_os_ones(
        node_agent in proptest::collection::vec(any_toleration(), 0..8),
        windows_nodes in any::<bool>(),
    ) {
        let os = if windows_nodes { NodeOs::Windows } else { NodeOs::Linux };
        let all = data_mover_tolerations(os, &node_agent);
        let inherited = oracle(&node_agent);
        prop_assert_eq!(&all[..inherited.len()], &inherited[..]);
        let os_part = &all[inherited.len()..];
        if windows_nodes {
            let expected = windows();
            prop_assert_eq!(os_part, &expected[..]);
        } else {
            prop_assert!(os_part.is_empty());
        }
    }
}
