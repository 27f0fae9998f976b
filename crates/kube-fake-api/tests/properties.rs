//! Properties of the stand-in's selectors and watch history, each checked
//! against an independent oracle.

use std::collections::BTreeMap;

use kube::core::{Expression, Selector, SelectorExt};
use kube_fake_api::selectors::LabelSelector;
use kube_fake_api::store::{EventType, ObjectKey, Store};
use kube_fake_api::{Registry, ResourceId};
use proptest::prelude::*;
use serde_json::{Value, json};

fn key_strategy() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "app", "x.io/tier"]).prop_map(str::to_owned)
}

fn value_strategy() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["1", "2", "web", "db"]).prop_map(str::to_owned)
}

fn expression_strategy() -> impl Strategy<Value = Expression> {
    prop_oneof![
        (
            key_strategy(),
            prop::collection::btree_set(value_strategy(), 1..3)
        )
            .prop_map(|(k, v)| Expression::In(k, v)),
        (
            key_strategy(),
            prop::collection::btree_set(value_strategy(), 1..3)
        )
            .prop_map(|(k, v)| Expression::NotIn(k, v)),
        (key_strategy(), value_strategy()).prop_map(|(k, v)| Expression::Equal(k, v)),
        (key_strategy(), value_strategy()).prop_map(|(k, v)| Expression::NotEqual(k, v)),
        key_strategy().prop_map(Expression::Exists),
        key_strategy().prop_map(Expression::DoesNotExist),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The stand-in parses kube-core's selector text and matches exactly the
    /// label sets kube-core's own `Selector::matches` matches (the oracle).
    #[test]
    fn parsed_selector_text_agrees_with_kube_core_matching(
        exprs in prop::collection::vec(expression_strategy(), 0..4),
        labels in prop::collection::btree_map(key_strategy(), value_strategy(), 0..4),
    ) {
        let selector: Selector = exprs.into_iter().collect();
        let parsed = LabelSelector::parse(&selector.to_string()).unwrap();
        let object = json!({"metadata": {"labels": labels}});
        prop_assert_eq!(parsed.matches(&object), selector.matches(&labels), "selector {}", selector);
    }
}

#[derive(Debug, Clone)]
enum Op {
    Upsert(u8, u8),
    Delete(u8),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..4, any::<u8>()).prop_map(|(n, v)| Op::Upsert(n, v)),
        1 => (0u8..4).prop_map(Op::Delete),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Replaying the watch history after any resourceVersion onto the state
    /// a client had at that version yields exactly the store's current
    /// state; the oracle is a plain map updated alongside the operations.
    #[test]
    fn replaying_history_from_any_version_reconstructs_the_store(
        ops in prop::collection::vec(op_strategy(), 1..40),
        pick in any::<prop::sample::Index>(),
    ) {
        let id = ResourceId::new("", "v1", "configmaps");
        let mut store = Store::new(Registry::default());
        // oracle: resourceVersion -> {name -> data value} after that write
        let mut snapshots: Vec<(u64, BTreeMap<String, Value>)> = vec![(0, BTreeMap::new())];
        let mut model: BTreeMap<String, Value> = BTreeMap::new();
        for op in &ops {
            match op {
                Op::Upsert(n, v) => {
                    let name = format!("cm{n}");
                    let key = ObjectKey { resource: id.clone(), namespace: "ns".into(), name: name.clone() };
                    let obj = json!({"metadata": {"name": name, "namespace": "ns"}, "data": {"v": v.to_string()}});
                    if store.get(&key).is_some() { store.replace(key, obj); } else { store.insert(key, obj); }
                    model.insert(name, json!(v.to_string()));
                }
                Op::Delete(n) => {
                    let name = format!("cm{n}");
                    let key = ObjectKey { resource: id.clone(), namespace: "ns".into(), name: name.clone() };
                    if store.remove(&key, None).is_none() { continue; }
                    model.remove(&name);
                }
            }
            snapshots.push((store.resource_version(), model.clone()));
        }
        let (rv, mut state) = snapshots[pick.index(snapshots.len())].clone();
        let (replay, _rx) = store.subscribe_since(rv).unwrap();
        let mut last = rv;
        for ev in replay {
            prop_assert!(ev.rv > last, "history is strictly increasing");
            last = ev.rv;
            match ev.kind {
                EventType::Added | EventType::Modified => { state.insert(ev.key.name.clone(), ev.object["data"]["v"].clone()); }
                EventType::Deleted => { state.remove(&ev.key.name); }
            }
        }
        let current: BTreeMap<String, Value> = store.list(&id, Some("ns")).map(|(k, v)| (k.name.clone(), v["data"]["v"].clone())).collect();
        prop_assert_eq!(&state, &current);
        prop_assert_eq!(&state, &model);
        // After compaction every older version is refused (410).
        store.compact();
        if rv < store.resource_version() {
            prop_assert!(store.subscribe_since(rv).is_none());
        }
    }
}
