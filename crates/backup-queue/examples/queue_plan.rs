//! The design document's scenario (`concurrent-backup-processing.md`): five
//! backups, `--concurrent-backups=2`. Prints the plan: backup5 starts,
//! backup2 waits for the running backup1, backup3 and backup4 wait behind
//! backup2.
//!
//! Run with `cargo run -p backup-queue --example queue_plan`.

use backup_queue::{BackupInput, NamespaceFilter, Phase, QueueInput, plan, reference};
use jiff::Timestamp;

fn backup(n: i64, namespaces: &[&str], phase: Phase, position: u32) -> BackupInput {
    BackupInput {
        name: format!("backup{n}"),
        resource_version: Some(format!("{}", 100 + n)),
        phase,
        queue_position: position,
        created: Timestamp::from_second(1_700_000_000 + 60 * n).unwrap_or(Timestamp::UNIX_EPOCH),
        namespaces: NamespaceFilter::including(namespaces.iter().copied()),
    }
}

fn main() {
    let input = QueueInput {
        backups: vec![
            backup(1, &["ns1", "ns2"], Phase::InProgress, 0),
            backup(2, &["ns2", "ns3", "ns5"], Phase::Queued, 1),
            backup(3, &["ns4", "ns3"], Phase::Queued, 2),
            backup(4, &["ns5", "ns6"], Phase::Queued, 2),
            backup(5, &["ns8", "ns9"], Phase::Queued, 3),
        ],
        cluster_namespaces: (1..=9).map(|i| format!("ns{i}")).collect(),
        concurrent_backups: 2,
    };
    println!("Design scenario, --concurrent-backups=2:");
    for b in &input.backups {
        println!(
            "  {} {:?} {} position {}",
            b.name, b.namespaces.included, b.phase, b.queue_position
        );
    }
    let plan = plan(&input);
    println!("\nPlan:\n{plan}");

    let mut after = input.clone();
    plan.apply_to(&mut after);
    println!(
        "Planning again after applying it: {}",
        if backup_queue::plan(&after).is_noop() {
            "no writes (steady state)"
        } else {
            "more writes"
        }
    );

    let velero = reference::run_to_fixed_point(&input);
    let same = velero.backups.iter().all(|r| {
        after
            .backups
            .iter()
            .any(|b| b.name == r.name && b.phase == r.phase)
    });
    println!(
        "Velero's reconcile loop (reference model) reaches {} phases with {} writes; the plan needs {}.",
        if same { "the same" } else { "DIFFERENT" },
        velero.writes,
        plan.writes.len()
    );
}
