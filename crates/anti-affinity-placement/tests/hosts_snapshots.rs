//! Snapshots of what users read: plan, rebalance and scale-down outputs for
//! the CAPV-like example inventory, and validation messages.

use anti_affinity_placement::hosts::{CheckedInventory, HostInventory};

fn example() -> HostInventory {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/inventory.yaml"
    ))
    .unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

#[test]
fn example_plan() {
    let inv = example();
    let plan = CheckedInventory::new(&inv).unwrap().plan();
    insta::assert_json_snapshot!(plan);
}

#[test]
fn example_rebalance_and_scale_down_after_plan() {
    let inv = example();
    let placed = CheckedInventory::new(&inv).unwrap().plan().apply(&inv);
    let checked = CheckedInventory::new(&placed).unwrap();
    insta::assert_json_snapshot!(
        "rebalance_md_0",
        checked.rebalance("prod-md-0", None).unwrap()
    );
    insta::assert_json_snapshot!(
        "rebalance_pool_budget_1",
        checked.rebalance("prod-pool", Some(1)).unwrap()
    );
    insta::assert_json_snapshot!(
        "scale_down_md_0_by_2",
        checked.scale_down("prod-md-0", 2).unwrap()
    );
}

#[test]
fn request_errors_name_the_group() {
    let inv = example();
    let checked = CheckedInventory::new(&inv).unwrap();
    let errors = [
        checked
            .rebalance("prod-md-a", None)
            .unwrap_err()
            .to_string(),
        checked.rebalance("nope", None).unwrap_err().to_string(),
        checked.scale_down("prod-pool", 1).unwrap_err().to_string(),
        checked.scale_down("prod-md-0", 9).unwrap_err().to_string(),
    ];
    insta::assert_yaml_snapshot!(errors);
}

#[test]
fn validation_errors_name_field_and_value() {
    let text = r#"
apiVersion: policyctl/v1
kind: HostInventory
hosts:
- {name: esx1, capacity: {cpu: -4, memoryMiB: 1.5}}
- {name: esx1, capacity: {cpu: 500m, gpu: 2x}}
- {name: "", capacity: {}}
groups:
- {name: md-0, policy: soft-anti-affinity, maxPerHost: 2}
- {name: cp, policy: anti-affinity, maxPerHost: 0}
- {name: md-a, antiAffinitySet: pool}
- {name: md-b, policy: anti-affinity, antiAffinitySet: pool}
- {name: md-c, antiAffinitySet: md-0}
vms:
- {name: vm1, group: md-x, host: esx9}
- {name: vm1, group: md-0, requests: {cpu: "-1"}}
"#;
    let inv: HostInventory = serde_saphyr::from_str(text).unwrap();
    let err = CheckedInventory::new(&inv).unwrap_err();
    insta::assert_snapshot!(err.to_string());
}

#[test]
fn unknown_fields_are_rejected_when_parsing() {
    let text = "apiVersion: policyctl/v1alpha1\nkind: HostInventory\nhosts:\n- {name: esx1, maxPerHost: 1}\n";
    let err = serde_saphyr::from_str::<HostInventory>(text)
        .unwrap_err()
        .to_string();
    assert!(err.contains("maxPerHost"), "{err}");
}
