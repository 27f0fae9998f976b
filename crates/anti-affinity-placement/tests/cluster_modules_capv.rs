//! CAPV's own unit-test tables for cluster modules, ported row by row (in
//! our own code), plus the strict version parser's tables it relies on.
//!
//! - `pkg/clustermodule/util_test.go` `Test_IsCompatible` and
//!   `github.com/blang/semver` v3.5.1 `semver_test.go` (format tables);
//! - `controllers/clustermodule_reconciler_test.go`
//!   `TestReconciler_Reconcile` (every row, through the plan and
//!   [`ModulePlan::apply`] with vCenter's answers as CAPV's mocks give
//!   them), `TestReconciler_fetchMachineOwnerObjects`;
//! - `pkg/util/fetch_object_test.go` `Test_FetchControlPlaneOwnerObject`
//!   and `controllers/vspherevm_controller_test.go` `Test_reconcile`
//!   (membership).
//!
//! Everything at CAPV v1.16.1.

use anti_affinity_placement::cluster_modules::{
    CreateOutcome, DeleteReason, GroupKind, InfrastructureTemplate, MachineOwners, Membership,
    MembershipError, MissingOwner, ModuleCreate, ModuleEntry, ModuleOwner, ModulePlan, ModuleState,
    OwnerIndex, OwnerReference, ReconcileError, ReconcileInput, ReconcileResult, ReconcileStatus,
    VCenterVersion, cluster_modules_supported, membership, reconcile_modules,
    reconcile_modules_with,
};

// ---------------------------------------------------------------- version gate

#[test]
fn is_compatible_table() {
    // Test_IsCompatible.
    for (name, version, compatible) in [
        ("incorrect version", "foo", false),
        ("empty version", "", false),
        ("incompatible version", "6.7.0", false),
        ("compatible version", "7.0.3", true),
        ("next compatible version", "8.0.0", true),
    ] {
        assert_eq!(cluster_modules_supported(version), compatible, "{name}");
    }
}

#[test]
fn strict_parser_accepts_the_semver_format_table() {
    // blang/semver formatTests: every string parses and prints back.
    for text in [
        "1.2.3",
        "0.0.1",
        "0.0.1-alpha.preview+123.456",
        "1.2.3-alpha.1+123.456",
        "1.2.3-alpha.1",
        "1.2.3+123.456",
        "1.2.3-alpha.b-eta+123.b-uild",
        "1.2.3+123.b-uild",
        "1.2.3-alpha.b-eta",
    ] {
        let version = VCenterVersion::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(version.to_string(), text);
        assert!(!version.supports_cluster_modules(), "{text}");
    }
    let version = VCenterVersion::parse("8.0.2-22617221+vc.01").unwrap();
    assert_eq!((version.major, version.minor, version.patch), (8, 0, 2));
    assert!(version.supports_cluster_modules());
}

#[test]
fn strict_parser_rejects_the_semver_wrong_format_table_and_tolerant_forms() {
    // blang/semver wrongformatTests, then tolerantFormatTests (ParseTolerant
    // accepts them, the strict New that CAPV calls does not), then the
    // shapes vCenter versions are misread in.
    for text in [
        "",
        ".",
        "1.",
        ".1",
        "a.b.c",
        "1.a.b",
        "1.1.a",
        "1.a.1",
        "a.1.1",
        "..",
        "1..",
        "1.1.",
        "1..1",
        "1.1.+123",
        "1.1.-beta",
        "-1.1.1",
        "1.-1.1",
        "1.1.-1",
        "20000000000000000000.1.1",
        "1.20000000000000000000.1",
        "1.1.20000000000000000000",
        "1.1.1-20000000000000000000",
        "01.1.1",
        "001.1.1",
        "1.01.1",
        "1.001.1",
        "1.1.01",
        "1.1.001",
        "1.1.1-01",
        "1.1.1-001",
        "1.1.1-beta.01",
        "1.1.1-beta.001",
        "0.0.0-!",
        "0.0.0+!",
        "0.0.0-.alpha",
        "0.0.0-alpha+",
        "0.0.0-alpha+test.",
        "v1.2.3",
        "\t1.2.3 ",
        "1.2",
        "1",
        "7.0",
        "v7.0.3",
        " 7.0.3",
        "7.0.3 ",
        "7.0.3 build 2",
        "7.0.3.00600",
    ] {
        assert!(
            VCenterVersion::parse(text).is_err(),
            "{text:?} must not parse"
        );
        assert!(!cluster_modules_supported(text), "{text:?}");
    }
}

#[test]
fn version_errors_say_what_is_wrong() {
    assert_eq!(
        VCenterVersion::parse("7.0").unwrap_err().to_string(),
        "\"7.0\" has no MAJOR.MINOR.PATCH (write e.g. 7.0.3)"
    );
    assert_eq!(
        VCenterVersion::parse("07.0.1").unwrap_err().to_string(),
        "\"07.0.1\": the major number \"07\" is not a decimal number without leading zeroes that fits in 64 bits"
    );
}

// ------------------------------------------------------- module reconciliation

const KCP_UUID: &str = "6a3e1c0e-0b84-4b68-9d33-5c1f4d2c7a11";
const MD_UUID: &str = "b2d7f3a4-58e0-4c2e-9f61-7e2a9c0d1b22";
const SERVER: &str = "vcenter.example.com";

