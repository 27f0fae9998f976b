//! Data-mover pod fragments (A2.13–A2.23), the A2.18 regression, the entry
//! points taking cluster objects, and the scheduling diagnosis.

use std::collections::{BTreeMap, BTreeSet};

use affinity_translate::{
    BackupVolume, FragmentError, NodeOs, Problem, RestoreVolume, backup_fragment,
    backup_fragment_for, diagnose, load_json, restore_fragment, restore_fragment_for,
};
use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, NodeSpec, PersistentVolume,
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeSpec, Taint, Toleration,
    VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::{
    StorageClass, VolumeAttachment, VolumeAttachmentSource, VolumeAttachmentSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const CONFIG: &str = r#"{
    "loadAffinity": [
        {"nodeSelector": {"matchLabels": {"pool": "backup", "disk": "ssd"},
                          "matchExpressions": [{"key": "critical", "operator": "DoesNotExist"}]}},
        {"storageClass": "gp3-backup", "nodeSelector": {"matchLabels": {"pool": "fast"}}},
        {"storageClass": "gp3", "nodeSelector": {"matchLabels": {"pool": "gp3-only"}}}
    ],
    "backupPVC": {
        "gp3": {"storageClass": "gp3-backup", "annotations": {"csi.vsphere.volume/fast-provisioning": "true"}}
    }
}"#;

fn config() -> affinity_translate::NodeAgentConfig {
    load_json(CONFIG).unwrap().config
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.to_owned(),
        operator: operator.to_owned(),
        values: Some(values.iter().map(|v| (*v).to_owned()).collect()),
    }
}

fn topology() -> NodeSelector {
    NodeSelector {
        node_selector_terms: vec![
            NodeSelectorTerm {
                match_expressions: Some(vec![requirement("zone", "In", &["a"])]),
                match_fields: None,
            },
            NodeSelectorTerm {
                match_expressions: None,
                match_fields: Some(vec![requirement("metadata.name", "In", &["n9"])]),
            },
        ],
    }
}

#[test]
fn translating_many_times_linux_and_windows_interleaved_gives_identical_results() {
    let config = config();
    let before = config.clone();
    let attached = vec!["n1".to_owned()];
    let volume = BackupVolume {
        source_storage_class: "standard",
        attached_nodes: &attached,
        ..Default::default()
    };
    let linux = backup_fragment(&config, &volume, NodeOs::Linux);
    let windows = backup_fragment(&config, &volume, NodeOs::Windows);
    let restore = restore_fragment(
        &config,
        &RestoreVolume {
            storage_class: "standard",
            ..Default::default()
        },
        NodeOs::Linux,
    );
    for round in 0..50 {
        let os = if round % 3 == 0 {
            NodeOs::Windows
        } else {
            NodeOs::Linux
        };
        let again = backup_fragment(&config, &volume, os);
        assert_eq!(
            again,
            if os == NodeOs::Windows {
                windows.clone()
            } else {
                linux.clone()
            }
        );
        assert_eq!(
            restore_fragment(
                &config,
                &RestoreVolume {
                    storage_class: "standard",
                    ..Default::default()
                },
                NodeOs::Linux
            ),
            restore
        );
    }
    assert_eq!(
        config, before,
        "the configuration must never change (A2.18)"
    );
    insta::assert_json_snapshot!("backup_linux_global_entry", linux);
    insta::assert_json_snapshot!("backup_windows_global_entry", windows);
}

#[test]
fn backup_uses_the_remapped_class_topology_and_fast_provisioning() {
    let config = config();
    let attached = vec!["n2".to_owned(), "n1".to_owned(), "n2".to_owned()];
    let topology = topology();
    let fragment = backup_fragment(
        &config,
        &BackupVolume {
            source_storage_class: "gp3",
            wait_for_first_consumer: true,
            pv_node_affinity: Some(&topology),
            attached_nodes: &attached,
        },
        NodeOs::Linux,
    );
    // A2.15: the entry for the remapped class gp3-backup, not the one for gp3.
    assert_eq!(fragment.load_affinity_index, Some(1));
    assert_eq!(fragment.storage_class, "gp3-backup");
    insta::assert_json_snapshot!(fragment);
}

