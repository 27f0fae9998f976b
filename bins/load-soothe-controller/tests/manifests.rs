//! The committed manifests in `deploy/load-soothe-controller/` are exactly
//! what the declared RBAC rules generate. Regenerate with
//! `UPDATE_MANIFESTS=1 cargo test -p load-soothe-controller --test manifests`.

use std::path::PathBuf;

use load_soothe_controller::GateMode;
use load_soothe_controller::rbac::manifests_yaml;

fn path(mode: GateMode) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/load-soothe-controller")
        .join(format!("{}.yaml", mode.as_str()))
}

#[test]
fn committed_manifests_match_the_declared_rules() {
    for mode in [GateMode::Exact, GateMode::Optimistic] {
        let generated = manifests_yaml(mode).unwrap();
        let file = path(mode);
        if std::env::var_os("UPDATE_MANIFESTS").is_some() {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            committed == generated,
            "{} is out of date: run `UPDATE_MANIFESTS=1 cargo test -p load-soothe-controller --test manifests` and commit it",
            file.display()
        );
    }
}

#[test]
fn least_privilege_only_exact_mode_writes_configmaps_and_no_mode_patches_pod_volume_loads() {
    let exact = manifests_yaml(GateMode::Exact).unwrap();
    let optimistic = manifests_yaml(GateMode::Optimistic).unwrap();
    insta::assert_snapshot!("exact_role", role_section(&exact));
    insta::assert_snapshot!("optimistic_role", role_section(&optimistic));
    for yaml in [&exact, &optimistic] {
        assert!(!yaml.contains("kind: ClusterRole"), "{yaml}");
        assert!(!yaml.contains("delete"), "{yaml}");
        assert!(!yaml.contains("leases"), "{yaml}");
    }
}

fn role_section(yaml: &str) -> String {
    yaml.split("---\n")
        .find(|doc| doc.contains("kind: Role\n") || doc.starts_with("kind: Role"))
        .unwrap_or_default()
        .to_owned()
}