fn vsphere_template(name: &str) -> InfrastructureTemplate {
    InfrastructureTemplate::VSphere {
        name: name.to_owned(),
        server: Some(SERVER.to_owned()),
    }
}

fn kcp(name: &str) -> ModuleOwner {
    ModuleOwner {
        kind: GroupKind::KubeadmControlPlane,
        name: name.to_owned(),
        deleting: false,
        template: vsphere_template(&format!("{name}-template")),
    }
}

fn md(name: &str) -> ModuleOwner {
    ModuleOwner {
        kind: GroupKind::MachineDeployment,
        name: name.to_owned(),
        deleting: false,
        template: vsphere_template(&format!("{name}-template")),
    }
}

fn deleting(mut owner: ModuleOwner) -> ModuleOwner {
    owner.deleting = true;
    owner
}

fn entry(control_plane: bool, name: &str, uuid: &str) -> ModuleEntry {
    ModuleEntry {
        control_plane,
        target_object_name: name.to_owned(),
        module_uuid: uuid.to_owned(),
    }
}

fn input<'a>(recorded: &'a [ModuleEntry], owners: &'a [ModuleOwner]) -> ReconcileInput<'a> {
    ReconcileInput {
        cluster_name: Some("test-cluster"),
        server: SERVER,
        recorded,
        owners,
    }
}

/// `(targetObjectName, controlPlane, replaces)` of the creates.
fn creates(
    plan: &anti_affinity_placement::cluster_modules::ModulePlan,
) -> Vec<(&str, bool, Option<&str>)> {
    plan.create
        .iter()
        .map(|c| {
            (
                c.target_object_name.as_str(),
                c.control_plane,
                c.replaces.as_deref(),
            )
        })
        .collect()
}

fn deletes(plan: &anti_affinity_placement::cluster_modules::ModulePlan) -> Vec<(&str, &str)> {
    plan.delete
        .iter()
        .map(|d| (d.target_object_name.as_str(), d.module_uuid.as_str()))
        .collect()
}

#[test]
fn when_cluster_modules_already_exist() {
    let recorded = [entry(true, "kcp", KCP_UUID), entry(false, "md", MD_UUID)];
    let owners = [kcp("kcp"), md("md")];
    let plan = reconcile_modules(input(&recorded, &owners));
    assert_eq!(plan.keep, recorded);
    assert!(plan.create.is_empty() && plan.delete.is_empty());
    assert_eq!(plan.resulting_entries().len(), 2);
}

#[test]
fn when_no_cluster_modules_exist() {
    let owners = [kcp("kcp"), md("md")];
    let plan = reconcile_modules(input(&[], &owners));
    assert_eq!(creates(&plan), [("kcp", true, None), ("md", false, None)]);
    assert!(plan.keep.is_empty() && plan.delete.is_empty());
}

#[test]
fn when_one_cluster_module_exists() {
    let recorded = [entry(true, "kcp", KCP_UUID)];
    let owners = [kcp("kcp"), md("md")];
    let plan = reconcile_modules(input(&recorded, &owners));
    assert_eq!(plan.keep, recorded);
    assert_eq!(creates(&plan), [("md", false, None)]);
}

#[test]
fn when_cluster_modules_do_not_exist_anymore() {
    let recorded = [entry(true, "kcp", KCP_UUID), entry(false, "md", MD_UUID)];
    let owners = [kcp("kcp"), md("md")];
    let plan = reconcile_modules_with(input(&recorded, &owners), |_| ModuleState::Missing);
    assert!(plan.keep.is_empty());
    // Replaced, not removed: the stale entries are dropped without a delete.
    assert!(plan.delete.is_empty());
    assert_eq!(
        creates(&plan),
        [("kcp", true, Some(KCP_UUID)), ("md", false, Some(MD_UUID))]
    );
    assert_eq!(plan.resulting_entries().len(), 2);
}

#[test]
fn when_cluster_modules_already_exist_but_vcenter_returns_an_error() {
    let recorded = [entry(true, "kcp", KCP_UUID), entry(false, "md", MD_UUID)];
    let owners = [kcp("kcp"), md("md")];
    let plan = reconcile_modules_with(input(&recorded, &owners), |_| {
        ModuleState::CheckFailed("500 Internal Server Error".into())
    });
    // The old modules are kept, each with the error.
    assert_eq!(plan.keep, recorded);
    assert!(plan.create.is_empty() && plan.delete.is_empty());
    assert_eq!(plan.check_failures.len(), 2);
    assert!(
        plan.check_failures
            .iter()
            .all(|(_, m)| m.contains("500 Internal Server Error"))
    );
}

#[test]
fn when_one_cluster_module_exists_and_for_the_other_we_get_an_error() {
    let recorded = [entry(true, "kcp", KCP_UUID), entry(false, "md", MD_UUID)];
    let owners = [kcp("kcp"), md("md")];
    let plan = reconcile_modules_with(input(&recorded, &owners), |e| {
        if e.module_uuid == KCP_UUID {
            ModuleState::Exists
        } else {
            ModuleState::CheckFailed("500 Internal Server Error".into())
        }
    });
    assert_eq!(plan.keep, recorded);
    assert!(plan.create.is_empty());
    assert_eq!(plan.check_failures[0].0, recorded[1]);
}