#[test]
fn a_topology_without_terms_drops_the_requirements() {
    let empty = NodeSelector {
        node_selector_terms: vec![],
    };
    let fragment = backup_fragment(
        &config(),
        &BackupVolume {
            source_storage_class: "standard",
            wait_for_first_consumer: true,
            pv_node_affinity: Some(&empty),
            attached_nodes: &[],
        },
        NodeOs::Linux,
    );
    let terms = &fragment
        .affinity
        .unwrap()
        .node_affinity
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .unwrap()
        .node_selector_terms;
    assert!(terms.is_empty());
}

#[test]
fn an_immediate_class_has_no_topology() {
    let topology = topology();
    let fragment = backup_fragment(
        &config(),
        &BackupVolume {
            source_storage_class: "standard",
            wait_for_first_consumer: false,
            pv_node_affinity: Some(&topology),
            attached_nodes: &[],
        },
        NodeOs::Linux,
    );
    let terms = fragment
        .affinity
        .unwrap()
        .node_affinity
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .unwrap()
        .node_selector_terms;
    assert_eq!(terms.len(), 1);
}

fn pvc(
    class: Option<&str>,
    volume: Option<&str>,
    selected_node: Option<&str>,
) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            namespace: Some("app".to_owned()),
            name: Some("data".to_owned()),
            annotations: selected_node.map(|n| {
                BTreeMap::from([(
                    "volume.kubernetes.io/selected-node".to_owned(),
                    n.to_owned(),
                )])
            }),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            storage_class_name: class.map(str::to_owned),
            volume_name: volume.map(str::to_owned),
            ..Default::default()
        }),
        status: None,
    }
}

fn storage_class(name: &str, mode: &str) -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        provisioner: "csi.example.com".to_owned(),
        volume_binding_mode: Some(mode.to_owned()),
        ..Default::default()
    }
}

fn pv(name: &str) -> PersistentVolume {
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            node_affinity: Some(VolumeNodeAffinity {
                required: Some(topology()),
            }),
            ..Default::default()
        }),
        status: None,
    }
}

fn attachment(pv: &str, node: &str) -> VolumeAttachment {
    VolumeAttachment {
        metadata: ObjectMeta::default(),
        spec: VolumeAttachmentSpec {
            attacher: "csi.example.com".to_owned(),
            node_name: node.to_owned(),
            source: VolumeAttachmentSource {
                persistent_volume_name: Some(pv.to_owned()),
                ..Default::default()
            },
        },
        status: None,
    }
}

#[test]
fn backup_fragment_from_cluster_objects() {
    let config = config();
    let fragment = backup_fragment_for(
        &config,
        &pvc(Some("gp3"), Some("pv-1"), None),
        Some(&storage_class("gp3", "WaitForFirstConsumer")),
        Some(&pv("pv-1")),
        &[attachment("pv-1", "n3"), attachment("pv-other", "n4")],
        NodeOs::Linux,
    )
    .unwrap();
    insta::assert_json_snapshot!(fragment);
}

#[test]
fn backup_fragment_errors() {
    let config = config();
    let errors: Vec<FragmentError> = [
        backup_fragment_for(
            &config,
            &pvc(None, Some("pv-1"), None),
            None,
            None,
            &[],
            NodeOs::Linux,
        ),
        backup_fragment_for(
            &config,
            &pvc(Some("gp3"), None, None),
            None,
            None,
            &[],
            NodeOs::Linux,
        ),
        backup_fragment_for(
            &config,
            &pvc(Some("gp3"), Some("pv-1"), None),
            None,
            None,
            &[],
            NodeOs::Linux,
        ),
        backup_fragment_for(
            &config,
            &pvc(Some("gp3"), Some("pv-1"), None),
            Some(&storage_class("gp3", "WaitForFirstConsumer")),
            None,
            &[],
            NodeOs::Linux,
        ),
        restore_fragment_for(
            &config,
            &pvc(Some("gp3"), Some("pv-1"), None),
            None,
            NodeOs::Linux,
        ),
        restore_fragment_for(&config, &pvc(Some("gp3"), None, None), None, NodeOs::Linux),
    ]
    .into_iter()
    .map(Result::unwrap_err)
    .collect();
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    insta::assert_snapshot!(messages.join("\n"));
}

#[test]
fn restore_with_selected_node_is_pinned_and_ignores_load_affinity() {
    let config = config();
    let fragment = restore_fragment_for(
        &config,
        &pvc(Some("gp3"), None, Some("n7")),
        Some(&storage_class("gp3", "WaitForFirstConsumer")),
        NodeOs::Windows,
    )
    .unwrap();
    assert_eq!(fragment.load_affinity_index, None);
    insta::assert_json_snapshot!(fragment);
}

