//! Machine → Node label sync, ported from Cluster API v1.14.0's tables
//! (`util/labels/helpers_test.go` `TestGetManagedLabels`;
//! `core/reconcilers/machine/machine_controller_noderef_test.go`
//! `TestPatchNode` label rows and `TestNodeLabelSync`), the cases this
//! project adds (a vMotion, a key removed from the Machine, a foreign label
//! in a managed domain), and properties against a simple oracle.

use std::collections::BTreeMap;

use anti_affinity_placement::labels::{
    LABELS_FROM_MACHINE_ANNOTATION, MachineLabelSync, NodeLabelPlan, is_default_managed_label,
};
use proptest::prelude::*;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

const A: &str = LABELS_FROM_MACHINE_ANNOTATION;

fn default_labels() -> BTreeMap<String, String> {
    map(&[
        ("node-role.kubernetes.io/anyRole", ""),
        ("node.cluster.x-k8s.io", ""),
        ("custom-prefix.node.cluster.x-k8s.io", ""),
        ("node.cluster.x-k8s.io/anything", ""),
        ("custom-prefix.node.cluster.x-k8s.io/anything", ""),
        ("node-restriction.kubernetes.io", ""),
        ("custom-prefix.node-restriction.kubernetes.io", ""),
        ("node-restriction.kubernetes.io/anything", ""),
        ("custom-prefix.node-restriction.kubernetes.io/anything", ""),
    ])
}

fn additional_labels() -> BTreeMap<String, String> {
    map(&[
        ("foo", "bar"),
        ("bar", "baz"),
        ("company.xyz/node.cluster.x-k8s.io", "not-managed"),
        ("gpu-node.cluster.x-k8s.io", "not-managed"),
        ("company.xyz/node-restriction.kubernetes.io", "not-managed"),
        ("gpu-node-restriction.kubernetes.io", "not-managed"),
        ("wrong.test.foo.com", ""),
    ])
}

#[test]
fn get_managed_labels_table() {
    let mut all = default_labels();
    all.extend(additional_labels());
    // "always sync default labels"
    let sync = MachineLabelSync::new::<&str>([]).unwrap();
    assert_eq!(sync.managed_labels(&all), default_labels());
    // "sync additional defined labels": `foo` matches anywhere in the key.
    let sync = MachineLabelSync::new(["foo"]).unwrap();
    let mut want = default_labels();
    want.extend(map(&[("foo", "bar"), ("wrong.test.foo.com", "")]));
    assert_eq!(sync.managed_labels(&all), want);
    // "sync all labels"
    let sync = MachineLabelSync::new([".*"]).unwrap();
    assert_eq!(sync.managed_labels(&all), all);
}

#[test]
fn managed_domains_compare_only_the_part_before_the_slash() {
    for key in [
        "node-role.kubernetes.io/worker",
        "node-role.kubernetes.io",
        "node.cluster.x-k8s.io/esxi-host",
        "custom.node.cluster.x-k8s.io/x",
        "a.b.node-restriction.kubernetes.io/x",
    ] {
        assert!(is_default_managed_label(key), "{key}");
    }
    for key in [
        "gpu-node.cluster.x-k8s.io/x",
        "sub.node-role.kubernetes.io/x",
        "xnode-restriction.kubernetes.io/x",
        "company.xyz/node.cluster.x-k8s.io",
        "example.com/node-role.kubernetes.io",
        "esxi-host",
        "cluster.x-k8s.io/cluster-name",
    ] {
        assert!(!is_default_managed_label(key), "{key}");
    }
}

#[test]
fn invalid_expressions_are_all_reported() {
    let error = MachineLabelSync::new(["ok", "(", "[z-a]"]).unwrap_err();
    assert_eq!(error.problems.len(), 2);
    assert!(error.to_string().starts_with(
        "at least one of --additional-sync-machine-labels regexes is invalid: \"(\": "
    ));
}

/// Labels or annotations as pairs.
type Pairs = &'static [(&'static str, &'static str)];
/// `(name, node labels, node annotations, Machine labels, labels after,
/// annotation after)`.
type PatchRow = (&'static str, Pairs, Pairs, Pairs, Pairs, &'static str);