#[test]
fn when_one_cluster_module_does_not_exist_and_for_the_other_we_get_an_error() {
    let recorded = [entry(true, "kcp", KCP_UUID), entry(false, "md", MD_UUID)];
    let owners = [kcp("kcp"), md("md")];
    let plan = reconcile_modules_with(input(&recorded, &owners), |e| {
        if e.module_uuid == KCP_UUID {
            ModuleState::Missing
        } else {
            ModuleState::CheckFailed("500 Internal Server Error".into())
        }
    });
    // The errored entry is kept, the missing one replaced.
    assert_eq!(plan.keep, [recorded[1].clone()]);
    assert_eq!(creates(&plan), [("kcp", true, Some(KCP_UUID))]);
    assert_eq!(plan.resulting_entries().len(), 2);
}

#[test]
fn when_some_cluster_module_creations_are_skipped() {
    // CAPV's mock "creation was skipped" is what its service does for an
    // owner whose template is not a VSphereMachineTemplate, or is on
    // another vCenter (A.4).
    let mut foreign = md("md");
    foreign.template = InfrastructureTemplate::Other {
        kind: "DockerMachineTemplate".into(),
    };
    let mut elsewhere = md("md-elsewhere");
    elsewhere.template = InfrastructureTemplate::VSphere {
        name: "t".into(),
        server: Some("other-vcenter.example.com".into()),
    };
    let mut unreferenced = md("md-no-ref");
    unreferenced.template = InfrastructureTemplate::Other {
        kind: String::new(),
    };
    let owners = [kcp("kcp"), foreign, elsewhere, unreferenced];
    let plan = reconcile_modules(input(&[], &owners));
    assert_eq!(creates(&plan), [("kcp", true, None)]);
    let skipped: Vec<&str> = plan.skipped.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(skipped, ["md", "md-elsewhere", "md-no-ref"]);
    assert!(plan.skipped[0].reason.contains("DockerMachineTemplate"));
    assert!(plan.skipped[1].reason.contains("other-vcenter.example.com"));
}

#[test]
fn a_template_that_was_not_read_is_taken_to_match() {
    let mut owner = md("md");
    owner.template = InfrastructureTemplate::VSphere {
        name: "md-template".into(),
        server: None,
    };
    let plan = reconcile_modules(input(&[], std::slice::from_ref(&owner)));
    assert_eq!(creates(&plan), [("md", false, None)]);
}

#[test]
fn when_machine_deployment_is_being_deleted() {
    let recorded = [entry(true, "kcp", KCP_UUID)];
    let owners = [kcp("kcp"), deleting(md("md"))];
    let plan = reconcile_modules(input(&recorded, &owners));
    assert_eq!(plan.keep, recorded);
    assert!(plan.create.is_empty() && plan.delete.is_empty());
}

#[test]
fn when_machine_deployment_is_being_deleted_and_cluster_module_info_is_set() {
    let recorded = [entry(true, "kcp", KCP_UUID), entry(false, "md", MD_UUID)];
    let owners = [kcp("kcp"), deleting(md("md"))];
    let plan = reconcile_modules(input(&recorded, &owners));
    assert_eq!(plan.keep, [recorded[0].clone()]);
    assert_eq!(deletes(&plan), [("md", MD_UUID)]);
    assert_eq!(plan.delete[0].reason, DeleteReason::OwnerDeleting);
}

#[test]
fn when_control_plane_and_machine_deployment_are_being_deleted_and_info_is_set() {
    let recorded = [entry(true, "kcp", KCP_UUID), entry(false, "md", MD_UUID)];
    let owners = [deleting(kcp("kcp")), deleting(md("md"))];
    let plan = reconcile_modules(input(&recorded, &owners));
    assert!(plan.keep.is_empty() && plan.create.is_empty());
    assert_eq!(deletes(&plan), [("kcp", KCP_UUID), ("md", MD_UUID)]);
}

#[test]
fn when_control_plane_and_machine_deployment_are_being_deleted_and_info_is_not_set() {
    let owners = [deleting(kcp("kcp")), deleting(md("md"))];
    let plan = reconcile_modules(input(&[], &owners));
    assert!(plan.is_empty() && plan.keep.is_empty());
}

#[test]
fn an_entry_without_any_owner_is_deleted() {
    let recorded = [entry(false, "md-scaled-away", MD_UUID)];
    let plan = reconcile_modules(input(&recorded, &[kcp("kcp")]));
    assert_eq!(deletes(&plan), [("md-scaled-away", MD_UUID)]);
    assert_eq!(plan.delete[0].reason, DeleteReason::OwnerGone);
    assert_eq!(creates(&plan), [("kcp", true, None)]);
}

#[test]
fn the_control_plane_flag_selects_the_owner_kind() {
    // A KubeadmControlPlane and a MachineDeployment with the same name get
    // separate modules; an entry matches by kind and name.
    let recorded = [entry(false, "shared", MD_UUID)];
    let owners = [kcp("shared"), md("shared")];
    let plan = reconcile_modules(input(&recorded, &owners));
    assert_eq!(plan.keep, recorded);
    assert_eq!(creates(&plan), [("shared", true, None)]);
    // An entry claiming the control plane for a name only a
    // MachineDeployment has is stale.
    let recorded = [entry(true, "md", KCP_UUID), entry(false, "md", MD_UUID)];
    let plan = reconcile_modules(input(&recorded, &[md("md")]));
    assert_eq!(deletes(&plan), [("md", KCP_UUID)]);
    assert_eq!(plan.keep, [recorded[1].clone()]);
}