#[test]
fn restore_without_delay_binding_uses_the_class_entry_without_remap() {
    let mut config = config();
    config.restore_pvc = Some(affinity_translate::RestorePvcConfig {
        ignore_delay_binding: Some(true),
        ..Default::default()
    });
    // With ignoreDelayBinding the StorageClass is not needed (A2.20).
    let fragment = restore_fragment_for(
        &config,
        &pvc(Some("gp3"), None, Some("n7")),
        None,
        NodeOs::Linux,
    )
    .unwrap();
    assert_eq!(fragment.load_affinity_index, Some(2));
    assert_eq!(fragment.node_selector, None);
    assert!(!fragment.waiting_for_first_consumer);
    // Immediate class: no waiting, the selected-node annotation is irrelevant.
    let config = self::config();
    let fragment = restore_fragment_for(
        &config,
        &pvc(Some("gp3"), None, Some("n7")),
        Some(&storage_class("gp3", "Immediate")),
        NodeOs::Linux,
    )
    .unwrap();
    assert_eq!(
        (fragment.load_affinity_index, fragment.node_selector),
        (Some(2), None)
    );
    // No storage class: the global entry, never waits.
    let fragment =
        restore_fragment_for(&config, &pvc(None, None, None), None, NodeOs::Linux).unwrap();
    assert_eq!(fragment.load_affinity_index, Some(0));
    assert!(!fragment.waiting_for_first_consumer);
}

fn node(
    name: &str,
    labels: &[(&str, &str)],
    taints: &[(&str, &str, &str)],
    cordoned: bool,
) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: Some(
                taints
                    .iter()
                    .map(|(k, v, e)| Taint {
                        key: (*k).to_owned(),
                        value: Some((*v).to_owned()),
                        effect: (*e).to_owned(),
                        time_added: None,
                    })
                    .collect(),
            ),
            unschedulable: Some(cordoned),
            ..Default::default()
        }),
        status: None,
    }
}

#[test]
fn diagnosis_names_every_failing_requirement() {
    let config = config();
    let topology = topology();
    let attached = vec!["n-attached".to_owned()];
    let fragment = backup_fragment(
        &config,
        &BackupVolume {
            source_storage_class: "gp3",
            wait_for_first_consumer: true,
            pv_node_affinity: Some(&topology),
            attached_nodes: &attached,
        },
        NodeOs::Linux,
    );
    let good = [
        ("pool", "fast"),
        ("disk", "ssd"),
        ("zone", "a"),
        ("kubernetes.io/os", "linux"),
    ];
    let nodes = vec![
        node("n-ok", &good, &[], false),
        node("n-no-agent", &good, &[], false),
        node(
            "n-windows",
            &[
                ("pool", "fast"),
                ("disk", "ssd"),
                ("zone", "a"),
                ("kubernetes.io/os", "windows"),
            ],
            &[],
            false,
        ),
        node(
            "n-wrong-pool",
            &[("pool", "web"), ("zone", "a"), ("critical", "yes")],
            &[],
            false,
        ),
        node(
            "n-zone-b",
            &[("pool", "fast"), ("disk", "ssd"), ("zone", "b")],
            &[],
            false,
        ),
        node(
            "n9",
            &[("pool", "fast"), ("disk", "ssd"), ("zone", "b")],
            &[],
            false,
        ),
        node(
            "n-attached",
            &[
                ("pool", "fast"),
                ("disk", "ssd"),
                ("zone", "a"),
                ("kubernetes.io/hostname", "n-attached"),
            ],
            &[],
            false,
        ),
        node(
            "n-tainted",
            &good,
            &[
                ("dedicated", "db", "NoSchedule"),
                ("soft", "x", "PreferNoSchedule"),
            ],
            true,
        ),
    ];
    let agents: BTreeSet<String> = nodes
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .filter(|n| n != "n-no-agent")
        .collect();
    let diagnosis = diagnose(&fragment, &nodes, &agents);
    assert_eq!(diagnosis.schedulable(), vec!["n-ok", "n9"]);
    insta::assert_snapshot!(diagnosis.to_string());
    insta::assert_json_snapshot!("diagnosis_structured", diagnosis);
}