/// `TestPatchNode`: `(old labels, old annotations, managed labels from the
/// Machine) → (labels, labels-from-machine annotation)` after the patch.
#[test]
fn patch_node_label_rows() {
    let sync = MachineLabelSync::new([".*"]).unwrap();
    let rows: [PatchRow; 6] = [
        (
            "Existing labels should be preserved if there are no labels from machines",
            &[("not-managed-by-capi", "foo")],
            &[],
            &[],
            &[("not-managed-by-capi", "foo")],
            "",
        ),
        (
            "Add label must preserve existing labels",
            &[("not-managed-by-capi", "foo")],
            &[],
            &[("label-from-machine", "foo")],
            &[
                ("not-managed-by-capi", "foo"),
                ("label-from-machine", "foo"),
            ],
            "label-from-machine",
        ),
        (
            "CAPI takes ownership of existing labels if they are set from machines",
            &[("node-role.kubernetes.io", "foo")],
            &[],
            &[("node-role.kubernetes.io", "control-plane")],
            &[("node-role.kubernetes.io", "control-plane")],
            "node-role.kubernetes.io",
        ),
        (
            "change a label previously set from machines",
            &[("node-role.kubernetes.io", "foo")],
            &[(A, "node-role.kubernetes.io")],
            &[("node-role.kubernetes.io", "control-plane")],
            &[("node-role.kubernetes.io", "control-plane")],
            "node-role.kubernetes.io",
        ),
        (
            "Delete a label previously set from machines",
            &[
                ("node-role.kubernetes.io", "foo"),
                ("not-managed-by-capi", "foo"),
            ],
            &[(A, "node-role.kubernetes.io")],
            &[],
            &[("not-managed-by-capi", "foo")],
            "",
        ),
        (
            "Label previously set from machine, already removed out of band, annotation should be cleaned up",
            &[],
            &[(A, "node-role.kubernetes.io")],
            &[],
            &[],
            "",
        ),
    ];
    for (name, labels, annotations, machine, want_labels, want_record) in rows {
        let (mut labels, mut annotations) = (map(labels), map(annotations));
        let plan = sync.plan(&labels, &annotations, &map(machine));
        plan.apply(&mut labels, &mut annotations);
        assert_eq!(labels, map(want_labels), "{name}");
        assert_eq!(
            annotations.get(A).map(String::as_str),
            Some(want_record),
            "{name}"
        );
        assert!(
            sync.plan(&labels, &annotations, &map(machine)).is_empty(),
            "{name}: converged"
        );
    }
}

#[test]
fn node_label_sync_scenario() {
    // TestNodeLabelSync: managed Machine labels overwrite the Node's,
    // unmanaged ones never arrive, the Node's own labels stay; then the
    // managed labels leave the Machine and the Node.
    let sync = MachineLabelSync::default();
    let managed_from_machine: BTreeMap<String, String> = default_labels()
        .into_keys()
        .map(|k| (k, "valueFromMachine".to_owned()))
        .collect();
    let unmanaged_from_machine = map(&[
        ("foo", ""),
        ("bar", ""),
        ("company.xyz/node.cluster.x-k8s.io", "not-managed"),
        ("gpu-node.cluster.x-k8s.io", "not-managed"),
        ("company.xyz/node-restriction.kubernetes.io", "not-managed"),
        ("gpu-node-restriction.kubernetes.io", "not-managed"),
    ]);
    let node_own = map(&[
        ("node-role.kubernetes.io/control-plane", ""),
        ("label", "valueFromNode"),
    ]);
    let mut machine = managed_from_machine.clone();
    machine.extend(unmanaged_from_machine.clone());
    let mut labels: BTreeMap<String, String> = default_labels()
        .into_keys()
        .map(|k| (k, "valueFromNode".to_owned()))
        .collect();
    labels.extend(node_own.clone());
    let mut annotations = BTreeMap::new();

    sync.plan(&labels, &annotations, &machine)
        .apply(&mut labels, &mut annotations);
    for (k, v) in &managed_from_machine {
        assert_eq!(labels.get(k), Some(v));
    }
    for k in unmanaged_from_machine.keys() {
        assert!(!labels.contains_key(k), "{k}");
    }
    for (k, v) in &node_own {
        assert_eq!(labels.get(k), Some(v));
    }

    let machine = unmanaged_from_machine;
    sync.plan(&labels, &annotations, &machine)
        .apply(&mut labels, &mut annotations);
    assert_eq!(labels, node_own);
    assert_eq!(annotations.get(A).map(String::as_str), Some(""));
}

#[test]
fn a_vmotion_updates_the_host_label() {
    let sync = MachineLabelSync::default();
    let key = "node.cluster.x-k8s.io/esxi-host";
    let mut labels = map(&[(key, "esx1")]);
    let mut annotations = map(&[(A, key)]);
    // CAPV rewrote the Machine's label after the VM moved.
    let plan = sync.plan(&labels, &annotations, &map(&[(key, "esx2")]));
    assert_eq!(plan.set, map(&[(key, "esx2")]));
    assert!(plan.remove.is_empty() && plan.annotations.is_empty());
    plan.apply(&mut labels, &mut annotations);
    assert_eq!(labels, map(&[(key, "esx2")]));
}

#[test]
fn a_key_removed_from_the_machine_is_removed_from_the_node() {
    let sync = MachineLabelSync::default();
    let labels = map(&[
        ("node.cluster.x-k8s.io/esxi-host", "esx1"),
        ("node-role.kubernetes.io/worker", ""),
    ]);
    let annotations = map(&[(
        A,
        "node-role.kubernetes.io/worker,node.cluster.x-k8s.io/esxi-host",
    )]);
    let plan = sync.plan(
        &labels,
        &annotations,
        &map(&[("node-role.kubernetes.io/worker", "")]),
    );
    assert_eq!(plan.remove, ["node.cluster.x-k8s.io/esxi-host"]);
    assert!(plan.set.is_empty());
    assert_eq!(
        plan.annotations,
        BTreeMap::from([(
            A.to_owned(),
            Some("node-role.kubernetes.io/worker".to_owned())
        )])
    );
}