#[test]
fn a_second_entry_for_the_same_owner_is_deleted() {
    let recorded = [
        entry(false, "md", MD_UUID),
        entry(false, "md", "c0ffee00-0000-4000-8000-000000000000"),
    ];
    let plan = reconcile_modules(input(&recorded, &[md("md")]));
    assert_eq!(plan.keep, [recorded[0].clone()]);
    assert_eq!(
        deletes(&plan),
        [("md", "c0ffee00-0000-4000-8000-000000000000")]
    );
    assert_eq!(plan.delete[0].reason, DeleteReason::Duplicate);
}

/// One row of `TestReconciler_Reconcile`: the recorded entries, which of
/// the owners `kcp` and `md` are being deleted, vCenter's answers (`DoesExist`
/// per module UUID, `Create` per owner name; a call the row's mocks do not
/// expect fails the test, as testify's mock does), then the row's checks.
struct ReconcileRow {
    name: &'static str,
    recorded: Vec<ModuleEntry>,
    kcp_deleting: bool,
    md_deleting: bool,
    exists: Vec<(&'static str, ModuleState)>,
    created: Vec<(&'static str, CreateOutcome)>,
    removed: Vec<&'static str>,
    have_error: bool,
    check: fn(&ReconcileResult),
}

fn uuids(result: &ReconcileResult) -> Vec<&str> {
    let mut uuids: Vec<&str> = result
        .entries
        .iter()
        .map(|e| e.module_uuid.as_str())
        .collect();
    uuids.sort_unstable();
    uuids
}

fn names(result: &ReconcileResult) -> Vec<(&str, bool)> {
    let mut names: Vec<(&str, bool)> = result
        .entries
        .iter()
        .map(|e| (e.target_object_name.as_str(), e.control_plane))
        .collect();
    names.sort_unstable();
    names
}

fn not_ready_mentioning(result: &ReconcileResult, text: &str) {
    let condition = result.condition.as_ref().expect("condition set");
    assert!(!condition.ready, "{condition:?}");
    assert!(condition.message.contains(text), "{condition:?}");
}

const KCP_NEW: &str = "6a3e1c0e-0b84-4b68-9d33-5c1f4d2c7a11a";
const MD_NEW: &str = "b2d7f3a4-58e0-4c2e-9f61-7e2a9c0d1b22a";
const VCENTER_500: &str = "500 Internal Server Error";

fn reconcile_rows() -> Vec<ReconcileRow> {
    let both = || vec![entry(true, "kcp", KCP_UUID), entry(false, "md", MD_UUID)];
    let check_error = || ModuleState::CheckFailed(VCENTER_500.into());
    vec![
        ReconcileRow {
            name: "when cluster modules already exist",
            recorded: both(),
            kcp_deleting: false,
            md_deleting: false,
            exists: vec![
                (KCP_UUID, ModuleState::Exists),
                (MD_UUID, ModuleState::Exists),
            ],
            created: vec![],
            removed: vec![],
            have_error: false,
            check: |r| assert_eq!(r.entries.len(), 2),
        },
        ReconcileRow {
            name: "when no cluster modules exist",
            recorded: vec![],
            kcp_deleting: false,
            md_deleting: false,
            exists: vec![],
            created: vec![
                ("kcp", CreateOutcome::Created(KCP_UUID.into())),
                ("md", CreateOutcome::Created(MD_UUID.into())),
            ],
            removed: vec![],
            have_error: false,
            check: |r| {
                assert_eq!(names(r), [("kcp", true), ("md", false)]);
                assert_eq!(uuids(r), [KCP_UUID, MD_UUID]);
            },
        },
        ReconcileRow {
            name: "when one cluster modules exist",
            recorded: vec![entry(true, "kcp", KCP_UUID)],
            kcp_deleting: false,
            md_deleting: false,
            exists: vec![(KCP_UUID, ModuleState::Exists)],
            created: vec![("md", CreateOutcome::Created(MD_UUID.into()))],
            removed: vec![],
            have_error: false,
            check: |r| {
                assert_eq!(names(r), [("kcp", true), ("md", false)]);
                assert_eq!(uuids(r), [KCP_UUID, MD_UUID]);
            },
        },
        ReconcileRow {
            name: "when cluster modules do not exist anymore",
            recorded: both(),
            kcp_deleting: false,
            md_deleting: false,
            exists: vec![
                (KCP_UUID, ModuleState::Missing),
                (MD_UUID, ModuleState::Missing),
            ],
            created: vec![
                ("kcp", CreateOutcome::Created(KCP_NEW.into())),
                ("md", CreateOutcome::Created(MD_NEW.into())),
            ],
            removed: vec![],
            have_error: false,
            check: |r| {
                assert_eq!(uuids(r), [KCP_NEW, MD_NEW]);
                assert!(r.condition.as_ref().unwrap().ready);
            },
        },
        ReconcileRow {
            name: "when cluster modules already exist but vCenter returns an error",
            recorded: both(),
            kcp_deleting: false,
            md_deleting: false,
            exists: vec![(KCP_UUID, check_error()), (MD_UUID, check_error())],
            created: vec![],
            removed: vec![],
            have_error: true,
            check: |r| {
                assert_eq!(uuids(r), [KCP_UUID, MD_UUID]);
                not_ready_mentioning(r, VCENTER_500);
            },
        },
        ReconcileRow {
            name: "when one cluster modules exists and for the other we get an error",
            recorded: both(),
            kcp_deleting: false,
            md_deleting: false,
            exists: vec![(KCP_UUID, ModuleState::Exists), (MD_UUID, check_error())],
            created: vec![],
            removed: vec![],
            have_error: true,
            check: |r| {
                assert_eq!(uuids(r), [KCP_UUID, MD_UUID]);
                not_ready_mentioning(r, VCENTER_500);
            },
        },
        ReconcileRow {
            name: "when one cluster modules does not exist and for the other we get an error",
            recorded: both(),
            kcp_deleting: false,
            md_deleting: false,
            exists: vec![(KCP_UUID, ModuleState::Missing), (MD_UUID, check_error())],
            created: vec![("kcp", CreateOutcome::Created(KCP_NEW.into()))],
            removed: vec![],
            have_error: true,
            check: |r| {
                assert_eq!(uuids(r), [KCP_NEW, MD_UUID]);
                not_ready_mentioning(r, VCENTER_500);
            },
        },
        ReconcileRow {
            name: "when cluster module creation is called for a resource pool owned by non compute cluster resource",
            recorded: vec![],
            kcp_deleting: false,
            md_deleting: false,
            exists: vec![],
            created: vec![
                ("kcp", CreateOutcome::IncompatibleOwner("foo-123".into())),
                ("md", CreateOutcome::Created(MD_UUID.into())),
            ],
            removed: vec![],
            have_error: false,
            check: |r| {
                assert_eq!(names(r), [("md", false)]);
                assert_eq!(uuids(r), [MD_UUID]);
                not_ready_mentioning(r, "kcp");
            },
        },
        ReconcileRow {
            name: "when cluster module creation fails",
            recorded: vec![],
            kcp_deleting: false,
            md_deleting: false,
            exists: vec![],
            created: vec![
                ("kcp", CreateOutcome::Created(KCP_UUID.into())),
                ("md", CreateOutcome::Failed("failed to reach API".into())),
            ],
            removed: vec![],
            have_error: true,
            check: |r| {
                assert_eq!(names(r), [("kcp", true)]);
                assert_eq!(uuids(r), [KCP_UUID]);
                not_ready_mentioning(r, "md");
            },
        },
        ReconcileRow {
            name: "when all cluster module creations fail for a resource pool owned by non compute cluster resource",
            recorded: vec![],
            kcp_deleting: false,
            md_deleting: false,
            exists: vec![],
            created: vec![
                ("kcp", CreateOutcome::IncompatibleOwner("foo-123".into())),
                ("md", CreateOutcome::IncompatibleOwner("bar-123".into())),
            ],
            removed: vec![],
            have_error: false,
            check: |r| {
                assert!(r.entries.is_empty());
                not_ready_mentioning(r, "kcp");
            },
        },
        ReconcileRow {
            name: "when some cluster module creations are skipped",
            recorded: vec![],
            kcp_deleting: false,
            md_deleting: false,
            exists: vec![],
            created: vec![
                ("kcp", CreateOutcome::Created(KCP_UUID.into())),
                ("md", CreateOutcome::Skipped),
            ],
            removed: vec![],
            have_error: false,
            check: |r| {
                assert_eq!(names(r), [("kcp", true)]);
                assert_eq!(uuids(r), [KCP_UUID]);
            },
        },
        ReconcileRow {
            name: "when machine deployment is being deleted",
            recorded: vec![entry(true, "kcp", KCP_UUID)],
            kcp_deleting: false,
            md_deleting: true,
            exists: vec![(KCP_UUID, ModuleState::Exists)],
            created: vec![],
            removed: vec![],
            have_error: false,
            check: |r| {
                assert_eq!(names(r), [("kcp", true)]);
                assert_eq!(uuids(r), [KCP_UUID]);
            },
        },
        ReconcileRow {
            name: "when machine deployment is being deleted & cluster module info is set in object",
            recorded: both(),
            kcp_deleting: false,
            md_deleting: true,
            exists: vec![(KCP_UUID, ModuleState::Exists)],
            created: vec![],
            removed: vec![MD_UUID],
            have_error: false,
            check: |r| {
                assert_eq!(names(r), [("kcp", true)]);
                assert_eq!(uuids(r), [KCP_UUID]);
            },
        },
        ReconcileRow {
            // CAPV's rows share one MachineDeployment object, still marked
            // for deletion by the rows before.
            name: "when control plane & machine deployment are being deleted & cluster module info is set in object",
            recorded: both(),
            kcp_deleting: true,
            md_deleting: true,
            exists: vec![],
            created: vec![],
            removed: vec![KCP_UUID, MD_UUID],
            have_error: false,
            check: |r| assert!(r.entries.is_empty()),
        },
        ReconcileRow {
            name: "when control plane & machine deployment are being deleted & cluster module info is not set",
            recorded: vec![],
            kcp_deleting: true,
            md_deleting: true,
            exists: vec![],
            created: vec![],
            removed: vec![],
            have_error: false,
            check: |r| assert!(r.entries.is_empty()),
        },
    ]
}

#[test]
fn reconciler_reconcile_table() {
    for row in reconcile_rows() {
        let mut owners = vec![kcp("kcp"), md("md")];
        owners[0].deleting = row.kcp_deleting;
        owners[1].deleting = row.md_deleting;
        let plan: ModulePlan = reconcile_modules_with(input(&row.recorded, &owners), |e| {
            row.exists
                .iter()
                .find(|(uuid, _)| *uuid == e.module_uuid)
                .map(|(_, state)| state.clone())
                .unwrap_or_else(|| panic!("{}: unexpected DoesExist({})", row.name, e.module_uuid))
        });
        let removed: Vec<&str> = plan.delete.iter().map(|d| d.module_uuid.as_str()).collect();
        assert_eq!(removed, row.removed, "{}: Remove calls", row.name);
        let mut asked = Vec::new();
        let result = plan.apply("7.0.0", |c: &ModuleCreate| {
            asked.push(c.target_object_name.clone());
            row.created
                .iter()
                .find(|(name, _)| *name == c.target_object_name)
                .map(|(_, outcome)| outcome.clone())
                .unwrap_or_else(|| {
                    panic!("{}: unexpected Create({})", row.name, c.target_object_name)
                })
        });
        // Every expected Create was made (testify's AssertExpectations).
        let mut expected: Vec<&str> = row.created.iter().map(|(n, _)| *n).collect();
        expected.sort_unstable();
        asked.sort_unstable();
        assert_eq!(asked, expected, "{}: Create calls", row.name);
        assert_eq!(
            result.error.is_some(),
            row.have_error,
            "{}: {result:?}",
            row.name
        );
        (row.check)(&result);
    }
}

#[test]
fn the_condition_message_aggregates_every_failure_as_capv_words_it() {
    let recorded = [entry(true, "kcp", KCP_UUID)];
    let owners = [kcp("kcp"), md("md")];
    let plan = reconcile_modules_with(input(&recorded, &owners), |_| {
        ModuleState::CheckFailed(VCENTER_500.into())
    });
    let result = plan.apply("7.0.0", |_| CreateOutcome::IncompatibleOwner("rp-1".into()));
    let message = format!(
        "Failed to create cluster modules for: kcp failed to check if cluster module \"{KCP_UUID}\" exists: 500 Internal Server Error, md failed to create cluster module: rp-1 not a compute cluster"
    );
    assert_eq!(result.condition.unwrap().message, message);
    // One failure is not an incompatible owner: the reconciliation fails.
    assert_eq!(result.error.as_deref(), Some(message.as_str()));
}

#[test]
fn a_closed_gate_keeps_the_entries_and_says_why() {
    // Reconcile's first step (IsClusterCompatible false): condition False,
    // no error, spec.clusterModules untouched.
    let recorded = [entry(true, "kcp", KCP_UUID)];
    let plan = ModulePlan::unchanged(&recorded, ReconcileStatus::VersionUnsupported);
    let result = plan.apply("6.7.0", |_| panic!("no module is created"));
    assert_eq!(result.entries, recorded);
    assert_eq!(result.error, None);
    let condition = result.condition.unwrap();
    assert!(!condition.ready);
    assert_eq!(
        condition.message,
        "vCenter version 6.7.0 does not support cluster modules"
    );
    // A failed owner listing changes nothing and is returned.
    let plan = reconcile_modules(ReconcileInput {
        cluster_name: None,
        ..input(&recorded, &[kcp("kcp")])
    });
    let result = plan.apply("7.0.0", |_| panic!("no module is created"));
    assert_eq!(result.entries, recorded);
    assert_eq!(result.condition, None);
    assert!(
        result
            .error
            .unwrap()
            .starts_with("failed to get Machine owner objects: failed to get Cluster name from VSphereCluster: missing cluster name label")
    );
}

// fetchMachineOwnerObjects: the owner list itself.

#[test]
fn multiple_control_planes_are_an_error() {
    let recorded = [entry(false, "md", MD_UUID)];
    let owners = [kcp("foo-2"), kcp("foo-1"), md("md")];
    let plan = reconcile_modules(input(&recorded, &owners));
    assert_eq!(
        plan.status,
        ReconcileStatus::Failed(ReconcileError::MultipleControlPlanes {
            names: vec!["foo-1".into(), "foo-2".into()]
        })
    );
    // Nothing changes.
    assert_eq!(plan.keep, recorded);
    assert!(plan.is_empty());
    assert!(plan.error.as_deref().unwrap().starts_with(
        "multiple KubeadmControlPlane objects found, expected 1, found 2: foo-1, foo-2"
    ));
    // A deleting one still counts, as in CAPV's list.
    let owners = [kcp("foo-1"), deleting(kcp("foo-2"))];
    assert!(matches!(
        reconcile_modules(input(&[], &owners)).status,
        ReconcileStatus::Failed(ReconcileError::MultipleControlPlanes { .. })
    ));
}

#[test]
fn single_control_plane_and_machine_deployments() {
    // "single control plane & no machine deployment", "& machine
    // deployment", "& multiple machine deployments" (objects of another
    // namespace are not owners: the adapter only lists the cluster's).
    for mds in [&[][..], &["foo"][..], &["foo-1", "foo-2"][..]] {
        let mut owners = vec![kcp("foo")];
        owners.extend(mds.iter().map(|n| md(n)));
        let plan = reconcile_modules(input(&[], &owners));
        assert_eq!(plan.create.len(), mds.len() + 1);
        assert!(
            plan.create
                .iter()
                .any(|c| c.control_plane && c.target_object_name == "foo")
        );
    }
}

#[test]
fn owners_marked_for_deletion_get_no_module() {
    let owners = [kcp("foo"), md("foo"), deleting(md("foo-1"))];
    let plan = reconcile_modules(input(&[], &owners));
    assert_eq!(creates(&plan), [("foo", true, None), ("foo", false, None)]);
}

#[test]
fn a_vsphere_cluster_without_the_cluster_name_label_is_an_error() {
    let recorded = [entry(true, "kcp", KCP_UUID)];
    let plan = reconcile_modules(ReconcileInput {
        cluster_name: None,
        ..input(&recorded, &[kcp("kcp")])
    });
    assert_eq!(
        plan.status,
        ReconcileStatus::Failed(ReconcileError::MissingClusterName)
    );
    assert_eq!(plan.keep, recorded);
    assert!(plan.is_empty());
}

// ------------------------------------------------------------------ membership

fn reference(api_version: &str, kind: &str, name: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
    }
}

fn machine(control_plane: bool, references: Vec<OwnerReference>) -> MachineOwners {
    MachineOwners {
        namespace: "testing".into(),
        name: "test-machine".into(),
        control_plane,
        owner_references: references,
    }
}

fn key(name: &str) -> (String, String) {
    ("testing".to_owned(), name.to_owned())
}

#[test]
fn control_plane_owner_table() {
    // Test_FetchControlPlaneOwnerObject: the owner reference's version does
    // not matter, only group and kind; a missing object is NotFound, which
    // the VM controller reads as "no module".
    let mut owners = OwnerIndex::default();
    let modules = [entry(true, "test-control-plane", KCP_UUID)];
    for version in ["v1beta1", "v1alpha3", "v1beta2"] {
        let m = machine(
            true,
            vec![reference(
                &format!("controlplane.cluster.x-k8s.io/{version}"),
                "KubeadmControlPlane",
                "test-control-plane",
            )],
        );
        assert_eq!(
            membership(&m, &owners, &modules),
            Membership::OwnerNotFound {
                kind: GroupKind::KubeadmControlPlane,
                missing: MissingOwner {
                    kind: "KubeadmControlPlane",
                    name: "test-control-plane".into()
                }
            },
            "when object is not present ({version})"
        );
        owners.control_planes.insert(key("test-control-plane"));
        assert_eq!(
            membership(&m, &owners, &modules),
            Membership::Member {
                kind: GroupKind::KubeadmControlPlane,
                group: "test-control-plane".into(),
                module_uuid: Some(KCP_UUID.into()),
            },
            "when object is present ({version})"
        );
        owners = OwnerIndex::default();
    }
}

/// Test_reconcile's `createMachineOwnerHierarchy`: Machine → `<m>-ms` →
/// `<m>-md`.
fn hierarchy() -> (MachineOwners, OwnerIndex) {
    let m = machine(
        false,
        vec![reference(
            "cluster.x-k8s.io/v1beta2",
            "MachineSet",
            "foo-ms",
        )],
    );
    let mut owners = OwnerIndex::default();
    owners.machine_sets.insert(
        key("foo-ms"),
        vec![reference(
            "cluster.x-k8s.io/v1beta2",
            "MachineDeployment",
            "foo-md",
        )],
    );
    owners.machine_deployments.insert(key("foo-md"));
    (m, owners)
}

#[test]
fn worker_membership_follows_machine_set_to_machine_deployment() {
    // Test_reconcile "when info can be fetched": no recorded module, no
    // error.
    let (m, owners) = hierarchy();
    assert_eq!(
        membership(&m, &owners, &[]),
        Membership::Member {
            kind: GroupKind::MachineDeployment,
            group: "foo-md".into(),
            module_uuid: None,
        }
    );
    let modules = [entry(false, "foo-md", MD_UUID)];
    assert_eq!(
        membership(&m, &owners, &modules).module_uuid(),
        Some(MD_UUID)
    );
}

#[test]
fn a_worker_machine_without_machine_set_owner_is_an_error() {
    // Test_reconcile "when info cannot be fetched" with the gate on: the
    // reconcile fails (a deleting VSphereVM goes on regardless).
    let m = machine(false, vec![]);
    let result = membership(&m, &OwnerIndex::default(), &[]);
    assert!(matches!(
        result.error(),
        Some(MembershipError::NoOwnerReference {
            kind: "MachineSet",
            ..
        })
    ));
    assert!(
        result
            .error()
            .unwrap()
            .to_string()
            .starts_with("Machine testing/test-machine: unable to find owner reference with APIVersion cluster.x-k8s.io/v1beta2 and Kind MachineSet")
    );
}

#[test]
fn a_machine_set_without_machine_deployment_owner_is_an_error_not_no_module() {
    let (m, mut owners) = hierarchy();
    owners.machine_sets.insert(key("foo-ms"), vec![]);
    let result = membership(&m, &owners, &[]);
    assert_eq!(result.kind(), GroupKind::MachineDeployment);
    assert!(result.group().is_none() && result.module_uuid().is_none());
    assert!(result.error().unwrap().to_string().starts_with(
        "MachineSet testing/foo-ms: unable to find owner reference with APIVersion cluster.x-k8s.io/v1beta2 and Kind MachineDeployment"
    ));
}

#[test]
fn missing_machine_set_or_deployment_means_no_module_without_error() {
    let (m, mut owners) = hierarchy();
    owners.machine_deployments.clear();
    assert!(matches!(
        membership(&m, &owners, &[]),
        Membership::OwnerNotFound {
            missing: MissingOwner {
                kind: "MachineDeployment",
                ..
            },
            ..
        }
    ));
    owners.machine_sets.clear();
    assert!(matches!(
        membership(&m, &owners, &[]),
        Membership::OwnerNotFound {
            missing: MissingOwner {
                kind: "MachineSet",
                ..
            },
            ..
        }
    ));
}

#[test]
fn owner_references_match_group_and_kind_and_parse_in_order() {
    let (mut m, owners) = hierarchy();
    // Another group's MachineSet does not count.
    m.owner_references
        .insert(0, reference("example.com/v1", "MachineSet", "other"));
    assert_eq!(membership(&m, &owners, &[]).group(), Some("foo-md"));
    // An unparsable apiVersion before the match is an error ...
    m.owner_references
        .insert(0, reference("a/b/c", "Thing", "x"));
    assert!(matches!(
        membership(&m, &owners, &[]).error(),
        Some(MembershipError::InvalidOwnerApiVersion { index: 0, .. })
    ));
    // ... after it, never read.
    m.owner_references.rotate_left(1);
    assert_eq!(membership(&m, &owners, &[]).group(), Some("foo-md"));
}

#[test]
fn the_module_is_the_first_entry_with_the_group_name_whatever_its_flag() {
    let (m, owners) = hierarchy();
    let modules = [
        entry(true, "foo-md", KCP_UUID),
        entry(false, "foo-md", MD_UUID),
    ];
    assert_eq!(
        membership(&m, &owners, &modules).module_uuid(),
        Some(KCP_UUID)
    );
}

#[test]
fn a_control_plane_machine_needs_a_kubeadm_control_plane_owner() {
    // The label decides the path: a labelled Machine owned by a MachineSet
    // is an error, not a worker.
    let (mut m, owners) = hierarchy();
    m.control_plane = true;
    assert!(matches!(
        membership(&m, &owners, &[]),
        Membership::Failed {
            kind: GroupKind::KubeadmControlPlane,
            error: MembershipError::NoOwnerReference {
                kind: "KubeadmControlPlane",
                ..
            }
        }
    ));
}

#[test]
fn membership_serialises_flat() {
    let (m, owners) = hierarchy();
    let json =
        serde_json::to_value(membership(&m, &owners, &[entry(false, "foo-md", MD_UUID)])).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"groupKind": "MachineDeployment", "groupName": "foo-md", "moduleUUID": MD_UUID, "error": null})
    );
}