#[test]
fn diagnosis_of_a_pinned_restore_and_windows_tolerations() {
    let config = config();
    let fragment = restore_fragment(
        &config,
        &RestoreVolume {
            storage_class: "gp3",
            wait_for_first_consumer: true,
            selected_node: Some("w1"),
        },
        NodeOs::Windows,
    );
    let nodes = vec![
        node(
            "w1",
            &[
                ("kubernetes.io/hostname", "w1"),
                ("kubernetes.io/os", "windows"),
            ],
            &[("os", "windows", "NoSchedule")],
            false,
        ),
        node(
            "w2",
            &[
                ("kubernetes.io/hostname", "w2"),
                ("kubernetes.io/os", "windows"),
            ],
            &[("os", "windows", "NoExecute")],
            false,
        ),
        node("l1", &[("kubernetes.io/hostname", "l1")], &[], false),
    ];
    let agents: BTreeSet<String> = ["w1", "w2", "l1"].map(str::to_owned).into();
    insta::assert_snapshot!(diagnose(&fragment, &nodes, &agents).to_string());
}

#[test]
fn diagnosis_of_a_fragment_read_back_from_json_names_failing_requirements_without_origin() {
    let config = config();
    let fragment = backup_fragment(
        &config,
        &BackupVolume {
            source_storage_class: "standard",
            ..Default::default()
        },
        NodeOs::Linux,
    );
    let read_back: affinity_translate::PodFragment =
        serde_json::from_str(&serde_json::to_string(&fragment).unwrap()).unwrap();
    let nodes = vec![
        node("fits", &[("pool", "backup"), ("disk", "ssd")], &[], false),
        node(
            "misfit",
            &[("pool", "web"), ("kubernetes.io/os", "windows")],
            &[],
            false,
        ),
    ];
    let agents: BTreeSet<String> = ["fits", "misfit"].map(str::to_owned).into();
    let diagnosis = diagnose(&read_back, &nodes, &agents);
    assert_eq!(diagnosis.schedulable(), vec!["fits"]);
    insta::assert_snapshot!(diagnosis.to_string());
}

#[test]
fn diagnosis_tolerates_taints_exactly_as_kube_scheduler() {
    // One rule for the whole workspace (`Toleration.ToleratesTaint`): an empty
    // operator means Equal, and an empty key with Equal matches any key with
    // the same value; a cordon is tolerated by the unschedulable taint.
    let config = config();
    let mut fragment = backup_fragment(
        &config,
        &BackupVolume {
            source_storage_class: "standard",
            ..Default::default()
        },
        NodeOs::Linux,
    );
    let toleration = |key: &str, operator: &str, value: &str| Toleration {
        key: (!key.is_empty()).then(|| key.to_owned()),
        operator: Some(operator.to_owned()),
        value: (!value.is_empty()).then(|| value.to_owned()),
        ..Toleration::default()
    };
    fragment.tolerations = vec![
        toleration("dedicated", "", "backup"),
        toleration("", "Equal", "gpu"),
        toleration("node.kubernetes.io/unschedulable", "Exists", ""),
    ];
    let labels = [("pool", "backup"), ("disk", "ssd")];
    let nodes = vec![
        node(
            "empty-operator",
            &labels,
            &[("dedicated", "backup", "NoSchedule")],
            false,
        ),
        node(
            "empty-key",
            &labels,
            &[("accelerator", "gpu", "NoExecute")],
            false,
        ),
        node("cordoned", &labels, &[], true),
        node(
            "other-value",
            &labels,
            &[("dedicated", "web", "NoSchedule")],
            false,
        ),
    ];
    let agents: BTreeSet<String> = nodes
        .iter()
        .map(|n| n.metadata.name.clone().unwrap())
        .collect();
    let diagnosis = diagnose(&fragment, &nodes, &agents);
    assert_eq!(
        diagnosis.schedulable(),
        ["cordoned", "empty-key", "empty-operator"]
    );
}

