//! Properties of host label values and label plans (B.2–B.5, B.7).
//! Oracle for validity: `kube_validation::is_label_value` (apimachinery's
//! rule), never the code under test.

use std::collections::BTreeMap;

use anti_affinity_placement::labels::{
    capv_sanitize, plan_node_labels, recorded_keys, sanitize_label_value,
};
use kube_validation::is_label_value;
use proptest::prelude::*;

const ANNOTATION: &str = "policyctl/managed-host-labels";

/// Host-name-like strings: FQDNs, IPv4/IPv6 literals with zones, long and
/// odd inputs, arbitrary unicode.
fn arb_host() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9]{1,12}(\\.[a-z0-9-]{1,20}){0,6}",
        "[a-zA-Z0-9._-]{0,80}",
        any::<std::net::Ipv4Addr>().prop_map(|ip| ip.to_string()),
        (
            any::<std::net::Ipv6Addr>(),
            prop::option::of("[a-z0-9]{1,5}")
        )
            .prop_map(|(ip, zone)| zone.map_or(ip.to_string(), |z| format!("{ip}%{z}"))),
        any::<std::net::Ipv4Addr>().prop_map(|ip| format!("::ffff:{ip}")),
        ".{0,90}",
    ]
}

fn arb_valid_value() -> impl Strategy<Value = String> {
    "([a-zA-Z0-9]([a-zA-Z0-9._-]{0,61}[a-zA-Z0-9])?)?"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn sanitised_host_is_always_a_valid_label_value(raw in arb_host()) {
        let value = sanitize_label_value(&raw);
        prop_assert!(is_label_value(&value), "{:?} → {:?}", raw, value);
    }

    #[test]
    fn sanitising_keeps_capv_value_whenever_capv_value_is_valid_and_unshortened(raw in arb_host()) {
        let capv = capv_sanitize(&raw);
        // CAPV shortens only non-IP names longer than 63 bytes.
        let shortened = raw.len() > 63 && raw.parse::<std::net::IpAddr>().is_err();
        if is_label_value(&capv) && !shortened {
            prop_assert_eq!(sanitize_label_value(&raw), capv);
        }
    }

    #[test]
    fn sanitising_is_identity_on_valid_label_values(value in arb_valid_value()) {
        prop_assert_eq!(sanitize_label_value(&value), value);
    }

    #[test]
    fn sanitising_is_idempotent(raw in arb_host()) {
        let once = sanitize_label_value(&raw);
        prop_assert_eq!(sanitize_label_value(&once), once.clone());
    }

    #[test]
    fn distinct_long_names_with_a_common_prefix_get_distinct_values(
        prefix in "[a-z]{5,10}(\\.[a-z]{3,8}){1,3}",
        a in "[a-z]{60,70}",
        b in "[a-z]{60,70}",
    ) {
        prop_assume!(a != b);
        let x = format!("{prefix}.{a}");
        let y = format!("{prefix}.{b}");
        prop_assert_ne!(sanitize_label_value(&x), sanitize_label_value(&y));
    }
}

fn arb_key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("node.cluster.x-k8s.io/esxi-host".to_owned()),
        Just("node-restriction.kubernetes.io/esxi-host".to_owned()),
        Just("kubernetes.io/hostname".to_owned()),
        Just("CIS-node".to_owned()),
        "[a-z]{1,3}(\\.[a-z]{1,3})?/[a-z]{1,4}",
    ]
}

/// A Node's labels, its annotation record (possibly listing keys that are
/// absent, and junk), and the desired keys → values.
fn arb_node_state() -> impl Strategy<
    Value = (
        BTreeMap<String, String>,
        BTreeMap<String, String>,
        BTreeMap<String, String>,
    ),
> {
    (
        prop::collection::btree_map(arb_key(), "[a-z0-9]{0,4}", 0..6),
        prop::option::of(prop::collection::vec(
            prop_oneof![arb_key(), Just("bad key".to_owned())],
            0..4,
        )),
        prop::collection::btree_map(arb_key(), "[a-z0-9]{1,4}", 0..3),
        prop::collection::btree_map("[a-z]{1,5}", "[a-z]{0,3}", 0..3),
    )
        .prop_map(|(labels, record, desired, mut annotations)| {
            if let Some(record) = record {
                annotations.insert(ANNOTATION.to_owned(), record.join(","));
            }
            (labels, annotations, desired)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn label_plan_never_touches_foreign_keys((labels, annotations, desired) in arb_node_state()) {
        let recorded: Vec<String> = recorded_keys(annotations.get(ANNOTATION).map(String::as_str))
            .into_iter().map(str::to_owned).collect();
        let ours = |k: &String| desired.contains_key(k) || recorded.contains(k);
        let plan = plan_node_labels(&labels, &annotations, &desired, ANNOTATION);
        for k in plan.set.keys().chain(&plan.remove) {
            prop_assert!(ours(k), "plan touches foreign key {}", k);
        }
        for k in plan.annotations.keys() {
            prop_assert_eq!(k, ANNOTATION);
        }
        let (mut l, mut a) = (labels.clone(), annotations.clone());
        plan.apply(&mut l, &mut a);
        for (k, v) in &labels {
            if !ours(k) { prop_assert_eq!(l.get(k), Some(v)); }
        }
        for (k, v) in &annotations {
            if k != ANNOTATION { prop_assert_eq!(a.get(k), Some(v)); }
        }
        // Desired labels are in place, nothing recorded but undesired is left.
        for (k, v) in &desired { prop_assert_eq!(l.get(k), Some(v)); }
        for k in &recorded { prop_assert!(desired.contains_key(k) || !l.contains_key(k)); }
    }

    #[test]
    fn applying_a_label_plan_then_replanning_yields_an_empty_plan((labels, annotations, desired) in arb_node_state()) {
        let plan = plan_node_labels(&labels, &annotations, &desired, ANNOTATION);
        let (mut l, mut a) = (labels, annotations);
        plan.apply(&mut l, &mut a);
        let again = plan_node_labels(&l, &a, &desired, ANNOTATION);
        prop_assert!(again.is_empty(), "second plan not empty: {:?}", again);
    }
}
