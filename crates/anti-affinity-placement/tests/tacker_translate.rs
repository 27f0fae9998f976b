//! heat-translator's affinity cases (tests/data/tacker/heat-translator):
//! our server-group part of the HOT against heat-translator's own output,
//! byte for byte, in YAML and JSON; and the findings of each case.

use std::path::PathBuf;

use anti_affinity_placement::tacker::translate::{Translation, translate};
use anti_affinity_placement::tacker::vnfd::read_vnfd;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/tacker/heat-translator")
        .join(name)
}

fn translated(case: &str) -> Translation {
    let name = format!("{case}.vnfd.yaml");
    let text = std::fs::read_to_string(data(&name)).unwrap();
    // The ETSI type imports are absent here, as in most CSARs read offline.
    let vnfd = read_vnfd(&name, &text, &mut |_| Ok(None), None).unwrap();
    translate(&vnfd)
}

fn check(case: &str) -> Translation {
    let translation = translated(case);
    let yaml = std::fs::read_to_string(data(&format!("{case}.hot.yaml"))).unwrap();
    assert_eq!(
        translation.hot_yaml(),
        yaml,
        "{case}: YAML differs from heat-translator's"
    );
    let json = std::fs::read_to_string(data(&format!("{case}.hot.json"))).unwrap();
    let ours = serde_json::to_string_pretty(&translation.hot_document()).unwrap() + "\n";
    assert_eq!(ours, json, "{case}: JSON differs from heat-translator's");
    translation
}

fn findings(translation: &Translation) -> Vec<String> {
    translation
        .findings
        .iter()
        .map(|f| format!("{} {} [{}] {}", f.path, f.code(), f.rule_id(), f))
        .collect()
}

#[test]
fn scope_nfvi_node_matches_heat_translator_byte_for_byte() {
    let translation = check("scope_nfvi_node");
    assert!(
        translation.findings.is_empty(),
        "{:?}",
        translation.findings
    );
    assert_eq!(translation.groups.len(), 2);
}

#[test]
fn unsupported_scope_matches_heat_translator_and_every_rule_is_a_finding() {
    let translation = check("unsupported_scope");
    assert!(translation.groups.is_empty());
    insta::assert_yaml_snapshot!(findings(&translation));
}

#[test]
fn unsupported_targets_matches_heat_translator_and_the_placement_groups_are_explained() {
    let translation = check("unsupported_targets");
    assert!(translation.groups.is_empty());
    insta::assert_yaml_snapshot!(findings(&translation));
}

#[test]
fn mixed_targets_match_heat_translator_with_replaced_hints_and_duplicate_names() {
    let translation = check("mixed_targets");
    insta::assert_yaml_snapshot!(findings(&translation));
}