/// `Test_reconcile`'s management cluster as [`ClusterModulesInput`]: the
/// Machine `foo` of namespace `test`, with or without its owner hierarchy
/// (`foo-ms` → `foo-md`).
fn vm_controller_input(
    hierarchy: bool,
    disabled: bool,
) -> anti_affinity_placement::cluster_modules::ClusterModulesInput {
    use anti_affinity_placement::cluster_modules::{ClusterMachine, ClusterModulesInput};
    let mut owners = MachineOwners {
        namespace: "test".into(),
        name: "foo".into(),
        control_plane: false,
        owner_references: vec![],
    };
    let mut index = OwnerIndex::default();
    if hierarchy {
        owners.owner_references = vec![reference(
            "cluster.x-k8s.io/v1beta2",
            "MachineSet",
            "foo-ms",
        )];
        index.machine_sets.insert(
            ("test".into(), "foo-ms".into()),
            vec![reference(
                "cluster.x-k8s.io/v1beta2",
                "MachineDeployment",
                "foo-md",
            )],
        );
        index
            .machine_deployments
            .insert(("test".into(), "foo-md".into()));
    }
    ClusterModulesInput {
        vcenter_version: "7.0.3".into(),
        disabled,
        cluster_name: Some("valid-cluster".into()),
        server: SERVER.into(),
        recorded: vec![entry(false, "foo-md", MD_UUID)],
        owners: vec![],
        owner_index: index,
        machines: vec![ClusterMachine {
            owners,
            vm: "foo".into(),
            host: Some("esx-1".into()),
            deleting: false,
        }],
        inventory: None,
    }
}