/// A taint without a value is named `key:Effect`, as `Taint.ToString` writes
/// it (`k8s.io/api/core/v1/taint.go`, Kubernetes v1.35.4) and as
/// kube-scheduler-sim's diagnosis names it (`kube_validation::taints::describe`,
/// the one writer); this diagnosis used to print `key=:Effect`.
#[test]
fn diagnosis_names_a_taint_without_a_value_as_kube_scheduler_sim_does() {
    let fragment = backup_fragment(
        &config(),
        &BackupVolume {
            source_storage_class: "standard",
            ..Default::default()
        },
        NodeOs::Linux,
    );
    let mut tainted = node(
        "control-plane",
        &[("pool", "backup"), ("disk", "ssd")],
        &[("node-role.kubernetes.io/control-plane", "", "NoSchedule")],
        false,
    );
    let agents = BTreeSet::from(["control-plane".to_owned()]);
    let expected = Problem::Taint {
        taint: "node-role.kubernetes.io/control-plane:NoSchedule".to_owned(),
    };
    let diagnosis = diagnose(&fragment, std::slice::from_ref(&tainted), &agents);
    assert_eq!(diagnosis.nodes[0].problems, std::slice::from_ref(&expected));
    // Absent and empty values read the same.
    for taint in tainted.spec.as_mut().unwrap().taints.iter_mut().flatten() {
        taint.value = None;
    }
    let diagnosis = diagnose(&fragment, &[tainted], &agents);
    assert_eq!(diagnosis.nodes[0].problems, [expected]);
}

/// A node without a name has no fields: kube-scheduler skips a term's
/// `matchFields` there (component-helpers `nodeaffinity.go`,
/// `extractNodeFields` and `nodeSelectorTerm.match`, Kubernetes v1.35.4), so
/// a volume topology that pins `metadata.name` does not keep the pod off it.
/// The diagnosis matches terms with `kube_validation::node_selector`, the
/// one matcher, and agrees with it; it used to compare the pinned name with
/// `""` and report the volume unreachable.
#[test]
fn diagnosis_matches_a_pinned_topology_on_a_nameless_node_as_kube_scheduler() {
    let pinned = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![requirement("metadata.name", "In", &["n9"])]),
        }],
    };
    let fragment = backup_fragment(
        &config(),
        &BackupVolume {
            source_storage_class: "standard",
            wait_for_first_consumer: true,
            pv_node_affinity: Some(&pinned),
            attached_nodes: &[],
        },
        NodeOs::Linux,
    );
    let labels = [("pool", "backup"), ("disk", "ssd")];
    let mut nameless = node("nameless", &labels, &[], false);
    nameless.metadata.name = None;
    let nodes = vec![
        nameless,
        node("n8", &labels, &[], false),
        node("n9", &labels, &[], false),
    ];
    let agents = BTreeSet::from([String::new(), "n8".to_owned(), "n9".to_owned()]);
    let diagnosis = diagnose(&fragment, &nodes, &agents);
    assert_eq!(diagnosis.schedulable(), ["", "n9"]);
    assert!(matches!(
        diagnosis.nodes[1].problems.as_slice(),
        [Problem::VolumeTopology { .. }]
    ));
    let required = fragment
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .unwrap();
    for (node, verdict) in nodes.iter().zip(&diagnosis.nodes) {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let node_labels = node.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            kube_validation::node_selector::selector_matches(required, name, &node_labels),
            verdict.problems.is_empty(),
            "{name:?}"
        );
    }
}

/// A restore pinned to its selected node (`nodeSelector`) names every pair
/// the node lacks, as `kube_validation::set_selector_misses`
/// (the matcher kube-scheduler-sim's NodeAffinity filter uses) finds them:
/// an absent key and a different value both miss.
#[test]
fn diagnosis_names_the_node_selector_pairs_the_node_lacks() {
    let fragment = restore_fragment(
        &config(),
        &RestoreVolume {
            storage_class: "gp3",
            wait_for_first_consumer: true,
            selected_node: Some("w1"),
        },
        NodeOs::Linux,
    );
    let nodes = vec![
        node("w1", &[("kubernetes.io/hostname", "w1")], &[], false),
        node("w2", &[("kubernetes.io/hostname", "w2")], &[], false),
        node("w3", &[], &[], false),
    ];
    let agents: BTreeSet<String> = ["w1", "w2", "w3"].map(str::to_owned).into();
    let diagnosis = diagnose(&fragment, &nodes, &agents);
    assert_eq!(diagnosis.schedulable(), ["w1"]);
    let pinned = |actual: Option<&str>| Problem::NodeSelector {
        key: "kubernetes.io/hostname".to_owned(),
        expected: "w1".to_owned(),
        actual: actual.map(str::to_owned),
    };
    assert_eq!(diagnosis.nodes[1].problems, [pinned(Some("w2"))]);
    assert_eq!(diagnosis.nodes[2].problems, [pinned(None)]);
}