#[test]
fn a_foreign_label_in_a_managed_domain_survives_until_the_machine_sets_it() {
    let sync = MachineLabelSync::default();
    let key = "node-role.kubernetes.io/gpu";
    let labels = map(&[(key, "from-an-admin")]);
    // Not recorded, not on the Machine: untouched.
    let plan = sync.plan(&labels, &map(&[(A, "")]), &map(&[]));
    assert!(plan.is_empty(), "{plan:?}");
    // The Machine sets it: it is overwritten and recorded, so a later
    // removal from the Machine removes it from the Node.
    let plan = sync.plan(&labels, &map(&[(A, "")]), &map(&[(key, "true")]));
    assert_eq!(plan.set, map(&[(key, "true")]));
    assert_eq!(plan.annotations.get(A), Some(&Some(key.to_owned())));
}

#[test]
fn the_annotation_is_written_even_when_empty() {
    // CAPI's Node always carries the annotation after a sync (TestPatchNode
    // expects "" when nothing comes from the Machine).
    let plan = MachineLabelSync::default().plan(&map(&[]), &map(&[]), &map(&[("team", "a")]));
    assert_eq!(plan.annotations.get(A), Some(&Some(String::new())));
    assert!(plan.set.is_empty() && plan.remove.is_empty());
}

#[test]
fn merged_plans_let_sets_win_over_removals() {
    let host = NodeLabelPlan {
        set: map(&[("k", "host-plan")]),
        remove: vec!["r".into()],
        annotations: BTreeMap::from([("x".to_owned(), Some("k".to_owned()))]),
    };
    let sync = NodeLabelPlan {
        set: map(&[("k", "machine"), ("r", "machine")]),
        remove: vec!["k".into(), "z".into()],
        annotations: BTreeMap::from([(A.to_owned(), Some("k,r".to_owned()))]),
    };
    let merged = host.merge(sync);
    assert_eq!(merged.set, map(&[("k", "host-plan"), ("r", "machine")]));
    assert_eq!(merged.remove, ["z"]);
    assert_eq!(merged.annotations.len(), 2);
}

fn arb_key() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "node-role.kubernetes.io/worker",
        "node.cluster.x-k8s.io/esxi-host",
        "custom.node.cluster.x-k8s.io/x",
        "node-restriction.kubernetes.io/zone",
        "gpu-node.cluster.x-k8s.io/x",
        "team",
        "example.com/app",
    ])
    .prop_map(str::to_owned)
}

fn arb_labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(
        arb_key(),
        prop::sample::select(vec!["a", "b", ""]).prop_map(str::to_owned),
        0..6,
    )
}

fn arb_annotation() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop::collection::vec(arb_key(), 0..4).prop_map(|keys| keys.join(",")))
}

proptest! {
    /// Oracle: after the sync the Node has every managed Machine label; a
    /// label recorded before and no longer on the Machine is gone; every
    /// other label is as it was; the annotation lists the managed keys.
    #[test]
    fn sync_touches_only_managed_machine_keys_and_recorded_keys(
        node in arb_labels(), machine in arb_labels(), record in arb_annotation(),
    ) {
        let sync = MachineLabelSync::default();
        let mut annotations = BTreeMap::new();
        if let Some(record) = &record {
            annotations.insert(A.to_owned(), record.clone());
        }
        let mut labels = node.clone();
        sync.plan(&node, &annotations, &machine).apply(&mut labels, &mut annotations);
        let recorded: Vec<&str> = record.as_deref().unwrap_or("").split(',').collect();
        let managed = |k: &str| {
            let domain = k.split('/').next().unwrap();
            domain == "node-role.kubernetes.io"
                || domain == "node.cluster.x-k8s.io" || domain.ends_with(".node.cluster.x-k8s.io")
                || domain == "node-restriction.kubernetes.io" || domain.ends_with(".node-restriction.kubernetes.io")
        };
        let mut want = node.clone();
        want.retain(|k, _| !(recorded.contains(&k.as_str()) && !(managed(k) && machine.contains_key(k))));
        for (k, v) in &machine {
            if managed(k) {
                want.insert(k.clone(), v.clone());
            }
        }
        prop_assert_eq!(&labels, &want);
        let keys: Vec<&str> = machine.keys().map(String::as_str).filter(|k| managed(k)).collect();
        prop_assert_eq!(annotations.get(A).cloned(), Some(keys.join(",")));
    }

    /// Applying a plan, then planning again, gives an empty plan.
    #[test]
    fn sync_then_resync_plans_nothing(node in arb_labels(), machine in arb_labels(), record in arb_annotation()) {
        let sync = MachineLabelSync::default();
        let mut annotations: BTreeMap<String, String> = record.map(|r| (A.to_owned(), r)).into_iter().collect();
        let mut labels = node.clone();
        sync.plan(&node, &annotations, &machine).apply(&mut labels, &mut annotations);
        prop_assert!(sync.plan(&labels, &annotations, &machine).is_empty());
    }
}