#[test]
fn vm_reconcile_table() {
    // Test_reconcile "during VM creation": CAPV looks the module up only
    // with the NodeAntiAffinity gate on and spec.disableClusterModule unset
    // (the gate is assumed on here; disableClusterModule plays "turned
    // off").
    // "when info cannot be fetched" / "when anti affinity feature gate is
    // turned off": no lookup, no error.
    let off = vm_controller_input(false, true).report();
    let foo = &off.membership["test/foo"];
    assert!(matches!(foo, Membership::NotLookedUp { .. }), "{foo:?}");
    assert_eq!(
        serde_json::to_value(foo).unwrap(),
        serde_json::json!({"groupKind": "MachineDeployment", "groupName": null, "moduleUUID": null, "error": null})
    );
    // "... turned on": the reconcile fails.
    let on = vm_controller_input(false, false).report();
    assert!(
        on.membership["test/foo"]
            .error()
            .unwrap()
            .to_string()
            .contains("unable to find owner reference with APIVersion cluster.x-k8s.io/v1beta2 and Kind MachineSet")
    );
    // "when info can be fetched": the module is found.
    let fetched = vm_controller_input(true, false).report();
    assert_eq!(fetched.membership["test/foo"].module_uuid(), Some(MD_UUID));
    // ... and with the opt-out the group is known but no module is joined.
    let opted_out = vm_controller_input(true, true).report();
    assert_eq!(opted_out.membership["test/foo"].group(), Some("foo-md"));
    assert_eq!(opted_out.membership["test/foo"].module_uuid(), None);
    assert!(opted_out.modules.is_empty() && opted_out.modules.keep.len() == 1);
}
